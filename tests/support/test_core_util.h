// Small helpers shared by the core tests: literal matrices and element-wise comparisons.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "core/attention/attention.h"

namespace attn::testing {

// M({{1, 2}, {3, 4}}) is the 2 x 2 matrix with rows [1 2] and [3 4].
inline Matrix M(std::initializer_list<std::initializer_list<float>> rows) {
  const Eigen::Index r = static_cast<Eigen::Index>(rows.size());
  const Eigen::Index c = r > 0 ? static_cast<Eigen::Index>(rows.begin()->size()) : 0;
  Matrix m(r, c);
  Eigen::Index i = 0;
  for (const auto& row : rows) {
    Eigen::Index j = 0;
    for (float x : row) m(i, j++) = x;
    ++i;
  }
  return m;
}

inline Vector V(std::initializer_list<float> values) {
  Vector v(static_cast<Eigen::Index>(values.size()));
  Eigen::Index i = 0;
  for (float x : values) v(i++) = x;
  return v;
}

inline BoolMatrix B(std::initializer_list<std::initializer_list<int>> rows) {
  const Eigen::Index r = static_cast<Eigen::Index>(rows.size());
  const Eigen::Index c = r > 0 ? static_cast<Eigen::Index>(rows.begin()->size()) : 0;
  BoolMatrix m(r, c);
  Eigen::Index i = 0;
  for (const auto& row : rows) {
    Eigen::Index j = 0;
    for (int x : row) m(i, j++) = x != 0;
    ++i;
  }
  return m;
}

// Element-wise |a - b| <= tol (absolute), with shapes checked first.
inline ::testing::AssertionResult MatrixNear(const Matrix& a, const Matrix& b, double tol) {
  if (a.rows() != b.rows() || a.cols() != b.cols())
    return ::testing::AssertionFailure()
           << "shape " << a.rows() << "x" << a.cols() << " vs " << b.rows() << "x" << b.cols();
  for (Eigen::Index i = 0; i < a.rows(); ++i)
    for (Eigen::Index j = 0; j < a.cols(); ++j)
      if (!(std::abs(double(a(i, j)) - double(b(i, j))) <= tol))
        return ::testing::AssertionFailure() << "at (" << i << "," << j << "): " << a(i, j)
                                             << " vs " << b(i, j) << " (tol " << tol << ")";
  return ::testing::AssertionSuccess();
}

inline bool allFinite(const Matrix& m) {
  return m.allFinite();
}

// The first n deterministic pseudo-random entries in [-1, 1): tests need data, not statistics.
inline Matrix randomMatrix(int rows, int cols, std::uint64_t seed) {
  // xavierUniform's bound is √(6/(r+c)); rescale to [-1, 1).
  Matrix m = xavierUniform(rows, cols, seed);
  return m / std::sqrt(6.0f / static_cast<float>(rows + cols));
}

// The BF16 bits of a finite x, rounded to nearest even (as torch's .to(torch.bfloat16)).
inline std::uint16_t bf16Bits(float x) {
  std::uint32_t bits;
  std::memcpy(&bits, &x, 4);
  return static_cast<std::uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}
// The float32 value of BF16 bits (exact: the bits are the float's high half).
inline float bf16Value(std::uint16_t h) {
  const std::uint32_t bits = static_cast<std::uint32_t>(h) << 16;
  float x;
  std::memcpy(&x, &bits, 4);
  return x;
}

}  // namespace attn::testing
