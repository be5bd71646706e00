// Scenario -> attend()'s Inputs and Options. Every error names the scenario's own (JSON)
// field: "inputs" rather than "queries" in self mode, "in_proj_weight" rather than
// "projections.wq" for PyTorch weights, and so on.
#include "core/scenario.h"

#include <string>
#include <utility>

namespace attn {

namespace {

Error makeError(std::string field, std::string problem) {
  return Error{"", std::move(field), std::move(problem)};
}

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

// Translates the option names of validate()/attend() into the scenario's field names.
Error toScenarioError(Error error, const Scenario& scenario) {
  std::string& field = error.field;
  if (scenario.mode == Mode::Self) {
    const char* input = scenario.sentence.empty() ? "inputs" : "sentence";
    if (!scenario.sentence.empty()) {
      // Sentence rows have no user-visible indices; name the sentence as a whole.
      for (const char* name : {"queries", "keys", "values"})
        if (renamePrefix(field, name, input)) field = input;
    } else {
      for (const char* name : {"queries", "keys", "values"})
        if (renamePrefix(field, name, input)) break;
    }
  }
  if (scenario.projection == ProjectionKind::PyTorch) {
    for (const char* name : {"projections.wq", "projections.wk", "projections.wv"})
      if (renamePrefix(field, name, "in_proj_weight")) field = "in_proj_weight";
    for (const char* name : {"projections.bq", "projections.bk", "projections.bv"})
      if (renamePrefix(field, name, "in_proj_bias")) field = "in_proj_bias";
    if (renamePrefix(field, "projections.wo", "out_proj_weight")) field = "out_proj_weight";
    if (renamePrefix(field, "projections.bo", "out_proj_bias")) field = "out_proj_bias";
  }
  return error;
}

}  // namespace

std::string_view toString(Mode mode) {
  return mode == Mode::Self ? "self" : "cross";
}

std::optional<Mode> parseMode(std::string_view name) {
  if (name == "self") return Mode::Self;
  if (name == "cross") return Mode::Cross;
  return std::nullopt;
}

Expected<Problem> buildProblem(const Scenario& scenario) {
  Problem problem;
  Inputs& inputs = problem.inputs;

  // Inputs and labels.
  if (scenario.mode == Mode::Self) {
    // X (n x d) is queries, keys and values at once.
    Matrix x;
    std::vector<std::string> labels;
    if (!scenario.sentence.empty()) {
      if (scenario.embeddingDim < 1 || scenario.embeddingDim > Limits::kMaxWidth)
        return makeError("embedding_dim", "must be between 1 and " +
                                              std::to_string(Limits::kMaxWidth) + " (got " +
                                              std::to_string(scenario.embeddingDim) + ")");
      labels = tokenize(scenario.sentence);
      if (labels.empty()) return makeError("sentence", "has no words");
      x = seededEmbeddings(labels, scenario.embeddingDim, scenario.seed);
    } else {
      if (scenario.inputs.rows() == 0 || scenario.inputs.cols() == 0)
        return makeError("inputs",
                         "is empty; self attention needs at least one row (or a "
                         "sentence)");
      x = scenario.inputs;
      if (!scenario.inputLabels.empty() &&
          static_cast<Eigen::Index>(scenario.inputLabels.size()) != x.rows())
        return makeError("labels", "has " + std::to_string(scenario.inputLabels.size()) +
                                       " labels but there are " + std::to_string(x.rows()) +
                                       " inputs");
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
      return makeError("queries", "is empty; cross attention needs at least one query");
    if (scenario.keys.rows() == 0 || scenario.keys.cols() == 0)
      return makeError("keys", "is empty; cross attention needs at least one key");
    inputs.queries = scenario.queries;
    inputs.keys = scenario.keys;
    inputs.values = scenario.values.size() == 0 ? scenario.keys : scenario.values;
    if (inputs.values.rows() != inputs.keys.rows())
      return makeError("values", "has " + std::to_string(inputs.values.rows()) +
                                     " rows but there are " + std::to_string(inputs.keys.rows()) +
                                     " keys (one value per key)");
    const auto nQ = inputs.queries.rows(), nK = inputs.keys.rows();
    if (!scenario.queryLabels.empty() &&
        static_cast<Eigen::Index>(scenario.queryLabels.size()) != nQ)
      return makeError("query_labels", "has " + std::to_string(scenario.queryLabels.size()) +
                                           " labels but there are " + std::to_string(nQ) +
                                           " queries");
    if (!scenario.keyLabels.empty() && static_cast<Eigen::Index>(scenario.keyLabels.size()) != nK)
      return makeError("key_labels", "has " + std::to_string(scenario.keyLabels.size()) +
                                         " labels but there are " + std::to_string(nK) + " keys");
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

  // Options.
  Options& options = problem.options;
  options.score = scenario.score;
  options.heads = scenario.heads;
  options.temperature = scenario.temperature;
  options.mask = scenario.mask;
  options.normalizer = scenario.normalizer;
  options.scoreParams = scenario.scoreParams;
  options.scoreHidden = scenario.scoreHidden;
  options.seed = scenario.seed;
  options.decoderOutput = scenario.decoderOutput;

  // Projections.
  const int dQIn = static_cast<int>(inputs.queries.cols());
  const int dKIn = static_cast<int>(inputs.keys.cols());
  const int dVIn = static_cast<int>(inputs.values.cols());
  switch (scenario.projection) {
    case ProjectionKind::Identity:
      options.projections = Projections{};
      break;
    case ProjectionKind::Xavier: {
      if (scenario.modelWidth < 0 || scenario.modelWidth > Limits::kMaxWidth)
        return makeError("model_width", "must be between 0 (= the input width) and " +
                                            std::to_string(Limits::kMaxWidth) + " (got " +
                                            std::to_string(scenario.modelWidth) + ")");
      if (dQIn > Limits::kMaxWidth || dKIn > Limits::kMaxWidth || dVIn > Limits::kMaxWidth)
        break;  // validate() below names the input that is too wide
      const int dModel = scenario.modelWidth > 0 ? scenario.modelWidth : dQIn;
      options.projections = xavierProjections(dQIn, dKIn, dVIn, dModel, dModel, scenario.seed);
      break;
    }
    case ProjectionKind::Explicit:
      options.projections = scenario.explicitProjections;
      options.projections.identity = false;
      break;
    case ProjectionKind::PyTorch: {
      auto projections = projectionsFromPyTorch(scenario.inProjWeight, scenario.inProjBias,
                                                scenario.outProjWeight, scenario.outProjBias);
      if (!projections) return projections.error();
      const auto e = scenario.inProjWeight.cols();
      const std::pair<int, const char*> widths[] = {
          {dQIn, "queries"}, {dKIn, "keys"}, {dVIn, "values"}};
      for (const auto& [width, name] : widths) {
        if (width != e) {
          const std::string input = scenario.mode == Mode::Self
                                        ? (scenario.sentence.empty() ? "inputs" : "sentence")
                                        : name;
          return makeError("in_proj_weight", "has E = " + std::to_string(e) + " but the " + input +
                                                 " are " + std::to_string(width) +
                                                 " wide (nn.MultiheadAttention needs E-wide "
                                                 "queries, keys and values)");
        }
      }
      options.projections = std::move(projections).value();
      break;
    }
  }

  // Everything attend() would reject, reported now, in the scenario's terms.
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
