// model::applyLinear on BF16 weights (core/models/linear.cpp): every path (the streamed
// core/isa kernels for fewer than 4 rows, the widened panels through OpenBLAS from 4 rows
// on) against a double-precision product of the same widened weights, in both layouts, set
// and accumulate, with bias and activation, on 1 and 2 threads, and on every ISA build this
// CPU runs; and against applyLinear on the float32 copy of those weights.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/isa/isa.h"
#include "core/models/transformer.h"
#include "tests/support/test_core_util.h"

namespace attn {
namespace test_core_linear {
namespace {

using testing::bf16Bits;
using testing::bf16Value;
using testing::randomMatrix;

double geluTanh(double x) {
  return 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

TEST(ApplyLinearBf16, EveryPathMatchesTheDoubleProductOfTheWidenedWeights) {
  const kernels::Isa saved = kernels::activeIsa();
  struct Shape {
    int m, in, out;
  };
  // m around the 4-row switch to panels; in = 3072 makes the panels 32 columns wide,
  // out = 300 leaves a last panel and a last thread range that are not whole blocks.
  const Shape shapes[] = {{1, 37, 70}, {3, 64, 300}, {4, 37, 70}, {7, 768, 300}, {64, 3072, 300}};
  for (kernels::Isa isa : {kernels::Isa::Baseline, kernels::Isa::Avx2, kernels::Isa::Avx512}) {
    if (!kernels::setActiveIsa(isa)) continue;
    for (const Shape& sh : shapes) {
      const Matrix x = randomMatrix(sh.m, sh.in, 21);
      const Matrix wf = randomMatrix(sh.out, sh.in, 22);
      const Matrix bias = randomMatrix(1, sh.out, 23);
      std::vector<std::uint16_t> outByIn(static_cast<std::size_t>(sh.out) * sh.in);
      std::vector<std::uint16_t> inByOut(outByIn.size());
      Matrix wide(sh.out, sh.in);  // the widened weights, [out, in]
      for (int j = 0; j < sh.out; ++j)
        for (int k = 0; k < sh.in; ++k) {
          const std::uint16_t h = bf16Bits(wf(j, k));
          outByIn[static_cast<std::size_t>(j) * sh.in + k] = h;
          inByOut[static_cast<std::size_t>(k) * sh.out + j] = h;
          wide(j, k) = bf16Value(h);
        }
      const Matrix wideT = wide.transpose();  // [in, out]
      std::vector<double> sums(static_cast<std::size_t>(sh.m) * sh.out);  // x·W + b in double
      for (int r = 0; r < sh.m; ++r)
        for (int j = 0; j < sh.out; ++j) {
          double sum = bias(0, j);
          for (int k = 0; k < sh.in; ++k) sum += static_cast<double>(x(r, k)) * wide(j, k);
          sums[static_cast<std::size_t>(r) * sh.out + j] = sum;
        }
      for (bool outByInLayout : {true, false}) {
        model::Linear lin;
        lin.outByIn = outByInLayout;
        lin.weight.bf16 = outByInLayout ? outByIn.data() : inByOut.data();
        lin.weight.rows = outByInLayout ? sh.out : sh.in;
        lin.weight.cols = outByInLayout ? sh.in : sh.out;
        lin.bias.data = bias.data();
        lin.bias.rows = sh.out;
        lin.bias.cols = 1;
        model::Linear linF32 = lin;  // the same widened weights as float32
        linF32.weight.bf16 = nullptr;
        linF32.weight.data = outByInLayout ? wide.data() : wideT.data();
        for (int threads : {1, 2}) {
          for (int mode = 0; mode < 3; ++mode) {  // set, accumulate, set + GELU
            SCOPED_TRACE(std::string(kernels::isaName(isa)) + " m=" + std::to_string(sh.m) +
                         " in=" + std::to_string(sh.in) + " out=" + std::to_string(sh.out) +
                         (outByInLayout ? " [out,in]" : " [in,out]") + " threads=" +
                         std::to_string(threads) + " mode=" + std::to_string(mode));
            const model::Activation gelu = model::Activation::GeluTanh;
            Matrix y = Matrix::Constant(sh.m, sh.out, 0.25f), yF32 = y;
            model::applyLinear(lin, x, y, mode == 1, threads, mode == 2 ? &gelu : nullptr);
            model::applyLinear(linF32, x, yF32, mode == 1, threads, mode == 2 ? &gelu : nullptr);
            double worst = 0, worstF32 = 0;
            for (int r = 0; r < sh.m; ++r) {
              for (int j = 0; j < sh.out; ++j) {
                const double sum = sums[static_cast<std::size_t>(r) * sh.out + j];
                const double expected = mode == 1 ? 0.25 + sum : mode == 2 ? geluTanh(sum) : sum;
                // float32 sums of `in` products: relative to the size of the terms
                const double scale = std::sqrt(static_cast<double>(sh.in)) + std::abs(expected);
                worst = std::max(worst, std::abs(y(r, j) - expected) / scale);
                worstF32 = std::max(worstF32, std::abs(y(r, j) - yF32(r, j)) / scale);
              }
            }
            EXPECT_LT(worst, 2e-6);
            EXPECT_LT(worstF32, 2e-6);
          }
        }
      }
    }
  }
  kernels::setActiveIsa(saved);
}

}  // namespace
}  // namespace test_core_linear
}  // namespace attn
