// Pure edits of a Scenario (see scenario_edits.h). No UI: the app, tests and the CLI all
// edit documents through these functions.
#include "core/scenario/scenario_edits.h"

#include "core/attention/formulas.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

#include "core/base/random.h"
#include "core/scenario/scenario_edits_detail.h"

namespace attn {

using namespace edits_detail;

namespace {

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

// Uniform in [-2, 2], rounded to one decimal.
Scalar teachingRandom(SplitMix64& rng) {
  const double u = rng.uniform01Double();  // [0, 1)
  return static_cast<Scalar>(std::round((u * 4.0 - 2.0) * 10.0) / 10.0);
}

int selfWidth(const Scenario& s) {
  return s.sentence.empty() ? static_cast<int>(s.inputs.cols()) : s.embeddingDim;
}

bool isSelf(const Scenario& s) { return s.mode == Mode::Self; }

bool projectionFixesWidths(const Scenario& s) {
  return s.projection == ProjectionKind::Explicit || usesInProj(s.projection);
}

Matrix& mutableMatrix(Scenario& s, Sequence seq) {
  switch (seq) {
    case Sequence::Inputs: return s.inputs;
    case Sequence::Queries: return s.queries;
    case Sequence::Keys: return s.keys;
    case Sequence::Values: return s.values;
  }
  return s.inputs;
}

std::vector<std::string>& mutableLabels(Scenario& s, Sequence seq) {
  switch (seq) {
    case Sequence::Inputs: return s.inputLabels;
    case Sequence::Queries: return s.queryLabels;
    case Sequence::Keys:
    case Sequence::Values: return s.keyLabels;
  }
  return s.inputLabels;
}

// Self mode edits X; cross mode edits its own sequences. A mismatch (e.g. "queries" in
// self mode) means the table belongs to the other mode: refuse.
bool sequenceInMode(const Scenario& s, Sequence seq) {
  return isSelf(s) == (seq == Sequence::Inputs);
}

template <class M>
M withoutRow(const M& m, int row) {
  M out(m.rows() - 1, m.cols());
  if (row > 0) out.topRows(row) = m.topRows(row);
  if (row < m.rows() - 1) out.bottomRows(m.rows() - 1 - row) = m.bottomRows(m.rows() - 1 - row);
  return out;
}

template <class M>
M withoutCol(const M& m, int col) {
  M out(m.rows(), m.cols() - 1);
  if (col > 0) out.leftCols(col) = m.leftCols(col);
  if (col < m.cols() - 1) out.rightCols(m.cols() - 1 - col) = m.rightCols(m.cols() - 1 - col);
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Sequences and shapes
// ---------------------------------------------------------------------------------------

const Matrix& sequenceMatrix(const Scenario& s, Sequence seq) {
  switch (seq) {
    case Sequence::Inputs: return s.inputs;
    case Sequence::Queries: return s.queries;
    case Sequence::Keys: return s.keys;
    case Sequence::Values: return s.values.size() == 0 ? s.keys : s.values;
  }
  return s.inputs;
}

const std::vector<std::string>& sequenceLabels(const Scenario& s, Sequence seq) {
  switch (seq) {
    case Sequence::Inputs: return s.inputLabels;
    case Sequence::Queries: return s.queryLabels;
    case Sequence::Keys:
    case Sequence::Values: return s.keyLabels;
  }
  return s.inputLabels;
}

std::string defaultLabel(Sequence seq, int row) {
  // Built by appending: GCC 12's -Wrestrict misfires on `const char* + std::string` at -O3.
  std::string label(seq == Sequence::Inputs ? "x" : seq == Sequence::Queries ? "q" : "k");
  label.append(std::to_string(row));
  return label;
}

int queryCount(const Scenario& s) {
  if (isSelf(s)) {
    return s.sentence.empty() ? static_cast<int>(s.inputs.rows())
                              : static_cast<int>(tokenize(s.sentence).size());
  }
  return static_cast<int>(s.queries.rows());
}

int keyCount(const Scenario& s) {
  if (isSelf(s)) return queryCount(s);
  return static_cast<int>(s.keys.rows());
}

bool valuesAreKeys(const Scenario& s) { return !isSelf(s) && s.values.size() == 0; }

ModelWidths modelWidths(const Scenario& s) {
  const int dq = isSelf(s) ? selfWidth(s) : static_cast<int>(s.queries.cols());
  const int dv = isSelf(s) ? selfWidth(s)
                           : static_cast<int>(valuesAreKeys(s) ? s.keys.cols() : s.values.cols());
  switch (s.projection) {
    case ProjectionKind::Identity: return {dq, dv};
    case ProjectionKind::Xavier: {
      const int d = s.modelWidth > 0 ? s.modelWidth : dq;
      return {d, d};
    }
    case ProjectionKind::Explicit: {
      const Projections& p = s.options.projections;
      return {p.wq.size() > 0 ? static_cast<int>(p.wq.cols()) : dq,
              p.wv.size() > 0 ? static_cast<int>(p.wv.cols()) : dv};
    }
    case ProjectionKind::PyTorch:
    case ProjectionKind::QkvInterleaved: {
      const int e = static_cast<int>(s.inProjWeight.cols());
      return {e > 0 ? e : dq, e > 0 ? e : dv};
    }
  }
  return {dq, dv};
}

std::vector<int> validHeadCounts(const Scenario& s) {
  const ModelWidths w = modelWidths(s);
  const int g = std::gcd(std::max(w.dModel, 1), std::max(w.dvModel, 1));
  std::vector<int> out;
  for (int h = 1; h <= std::min(g, Limits::kMaxHeads); ++h)
    if (g % h == 0) out.push_back(h);
  return out;
}

// ---------------------------------------------------------------------------------------
// Labels and masks follow the token counts
// ---------------------------------------------------------------------------------------

void resizeLabels(Scenario& s) {
  auto fit = [](std::vector<std::string>& labels, int n, Sequence seq) {
    if (labels.empty()) return;
    const int old = static_cast<int>(labels.size());
    labels.resize(std::max(n, 0));
    for (int i = old; i < n; ++i) labels[i] = defaultLabel(seq, i);
  };
  if (isSelf(s)) {
    fit(s.inputLabels, queryCount(s), Sequence::Inputs);
  } else {
    fit(s.queryLabels, static_cast<int>(s.queries.rows()), Sequence::Queries);
    fit(s.keyLabels, static_cast<int>(s.keys.rows()), Sequence::Keys);
  }
}

void syncMaskShapes(Scenario& s) {
  const int nQ = queryCount(s), nK = keyCount(s);
  MaskOptions& m = s.options.mask;
  if (m.custom.size() > 0 || m.kind == MaskKind::Custom) {
    if (m.custom.rows() != nQ || m.custom.cols() != nK) {
      BoolMatrix resized = BoolMatrix::Constant(nQ, nK, true);
      const int r = std::min<int>(nQ, m.custom.rows()), c = std::min<int>(nK, m.custom.cols());
      if (r > 0 && c > 0) resized.topLeftCorner(r, c) = m.custom.topLeftCorner(r, c);
      m.custom = resized;
    }
  }
  if (!m.keyValid.empty() || m.kind == MaskKind::Padding) {
    m.keyValid.resize(nK, true);
  }
  m.position = std::clamp(m.position, 0, std::max(nK - 1, 0));
  m.window = std::max(m.window, 0);
  if (s.options.normalizer.topK < 1) s.options.normalizer.topK = 1;
}

// ---------------------------------------------------------------------------------------
// Vector tables
// ---------------------------------------------------------------------------------------

void materialiseSentence(Scenario& s) {
  if (s.sentence.empty()) return;
  const std::vector<std::string> tokens = tokenize(s.sentence);
  s.inputs = seededEmbeddings(tokens, s.embeddingDim, s.options.seed);
  s.inputLabels = tokens;
  s.sentence.clear();
}

EditOutcome setValue(Scenario& s, Sequence seq, int row, int col, Scalar value) {
  if (!sequenceInMode(s, seq)) return refuse("That table belongs to the other mode.");
  if (!std::isfinite(value)) return refuse("Only finite numbers can be entered.");
  if (seq == Sequence::Inputs) materialiseSentence(s);
  if (seq == Sequence::Values && valuesAreKeys(s)) s.values = s.keys;
  Matrix& m = mutableMatrix(s, seq);
  if (row < 0 || row >= m.rows() || col < 0 || col >= m.cols()) {
    return refuse("Cell (" + std::to_string(row) + ", " + std::to_string(col) +
                  ") is outside the table.");
  }
  if (m(row, col) == value) return {};
  m(row, col) = value;
  return {true, ""};
}

EditOutcome setLabel(Scenario& s, Sequence seq, int row, const std::string& label) {
  if (!sequenceInMode(s, seq)) return refuse("That table belongs to the other mode.");
  if (seq == Sequence::Inputs) materialiseSentence(s);
  const int n = static_cast<int>(sequenceMatrix(s, seq).rows());
  if (row < 0 || row >= n) return refuse("No such row.");
  std::vector<std::string>& labels = mutableLabels(s, seq);
  if (labels.empty()) {
    labels.resize(n);
    for (int i = 0; i < n; ++i) labels[i] = defaultLabel(seq, i);
  }
  labels.resize(n);
  if (labels[row] == label) return {};
  labels[row] = label;
  return {true, ""};
}

EditOutcome addVector(Scenario& s, Sequence seq) {
  if (!sequenceInMode(s, seq)) return refuse("That table belongs to the other mode.");
  if (seq == Sequence::Inputs) materialiseSentence(s);
  // Values are one per key: adding a value row means adding a key.
  if (seq == Sequence::Values) seq = Sequence::Keys;
  Matrix& m = mutableMatrix(s, seq);
  if (m.rows() >= Limits::kMaxTokens) {
    return refuse("At most " + std::to_string(Limits::kMaxTokens) + " tokens.");
  }
  SplitMix64 rng(s.options.seed * kGoldenGamma + static_cast<std::uint64_t>(m.rows()) * 7919u +
                 static_cast<std::uint64_t>(seq));
  auto appendRow = [&rng](Matrix& target, int width) {
    Matrix grown(target.rows() + 1, width);
    if (target.rows() > 0) grown.topRows(target.rows()) = target;
    for (int c = 0; c < width; ++c) grown(target.rows(), c) = teachingRandom(rng);
    target = std::move(grown);
  };
  const int width = m.cols() > 0 ? static_cast<int>(m.cols())
                                  : (isSelf(s) ? std::max(selfWidth(s), 1) : 2);
  appendRow(m, width);
  std::string note;
  if (seq == Sequence::Keys && s.values.size() > 0) {
    appendRow(s.values, static_cast<int>(s.values.cols()));
    note = "A value row was added for the new key.";
  }
  resizeLabels(s);
  syncMaskShapes(s);
  return {true, note};
}

EditOutcome removeVector(Scenario& s, Sequence seq, int row) {
  if (!sequenceInMode(s, seq)) return refuse("That table belongs to the other mode.");
  if (seq == Sequence::Inputs) materialiseSentence(s);
  if (seq == Sequence::Values) seq = Sequence::Keys;
  Matrix& m = mutableMatrix(s, seq);
  if (row < 0 || row >= m.rows()) return refuse("No such row.");
  if (m.rows() <= 1) return refuse("Attention needs at least one " +
                                   std::string(seq == Sequence::Queries ? "query" : "key") + ".");
  m = withoutRow(m, row);
  std::string note;
  const bool removesKey = seq == Sequence::Keys || seq == Sequence::Inputs;
  const bool removesQuery = seq == Sequence::Queries || seq == Sequence::Inputs;
  if (seq == Sequence::Keys && s.values.rows() > row) {
    s.values = withoutRow(s.values, row);
    note = "Its value row was removed too.";
  }
  std::vector<std::string>& labels = mutableLabels(s, seq);
  if (static_cast<int>(labels.size()) > row) labels.erase(labels.begin() + row);
  // The mask loses exactly the removed row / column, so the rest keeps its meaning.
  MaskOptions& mask = s.options.mask;
  if (mask.custom.size() > 0) {
    if (removesQuery && mask.custom.rows() > row && mask.custom.rows() > 1)
      mask.custom = withoutRow(mask.custom, row);
    if (removesKey && mask.custom.cols() > row && mask.custom.cols() > 1)
      mask.custom = withoutCol(mask.custom, row);
  }
  if (removesKey && static_cast<int>(mask.keyValid.size()) > row)
    mask.keyValid.erase(mask.keyValid.begin() + row);
  resizeLabels(s);
  syncMaskShapes(s);
  return {true, note};
}

namespace {

// The common start of addDimension / removeDimension: refuses a table of the other mode or
// widths fixed by loaded projection matrices; otherwise makes the sequence's own matrix
// editable (a sentence becomes its embeddings, values stop sharing the keys' matrix).
std::optional<EditOutcome> beginWidthEdit(Scenario& s, Sequence seq) {
  if (!sequenceInMode(s, seq)) return refuse("That table belongs to the other mode.");
  if (projectionFixesWidths(s)) {
    return refuse("The input widths are fixed by the loaded projection matrices (" +
                  std::string(toString(s.projection)) +
                  "). Switch the projection to identity or xavier to change them.");
  }
  if (seq == Sequence::Inputs) materialiseSentence(s);
  if (seq == Sequence::Values && valuesAreKeys(s)) s.values = s.keys;
  return std::nullopt;
}

}  // namespace

EditOutcome addDimension(Scenario& s, Sequence seq) {
  if (std::optional<EditOutcome> refused = beginWidthEdit(s, seq)) return *refused;
  if (sequenceMatrix(s, seq).cols() >= Limits::kMaxWidth) {
    return refuse("At most " + std::to_string(Limits::kMaxWidth) + " dimensions.");
  }
  SplitMix64 rng(s.options.seed ^ (0xD1B54A32D192ED03ull * (sequenceMatrix(s, seq).cols() + 1)));
  auto appendCol = [&rng](Matrix& m) {
    Matrix grown(m.rows(), m.cols() + 1);
    if (m.cols() > 0) grown.leftCols(m.cols()) = m;
    for (int r = 0; r < m.rows(); ++r) grown(r, m.cols()) = teachingRandom(rng);
    m = std::move(grown);
  };
  std::string note;
  const bool tied = !isSelf(s) && seq != Sequence::Values &&
                    s.projection == ProjectionKind::Identity;
  if (tied) {
    appendCol(s.queries);
    appendCol(s.keys);
    note = "Queries and keys share their width under identity projection (q·k needs equal "
           "lengths): both got the new dimension.";
  } else {
    appendCol(mutableMatrix(s, seq));
  }
  if (isSelf(s)) s.embeddingDim = static_cast<int>(s.inputs.cols());
  dropWidthDependentParams(s, note);
  keepHeadsValid(s, note);
  return {true, note};
}

EditOutcome removeDimension(Scenario& s, Sequence seq, int col) {
  if (std::optional<EditOutcome> refused = beginWidthEdit(s, seq)) return *refused;
  const Matrix& m = sequenceMatrix(s, seq);
  if (col < 0 || col >= m.cols()) return refuse("No such dimension.");
  if (m.cols() <= 1) return refuse("A vector needs at least one dimension.");
  std::string note;
  const bool tied = !isSelf(s) && seq != Sequence::Values &&
                    s.projection == ProjectionKind::Identity;
  if (tied) {
    if (s.queries.cols() > col) s.queries = withoutCol(s.queries, col);
    if (s.keys.cols() > col) s.keys = withoutCol(s.keys, col);
    note = "Queries and keys share their width under identity projection: dimension " +
           std::to_string(col) + " was removed from both.";
  } else {
    Matrix& target = mutableMatrix(s, seq);
    target = withoutCol(target, col);
  }
  if (isSelf(s)) s.embeddingDim = static_cast<int>(s.inputs.cols());
  dropWidthDependentParams(s, note);
  keepHeadsValid(s, note);
  return {true, note};
}

EditOutcome randomise(Scenario& s, Sequence seq, std::uint64_t seed) {
  if (!sequenceInMode(s, seq)) return refuse("That table belongs to the other mode.");
  if (seq == Sequence::Inputs) materialiseSentence(s);
  if (seq == Sequence::Values && valuesAreKeys(s)) s.values = s.keys;
  Matrix& m = mutableMatrix(s, seq);
  SplitMix64 rng(seed * 0x2545F4914F6CDD1Dull + static_cast<std::uint64_t>(seq) + 1);
  for (int r = 0; r < m.rows(); ++r)
    for (int c = 0; c < m.cols(); ++c) m(r, c) = teachingRandom(rng);
  return {true, ""};
}

EditOutcome normaliseRows(Scenario& s, Sequence seq) {
  if (!sequenceInMode(s, seq)) return refuse("That table belongs to the other mode.");
  if (seq == Sequence::Inputs) materialiseSentence(s);
  if (seq == Sequence::Values && valuesAreKeys(s)) s.values = s.keys;
  Matrix& m = mutableMatrix(s, seq);
  int zero = 0;
  for (int r = 0; r < m.rows(); ++r) {
    const Scalar n = m.row(r).norm();
    if (n > 0) m.row(r) /= n;
    else ++zero;
  }
  return {true, zero > 0 ? std::to_string(zero) + " zero vector(s) have no direction and were "
                               "left at zero."
                         : std::string()};
}

EditOutcome setValuesAreKeys(Scenario& s, bool same) {
  if (isSelf(s)) return refuse("In self-attention values are always the inputs.");
  if (same == valuesAreKeys(s)) return {};
  if (same) s.values.resize(0, 0);
  else s.values = s.keys;
  std::string note;
  if (s.projection == ProjectionKind::Identity) keepHeadsValid(s, note);
  return {true, note};
}

namespace {

// The cross-mode half of setSentence: the words replace the queries or the keys.
EditOutcome setCrossSentence(Scenario& s, const std::vector<std::string>& tokens,
                             int embeddingDim, SentenceTarget target) {
  if (isSelf(s)) return refuse("Queries and keys are separate sequences only in cross mode.");
  const bool keys = target == SentenceTarget::Keys;
  Matrix& replaced = keys ? s.keys : s.queries;
  const int width = static_cast<int>(replaced.cols());
  if (width < 1) return refuse("The sequence to replace has no width.");
  std::string note;
  if (width != embeddingDim) {
    note = std::string("The words got width ") + std::to_string(width) + " (the " +
           (keys ? "keys'" : "queries'") + " width, which the projections and the score " +
           "need) instead of " + std::to_string(embeddingDim) + ".";
  }
  replaced = seededEmbeddings(tokens, width, s.options.seed);
  (keys ? s.keyLabels : s.queryLabels) = tokens;
  if (keys && !valuesAreKeys(s)) {
    // One value per key: the old values belonged to the old keys. Their width stays (the
    // value projection may depend on it).
    const int dv = static_cast<int>(s.values.cols());
    s.values = seededEmbeddings(tokens, dv, s.options.seed);
    note += (note.empty() ? "" : " ") + std::string("The values were made from the same words (width ") +
            std::to_string(dv) + ").";
  }
  s.options.mask.custom.resize(0, 0);
  if (keys) s.options.mask.keyValid.clear();
  if (s.options.mask.kind == MaskKind::Custom || (keys && s.options.mask.kind == MaskKind::Padding)) {
    s.options.mask.kind = MaskKind::None;
    note += (note.empty() ? "" : " ") + std::string("The mask was reset to none (new tokens).");
  }
  syncMaskShapes(s);
  return {true, note};
}

}  // namespace

EditOutcome setSentence(Scenario& s, const std::string& text, int embeddingDim,
                        SentenceTarget target) {
  const std::vector<std::string> tokens = tokenize(text);
  if (tokens.empty()) return refuse("The sentence has no words.");
  if (static_cast<int>(tokens.size()) > Limits::kMaxTokens) {
    return refuse("At most " + std::to_string(Limits::kMaxTokens) + " words.");
  }
  if (embeddingDim < 1 || embeddingDim > Limits::kMaxWidth) {
    return refuse("The embedding width must be between 1 and " +
                  std::to_string(Limits::kMaxWidth) + ".");
  }
  if (target != SentenceTarget::Self) return setCrossSentence(s, tokens, embeddingDim, target);
  std::string note;
  if (projectionFixesWidths(s)) {
    s.projection = ProjectionKind::Identity;
    note = "Projection switched to identity: the loaded matrices do not fit the new embeddings.";
  }
  if (!isSelf(s)) {
    note += (note.empty() ? "" : " ") + std::string("Switched to self-attention.");
    s.mode = Mode::Self;
    s.queries.resize(0, 0);
    s.keys.resize(0, 0);
    s.values.resize(0, 0);
    s.queryLabels.clear();
    s.keyLabels.clear();
  }
  const int oldWidth = selfWidth(s);
  s.sentence = text;
  s.embeddingDim = embeddingDim;
  s.inputs = seededEmbeddings(tokens, embeddingDim, s.options.seed);
  s.inputLabels = tokens;
  // The custom mask's old cells no longer belong to the same words: start over.
  s.options.mask.custom.resize(0, 0);
  s.options.mask.keyValid.clear();
  if (s.options.mask.kind == MaskKind::Custom || s.options.mask.kind == MaskKind::Padding) {
    s.options.mask.kind = MaskKind::None;
    note += (note.empty() ? "" : " ") + std::string("The mask was reset to none (new tokens).");
  }
  if (oldWidth != embeddingDim) dropWidthDependentParams(s, note);
  syncMaskShapes(s);
  keepHeadsValid(s, note);
  return {true, note};
}

EditOutcome setMode(Scenario& s, Mode mode) {
  if (s.mode == mode) return {};
  const ModelWidths before = modelWidths(s);
  std::string note;
  if (mode == Mode::Cross) {
    materialiseSentence(s);
    s.queries = s.inputs;
    s.keys = s.inputs;
    s.values.resize(0, 0);
    s.queryLabels = s.inputLabels;
    s.keyLabels = s.inputLabels;
    s.mode = Mode::Cross;
    note = "Queries and keys start as copies of the inputs; values = keys.";
  } else {
    const bool separateValues = s.values.size() > 0;
    s.inputs = s.keys;
    s.inputLabels = s.keyLabels;
    s.sentence.clear();
    s.mode = Mode::Self;
    note = "Self-attention uses the keys as the one sequence X; the queries";
    note += separateValues ? " and values were dropped." : " were dropped.";
    s.queries.resize(0, 0);
    s.keys.resize(0, 0);
    s.values.resize(0, 0);
    s.queryLabels.clear();
    s.keyLabels.clear();
    if (projectionFixesWidths(s)) {
      // One sequence must fit every input width of the loaded matrices.
      const Projections& p = s.options.projections;
      const bool fits =
          usesInProj(s.projection)
              ? s.inProjWeight.cols() == s.inputs.cols()
              : (p.wq.rows() == s.inputs.cols() && p.wk.rows() == s.inputs.cols() &&
                 p.wv.rows() == s.inputs.cols());
      if (!fits) {
        s.projection = ProjectionKind::Identity;
        note += " Projection switched to identity (the loaded matrices do not fit X).";
      }
    }
  }
  resizeLabels(s);
  syncMaskShapes(s);
  const ModelWidths after = modelWidths(s);
  if (before.dModel != after.dModel || before.dvModel != after.dvModel)
    dropWidthDependentParams(s, note);
  keepHeadsValid(s, note);
  return {true, note};
}

}  // namespace attn
