// Range modes and the log scale of the heatmap colours (see color_scale.h).
#include "render/color_scale.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/base/format.h"

namespace attn::io {

ColorNormalization normalizationOf(const ColorNormalization& rule) {
  ColorNormalization n = rule;
  if (rule.vmin || rule.vmax) n.range = RangeMode::Fixed;
  return n;
}

namespace {


// One row of `values` as a 1 x cols view.
MatrixRef rowOf(MatrixRef values, int r) {
  return MatrixRef{values.row(r), 1, values.cols, values.stride};
}

}  // namespace


std::string_view toString(RangeRule rule) {
  switch (rule) {
    case RangeRule::Fixed: return "fixed";
    case RangeRule::Symmetric: return "symmetric";
    case RangeRule::MinMax: return "minmax";
    case RangeRule::Row: return "row";
  }
  return "minmax";
}

RangeRule rangeRule(std::optional<ValueRange> finite, const ColorNormalization& n) {
  if (n.range == RangeMode::Row) return RangeRule::Row;
  if (n.range == RangeMode::Fixed || n.vmin || n.vmax) return RangeRule::Fixed;
  if (n.range == RangeMode::MinMax) return RangeRule::MinMax;
  // Auto: by what the values are. A tolerance of a few float ulps around [0, 1], since a
  // softmax row can sum to 1.0000001 and a weight can be 1 + 6e-8.
  if (n.probability && (!finite || (finite->lo >= -1e-6f && finite->hi <= 1.0f + 1e-6f)))
    return RangeRule::Fixed;
  return n.centreZero ? RangeRule::Symmetric : RangeRule::MinMax;
}

ValueRange ruleRange(std::optional<ValueRange> finite, const ColorNormalization& n) {
  switch (rangeRule(finite, n)) {
    case RangeRule::Fixed:
      if (!n.vmin && !n.vmax) return ValueRange{0.0f, 1.0f};  // an Auto probability
      return colorRange(n.vmin && n.vmax ? std::nullopt : finite, n.vmin, n.vmax);
    case RangeRule::Symmetric:
      return centredColorRange(finite, std::nullopt, std::nullopt);
    case RangeRule::MinMax:
    case RangeRule::Row:
      break;
  }
  return colorRange(finite, std::nullopt, std::nullopt);
}

bool needsPositions(const ColorNormalization& n) {
  return n.range == RangeMode::Row || n.colorScale == ColorScaleKind::Log;
}

ValueRange logColorRange(MatrixRef values, std::optional<float> vmin, std::optional<float> vmax) {
  // 1 the largest finite value and the smallest positive one
  float top = -std::numeric_limits<float>::infinity();
  float smallestPositive = std::numeric_limits<float>::infinity();
  for (int r = 0; r < values.rows; ++r) {
    const float* row = values.row(r);
    for (int c = 0; c < values.cols; ++c) {
      const float v = row[c];
      if (!std::isfinite(v)) continue;
      top = std::max(top, v);
      if (v > 0) smallestPositive = std::min(smallestPositive, v);
    }
  }
  // 2 the top: vmax when it is usable on a log scale, else the data's largest value
  if (vmax && *vmax > 0) top = *vmax;
  if (!(top > 0)) return ValueRange{kLogFloorRatio, 1.0f};  // nothing positive to show
  // 3 the floor: vmin (> 0), else the smallest positive value, at most 4 decades down
  float floor = std::max(smallestPositive, top * kLogFloorRatio);
  if (vmin && *vmin > 0) floor = *vmin;
  if (!(floor > 0) || !std::isfinite(floor)) floor = top * kLogFloorRatio;
  if (floor > top) floor = top;
  return ValueRange{floor, top};
}

float logColorPosition(float value, ValueRange range) {
  if (!(value > range.lo)) return value > 0 && range.lo >= range.hi ? 0.5f : 0.0f;
  if (value >= range.hi) return range.hi > range.lo ? 1.0f : 0.5f;
  const double lo = std::log10(static_cast<double>(range.lo));
  const double hi = std::log10(static_cast<double>(range.hi));
  const double t = (std::log10(static_cast<double>(value)) - lo) / (hi - lo);
  return static_cast<float>(std::clamp(t, 0.0, 1.0));
}

ValueRange normalizationRange(MatrixRef values, int row, const ColorNormalization& n) {
  const MatrixRef part = row >= 0 ? rowOf(values, row) : values;
  const std::optional<ValueRange> finite = finiteRange(part);
  const RangeRule rule = rangeRule(finite, n);
  if (n.colorScale == ColorScaleKind::Log) {
    // Fixed ends only in the fixed rule (an Auto probability tops out at 1); the others
    // come from the data.
    const bool fixed = rule == RangeRule::Fixed;
    const bool unitTop = fixed && !n.vmin && !n.vmax;
    return logColorRange(part, fixed ? n.vmin : std::nullopt,
                         unitTop ? std::optional<float>(1.0f) : fixed ? n.vmax : std::nullopt);
  }
  if (rule == RangeRule::Row)  // each row its own min..max (centred for signed matrices)
    return n.centreZero ? centredColorRange(finite, std::nullopt, std::nullopt)
                        : colorRange(finite, std::nullopt, std::nullopt);
  return ruleRange(finite, n);
}

Matrix colorPositions(MatrixRef values, const ColorNormalization& n) {
  Matrix out(values.rows, values.cols);
  const bool perRow = n.range == RangeMode::Row;
  ValueRange range = perRow ? ValueRange{} : normalizationRange(values, -1, n);
  for (int r = 0; r < values.rows; ++r) {
    if (perRow) range = normalizationRange(values, r, n);
    const float* in = values.row(r);
    for (int c = 0; c < values.cols; ++c) {
      const float v = in[c];
      float t;
      if (std::isnan(v) || v == -std::numeric_limits<float>::infinity())
        t = v;  // NaN and masked cells keep their own colours
      else if (v == std::numeric_limits<float>::infinity())
        t = 1.0f;
      else if (n.colorScale == ColorScaleKind::Log)
        t = logColorPosition(v, range);
      else
        t = colorPosition(v, range);
      out(r, c) = t;
    }
  }
  return out;
}

std::vector<ColorbarTick> logDecadeTicks(ValueRange range) {
  std::vector<ColorbarTick> ticks;
  if (!(range.lo > 0) || !(range.hi >= range.lo)) return ticks;
  const int first = static_cast<int>(std::ceil(std::log10(range.lo) - 1e-6));
  const int last = static_cast<int>(std::floor(std::log10(range.hi) + 1e-6));
  for (int k = first; k <= last; ++k) {
    const float value = static_cast<float>(std::pow(10.0, k));
    float t = logColorPosition(value, range);
    if (k == first && value <= range.lo) t = 0.0f;  // the floor itself is a decade
    ticks.push_back({t, formatNumber(value, kCellDigits)});
  }
  if (ticks.empty()) {  // no decade inside: the two ends
    ticks.push_back({0.0f, formatNumber(range.lo, kCellDigits)});
    if (range.hi > range.lo) ticks.push_back({1.0f, formatNumber(range.hi, kCellDigits)});
  }
  return ticks;
}

std::vector<ColorbarTick> rowRangeTicks(ColorScaleKind scale) {
  return {{0.0f, scale == ColorScaleKind::Log ? "row floor" : "row min"}, {1.0f, "row max"}};
}

std::string normalizationCaption(const ColorNormalization& n, ValueRange range) {
  const bool log = n.colorScale == ColorScaleKind::Log;
  if (n.range == RangeMode::Row)
    return log ? "per row, log\xE2\x82\x81\xE2\x82\x80: row floor \xE2\x86\x92 row max"
               : "per row: row min \xE2\x86\x92 row max";
  std::string text = log ? "log\xE2\x82\x81\xE2\x82\x80 scale" : "";
  if (n.range == RangeMode::Fixed) {
    text += std::string(text.empty() ? "" : ", ") + "fixed range " +
            formatNumber(range.lo, kCellDigits) + " \xE2\x80\xA6 " +
            formatNumber(range.hi, kCellDigits);
  } else if (log) {
    text += ", floor " + formatNumber(range.lo, kCellDigits);
  }
  return text;
}

std::string rangeRuleCaption(RangeRule rule, ValueRange range) {
  const char* dash = "\xE2\x80\x93";  // –
  switch (rule) {
    case RangeRule::Fixed:
      return "fixed " + formatNumber(range.lo, kCellDigits) + dash +
             formatNumber(range.hi, kCellDigits);
    case RangeRule::Symmetric:
      return "symmetric \xC2\xB1" + formatNumber(range.hi, kCellDigits);  // ±
    case RangeRule::MinMax:
      return std::string("min") + dash + "max";
    case RangeRule::Row:
      return "per row";
  }
  return "";
}

}  // namespace attn::io
