// How a heatmap is coloured, as a scenario's `view` object and the CLI name it: the colour
// map, which values set the ends of the map, and the scale. Names and parsers only; the
// colours themselves are drawn in render/ (colormapLut, colorPositions).
#pragma once

#include <optional>
#include <string_view>

namespace attn {

// viridis, magma, cividis (matplotlib's perceptually uniform maps), greys, and the light
// purples, oranges and blues of the classic attention notebooks (matplotlib's sequential
// ColorBrewer maps).
// RdBu is diverging (blue for negative, white at the centre, red for positive: ColorBrewer's
// RdBu reversed); the others are sequential.
enum class ColormapKind { Viridis, Magma, Cividis, Greys, Purples, Oranges, Blues, RdBu };
std::string_view toString(ColormapKind kind);
std::optional<ColormapKind> parseColormapKind(std::string_view name);
inline constexpr ColormapKind kAllColormaps[] = {
    ColormapKind::Viridis, ColormapKind::Magma,   ColormapKind::Cividis, ColormapKind::Greys,
    ColormapKind::Purples, ColormapKind::Oranges, ColormapKind::Blues,   ColormapKind::RdBu};
// True for a map made to be centred on a value (RdBu).
bool isDiverging(ColormapKind kind);

// Which values set the ends of the colour map, as the user picks it:
//   auto    (the default) by what the values are: probabilities (weights) on a fixed 0..1,
//           signed matrices symmetric about 0, anything else its own finite min..max
//           (render/color_scale.h, rangeRule);
//   minmax  every matrix from its own finite min to its max;
//   row     every row spans the whole map from its own finite min to its max;
//   fixed   ends given by the user (the same for every matrix).
// "global" (the default of earlier versions, written by old autosaves and scenarios) reads
// as auto.
enum class RangeMode { Auto, MinMax, Row, Fixed };
// Linear: (v - lo) / (hi - lo). Log: (log10 v - log10 lo) / (log10 hi - log10 lo), for
// values that are > 0 (weights); values <= 0 sit at the bottom of the map.
enum class ColorScaleKind { Linear, Log };

std::string_view toString(RangeMode mode);  // "auto", "minmax", "row", "fixed"
// The names above, and "global" for Auto.
std::optional<RangeMode> parseRangeMode(std::string_view name);
std::string_view toString(ColorScaleKind kind);  // "linear", "log"
std::optional<ColorScaleKind> parseColorScaleKind(std::string_view name);

}  // namespace attn
