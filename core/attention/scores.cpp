// Step 2, similarity, and step 3, masks (see attention.h): the score functions in blocks of
// query rows (the same blocks attend() and headScoreRows() use, so the bits agree) and the
// mask kinds.
#include "core/attention/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <utility>

#include "core/attention/attention_detail.h"
#include "core/base/random.h"
#include "core/isa/isa.h"

namespace attn {

using namespace detail;

namespace {

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

namespace detail {

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

}  // namespace detail

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

namespace detail {

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

}  // namespace detail

BoolMatrix buildMask(const MaskOptions& mask, int nQ, int nK, Matrix* positionWeights) {
  BoolMatrix allowed;
  buildMaskInto(mask, nQ, nK, allowed, positionWeights);
  return allowed;
}

}  // namespace attn
