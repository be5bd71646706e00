// Heatmap rasterising and export: colormaps, PNG (stb_image_write), SVG and CSV.
// The CLI's `export` and the app's export menu both go through exportMatrix(), so the
// files are identical for the same scenario. No GL, no UI.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/format.h"
#include "core/scenario/scenario.h"
#include "core/base/tensor_view.h"
#include "core/attention/selection.h"
#include "core/scenario/view_options.h"
#include "formats/image.h"

namespace attn::io {

// ---------------------------------------------------------------------------------------
// Colormaps
// ---------------------------------------------------------------------------------------


struct Rgb {
  std::uint8_t r = 0, g = 0, b = 0;
  bool operator==(const Rgb&) const = default;
};
// The 256-entry lookup table of a colormap (entry 0 = low values). The app uploads the same
// table to the GPU, so screen and file agree.
const std::array<Rgb, 256>& colormapLut(ColormapKind kind);
// Colour for t in [0, 1] (clamped): lut[round(t * 255)].
Rgb colormapColor(ColormapKind kind, float t);

// Colours for cells that have no colour on the map.
inline constexpr Rgb kMaskedColor{200, 200, 200};       // -inf (masked score): light grey, hatched
inline constexpr Rgb kMaskedHatchColor{170, 170, 170};  // the diagonal hatch lines on it
inline constexpr Rgb kNanColor{255, 0, 255};  // NaN and +inf: magenta (should never happen)

// The colour range of a heatmap, one rule for the screen and the files: [vmin, vmax] where
// given, else the min/max of the matrix's FINITE values (0..1 if it has none). One fixed end
// beyond the data's other end collapses the range onto it. lo == hi for a constant matrix.
struct ValueRange {
  float lo = 0, hi = 1;
};

// The finite min / max of a matrix (one pass), or nullopt when no value is finite. The
// widget keeps it per upload so that it does not rescan the matrix every frame.
std::optional<ValueRange> finiteRange(MatrixRef values);
// The colour range from a matrix's finiteRange() and the fixed ends (see ValueRange).
ValueRange colorRange(std::optional<ValueRange> finite, std::optional<float> vmin,
                      std::optional<float> vmax);
// colorRange(finiteRange(values), vmin, vmax), without the scan when both ends are fixed.
ValueRange valueRange(MatrixRef values, std::optional<float> vmin, std::optional<float> vmax);
// The colour range of a signed matrix on a diverging map: symmetric about 0, [-m, m] with
// m = max(|lo|, |hi|) of the finite values, so 0 is the map's centre. Fixed ends (vmin /
// vmax) win, as in colorRange().
ValueRange centredColorRange(std::optional<ValueRange> finite, std::optional<float> vmin,
                             std::optional<float> vmax);
// Where a finite value lies on the colour map, in [0, 1]: (v - lo) / (hi - lo) clamped, or
// 0.5 (the middle) when lo == hi. assets/shaders/heatmap.frag computes the same.
float colorPosition(float value, ValueRange range);
// The colour of one value: NaN and +inf -> kNanColor (no colour of the map: +inf is an
// overflow, not a large weight), -inf -> kMaskedColor, finite ->
// colormapColor(colorPosition(v, range)).
Rgb valueColor(ColormapKind kind, float value, ValueRange range);
// Black or white, whichever reads better on `cell` (sRGB relative luminance > 0.408 ->
// black, the threshold seaborn uses for annotations).
Rgb labelColorOn(Rgb cell);
// The colour of the label drawn over a cell of `value`: labelColorOn(valueColor(...)). The
// screen widget and the PNG/SVG exports both use it.
Rgb cellLabelColor(ColormapKind kind, float value, ValueRange range);

// ---------------------------------------------------------------------------------------
// Cell labels and levels of detail (shared by the screen widget and the files)
// ---------------------------------------------------------------------------------------

// A cell gets its number when it is at least this many heights of the number's font tall
// (the text with a small margin), in the screen widget (which may draw numbers at 0.85 or
// kLabelFloor of the label font) and in the exports.
inline constexpr float kCellLabelHeights = 1.3f;

// The text of a cell label: formatNumber(value, d) for the largest d in [1, digits] whose
// text `fits` (a predicate on the UTF-8 text); failing that, for a tiny positive value
// (0 < v < 0.001, whose "8e-33" is too wide) "<0.001"; failing that, the value rounded to
// the most decimals (3, 2, 1, 0) whose text fits: "0.001", "0.01", "0.1" or "0" ("-0" reads
// "0"), which is what it rounds to at the digits shown. So 0.0012 next to "0.12" prints
// "0" where "0.001" is too wide, never blank. nullopt when nothing fits (a cell too narrow
// for "0" holds no number, like its neighbours). Labels only ever lose digits to fit.
// `fewerDecimals` false: the last step stops at 3 decimals (only what rounds to 0.000 prints
// "0"), so a caller can first try a smaller font before 0.397 reads "0".
template <class Fits>
std::optional<std::string> fittedCellLabel(float value, int digits, Fits&& fits,
                                           bool fewerDecimals = true) {
  std::string previous;
  for (int d = std::max(digits, 1); d >= 1; --d) {
    std::string text = formatNumber(value, d);
    if (text == previous) continue;  // same text at fewer digits (integers, inf, NaN)
    if (fits(text)) return text;
    previous = std::move(text);
  }
  if (!std::isfinite(value)) return std::nullopt;
  if (value > 0 && value < 1e-3f && fits(std::string("<0.001"))) return std::string("<0.001");
  // Fixed decimals: the value as the narrower neighbours' digits show it.
  for (int decimals = 3; decimals >= (fewerDecimals ? 0 : 3); --decimals) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.*f", decimals, static_cast<double>(value));
    std::string text = buffer;
    if (text.find('.') != std::string::npos) {
      while (text.back() == '0') text.pop_back();
      if (text.back() == '.') text.pop_back();
    }
    if (text == "-0") text = "0";
    if (text == previous) continue;
    if (fits(text)) return text;
    previous = std::move(text);
  }
  return std::nullopt;
}



// ---------------------------------------------------------------------------------------
// Rendering
// ---------------------------------------------------------------------------------------

// Where a heatmap's values lie on its colour map (render/color_scale.h reads it): the range
// mode, the scale, the fixed ends and what the values are.
struct ColorNormalization {
  // Auto (by what the values are), MinMax (the matrix's own min..max), Row (each row spans
  // the map from its own finite min to its max) or Fixed (vmin / vmax).
  RangeMode range = RangeMode::Auto;
  ColorScaleKind colorScale = ColorScaleKind::Linear;  // Log: log10 with a floor
  std::optional<float> vmin, vmax;  // fixed colour range (either may be unset: auto)
  // What the values are, for RangeMode::Auto (io::rangeRule): probabilities (weights,
  // attention maps) on a fixed 0..1, signed matrices (centreZero) symmetric about 0.
  bool centreZero = false;
  bool probability = false;
  bool operator==(const ColorNormalization&) const = default;
};

// The colour rule of a heatmap, one struct for the screen and the files: the map and where
// the values lie on it. The widget's options (app/ui/widgets/heatmap_widget.h,
// HeatmapOptions) and the exports' HeatmapStyle are both a ColorRule plus their own parts,
// so the export menu hands the screen's rule to the file as it is.
struct ColorRule : ColorNormalization {
  ColormapKind colormap = ColormapKind::Viridis;
};

// The normalization `rule` applies: its own, with the range Fixed when vmin or vmax is given
// (a fixed end implies RangeMode::Fixed).
ColorNormalization normalizationOf(const ColorNormalization& rule);

struct HeatmapStyle : ColorRule {
  bool cellLabels = true;  // numbers in the cells
  bool axisLabels = true;  // token labels on the axes
  bool colorbar = true;
  bool title = true;
  int resolution = 1;               // 1..8, multiplies every size (for slides; CLI --scale)
  int cellSize = 40;                // cell edge in pixels at resolution 1 (shrunk for large matrices)
  int digits = kCellDigits;         // significant digits of cell labels (1..9); labels drop
                                    // digits where they would not fit (colour-bar ticks are
                                    // round numbers with the digits they need, colorbarTicks)
  int cellGap = 0;                  // pixels between cells at resolution 1 (0..8); only used while the
                                    // shrunk cells are still >= 8 px, so tiny cells stay solid
  std::string fontPath;             // TrueType font; empty = DejaVu Sans (fonts-dejavu-core)
};

// Rasterises a heatmap with (optional) title, axis labels, cell labels and a colorbar.
// Text uses DejaVu Sans through stb_truetype. Masked (-inf) cells are drawn hatched grey,
// NaN cells magenta. The pixel rectangle of cell (r, c) is returned by cellRect().
//
// Size: cells are cellSize·resolution px, shrunk (to >= 1 px) so that the grid stays within
// 2048 px per side at resolution 1. A matrix with more than 2048 rows or columns is max-pooled
// by an integer factor (same for both axes; NaN wins, then the largest value, -inf only if
// the whole block is masked) so that single sharp peaks stay visible. Cell labels appear
// only when a cell is at least 1.3 label-font heights tall and every label fits its width
// (first by shrinking the font down to 7 px, then with fewer digits, see fittedCellLabel).
// Row/column labels are capped to io::kLabelDisplayChars code points ("…"), and beyond what
// fits thinned to every 2nd, 5th, 10th, ... label (io::labelStep), with the rule written
// under the grid ("rows: every 5th label"). Column labels read bottom to top when one does
// not fit its cell. The view's axis titles (rowAxis, colAxis) are drawn beside the labels,
// its valueTitle beside the colour bar, whose ticks are round numbers (io::colorbarTicks).
// Label vectors shorter than the matrix are padded with the index ("0", "1", ...).
// Errors (field): "scale" (the resolution, as the CLI's --scale names it) outside 1..8 or
// when the raster would exceed 100 megapixels
// (SVG has no such limit), "cellSize" outside 1..400, "cellGap" outside 0..8,
// "digits" outside 1..9, "vmin" when vmin > vmax or not finite, "matrix" when empty, and
// the font file when it cannot be read ("install fonts-dejavu-core").
Expected<Image> renderHeatmap(const HeatmapView& view, const HeatmapStyle& style);

struct PixelRect {
  int x0, y0, x1, y1;  // half-open: [x0, x1) x [y0, y1)
};
// Where renderHeatmap() draws cell (row, col) for this view and style. When the matrix is
// max-pooled, this is the pooled pixel block that contains the cell (shared with its
// neighbours). Invalid styles and empty matrices give an empty rect {0, 0, 0, 0}.
PixelRect cellRect(const HeatmapView& view, const HeatmapStyle& style, int row, int col);

// Writes the view to `path`, format by extension (case-insensitive): .png (renderHeatmap +
// stb_image_write), .svg (vector, same layout and sizes as the PNG), .csv (RFC 4180 quoting,
// LF line ends; header row: an empty field then the column labels; then one row per matrix
// row: label, values as %.9g so floats round-trip; -inf/inf/nan spelled so). The CSV is data,
// not display: it does not use formatNumber(), so that it can be read back exactly. The file is
// written through io::writeFileAtomic (formats/files.h), so it is never half-written.
// Errors name the file; an unknown extension is field "out".
Status exportMatrix(const HeatmapView& view, const HeatmapStyle& style, const std::string& path);

}  // namespace attn::io
