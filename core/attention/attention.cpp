// The attention mechanism: projections, score functions, masks, normalisers, multi-head,
// positional encoding and seeded initialisation. See core/attention.h for the conventions
// (rows are tokens, projections are applied on the right: X·W + b) and docs/formulas.md for
// every formula.
//
// Sections (in file order):
//   helpers for validation messages, normalisers of one masked row (step 4 kernels),
//   products in fixed row blocks (threads), names of the kinds, initialisation and
//   projections (step 1), similarity (step 2, scored in row blocks), masks (step 3),
//   normalisers (step 4), positional encoding and seeded embeddings, validation,
//   the whole mechanism (attend(): steps 1-8, with the double-precision context fallback),
//   derived stages on demand (scores and masked scores recomputed per head).
#include "core/attention/attention.h"

#include "core/base/format.h"
#include "core/isa/isa.h"
#include "core/base/parallel.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <utility>

#include "core/base/random.h"

namespace attn {

namespace {

using Index = Eigen::Index;

constexpr Scalar kInf = std::numeric_limits<Scalar>::infinity();
constexpr Scalar kMaxFinite = std::numeric_limits<Scalar>::max();

// =======================================================================================
// Small helpers for validation messages
// =======================================================================================

std::string shapeOf(Index rows, Index cols) {
  return std::to_string(rows) + " x " + std::to_string(cols);
}
std::string shapeOf(const Matrix& m) {
  return shapeOf(m.rows(), m.cols());
}

Error makeError(std::string field, std::string problem) {
  return Error{"", std::move(field), std::move(problem)};
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
        return makeError(field + "[" + std::to_string(r) + "][" + std::to_string(c) + "]",
                         "is not a finite number (" + nonFiniteName(m(r, c)) + ")");
  return std::nullopt;
}

std::optional<Error> checkFinite(const Vector& v, const std::string& field) {
  if (v.allFinite()) return std::nullopt;
  for (Index i = 0; i < v.size(); ++i)
    if (!std::isfinite(v(i)))
      return makeError(field + "[" + std::to_string(i) + "]",
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
      return makeError(prefix + name, "is " + shapeOf(m) + ", expected " + shapeOf(rows, cols) +
                                          " (" + expected + ")");
    return checkFinite(m, prefix + name);
  };
  auto vectorField = [&](const Vector& v, const char* name, Index size,
                         const char* expected) -> std::optional<Error> {
    if (v.size() == 0) return std::nullopt;
    if (v.size() != size)
      return makeError(prefix + name, "has " + std::to_string(v.size()) + " entries, expected " +
                                          std::to_string(size) + " (" + expected + ")");
    return checkFinite(v, prefix + name);
  };
  const int dHidden = scoreHiddenWidth(kind, p, dH, hidden);
  if ((kind == ScoreKind::Additive || kind == ScoreKind::Mlp) && dHidden > Limits::kMaxWidth)
    return makeError(prefix + (kind == ScoreKind::Additive ? "additive_wq" : "mlp_hidden_w"),
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
        error = makeError(prefix + "mlp_out_bias",
                          "is not a finite number (" + nonFiniteName(p.mlpOutBias) + ")");
      break;
  }
  return error;
}

// =======================================================================================
// Normalisers for one row, on a MASKED row: s (n) holds -inf for every key that takes no
// part (masked, or a score of -inf), never NaN, so no separate availability mask is needed
// and every pass runs over the contiguous row. Each function writes exactly 0 for those
// keys. attend() passes its maskedScores rows directly; the public normalizeRow() and the
// helpers for explain.cpp first build such a row from (scores, allowed).
// =======================================================================================

using ScoreRow = Eigen::Array<Scalar, Eigen::Dynamic, 1>;
using ScoreRowMap = Eigen::Map<ScoreRow>;
using ConstScoreRowMap = Eigen::Map<const ScoreRow>;

// Softmax's exp arguments are floored at -87 (in the ISA kernel, expShiftedRow) so that exp
// never returns a denormal: arithmetic on denormals is ~100x slower on x86, and they would
// also slow down the weights·v GEMM. exp(-87) < 1.7e-38 is below float resolution next to
// the maximum's exp(0) = 1, so those keys get exactly 0.

// Buffers the row normalisers need, sized once (per attend() call, or per public call) so
// that no row allocates.
struct RowScratch {
  std::vector<Scalar> row;     // n: top_k's kept keys as a masked row
  std::vector<Scalar> tempered;  // n: (s - max) / T, the row the normaliser sees when T != 1
  std::vector<int> order;      // n: key indices (top_k)
  std::vector<double> sorted;  // n: shifted scores (sparsemax)

  explicit RowScratch(int n) {
    row.reserve(static_cast<std::size_t>(std::max(n, 0)));
    tempered.resize(static_cast<std::size_t>(std::max(n, 0)));
    order.reserve(static_cast<std::size_t>(std::max(n, 0)));
    sorted.reserve(static_cast<std::size_t>(std::max(n, 0)));
  }
};

// Writes the masked form of (scores, allowed) into `out` (n): the score where the key is
// allowed and above -inf, else -inf (NaN never takes part). allowed may be null (all allowed).
const Scalar* maskedRowOf(const Scalar* scores, const bool* allowed, int n,
                          std::vector<Scalar>& out) {
  out.resize(static_cast<std::size_t>(n));
  for (int j = 0; j < n; ++j)
    out[j] = (!allowed || allowed[j]) && scores[j] > -kInf ? scores[j] : -kInf;
  return out.data();
}

// Largest entry of a masked row; -inf when no key takes part. The ISA kernel.
inline Scalar rowMax(const Scalar* s, int n) {
  return kernels::active().rowMax(s, n);
}

// One-hot on the maximum m; ties share the weight evenly. Also the +infinity case of softmax.
void hardRow(const Scalar* s, Scalar m, int n, Scalar* weights) {
  int ties = 0;
  for (int j = 0; j < n; ++j) ties += s[j] == m ? 1 : 0;
  const Scalar share = Scalar(1) / static_cast<Scalar>(ties);
  for (int j = 0; j < n; ++j) weights[j] = s[j] == m ? share : Scalar(0);
}

// Stable softmax of a masked row with maximum m > -inf: exp(s_j - m) / Σ_k exp(s_k - m).
// Two passes of the ISA kernels over the row (the row is in L1 by then): exp, with exact
// zeros where s_j - m <= -87 (masked keys, s = -inf, and keys whose exp was floored)
// and the sum in double; then one division by the sum rounded to float.
void softmaxRow(const Scalar* s, Scalar m, int n, Scalar* weights) {
  if (m == kInf) {  // only reachable through the public API with infinite scores
    hardRow(s, m, n, weights);
    return;
  }
  const kernels::Table& k = kernels::active();
  const double sum = k.expShiftedRow(s, m, n, weights);
  k.divideRow(weights, n, static_cast<Scalar>(sum));  // sum >= 1: the maximum gives exp(0)
}

// top_k's selection on a masked row: fills `order` with the min(k, available) keys of largest
// score, in descending order, ties going to the lower index. The one implementation of the
// rule, used by normalizeRow() and (through topKKeys()) by the explanations. Returns true
// when every available key is kept; then `order` is only sorted if `orderAll` asks for it.
bool selectTopK(const Scalar* s, int n, int k, std::vector<int>& order, bool orderAll) {
  order.clear();
  for (int j = 0; j < n; ++j)
    if (s[j] > -kInf) order.push_back(j);
  const int kept = std::min(std::max(k, 1), static_cast<int>(order.size()));
  auto before = [s](int a, int b) { return s[a] > s[b] || (s[a] == s[b] && a < b); };
  if (kept < static_cast<int>(order.size())) {
    std::partial_sort(order.begin(), order.begin() + kept, order.end(), before);
    order.resize(static_cast<std::size_t>(kept));
    return false;
  }
  if (orderAll) std::sort(order.begin(), order.end(), before);
  return true;
}

// Softmax over the k largest available scores of a masked row with maximum m > -inf; the
// plain softmax when k >= the available keys.
void topKRow(const Scalar* s, Scalar m, int k, int n, Scalar* weights, RowScratch& scratch) {
  if (selectTopK(s, n, k, scratch.order, false)) {
    softmaxRow(s, m, n, weights);
    return;
  }
  // The kept keys as a masked row of their own; the maximum is always kept.
  scratch.row.assign(static_cast<std::size_t>(n), -kInf);
  for (int j : scratch.order) scratch.row[j] = s[j];
  softmaxRow(scratch.row.data(), m, n, weights);
}

// Sparsemax threshold τ of a masked row with maximum m > -inf, relative to m (sparsemax is
// shift invariant, and in double so ±1e30 cannot overflow): sort z = s - m descending,
// k(z) = max{k : 1 + k·z_(k) > Σ_{j<=k} z_(j)}, τ = (Σ_{j<=k(z)} z_(j) - 1) / k(z).
// `support` = k(z) >= 1 (for k = 1, 1 + z_(1) > z_(1)).
double sparsemaxTau(const Scalar* s, Scalar m, int n, std::vector<double>& sorted, int* support) {
  sorted.clear();
  for (int j = 0; j < n; ++j)
    if (s[j] > -kInf) sorted.push_back(static_cast<double>(s[j]) - m);
  std::sort(sorted.begin(), sorted.end(), std::greater<>());
  double cumulative = 0, kept = 0;
  int supportSize = 0;
  for (std::size_t k = 0; k < sorted.size(); ++k) {
    cumulative += sorted[k];
    if (1.0 + static_cast<double>(k + 1) * sorted[k] > cumulative) {
      supportSize = static_cast<int>(k + 1);
      kept = cumulative;
    }
  }
  *support = supportSize;
  return supportSize > 0 ? (kept - 1.0) / supportSize : 0.0;
}

// Sparsemax (Martins & Astudillo 2016): the Euclidean projection of z onto the simplex,
// p_j = max(z_j - τ, 0), on a masked row with maximum m > -inf.
void sparsemaxRow(const Scalar* s, Scalar m, int n, Scalar* weights, RowScratch& scratch) {
  if (m == kInf) {
    hardRow(s, m, n, weights);
    return;
  }
  int support = 0;
  const double tau = sparsemaxTau(s, m, n, scratch.sorted, &support);
  for (int j = 0; j < n; ++j) {
    const double z = static_cast<double>(s[j]) - m;  // -inf for masked keys
    weights[j] = static_cast<Scalar>(std::max(z - tau, 0.0));
  }
}

// Step 4 on a masked row (see above). Returns false (and all-zero weights) when no key takes
// part. The row's maximum is found once, vectorised; there is no per-row allocation.
bool normalizeMaskedRow(const NormalizerOptions& normalizer, const Scalar* s, int n,
                        Scalar* weights, RowScratch& scratch) {
  if (n <= 0) return false;
  const Scalar m = rowMax(s, n);
  if (m == -kInf) {
    std::fill(weights, weights + n, Scalar(0));
    return false;
  }
  switch (normalizer.kind) {
    case NormalizerKind::Softmax:
      softmaxRow(s, m, n, weights);
      break;
    case NormalizerKind::Hard:
      hardRow(s, m, n, weights);
      break;
    case NormalizerKind::TopK:
      topKRow(s, m, normalizer.topK, n, weights, scratch);
      break;
    case NormalizerKind::Sparsemax:
      sparsemaxRow(s, m, n, weights, scratch);
      break;
  }
  return true;
}

// =======================================================================================
// Products in fixed row blocks
// =======================================================================================

// The big products run in blocks of kProductBlockRows rows, handed out to the threads. The
// blocks depend only on the number of rows, never on the thread count, so every thread count
// gives the same bits (OpenBLAS picks its kernels, and so its order of additions, by the
// shape of a call; its own threads would block differently again, which is one reason
// attend() keeps them at 1).
constexpr Index kProductBlockRows = 256;

Index blockCount(Index rows, Index blockRows) {
  return (rows + blockRows - 1) / blockRows;
}

// dst.middleRows(block) = lhs.middleRows(block)·rhs, one block (dst already shaped).
template <class Lhs, class Rhs>
void productBlock(Matrix& dst, const Lhs& lhs, const Rhs& rhs, Index block) {
  const Index first = block * kProductBlockRows;
  const Index count = std::min(kProductBlockRows, dst.rows() - first);
  dst.middleRows(first, count).noalias() = lhs.middleRows(first, count) * rhs;
}

// dst = lhs·rhs (dst already shaped), its blocks on up to `threads` threads.
template <class Lhs, class Rhs>
void blockedProduct(Matrix& dst, const Lhs& lhs, const Rhs& rhs, int threads) {
  const int blocks = static_cast<int>(blockCount(dst.rows(), kProductBlockRows));
  parallelFor(blocks, threads, [&](int block, int) { productBlock(dst, lhs, rhs, block); });
}

// Rows scaled to unit length; zero rows stay zero and are flagged. Scaling by the largest
// magnitude first keeps |x| from overflowing for entries near the float limit.
Matrix unitRows(const Matrix& m, std::vector<Index>& zeroRows) {
  Matrix out(m.rows(), m.cols());
  for (Index i = 0; i < m.rows(); ++i) {
    const Scalar largest = m.cols() > 0 ? m.row(i).cwiseAbs().maxCoeff() : Scalar(0);
    if (!(largest > 0)) {
      out.row(i).setZero();
      zeroRows.push_back(i);
      continue;
    }
    out.row(i) = m.row(i) / largest;
    out.row(i) /= out.row(i).norm();
  }
  return out;
}

}  // namespace

// =======================================================================================
// Names
// =======================================================================================

namespace {
constexpr std::array<std::pair<ScoreKind, std::string_view>, 6> kScoreNames{{
    {ScoreKind::Dot, "dot"},
    {ScoreKind::ScaledDot, "scaled_dot"},
    {ScoreKind::Cosine, "cosine"},
    {ScoreKind::General, "general"},
    {ScoreKind::Additive, "additive"},
    {ScoreKind::Mlp, "mlp"},
}};
constexpr std::array<std::pair<MaskKind, std::string_view>, 6> kMaskNames{{
    {MaskKind::None, "none"},
    {MaskKind::Causal, "causal"},
    {MaskKind::Padding, "padding"},
    {MaskKind::Local, "local"},
    {MaskKind::LocalGaussian, "local_gaussian"},
    {MaskKind::Custom, "custom"},
}};
constexpr std::array<std::pair<NormalizerKind, std::string_view>, 4> kNormalizerNames{{
    {NormalizerKind::Softmax, "softmax"},
    {NormalizerKind::Hard, "hard"},
    {NormalizerKind::TopK, "top_k"},
    {NormalizerKind::Sparsemax, "sparsemax"},
}};
constexpr std::array<std::pair<ProjectionKind, std::string_view>, 5> kProjectionNames{{
    {ProjectionKind::Identity, "identity"},
    {ProjectionKind::Xavier, "xavier"},
    {ProjectionKind::Explicit, "explicit"},
    {ProjectionKind::PyTorch, "pytorch"},
    {ProjectionKind::QkvInterleaved, "qkv_interleaved"},
}};

template <class Kind, std::size_t N>
std::string_view nameOf(const std::array<std::pair<Kind, std::string_view>, N>& table, Kind kind) {
  for (const auto& [k, name] : table)
    if (k == kind) return name;
  return "unknown";
}

template <class Kind, std::size_t N>
std::optional<Kind> kindOf(const std::array<std::pair<Kind, std::string_view>, N>& table,
                           std::string_view name) {
  for (const auto& [k, n] : table)
    if (n == name) return k;
  return std::nullopt;
}
}  // namespace

std::string_view toString(ScoreKind kind) {
  return nameOf(kScoreNames, kind);
}
std::string_view toString(MaskKind kind) {
  return nameOf(kMaskNames, kind);
}
std::string_view toString(NormalizerKind kind) {
  return nameOf(kNormalizerNames, kind);
}
std::string_view toString(ProjectionKind kind) {
  return nameOf(kProjectionNames, kind);
}
std::optional<ScoreKind> parseScoreKind(std::string_view name) {
  return kindOf(kScoreNames, name);
}
std::optional<MaskKind> parseMaskKind(std::string_view name) {
  return kindOf(kMaskNames, name);
}
std::optional<NormalizerKind> parseNormalizerKind(std::string_view name) {
  return kindOf(kNormalizerNames, name);
}
std::optional<ProjectionKind> parseProjectionKind(std::string_view name) {
  return kindOf(kProjectionNames, name);
}

// =======================================================================================
// Initialisation and projections
// =======================================================================================

Matrix xavierUniform(int rows, int cols, std::uint64_t seed) {
  if (rows <= 0 || cols <= 0) return Matrix(std::max(rows, 0), std::max(cols, 0));
  // Glorot & Bengio 2010: U(-a, a) with a = √(6 / (fan_in + fan_out)).
  const Scalar bound = std::sqrt(Scalar(6) / static_cast<Scalar>(rows + cols));
  SplitMix64 generator(seed);
  Matrix m(rows, cols);
  Scalar* data = m.data();  // row-major: row 0 first, so the order is part of the contract
  for (Index i = 0; i < m.size(); ++i) data[i] = generator.uniformSymmetric() * bound;
  return m;
}

Expected<Projections> projectionsFromPyTorch(const Matrix& inProjWeight, const Vector& inProjBias,
                                             const Matrix& outProjWeight,
                                             const Vector& outProjBias) {
  const Index rows = inProjWeight.rows(), e = inProjWeight.cols();
  if (e < 1 || rows != 3 * e)
    return makeError("in_proj_weight", "is " + shapeOf(inProjWeight) +
                                           ", expected 3E x E (Q, K and V blocks stacked)");
  if (e > Limits::kMaxWidth)
    return makeError("in_proj_weight", "E = " + std::to_string(e) + " exceeds the limit of " +
                                           std::to_string(Limits::kMaxWidth));
  if (auto error = checkFinite(inProjWeight, "in_proj_weight")) return *error;
  if (inProjBias.size() != 0 && inProjBias.size() != 3 * e)
    return makeError("in_proj_bias", "has " + std::to_string(inProjBias.size()) +
                                         " entries, expected 3E = " + std::to_string(3 * e));
  if (auto error = checkFinite(inProjBias, "in_proj_bias")) return *error;
  if (outProjWeight.rows() != e || outProjWeight.cols() != e)
    return makeError("out_proj_weight",
                     "is " + shapeOf(outProjWeight) + ", expected E x E = " + shapeOf(e, e));
  if (auto error = checkFinite(outProjWeight, "out_proj_weight")) return *error;
  if (outProjBias.size() != 0 && outProjBias.size() != e)
    return makeError("out_proj_bias", "has " + std::to_string(outProjBias.size()) +
                                          " entries, expected E = " + std::to_string(e));
  if (auto error = checkFinite(outProjBias, "out_proj_bias")) return *error;

  // PyTorch computes x·Wᵀ + b with W (out x in); we compute x·W' + b, so W' = Wᵀ.
  Projections p;
  p.identity = false;
  p.wq = inProjWeight.topRows(e).transpose();
  p.wk = inProjWeight.middleRows(e, e).transpose();
  p.wv = inProjWeight.bottomRows(e).transpose();
  if (inProjBias.size() != 0) {
    p.bq = inProjBias.head(e);
    p.bk = inProjBias.segment(e, e);
    p.bv = inProjBias.tail(e);
  }
  p.wo = outProjWeight.transpose();
  p.bo = outProjBias;
  return p;
}

Expected<BlockedQkv> blockedFromInterleavedQkv(const Matrix& weight, const Vector& bias,
                                               int heads) {
  const Index rows = weight.rows(), e = weight.cols();
  if (e < 1 || rows != 3 * e)
    return makeError("in_proj_weight", "is " + shapeOf(weight) +
                                           ", expected 3E x E (one qkv_proj Linear, E -> 3E)");
  if (bias.size() != 0 && bias.size() != 3 * e)
    return makeError("in_proj_bias", "has " + std::to_string(bias.size()) +
                                         " entries, expected 3E = " + std::to_string(3 * e));
  if (heads < 1 || e % heads != 0)
    return makeError("heads", std::to_string(heads) + " heads do not divide E = " +
                                  std::to_string(e) +
                                  " (qkv_interleaved splits each head's 3·d_h outputs)");
  const Index dH = e / heads;
  BlockedQkv out;
  out.weight.resize(rows, e);
  if (bias.size() != 0) out.bias.resize(rows);
  // Interleaved row 3h·d_h + part·d_h + r (part 0 = q, 1 = k, 2 = v) is blocked row
  // part·E + h·d_h + r.
  for (Index h = 0; h < heads; ++h)
    for (Index part = 0; part < 3; ++part) {
      const Index from = (3 * h + part) * dH, to = part * e + h * dH;
      out.weight.middleRows(to, dH) = weight.middleRows(from, dH);
      if (bias.size() != 0) out.bias.segment(to, dH) = bias.segment(from, dH);
    }
  return out;
}

Projections xavierProjections(int dQIn, int dKIn, int dVIn, int dModel, int dvModel,
                              std::uint64_t seed) {
  Projections p;
  p.identity = false;
  p.wq = xavierUniform(dQIn, dModel, deriveSeed(seed, "projection.wq"));
  p.bq = Vector::Zero(std::max(dModel, 0));
  p.wk = xavierUniform(dKIn, dModel, deriveSeed(seed, "projection.wk"));
  p.bk = Vector::Zero(std::max(dModel, 0));
  p.wv = xavierUniform(dVIn, dvModel, deriveSeed(seed, "projection.wv"));
  p.bv = Vector::Zero(std::max(dvModel, 0));
  p.wo = xavierUniform(dvModel, dvModel, deriveSeed(seed, "projection.wo"));
  p.bo = Vector::Zero(std::max(dvModel, 0));
  return p;
}

// =======================================================================================
// Step 2: similarity
// =======================================================================================

ScoreParams completeScoreParams(ScoreKind kind, ScoreParams params, int dH, int hidden,
                                std::uint64_t seed) {
  const int dHidden = scoreHiddenWidth(kind, params, dH, hidden);
  auto fill = [&](Matrix& m, int rows, int cols, std::string_view tag) {
    if (m.size() == 0) m = xavierUniform(rows, cols, deriveSeed(seed, tag));
  };
  auto fillVector = [&](Vector& v, int size, std::string_view tag) {
    if (v.size() == 0) v = xavierUniform(size, 1, deriveSeed(seed, tag)).col(0);
  };
  auto fillZero = [&](Vector& v, int size) {
    if (v.size() == 0) v = Vector::Zero(size);
  };
  switch (kind) {
    case ScoreKind::Dot:
    case ScoreKind::ScaledDot:
    case ScoreKind::Cosine:
      break;
    case ScoreKind::General:
      fill(params.generalW, dH, dH, "score.general.w");
      break;
    case ScoreKind::Additive:
      fill(params.additiveWq, dH, dHidden, "score.additive.wq");
      fill(params.additiveWk, dH, dHidden, "score.additive.wk");
      fillZero(params.additiveBias, dHidden);
      fillVector(params.additiveV, dHidden, "score.additive.v");
      break;
    case ScoreKind::Mlp:
      fill(params.mlpHiddenW, 2 * dH, dHidden, "score.mlp.hidden_w");
      fillZero(params.mlpHiddenBias, dHidden);
      fillVector(params.mlpOutW, dHidden, "score.mlp.out_w");
      break;
  }
  return params;
}

namespace {

// Score functions work on blocks of kScoreBlockRows query rows: attend() scores a block into
// a scratch buffer, masks and normalises it while it is in cache, and keeps only the weights
// (issue 11: the n_q x n_k scores and masked scores of every head were most of the memory).
// headScoreRows() and similarity() compute the very same blocks, so the scores they return
// are, bit for bit, the ones attend() normalised (a product's rounding depends on its shape).
// The block height depends on the shape only (never on the thread count): as many rows as fit
// kScoreBlockBytes of scores (512 KiB, a quarter of a 2 MiB L2), between kScoreBlockRows and
// kMaxScoreBlockRows, a multiple of kScoreBlockRows. At n_k = 2048 that is 64 rows; at
// n_k = 512 it is 256, so a head is 2 items instead of 8: fewer, larger GEMM calls (at small
// n the calls' fixed costs dominated, and one thread was slower than PyTorch).
constexpr Index kScoreBlockRows = 64;
constexpr Index kMaxScoreBlockRows = 256;
constexpr Index kScoreBlockBytes = Index(512) * 1024;

Index scoreBlockRows(Index nK) {
  const Index fit = kScoreBlockBytes / (static_cast<Index>(sizeof(Scalar)) * std::max<Index>(nK, 1));
  return std::clamp(fit / kScoreBlockRows * kScoreBlockRows, kScoreBlockRows, kMaxScoreBlockRows);
}

// What every block of queries of one head is scored against, prepared once per head.
struct KeySide {
  ScoreKind kind = ScoreKind::Dot;
  const Matrix* k = nullptr;  // dot, scaled_dot, general: the keys (n_k x d_h)
  Matrix unitKeys;            // cosine: k with unit rows (zero rows stay zero)
  Matrix tanhKeysT;           // additive / mlp: (k·W₂)ᵀ or (k·W_h[d_h:])ᵀ   (d_a x n_k)
  std::vector<Index> zeroKeys;  // cosine: zero key vectors
  std::string invalid;          // non-empty: the parameters do not fit; every score is 0
  Index nK = 0;
};

KeySide prepareKeys(ScoreKind kind, const Matrix& q, const Matrix& k, const ScoreParams& params) {
  KeySide side;
  side.kind = kind;
  side.k = &k;
  side.nK = k.rows();
  const Index dH = q.cols();
  if (k.cols() != dH) {
    side.invalid = "queries and keys differ in width";
    return side;
  }
  if (dH == 0) {
    side.invalid = "queries and keys have width 0";
    return side;
  }
  switch (kind) {
    case ScoreKind::Dot:
    case ScoreKind::ScaledDot:
      break;
    case ScoreKind::Cosine:
      side.unitKeys = unitRows(k, side.zeroKeys);
      break;
    case ScoreKind::General:
      if (params.generalW.rows() != dH || params.generalW.cols() != dH)
        side.invalid = "general_w must be d_h x d_h";
      break;
    case ScoreKind::Additive: {
      const Index dA = params.additiveWq.cols();
      if (params.additiveWq.rows() != dH || params.additiveWk.rows() != dH ||
          params.additiveWk.cols() != dA || params.additiveBias.size() != dA ||
          params.additiveV.size() != dA || dA == 0) {
        side.invalid = "additive parameters have the wrong shapes";
        break;
      }
      side.tanhKeysT.resize(dA, side.nK);
      side.tanhKeysT.noalias() = (k * params.additiveWk).transpose();
      break;
    }
    case ScoreKind::Mlp: {
      const Index dM = params.mlpHiddenW.cols();
      if (params.mlpHiddenW.rows() != 2 * dH || params.mlpHiddenBias.size() != dM ||
          params.mlpOutW.size() != dM || dM == 0) {
        side.invalid = "mlp parameters have the wrong shapes";
        break;
      }
      side.tanhKeysT.resize(dM, side.nK);
      side.tanhKeysT.noalias() = (k * params.mlpHiddenW.bottomRows(dH)).transpose();
      break;
    }
  }
  return side;
}

using BlockMap = Eigen::Map<Matrix>;

// Step 2 for query rows [first, first + count) (count <= scoreBlockRows(n_k), first a
// multiple of it): raw scores into out (count x n_k, row-major, contiguous). Zero query vectors (cosine)
// are appended to zeroQueries.
void scoreBlock(const KeySide& keys, const Matrix& q, const ScoreParams& params, Index first,
                Index count, Scalar* out, std::vector<Index>* zeroQueries) {
  const Index nK = keys.nK, dH = q.cols();
  BlockMap scores(out, count, nK);
  if (!keys.invalid.empty()) {
    scores.setZero();
    return;
  }
  const auto qRows = q.middleRows(first, count);
  switch (keys.kind) {
    case ScoreKind::Dot:
      // q·kᵀ as one GEMM: (count x d_h)·(d_h x n_k)
      scores.noalias() = qRows * keys.k->transpose();
      break;
    case ScoreKind::ScaledDot: {
      // q·kᵀ / √d_h; the factor rides along as the GEMM's alpha (no temporary)
      const Scalar scale = Scalar(1) / std::sqrt(static_cast<Scalar>(dH));
      scores.noalias() = scale * qRows * keys.k->transpose();
      break;
    }
    case ScoreKind::Cosine: {
      // q·kᵀ / (|q||k|) = unit(q)·unit(k)ᵀ; zero vectors score 0 (and are reported)
      std::vector<Index> zero;
      const Matrix qUnit = unitRows(qRows, zero);
      if (zeroQueries)
        for (Index i : zero) zeroQueries->push_back(first + i);
      scores.noalias() = qUnit * keys.unitKeys.transpose();
      scores = scores.cwiseMax(Scalar(-1)).cwiseMin(Scalar(1));  // rounding can reach 1+ε
      break;
    }
    case ScoreKind::General: {
      // q·W_a·kᵀ = (q·W_a)·kᵀ: (count x d_h)·(d_h x d_h), then one GEMM with kᵀ
      Matrix qw(count, dH);
      qw.noalias() = qRows * params.generalW;
      scores.noalias() = qw * keys.k->transpose();
      break;
    }
    case ScoreKind::Additive:
    case ScoreKind::Mlp: {
      // additive: tanh(q·W₁ + b + k·W₂)·v; mlp: tanh([q k]·W_h + b_h)·w_o + b_o with
      // [q k]·W_h = q·W_h[0:d_h] + k·W_h[d_h:2d_h]. The key half is in keys.tanhKeysT.
      const bool additive = keys.kind == ScoreKind::Additive;
      const Index dA = keys.tanhKeysT.rows();
      Matrix qw(count, dA);
      if (additive) {
        qw.noalias() = qRows * params.additiveWq;
        qw.rowwise() += params.additiveBias.transpose();
      } else {
        qw.noalias() = qRows * params.mlpHiddenW.topRows(dH);
        qw.rowwise() += params.mlpHiddenBias.transpose();
      }
      const Vector& v = additive ? params.additiveV : params.mlpOutW;
      kernels::active().tanhScores(qw.data(), keys.tanhKeysT.data(), v.data(),
                                   additive ? Scalar(0) : params.mlpOutBias, count, nK, dA, out,
                                   nK);
      break;
    }
  }
}

// The warnings of one head's scoring: an invalid parameter set, then zero vectors (cosine),
// queries first in row order, then keys.
void scoreWarnings(const KeySide& keys, const std::vector<Index>& zeroQueries, int head,
                   std::vector<Warning>* warnings) {
  if (!warnings) return;
  if (!keys.invalid.empty()) {
    warnings->push_back({"invalid_score_params", keys.invalid + "; scores set to 0", head, -1});
    return;
  }
  for (Index i : zeroQueries)
    warnings->push_back({"cosine_zero_vector",
                         "query " + std::to_string(i) +
                             " is a zero vector: cosine is undefined, its scores are 0",
                         head, static_cast<int>(i)});
  for (Index j : keys.zeroKeys)
    warnings->push_back({"cosine_zero_vector",
                         "key " + std::to_string(j) +
                             " is a zero vector: cosine is undefined, its scores are 0",
                         head, -1});
}

// Query rows [first, first + count) of the scores, computed block by block (blocks aligned at
// multiples of scoreBlockRows(n_k), as in attend()) into `out` (count x n_k).
void scoreRowsInto(const KeySide& keys, const Matrix& q, const ScoreParams& params, Index first,
                   Index count, Matrix& out, std::vector<Index>* zeroQueries) {
  out.resize(count, keys.nK);
  const Index nQ = q.rows(), blockRows = scoreBlockRows(keys.nK);
  Matrix block;
  for (Index start = first / blockRows * blockRows; start < first + count; start += blockRows) {
    const Index rows = std::min(blockRows, nQ - start);
    const Index from = std::max(first, start), to = std::min(first + count, start + rows);
    if (from == start && to == start + rows) {  // the whole block: straight into out
      scoreBlock(keys, q, params, start, rows, out.row(from - first).data(), zeroQueries);
      continue;
    }
    block.resize(rows, keys.nK);
    std::vector<Index> zero;
    scoreBlock(keys, q, params, start, rows, block.data(), &zero);
    if (zeroQueries)
      for (Index i : zero)
        if (i >= from && i < to) zeroQueries->push_back(i);
    out.middleRows(from - first, to - from) = block.middleRows(from - start, to - from);
  }
}

}  // namespace

Matrix similarity(ScoreKind kind, const Matrix& q, const Matrix& k, const ScoreParams& params,
                  std::vector<Warning>* warnings, int head) {
  const KeySide keys = prepareKeys(kind, q, k, params);
  Matrix scores;
  std::vector<Index> zeroQueries;
  scoreRowsInto(keys, q, params, 0, q.rows(), scores, &zeroQueries);
  scoreWarnings(keys, zeroQueries, head, warnings);
  return scores;
}

// =======================================================================================
// Step 3: masks
// =======================================================================================

namespace {

// buildMask() into `allowed`, reusing its buffer when the shape is unchanged.
void buildMaskInto(const MaskOptions& mask, int nQ, int nK, BoolMatrix& allowed,
                   Matrix* positionWeights) {
  nQ = std::max(nQ, 0);
  nK = std::max(nK, 0);
  allowed.resize(nQ, nK);
  if (positionWeights) positionWeights->resize(0, 0);
  switch (mask.kind) {
    case MaskKind::None:
      allowed.setConstant(true);
      break;
    case MaskKind::Causal:
      // key j allowed iff j <= i (also for n_q != n_k: query i sees keys 0..i)
      for (int i = 0; i < nQ; ++i)
        for (int j = 0; j < nK; ++j) allowed(i, j) = j <= i;
      break;
    case MaskKind::Padding:
      for (int j = 0; j < nK; ++j) {
        const bool valid = j < static_cast<int>(mask.keyValid.size()) && mask.keyValid[j];
        allowed.col(j).setConstant(valid);
      }
      break;
    case MaskKind::Local:
    case MaskKind::LocalGaussian: {
      // |j - p| <= D with p = i (local-m) or a fixed p (64-bit so that huge D cannot overflow)
      const long long window = std::max(mask.window, 0);
      const bool gaussian = mask.kind == MaskKind::LocalGaussian && positionWeights;
      if (gaussian) positionWeights->setZero(nQ, nK);
      // σ = D/2; D = 0 leaves only j = p in the window, whose weight is exp(0) = 1.
      const double sigma = static_cast<double>(window) / 2.0;
      for (int i = 0; i < nQ; ++i) {
        const long long p = mask.center == MaskOptions::Center::Aligned ? i : mask.position;
        for (int j = 0; j < nK; ++j) {
          const long long distance = static_cast<long long>(j) - p;
          const bool inside = std::llabs(distance) <= window;
          allowed(i, j) = inside;
          if (gaussian && inside) {
            const double d = static_cast<double>(distance);
            (*positionWeights)(i, j) =
                sigma > 0 ? static_cast<Scalar>(std::exp(-d * d / (2.0 * sigma * sigma)))
                          : Scalar(1);
          }
        }
      }
      break;
    }
    case MaskKind::Custom:
      if (mask.custom.rows() == nQ && mask.custom.cols() == nK) {
        allowed = mask.custom;
      } else {
        allowed.setConstant(false);  // invalid options: mask everything rather than guess
      }
      break;
  }
}

}  // namespace

BoolMatrix buildMask(const MaskOptions& mask, int nQ, int nK, Matrix* positionWeights) {
  BoolMatrix allowed;
  buildMaskInto(mask, nQ, nK, allowed, positionWeights);
  return allowed;
}

// =======================================================================================
// Step 4: normalisers
// =======================================================================================

bool normalizeRow(const NormalizerOptions& normalizer, const Scalar* scores, const bool* allowed,
                  int n, Scalar* weights) {
  if (n <= 0) return false;
  // A key takes part if it is allowed and its score is above -inf (NaN never takes part):
  // the masked row says so with -inf, as attend()'s maskedScores do.
  RowScratch scratch(n);
  std::vector<Scalar> masked;
  const Scalar* s = maskedRowOf(scores, allowed, n, masked);
  return normalizeMaskedRow(normalizer, s, n, weights, scratch);
}

std::vector<int> topKKeys(const Scalar* scores, const bool* allowed, int n, int k) {
  std::vector<int> order;
  if (n <= 0) return order;
  order.reserve(static_cast<std::size_t>(n));
  std::vector<Scalar> masked;
  selectTopK(maskedRowOf(scores, allowed, n, masked), n, k, order, true);
  return order;
}

SparsemaxThreshold sparsemaxThreshold(const Scalar* scores, const bool* allowed, int n) {
  SparsemaxThreshold t;
  if (n <= 0) return t;
  std::vector<Scalar> masked;
  const Scalar* s = maskedRowOf(scores, allowed, n, masked);
  t.maxScore = rowMax(s, n);
  if (t.maxScore == -kInf) return t;
  if (t.maxScore == kInf) {  // as in the core: the +inf keys share the weight (hard)
    t.support = static_cast<int>(std::count(s, s + n, kInf));
    return t;
  }
  std::vector<double> sorted;
  sorted.reserve(static_cast<std::size_t>(n));
  t.tau = sparsemaxTau(s, t.maxScore, n, sorted, &t.support);
  return t;
}

// =======================================================================================
// Positional encoding and seeded embeddings
// =======================================================================================

Matrix sinusoidalPositionalEncoding(int n, int d) {
  Matrix pe(std::max(n, 0), std::max(d, 0));
  for (int column = 0; column < d; ++column) {
    const int twoI = column - (column % 2);  // 2i for both sin (2i) and cos (2i+1)
    const double frequency = std::pow(10000.0, -static_cast<double>(twoI) / d);
    for (int pos = 0; pos < n; ++pos) {
      const double angle = pos * frequency;
      pe(pos, column) = static_cast<Scalar>(column % 2 == 0 ? std::sin(angle) : std::cos(angle));
    }
  }
  return pe;
}

std::vector<std::string> tokenize(std::string_view text) {
  std::vector<std::string> tokens;
  std::size_t i = 0;
  while (i < text.size() && static_cast<int>(tokens.size()) < Limits::kMaxTokens) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    const std::size_t start = i;
    while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i > start) tokens.emplace_back(text.substr(start, i - start));
  }
  return tokens;
}

Matrix seededEmbeddings(const std::vector<std::string>& tokens, int d, std::uint64_t seed) {
  const int width = std::max(d, 0);
  Matrix embeddings(static_cast<Index>(tokens.size()), width);
  for (std::size_t t = 0; t < tokens.size(); ++t) {
    std::string lower = tokens[t];
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    SplitMix64 generator(mix64(seed ^ mix64(fnv1a(lower))));
    for (int c = 0; c < width; ++c)
      embeddings(static_cast<Index>(t), c) = generator.uniformSymmetric();
  }
  return embeddings;
}

// =======================================================================================
// Validation
// =======================================================================================

Status validate(const Inputs& inputs, const Options& options) {
  const Matrix& queries = inputs.queries;
  const Matrix& keys = inputs.keys;
  const Matrix& values = inputs.values;

  // Inputs: non-empty, within limits, one value per key, finite.
  const std::pair<const Matrix*, const char*> named[] = {
      {&queries, "queries"}, {&keys, "keys"}, {&values, "values"}};
  for (const auto& [m, name] : named) {
    if (m->rows() == 0 || m->cols() == 0)
      return makeError(name, "is empty (" + shapeOf(*m) +
                                 "); at least one row of at least one number is needed");
    if (m->rows() > Limits::kMaxTokens)
      return makeError(name, "has " + std::to_string(m->rows()) + " rows, more than the limit of " +
                                 std::to_string(Limits::kMaxTokens) + " tokens");
    if (m->cols() > Limits::kMaxWidth)
      return makeError(name, "is " + std::to_string(m->cols()) + " wide, more than the limit of " +
                                 std::to_string(Limits::kMaxWidth));
  }
  if (values.rows() != keys.rows())
    return makeError("values", "has " + countOf(values.rows(), "row", "rows") + " but there " +
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
    return makeError("heads", "must be at least 1 (got " + std::to_string(heads) + ")");
  if (heads > Limits::kMaxHeads)
    return makeError("heads", std::to_string(heads) + " heads exceed the limit of " +
                                  std::to_string(Limits::kMaxHeads));
  if (!std::isfinite(options.temperature) || !(options.temperature > 0))
    return makeError("temperature", "must be a finite number above 0 (got " +
                                        messageNumber(options.temperature) + ")");

  // Projections: shapes chain X (n x d_in)·W (d_in x d_model) and concat·W_o.
  const Projections& p = options.projections;
  int dModel = dQIn, dvModel = dVIn, dOut = dVIn;
  if (p.identity) {
    if (dKIn != dQIn)
      return makeError("keys", "are " + std::to_string(dKIn) + " wide but the queries are " +
                                   std::to_string(dQIn) +
                                   " wide; without projections they must be the same width");
  } else {
    auto checkWeight = [&](const Matrix& w, const char* field, int inWidth,
                           const char* input) -> std::optional<Error> {
      if (w.size() == 0)
        return makeError(field,
                         std::string("is missing (explicit projections need wq, wk and wv)"));
      if (w.rows() != inWidth)
        return makeError(field, "has " + std::to_string(w.rows()) + " rows but the " + input +
                                    " are " + std::to_string(inWidth) + " wide");
      if (w.cols() > Limits::kMaxWidth)
        return makeError(field, "is " + std::to_string(w.cols()) +
                                    " wide, more than the limit of " +
                                    std::to_string(Limits::kMaxWidth));
      return checkFinite(w, field);
    };
    auto checkBias = [&](const Vector& b, const char* field, Index width) -> std::optional<Error> {
      if (b.size() != 0 && b.size() != width)
        return makeError(field, "has " + std::to_string(b.size()) + " entries, expected " +
                                    std::to_string(width) + " (or none)");
      return checkFinite(b, field);
    };
    if (auto e = checkWeight(p.wq, "projections.wq", dQIn, "queries")) return *e;
    if (auto e = checkWeight(p.wk, "projections.wk", dKIn, "keys")) return *e;
    if (auto e = checkWeight(p.wv, "projections.wv", dVIn, "values")) return *e;
    if (p.wk.cols() != p.wq.cols())
      return makeError("projections.wk", "projects to width " + std::to_string(p.wk.cols()) +
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
        return makeError("projections.wo", "has " + std::to_string(p.wo.rows()) +
                                               " rows but the concatenated heads are " +
                                               std::to_string(dvModel) + " wide");
      if (p.wo.cols() > Limits::kMaxWidth)
        return makeError("projections.wo", "is " + std::to_string(p.wo.cols()) +
                                               " wide, more than the limit of " +
                                               std::to_string(Limits::kMaxWidth));
      if (auto e = checkFinite(p.wo, "projections.wo")) return *e;
      dOut = static_cast<int>(p.wo.cols());
      if (auto e = checkBias(p.bo, "projections.bo", p.wo.cols())) return *e;
    } else if (p.bo.size() != 0) {
      return makeError("projections.bo", "is given but there is no output projection wo");
    }
  }

  // The heads split d_model and dv_model into equal column blocks.
  if (dModel % heads != 0 || dvModel % heads != 0) {
    const bool model = dModel % heads != 0;
    return makeError("heads", std::to_string(heads) + " heads do not divide the " +
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
  shape.heads = heads;
  shape.projected = !p.identity;
  shape.score = options.score;
  shape.dHidden = options.scoreHidden > 0 ? options.scoreHidden : dModel / heads;
  if (!options.scoreParams.empty())
    shape.dHidden = scoreHiddenWidth(options.score, options.scoreParams[0], dModel / heads,
                                     options.scoreHidden);
  shape.dY = options.decoderOutput.enabled
                 ? (options.decoderOutput.wc.size() != 0 ? options.decoderOutput.wc.cols() : dQIn)
                 : 0;
  if (Status affordable = checkWork(shape); !affordable) return affordable;

  // Mask.
  const MaskOptions& mask = options.mask;
  switch (mask.kind) {
    case MaskKind::None:
    case MaskKind::Causal:
      break;
    case MaskKind::Padding:
      if (static_cast<int>(mask.keyValid.size()) != nK)
        return makeError(
            "mask.key_valid",
            "has " + countOf(static_cast<long long>(mask.keyValid.size()), "entry", "entries") +
                " but there " + (nK == 1 ? "is " : "are ") + countOf(nK, "key", "keys"));
      break;
    case MaskKind::Local:
    case MaskKind::LocalGaussian:
      if (mask.window < 0)
        return makeError("mask.window",
                         "must be 0 or more (got " + std::to_string(mask.window) + ")");
      if (mask.center == MaskOptions::Center::Fixed && (mask.position < 0 || mask.position >= nK))
        return makeError("mask.position", "is " + std::to_string(mask.position) +
                                              " but the keys are numbered 0 to " +
                                              std::to_string(nK - 1));
      break;
    case MaskKind::Custom:
      if (mask.custom.rows() != nQ || mask.custom.cols() != nK)
        return makeError("mask.matrix", "is " + shapeOf(mask.custom.rows(), mask.custom.cols()) +
                                            " but there " + (nQ == 1 ? "is " : "are ") +
                                            countOf(nQ, "query", "queries") + " and " +
                                            countOf(nK, "key", "keys") + " (expected " +
                                            shapeOf(nQ, nK) + ")");
      break;
  }

  // Normaliser.
  if (options.normalizer.kind == NormalizerKind::TopK && options.normalizer.topK < 1)
    return makeError("normalizer.top_k",
                     "must be at least 1 (got " + std::to_string(options.normalizer.topK) + ")");

  // Score parameters, per head.
  if (options.scoreHidden < 0 || options.scoreHidden > Limits::kMaxWidth)
    return makeError("score_hidden", "must be between 0 (= d_h) and " +
                                         std::to_string(Limits::kMaxWidth) + " (got " +
                                         std::to_string(options.scoreHidden) + ")");
  if (static_cast<int>(options.scoreParams.size()) > heads)
    return makeError(
        "score_params",
        "has " + countOf(static_cast<long long>(options.scoreParams.size()), "entry", "entries") +
            " but there " + (heads == 1 ? "is" : "are") + " only " +
            countOf(heads, "head", "heads"));
  const int dH = dModel / heads;
  for (std::size_t h = 0; h < options.scoreParams.size(); ++h)
    if (auto e = validateScoreParams(options.score, options.scoreParams[h], dH, options.scoreHidden,
                                     "score_params[" + std::to_string(h) + "]."))
      return *e;

  // Decoder output step: W_c ((d_out + d_q_in) x d_y).
  if (options.decoderOutput.enabled && options.decoderOutput.wc.size() != 0) {
    const Matrix& wc = options.decoderOutput.wc;
    if (wc.rows() != dOut + dQIn)
      return makeError("decoder_output.wc",
                       "has " + std::to_string(wc.rows()) +
                           " rows, expected d_out + d_q = " + std::to_string(dOut) + " + " +
                           std::to_string(dQIn) + " = " + std::to_string(dOut + dQIn));
    if (wc.cols() > Limits::kMaxWidth)
      return makeError("decoder_output.wc", "is " + std::to_string(wc.cols()) +
                                                " wide, more than the limit of " +
                                                std::to_string(Limits::kMaxWidth));
    if (auto e = checkFinite(wc, "decoder_output.wc")) return *e;
  }
  return Ok{};
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
    return makeError("queries",
                     std::to_string(w.heads) + " heads x " + std::to_string(w.nQ) + " queries x " +
                         std::to_string(w.nK) + " keys = " + std::to_string(cells) +
                         " cells, more than the limit of " + std::to_string(Limits::kMaxCells) +
                         " (2^25)");
  const long long work = attentionWork(w);
  if (work > Limits::kMaxWork)
    return makeError("queries", "computing this needs about " +
                                    messageNumber(static_cast<double>(work)) +
                                    " multiply-adds, more than the limit of " +
                                    std::to_string(Limits::kMaxWork) +
                                    " (2^33); use fewer tokens, narrower inputs, a smaller "
                                    "model width or fewer heads");
  return Ok{};
}

// =======================================================================================
// The whole mechanism
// =======================================================================================

namespace {

// Step 3 for one row: masked = clamp(scores / T) where allowed, -inf where masked (n): the
// maskedScores that are shown. A quotient that overflows is clamped to ±FLT_MAX for display;
// the weights never come from a clamped quotient (T != 1 normalises tempered() rows). The ISA
// kernel; T = 1 with no mask is a plain copy (scores are finite, so scores / 1 needs no clamp).
void maskRow(const Scalar* scores, const bool* allowed, Scalar temperature, int n, Scalar* masked) {
  kernels::active().maskRow(scores, allowed, temperature, n, masked);
}

// Step 4's input when T != 1: z_j = (s_j - m) / T where key j is allowed, -inf where it is
// masked, with m the maximum of the allowed raw scores (n). Subtracting the maximum BEFORE
// dividing keeps the order exact for any T > 0: s_j - m is 0 only for s_j == m (float
// subtraction of different finite numbers is never 0), so even T = 1e-38 gives the arg-max
// and never a false tie, which clamping s/T to ±FLT_MAX first did. A quotient below -FLT_MAX
// (weight exactly 0 anyway) is kept at -FLT_MAX so that the key still takes part in top_k.
// The row's maximum is then exactly 0. Returns the row, or null when no key is allowed.
const Scalar* tempered(const Scalar* scores, const bool* allowed, Scalar temperature, int n,
                       Scalar* z) {
  Scalar m = -kInf;
  if (!allowed) {
    m = ConstScoreRowMap(scores, n).maxCoeff();
    ScoreRowMap(z, n) = ((ConstScoreRowMap(scores, n) - m) / temperature).max(-kMaxFinite);
  } else {
    for (int j = 0; j < n; ++j)
      if (allowed[j]) m = std::max(m, scores[j]);
    if (m == -kInf) return nullptr;
    for (int j = 0; j < n; ++j)
      z[j] = allowed[j] ? std::max((scores[j] - m) / temperature, -kMaxFinite) : -kInf;
  }
  return z;
}

// Step 5 fallback for the rows of context = weights·v (n_q x dv_h) that overflowed in float:
// each entry again as Σ_j w_j·v_j in double. The exact result is a convex combination of the
// values (weights >= 0, Σ w <= 1) and so fits a float; only the float rounding of the weights
// (Σ w can exceed 1 by a few ulps) and the float accumulation can push it past FLT_MAX, e.g.
// ten equal keys with values at FLT_MAX (weights 0.1f, whose sum is just over 1). So a sum
// past the float range is divided by Σ w when that is above 1. Returns false if an entry
// still does not fit (not reachable with finite values; kept as a guard).
// weights (rows x n_k) and context (rows x dv_h) may be row blocks of the head's matrices.
template <class Weights, class Context>
bool recomputeContextRows(const Weights& weights, const Matrix& v, Context&& context) {
  // Doubles below this round to a finite float (FLT_MAX + half an ulp rounds to infinity).
  constexpr double kFloatLimit = 0x1.ffffffp+127;
  for (Index i = 0; i < context.rows(); ++i) {
    if (isAllFinite(context.row(i).data(), context.cols())) continue;
    double weightSum = 0;
    for (Index j = 0; j < weights.cols(); ++j) weightSum += weights(i, j);
    for (Index c = 0; c < context.cols(); ++c) {
      double sum = 0;
      for (Index j = 0; j < weights.cols(); ++j)
        sum += static_cast<double>(weights(i, j)) * static_cast<double>(v(j, c));
      if (std::fabs(sum) >= kFloatLimit && weightSum > 1) sum /= weightSum;
      if (!(std::fabs(sum) < kFloatLimit)) return false;
      context(i, c) = static_cast<Scalar>(sum);
    }
  }
  return true;
}

// Step 1 with projections: every head's q, k, v (already shaped n_q x d_h, n_k x d_h,
// n_k x dv_h) from X_q·W_q, X_k·W_k, X_v·W_v (no biases yet), in row blocks of
// kProductBlockRows on `threads` threads. When the three inputs are the same matrix, one
// GEMM per block with [W_q W_k W_v]; otherwise one GEMM per (projection, block). The blocks
// do not depend on the thread count, so neither do the bits.
void projectHeads(const Matrix& queries, const Matrix& keys, const Matrix& values,
                  const Projections& proj, std::vector<HeadResult>& heads, int threads) {
  const Index nQ = queries.rows(), nK = keys.rows();
  const Index dModel = proj.wq.cols(), dvModel = proj.wv.cols();
  auto same = [](const Matrix& a, const Matrix& b) {
    return a.rows() == b.rows() && a.cols() == b.cols() &&
           (a.size() == 0 || a.data() == b.data() ||
            std::memcmp(a.data(), b.data(), sizeof(Scalar) * a.size()) == 0);
  };
  const bool fused = same(queries, keys) && same(queries, values);
  // Scatters a block of one projection's output (rows x width, row-major, leading dimension
  // ld) into column block h of every head's matrix.
  auto scatter = [&](const Scalar* block, Index ld, Index first, Index rows, Index width,
                     Matrix HeadResult::*which) {
    const Index perHead = width / static_cast<Index>(heads.size());
    for (std::size_t h = 0; h < heads.size(); ++h) {
      Matrix& dst = heads[h].*which;
      for (Index r = 0; r < rows; ++r)
        std::copy_n(block + r * ld + static_cast<Index>(h) * perHead, perHead,
                    dst.row(first + r).data());
    }
  };
  std::vector<Matrix> scratch(static_cast<std::size_t>(threads));
  if (fused) {
    Matrix wqkv(proj.wq.rows(), 2 * dModel + dvModel);
    wqkv << proj.wq, proj.wk, proj.wv;
    const int blocks = static_cast<int>(blockCount(nQ, kProductBlockRows));
    parallelFor(blocks, threads, [&](int block, int worker) {
      const Index first = block * kProductBlockRows;
      const Index rows = std::min(kProductBlockRows, nQ - first);
      Matrix& out = scratch[worker];
      out.resize(rows, wqkv.cols());
      out.noalias() = queries.middleRows(first, rows) * wqkv;
      scatter(out.data(), out.cols(), first, rows, dModel, &HeadResult::q);
      scatter(out.data() + dModel, out.cols(), first, rows, dModel, &HeadResult::k);
      scatter(out.data() + 2 * dModel, out.cols(), first, rows, dvModel, &HeadResult::v);
    });
    return;
  }
  const int qBlocks = static_cast<int>(blockCount(nQ, kProductBlockRows));
  const int kBlocks = static_cast<int>(blockCount(nK, kProductBlockRows));
  parallelFor(qBlocks + 2 * kBlocks, threads, [&](int item, int worker) {
    const int part = item < qBlocks ? 0 : (item < qBlocks + kBlocks ? 1 : 2);
    const int block = part == 0 ? item : item - qBlocks - (part - 1) * kBlocks;
    const Matrix& x = part == 0 ? queries : (part == 1 ? keys : values);
    const Matrix& w = part == 0 ? proj.wq : (part == 1 ? proj.wk : proj.wv);
    const Index first = block * kProductBlockRows;
    const Index rows = std::min(kProductBlockRows, x.rows() - first);
    Matrix& out = scratch[worker];
    out.resize(rows, w.cols());
    out.noalias() = x.middleRows(first, rows) * w;
    scatter(out.data(), out.cols(), first, rows, w.cols(),
            part == 0 ? &HeadResult::q : (part == 1 ? &HeadResult::k : &HeadResult::v));
  });
}

}  // namespace

std::vector<Scalar> temperedScores(const Scalar* scores, const bool* allowed, Scalar temperature,
                                   int n) {
  std::vector<Scalar> z(static_cast<std::size_t>(std::max(n, 0)), -kInf);
  if (n > 0) tempered(scores, allowed, temperature, n, z.data());
  return z;
}

Expected<AttentionResult> attend(const Inputs& inputs, const Options& options) {
  AttentionResult result;
  if (Status status = attend(inputs, options, result); !status) return status.error();
  return result;
}

Status attend(const Inputs& inputs, const Options& options, AttentionResult& out) {
  return attend(inputs, options, out, RunOptions{});
}

int resolvedThreads(const RunOptions& run) {
  const int threads = run.threads == 0 ? availableCores() : run.threads;
  return std::clamp(threads, 1, 256);
}

Status attend(const Inputs& inputs, const Options& options, AttentionResult& out,
              const RunOptions& run) {
  if (Status status = validate(inputs, options); !status) return status;

  const Matrix& queries = inputs.queries;  // n_q x d_q_in
  const Matrix& keys = inputs.keys;        // n_k x d_k_in
  const Matrix& values = inputs.values;    // n_k x d_v_in
  const Projections& proj = options.projections;
  const int nQ = static_cast<int>(queries.rows()), nK = static_cast<int>(keys.rows());
  const int heads = options.heads;
  const int dModel = static_cast<int>(proj.identity ? queries.cols() : proj.wq.cols());
  const int dvModel = static_cast<int>(proj.identity ? values.cols() : proj.wv.cols());
  const int dH = dModel / heads, dvH = dvModel / heads;
  const bool gaussian = options.mask.kind == MaskKind::LocalGaussian;
  const kernels::Table& kernel = kernels::active();

  // Threads: every step below is a list of independent items (heads, row blocks), handed out
  // to `threads` threads. The items do not depend on the thread count, so the result has the
  // same bits for every count. OpenBLAS runs single-threaded inside the items (its idle
  // threads spin and would take cores from ours): OpenBLAS threads x our threads <= threads.
  const int threads = resolvedThreads(run);
  SingleThreadedBlas singleThreadedBlas;

  // Every field of `out` is assigned below. Matrices are resized (a no-op when the shape is
  // unchanged) and written in place with noalias(), never assigned from a temporary, so that
  // their buffers are reused.
  AttentionResult& result = out;
  result.projections = proj;
  result.score = options.score;
  result.temperature = options.temperature;
  result.heads.resize(heads);
  result.fullyMaskedRows.clear();
  result.warnings.clear();

  // The mask does not depend on the head: build it once here, apply it in step 3.
  buildMaskInto(options.mask, nQ, nK, result.allowed, gaussian ? &result.positionWeights : nullptr);
  if (!gaussian) result.positionWeights.resize(0, 0);
  result.masked = options.mask.kind != MaskKind::None;  // None allows every key
  const bool masked = result.masked;
  if (masked) {
    for (int i = 0; i < nQ; ++i) {
      if (!result.allowed.row(i).any()) {
        result.fullyMaskedRows.push_back(i);
        result.warnings.push_back(
            {"fully_masked_row",
             "query " + std::to_string(i) + " may attend no key: its weights are all 0", -1, i});
      }
    }
  }

  auto overflow = [](const char* field, const std::string& what) {
    return makeError(field, what + " overflows float32; scale the numbers down");
  };

  // 1. Project: head h takes column block h of each projection.
  //    q = X_q·W_q[:, h·d_h:(h+1)·d_h] + b_q[h·d_h:(h+1)·d_h]   (n_q x d_h)
  //    k = X_k·W_k[:, block] + b_k[block]                         (n_k x d_h)
  //    v = X_v·W_v[:, h·dv_h:(h+1)·dv_h] + b_v[...]               (n_k x dv_h)
  //    Identity: the column blocks of the raw inputs. Otherwise full-width GEMMs in row
  //    blocks (one item per block), each into the worker's scratch and from there into the
  //    heads' matrices while it is in cache. Self-attention (X_q = X_k = X_v) runs ONE fused
  //    GEMM per block, X·[W_q W_k W_v] (block x (2·d_model + dv_model)): X's block is packed
  //    once, and the wide product runs at the large-sgemm rate (docs/performance.md: per-head
  //    GEMMs of 64 columns reached ~70 % of it, the fused one ~100 %).
  for (HeadResult& head : result.heads) {
    head.q.resize(nQ, dH);
    head.k.resize(nK, dH);
    head.v.resize(nK, dvH);
  }
  if (proj.identity) {
    for (int h = 0; h < heads; ++h) {
      result.heads[h].q = queries.middleCols(h * dH, dH);
      result.heads[h].k = keys.middleCols(h * dH, dH);
      result.heads[h].v = values.middleCols(h * dvH, dvH);
    }
  } else {
    projectHeads(queries, keys, values, proj, result.heads, threads);
  }

  // Per head: the biases, the finiteness checks, the score parameters (seeded ones from
  // (seed, "score", h), so that heads differ and every head is reproducible on its own) and
  // the key side of the score function.
  struct HeadState {
    std::optional<Error> error;
    KeySide keys;
  };
  std::vector<HeadState> states(static_cast<std::size_t>(heads));
  parallelFor(heads, threads, [&](int h, int) {
    HeadResult& head = result.heads[h];
    HeadState& state = states[h];
    if (!proj.identity) {
      if (proj.bq.size() != 0) head.q.rowwise() += proj.bq.segment(h * dH, dH).transpose();
      if (proj.bk.size() != 0) head.k.rowwise() += proj.bk.segment(h * dH, dH).transpose();
      if (proj.bv.size() != 0) head.v.rowwise() += proj.bv.segment(h * dvH, dvH).transpose();
      if (!isAllFinite(head.q)) {
        state.error = overflow("queries", "projecting the queries");
      } else if (!isAllFinite(head.k)) {
        state.error = overflow("keys", "projecting the keys");
      } else if (!isAllFinite(head.v)) {
        state.error = overflow("values", "projecting the values");
      }
      if (state.error) return;
    }
    head.params = completeScoreParams(
        options.score,
        h < static_cast<int>(options.scoreParams.size()) ? options.scoreParams[h] : ScoreParams{},
        dH, options.scoreHidden, deriveSeed(options.seed, "score", static_cast<std::uint64_t>(h)));
    state.keys = prepareKeys(options.score, head.q, head.k, head.params);
  });

  // 2-6 per (head, block of scoreBlockRows(n_k) query rows), with the block's scores in a scratch
  // buffer of the worker thread (n_q x n_k scores are never stored; headScoreRows() computes
  // them again when a view asks):
  // 2. Score: scores = sim(q, k)   (rows x n_k).
  // 3. Temperature and mask: masked = scores / T, -inf where masked.
  // 4. Normalise: weights   (rows x n_k), 0 where masked, rows of fully masked queries all 0.
  //    local_gaussian then multiplies by exp(-(j-p)²/(2σ²)) (not renormalised).
  // 5. Weigh the values: context = weights·v   (rows x n_k)·(n_k x dv_h) = (rows x dv_h)
  // 6. Concatenate the heads: concat[rows, h·dv_h:(h+1)·dv_h] = context
  result.concat.resize(nQ, dvModel);  // n_q x dv_model
  for (HeadResult& head : result.heads) {
    head.weights.resize(nQ, nK);
    head.context.resize(nQ, dvH);
  }
  const Index blockRows = scoreBlockRows(nK);
  const int rowBlocks = static_cast<int>(blockCount(nQ, blockRows));
  struct BlockOutcome {
    bool overflow = false;         // the scores of a row are not finite
    bool contextOverflow = false;  // weights·v does not fit a float, even in double
    std::vector<Index> zeroQueries;
  };
  std::vector<BlockOutcome> blockOutcomes(static_cast<std::size_t>(heads) * rowBlocks);
  std::vector<Matrix> scratch(static_cast<std::size_t>(threads));
  std::vector<RowScratch> rowScratch;
  rowScratch.reserve(static_cast<std::size_t>(threads));
  for (int w = 0; w < threads; ++w) rowScratch.emplace_back(nK);
  parallelFor(heads * rowBlocks, threads, [&](int item, int worker) {
    const int h = item / rowBlocks, block = item % rowBlocks;
    if (states[h].error) return;
    HeadResult& head = result.heads[h];
    BlockOutcome& outcome = blockOutcomes[item];
    const Index first = block * blockRows;
    const Index count = std::min(blockRows, static_cast<Index>(nQ) - first);
    Matrix& s = scratch[worker];
    s.resize(blockRows, nK);
    scoreBlock(states[h].keys, head.q, head.params, first, count, s.data(), &outcome.zeroQueries);
    for (Index r = 0; r < count; ++r) {
      const Index i = first + r;
      Scalar* row = s.row(r).data();
      if (!isAllFinite(row, nK)) {
        outcome.overflow = true;
        return;
      }
      const bool* allowedRow = masked ? result.allowed.row(i).data() : nullptr;
      // T = 1: the masked row is the raw row, and the normaliser subtracts its maximum itself.
      // Otherwise it gets (s - max) / T (see tempered()), not the clamped display row.
      const Scalar* normalized = row;
      if (options.temperature == 1) {
        maskRow(row, allowedRow, 1, nK, row);
      } else {
        normalized = tempered(row, allowedRow, options.temperature, nK,
                              rowScratch[worker].tempered.data());
      }
      Scalar* weightRow = head.weights.row(i).data();
      if (normalized) {
        normalizeMaskedRow(options.normalizer, normalized, nK, weightRow, rowScratch[worker]);
      } else {
        std::fill(weightRow, weightRow + nK, Scalar(0));  // fully masked row
      }
      if (gaussian) kernel.multiplyRow(weightRow, result.positionWeights.row(i).data(), nK);
    }
    auto context = head.context.middleRows(first, count);
    context.noalias() = head.weights.middleRows(first, count) * head.v;
    if (!isAllFinite(context.data(), context.size()) &&
        !recomputeContextRows(head.weights.middleRows(first, count), head.v, context)) {
      outcome.contextOverflow = true;
      return;
    }
    result.concat.block(first, h * dvH, count, dvH) = context;
  });

  // The first error in head order is the one a head-by-head computation meets first; the
  // warnings follow in head order (per head: score parameters, zero queries, zero keys).
  for (int h = 0; h < heads; ++h) {
    if (states[h].error) return *states[h].error;
    std::vector<Index> zeroQueries;
    for (int block = 0; block < rowBlocks; ++block) {
      const BlockOutcome& outcome = blockOutcomes[static_cast<std::size_t>(h) * rowBlocks + block];
      if (outcome.overflow)
        return overflow("queries", "a score of head " + std::to_string(h) + " (q·k)");
      zeroQueries.insert(zeroQueries.end(), outcome.zeroQueries.begin(),
                         outcome.zeroQueries.end());
    }
    // (A head's scores are checked before its context, as in steps 2-5 one after the other.)
    for (int block = 0; block < rowBlocks; ++block)
      if (blockOutcomes[static_cast<std::size_t>(h) * rowBlocks + block].contextOverflow)
        return overflow("values", "the context of head " + std::to_string(h) + " (weights·v)");
    scoreWarnings(states[h].keys, zeroQueries, h, &result.warnings);
  }

  // The mean of the weights over heads (PyTorch's average_attn_weights), added in head order
  // and divided by H after the last head. Row blocks in parallel.
  result.weightsMean.resize(nQ, nK);  // n_q x n_k
  parallelFor(rowBlocks, threads, [&](int block, int) {
    const Index first = block * blockRows;
    const Index last = std::min(static_cast<Index>(nQ), first + blockRows);
    for (Index i = first; i < last; ++i) {
      Scalar* mean = result.weightsMean.row(i).data();
      std::copy_n(result.heads[0].weights.row(i).data(), nK, mean);
      for (int h = 1; h < heads; ++h) kernel.addRow(mean, result.heads[h].weights.row(i).data(), nK);
      if (heads > 1) kernel.divideRow(mean, nK, static_cast<Scalar>(heads));
    }
  });

  // 7. Output projection: output = concat·W_o + b_o   (n_q x d_out); identity or no W_o:
  //    output = concat.
  if (proj.identity || proj.wo.size() == 0) {
    result.output = result.concat;
  } else {
    result.output.resize(nQ, proj.wo.cols());
    blockedProduct(result.output, result.concat, proj.wo, threads);
    if (proj.bo.size() != 0) result.output.rowwise() += proj.bo.transpose();
    if (!isAllFinite(result.output)) return overflow("projections.wo", "the output projection");
  }

  // 8. Decoder output step (Luong et al. 2015): y = tanh([c; h]·W_c)   (n_q x d_y), with c the
  //    output row (d_out) and h the raw query row (d_q_in); [c h]·W_c is split into
  //    c·W_c[0:d_out] + h·W_c[d_out:], so the concatenation is never materialised.
  if (options.decoderOutput.enabled) {
    const int dOut = static_cast<int>(result.output.cols());
    const int dQIn = static_cast<int>(queries.cols());
    const Matrix& given = options.decoderOutput.wc;
    const Matrix seeded = given.size() != 0 ? Matrix()
                                            : xavierUniform(dOut + dQIn, dQIn,
                                                            deriveSeed(options.seed, "decoder.wc"));
    const Matrix& wc = given.size() != 0 ? given : seeded;
    Matrix& y = result.decoderOutput;
    y.resize(nQ, wc.cols());
    y.noalias() = result.output * wc.topRows(dOut);
    y.noalias() += queries * wc.bottomRows(dQIn);
    if (y.hasNaN()) return overflow("decoder_output.wc", "the decoder output step");
    y.array() = y.array().tanh();
  } else {
    result.decoderOutput.resize(0, 0);
  }
  return Ok{};
}

// =======================================================================================
// Derived stages on demand
// =======================================================================================

Matrix headScoreRows(const AttentionResult& result, int head, int first, int count) {
  if (head < 0 || head >= static_cast<int>(result.heads.size())) return Matrix();
  const HeadResult& h = result.heads[head];
  if (first < 0 || count < 0 || first + count > h.q.rows()) return Matrix();
  const KeySide keys = prepareKeys(result.score, h.q, h.k, h.params);
  Matrix out;
  scoreRowsInto(keys, h.q, h.params, first, count, out, nullptr);
  return out;
}

Matrix headMaskedScoreRows(const AttentionResult& result, int head, int first, int count) {
  Matrix s = headScoreRows(result, head, first, count);
  const int nK = static_cast<int>(s.cols());
  const bool haveMask = result.masked && result.allowed.rows() >= first + s.rows() &&
                        result.allowed.cols() == nK;
  for (Index r = 0; r < s.rows(); ++r) {
    Scalar* row = s.row(r).data();
    maskRow(row, haveMask ? result.allowed.row(first + r).data() : nullptr, result.temperature,
            nK, row);
  }
  return s;
}

Matrix headScores(const AttentionResult& result, int head) {
  if (head < 0 || head >= static_cast<int>(result.heads.size())) return Matrix();
  return headScoreRows(result, head, 0, static_cast<int>(result.heads[head].q.rows()));
}

Matrix headMaskedScores(const AttentionResult& result, int head) {
  if (head < 0 || head >= static_cast<int>(result.heads.size())) return Matrix();
  return headMaskedScoreRows(result, head, 0, static_cast<int>(result.heads[head].q.rows()));
}

}  // namespace attn
