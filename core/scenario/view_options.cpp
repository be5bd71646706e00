// Names of the colour maps, range modes and scales (core/scenario/view_options.h).
#include "core/scenario/view_options.h"

#include <iterator>

namespace attn {

namespace {
constexpr std::string_view kRangeNames[] = {"auto", "minmax", "row", "fixed"};
constexpr std::string_view kScaleNames[] = {"linear", "log"};
}  // namespace

std::string_view toString(ColormapKind kind) {
  return colormapInfo(kind).name;
}

std::optional<ColormapKind> parseColormapKind(std::string_view name) {
  for (ColormapKind kind : kAllColormaps) {
    if (toString(kind) == name) return kind;
  }
  return std::nullopt;
}

bool isDiverging(ColormapKind kind) {
  return colormapInfo(kind).diverging;
}

std::string_view toString(RangeMode mode) {
  return kRangeNames[static_cast<int>(mode)];
}

std::optional<RangeMode> parseRangeMode(std::string_view name) {
  for (RangeMode mode : {RangeMode::Auto, RangeMode::MinMax, RangeMode::Row, RangeMode::Fixed})
    if (toString(mode) == name) return mode;
  if (name == "global") return RangeMode::Auto;  // the old default's name
  return std::nullopt;
}

std::string_view toString(ColorScaleKind kind) {
  return kScaleNames[static_cast<int>(kind)];
}

std::optional<ColorScaleKind> parseColorScaleKind(std::string_view name) {
  for (ColorScaleKind kind : {ColorScaleKind::Linear, ColorScaleKind::Log})
    if (toString(kind) == name) return kind;
  return std::nullopt;
}

}  // namespace attn
