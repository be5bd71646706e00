// The attention mechanism, attend(): steps 1-8 (projections, scores, mask, normalise, weigh
// values, concat, output, decoder step) over heads and row blocks, with the double-precision
// context fallback; the names of the kinds; and the derived stages recomputed on demand
// (scores, masked scores). See core/attention/attention.h for the conventions (rows are
// tokens, projections act on the right: X·W + b) and docs/formulas.md for every formula.
// The other steps live beside it: validate.cpp, seeded.cpp (step 1's seeded weights),
// scores.cpp (steps 2 and 3), normalize.cpp (step 4); attention_detail.h is what they share.
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
#include "core/base/random.h"
#include "core/isa/isa.h"

namespace attn {

using namespace detail;

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

// One cohesive numbered algorithm (steps 1-8, as core/attention/attention.h and
// docs/formulas.md number them), kept as one function on purpose: the steps share the row
// blocks, scratch buffers and thread plan set up at the top.
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
    return fieldError(field, what + " overflows float32; scale the numbers down");
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
