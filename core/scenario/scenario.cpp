// Scenario -> attend()'s Inputs and Options. Every error names the scenario's own (JSON)
// field: "inputs" rather than "queries" in self mode, "in_proj_weight" rather than
// "projections.wq" for PyTorch weights, and so on.
#include "core/scenario/scenario.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>
#include <utility>

#include "core/base/format.h"

namespace attn {

namespace {

std::vector<std::string> defaultLabels(const char* prefix, Eigen::Index n) {
  std::vector<std::string> labels;
  labels.reserve(static_cast<std::size_t>(n));
  for (Eigen::Index i = 0; i < n; ++i) labels.push_back(prefix + std::to_string(i));
  return labels;
}

// Replaces the leading `from` of a field name ("queries[2][1]" -> "inputs[2][1]").
bool renamePrefix(std::string& field, std::string_view from, std::string_view to) {
  if (field.compare(0, from.size(), from) != 0) return false;
  if (field.size() > from.size() && field[from.size()] != '[' && field[from.size()] != '.')
    return false;  // "queries_x" is not "queries"
  field = std::string(to) + field.substr(from.size());
  return true;
}

// Replaces "<from>N wide" by "<to>N wide" (the width phrases of validate()'s messages), and
// nothing else: "the keys are numbered 0 to 3" stays as it is.
void replaceWidthPhrase(std::string& text, std::string_view from, std::string_view to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + 1)) {
    std::size_t end = at + from.size();
    while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
    if (end == at + from.size() || text.compare(end, 5, " wide") != 0) continue;
    text.replace(at, from.size(), to);
  }
}

// checkWork() from the scenario's sizes alone, before buildProblem() generates sentence
// embeddings or Xavier matrices (a 4096-word sentence with 4096-wide Xavier projections is
// refused here in microseconds instead of after seconds of generating). Sizes that validate()
// rejects for another reason (a width above the limit, heads that do not divide it) are left
// for validate() to report.
Status checkScenarioWork(const Scenario& s, long long nQ, long long nK, long long dQ,
                         long long dK, long long dV) {
  WorkShape w;
  w.nQ = nQ;
  w.nK = nK;
  w.dQ = dQ;
  w.dK = dK;
  w.dV = dV;
  w.dModel = dQ;
  w.dvModel = dV;
  switch (s.projection) {
    case ProjectionKind::Identity:
      break;
    case ProjectionKind::Xavier:
      w.projected = true;
      w.dModel = w.dvModel = w.dOut = s.modelWidth > 0 ? s.modelWidth : dQ;
      break;
    case ProjectionKind::Explicit:
      w.projected = true;
      w.dModel = s.options.projections.wq.cols();
      w.dvModel = s.options.projections.wv.cols();
      w.dOut = s.options.projections.wo.cols();
      break;
    case ProjectionKind::PyTorch:
    case ProjectionKind::QkvInterleaved:
      w.projected = true;
      w.dModel = w.dvModel = w.dOut = s.inProjWeight.cols();
      break;
  }
  const long long widest = std::max({w.dQ, w.dK, w.dV, w.dModel, w.dvModel, w.dOut});
  const int heads = s.options.heads;
  if (heads < 1 || heads > Limits::kMaxHeads || widest > Limits::kMaxWidth ||
      std::max(nQ, nK) > Limits::kMaxTokens || w.dModel < 1 || w.dModel % heads != 0)
    return Ok{};
  setWorkOptions(w, s.options);
  return checkWork(w);
}

}  // namespace

Error toScenarioError(Error error, const Scenario& scenario) {
  std::string& field = error.field;
  if (scenario.mode == Mode::Self) {
    const char* input = scenario.sentence.empty() ? "inputs" : "sentence";
    // Problems that name an input ("has 3 rows but the queries are 4 wide") name it as written.
    const char* inputPhrase =
        scenario.sentence.empty() ? " the inputs are " : " the sentence embeddings are ";
    for (const char* phrase : {" the queries are ", " the keys are ", " the values are "})
      replaceWidthPhrase(error.problem, phrase, inputPhrase);
    if (!scenario.sentence.empty()) {
      // Sentence rows have no user-visible indices; name the sentence as a whole.
      for (const char* name : {"queries", "keys", "values"})
        if (renamePrefix(field, name, input)) field = input;
    } else {
      for (const char* name : {"queries", "keys", "values"})
        if (renamePrefix(field, name, input)) break;
    }
  }
  if (scenario.projection == ProjectionKind::PyTorch ||
      scenario.projection == ProjectionKind::QkvInterleaved) {
    for (const char* name : {"projections.wq", "projections.wk", "projections.wv"})
      if (renamePrefix(field, name, "in_proj_weight")) field = "in_proj_weight";
    for (const char* name : {"projections.bq", "projections.bk", "projections.bv"})
      if (renamePrefix(field, name, "in_proj_bias")) field = "in_proj_bias";
    if (renamePrefix(field, "projections.wo", "out_proj_weight")) field = "out_proj_weight";
    if (renamePrefix(field, "projections.bo", "out_proj_bias")) field = "out_proj_bias";
  }
  return error;
}

std::string_view toString(Mode mode) {
  return mode == Mode::Self ? "self" : "cross";
}

std::optional<Mode> parseMode(std::string_view name) {
  if (name == "self") return Mode::Self;
  if (name == "cross") return Mode::Cross;
  return std::nullopt;
}

// One cohesive numbered translation (1 inputs and labels, 2 the cost, 3 options,
// 4 projections, 5 validate()), kept as one function on purpose: each step reads what the
// one before it resolved.
Expected<Problem> buildProblem(const Scenario& scenario) {
  Problem problem;
  Inputs& inputs = problem.inputs;

  // 1 Inputs and labels.
  if (scenario.mode == Mode::Self) {
    // X (n x d) is queries, keys and values at once.
    Matrix x;
    std::vector<std::string> labels;
    if (!scenario.sentence.empty()) {
      if (scenario.embeddingDim < 1 || scenario.embeddingDim > Limits::kMaxWidth)
        return fieldError("embedding_dim", "must be between 1 and " +
                                              std::to_string(Limits::kMaxWidth) + " (got " +
                                              std::to_string(scenario.embeddingDim) + ")");
      labels = tokenize(scenario.sentence);
      if (labels.empty()) return fieldError("sentence", "has no words");
      const long long n = static_cast<long long>(labels.size()), d = scenario.embeddingDim;
      if (Status affordable = checkScenarioWork(scenario, n, n, d, d, d); !affordable)
        return toScenarioError(affordable.error(), scenario);
      x = seededEmbeddings(labels, scenario.embeddingDim, scenario.options.seed);
    } else {
      if (scenario.inputs.rows() == 0 || scenario.inputs.cols() == 0)
        return fieldError("inputs",
                          "is empty; self attention needs at least one row (or a "
                          "sentence)");
      x = scenario.inputs;
      if (!scenario.inputLabels.empty() &&
          static_cast<Eigen::Index>(scenario.inputLabels.size()) != x.rows())
        return fieldError("labels", "has " +
                                       countOf(static_cast<long long>(scenario.inputLabels.size()),
                                               "label", "labels") +
                                       " but there " + (x.rows() == 1 ? "is " : "are ") +
                                       countOf(x.rows(), "input", "inputs"));
      labels = scenario.inputLabels;
    }
    if (scenario.positionalEncoding && x.rows() <= Limits::kMaxTokens &&
        x.cols() <= Limits::kMaxWidth)
      x += sinusoidalPositionalEncoding(static_cast<int>(x.rows()), static_cast<int>(x.cols()));
    problem.queryLabels = labels.empty() ? defaultLabels("q", x.rows()) : labels;
    problem.keyLabels = labels.empty() ? defaultLabels("k", x.rows()) : labels;
    inputs.queries = x;
    inputs.keys = x;
    inputs.values = std::move(x);
  } else {
    if (scenario.queries.rows() == 0 || scenario.queries.cols() == 0)
      return fieldError("queries", "is empty; cross attention needs at least one query");
    if (scenario.keys.rows() == 0 || scenario.keys.cols() == 0)
      return fieldError("keys", "is empty; cross attention needs at least one key");
    inputs.queries = scenario.queries;
    inputs.keys = scenario.keys;
    inputs.values = scenario.values.size() == 0 ? scenario.keys : scenario.values;
    if (inputs.values.rows() != inputs.keys.rows())
      return fieldError("values", "has " + countOf(inputs.values.rows(), "row", "rows") +
                                     " but there " + (inputs.keys.rows() == 1 ? "is " : "are ") +
                                     countOf(inputs.keys.rows(), "key", "keys") +
                                     " (one value per key)");
    const auto nQ = inputs.queries.rows(), nK = inputs.keys.rows();
    if (!scenario.queryLabels.empty() &&
        static_cast<Eigen::Index>(scenario.queryLabels.size()) != nQ)
      return fieldError(
          "query_labels",
          "has " + countOf(static_cast<long long>(scenario.queryLabels.size()), "label", "labels") +
              " but there " + (nQ == 1 ? "is " : "are ") + countOf(nQ, "query", "queries"));
    if (!scenario.keyLabels.empty() && static_cast<Eigen::Index>(scenario.keyLabels.size()) != nK)
      return fieldError(
          "key_labels",
          "has " + countOf(static_cast<long long>(scenario.keyLabels.size()), "label", "labels") +
              " but there " + (nK == 1 ? "is " : "are ") + countOf(nK, "key", "keys"));
    problem.queryLabels =
        scenario.queryLabels.empty() ? defaultLabels("q", nQ) : scenario.queryLabels;
    problem.keyLabels = scenario.keyLabels.empty() ? defaultLabels("k", nK) : scenario.keyLabels;
    if (scenario.positionalEncoding) {
      // Each sequence counts its own positions from 0. Sizes above the limits are left for
      // validate() to report.
      for (Matrix* m : {&inputs.queries, &inputs.keys, &inputs.values})
        if (m->rows() <= Limits::kMaxTokens && m->cols() <= Limits::kMaxWidth)
          *m += sinusoidalPositionalEncoding(static_cast<int>(m->rows()),
                                             static_cast<int>(m->cols()));
    }
  }

  // 2 The cost, before any Xavier matrix is generated (self mode with `inputs`, and cross mode;
  // a sentence was checked before its embeddings were made).
  if (scenario.mode == Mode::Cross || scenario.sentence.empty()) {
    if (Status affordable = checkScenarioWork(scenario, inputs.queries.rows(), inputs.keys.rows(),
                                              inputs.queries.cols(), inputs.keys.cols(),
                                              inputs.values.cols());
        !affordable)
      return toScenarioError(affordable.error(), scenario);
  }

  // 3 Options.
  Options& options = problem.options;
  options = scenario.options;

  // 4 Projections.
  const int dQIn = static_cast<int>(inputs.queries.cols());
  const int dKIn = static_cast<int>(inputs.keys.cols());
  const int dVIn = static_cast<int>(inputs.values.cols());
  switch (scenario.projection) {
    case ProjectionKind::Identity:
      options.projections = Projections{};
      break;
    case ProjectionKind::Xavier: {
      if (scenario.modelWidth < 0 || scenario.modelWidth > Limits::kMaxWidth)
        return fieldError("model_width", "must be between 0 (= the input width) and " +
                                            std::to_string(Limits::kMaxWidth) + " (got " +
                                            std::to_string(scenario.modelWidth) + ")");
      if (dQIn > Limits::kMaxWidth || dKIn > Limits::kMaxWidth || dVIn > Limits::kMaxWidth)
        break;  // validate() below names the input that is too wide
      const int dModel = scenario.modelWidth > 0 ? scenario.modelWidth : dQIn;
      options.projections = xavierProjections(dQIn, dKIn, dVIn, dModel, dModel, scenario.options.seed);
      break;
    }
    case ProjectionKind::Explicit:
      options.projections.identity = false;
      break;
    case ProjectionKind::PyTorch:
    case ProjectionKind::QkvInterleaved: {
      // Interleaved weights are reordered into PyTorch's blocked layout first (exactly: rows
      // move, numbers do not change).
      Matrix blockedWeight;
      Vector blockedBias;
      const bool interleaved = scenario.projection == ProjectionKind::QkvInterleaved;
      if (interleaved) {
        if (scenario.options.heads < 1 || scenario.options.heads > Limits::kMaxHeads)
          return fieldError("heads", "must be between 1 and " +
                                        std::to_string(Limits::kMaxHeads) + " (got " +
                                        std::to_string(scenario.options.heads) + ")");
        auto blocked = blockedFromInterleavedQkv(scenario.inProjWeight, scenario.inProjBias,
                                                 scenario.options.heads);
        if (!blocked) return blocked.error();
        blockedWeight = std::move(blocked->weight);
        blockedBias = std::move(blocked->bias);
      }
      auto projections = projectionsFromPyTorch(
          interleaved ? blockedWeight : scenario.inProjWeight,
          interleaved ? blockedBias : scenario.inProjBias, scenario.outProjWeight,
          scenario.outProjBias);
      if (!projections) return projections.error();
      const auto e = scenario.inProjWeight.cols();
      const std::pair<int, const char*> widths[] = {
          {dQIn, "queries"}, {dKIn, "keys"}, {dVIn, "values"}};
      for (const auto& [width, name] : widths) {
        if (width != e) {
          const std::string input = scenario.mode == Mode::Self
                                        ? (scenario.sentence.empty() ? "inputs" : "sentence")
                                        : name;
          return fieldError("in_proj_weight", "has E = " + std::to_string(e) + " but the " + input +
                                                 " are " + std::to_string(width) +
                                                 " wide (nn.MultiheadAttention needs E-wide "
                                                 "queries, keys and values)");
        }
      }
      options.projections = std::move(projections).value();
      break;
    }
  }

  // 5 Everything attend() would reject, reported now, in the scenario's terms.
  if (Status status = validate(inputs, options); !status)
    return toScenarioError(status.error(), scenario);
  return problem;
}

Expected<AttentionResult> compute(const Scenario& scenario) {
  auto problem = buildProblem(scenario);
  if (!problem) return problem.error();
  auto result = attend(problem->inputs, problem->options);
  if (!result) return toScenarioError(result.error(), scenario);
  return result;
}

}  // namespace attn
