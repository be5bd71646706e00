// Internal to core/attention/: what the files of the attention mechanism share (attend.cpp,
// validate.cpp, scores.cpp, normalize.cpp, seeded.cpp). Not part of the public interface;
// nothing outside core/attention/ includes it.
#pragma once

#include <algorithm>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "core/attention/attention.h"
#include "core/base/parallel.h"

namespace attn::detail {

using Index = Eigen::Index;

constexpr Scalar kInf = std::numeric_limits<Scalar>::infinity();
constexpr Scalar kMaxFinite = std::numeric_limits<Scalar>::max();

// ---------------------------------------------------------------------------------------
// Validation messages (validate.cpp)
// ---------------------------------------------------------------------------------------

// "3 x 4": a shape for messages.
std::string shapeOf(Index rows, Index cols);
std::string shapeOf(const Matrix& m);
// True when every entry of x (n) / of m is finite (the ISA kernel).
bool isAllFinite(const Scalar* x, Index n);
bool isAllFinite(const Matrix& m);
// The first non-finite entry as an error naming "field[r][c]" (or "field[i]").
std::optional<Error> checkFinite(const Matrix& m, const std::string& field);
std::optional<Error> checkFinite(const Vector& v, const std::string& field);
// The hidden width d_a (additive) or d_m (mlp) that `p` implies, else `hidden`, else d_h.
int scoreHiddenWidth(ScoreKind kind, const ScoreParams& p, int dH, int hidden);

// ---------------------------------------------------------------------------------------
// Step 4 on one masked row (normalize.cpp)
// ---------------------------------------------------------------------------------------

using ScoreRow = Eigen::Array<Scalar, Eigen::Dynamic, 1>;
using ScoreRowMap = Eigen::Map<ScoreRow>;
using ConstScoreRowMap = Eigen::Map<const ScoreRow>;

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

// Step 4 on a masked row s (n): -inf for every key that takes no part, never NaN. Writes the
// weights (n). Returns false (and all-zero weights) when no key takes part.
bool normalizeMaskedRow(const NormalizerOptions& normalizer, const Scalar* s, int n,
                        Scalar* weights, RowScratch& scratch);

// =======================================================================================
// Products in fixed row blocks
// =======================================================================================

// The big products run in blocks of kProductBlockRows rows, handed out to the threads. The
// blocks depend only on the number of rows, never on the thread count, so every thread count
// gives the same bits (OpenBLAS picks its kernels, and so its order of additions, by the
// shape of a call; its own threads would block differently again, which is one reason
// attend() keeps them at 1).
inline constexpr Index kProductBlockRows = 256;

inline Index blockCount(Index rows, Index blockRows) {
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

// ---------------------------------------------------------------------------------------
// Step 2 in row blocks (scores.cpp) and step 3 (the mask)
// ---------------------------------------------------------------------------------------

// Rows per block of scores for n_k keys: depends on the shape only, never on the threads.
Index scoreBlockRows(Index nK);

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

// Prepares one head's key side for `kind` (q: n_q x d_h, k: n_k x d_h).
KeySide prepareKeys(ScoreKind kind, const Matrix& q, const Matrix& k, const ScoreParams& params);
// Step 2 for query rows [first, first + count) into out (count x n_k, contiguous); zero query
// vectors (cosine) are appended to zeroQueries.
void scoreBlock(const KeySide& keys, const Matrix& q, const ScoreParams& params, Index first,
                Index count, Scalar* out, std::vector<Index>* zeroQueries);
// One head's scoring warnings: invalid parameters, then zero vectors (queries, then keys).
void scoreWarnings(const KeySide& keys, const std::vector<Index>& zeroQueries, int head,
                   std::vector<Warning>* warnings);
// Query rows [first, first + count) of the scores into out (count x n_k), block by block.
void scoreRowsInto(const KeySide& keys, const Matrix& q, const ScoreParams& params, Index first,
                   Index count, Matrix& out, std::vector<Index>* zeroQueries);
// buildMask() into `allowed` (n_q x n_k), reusing its buffer when the shape is unchanged.
void buildMaskInto(const MaskOptions& mask, int nQ, int nK, BoolMatrix& allowed,
                   Matrix* positionWeights);

}  // namespace attn::detail
