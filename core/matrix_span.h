// A non-owning, read-only view of a row-major float matrix with a row stride: one head of an
// attention tensor that may live in a file mapping, in a converted scratch buffer or in an
// attn::Matrix. No Eigen storage of its own; map() gives an Eigen view without a copy.
//
// TODO(rules): branch `rules` adds core/tensor_view.h with a MatrixRef type for the same
// purpose. When it lands in main, MatrixSpan becomes an alias of it (or is replaced); the
// fields here are the ones the attention-file code and core/aggregate need.
#pragma once

#include <Eigen/Core>

#include "core/types.h"

namespace attn {

struct MatrixSpan {
  const float* data = nullptr;
  Eigen::Index rows = 0;
  Eigen::Index cols = 0;
  Eigen::Index rowStride = 0;  // elements from the start of one row to the next (>= cols)

  using Map = Eigen::Map<const Matrix, Eigen::Unaligned, Eigen::OuterStride<>>;

  bool empty() const { return rows == 0 || cols == 0; }
  float operator()(Eigen::Index row, Eigen::Index col) const { return data[row * rowStride + col]; }
  const float* row(Eigen::Index r) const { return data + r * rowStride; }
  // An Eigen view of the same memory (no copy).
  Map map() const { return Map(data, rows, cols, Eigen::OuterStride<>(rowStride)); }
  // An owning copy.
  Matrix copy() const { return map(); }

  // A view of a whole Matrix (which must outlive the span).
  static MatrixSpan of(const Matrix& m) { return {m.data(), m.rows(), m.cols(), m.cols()}; }
};

}  // namespace attn
