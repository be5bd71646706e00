// Heatmap rasterising and export: colormaps, PNG (stb_image_write), SVG and CSV.
// The CLI's `export` and the app's export menu both go through exportMatrix(), so the
// files are identical for the same scenario. No GL, no UI.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/scenario.h"

namespace attn::io {

// ---------------------------------------------------------------------------------------
// Colormaps
// ---------------------------------------------------------------------------------------

// viridis, magma, cividis (matplotlib's perceptually uniform maps), greys, and the light
// purples, oranges and blues of the classic attention notebooks (matplotlib's sequential
// ColorBrewer maps).
enum class ColormapKind { Viridis, Magma, Cividis, Greys, Purples, Oranges, Blues };
std::string_view toString(ColormapKind kind);
std::optional<ColormapKind> parseColormapKind(std::string_view name);
inline constexpr ColormapKind kAllColormaps[] = {
    ColormapKind::Viridis, ColormapKind::Magma,   ColormapKind::Cividis, ColormapKind::Greys,
    ColormapKind::Purples, ColormapKind::Oranges, ColormapKind::Blues};

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
inline constexpr Rgb kNanColor{255, 0, 255};            // NaN: magenta (should never happen)

// The colour range of a matrix: [vmin, vmax] where given, else the min/max of its FINITE
// values (0..1 if it has none). lo == hi for a constant matrix.
struct ValueRange {
  float lo = 0, hi = 1;
};
ValueRange valueRange(const Matrix& values, std::optional<float> vmin, std::optional<float> vmax);
// The colour of one value: NaN -> kNanColor, -inf -> kMaskedColor, +inf -> top of the map,
// finite -> colormapColor((v - lo) / (hi - lo)), or the middle of the map when lo == hi.
Rgb valueColor(ColormapKind kind, float value, ValueRange range);
// Black or white, whichever reads better on `cell` (sRGB relative luminance > 0.408 ->
// black, the threshold seaborn uses for annotations).
Rgb labelColorOn(Rgb cell);
// The text of a cell label. `decimals` digits after the point, minus one per digit before
// the point beyond the first, so every label has about decimals+1 significant digits:
// (decimals 2) 0.1192 -> "0.12", 12.345 -> "12.3", 927 -> "927", 0.0004 -> "0.00" (never
// "-0.00"). |v| >= 1e5 -> "1.2e5". -inf -> "−∞" (U+2212 U+221E), +inf -> "∞", NaN -> "NaN".
std::string formatCellValue(float value, int decimals);

// ---------------------------------------------------------------------------------------
// Which matrix to show
// ---------------------------------------------------------------------------------------

// scores (raw), masked_scores (÷T, -inf where masked), weights, q, k, v, context, concat,
// output.
enum class MatrixKind { Scores, MaskedScores, Weights, Q, K, V, Context, Concat, Output };
std::string_view toString(MatrixKind kind);
std::optional<MatrixKind> parseMatrixKind(std::string_view name);

// A matrix ready to draw: values with row and column labels and a title.
struct MatrixView {
  Matrix values;                       // rows x cols
  std::vector<std::string> rowLabels;  // rows entries
  std::vector<std::string> colLabels;  // cols entries
  std::string title;                   // e.g. "weights · head 2 of 8"
};

// Picks a matrix out of a result. head: 0-based head (the title says "head 2 of 8" for
// head 2, like --head), or -1 for the mean over heads (only
// scores and weights have a mean; concat and output ignore `head`). Errors name the field
// ("head" or "matrix").
Expected<MatrixView> selectMatrix(const AttentionResult& result, const Problem& problem,
                                  MatrixKind kind, int head);

// ---------------------------------------------------------------------------------------
// Rendering
// ---------------------------------------------------------------------------------------

struct HeatmapStyle {
  ColormapKind colormap = ColormapKind::Viridis;
  bool cellLabels = true;  // numbers in the cells
  bool axisLabels = true;  // token labels on the axes
  bool colorbar = true;
  bool title = true;
  int scale = 1;                    // 1..8, multiplies every size (resolution for slides)
  int cellSize = 40;                // cell edge in pixels at scale 1 (shrunk for large matrices)
  int decimals = 2;                 // digits after the point in cell labels (0..9)
  std::optional<float> vmin, vmax;  // fixed colour range; auto (finite min/max) if unset
  int cellGap = 0;                  // pixels between cells at scale 1 (0..8); only used while the
                                    // shrunk cells are still >= 8 px, so tiny cells stay solid
  std::string fontPath;             // TrueType font; empty = DejaVu Sans (fonts-dejavu-core)
};

struct Image {
  int width = 0, height = 0;
  std::vector<std::uint8_t> rgb;  // width*height*3, row 0 at the top
};

// Rasterises a heatmap with (optional) title, axis labels, cell labels and a colorbar.
// Text uses DejaVu Sans through stb_truetype. Masked (-inf) cells are drawn hatched grey,
// NaN cells magenta. The pixel rectangle of cell (r, c) is returned by cellRect().
//
// Size: cells are cellSize·scale px, shrunk (to >= 1 px) so that the grid stays within
// 2048 px per side at scale 1. A matrix with more than 2048 rows or columns is max-pooled
// by an integer factor (same for both axes; NaN wins, then the largest value, -inf only if
// the whole block is masked) so that single sharp peaks stay visible. Cell labels appear
// only when a cell is at least 2.5 label-font heights tall and every label fits its width.
// Row/column labels beyond what fits are thinned to every 2nd, 5th, 10th, ... label.
// Label vectors shorter than the matrix are padded with the index ("0", "1", ...).
// Errors (field): "scale" outside 1..8 or when the raster would exceed 100 megapixels
// (SVG has no such limit), "cellSize" outside 1..400, "cellGap" outside 0..8,
// "decimals" outside 0..9, "vmin" when vmin > vmax or not finite, "matrix" when empty, and
// the font file when it cannot be read ("install fonts-dejavu-core").
Expected<Image> renderHeatmap(const MatrixView& view, const HeatmapStyle& style);

struct PixelRect {
  int x0, y0, x1, y1;  // half-open: [x0, x1) x [y0, y1)
};
// Where renderHeatmap() draws cell (row, col) for this view and style. When the matrix is
// max-pooled, this is the pooled pixel block that contains the cell (shared with its
// neighbours). Invalid styles and empty matrices give an empty rect {0, 0, 0, 0}.
PixelRect cellRect(const MatrixView& view, const HeatmapStyle& style, int row, int col);

// Writes the view to `path`, format by extension (case-insensitive): .png (renderHeatmap +
// stb_image_write), .svg (vector, same layout and sizes as the PNG), .csv (RFC 4180 quoting,
// LF line ends; header row: an empty field then the column labels; then one row per matrix
// row: label, values as %.9g so floats round-trip; -inf/inf/nan spelled so). The file is
// written through io::writeFileAtomic (io/files.h), so it is never half-written.
// Errors name the file; an unknown extension is field "out".
Status exportMatrix(const MatrixView& view, const HeatmapStyle& style, const std::string& path);

}  // namespace attn::io
