// Non-owning views of float data that is shown but not owned by the viewer: a matrix of a
// result, one (layer, head) slice of an imported [layers, heads, n, m] float32 tensor (an
// mmap), a model's output. Views never copy; the owner must outlive them.
#pragma once

#include <cstddef>

#include <Eigen/Core>

#include "core/base/types.h"

namespace attn {

// rows x cols floats; row r starts at data + r * stride (stride >= cols, in elements).
struct MatrixRef {
  const float* data = nullptr;
  int rows = 0, cols = 0;
  std::ptrdiff_t stride = 0;

  bool empty() const { return rows <= 0 || cols <= 0; }
  const float* row(int r) const { return data + static_cast<std::ptrdiff_t>(r) * stride; }
  float operator()(int r, int c) const { return row(r)[c]; }
  // True when the rows follow each other with no gap (one block of rows * cols floats).
  bool contiguous() const { return stride == cols || rows <= 1; }

  using Map = Eigen::Map<const Matrix, Eigen::Unaligned, Eigen::OuterStride<>>;
  // An Eigen view of the same memory (no copy).
  Map map() const { return Map(data, rows, cols, Eigen::OuterStride<>(stride)); }
  // An owning copy.
  Matrix copy() const { return map(); }
  // A view of a whole Matrix (which must outlive the view).
  static MatrixRef of(const Matrix& m) {
    return {m.data(), static_cast<int>(m.rows()), static_cast<int>(m.cols()),
            static_cast<std::ptrdiff_t>(m.cols())};
  }
};

// A view of a row-major attn::Matrix (rows x cols, stride = cols).
inline MatrixRef matrixRef(const Matrix& m) {
  return {m.data(), static_cast<int>(m.rows()), static_cast<int>(m.cols()),
          static_cast<std::ptrdiff_t>(m.cols())};
}

// The (layer, head) matrix of a contiguous row-major [layers, heads, rows, cols] tensor
// (e.g. stacked attention weights exported from a model). No bounds checks: the caller has
// validated the indices against the tensor's shape.
inline MatrixRef headSlice(const float* tensor, int heads, int rows, int cols, int layer,
                           int head) {
  const std::ptrdiff_t plane = static_cast<std::ptrdiff_t>(rows) * cols;
  return {tensor + (static_cast<std::ptrdiff_t>(layer) * heads + head) * plane, rows, cols,
          static_cast<std::ptrdiff_t>(cols)};
}

}  // namespace attn
