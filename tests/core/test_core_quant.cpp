// ggml blocks in the model engine (core/models/quant.h, core/isa's dequantize,
// core/models/linear.cpp's quantized panels): every type, on every ISA build this CPU runs,
// against an independent double-precision dequantization (tests/support/gguf_writer.h,
// ggml-quants.c's formulas written out again), and applyLinear on those blocks against the
// double-precision product of the dequantized weights.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/isa/isa.h"
#include "core/models/quant.h"
#include "core/models/transformer.h"
#include "tests/support/gguf_writer.h"
#include "tests/support/test_core_util.h"

namespace attn {
namespace test_core_quant {
namespace {

using testing::dequantizeDouble;
using testing::randomMatrix;
using testing::randomTensorBytes;

constexpr std::uint32_t kTypes[] = {0, 1, 30, 8, 2, 3, 6, 7, 10, 11, 12, 13, 14};

TEST(GgmlTypes, TableHasTheBlockLayoutsOfGgmlCommon) {
  struct Row {
    std::uint32_t type;
    const char* name;
    int block, bytes;
  };
  const Row rows[] = {{0, "F32", 1, 4},     {1, "F16", 1, 2},     {2, "Q4_0", 32, 18},  {3, "Q4_1", 32, 20},
                      {6, "Q5_0", 32, 22},  {7, "Q5_1", 32, 24},  {8, "Q8_0", 32, 34},  {10, "Q2_K", 256, 84},
                      {11, "Q3_K", 256, 110}, {12, "Q4_K", 256, 144}, {13, "Q5_K", 256, 176},
                      {14, "Q6_K", 256, 210}, {30, "BF16", 1, 2}};
  for (const Row& r : rows) {
    const model::GgmlTypeInfo* info = model::ggmlTypeInfo(r.type);
    ASSERT_NE(info, nullptr) << r.name;
    EXPECT_STREQ(info->name, r.name);
    EXPECT_EQ(info->blockSize, r.block) << r.name;
    EXPECT_EQ(info->blockBytes, r.bytes) << r.name;
    EXPECT_TRUE(info->dequantizes) << r.name;
  }
  EXPECT_EQ(model::ggmlTypeInfo(4), nullptr);   // Q4_2, removed from ggml
  EXPECT_EQ(model::ggmlTypeInfo(99), nullptr);
  EXPECT_FALSE(model::ggmlTypeInfo(16)->dequantizes);  // IQ2_XXS: known, refused by name
  EXPECT_EQ(model::ggmlTypeName(16), "IQ2_XXS");
  EXPECT_EQ(model::ggmlTypeName(99), "type 99");
  EXPECT_EQ(model::ggmlBytes(*model::ggmlTypeInfo(12), 512), 288u);
}

TEST(GgmlDequantize, EveryTypeOnEveryIsaEqualsTheDoubleFormulas) {
  const kernels::Isa saved = kernels::activeIsa();
  std::mt19937 rng(7);
  int checked = 0;
  for (std::uint32_t type : kTypes) {
    const std::size_t count = 1024;  // 4 super-blocks, 32 small blocks
    const std::string bytes = randomTensorBytes(type, count, rng, 0.5);
    const std::vector<double> expected = dequantizeDouble(type, bytes, count);
    double largest = 0;
    for (double v : expected) largest = std::max(largest, std::fabs(v));
    ASSERT_GT(largest, 0.0) << model::ggmlTypeName(type);
    for (kernels::Isa isa : {kernels::Isa::Baseline, kernels::Isa::Avx2, kernels::Isa::Avx512}) {
      if (!kernels::setActiveIsa(isa)) continue;
      std::vector<float> got(count, -999.0f);
      ASSERT_TRUE(kernels::active().dequantize(type, bytes.data(), static_cast<std::ptrdiff_t>(count), got.data()));
      for (std::size_t i = 0; i < count; ++i) {
        // float32 formulas (d·sc in float, an FMA may fuse the last step): a few ulp of the
        // largest term
        ASSERT_NEAR(got[i], expected[i], 1e-6 * largest)
            << model::ggmlTypeName(type) << " on " << kernels::active().name << " at " << i;
      }
      ++checked;
    }
  }
  kernels::setActiveIsa(saved);
  EXPECT_GE(checked, 13);
  std::vector<float> out(32);
  EXPECT_FALSE(kernels::active().dequantize(16, out.data(), 32, out.data()));  // IQ2_XXS: refused
}

// x (m x in) times the dequantized [out, in] weights of `type`, through applyLinear, against
// the double product; with bias, accumulate and 1 or 2 threads.
TEST(ApplyLinearQuantized, EveryTypeAndIsaMatchesTheDoubleProductOfTheDequantizedWeights) {
  const kernels::Isa saved = kernels::activeIsa();
  std::mt19937 rng(11);
  struct Shape {
    int m, in, out;
  };
  const Shape shapes[] = {{1, 256, 70}, {3, 512, 300}, {9, 256, 130}};
  for (std::uint32_t type : kTypes) {
    for (const Shape& sh : shapes) {
      const std::string bytes = randomTensorBytes(type, static_cast<std::size_t>(sh.in) * sh.out, rng, 0.2);
      const std::vector<double> w = dequantizeDouble(type, bytes, static_cast<std::size_t>(sh.in) * sh.out);
      const Matrix x = randomMatrix(sh.m, sh.in, 31);
      const Matrix bias = randomMatrix(1, sh.out, 32);
      std::vector<double> expected(static_cast<std::size_t>(sh.m) * sh.out);
      double largest = 0;
      for (int r = 0; r < sh.m; ++r)
        for (int j = 0; j < sh.out; ++j) {
          double sum = bias(0, j), magnitude = std::fabs(bias(0, j));
          for (int k = 0; k < sh.in; ++k) {
            sum += static_cast<double>(x(r, k)) * w[static_cast<std::size_t>(j) * sh.in + k];
            magnitude += std::fabs(static_cast<double>(x(r, k)) * w[static_cast<std::size_t>(j) * sh.in + k]);
          }
          expected[static_cast<std::size_t>(r) * sh.out + j] = sum;
          largest = std::max(largest, magnitude);
        }
      model::Linear lin;
      lin.outByIn = true;
      lin.weight.rows = sh.out;
      lin.weight.cols = sh.in;
      if (type == 0) {
        lin.weight.data = reinterpret_cast<const float*>(bytes.data());
      } else {
        lin.weight.quant = reinterpret_cast<const std::uint8_t*>(bytes.data());
        lin.weight.ggmlType = type;
      }
      lin.bias = model::Tensor{bias.data(), sh.out, 1};
      for (kernels::Isa isa : {kernels::Isa::Baseline, kernels::Isa::Avx2, kernels::Isa::Avx512}) {
        if (!kernels::setActiveIsa(isa)) continue;
        for (int threads : {1, 2}) {
          Matrix y(sh.m, sh.out);
          model::applyLinear(lin, x, y, false, threads);
          Matrix twice = y;
          model::applyLinear(lin, x, twice, true, threads);  // y + (x·W + b)
          for (int r = 0; r < sh.m; ++r)
            for (int j = 0; j < sh.out; ++j) {
              const double e = expected[static_cast<std::size_t>(r) * sh.out + j];
              ASSERT_NEAR(y(r, j), e, 2e-6 * largest)
                  << model::ggmlTypeName(type) << " " << kernels::active().name << " m=" << sh.m << " (" << r << ", " << j << ")";
              ASSERT_NEAR(twice(r, j), 2 * e, 4e-6 * largest);
            }
        }
      }
    }
  }
  kernels::setActiveIsa(saved);
}

// The Q8_0 decode kernel converts each block's f16 scale with its own bit trick
// (kernels_quant.inc halfAtFast): one block per f16 value (all 65,536: zero, subnormal,
// normal, inf, NaN, both signs), q = (1, 0, ...), x = (1, 0, ...), so that output j is the
// scale of block j exactly (NaN for inf and NaN, as the dequantized row's 0·inf), on every
// ISA, in the 4-row decode path and the 1-row tail.
TEST(ApplyLinearQuantized, Q8_0DecodeReadsEveryF16ScaleExactly) {
  const kernels::Isa saved = kernels::activeIsa();
  constexpr int kRows = 65536 + 3;  // 3 tail rows after the 4-row groups
  std::string bytes(static_cast<std::size_t>(kRows) * 34, '\0');
  for (int j = 0; j < kRows; ++j) {
    const int h = j % 65536;
    bytes[static_cast<std::size_t>(j) * 34] = static_cast<char>(h & 0xFF);
    bytes[static_cast<std::size_t>(j) * 34 + 1] = static_cast<char>(h >> 8);
    bytes[static_cast<std::size_t>(j) * 34 + 2] = 1;
  }
  std::vector<float> x(32, 0.0f);
  x[0] = 1.0f;
  int checked = 0;
  for (kernels::Isa isa : {kernels::Isa::Baseline, kernels::Isa::Avx2, kernels::Isa::Avx512}) {
    if (!kernels::setActiveIsa(isa)) continue;
    std::vector<float> y(kRows, -7.0f);
    ASSERT_TRUE(kernels::active().linearQuantRows(8, bytes.data(), 34, x.data(), 32, 1, 32, 0, kRows,
                                                  y.data(), kRows, false));
    for (int j = 0; j < kRows; ++j) {
      const int h = j % 65536;
      // an inf or NaN scale: the dequantized weights hold 0·inf = NaN, so does the product
      const bool allOnes = ((h >> 10) & 31) == 31;
      const double expected = allOnes ? std::nan("") : testing::halfValue(static_cast<std::uint16_t>(h));
      if (std::isnan(expected)) {
        ASSERT_TRUE(std::isnan(y[static_cast<std::size_t>(j)])) << kernels::active().name << " f16 " << j;
      } else {
        ASSERT_EQ(static_cast<double>(y[static_cast<std::size_t>(j)]), expected)
            << kernels::active().name << " f16 0x" << std::hex << j % 65536;
      }
    }
    ++checked;
  }
  kernels::setActiveIsa(saved);
  EXPECT_GE(checked, 1);
}

TEST(QuantizedTensor, RowsDenseAndStoredBytes) {
  std::mt19937 rng(3);
  const std::string bytes = randomTensorBytes(12, 3 * 256, rng);  // Q4_K, 3 rows of 256
  const std::vector<double> w = dequantizeDouble(12, bytes, 3 * 256);
  model::Tensor t;
  t.rows = 3;
  t.cols = 256;
  t.quant = reinterpret_cast<const std::uint8_t*>(bytes.data());
  t.ggmlType = 12;
  EXPECT_FALSE(t.empty());
  EXPECT_TRUE(t.isQuantized());
  EXPECT_EQ(t.quantRowBytes(), 144u);
  EXPECT_EQ(t.storedBytes(), 3u * 144u);
  std::vector<float> row(256);
  t.readRow(2, row.data());
  for (int k = 0; k < 256; ++k) EXPECT_NEAR(row[static_cast<std::size_t>(k)], w[512 + static_cast<std::size_t>(k)], 1e-6);
  const Matrix dense = t.dense();
  ASSERT_EQ(dense.rows(), 3);
  for (int r = 0; r < 3; ++r)
    for (int k = 0; k < 256; ++k) EXPECT_NEAR(dense(r, k), w[static_cast<std::size_t>(r) * 256 + k], 1e-6);
}

}  // namespace
}  // namespace test_core_quant
}  // namespace attn
