// The attention mechanism's validation (see attention.h): validate() checks inputs and
// options before attend() runs, checkWork() the size of the computation, and the message
// helpers every file of core/attention/ shares (attention_detail.h).
#include "core/attention/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <utility>

#include "core/attention/attention_detail.h"
#include "core/base/format.h"
#include "core/isa/isa.h"

namespace attn {

using namespace detail;

namespace detail {

// =======================================================================================
// Small helpers for validation messages
// =======================================================================================

std::string shapeOf(Index rows, Index cols) {
  return std::to_string(rows) + " x " + std::to_string(cols);
}
std::string shapeOf(const Matrix& m) {
  return shapeOf(m.rows(), m.cols());
}

// Shortest readable form of a number for messages ("0.5", "1e-30", "nan").
std::string messageNumber(double x) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.9g", x);
  return buffer;
}

std::string nonFiniteName(Scalar x) {
  if (std::isnan(x)) return "NaN";
  return x > 0 ? "+infinity" : "-infinity";
}

// True when every entry is finite: the ISA kernel (x·0 summed; NaN exactly when some entry
// is not finite). Eigen's allFinite() stops at the first failure and so is not vectorised;
// on the n_q x n_k scores it cost as much as the softmax.
bool isAllFinite(const Scalar* x, Index n) {
  return kernels::active().allFinite(x, n);
}
bool isAllFinite(const Matrix& m) {
  return isAllFinite(m.data(), m.size());
}

// First non-finite entry of m as an error naming "field[r][c]".
std::optional<Error> checkFinite(const Matrix& m, const std::string& field) {
  if (isAllFinite(m)) return std::nullopt;
  for (Index r = 0; r < m.rows(); ++r)
    for (Index c = 0; c < m.cols(); ++c)
      if (!std::isfinite(m(r, c)))
        return fieldError(field + "[" + std::to_string(r) + "][" + std::to_string(c) + "]",
                          "is not a finite number (" + nonFiniteName(m(r, c)) + ")");
  return std::nullopt;
}

std::optional<Error> checkFinite(const Vector& v, const std::string& field) {
  if (v.allFinite()) return std::nullopt;
  for (Index i = 0; i < v.size(); ++i)
    if (!std::isfinite(v(i)))
      return fieldError(field + "[" + std::to_string(i) + "]",
                        "is not a finite number (" + nonFiniteName(v(i)) + ")");
  return std::nullopt;
}

// "1, 2, 3 or 6"
std::string joinChoices(const std::vector<int>& choices) {
  std::string out;
  for (std::size_t i = 0; i < choices.size(); ++i) {
    if (i > 0) out += (i + 1 == choices.size()) ? " or " : ", ";
    out += std::to_string(choices[i]);
  }
  return out;
}

// Head counts that divide both widths (and respect the head limit).
std::vector<int> headChoices(int dModel, int dvModel) {
  std::vector<int> choices;
  const int common = std::gcd(dModel, dvModel);
  for (int h = 1; h <= std::min(common, Limits::kMaxHeads); ++h)
    if (common % h == 0) choices.push_back(h);
  return choices;
}

// The hidden width d_a (additive) or d_m (mlp) a ScoreParams implies: taken from the first
// field that is given, else `hidden`, else d_h.
int scoreHiddenWidth(ScoreKind kind, const ScoreParams& p, int dH, int hidden) {
  if (kind == ScoreKind::Additive) {
    if (p.additiveWq.size() > 0) return static_cast<int>(p.additiveWq.cols());
    if (p.additiveWk.size() > 0) return static_cast<int>(p.additiveWk.cols());
    if (p.additiveBias.size() > 0) return static_cast<int>(p.additiveBias.size());
    if (p.additiveV.size() > 0) return static_cast<int>(p.additiveV.size());
  } else if (kind == ScoreKind::Mlp) {
    if (p.mlpHiddenW.size() > 0) return static_cast<int>(p.mlpHiddenW.cols());
    if (p.mlpHiddenBias.size() > 0) return static_cast<int>(p.mlpHiddenBias.size());
    if (p.mlpOutW.size() > 0) return static_cast<int>(p.mlpOutW.size());
  }
  return hidden > 0 ? hidden : dH;
}

// Checks one head's score parameters against d_h. Empty fields are fine (seeded later).
std::optional<Error> validateScoreParams(ScoreKind kind, const ScoreParams& p, int dH, int hidden,
                                         const std::string& prefix) {
  auto matrixField = [&](const Matrix& m, const char* name, Index rows, Index cols,
                         const char* expected) -> std::optional<Error> {
    if (m.size() == 0) return std::nullopt;
    if (m.rows() != rows || m.cols() != cols)
      return fieldError(prefix + name, "is " + shapeOf(m) + ", expected " + shapeOf(rows, cols) +
                                          " (" + expected + ")");
    return checkFinite(m, prefix + name);
  };
  auto vectorField = [&](const Vector& v, const char* name, Index size,
                         const char* expected) -> std::optional<Error> {
    if (v.size() == 0) return std::nullopt;
    if (v.size() != size)
      return fieldError(prefix + name, "has " + std::to_string(v.size()) + " entries, expected " +
                                          std::to_string(size) + " (" + expected + ")");
    return checkFinite(v, prefix + name);
  };
  const int dHidden = scoreHiddenWidth(kind, p, dH, hidden);
  if ((kind == ScoreKind::Additive || kind == ScoreKind::Mlp) && dHidden > Limits::kMaxWidth)
    return fieldError(prefix + (kind == ScoreKind::Additive ? "additive_wq" : "mlp_hidden_w"),
                      "hidden width " + std::to_string(dHidden) + " exceeds the limit of " +
                         std::to_string(Limits::kMaxWidth));
  std::optional<Error> error;
  switch (kind) {
    case ScoreKind::Dot:
    case ScoreKind::ScaledDot:
    case ScoreKind::Cosine:
      break;
    case ScoreKind::General:
      error = matrixField(p.generalW, "general_w", dH, dH, "d_h x d_h");
      break;
    case ScoreKind::Additive:
      if ((error = matrixField(p.additiveWq, "additive_wq", dH, dHidden, "d_h x d_a"))) break;
      if ((error = matrixField(p.additiveWk, "additive_wk", dH, dHidden, "d_h x d_a"))) break;
      if ((error = vectorField(p.additiveBias, "additive_bias", dHidden, "d_a"))) break;
      error = vectorField(p.additiveV, "additive_v", dHidden, "d_a");
      break;
    case ScoreKind::Mlp:
      if ((error = matrixField(p.mlpHiddenW, "mlp_hidden_w", 2 * dH, dHidden, "2·d_h x d_m")))
        break;
      if ((error = vectorField(p.mlpHiddenBias, "mlp_hidden_bias", dHidden, "d_m"))) break;
      if ((error = vectorField(p.mlpOutW, "mlp_out_w", dHidden, "d_m"))) break;
      if (!std::isfinite(p.mlpOutBias))
        error = fieldError(prefix + "mlp_out_bias",
                           "is not a finite number (" + nonFiniteName(p.mlpOutBias) + ")");
      break;
  }
  return error;
}

}  // namespace detail

// =======================================================================================
// Validation
// =======================================================================================

namespace {

// Step 3's options against n_q queries and n_k keys (part of validate()).
Status validateMask(const MaskOptions& mask, int nQ, int nK) {
  switch (mask.kind) {
    case MaskKind::None:
    case MaskKind::Causal:
      break;
    case MaskKind::Padding:
      if (static_cast<int>(mask.keyValid.size()) != nK)
        return fieldError(
            "mask.key_valid",
            "has " + countOf(static_cast<long long>(mask.keyValid.size()), "entry", "entries") +
                " but there " + (nK == 1 ? "is " : "are ") + countOf(nK, "key", "keys"));
      break;
    case MaskKind::Local:
    case MaskKind::LocalGaussian:
      if (mask.window < 0)
        return fieldError("mask.window",
                          "must be 0 or more (got " + std::to_string(mask.window) + ")");
      if (mask.center == MaskOptions::Center::Fixed && (mask.position < 0 || mask.position >= nK))
        return fieldError("mask.position", "is " + std::to_string(mask.position) +
                                              " but the keys are numbered 0 to " +
                                              std::to_string(nK - 1));
      break;
    case MaskKind::Custom:
      if (mask.custom.rows() != nQ || mask.custom.cols() != nK)
        return fieldError("mask.matrix", "is " + shapeOf(mask.custom.rows(), mask.custom.cols()) +
                                            " but there " + (nQ == 1 ? "is " : "are ") +
                                            countOf(nQ, "query", "queries") + " and " +
                                            countOf(nK, "key", "keys") + " (expected " +
                                            shapeOf(nQ, nK) + ")");
      break;
  }
  return Ok{};
}

// Step 4's normaliser and step 2's score parameters, per head of width d_h (part of
// validate()).
Status validateScoreOptions(const Options& options, int dH) {
  // Normaliser.
  if (options.normalizer.kind == NormalizerKind::TopK && options.normalizer.topK < 1)
    return fieldError("normalizer.top_k",
                      "must be at least 1 (got " + std::to_string(options.normalizer.topK) + ")");

  // Score parameters, per head.
  if (options.scoreHidden < 0 || options.scoreHidden > Limits::kMaxWidth)
    return fieldError("score_hidden", "must be between 0 (= d_h) and " +
                                         std::to_string(Limits::kMaxWidth) + " (got " +
                                         std::to_string(options.scoreHidden) + ")");
  if (static_cast<int>(options.scoreParams.size()) > options.heads)
    return fieldError(
        "score_params",
        "has " + countOf(static_cast<long long>(options.scoreParams.size()), "entry", "entries") +
            " but there " + (options.heads == 1 ? "is" : "are") + " only " +
            countOf(options.heads, "head", "heads"));
  for (std::size_t h = 0; h < options.scoreParams.size(); ++h)
    if (auto e = validateScoreParams(options.score, options.scoreParams[h], dH, options.scoreHidden,
                                     "score_params[" + std::to_string(h) + "]."))
      return *e;
  return Ok{};
}

// The decoder output step's W_c ((d_out + d_q_in) x d_y), when it is given (part of
// validate()).
Status validateDecoderOutput(const DecoderOutputOptions& decoder, long long dOut, int dQIn) {
  if (!decoder.enabled || decoder.wc.size() == 0) return Ok{};
  const Matrix& wc = decoder.wc;
  if (wc.rows() != dOut + dQIn)
    return fieldError("decoder_output.wc",
                      "has " + std::to_string(wc.rows()) +
                         " rows, expected d_out + d_q = " + std::to_string(dOut) + " + " +
                         std::to_string(dQIn) + " = " + std::to_string(dOut + dQIn));
  if (wc.cols() > Limits::kMaxWidth)
    return fieldError("decoder_output.wc", "is " + std::to_string(wc.cols()) +
                                              " wide, more than the limit of " +
                                              std::to_string(Limits::kMaxWidth));
  if (auto e = checkFinite(wc, "decoder_output.wc")) return *e;
  return Ok{};
}

}  // namespace

Status validate(const Inputs& inputs, const Options& options) {
  const Matrix& queries = inputs.queries;
  const Matrix& keys = inputs.keys;
  const Matrix& values = inputs.values;

  // Inputs: non-empty, within limits, one value per key, finite.
  const std::pair<const Matrix*, const char*> named[] = {
      {&queries, "queries"}, {&keys, "keys"}, {&values, "values"}};
  for (const auto& [m, name] : named) {
    if (m->rows() == 0 || m->cols() == 0)
      return fieldError(name, "is empty (" + shapeOf(*m) +
                                 "); at least one row of at least one number is needed");
    if (m->rows() > Limits::kMaxTokens)
      return fieldError(name, "has " + std::to_string(m->rows()) + " rows, more than the limit of " +
                                 std::to_string(Limits::kMaxTokens) + " tokens");
    if (m->cols() > Limits::kMaxWidth)
      return fieldError(name, "is " + std::to_string(m->cols()) + " wide, more than the limit of " +
                                 std::to_string(Limits::kMaxWidth));
  }
  if (values.rows() != keys.rows())
    return fieldError("values", "has " + countOf(values.rows(), "row", "rows") + " but there " +
                                   (keys.rows() == 1 ? "is " : "are ") +
                                   countOf(keys.rows(), "key", "keys") + " (one value per key)");
  for (const auto& [m, name] : named)
    if (auto error = checkFinite(*m, name)) return *error;

  const int nQ = static_cast<int>(queries.rows()), nK = static_cast<int>(keys.rows());
  const int dQIn = static_cast<int>(queries.cols()), dKIn = static_cast<int>(keys.cols()),
            dVIn = static_cast<int>(values.cols());

  // Heads and temperature.
  const int heads = options.heads;
  if (heads < 1)
    return fieldError("heads", "must be at least 1 (got " + std::to_string(heads) + ")");
  if (heads > Limits::kMaxHeads)
    return fieldError("heads", std::to_string(heads) + " heads exceed the limit of " +
                                  std::to_string(Limits::kMaxHeads));
  if (!std::isfinite(options.temperature) || !(options.temperature > 0))
    return fieldError("temperature", "must be a finite number above 0 (got " +
                                        messageNumber(options.temperature) + ")");

  // Projections: shapes chain X (n x d_in)·W (d_in x d_model) and concat·W_o.
  const Projections& p = options.projections;
  int dModel = dQIn, dvModel = dVIn, dOut = dVIn;
  if (p.identity) {
    if (dKIn != dQIn)
      return fieldError("keys", "are " + std::to_string(dKIn) + " wide but the queries are " +
                                   std::to_string(dQIn) +
                                   " wide; without projections they must be the same width");
  } else {
    auto checkWeight = [&](const Matrix& w, const char* field, int inWidth,
                           const char* input) -> std::optional<Error> {
      if (w.size() == 0)
        return fieldError(field,
                          std::string("is missing (explicit projections need wq, wk and wv)"));
      if (w.rows() != inWidth)
        return fieldError(field, "has " + std::to_string(w.rows()) + " rows but the " + input +
                                    " are " + std::to_string(inWidth) + " wide");
      if (w.cols() > Limits::kMaxWidth)
        return fieldError(field, "is " + std::to_string(w.cols()) +
                                    " wide, more than the limit of " +
                                    std::to_string(Limits::kMaxWidth));
      return checkFinite(w, field);
    };
    auto checkBias = [&](const Vector& b, const char* field, Index width) -> std::optional<Error> {
      if (b.size() != 0 && b.size() != width)
        return fieldError(field, "has " + std::to_string(b.size()) + " entries, expected " +
                                    std::to_string(width) + " (or none)");
      return checkFinite(b, field);
    };
    if (auto e = checkWeight(p.wq, "projections.wq", dQIn, "queries")) return *e;
    if (auto e = checkWeight(p.wk, "projections.wk", dKIn, "keys")) return *e;
    if (auto e = checkWeight(p.wv, "projections.wv", dVIn, "values")) return *e;
    if (p.wk.cols() != p.wq.cols())
      return fieldError("projections.wk", "projects to width " + std::to_string(p.wk.cols()) +
                                             " but wq projects to " + std::to_string(p.wq.cols()) +
                                             "; queries and keys must end up the same width");
    if (auto e = checkBias(p.bq, "projections.bq", p.wq.cols())) return *e;
    if (auto e = checkBias(p.bk, "projections.bk", p.wk.cols())) return *e;
    if (auto e = checkBias(p.bv, "projections.bv", p.wv.cols())) return *e;
    dModel = static_cast<int>(p.wq.cols());
    dvModel = static_cast<int>(p.wv.cols());
    dOut = dvModel;
    if (p.wo.size() != 0) {
      if (p.wo.rows() != dvModel)
        return fieldError("projections.wo", "has " + std::to_string(p.wo.rows()) +
                                               " rows but the concatenated heads are " +
                                               std::to_string(dvModel) + " wide");
      if (p.wo.cols() > Limits::kMaxWidth)
        return fieldError("projections.wo", "is " + std::to_string(p.wo.cols()) +
                                               " wide, more than the limit of " +
                                               std::to_string(Limits::kMaxWidth));
      if (auto e = checkFinite(p.wo, "projections.wo")) return *e;
      dOut = static_cast<int>(p.wo.cols());
      if (auto e = checkBias(p.bo, "projections.bo", p.wo.cols())) return *e;
    } else if (p.bo.size() != 0) {
      return fieldError("projections.bo", "is given but there is no output projection wo");
    }
  }

  // The heads split d_model and dv_model into equal column blocks.
  if (dModel % heads != 0 || dvModel % heads != 0) {
    const bool model = dModel % heads != 0;
    return fieldError("heads", std::to_string(heads) + " heads do not divide the " +
                                  (model ? "model width " : "value width ") +
                                  std::to_string(model ? dModel : dvModel) + " (choose " +
                                  joinChoices(headChoices(dModel, dvModel)) + ")");
  }
  WorkShape shape;
  shape.nQ = nQ;
  shape.nK = nK;
  shape.dQ = dQIn;
  shape.dK = dKIn;
  shape.dV = dVIn;
  shape.dModel = dModel;
  shape.dvModel = dvModel;
  shape.dOut = !p.identity && p.wo.size() != 0 ? p.wo.cols() : 0;
  shape.projected = !p.identity;
  setWorkOptions(shape, options);
  if (Status affordable = checkWork(shape); !affordable) return affordable;

  // Mask.
  if (Status valid = validateMask(options.mask, nQ, nK); !valid) return valid;

  // Normaliser and score parameters.
  if (Status valid = validateScoreOptions(options, dModel / heads); !valid) return valid;

  // Decoder output step.
  return validateDecoderOutput(options.decoderOutput, dOut, dQIn);
}

void setWorkOptions(WorkShape& shape, const Options& options) {
  shape.heads = options.heads;
  shape.score = options.score;
  const int dH = static_cast<int>(shape.dModel / options.heads);
  shape.dHidden = options.scoreHidden > 0 ? options.scoreHidden : dH;
  if (!options.scoreParams.empty())
    shape.dHidden = scoreHiddenWidth(options.score, options.scoreParams[0], dH, options.scoreHidden);
  shape.dY = options.decoderOutput.enabled
                 ? (options.decoderOutput.wc.size() != 0 ? options.decoderOutput.wc.cols() : shape.dQ)
                 : 0;
}

long long attentionWork(const WorkShape& w) {
  // Within the other limits every term is a product of at most four factors of at most 2^13
  // (times a small constant), so each fits in 64 bits; the sum saturates all the same.
  const long long dH = w.heads > 0 ? w.dModel / w.heads : w.dModel;
  const long long cells = w.heads * w.nQ * w.nK;
  long long terms[] = {
      w.projected ? w.nQ * w.dQ * w.dModel : 0,
      w.projected ? w.nK * w.dK * w.dModel : 0,
      w.projected ? w.nK * w.dV * w.dvModel : 0,
      w.nQ * w.dvModel * w.dOut,
      w.nQ * w.nK * w.dModel,                                  // scores
      w.score == ScoreKind::General ? w.nQ * w.dModel * dH : 0,
      0,
      0,
      4 * cells,                                               // normalising
      w.nQ * w.nK * w.dvModel,                                 // context
      w.nQ * ((w.dOut > 0 ? w.dOut : w.dvModel) + w.dQ) * w.dY,  // decoder step
  };
  if (w.score == ScoreKind::Additive || w.score == ScoreKind::Mlp) {
    terms[6] = w.heads * (w.nQ + w.nK) * dH * w.dHidden;
    terms[7] = 8 * cells;  // times d_a below, saturating
    const long long limit = std::numeric_limits<long long>::max() / 4;
    terms[7] = w.dHidden > 0 && terms[7] > limit / w.dHidden ? limit : terms[7] * w.dHidden;
  }
  long long total = 0;
  for (long long term : terms) {
    if (term > std::numeric_limits<long long>::max() / 4 - total)
      return std::numeric_limits<long long>::max() / 4;
    total += term;
  }
  return total;
}

Status checkWork(const WorkShape& w) {
  const long long cells = w.heads * w.nQ * w.nK;
  if (cells > Limits::kMaxCells)
    return fieldError("queries",
                      std::to_string(w.heads) + " heads x " + std::to_string(w.nQ) + " queries x " +
                         std::to_string(w.nK) + " keys = " + std::to_string(cells) +
                         " cells, more than the limit of " + std::to_string(Limits::kMaxCells) +
                         " (2^25)");
  const long long work = attentionWork(w);
  if (work > Limits::kMaxWork)
    return fieldError("queries", "computing this needs about " +
                                    messageNumber(static_cast<double>(work)) +
                                    " multiply-adds, more than the limit of " +
                                    std::to_string(Limits::kMaxWork) +
                                    " (2^33); use fewer tokens, narrower inputs, a smaller "
                                    "model width or fewer heads");
  return Ok{};
}

}  // namespace attn
