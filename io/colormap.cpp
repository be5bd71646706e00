// Colormap lookup tables (generated once from matplotlib, see scripts/gen_colormaps.py),
// the value -> colour mapping and the label colour rule shared by files and the app.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "io/heatmap_render.h"

namespace attn::io {

namespace {
#include "io/colormap_data.inc"

static_assert(kColormapTables.size() == std::size(kAllColormaps),
              "one table per ColormapKind, in enum order");

constexpr std::string_view kColormapNames[] = {"viridis", "magma",   "cividis", "greys",
                                               "purples", "oranges", "blues"};

// sRGB 8-bit -> linear light, for the luminance rule.
double linearChannel(std::uint8_t c) {
  const double v = c / 255.0;
  return v <= 0.03928 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4);
}
}  // namespace

std::string_view toString(ColormapKind kind) {
  return kColormapNames[static_cast<int>(kind)];
}

std::optional<ColormapKind> parseColormapKind(std::string_view name) {
  for (ColormapKind kind : kAllColormaps) {
    if (toString(kind) == name) return kind;
  }
  return std::nullopt;
}

const std::array<Rgb, 256>& colormapLut(ColormapKind kind) {
  return kColormapTables[static_cast<int>(kind)];
}

Rgb colormapColor(ColormapKind kind, float t) {
  if (std::isnan(t)) return kNanColor;
  t = std::clamp(t, 0.0f, 1.0f);
  return colormapLut(kind)[static_cast<int>(std::lround(t * 255.0f))];
}

ValueRange valueRange(const Matrix& values, std::optional<float> vmin, std::optional<float> vmax) {
  float lo = std::numeric_limits<float>::infinity();
  float hi = -std::numeric_limits<float>::infinity();
  if (!vmin || !vmax) {
    const float* data = values.data();
    for (Eigen::Index i = 0, n = values.size(); i < n; ++i) {
      if (!std::isfinite(data[i])) continue;
      lo = std::min(lo, data[i]);
      hi = std::max(hi, data[i]);
    }
    if (lo > hi) lo = 0, hi = 1;  // no finite value at all
  }
  if (vmin) lo = *vmin;
  if (vmax) hi = *vmax;
  // One fixed end beyond the data's other end: collapse rather than invert the range.
  if (lo > hi) {
    if (vmin && !vmax)
      hi = lo;
    else
      lo = hi;
  }
  return {lo, hi};
}

Rgb valueColor(ColormapKind kind, float value, ValueRange range) {
  if (std::isnan(value)) return kNanColor;
  if (value == -std::numeric_limits<float>::infinity()) return kMaskedColor;
  if (value == std::numeric_limits<float>::infinity()) return colormapLut(kind)[255];
  const double span = static_cast<double>(range.hi) - range.lo;
  if (!(span > 0)) return colormapColor(kind, 0.5f);  // constant matrix: the middle
  return colormapColor(kind, static_cast<float>((value - static_cast<double>(range.lo)) / span));
}

Rgb labelColorOn(Rgb cell) {
  const double luminance = 0.2126 * linearChannel(cell.r) + 0.7152 * linearChannel(cell.g) +
                           0.0722 * linearChannel(cell.b);
  return luminance > 0.408 ? Rgb{0, 0, 0} : Rgb{255, 255, 255};
}

}  // namespace attn::io
