// How a heatmap's values become positions on its colour map, beyond the one global linear
// range of io::colorRange: a range per row, and a log10 scale (weights at 512 tokens are
// nearly all close to 0 on a linear map). Pure functions, shared by the screen widget (which
// uploads the positions instead of the values) and the PNG/SVG exports. No GL, no UI.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/tensor_view.h"
#include "core/base/types.h"
#include "render/heatmap_render.h"

namespace attn::io {


// The log scale's floor relative to the largest value: the bottom of the map is
// max(smallest positive value, largest value · kLogFloorRatio), so that a few underflowed
// 1e-30 weights do not squeeze the interesting decades into the top of the map.
inline constexpr float kLogFloorRatio = 1e-4f;

// Everything that decides where a value lies on the map: ColorNormalization, the part of the
// colour rule (io::ColorRule) without the map, in render/heatmap_render.h.

// The rule in force for one heatmap, as its colour bar and the layout dump name it.
enum class RangeRule { Fixed, Symmetric, MinMax, Row };
std::string_view toString(RangeRule rule);  // "fixed", "symmetric", "minmax", "row"

// The rule `normalization` applies to a matrix whose finite values span `finite` (nullopt:
// none finite): Row for RangeMode::Row; Fixed for RangeMode::Fixed or given vmin / vmax;
// MinMax for RangeMode::MinMax; under RangeMode::Auto, Fixed (0..1) for probabilities whose
// finite values all lie in [0, 1] (an imported tensor that is not one falls through),
// Symmetric for signed matrices (centreZero), else MinMax.
RangeRule rangeRule(std::optional<ValueRange> finite, const ColorNormalization& normalization);

// The linear colour range of a whole matrix by rangeRule (Row: the matrix's min..max, as
// a fallback; the cells are coloured per row by colorPositions): Fixed {vmin, vmax} (0..1
// for an Auto probability, io::colorRange with one end given), Symmetric [-m, m] with m the
// largest |finite value|, MinMax the finite min..max (0..1 when nothing is finite).
// A constant matrix keeps its value's place under Fixed and Symmetric (0.5 under MinMax).
ValueRange ruleRange(std::optional<ValueRange> finite, const ColorNormalization& normalization);

// True when positions differ from io::colorPosition over one linear range (per-row ranges or
// the log scale): the widget then uploads colorPositions() instead of the values.
bool needsPositions(const ColorNormalization& normalization);

// The log colour range of `values` (or of one row): [floor, top] with top = the largest finite
// value (or vmax) and floor = vmin when given and > 0, else max(smallest positive finite
// value, top · kLogFloorRatio). When no value is > 0 the range is {kLogFloorRatio, 1}.
// Always 0 < lo <= hi.
ValueRange logColorRange(MatrixRef values, std::optional<float> vmin, std::optional<float> vmax);
// Where a finite value lies on a log range, in [0, 1]: 0 for v <= lo (zero and negative
// values included), 1 for v >= hi, 0.5 when lo == hi and v > 0.
float logColorPosition(float value, ValueRange range);

// The colour range of row `row` of `values` (one row of a matrix in RangeMode::Row, or the
// whole matrix otherwise: pass row = -1). Linear: ruleRange of the finite values (per row:
// the row's min..max, centred for signed matrices); log: logColorRange (top 1 for an Auto
// probability).
ValueRange normalizationRange(MatrixRef values, int row, const ColorNormalization& normalization);

// Every cell's position on the colour map (rows x cols, row-major): finite values to [0, 1]
// by the range mode and scale; -inf (masked) stays -inf, NaN stays NaN, +inf becomes 1, so
// that the hatch and the NaN colour survive. With the result, io::valueColor(kind, t,
// ValueRange{0, 1}) is the colour of the cell.
Matrix colorPositions(MatrixRef values, const ColorNormalization& normalization);

// One tick of a colour bar: where it sits (0 = bottom, 1 = top) and its text.
struct ColorbarTick {
  float position = 0;
  std::string text;
};
// Decade ticks of a log range: 10^k for every integer k with lo <= 10^k <= hi (formatNumber
// text: "0.001", "0.01", "1e-4"), bottom to top, and the two ends when no decade lies inside.
std::vector<ColorbarTick> logDecadeTicks(ValueRange range);
// The colour bar of a per-row range has no numbers of its own: "row min" at the bottom and
// "row max" at the top (on a log scale "row floor"), and its title says "per row".
std::vector<ColorbarTick> rowRangeTicks(ColorScaleKind scale);
// A short caption of the normalisation for colour bars and tooltips: "" for global linear,
// "per row: row min → row max", "log₁₀ scale, floor 1e-4", "fixed range 0 … 1", ...
std::string normalizationCaption(const ColorNormalization& normalization, ValueRange range);
// The colour bar's line naming the rule in force: "fixed 0–1", "symmetric ±2.5",
// "min–max", "per row".
std::string rangeRuleCaption(RangeRule rule, ValueRange range);

}  // namespace attn::io
