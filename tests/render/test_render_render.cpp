// Tests of render/heatmap_render: colormap tables against matplotlib, matrix selection, the
// rasteriser (read back from PNG, pixel by pixel), SVG and CSV content, and the errors.
// Needs no core .cpp: results are built by hand.
#include <gtest/gtest.h>

#include <stb_image.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#include "core/attention/aggregate.h"
#include "render/heatmap_layout.h"
#include "render/heatmap_render.h"
#include "tests/support/test_core_util.h"
#include "tests/support/test_files.h"
#include "tests/support/test_paths.h"

namespace attn::io {

// For gtest messages (found by ADL, so it lives in Rgb's namespace).
static std::ostream& operator<<(std::ostream& out, Rgb c) {
  return out << "(" << int(c.r) << "," << int(c.g) << "," << int(c.b) << ")";
}
static void PrintTo(Rgb c, std::ostream* out) {
  *out << c;
}

namespace test_render_render {
namespace {

namespace fs = std::filesystem;
constexpr float kInf = std::numeric_limits<float>::infinity();

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

using testing::M;  // tests/support/test_core_util.h

fs::path tempDir() {
  fs::path dir = fs::path(attn::testing::testTmp()) / "io_render";
  fs::create_directories(dir);
  return dir;
}

using testing::readFile;  // tests/support/test_files.h

Image readPng(const fs::path& path) {
  int w = 0, h = 0, channels = 0;
  unsigned char* data = stbi_load(path.c_str(), &w, &h, &channels, 3);
  Image image;
  if (!data) return image;
  image.width = w;
  image.height = h;
  image.rgb.assign(data, data + static_cast<size_t>(w) * static_cast<size_t>(h) * 3);
  stbi_image_free(data);
  return image;
}

Rgb pixelAt(const Image& image, int x, int y) {
  const size_t i =
      (static_cast<size_t>(y) * static_cast<size_t>(image.width) + static_cast<size_t>(x)) * 3;
  return {image.rgb[i], image.rgb[i + 1], image.rgb[i + 2]};
}

Rgb centreOf(const Image& image, PixelRect r) {
  return pixelAt(image, (r.x0 + r.x1) / 2, (r.y0 + r.y1) / 2);
}

// A 3 x 3 view with min 0, max 1, a quarter value, a masked cell, +inf and NaN.
MatrixView sampleView() {
  MatrixView view;
  view.values = M({{0.0f, 0.25f, 1.0f}, {0.5f, -kInf, 0.75f}, {kInf, 0.1f, std::nanf("")}});
  view.rowLabels = {"q0", "q1", "q2"};
  view.colLabels = {"k0", "k1", "k2"};
  view.title = "weights";
  return view;
}

// ---------------------------------------------------------------------------------------
// Colormaps
// ---------------------------------------------------------------------------------------

TEST(Colormap, RdBuDivergesThroughWhiteFromBlueToRed) {
  const auto& lut = colormapLut(ColormapKind::RdBu);
  EXPECT_EQ(lut[0], (Rgb{5, 48, 97}));     // the ColorBrewer anchors at both ends
  EXPECT_EQ(lut[255], (Rgb{103, 0, 31}));
  // Entry 127.5 is the white anchor (247, 247, 247): 127 and 128 lie 1/20 of a segment
  // either side of it, toward (209, 229, 240) and (253, 219, 199).
  const double f = 0.5 / 25.5;  // 0.5 entries of a 25.5-entry segment
  EXPECT_NEAR(lut[127].r, 247 + (209 - 247) * f, 0.51);
  EXPECT_NEAR(lut[128].b, 247 + (199 - 247) * f, 0.51);
  EXPECT_LT(lut[0].r, lut[0].b);      // low end blue
  EXPECT_GT(lut[255].r, lut[255].b);  // high end red
  EXPECT_TRUE(isDiverging(ColormapKind::RdBu));
  EXPECT_FALSE(isDiverging(ColormapKind::Viridis));
  EXPECT_TRUE(isSignedMatrix(MatrixKind::Scores));
  EXPECT_TRUE(isSignedMatrix(MatrixKind::Q));
  EXPECT_FALSE(isSignedMatrix(MatrixKind::Weights));
}

TEST(Colormap, CentredRangeIsSymmetricAboutZero) {
  ValueRange r = centredColorRange(ValueRange{-0.5f, 2.0f}, std::nullopt, std::nullopt);
  EXPECT_FLOAT_EQ(r.lo, -2.0f);
  EXPECT_FLOAT_EQ(r.hi, 2.0f);
  EXPECT_FLOAT_EQ(colorPosition(0.0f, r), 0.5f);  // 0 on the white centre
  r = centredColorRange(ValueRange{-3.0f, 1.0f}, std::nullopt, std::nullopt);
  EXPECT_FLOAT_EQ(r.lo, -3.0f);
  EXPECT_FLOAT_EQ(r.hi, 3.0f);
  // A fixed range wins (the "Fixed colour range" applies to every matrix).
  r = centredColorRange(ValueRange{-3.0f, 1.0f}, 0.0f, 1.0f);
  EXPECT_FLOAT_EQ(r.lo, 0.0f);
  EXPECT_FLOAT_EQ(r.hi, 1.0f);
}

TEST(Render, CentredRangeExportPutsZeroOnWhite) {
  MatrixView view;
  view.values = M({{-1.0f, 0.0f, 4.0f}});
  view.rowLabels = {"q0"};
  view.colLabels = {"k0", "k1", "k2"};
  view.title = "scores";
  HeatmapStyle style;
  style.colormap = ColormapKind::RdBu;
  style.centreZero = true;
  style.cellLabels = false;
  Expected<Image> image = renderHeatmap(view, style);
  ASSERT_TRUE(image) << image.error().message();
  const auto& lut = colormapLut(ColormapKind::RdBu);
  // Range [-4, 4]: 0 -> 0.5 -> entry 128, 4 -> 255, -1 -> 0.375 -> entry 96.
  EXPECT_EQ(centreOf(*image, cellRect(view, style, 0, 1)), lut[128]);
  EXPECT_EQ(centreOf(*image, cellRect(view, style, 0, 2)), lut[255]);
  EXPECT_EQ(centreOf(*image, cellRect(view, style, 0, 0)), lut[96]);
}

TEST(Colormap, NamesRoundTrip) {
  EXPECT_EQ(std::size(kAllColormaps), 8u);
  EXPECT_EQ(toString(ColormapKind::RdBu), "rdbu");
  for (ColormapKind kind : kAllColormaps) EXPECT_EQ(parseColormapKind(toString(kind)), kind);
  EXPECT_EQ(toString(ColormapKind::Viridis), "viridis");
  EXPECT_EQ(toString(ColormapKind::Blues), "blues");
  EXPECT_FALSE(parseColormapKind("Viridis"));
  EXPECT_FALSE(parseColormapKind("jet"));
}

// Reference values: matplotlib 3.6 cmap(i / 255) rounded to 8 bits, i = 0, 128, 255.
TEST(Colormap, LutMatchesMatplotlib) {
  struct Expected {
    ColormapKind kind;
    Rgb first, middle, last;
  };
  const Expected expected[] = {
      {ColormapKind::Viridis, {68, 1, 84}, {33, 145, 140}, {253, 231, 37}},
      {ColormapKind::Magma, {0, 0, 4}, {183, 55, 121}, {252, 253, 191}},
      {ColormapKind::Cividis, {0, 34, 78}, {125, 124, 120}, {254, 232, 56}},
      {ColormapKind::Greys, {255, 255, 255}, {149, 149, 149}, {0, 0, 0}},
      {ColormapKind::Purples, {252, 251, 253}, {158, 154, 200}, {63, 0, 125}},
      {ColormapKind::Oranges, {255, 245, 235}, {253, 140, 59}, {127, 39, 4}},
      {ColormapKind::Blues, {247, 251, 255}, {106, 174, 214}, {8, 48, 107}},
  };
  for (const Expected& e : expected) {
    SCOPED_TRACE(std::string(toString(e.kind)));
    const auto& lut = colormapLut(e.kind);
    EXPECT_EQ(lut[0], e.first);
    EXPECT_EQ(lut[128], e.middle);
    EXPECT_EQ(lut[255], e.last);
  }
}

TEST(Colormap, ColorClampsAndRounds) {
  const auto& lut = colormapLut(ColormapKind::Magma);
  EXPECT_EQ(colormapColor(ColormapKind::Magma, -3.0f), lut[0]);
  EXPECT_EQ(colormapColor(ColormapKind::Magma, 0.0f), lut[0]);
  EXPECT_EQ(colormapColor(ColormapKind::Magma, 1.0f), lut[255]);
  EXPECT_EQ(colormapColor(ColormapKind::Magma, 7.5f), lut[255]);
  EXPECT_EQ(colormapColor(ColormapKind::Magma, 0.5f), lut[128]);  // round(127.5)
  EXPECT_EQ(colormapColor(ColormapKind::Magma, 0.25f), lut[64]);  // round(63.75)
  EXPECT_EQ(colormapColor(ColormapKind::Magma, -kInf), lut[0]);
  EXPECT_EQ(colormapColor(ColormapKind::Magma, kInf), lut[255]);
  EXPECT_EQ(colormapColor(ColormapKind::Magma, std::nanf("")), kNanColor);
}

TEST(Colormap, ValueRangeUsesFiniteValuesOrFixedEnds) {
  const Matrix m = M({{-kInf, 2, 5}, {kInf, std::nanf(""), -1}});
  ValueRange auto_ = valueRange(matrixRef(m), std::nullopt, std::nullopt);
  EXPECT_EQ(auto_.lo, -1);
  EXPECT_EQ(auto_.hi, 5);
  ValueRange fixed = valueRange(matrixRef(m), 0.0f, 10.0f);
  EXPECT_EQ(fixed.lo, 0);
  EXPECT_EQ(fixed.hi, 10);
  ValueRange half = valueRange(matrixRef(m), 1.0f, std::nullopt);
  EXPECT_EQ(half.lo, 1);
  EXPECT_EQ(half.hi, 5);
  ValueRange none = valueRange(matrixRef(M({{-kInf, -kInf}})), std::nullopt, std::nullopt);
  EXPECT_EQ(none.lo, 0);
  EXPECT_EQ(none.hi, 1);
}

TEST(Colormap, ValueColorSpecialValues) {
  const ValueRange range{0, 2};
  const auto& lut = colormapLut(ColormapKind::Viridis);
  EXPECT_EQ(valueColor(ColormapKind::Viridis, -kInf, range), kMaskedColor);
  EXPECT_EQ(valueColor(ColormapKind::Viridis, kInf, range), kNanColor);  // marked, not the top
  EXPECT_EQ(valueColor(ColormapKind::Viridis, std::nanf(""), range), kNanColor);
  EXPECT_EQ(valueColor(ColormapKind::Viridis, 0, range), lut[0]);
  EXPECT_EQ(valueColor(ColormapKind::Viridis, 2, range), lut[255]);
  EXPECT_EQ(valueColor(ColormapKind::Viridis, 1, range), lut[128]);
  EXPECT_EQ(valueColor(ColormapKind::Viridis, 3, ValueRange{3, 3}), lut[128]);  // constant
}

TEST(Colormap, ColorRangeFromACachedFiniteRangeEqualsValueRange) {
  const Matrix m = M({{-kInf, 2, 5}, {kInf, std::nanf(""), -1}});
  const std::optional<ValueRange> finite = finiteRange(matrixRef(m));
  ASSERT_TRUE(finite.has_value());
  EXPECT_EQ(finite->lo, -1);
  EXPECT_EQ(finite->hi, 5);
  EXPECT_FALSE(finiteRange(matrixRef(M({{-kInf, std::nanf("")}}))).has_value());
  const std::optional<float> none;
  for (auto [vmin, vmax] :
       {std::pair{none, none}, std::pair{std::optional(0.f), none},
        std::pair{none, std::optional(3.f)}, std::pair{std::optional(7.f), none},
        std::pair{std::optional(-2.f), std::optional(9.f)}}) {
    const ValueRange a = colorRange(finite, vmin, vmax), b = valueRange(matrixRef(m), vmin, vmax);
    EXPECT_EQ(a.lo, b.lo);
    EXPECT_EQ(a.hi, b.hi);
  }
  // One fixed end beyond the data collapses the range: everything maps to the middle.
  const ValueRange collapsed = colorRange(finite, 7.f, std::nullopt);
  EXPECT_EQ(collapsed.lo, 7);
  EXPECT_EQ(collapsed.hi, 7);
  EXPECT_EQ(colorPosition(2, collapsed), 0.5f);
  EXPECT_EQ(colorPosition(2, ValueRange{0, 4}), 0.5f);
  EXPECT_EQ(colorPosition(-9, ValueRange{0, 4}), 0.0f);
  EXPECT_EQ(colorPosition(9, ValueRange{0, 4}), 1.0f);
}

TEST(Colormap, CellLabelColorIsTheLuminanceRuleOnTheCellColour) {
  const ValueRange range{0, 1};
  for (ColormapKind kind : kAllColormaps) {
    for (float v : {0.0f, 0.3f, 0.5f, 0.8f, 1.0f, -kInf, kInf}) {
      EXPECT_EQ(cellLabelColor(kind, v, range), labelColorOn(valueColor(kind, v, range)));
    }
  }
  // Viridis: white on the dark bottom, black on the yellow top; masked grey: black.
  EXPECT_EQ(cellLabelColor(ColormapKind::Viridis, 0.0f, range), (Rgb{255, 255, 255}));
  EXPECT_EQ(cellLabelColor(ColormapKind::Viridis, 1.0f, range), (Rgb{0, 0, 0}));
  EXPECT_EQ(cellLabelColor(ColormapKind::Viridis, -kInf, range), (Rgb{0, 0, 0}));
}

TEST(MaxPool, BlocksFoldLeftoversAndKeepNanAndMasks) {
  // 5 x 3 by 2 into 2 x 1: the odd last row folds into the last block (the widget's mips).
  const Matrix m = M(
      {{1, 2, -kInf}, {0, 3, 0}, {-kInf, -kInf, -kInf}, {-kInf, -kInf, -kInf}, {-kInf, 9, -kInf}});
  std::vector<float> out(2);
  maxPoolBlocks(matrixRef(m), 2, 2, 2, 1, out.data());
  EXPECT_EQ(out[0], 3);
  EXPECT_EQ(out[1], 9);
  // ceil blocks (the exports' grid): an all-masked block stays masked, NaN wins.
  const Matrix n = M({{-kInf, -kInf, 1}, {-kInf, -kInf, std::nanf("")}});
  std::vector<float> grid(2);
  maxPoolBlocks(matrixRef(n), 2, 2, 1, 2, grid.data());
  EXPECT_EQ(grid[0], -kInf);
  EXPECT_TRUE(std::isnan(grid[1]));
  // A strided view (one column block of a wider matrix) pools only what it sees.
  const Matrix wide = M({{1, 100}, {4, 100}});
  const MatrixRef left{wide.data(), 2, 1, 2};
  float single = 0;
  maxPoolBlocks(left, 2, 2, 1, 1, &single);
  EXPECT_EQ(single, 4);
}

TEST(MaxPool, FastPathsMatchTheElementwiseDefinition) {
  // Random matrices with some NaN, +-inf and masked rows, every factor and output size the
  // window and the exports use (floor sizes that fold leftovers, ceil sizes): the row-wise
  // fast paths of maxPoolBlocks and finiteRange must give exactly the element-by-element result.
  std::uint32_t state = 12345;
  auto next = [&] {
    state = state * 1664525u + 1013904223u;
    return state >> 8;
  };
  for (int trial = 0; trial < 60; ++trial) {
    const int rows = 1 + static_cast<int>(next() % 37), cols = 1 + static_cast<int>(next() % 41);
    Matrix m(rows, cols);
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) {
        const std::uint32_t k = next() % 100;
        m(r, c) = k == 0   ? std::nanf("")
                  : k == 1 ? kInf
                  : k < 5  ? -kInf
                           : static_cast<float>(static_cast<int>(next() % 2001) - 1000) / 7.f;
      }
    if (trial % 3 == 0) m.row(0).setConstant(-kInf);
    // finiteRange, element by element.
    float lo = kInf, hi = -kInf;
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c)
        if (std::isfinite(m(r, c))) {
          lo = std::min(lo, m(r, c));
          hi = std::max(hi, m(r, c));
        }
    const std::optional<ValueRange> range = finiteRange(matrixRef(m));
    ASSERT_EQ(range.has_value(), lo <= hi);
    if (range) {
      EXPECT_EQ(range->lo, lo);
      EXPECT_EQ(range->hi, hi);
    }
    for (int factor : {1, 2, 3, 5}) {
      for (bool ceilSizes : {false, true}) {
        const int outRows = std::max(1, ceilSizes ? (rows + factor - 1) / factor : rows / factor);
        const int outCols = std::max(1, ceilSizes ? (cols + factor - 1) / factor : cols / factor);
        std::vector<float> fast(static_cast<std::size_t>(outRows * outCols));
        maxPoolBlocks(matrixRef(m), factor, factor, outRows, outCols, fast.data());
        std::vector<float> slow(fast.size(), -kInf);
        for (int r = 0; r < rows; ++r)
          for (int c = 0; c < cols; ++c) {
            float& cell = slow[static_cast<std::size_t>(std::min(r / factor, outRows - 1) * outCols +
                                                        std::min(c / factor, outCols - 1))];
            if (std::isnan(cell)) continue;
            if (std::isnan(m(r, c)) || m(r, c) > cell) cell = m(r, c);
          }
        for (std::size_t i = 0; i < fast.size(); ++i) {
          if (std::isnan(slow[i])) {
            EXPECT_TRUE(std::isnan(fast[i])) << trial << " " << factor << " " << i;
          } else {
            EXPECT_EQ(fast[i], slow[i]) << trial << " " << factor << " " << i;
          }
        }
      }
    }
  }
}

TEST(CellLabels, FewerDigitsWhenNarrowNeverBlankWhileOneFits) {
  auto within = [](std::size_t chars) {
    return [chars](const std::string& text) { return text.size() <= chars; };
  };
  EXPECT_EQ(fittedCellLabel(0.1192f, 3, within(5)), "0.119");
  EXPECT_EQ(fittedCellLabel(0.1192f, 3, within(4)), "0.12");
  EXPECT_EQ(fittedCellLabel(0.1192f, 3, within(3)), "0.1");
  // Narrower than "0.1": what it rounds to at no decimals (issue 18: never blank beside a
  // neighbour that prints "1"), unless the caller asks for no rounding past 0.001.
  EXPECT_EQ(fittedCellLabel(0.1192f, 3, within(2)), "0");
  EXPECT_EQ(fittedCellLabel(0.1192f, 3, within(2), false), std::nullopt);
  EXPECT_EQ(fittedCellLabel(0.1192f, 3, within(0)), std::nullopt);
  EXPECT_EQ(fittedCellLabel(927.0f, 3, within(3)), "927");
  EXPECT_EQ(fittedCellLabel(927.0f, 3, within(2)), std::nullopt);
  EXPECT_EQ(fittedCellLabel(123456.0f, 3, within(3)), "1e5");
}

TEST(Colormap, LabelColorByLuminance) {
  const Rgb white{255, 255, 255}, black{0, 0, 0};
  EXPECT_EQ(labelColorOn(colormapLut(ColormapKind::Viridis)[0]), white);
  EXPECT_EQ(labelColorOn(colormapLut(ColormapKind::Viridis)[255]), black);
  EXPECT_EQ(labelColorOn(colormapLut(ColormapKind::Magma)[0]), white);
  EXPECT_EQ(labelColorOn(colormapLut(ColormapKind::Blues)[0]), black);
  EXPECT_EQ(labelColorOn(colormapLut(ColormapKind::Blues)[255]), white);
  EXPECT_EQ(labelColorOn(kMaskedColor), black);
}

// ---------------------------------------------------------------------------------------
// Number formatting
// ---------------------------------------------------------------------------------------

// formatNumber itself is tested in test_core_format.cpp; here: the files use it.
std::string svgOf(const HeatmapView& view, const HeatmapStyle& style) {
  const fs::path path = tempDir() / "format.svg";
  EXPECT_TRUE(exportMatrix(view, style, path.string()));
  return readFile(path);
}

TEST(FormatNumber, SvgCellLabelsAndTicksUseTheSharedFormatter) {
  MatrixView view;
  view.values = M({{927.0f, 0.1192f}, {-kInf, 123456.0f}});
  view.title = "t";
  HeatmapStyle style;
  const std::string svg = svgOf(view, style);
  for (const char* text : {">927<", ">0.119<", ">1.23e5<"}) {
    EXPECT_NE(svg.find(text), std::string::npos) << text;
  }
  EXPECT_EQ(svg.find("927.00"), std::string::npos);
  EXPECT_NE(svg.find(">\u2212\u221E<"), std::string::npos);  // masked reads as masked
  // Colorbar ticks: round numbers inside 0.1192 .. 123456 (a 96 px bar has room for 3:
  // multiples of 50000), in the same formatter; not the old middle 6.17e4.
  EXPECT_NE(svg.find(">50000<"), std::string::npos);
  EXPECT_NE(svg.find(">1e5<"), std::string::npos);
  EXPECT_EQ(svg.find(">6.17e4<"), std::string::npos);
}

// ---------------------------------------------------------------------------------------
// selectMatrix
// ---------------------------------------------------------------------------------------

// Two heads, 2 queries, 3 keys, d_h 2, dv_h 1.
struct Fixture {
  AttentionResult result;
  Problem problem;
  Fixture() {
    for (int h = 0; h < 2; ++h) {
      HeadResult head;
      const float f = static_cast<float>(h + 1);
      // Dot scores q·kᵀ = {{1, 2, 3}, {4, 5, 6}}·f (the result keeps q and k, not the scores);
      // masked with `allowed` below: {{1, -inf, -inf}, {4, 5, -inf}}·f.
      head.q = M({{1, 0}, {1, 3}}) * f;
      head.k = M({{1, 1}, {2, 1}, {3, 1}});
      head.v = M({{1}, {2}, {3}}) * f;
      head.weights = M({{1, 0, 0}, {0.5f, 0.5f, 0}});
      head.context = M({{1}, {1.5f}}) * f;
      result.heads.push_back(head);
    }
    result.score = ScoreKind::Dot;
    result.masked = true;
    result.allowed.resize(2, 3);
    result.allowed << true, false, false, true, true, false;
    result.weightsMean = M({{1, 0, 0}, {0.5f, 0.5f, 0}});
    result.concat = M({{1, 2}, {1.5f, 3}});
    result.output = M({{7, 8}, {9, 10}});
    problem.queryLabels = {"the", "cat"};
    problem.keyLabels = {"a", "b", "c"};
  }
};

TEST(SelectMatrix, TheRefVariantPointsIntoTheResultAndOwnsOnlyComputedMeans) {
  Fixture fx;
  Expected<SelectedMatrix> w = selectMatrixRef(fx.result, fx.problem, MatrixKind::Weights, 1);
  ASSERT_TRUE(w) << w.error().message();
  EXPECT_EQ(w->values().data, fx.result.heads[1].weights.data());  // no copy
  EXPECT_EQ(w->owned.size(), 0);
  EXPECT_EQ(w->title, "weights · head 1 of 2");
  const HeatmapView view = *w;
  EXPECT_EQ(view.values(1, 0), 0.5f);
  EXPECT_EQ(view.colLabels[2], "c");
  // The mean of scores is not stored in the result: computed once and owned.
  Expected<SelectedMatrix> mean = selectMatrixRef(fx.result, fx.problem, MatrixKind::Scores, -1);
  ASSERT_TRUE(mean);
  EXPECT_EQ(mean->values().data, mean->owned.data());
  EXPECT_EQ(mean->values()(1, 2), 9.0f);  // (6 + 12) / 2
  // The owning selectMatrix is the same selection, copied.
  for (MatrixKind kind : {MatrixKind::Q, MatrixKind::K, MatrixKind::MaskedScores,
                          MatrixKind::Context, MatrixKind::Concat, MatrixKind::Output}) {
    Expected<SelectedMatrix> ref = selectMatrixRef(fx.result, fx.problem, kind, 0);
    Expected<MatrixView> copy = selectMatrix(fx.result, fx.problem, kind, 0);
    ASSERT_TRUE(ref && copy);
    const MatrixRef values = ref->values();
    ASSERT_EQ(values.rows, copy->values.rows());
    ASSERT_EQ(values.cols, copy->values.cols());
    for (int r = 0; r < values.rows; ++r)
      for (int c = 0; c < values.cols; ++c) EXPECT_EQ(values(r, c), copy->values(r, c));
    EXPECT_EQ(ref->rowLabels, copy->rowLabels);
    EXPECT_EQ(ref->title, copy->title);
  }
}

TEST(SelectMatrix, PerHeadMatricesAndLabels) {
  Fixture fx;
  Expected<MatrixView> w = selectMatrix(fx.result, fx.problem, MatrixKind::Weights, 1);
  ASSERT_TRUE(w) << w.error().message();
  EXPECT_EQ(w->values, fx.result.heads[1].weights);
  EXPECT_EQ(w->rowLabels, (std::vector<std::string>{"the", "cat"}));
  EXPECT_EQ(w->colLabels, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(w->title, "weights · head 1 of 2");

  Expected<MatrixView> k = selectMatrix(fx.result, fx.problem, MatrixKind::K, 0);
  ASSERT_TRUE(k);
  EXPECT_EQ(k->values, fx.result.heads[0].k);
  EXPECT_EQ(k->rowLabels, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(k->colLabels, (std::vector<std::string>{"0", "1"}));

  Expected<MatrixView> v = selectMatrix(fx.result, fx.problem, MatrixKind::V, 1);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->rowLabels.size(), 3u);
  EXPECT_EQ(v->colLabels, (std::vector<std::string>{"0"}));

  Expected<MatrixView> q = selectMatrix(fx.result, fx.problem, MatrixKind::Q, 1);
  ASSERT_TRUE(q);
  EXPECT_EQ(q->rowLabels, (std::vector<std::string>{"the", "cat"}));
  EXPECT_EQ(q->values, fx.result.heads[1].q);

  Expected<MatrixView> masked = selectMatrix(fx.result, fx.problem, MatrixKind::MaskedScores, 0);
  ASSERT_TRUE(masked);
  EXPECT_EQ(masked->colLabels, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(masked->values, M({{1, -kInf, -kInf}, {4, 5, -kInf}}));
  Expected<MatrixView> scores = selectMatrix(fx.result, fx.problem, MatrixKind::Scores, 1);
  ASSERT_TRUE(scores);
  EXPECT_EQ(scores->values, M({{2, 4, 6}, {8, 10, 12}}));

  Expected<MatrixView> context = selectMatrix(fx.result, fx.problem, MatrixKind::Context, 0);
  ASSERT_TRUE(context);
  EXPECT_EQ(context->rowLabels, (std::vector<std::string>{"the", "cat"}));
  EXPECT_EQ(context->colLabels, (std::vector<std::string>{"0"}));
}

TEST(SelectMatrix, MeanOverHeads) {
  Fixture fx;
  Expected<MatrixView> scores = selectMatrix(fx.result, fx.problem, MatrixKind::Scores, -1);
  ASSERT_TRUE(scores);
  EXPECT_EQ(scores->values, M({{1.5f, 3, 4.5f}, {6, 7.5f, 9}}));
  EXPECT_EQ(scores->title, "scores · mean of 2 heads");
  Expected<MatrixView> weights = selectMatrix(fx.result, fx.problem, MatrixKind::Weights, -1);
  ASSERT_TRUE(weights);
  EXPECT_EQ(weights->values, fx.result.weightsMean);
  EXPECT_EQ(weights->title, "weights · mean of 2 heads");

  for (MatrixKind kind : {MatrixKind::MaskedScores, MatrixKind::Q, MatrixKind::K, MatrixKind::V,
                          MatrixKind::Context}) {
    Expected<MatrixView> bad = selectMatrix(fx.result, fx.problem, kind, -1);
    ASSERT_FALSE(bad) << toString(kind);
    EXPECT_EQ(bad.error().field, "head");
    EXPECT_EQ(bad.error().problem, "the mean over heads exists only for scores and weights");
  }
}

TEST(SelectMatrix, HeadOutOfRangeNamesTheRange) {
  Fixture fx;
  for (int head : {2, 9, -2}) {
    Expected<MatrixView> bad = selectMatrix(fx.result, fx.problem, MatrixKind::Weights, head);
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().field, "head");
    EXPECT_NE(bad.error().problem.find("0..1"), std::string::npos) << bad.error().problem;
  }
}

TEST(SelectMatrix, ConcatAndOutputIgnoreHead) {
  Fixture fx;
  for (int head : {-1, 0, 5}) {
    Expected<MatrixView> concat = selectMatrix(fx.result, fx.problem, MatrixKind::Concat, head);
    ASSERT_TRUE(concat);
    EXPECT_EQ(concat->values, fx.result.concat);
    EXPECT_EQ(concat->title, "concat");
    EXPECT_EQ(concat->colLabels, (std::vector<std::string>{"0", "1"}));
    Expected<MatrixView> output = selectMatrix(fx.result, fx.problem, MatrixKind::Output, head);
    ASSERT_TRUE(output);
    EXPECT_EQ(output->values, fx.result.output);
    EXPECT_EQ(output->rowLabels, (std::vector<std::string>{"the", "cat"}));
  }
}

TEST(SelectMatrix, SingleHeadTitleAndMissingLabels) {
  Fixture fx;
  fx.result.heads.resize(1);
  fx.problem.queryLabels.clear();
  fx.problem.keyLabels = {"a"};
  Expected<MatrixView> w = selectMatrix(fx.result, fx.problem, MatrixKind::Weights, 0);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->title, "weights");
  EXPECT_EQ(w->rowLabels, (std::vector<std::string>{"q0", "q1"}));
  EXPECT_EQ(w->colLabels, (std::vector<std::string>{"a", "k1", "k2"}));
}

TEST(SelectMatrix, MatrixKindNames) {
  for (MatrixKind kind : {MatrixKind::Scores, MatrixKind::MaskedScores, MatrixKind::Weights,
                          MatrixKind::Q, MatrixKind::K, MatrixKind::V, MatrixKind::Context,
                          MatrixKind::Concat, MatrixKind::Output}) {
    EXPECT_EQ(parseMatrixKind(toString(kind)), kind);
  }
  EXPECT_EQ(toString(MatrixKind::MaskedScores), "masked_scores");
  EXPECT_FALSE(parseMatrixKind("attention"));
}

// ---------------------------------------------------------------------------------------
// Rendering, read back from PNG
// ---------------------------------------------------------------------------------------

TEST(Render, PngPixelsAtKnownCells) {
  const MatrixView view = sampleView();
  HeatmapStyle style;
  style.cellLabels = false;  // so cell centres are pure colour
  const fs::path path = tempDir() / "cells.png";
  ASSERT_TRUE(exportMatrix(view, style, path.string()));
  const Image image = readPng(path);
  ASSERT_GT(image.width, 0);
  Expected<Image> direct = renderHeatmap(view, style);
  ASSERT_TRUE(direct);
  EXPECT_EQ(image.width, direct->width);
  EXPECT_EQ(image.height, direct->height);
  EXPECT_EQ(image.rgb, direct->rgb);  // the file is exactly the rendered image

  const auto& lut = colormapLut(ColormapKind::Viridis);
  EXPECT_EQ(centreOf(image, cellRect(view, style, 0, 0)), lut[0]);    // min
  EXPECT_EQ(centreOf(image, cellRect(view, style, 0, 2)), lut[255]);  // max
  EXPECT_EQ(centreOf(image, cellRect(view, style, 0, 1)), lut[64]);   // 0.25
  EXPECT_EQ(centreOf(image, cellRect(view, style, 1, 2)), lut[191]);  // 0.75
  EXPECT_EQ(centreOf(image, cellRect(view, style, 2, 0)), kNanColor);  // +inf: marked
  EXPECT_EQ(centreOf(image, cellRect(view, style, 2, 2)), kNanColor);

  // Every pixel of the cell rect is the cell's colour (the rect is exact).
  const PixelRect r = cellRect(view, style, 1, 0);
  EXPECT_EQ(r.x1 - r.x0, 40);
  EXPECT_EQ(r.y1 - r.y0, 40);
  for (int y = r.y0; y < r.y1; ++y) {
    for (int x = r.x0; x < r.x1; ++x) ASSERT_EQ(pixelAt(image, x, y), lut[128]) << x << "," << y;
  }

  // The masked cell: only grey and hatch pixels, and some of both.
  const PixelRect m = cellRect(view, style, 1, 1);
  int grey = 0, hatch = 0;
  for (int y = m.y0; y < m.y1; ++y) {
    for (int x = m.x0; x < m.x1; ++x) {
      const Rgb p = pixelAt(image, x, y);
      if (p == kMaskedColor)
        ++grey;
      else if (p == kMaskedHatchColor)
        ++hatch;
      else
        ADD_FAILURE() << "unexpected " << p << " at " << x << "," << y;
    }
  }
  EXPECT_GT(grey, hatch);
  EXPECT_GT(hatch, 40);
}

TEST(Render, CellLabelColourFollowsLuminance) {
  MatrixView view;
  // Not 0 and 1: those are labelled "0" and "1" now (integers as integers), too few pixels
  // to count; these have 4-character labels like "0.00" had, and (clamped to the fixed
  // range) still the extreme colours of the map.
  view.values = M({{0.05f, 0.95f}});
  view.rowLabels = {"q"};
  view.colLabels = {"a", "b"};
  HeatmapStyle style;  // labels on, 40 px cells
  style.vmin = 0.1f;
  style.vmax = 0.9f;
  Expected<Image> image = renderHeatmap(view, style);
  ASSERT_TRUE(image) << image.error().message();
  const auto& lut = colormapLut(ColormapKind::Viridis);

  auto count = [&](PixelRect r, auto predicate) {
    int n = 0;
    for (int y = r.y0; y < r.y1; ++y)
      for (int x = r.x0; x < r.x1; ++x) n += predicate(pixelAt(*image, x, y));
    return n;
  };
  // Dark cell (viridis min): white-ish text; its corner stays the cell colour.
  const PixelRect dark = cellRect(view, style, 0, 0);
  EXPECT_EQ(pixelAt(*image, dark.x0 + 2, dark.y0 + 2), lut[0]);
  EXPECT_GT(count(dark, [](Rgb p) { return p.r > 220 && p.g > 220 && p.b > 220; }), 10);
  EXPECT_EQ(count(dark, [](Rgb p) { return p.r < 30 && p.g < 30 && p.b < 30; }), 0);
  // Light cell (viridis max): black-ish text.
  const PixelRect light = cellRect(view, style, 0, 1);
  EXPECT_EQ(pixelAt(*image, light.x1 - 3, light.y1 - 3), lut[255]);
  EXPECT_GT(count(light, [](Rgb p) { return p.r < 40 && p.g < 40 && p.b < 40; }), 10);
  // No labels: the cells are uniform.
  style.cellLabels = false;
  Expected<Image> plain = renderHeatmap(view, style);
  ASSERT_TRUE(plain);
  const PixelRect r = cellRect(view, style, 0, 0);
  for (int y = r.y0; y < r.y1; ++y)
    for (int x = r.x0; x < r.x1; ++x) ASSERT_EQ(pixelAt(*plain, x, y), lut[0]);
}

TEST(Render, MaskedCellLabelKeepsHatchAwayFromText) {
  const MatrixView view = sampleView();
  HeatmapStyle style;
  Expected<Image> image = renderHeatmap(view, style);
  ASSERT_TRUE(image);
  const PixelRect m = cellRect(view, style, 1, 1);
  for (int y = m.y0; y < m.y0 + 4; ++y) {
    for (int x = m.x0; x < m.x1; ++x) {
      const Rgb p = pixelAt(*image, x, y);
      EXPECT_TRUE(p == kMaskedColor || p == kMaskedHatchColor) << p;
    }
  }
  // The "−∞" label is drawn in black on the light grey.
  int dark = 0;
  for (int y = m.y0; y < m.y1; ++y)
    for (int x = m.x0; x < m.x1; ++x) dark += pixelAt(*image, x, y).r < 60;
  EXPECT_GT(dark, 5);
}

TEST(Render, ScaleTwoDoublesEverything) {
  const MatrixView view = sampleView();
  HeatmapStyle one, two;
  two.resolution = 2;
  Expected<Image> a = renderHeatmap(view, one);
  Expected<Image> b = renderHeatmap(view, two);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(b->width, 2 * a->width);
  EXPECT_EQ(b->height, 2 * a->height);
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 3; ++c) {
      const PixelRect p = cellRect(view, one, r, c), q = cellRect(view, two, r, c);
      EXPECT_EQ(q.x0, 2 * p.x0);
      EXPECT_EQ(q.y0, 2 * p.y0);
      EXPECT_EQ(q.x1, 2 * p.x1);
      EXPECT_EQ(q.y1, 2 * p.y1);
    }
  }
  two.cellLabels = false;
  Expected<Image> c = renderHeatmap(view, two);
  ASSERT_TRUE(c);
  EXPECT_EQ(centreOf(*c, cellRect(view, two, 0, 2)), colormapLut(ColormapKind::Viridis)[255]);
}

TEST(Render, CellRectsTileTheGridInOrder) {
  MatrixView view;
  view.values = Matrix::Random(5, 7);
  HeatmapStyle style;
  style.cellGap = 2;
  Expected<Image> image = renderHeatmap(view, style);
  ASSERT_TRUE(image);
  for (int r = 0; r < 5; ++r) {
    for (int c = 0; c < 7; ++c) {
      const PixelRect p = cellRect(view, style, r, c);
      EXPECT_EQ(p.x1 - p.x0, 40);
      EXPECT_GE(p.x0, 0);
      EXPECT_LE(p.x1, image->width);
      EXPECT_LE(p.y1, image->height);
      if (c > 0) {
        EXPECT_EQ(p.x0, cellRect(view, style, r, c - 1).x1 + 2);
      }
      if (r > 0) {
        EXPECT_EQ(p.y0, cellRect(view, style, r - 1, c).y1 + 2);
      }
    }
  }
}

TEST(Render, ConstantMatrixMapsToTheMiddle) {
  MatrixView view;
  view.values = Matrix::Constant(3, 4, 0.25f);
  HeatmapStyle style;
  style.cellLabels = false;
  style.colormap = ColormapKind::Magma;
  Expected<Image> image = renderHeatmap(view, style);
  ASSERT_TRUE(image) << image.error().message();
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c)
      EXPECT_EQ(centreOf(*image, cellRect(view, style, r, c)),
                colormapLut(ColormapKind::Magma)[128]);
}

TEST(Render, FixedRangeClamps) {
  MatrixView view;
  view.values = M({{-5, 0.5f, 5}});
  HeatmapStyle style;
  style.cellLabels = false;
  style.vmin = 0.1f;
  style.vmax = 0.9f;
  Expected<Image> image = renderHeatmap(view, style);
  ASSERT_TRUE(image);
  const auto& lut = colormapLut(ColormapKind::Viridis);
  EXPECT_EQ(centreOf(*image, cellRect(view, style, 0, 0)), lut[0]);
  EXPECT_EQ(centreOf(*image, cellRect(view, style, 0, 1)), lut[128]);
  EXPECT_EQ(centreOf(*image, cellRect(view, style, 0, 2)), lut[255]);
}

TEST(Render, AllMaskedMatrixRenders) {
  MatrixView view;
  view.values = Matrix::Constant(2, 2, -kInf);
  Expected<Image> image = renderHeatmap(view, HeatmapStyle{});
  ASSERT_TRUE(image);
  const PixelRect r = cellRect(view, HeatmapStyle{}, 1, 1);
  const Rgb corner = pixelAt(*image, r.x0 + 3, r.y0 + 1);
  EXPECT_TRUE(corner == kMaskedColor || corner == kMaskedHatchColor);
}

TEST(Render, HugeMatrixIsBoundedAndPeakSurvivesPooling) {
  MatrixView view;
  view.values = Matrix::Zero(3000, 3000);
  view.values(1234, 2345) = 1.0f;  // a single sharp peak
  view.values(17, 5) = 0.5f;
  HeatmapStyle style;
  Expected<Image> image = renderHeatmap(view, style);
  ASSERT_TRUE(image) << image.error().message();
  EXPECT_LE(image->width, 4096);
  EXPECT_LE(image->height, 4096);
  const PixelRect peak = cellRect(view, style, 1234, 2345);
  EXPECT_GE(peak.x1 - peak.x0, 1);
  EXPECT_EQ(pixelAt(*image, peak.x0, peak.y0), colormapLut(ColormapKind::Viridis)[255]);
  const PixelRect mid = cellRect(view, style, 17, 5);
  EXPECT_EQ(pixelAt(*image, mid.x0, mid.y0), colormapLut(ColormapKind::Viridis)[128]);
  const PixelRect zero = cellRect(view, style, 2000, 100);
  EXPECT_EQ(pixelAt(*image, zero.x0, zero.y0), colormapLut(ColormapKind::Viridis)[0]);
}

TEST(Render, LargeMatrixShrinksCellsToAtLeastOnePixel) {
  MatrixView view;
  view.values = Matrix::Zero(600, 40);
  view.values(599, 39) = 1;
  HeatmapStyle style;
  Expected<Image> image = renderHeatmap(view, style);
  ASSERT_TRUE(image);
  const PixelRect a = cellRect(view, style, 0, 0), b = cellRect(view, style, 1, 0);
  EXPECT_EQ(a.x1 - a.x0, 2048 / 600);
  EXPECT_EQ(b.y0, a.y1);  // no gap and no pooling
  EXPECT_LE(image->height, 2048 + 200);
  const PixelRect last = cellRect(view, style, 599, 39);
  EXPECT_EQ(pixelAt(*image, last.x0, last.y0), colormapLut(ColormapKind::Viridis)[255]);
}

TEST(Render, LongThinMatrixPoolsBothAxesAlike) {
  MatrixView view;
  view.values = Matrix::Zero(10, 8000);
  view.values(5, 4321) = 3.0f;
  HeatmapStyle style;
  Expected<Image> image = renderHeatmap(view, style);
  ASSERT_TRUE(image);
  EXPECT_LE(image->width, 4096);
  const PixelRect peak = cellRect(view, style, 5, 4321);
  EXPECT_EQ(pixelAt(*image, peak.x0, peak.y0), colormapLut(ColormapKind::Viridis)[255]);
  // Cells 4320..4323 share one pooled pixel block (factor 4).
  const PixelRect neighbour = cellRect(view, style, 4, 4320);
  EXPECT_EQ(neighbour.x0, peak.x0);
  EXPECT_EQ(neighbour.y0, peak.y0);
}

TEST(Render, PooledGridIsTheThumbnailRule) {
  // The exports' pooled grid and the attention-file thumbnails pool by the one rule of
  // core/attention/aggregate.h (ceiling blocks): 4097 x 5 at the 2048-cell budget pools by
  // 3 into 1366 x 2 blocks, the last row block one row tall and the last column block two.
  MatrixView view;
  view.values = Matrix::Zero(4097, 5);
  view.values(4096, 4) = 2.0f;  // alone in the last (short) block
  view.values(3, 1) = 1.5f;           // block (1, 0)
  view.values(5, 4) = std::nanf("");  // block (1, 1)
  const detail::Layout layout = detail::computeLayout(view, HeatmapStyle{}, nullptr);
  ASSERT_EQ(layout.pool, 3);
  ASSERT_EQ(layout.gridRows, 1366);
  ASSERT_EQ(layout.gridCols, 2);
  Matrix storage;
  const MatrixRef grid = detail::gridValues(view, layout, storage);
  const Matrix thumbnail = maxPool(matrixRef(view.values), 1366, 2);
  ASSERT_EQ(thumbnail.rows(), 1366);
  ASSERT_EQ(thumbnail.cols(), 2);
  EXPECT_EQ(grid(1365, 1), 2.0f);
  EXPECT_EQ(grid(1, 0), 1.5f);
  EXPECT_TRUE(std::isnan(grid(1, 1)));
  for (int r = 0; r < grid.rows; ++r)
    for (int c = 0; c < grid.cols; ++c) {
      if (std::isnan(grid(r, c))) {
        EXPECT_TRUE(std::isnan(thumbnail(r, c)));
      } else {
        EXPECT_EQ(grid(r, c), thumbnail(r, c)) << r << ", " << c;
      }
    }
}

TEST(Render, Deterministic) {
  const MatrixView view = sampleView();
  Expected<Image> a = renderHeatmap(view, HeatmapStyle{});
  Expected<Image> b = renderHeatmap(view, HeatmapStyle{});
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->rgb, b->rgb);
}

TEST(Render, LongColumnLabelsStandUpright) {
  MatrixView shortLabels = sampleView();
  MatrixView longLabels = sampleView();
  longLabels.colLabels = {"a rather long label", "k1", "k2"};
  HeatmapStyle style;
  Expected<Image> a = renderHeatmap(shortLabels, style);
  Expected<Image> b = renderHeatmap(longLabels, style);
  ASSERT_TRUE(a && b);
  EXPECT_GT(b->height, a->height + 60);  // vertical labels need a taller band
  EXPECT_LE(b->width, a->width + 2);     // ... but no wider image
}

TEST(Render, NoDecorationsMeansJustTheGrid) {
  const MatrixView view = sampleView();
  HeatmapStyle style;
  style.title = style.axisLabels = style.colorbar = style.cellLabels = false;
  Expected<Image> image = renderHeatmap(view, style);
  ASSERT_TRUE(image);
  const PixelRect first = cellRect(view, style, 0, 0), last = cellRect(view, style, 2, 2);
  EXPECT_EQ(image->width, last.x1 + first.x0);  // equal margins
  EXPECT_EQ(image->height, last.y1 + first.y0);
}

TEST(Render, NonAsciiAndInvalidUtf8LabelsRender) {
  MatrixView view = sampleView();
  view.rowLabels = {"é", "\xff\xfe", "日本"};
  Expected<Image> image = renderHeatmap(view, HeatmapStyle{});
  EXPECT_TRUE(image);
}

// ---------------------------------------------------------------------------------------
// SVG and CSV
// ---------------------------------------------------------------------------------------

TEST(Export, SvgHasColoursEscapedLabelsAndHatch) {
  MatrixView view = sampleView();
  view.rowLabels = {"<b>", "Tom & \"Jerry\"", "it's"};
  view.title = "a < b";
  const fs::path path = tempDir() / "view.svg";
  HeatmapStyle style;
  ASSERT_TRUE(exportMatrix(view, style, path.string()));
  const std::string svg = readFile(path);
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find("<svg xmlns=\"http://www.w3.org/2000/svg\""), std::string::npos);
  Expected<Image> image = renderHeatmap(view, style);
  ASSERT_TRUE(image);
  EXPECT_NE(svg.find("width=\"" + std::to_string(image->width) + "\" height=\"" +
                     std::to_string(image->height) + "\""),
            std::string::npos);
  EXPECT_NE(svg.find("fill=\"#440154\""), std::string::npos);  // viridis[0]
  EXPECT_NE(svg.find("fill=\"#fde725\""), std::string::npos);  // viridis[255]
  EXPECT_NE(svg.find("fill=\"#ff00ff\""), std::string::npos);  // NaN
  EXPECT_NE(svg.find("fill=\"url(#masked)\""), std::string::npos);
  EXPECT_NE(svg.find("<pattern id=\"masked\""), std::string::npos);
  EXPECT_NE(svg.find("DejaVu Sans"), std::string::npos);
  EXPECT_NE(svg.find("&lt;b&gt;"), std::string::npos);
  EXPECT_NE(svg.find("Tom &amp; &quot;Jerry&quot;"), std::string::npos);
  EXPECT_NE(svg.find("it&apos;s"), std::string::npos);
  EXPECT_NE(svg.find("a &lt; b"), std::string::npos);
  EXPECT_EQ(svg.find("<b>"), std::string::npos);
  EXPECT_NE(svg.find("\u2212\u221E"), std::string::npos);  // masked cell label
  // The cell rect is where the PNG draws it.
  const PixelRect r = cellRect(view, style, 0, 0);
  EXPECT_NE(svg.find("<rect x=\"" + std::to_string(r.x0) + "\" y=\"" + std::to_string(r.y0) + "\""),
            std::string::npos);
}

TEST(Export, CsvExactContent) {
  MatrixView view;
  view.values = M({{0.1f, -kInf}, {1.0f / 3.0f, 927.0f}});
  view.rowLabels = {"the, first", "say \"hi\""};
  view.colLabels = {"a", "b\nc"};
  const fs::path path = tempDir() / "view.csv";
  ASSERT_TRUE(exportMatrix(view, HeatmapStyle{}, path.string()));
  EXPECT_EQ(readFile(path),
            ",a,\"b\nc\"\n"
            "\"the, first\",0.100000001,-inf\n"
            "\"say \"\"hi\"\"\",0.333333343,927\n");
}

TEST(Export, CsvFloatsRoundTrip) {
  MatrixView view;
  view.values = Matrix::Random(4, 4) * 1000.0f;
  view.rowLabels = {"0", "1", "2", "3"};
  view.colLabels = {"0", "1", "2", "3"};
  const fs::path path = tempDir() / "roundtrip.csv";
  ASSERT_TRUE(exportMatrix(view, HeatmapStyle{}, path.string()));
  std::istringstream in(readFile(path));
  std::string line;
  std::getline(in, line);
  for (int r = 0; r < 4; ++r) {
    std::getline(in, line);
    std::istringstream cells(line);
    std::string cell;
    std::getline(cells, cell, ',');
    for (int c = 0; c < 4; ++c) {
      std::getline(cells, cell, ',');
      EXPECT_EQ(std::strtof(cell.c_str(), nullptr), view.values(r, c));
    }
  }
}

TEST(Export, UppercaseExtensionAndNoTempLeftBehind) {
  const fs::path dir = tempDir() / "atomic";
  fs::remove_all(dir);
  fs::create_directories(dir);
  ASSERT_TRUE(exportMatrix(sampleView(), HeatmapStyle{}, (dir / "A.PNG").string()));
  ASSERT_TRUE(exportMatrix(sampleView(), HeatmapStyle{}, (dir / "A.PNG").string()));  // replace
  int files = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    ++files;
    EXPECT_EQ(entry.path().filename(), "A.PNG");
  }
  EXPECT_EQ(files, 1);
  EXPECT_GT(readPng(dir / "A.PNG").width, 0);
}

// ---------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------

TEST(Errors, UnsupportedExtension) {
  const std::string path = (tempDir() / "out.jpg").string();
  Status s = exportMatrix(sampleView(), HeatmapStyle{}, path);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().file, path);
  EXPECT_EQ(s.error().field, "out");
  EXPECT_EQ(s.error().problem, "unsupported extension '.jpg' (use .png, .svg or .csv)");
  EXPECT_FALSE(fs::exists(path));

  Status none = exportMatrix(sampleView(), HeatmapStyle{}, (tempDir() / "noext").string());
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().field, "out");
}

TEST(Errors, UnwritableDirectoryNamesTheFile) {
  for (const char* name : {"/nonexistent-attnscope-dir/x.png", "/nonexistent-attnscope-dir/x.svg",
                           "/nonexistent-attnscope-dir/x.csv"}) {
    Status s = exportMatrix(sampleView(), HeatmapStyle{}, name);
    ASSERT_FALSE(s) << name;
    EXPECT_EQ(s.error().file, name);
    EXPECT_NE(s.error().message().find(name), std::string::npos);
    EXPECT_NE(s.error().problem.find("No such file"), std::string::npos) << s.error().problem;
  }
}

TEST(Errors, ScaleOutOfRange) {
  for (int scale : {0, 9, -1}) {
    HeatmapStyle style;
    style.resolution = scale;
    const std::string path = (tempDir() / "scale.png").string();
    Status s = exportMatrix(sampleView(), style, path);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().field, "scale");
    EXPECT_EQ(s.error().file, path);
    Expected<Image> image = renderHeatmap(sampleView(), style);
    ASSERT_FALSE(image);
    EXPECT_EQ(image.error().field, "scale");
    const PixelRect r = cellRect(sampleView(), style, 0, 0);
    EXPECT_EQ(r.x1 - r.x0, 0);
  }
}

TEST(Errors, HugeRasterIsRefusedButSvgWorks) {
  MatrixView view;
  view.values = Matrix::Zero(512, 512);
  HeatmapStyle style;
  style.resolution = 8;
  Expected<Image> image = renderHeatmap(view, style);
  ASSERT_FALSE(image);
  EXPECT_EQ(image.error().field, "scale");
  EXPECT_NE(image.error().problem.find("megapixels"), std::string::npos);
  const std::string png = (tempDir() / "huge.png").string();
  Status s = exportMatrix(view, style, png);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().file, png);
  EXPECT_TRUE(exportMatrix(view, style, (tempDir() / "huge.svg").string()));
}

TEST(Errors, OtherStyleFields) {
  HeatmapStyle style;
  style.cellSize = 0;
  EXPECT_EQ(renderHeatmap(sampleView(), style).error().field, "cellSize");
  style = {};
  style.cellGap = 9;
  EXPECT_EQ(renderHeatmap(sampleView(), style).error().field, "cellGap");
  style = {};
  style.digits = 10;
  EXPECT_EQ(renderHeatmap(sampleView(), style).error().field, "digits");
  style.digits = 0;
  EXPECT_EQ(renderHeatmap(sampleView(), style).error().field, "digits");
  style = {};
  style.vmin = 2.0f;
  style.vmax = 1.0f;
  EXPECT_EQ(renderHeatmap(sampleView(), style).error().field, "vmin");
  style.vmax = kInf;
  EXPECT_EQ(renderHeatmap(sampleView(), style).error().field, "vmin");
}

TEST(Errors, EmptyMatrix) {
  MatrixView view;
  view.values = Matrix(0, 3);
  for (const char* name : {"empty.png", "empty.svg", "empty.csv"}) {
    const std::string path = (tempDir() / name).string();
    Status s = exportMatrix(view, HeatmapStyle{}, path);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().field, "matrix");
    EXPECT_EQ(s.error().file, path);
  }
  Expected<Image> image = renderHeatmap(view, HeatmapStyle{});
  ASSERT_FALSE(image);
  EXPECT_EQ(image.error().field, "matrix");
}

TEST(Errors, MissingFontNamesItAndThePackage) {
  HeatmapStyle style;
  style.fontPath = "/nonexistent/DejaVuSans.ttf";
  Expected<Image> image = renderHeatmap(sampleView(), style);
  ASSERT_FALSE(image);
  EXPECT_NE(image.error().message().find("/nonexistent/DejaVuSans.ttf"), std::string::npos);
  EXPECT_NE(image.error().message().find("install fonts-dejavu-core"), std::string::npos);
  const std::string path = (tempDir() / "nofont.png").string();
  Status s = exportMatrix(sampleView(), style, path);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().file, path);
  EXPECT_NE(s.error().problem.find("install fonts-dejavu-core"), std::string::npos);
  // CSV needs no font.
  EXPECT_TRUE(exportMatrix(sampleView(), style, (tempDir() / "nofont.csv").string()));
}

// ---------------------------------------------------------------------------------------
// Per-row ranges and the log scale (render/color_scale.h): the exports follow them
// ---------------------------------------------------------------------------------------

TEST(ColorScaleExport, PerRowPngColoursEachRowFromBottomToTop) {
  const Matrix values = M({{1, 2, 3}, {100, 300, 200}});
  MatrixView view{values, {"a", "b"}, {"x", "y", "z"}, "rows", "", "", "", {}};
  HeatmapStyle style;
  style.cellLabels = false;
  style.range = RangeMode::Row;
  Expected<Image> image = renderHeatmap(view, style);
  ASSERT_TRUE(image);
  const auto& lut = colormapLut(style.colormap);
  EXPECT_EQ(centreOf(*image, cellRect(view, style, 0, 0)), lut[0]);
  EXPECT_EQ(centreOf(*image, cellRect(view, style, 0, 1)), lut[128]);  // round(0.5 · 255)
  EXPECT_EQ(centreOf(*image, cellRect(view, style, 0, 2)), lut[255]);
  EXPECT_EQ(centreOf(*image, cellRect(view, style, 1, 0)), lut[0]);  // 100: row 1's min
  EXPECT_EQ(centreOf(*image, cellRect(view, style, 1, 1)), lut[255]);
  EXPECT_EQ(centreOf(*image, cellRect(view, style, 1, 2)), lut[128]);
  // The same matrix globally: row 0 is all at the bottom.
  style.range = RangeMode::MinMax;
  Expected<Image> global = renderHeatmap(view, style);
  ASSERT_TRUE(global);
  EXPECT_EQ(centreOf(*global, cellRect(view, style, 0, 2)),
            lut[static_cast<int>(std::lround(2.0 / 299 * 255))]);
}

TEST(ColorScaleExport, LogPngAndSvgTicksAtDecades) {
  const Matrix values = M({{1e-4f, 1e-3f}, {1e-2f, 1.0f}});
  MatrixView view{values, {"a", "b"}, {"x", "y"}, "weights", "", "", "", {}};
  HeatmapStyle style;
  style.cellLabels = false;
  style.colorScale = ColorScaleKind::Log;
  Expected<Image> image = renderHeatmap(view, style);
  ASSERT_TRUE(image);
  const auto& lut = colormapLut(style.colormap);
  EXPECT_EQ(centreOf(*image, cellRect(view, style, 0, 0)), lut[0]);
  EXPECT_EQ(centreOf(*image, cellRect(view, style, 0, 1)), lut[64]);   // 0.25 · 255 = 63.75
  EXPECT_EQ(centreOf(*image, cellRect(view, style, 1, 0)), lut[128]);  // 0.5
  EXPECT_EQ(centreOf(*image, cellRect(view, style, 1, 1)), lut[255]);
  // The SVG carries the decade ticks and says what the scale is.
  const fs::path path = tempDir() / "log_ticks.svg";
  ASSERT_TRUE(exportMatrix(view, style, path.string()));
  const std::string svg = readFile(path);
  for (const char* tick : {">1e-4<", ">0.001<", ">0.01<", ">0.1<", ">1<"})
    EXPECT_NE(svg.find(tick), std::string::npos) << tick;
  EXPECT_NE(svg.find("log\xE2\x82\x81\xE2\x82\x80 scale"), std::string::npos);
}

}  // namespace
}  // namespace test_render_render
}  // namespace attn::io
