// The building blocks of the trainable models, forward and backward, written by hand on
// Eigen. Templated on the scalar so that training runs in float and the gradient checks
// (tests/core/test_train.cpp) run the very same code in double.
//
// Conventions (as in core/attention/attention.h): vectors are ROWS, a sequence of n tokens of width d
// is an (n x d) matrix, projections apply on the right (Y = X·W + b, W (d_in x d_out)),
// biases are (1 x d_out) matrices. A backward function ADDS into the parameter gradients
// it is given (so gradients of a batch accumulate) and RETURNS or OVERWRITES the input
// gradient. dX always means d(loss)/dX, with the shape of X.
#pragma once

#include <cmath>
#include <limits>
#include <vector>

#include <Eigen/Core>

#include "core/attention/attention.h"
#include "core/base/types.h"

namespace attn::train {

template <class T>
using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// ---------------------------------------------------------------------------------------
// Linear: Y = X·W + b.  X (n x d_in), W (d_in x d_out), b (1 x d_out) -> Y (n x d_out)
// ---------------------------------------------------------------------------------------
template <class T>
Mat<T> linearForward(const Mat<T>& X, const Mat<T>& W, const Mat<T>& b) {
  Mat<T> Y = X * W;
  Y.rowwise() += b.row(0);
  return Y;
}

// dW += Xᵀ·dY, db += Σ_rows dY; returns dX = dY·Wᵀ.
template <class T>
Mat<T> linearBackward(const Mat<T>& X, const Mat<T>& W, const Mat<T>& dY, Mat<T>& dW, Mat<T>& db) {
  dW.noalias() += X.transpose() * dY;
  db += dY.colwise().sum();
  return dY * W.transpose();
}

// ---------------------------------------------------------------------------------------
// Row softmax with an optional mask.  S (n_q x n_k), allowed (n_q x n_k or empty = all)
// -> A (n_q x n_k): A_ij = exp(S_ij - m_i) / Σ_allowed exp(S_il - m_i), m_i the row's largest
// allowed score; exactly 0 where masked; an all-masked row is all 0 (as in core/attention).
// ---------------------------------------------------------------------------------------
template <class T>
Mat<T> softmaxRows(const Mat<T>& S, const BoolMatrix& allowed) {
  Mat<T> A(S.rows(), S.cols());
  const bool masked = allowed.size() != 0;
  for (Eigen::Index i = 0; i < S.rows(); ++i) {
    T rowMax = -std::numeric_limits<T>::infinity();
    for (Eigen::Index j = 0; j < S.cols(); ++j) {
      if (!masked || allowed(i, j)) rowMax = std::max(rowMax, S(i, j));
    }
    if (rowMax == -std::numeric_limits<T>::infinity()) {
      A.row(i).setZero();
      continue;
    }
    T sum = 0;
    for (Eigen::Index j = 0; j < S.cols(); ++j) {
      const T e = (!masked || allowed(i, j)) ? std::exp(S(i, j) - rowMax) : T(0);
      A(i, j) = e;
      sum += e;
    }
    A.row(i) /= sum;
  }
  return A;
}

// dS_ij = A_ij · (dA_ij - Σ_l dA_il·A_il). Masked entries (A = 0) get dS = 0: a masked
// score has no influence on the loss.
template <class T>
Mat<T> softmaxRowsBackward(const Mat<T>& A, const Mat<T>& dA) {
  Mat<T> dS(A.rows(), A.cols());
  for (Eigen::Index i = 0; i < A.rows(); ++i) {
    const T inner = A.row(i).dot(dA.row(i));
    dS.row(i) = A.row(i).cwiseProduct((dA.row(i).array() - inner).matrix());
  }
  return dS;
}

// ---------------------------------------------------------------------------------------
// Similarity functions, the same formulas as attn::similarity() (core/attention/attention.h):
//   dot        S = Q·Kᵀ
//   scaled_dot S = Q·Kᵀ / √d
//   general    S = Q·W_a·Kᵀ                          W_a (d x d)
//   additive   S_ij = tanh(q_i·W₁ + k_j·W₂ + b)·vᵀ    W₁, W₂ (d x d_a), b, v (1 x d_a)
// Q (n_q x d), K (n_k x d) -> S (n_q x n_k).
// ---------------------------------------------------------------------------------------
template <class T>
struct ScoreWeights {  // pointers into a model's parameters (null when the kind has none)
  const Mat<T>* generalW = nullptr;
  const Mat<T>* additiveWq = nullptr;
  const Mat<T>* additiveWk = nullptr;
  const Mat<T>* additiveBias = nullptr;
  const Mat<T>* additiveV = nullptr;
};

template <class T>
struct ScoreGrads {  // the matching gradients (same shapes), added into
  Mat<T>* generalW = nullptr;
  Mat<T>* additiveWq = nullptr;
  Mat<T>* additiveWk = nullptr;
  Mat<T>* additiveBias = nullptr;
  Mat<T>* additiveV = nullptr;
};

template <class T>
struct ScoreCache {
  Mat<T> tanhs;  // additive: (n_q·n_k x d_a), row i·n_k + j = tanh(q_i·W₁ + k_j·W₂ + b)
};

template <class T>
Mat<T> scoreForward(ScoreKind kind, const Mat<T>& Q, const Mat<T>& K, const ScoreWeights<T>& w,
                    ScoreCache<T>* cache) {
  switch (kind) {
    case ScoreKind::ScaledDot:
      return (Q * K.transpose()) / std::sqrt(static_cast<T>(Q.cols()));
    case ScoreKind::General:
      return Q * (*w.generalW) * K.transpose();
    case ScoreKind::Additive: {
      const Eigen::Index nQ = Q.rows(), nK = K.rows();
      const Mat<T> A = Q * (*w.additiveWq);  // n_q x d_a
      Mat<T> B = K * (*w.additiveWk);        // n_k x d_a
      B.rowwise() += w.additiveBias->row(0);
      Mat<T> tanhs(nQ * nK, A.cols());
      for (Eigen::Index i = 0; i < nQ; ++i) {
        tanhs.middleRows(i * nK, nK) = (B.rowwise() + A.row(i)).array().tanh().matrix();
      }
      const Mat<T> flat = tanhs * w.additiveV->transpose();  // (n_q·n_k x 1)
      Mat<T> S = Eigen::Map<const Mat<T>>(flat.data(), nQ, nK);
      if (cache) cache->tanhs = std::move(tanhs);
      return S;
    }
    case ScoreKind::Dot:
    default:
      return Q * K.transpose();
  }
}

// Backward of scoreForward: dQ, dK overwritten; score parameter gradients added.
// `cache` is the one filled by the forward pass (additive).
template <class T>
void scoreBackward(ScoreKind kind, const Mat<T>& Q, const Mat<T>& K, const ScoreWeights<T>& w,
                   const ScoreCache<T>& cache, const Mat<T>& dS, ScoreGrads<T>& g, Mat<T>& dQ,
                   Mat<T>& dK) {
  switch (kind) {
    case ScoreKind::ScaledDot: {
      const T scale = T(1) / std::sqrt(static_cast<T>(Q.cols()));
      dQ = (dS * K) * scale;
      dK = (dS.transpose() * Q) * scale;
      return;
    }
    case ScoreKind::General: {
      const Mat<T>& Wa = *w.generalW;
      dQ = dS * K * Wa.transpose();
      dK = dS.transpose() * Q * Wa;
      g.generalW->noalias() += Q.transpose() * dS * K;
      return;
    }
    case ScoreKind::Additive: {
      const Eigen::Index nQ = Q.rows(), nK = K.rows(), dA = cache.tanhs.cols();
      // d(pre-tanh)_{ij} = dS_ij · v ⊙ (1 - t_ij²)
      Mat<T> dPre(nQ * nK, dA);
      const auto v = w.additiveV->row(0).array();
      for (Eigen::Index i = 0; i < nQ; ++i) {
        for (Eigen::Index j = 0; j < nK; ++j) {
          const auto t = cache.tanhs.row(i * nK + j).array();
          dPre.row(i * nK + j) = (dS(i, j) * v * (T(1) - t * t)).matrix();
        }
      }
      // dv = Σ_ij dS_ij · t_ij
      const Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>> dSflat(dS.data(), nQ * nK);
      *g.additiveV += dSflat * cache.tanhs;
      Mat<T> dAq = Mat<T>::Zero(nQ, dA), dBk = Mat<T>::Zero(nK, dA);
      for (Eigen::Index i = 0; i < nQ; ++i) {
        const auto block = dPre.middleRows(i * nK, nK);
        dAq.row(i) = block.colwise().sum();
        dBk += block;
      }
      *g.additiveBias += dBk.colwise().sum();
      g.additiveWq->noalias() += Q.transpose() * dAq;
      g.additiveWk->noalias() += K.transpose() * dBk;
      dQ = dAq * w.additiveWq->transpose();
      dK = dBk * w.additiveWk->transpose();
      return;
    }
    case ScoreKind::Dot:
    default:
      dQ = dS * K;
      dK = dS.transpose() * Q;
      return;
  }
}

// ---------------------------------------------------------------------------------------
// LayerNorm over each row: y = γ ⊙ (x - μ)/√(σ² + ε) + β, μ and σ² the row's mean and
// (biased) variance. X (n x d), γ, β (1 x d).
// ---------------------------------------------------------------------------------------
template <class T>
struct LayerNormCache {
  Mat<T> xhat;  // n x d, (x - μ)/√(σ² + ε)
  Mat<T> rstd;  // n x 1, 1/√(σ² + ε)
};

inline constexpr double kLayerNormEps = 1e-5;

template <class T>
Mat<T> layerNormForward(const Mat<T>& X, const Mat<T>& gamma, const Mat<T>& beta,
                        LayerNormCache<T>& cache) {
  const Eigen::Index n = X.rows(), d = X.cols();
  cache.xhat.resize(n, d);
  cache.rstd.resize(n, 1);
  for (Eigen::Index i = 0; i < n; ++i) {
    const T mean = X.row(i).mean();
    const T var = (X.row(i).array() - mean).square().mean();
    const T rstd = T(1) / std::sqrt(var + static_cast<T>(kLayerNormEps));
    cache.rstd(i, 0) = rstd;
    cache.xhat.row(i) = ((X.row(i).array() - mean) * rstd).matrix();
  }
  Mat<T> Y = cache.xhat.array().rowwise() * gamma.row(0).array();
  Y.rowwise() += beta.row(0);
  return Y;
}

// dγ += Σ_rows dY ⊙ x̂, dβ += Σ_rows dY;
// dX = rstd · (g - mean(g) - x̂ · mean(g ⊙ x̂)), with g = dY ⊙ γ (per row).
template <class T>
Mat<T> layerNormBackward(const LayerNormCache<T>& cache, const Mat<T>& gamma, const Mat<T>& dY,
                         Mat<T>& dGamma, Mat<T>& dBeta) {
  dGamma += dY.cwiseProduct(cache.xhat).colwise().sum();
  dBeta += dY.colwise().sum();
  Mat<T> dX(dY.rows(), dY.cols());
  for (Eigen::Index i = 0; i < dY.rows(); ++i) {
    const Eigen::Array<T, 1, Eigen::Dynamic> g = dY.row(i).array() * gamma.row(0).array();
    const T meanG = g.mean();
    const T meanGX = (g * cache.xhat.row(i).array()).mean();
    dX.row(i) = (cache.rstd(i, 0) * (g - meanG - cache.xhat.row(i).array() * meanGX)).matrix();
  }
  return dX;
}

// ---------------------------------------------------------------------------------------
// Cross-entropy over rows. logits (n x C), targets (n) -> Σ_i -log softmax(logits_i)[t_i].
// dLogits = softmax(logits) - onehot(targets) (for the SUM; callers scale).
// ---------------------------------------------------------------------------------------
template <class T>
T crossEntropy(const Mat<T>& logits, const std::vector<int>& targets, Mat<T>* dLogits,
               std::vector<int>* predicted) {
  const Mat<T> P = softmaxRows<T>(logits, BoolMatrix());
  T loss = 0;
  if (dLogits) *dLogits = P;
  if (predicted) predicted->resize(logits.rows());
  for (Eigen::Index i = 0; i < logits.rows(); ++i) {
    const int t = targets[i];
    loss -= std::log(std::max(P(i, t), std::numeric_limits<T>::min()));
    if (dLogits) (*dLogits)(i, t) -= T(1);
    if (predicted) {
      Eigen::Index best = 0;
      logits.row(i).maxCoeff(&best);
      (*predicted)[i] = static_cast<int>(best);
    }
  }
  return loss;
}

}  // namespace attn::train
