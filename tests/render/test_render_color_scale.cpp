// Tests of render/color_scale: per-row ranges and the log scale, as pure functions (worked
// values). The PNG / SVG exports that follow them are tested in test_render_render.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <string_view>

#include "render/color_scale.h"
#include "core/scenario/view_options.h"
#include "render/heatmap_render.h"
#include "tests/support/test_core_util.h"

namespace attn::io {
namespace test_render_color_scale {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

using attn::testing::M;

TEST(ColorScale, NamesRoundTrip) {
  for (RangeMode mode : {RangeMode::Auto, RangeMode::MinMax, RangeMode::Row, RangeMode::Fixed})
    EXPECT_EQ(parseRangeMode(toString(mode)), mode);
  EXPECT_EQ(parseRangeMode("global"), RangeMode::Auto);  // the old default's name
  EXPECT_EQ(toString(RangeMode::MinMax), "minmax");
  EXPECT_EQ(toString(RangeRule::Symmetric), "symmetric");
  for (ColorScaleKind kind : {ColorScaleKind::Linear, ColorScaleKind::Log})
    EXPECT_EQ(parseColorScaleKind(toString(kind)), kind);
  EXPECT_EQ(toString(RangeMode::Row), "row");
  EXPECT_EQ(toString(ColorScaleKind::Log), "log");
  EXPECT_FALSE(parseRangeMode("rows"));
  EXPECT_FALSE(parseColorScaleKind("log10"));
}

TEST(ColorScale, LogRangeFloorIsTheSmallestPositiveAtMostFourDecadesDown) {
  // Smallest positive 0.01 is above 1 · 1e-4: it is the floor.
  const Matrix a = M({{0.01f, 0.1f, 1.0f}});
  ValueRange r = logColorRange(matrixRef(a), std::nullopt, std::nullopt);
  EXPECT_FLOAT_EQ(r.lo, 0.01f);
  EXPECT_FLOAT_EQ(r.hi, 1.0f);
  // An underflowed 1e-30 and a zero do not drag the floor down: top · 1e-4.
  const Matrix b = M({{0.0f, 1e-30f, 0.5f}, {-kInf, 0.25f, 0.25f}});
  r = logColorRange(matrixRef(b), std::nullopt, std::nullopt);
  EXPECT_FLOAT_EQ(r.lo, 0.5f * 1e-4f);
  EXPECT_FLOAT_EQ(r.hi, 0.5f);
  // Fixed ends win when positive; a non-positive vmin falls back to the rule.
  r = logColorRange(matrixRef(a), 1e-3f, 2.0f);
  EXPECT_FLOAT_EQ(r.lo, 1e-3f);
  EXPECT_FLOAT_EQ(r.hi, 2.0f);
  r = logColorRange(matrixRef(a), 0.0f, std::nullopt);
  EXPECT_FLOAT_EQ(r.lo, 0.01f);
  // Nothing positive: a harmless default, always 0 < lo <= hi.
  const Matrix c = M({{0.0f, -1.0f}});
  r = logColorRange(matrixRef(c), std::nullopt, std::nullopt);
  EXPECT_GT(r.lo, 0.0f);
  EXPECT_LE(r.lo, r.hi);
}

TEST(ColorScale, LogPositionsAreEvenlySpacedDecades) {
  const ValueRange r{1e-4f, 1.0f};  // four decades
  EXPECT_NEAR(logColorPosition(1e-4f, r), 0.0f, 1e-6f);
  EXPECT_NEAR(logColorPosition(1e-3f, r), 0.25f, 1e-5f);
  EXPECT_NEAR(logColorPosition(1e-2f, r), 0.5f, 1e-5f);
  EXPECT_NEAR(logColorPosition(0.1f, r), 0.75f, 1e-5f);
  EXPECT_NEAR(logColorPosition(1.0f, r), 1.0f, 1e-6f);
  // sqrt(10) · 1e-3 is half way between the 1e-3 and 1e-2 ticks.
  EXPECT_NEAR(logColorPosition(std::sqrt(10.0f) * 1e-3f, r), 0.375f, 1e-5f);
  // Below the floor, zero and negative values sit at the bottom; above the top at the top.
  EXPECT_EQ(logColorPosition(1e-6f, r), 0.0f);
  EXPECT_EQ(logColorPosition(0.0f, r), 0.0f);
  EXPECT_EQ(logColorPosition(-3.0f, r), 0.0f);
  EXPECT_EQ(logColorPosition(5.0f, r), 1.0f);
  // A one-value range: positive values in the middle, like a constant linear matrix.
  EXPECT_EQ(logColorPosition(0.5f, ValueRange{0.5f, 0.5f}), 0.5f);
}

TEST(ColorScale, PerRowPositionsSpanEachRowAndKeepSpecialValues) {
  ColorNormalization n;
  n.range = RangeMode::Row;
  const Matrix values = M({{1, 2, 3}, {10, 30, 20}, {5, 5, 5}, {-kInf, 0.5f, kNan}, {0, kInf, 1}});
  const Matrix t = colorPositions(matrixRef(values), n);
  ASSERT_EQ(t.rows(), 5);
  ASSERT_EQ(t.cols(), 3);
  EXPECT_FLOAT_EQ(t(0, 0), 0.0f);
  EXPECT_FLOAT_EQ(t(0, 1), 0.5f);
  EXPECT_FLOAT_EQ(t(0, 2), 1.0f);
  EXPECT_FLOAT_EQ(t(1, 0), 0.0f);  // 10 is row 1's minimum, whatever row 0 holds
  EXPECT_FLOAT_EQ(t(1, 1), 1.0f);
  EXPECT_FLOAT_EQ(t(1, 2), 0.5f);
  for (int c = 0; c < 3; ++c) EXPECT_FLOAT_EQ(t(2, c), 0.5f);  // a constant row: the middle
  EXPECT_EQ(t(3, 0), -kInf);                                   // masked stays masked
  EXPECT_FLOAT_EQ(t(3, 1), 0.5f);                              // the row's only finite value
  EXPECT_TRUE(std::isnan(t(3, 2)));
  EXPECT_FLOAT_EQ(t(4, 0), 0.0f);  // finite range 0..1 (inf ignored), inf at the top
  EXPECT_FLOAT_EQ(t(4, 1), 1.0f);
  EXPECT_FLOAT_EQ(t(4, 2), 1.0f);
  EXPECT_FLOAT_EQ(normalizationRange(matrixRef(values), 1, n).lo, 10.0f);
  EXPECT_FLOAT_EQ(normalizationRange(matrixRef(values), 1, n).hi, 30.0f);
}

TEST(ColorScale, PerRowCentredOnZeroForSignedMatrices) {
  ColorNormalization n;
  n.range = RangeMode::Row;
  n.centreZero = true;
  const Matrix values = M({{-1, 0, 2}, {-4, 1, 0}});
  const Matrix t = colorPositions(matrixRef(values), n);
  // Row 0: [-2, 2]; row 1: [-4, 4]. 0 is the middle of each row.
  EXPECT_FLOAT_EQ(t(0, 0), 0.25f);
  EXPECT_FLOAT_EQ(t(0, 1), 0.5f);
  EXPECT_FLOAT_EQ(t(0, 2), 1.0f);
  EXPECT_FLOAT_EQ(t(1, 0), 0.0f);
  EXPECT_FLOAT_EQ(t(1, 1), 0.625f);
  EXPECT_FLOAT_EQ(t(1, 2), 0.5f);
}

TEST(ColorScale, GlobalLogAndFixedLog) {
  ColorNormalization n;
  n.colorScale = ColorScaleKind::Log;
  const Matrix values = M({{1e-4f, 1e-2f, 1.0f}, {0.0f, -kInf, 1e-3f}});
  Matrix t = colorPositions(matrixRef(values), n);
  EXPECT_NEAR(t(0, 0), 0.0f, 1e-6f);
  EXPECT_NEAR(t(0, 1), 0.5f, 1e-5f);
  EXPECT_NEAR(t(0, 2), 1.0f, 1e-6f);
  EXPECT_EQ(t(1, 0), 0.0f);   // a zero weight: the bottom of the map ...
  EXPECT_EQ(t(1, 1), -kInf);  // ... a masked cell stays hatched, not the same colour
  EXPECT_NEAR(t(1, 2), 0.25f, 1e-5f);
  // Fixed range 1e-3 .. 1 on a log scale: three decades.
  n.range = RangeMode::Fixed;
  n.vmin = 1e-3f;
  n.vmax = 1.0f;
  t = colorPositions(matrixRef(values), n);
  EXPECT_NEAR(t(0, 1), 1.0f / 3.0f, 1e-5f);
  EXPECT_EQ(t(0, 0), 0.0f);  // below the fixed floor: clamped
  // The linear global rule is io::colorPosition over io::colorRange.
  ColorNormalization linear;
  const Matrix s = colorPositions(matrixRef(values), linear);
  EXPECT_FLOAT_EQ(s(0, 1), colorPosition(1e-2f, ValueRange{0.0f, 1.0f}));
  EXPECT_FALSE(needsPositions(linear));
  EXPECT_TRUE(needsPositions(n));
}

TEST(ColorScale, DecadeTicksAndRowTicks) {
  const std::vector<ColorbarTick> ticks = logDecadeTicks(ValueRange{1e-4f, 1.0f});
  ASSERT_EQ(ticks.size(), 5u);
  const char* texts[] = {"1e-4", "0.001", "0.01", "0.1", "1"};
  for (int i = 0; i < 5; ++i) {
    EXPECT_NEAR(ticks[i].position, 0.25f * i, 1e-5f) << i;
    EXPECT_EQ(ticks[i].text, texts[i]);
  }
  // 0.05 .. 0.5: only 0.1 inside.
  const std::vector<ColorbarTick> inside = logDecadeTicks(ValueRange{0.05f, 0.5f});
  ASSERT_EQ(inside.size(), 1u);
  EXPECT_EQ(inside[0].text, "0.1");
  EXPECT_NEAR(inside[0].position, std::log10(2.0f), 1e-5f);  // log(0.1/0.05) / log(10)
  // 0.2 .. 0.5: no decade, the two ends.
  const std::vector<ColorbarTick> ends = logDecadeTicks(ValueRange{0.2f, 0.5f});
  ASSERT_EQ(ends.size(), 2u);
  EXPECT_EQ(ends[0].text, "0.2");
  EXPECT_EQ(ends[1].text, "0.5");
  const std::vector<ColorbarTick> row = rowRangeTicks(ColorScaleKind::Linear);
  ASSERT_EQ(row.size(), 2u);
  EXPECT_EQ(row[0].text, "row min");
  EXPECT_EQ(row[1].text, "row max");
  ColorNormalization perRow;
  perRow.range = RangeMode::Row;
  EXPECT_EQ(normalizationCaption(perRow, {}), "per row: row min \xE2\x86\x92 row max");
  EXPECT_EQ(normalizationCaption(ColorNormalization{}, {}), "");
}

// Issue 18: the default range rule by meaning, and the user's choices.
TEST(RangeRules, WeightsAreFixedZeroToOneSignedAreSymmetricOthersMinMax) {
  ColorNormalization n;  // RangeMode::Auto
  n.probability = true;
  // Eight heads at T = 100: weights between 0.082 and 0.084 stay near the bottom.
  const ValueRange flat{0.082f, 0.084f};
  EXPECT_EQ(rangeRule(flat, n), RangeRule::Fixed);
  ValueRange r = ruleRange(flat, n);
  EXPECT_EQ(r.lo, 0.0f);
  EXPECT_EQ(r.hi, 1.0f);
  EXPECT_NEAR(colorPosition(0.084f, r), 0.084f, 1e-6f);
  // A single weight of exactly 1 is at the top of the map, not in the middle.
  r = ruleRange(ValueRange{1.0f, 1.0f}, n);
  EXPECT_EQ(colorPosition(1.0f, r), 1.0f);
  // An "attention" tensor that is not a probability (raw scores in a file) falls through.
  EXPECT_EQ(rangeRule(ValueRange{-3.0f, 5.0f}, n), RangeRule::MinMax);
  n.centreZero = true;
  EXPECT_EQ(rangeRule(ValueRange{-3.0f, 5.0f}, n), RangeRule::Symmetric);
  // Signed: symmetric about 0; a constant 2 sits at the top, a constant 0 in the middle.
  ColorNormalization s;
  s.centreZero = true;
  EXPECT_EQ(rangeRule(ValueRange{-0.5f, 2.0f}, s), RangeRule::Symmetric);
  r = ruleRange(ValueRange{-0.5f, 2.0f}, s);
  EXPECT_EQ(r.lo, -2.0f);
  EXPECT_EQ(r.hi, 2.0f);
  EXPECT_EQ(colorPosition(2.0f, ruleRange(ValueRange{2.0f, 2.0f}, s)), 1.0f);
  EXPECT_EQ(colorPosition(0.0f, ruleRange(ValueRange{0.0f, 0.0f}, s)), 0.5f);
  // Neither: its own min..max.
  EXPECT_EQ(rangeRule(ValueRange{3.0f, 7.0f}, ColorNormalization{}), RangeRule::MinMax);
  // The user's choices win over the meaning.
  n.range = RangeMode::MinMax;
  EXPECT_EQ(rangeRule(flat, n), RangeRule::MinMax);
  r = ruleRange(flat, n);
  EXPECT_EQ(r.lo, 0.082f);
  EXPECT_EQ(r.hi, 0.084f);
  n.range = RangeMode::Row;
  EXPECT_EQ(rangeRule(flat, n), RangeRule::Row);
  n.range = RangeMode::Auto;
  n.vmin = 0.0f;
  n.vmax = 0.5f;
  EXPECT_EQ(rangeRule(flat, n), RangeRule::Fixed);
  EXPECT_EQ(ruleRange(flat, n).hi, 0.5f);
}

TEST(RangeRules, CaptionsNameTheRule) {
  EXPECT_EQ(rangeRuleCaption(RangeRule::Fixed, {0, 1}), "fixed 0\xE2\x80\x93" "1");
  EXPECT_EQ(rangeRuleCaption(RangeRule::Symmetric, {-2.5f, 2.5f}), "symmetric \xC2\xB1" "2.5");
  EXPECT_EQ(rangeRuleCaption(RangeRule::MinMax, {3, 7}), "min\xE2\x80\x93max");
  EXPECT_EQ(rangeRuleCaption(RangeRule::Row, {0, 1}), "per row");
}

TEST(RangeRules, TinyValuesPrintRatherThanVanish) {
  // With room for 4 characters 8e-33 prints "0" (what it rounds to), never blank next to a
  // "0.5"; with room for 6 it keeps its own text.
  auto fits4 = [](const std::string& text) { return text.size() <= 4; };
  EXPECT_EQ(fittedCellLabel(8e-33f, 3, fits4), std::optional<std::string>("0"));
  auto fits6 = [](const std::string& text) { return text.size() <= 6; };
  EXPECT_EQ(fittedCellLabel(8e-33f, 3, fits6), std::optional<std::string>("8e-33"));
  auto fits3 = [](const std::string& text) { return text.size() <= 3; };
  EXPECT_EQ(fittedCellLabel(0.5f, 3, fits3), std::optional<std::string>("0.5"));
  // A cell whose scientific text does not fit (here: no room for an exponent) says "<0.001".
  auto plain6 = [](const std::string& text) {
    return text.size() <= 6 && text.find('e') == std::string::npos;
  };
  EXPECT_EQ(fittedCellLabel(2e-5f, 3, plain6), std::optional<std::string>("<0.001"));
  EXPECT_EQ(fittedCellLabel(-2e-5f, 3, plain6), std::optional<std::string>("0"));
  auto none = [](const std::string&) { return false; };
  EXPECT_FALSE(fittedCellLabel(8e-33f, 3, none));
  // Small but not tiny: 0.0012 needs "0.001" (5 characters) at one digit; where only "0.12"
  // fits (4) it prints what it rounds to at two decimals, "0", not a blank. So does a
  // negative one, and 0.0096 rounds to "0.01".
  EXPECT_EQ(fittedCellLabel(0.0012f, 3, fits4), std::optional<std::string>("0"));
  auto fits5 = [](const std::string& text) { return text.size() <= 5; };
  EXPECT_EQ(fittedCellLabel(0.0012f, 3, fits5), std::optional<std::string>("0.001"));
  EXPECT_EQ(fittedCellLabel(-0.0012f, 3, fits4), std::optional<std::string>("0"));
  EXPECT_EQ(fittedCellLabel(0.0096f, 3, fits4), std::optional<std::string>("0.01"));
  EXPECT_EQ(fittedCellLabel(0.0456f, 3, fits3), std::optional<std::string>("0"));
  // Without rounding to fewer decimals (the widget tries a smaller font first), 0.397 in a
  // one-character cell has no label rather than "0"; a value below 0.0005 still reads "0".
  auto fits1 = [](const std::string& text) { return text.size() <= 1; };
  EXPECT_EQ(fittedCellLabel(0.397f, 3, fits1), std::optional<std::string>("0"));
  EXPECT_FALSE(fittedCellLabel(0.397f, 3, fits1, false));
  EXPECT_EQ(fittedCellLabel(2e-4f, 3, fits1, false), std::optional<std::string>("0"));
}

}  // namespace
}  // namespace test_render_color_scale
}  // namespace attn::io

// =======================================================================================
// The colormap table and the colour rule (one home each)
// =======================================================================================

namespace attn::io {
namespace test_render_color_scale {
namespace {

TEST(ColormapTable, OneEntryPerMapInEnumOrderWithTheGeneratedOnesFirst) {
  ASSERT_EQ(std::size(kColormaps), std::size(kAllColormaps));
  std::set<std::string_view> names;
  int generated = 0;
  bool computedSeen = false;
  for (std::size_t i = 0; i < std::size(kColormaps); ++i) {
    const ColormapInfo& map = kColormaps[i];
    EXPECT_EQ(static_cast<std::size_t>(map.kind), i) << map.name;
    EXPECT_EQ(kAllColormaps[i], map.kind) << map.name;
    EXPECT_EQ(toString(map.kind), map.name);
    EXPECT_EQ(parseColormapKind(map.name), map.kind);
    EXPECT_EQ(isDiverging(map.kind), map.diverging) << map.name;
    EXPECT_FALSE(map.description.empty()) << map.name;
    EXPECT_TRUE(names.insert(map.name).second) << "twice: " << map.name;
    if (map.source.empty()) {
      computedSeen = true;
    } else {
      EXPECT_FALSE(computedSeen) << map.name << ": a generated map after a computed one";
      ++generated;
    }
  }
  EXPECT_EQ(generated, 7);  // render/colormap_data.inc's tables
  EXPECT_EQ(colormapInfo(ColormapKind::Greys).source, "Greys");
  EXPECT_TRUE(colormapInfo(ColormapKind::RdBu).source.empty());
  EXPECT_TRUE(colormapInfo(ColormapKind::RdBu).diverging);
  // The generated tables are the matplotlib maps' (entry 255 = the top of the map).
  EXPECT_EQ(colormapLut(ColormapKind::Greys)[0], (Rgb{255, 255, 255}));
  EXPECT_EQ(colormapLut(ColormapKind::Greys)[255], (Rgb{0, 0, 0}));
}

TEST(ColorRule, AFixedEndMakesTheRangeFixedAndTheRestIsKept) {
  ColorRule rule;
  rule.range = RangeMode::Row;
  rule.colorScale = ColorScaleKind::Log;
  rule.centreZero = true;
  EXPECT_EQ(normalizationOf(rule).range, RangeMode::Row);
  rule.vmax = 2.0f;
  const ColorNormalization n = normalizationOf(rule);
  EXPECT_EQ(n.range, RangeMode::Fixed);
  EXPECT_EQ(n.colorScale, ColorScaleKind::Log);
  EXPECT_EQ(n.vmax, 2.0f);
  EXPECT_FALSE(n.vmin.has_value());
  EXPECT_TRUE(n.centreZero);
}

// A HeatmapStyle given a whole ColorRule (as the window's export menu hands it the screen's)
// colours the file by that rule: per row on magma, each row from its own min to its max.
TEST(ColorRule, AStyleTakesTheRuleWholeAndColoursByIt) {
  const Matrix values = M({{0.0f, 1.0f, 2.0f}, {10.0f, 20.0f, 40.0f}});
  const MatrixView view{values, {"a", "b"}, {"x", "y", "z"}, "rows", "", "", "", {}};
  ColorRule rule;
  rule.colormap = ColormapKind::Magma;
  rule.range = RangeMode::Row;
  HeatmapStyle style;
  static_cast<ColorRule&>(style) = rule;
  style.cellLabels = false;
  Expected<Image> image = renderHeatmap(view, style);
  ASSERT_TRUE(image) << image.error().message();
  auto centre = [&](int row, int col) {
    const PixelRect r = cellRect(view, style, row, col);
    const std::size_t at =
        (static_cast<std::size_t>((r.y0 + r.y1) / 2) * image->width + (r.x0 + r.x1) / 2) * 3;
    return Rgb{image->rgb[at], image->rgb[at + 1], image->rgb[at + 2]};
  };
  // Row 1 spans 10..40: 20 lies at 1/3 of the map; row 0 spans 0..2: 1 at the middle.
  EXPECT_EQ(centre(1, 1), colormapColor(ColormapKind::Magma, 1.0f / 3.0f));
  EXPECT_EQ(centre(1, 2), colormapColor(ColormapKind::Magma, 1.0f));
  EXPECT_EQ(centre(0, 1), colormapColor(ColormapKind::Magma, 0.5f));
  EXPECT_EQ(centre(0, 0), colormapColor(ColormapKind::Magma, 0.0f));
}

}  // namespace
}  // namespace test_render_color_scale
}  // namespace attn::io
