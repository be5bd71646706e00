// Colormap lookup tables (generated once from matplotlib, see scripts/gen_colormaps.py),
// the value -> colour mapping, the colour range, the label colour rule and the max-pooling
// shared by files and the app (one home for each).
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <span>

#include "render/heatmap_render.h"

namespace attn::io {

namespace {
#include "render/colormap_data.inc"

// The generated tables are those of the maps with a matplotlib source in the colormap table
// (core/scenario/view_options.h), which come first and in table order; the rest (RdBu) are
// computed here.
constexpr bool generatedFirst() {
  std::size_t generated = 0;
  for (std::size_t i = 0; i < std::size(kColormaps); ++i) {
    if (kColormaps[i].source.empty()) continue;
    if (i != generated) return false;  // a map with a source after a computed one
    ++generated;
  }
  return generated == kColormapTables.size();
}
static_assert(generatedFirst(),
              "render/colormap_data.inc is stale: run scripts/gen_colormaps.py (one table per "
              "map with a matplotlib source, in the order of ATTN_COLORMAPS)");


// ColorBrewer's 11-class RdBu (Cynthia Brewer, Apache-2.0 colour data), from blue (lowest
// value) to red (highest), i.e. reversed so that positive values are red. Matplotlib's
// RdBu_r is the same linear interpolation of these anchors in sRGB.
constexpr Rgb kRdBuAnchors[] = {{5, 48, 97},     {33, 102, 172},  {67, 147, 195}, {146, 197, 222},
                                {209, 229, 240}, {247, 247, 247}, {253, 219, 199}, {244, 165, 130},
                                {214, 96, 77},   {178, 24, 43},   {103, 0, 31}};

std::array<Rgb, 256> interpolatedLut(std::span<const Rgb> anchors) {
  std::array<Rgb, 256> lut{};
  const int segments = static_cast<int>(anchors.size()) - 1;
  for (int i = 0; i < 256; ++i) {
    const double x = i / 255.0 * segments;
    const int k = std::min(static_cast<int>(x), segments - 1);
    const double f = x - k;
    auto mix = [&](std::uint8_t a, std::uint8_t b) {
      return static_cast<std::uint8_t>(std::lround(a + (b - a) * f));
    };
    lut[i] = Rgb{mix(anchors[k].r, anchors[k + 1].r), mix(anchors[k].g, anchors[k + 1].g),
                 mix(anchors[k].b, anchors[k + 1].b)};
  }
  return lut;
}

// sRGB 8-bit -> linear light, for the luminance rule.
double linearChannel(std::uint8_t c) {
  const double v = c / 255.0;
  return v <= 0.03928 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4);
}
}  // namespace


const std::array<Rgb, 256>& colormapLut(ColormapKind kind) {
  if (kind == ColormapKind::RdBu) {
    static const std::array<Rgb, 256> rdbu = interpolatedLut(kRdBuAnchors);
    return rdbu;
  }
  return kColormapTables[static_cast<std::size_t>(kind)];  // (generatedFirst: same index)
}



Rgb colormapColor(ColormapKind kind, float t) {
  if (std::isnan(t)) return kNanColor;
  t = std::clamp(t, 0.0f, 1.0f);
  return colormapLut(kind)[static_cast<int>(std::lround(t * 255.0f))];
}

std::optional<ValueRange> finiteRange(MatrixRef values) {
  float lo = std::numeric_limits<float>::infinity();
  float hi = -std::numeric_limits<float>::infinity();
  for (int r = 0; r < values.rows; ++r) {
    const float* row = values.row(r);
    // Rows with only finite numbers (nearly all) take Eigen's vectorised min and max; a row
    // with a NaN or an infinity (a masked row of scores) the careful loop. x·0 summed is NaN
    // exactly when some x is not finite.
    const Eigen::Map<const Eigen::ArrayXf> cells(row, values.cols);
    if (values.cols > 0 && std::isfinite((cells * 0.0f).sum())) {
      lo = std::min(lo, cells.minCoeff());
      hi = std::max(hi, cells.maxCoeff());
      continue;
    }
    for (int c = 0; c < values.cols; ++c) {
      if (!std::isfinite(row[c])) continue;
      lo = std::min(lo, row[c]);
      hi = std::max(hi, row[c]);
    }
  }
  if (lo > hi) return std::nullopt;
  return ValueRange{lo, hi};
}

ValueRange colorRange(std::optional<ValueRange> finite, std::optional<float> vmin,
                      std::optional<float> vmax) {
  ValueRange range = finite.value_or(ValueRange{0, 1});  // no finite value at all: 0..1
  if (vmin) range.lo = *vmin;
  if (vmax) range.hi = *vmax;
  // One fixed end beyond the data's other end: collapse rather than invert the range.
  if (range.lo > range.hi) {
    if (vmin && !vmax)
      range.hi = range.lo;
    else
      range.lo = range.hi;
  }
  return range;
}

ValueRange centredColorRange(std::optional<ValueRange> finite, std::optional<float> vmin,
                             std::optional<float> vmax) {
  if (finite) {
    const float m = std::max(std::abs(finite->lo), std::abs(finite->hi));
    finite = ValueRange{-m, m};
  }
  return colorRange(finite, vmin, vmax);
}

ValueRange valueRange(MatrixRef values, std::optional<float> vmin, std::optional<float> vmax) {
  return colorRange(vmin && vmax ? std::nullopt : finiteRange(values), vmin, vmax);
}

float colorPosition(float value, ValueRange range) {
  const double span = static_cast<double>(range.hi) - range.lo;
  if (!(span > 0)) return 0.5f;  // constant matrix: the middle
  const double t = (value - static_cast<double>(range.lo)) / span;
  return static_cast<float>(std::clamp(t, 0.0, 1.0));
}

Rgb valueColor(ColormapKind kind, float value, ValueRange range) {
  if (std::isnan(value)) return kNanColor;
  if (value == -std::numeric_limits<float>::infinity()) return kMaskedColor;
  if (value == std::numeric_limits<float>::infinity()) return kNanColor;  // not a valid colour
  return colormapColor(kind, colorPosition(value, range));
}

Rgb labelColorOn(Rgb cell) {
  const double luminance = 0.2126 * linearChannel(cell.r) + 0.7152 * linearChannel(cell.g) +
                           0.0722 * linearChannel(cell.b);
  return luminance > 0.408 ? Rgb{0, 0, 0} : Rgb{255, 255, 255};
}

Rgb cellLabelColor(ColormapKind kind, float value, ValueRange range) {
  return labelColorOn(valueColor(kind, value, range));
}

}  // namespace attn::io
