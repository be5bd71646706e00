// Step 4, the normalisers (see attention.h): softmax, hard (argmax), top-k and sparsemax on
// one masked row, as attend() runs them, and the public per-row forms the inspector uses.
#include "core/attention/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <utility>

#include "core/attention/attention_detail.h"
#include "core/isa/isa.h"

namespace attn {

using namespace detail;

namespace {

// =======================================================================================
// Normalisers for one row, on a MASKED row: s (n) holds -inf for every key that takes no
// part (masked, or a score of -inf), never NaN, so no separate availability mask is needed
// and every pass runs over the contiguous row. Each function writes exactly 0 for those
// keys. attend() passes its maskedScores rows directly; the public normalizeRow() and the
// helpers for explain.cpp first build such a row from (scores, allowed).
// =======================================================================================


// Softmax's exp arguments are floored at -87 (in the ISA kernel, expShiftedRow) so that exp
// never returns a denormal: arithmetic on denormals is ~100x slower on x86, and they would
// also slow down the weights·v GEMM. exp(-87) < 1.7e-38 is below float resolution next to
// the maximum's exp(0) = 1, so those keys get exactly 0.


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

}  // namespace

namespace detail {

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

}  // namespace detail

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

}  // namespace attn
