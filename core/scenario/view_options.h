// How a heatmap is coloured, as a scenario's `view` object and the CLI name it: the colour
// map, which values set the ends of the map, and the scale. Names and parsers only; the
// colours themselves are drawn in render/ (colormapLut, colorPositions).
#pragma once

#include <optional>
#include <string_view>

namespace attn {

// The one list of colour maps, one X(...) per map:
//   X(enumerator, name, matplotlib map or "" (computed), diverging, description)
// The enum, kColormaps and kAllColormaps, the names (toString, parseColormapKind), the CLI's
// --colormap help and scripts/gen_colormaps.py all read it: the generator writes the 256-entry
// table of each map with a matplotlib source into render/colormap_data.inc, in this order; a
// map without one (RdBu, from ColorBrewer's anchors) is computed in render/colormap.cpp and
// comes after them. The names are the scenario files' and the CLI's words: never rename one.
// clang-format off
#define ATTN_COLORMAPS(X)                                                                      \
  X(Viridis, "viridis", "viridis", false, "perceptually uniform, dark blue to yellow")        \
  X(Magma, "magma", "magma", false, "perceptually uniform, black to pale yellow")             \
  X(Cividis, "cividis", "cividis", false, "perceptually uniform, for colour-blind readers")   \
  X(Greys, "greys", "Greys", false, "white to black")                                         \
  X(Purples, "purples", "Purples", false, "white to purple (the classic attention notebooks)") \
  X(Oranges, "oranges", "Oranges", false, "white to orange")                                  \
  X(Blues, "blues", "Blues", false, "white to blue")                                          \
  X(RdBu, "rdbu", "", true, "diverging: blue below, white at the centre, red above")
// clang-format on

#define ATTN_COLORMAP_ENUMERATOR(kind, name, source, diverging, description) kind,
enum class ColormapKind { ATTN_COLORMAPS(ATTN_COLORMAP_ENUMERATOR) };
#undef ATTN_COLORMAP_ENUMERATOR

struct ColormapInfo {
  ColormapKind kind;
  std::string_view name;         // scenario files, the CLI, the View menu
  std::string_view source;       // the matplotlib map its table is made from; "" = computed
  bool diverging;                // made to be centred on a value (signed matrices)
  std::string_view description;  // one line for the help
};

// Every map, in enum order (kColormaps[i].kind == ColormapKind(i)).
#define ATTN_COLORMAP_INFO(kind, name, source, diverging, description) \
  ColormapInfo{ColormapKind::kind, name, source, diverging, description},
inline constexpr ColormapInfo kColormaps[] = {ATTN_COLORMAPS(ATTN_COLORMAP_INFO)};
#undef ATTN_COLORMAP_INFO
#define ATTN_COLORMAP_KIND(kind, name, source, diverging, description) ColormapKind::kind,
inline constexpr ColormapKind kAllColormaps[] = {ATTN_COLORMAPS(ATTN_COLORMAP_KIND)};
#undef ATTN_COLORMAP_KIND

// The table entry of `kind`.
constexpr const ColormapInfo& colormapInfo(ColormapKind kind) {
  return kColormaps[static_cast<int>(kind)];
}
std::string_view toString(ColormapKind kind);
std::optional<ColormapKind> parseColormapKind(std::string_view name);
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
