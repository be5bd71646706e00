// Heatmap rasterising and export: colormaps, PNG (stb_image_write), SVG and CSV.
// The CLI's `export` and the app's export menu both go through exportMatrix(), so the
// files are identical for the same scenario. No GL, no UI.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/format.h"
#include "core/scenario.h"
#include "core/tensor_view.h"

namespace attn::io {

// ---------------------------------------------------------------------------------------
// Colormaps
// ---------------------------------------------------------------------------------------

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
// Which values set the ends of the colour map: the whole matrix (global, the default), each
// row on its own (row: every row spans the whole map from its own finite min to its max), or
// fixed ends given by the user (the same for every matrix).
enum class RangeMode { Global, Row, Fixed };
// Linear: (v - lo) / (hi - lo). Log: (log10 v - log10 lo) / (log10 hi - log10 lo), for
// values that are > 0 (weights); values <= 0 sit at the bottom of the map.
enum class ColorScaleKind { Linear, Log };

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
// 0.5 (the middle) when lo == hi. shaders/heatmap.frag computes the same.
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

// The text of a cell label: formatNumber(value, d) for the largest d in [1, digits] whose
// text `fits` (a predicate on the UTF-8 text), or nullopt when even d = 1 does not fit. Labels
// only ever lose digits to fit; a value never turns blank while a shorter form fits.
template <class Fits>
std::optional<std::string> fittedCellLabel(float value, int digits, Fits&& fits) {
  std::string previous;
  for (int d = std::max(digits, 1); d >= 1; --d) {
    std::string text = formatNumber(value, d);
    if (text == previous) continue;  // same text at fewer digits (integers, inf, NaN)
    if (fits(text)) return text;
    previous = std::move(text);
  }
  return std::nullopt;
}

// Max-pools `values` into an outRows x outCols row-major `dst`: cell (r, c) goes to block
// (min(r / factor, outRows - 1), min(c / factor, outCols - 1)), so leftover rows and
// columns fold into the last block and none is dropped. NaN wins (it must never hide), then
// the largest value; -inf only when the whole block is masked. Used for the exports'
// pooled grid (factor = ceil(side / 2048)) and the widget's mip levels (factor 2).
void maxPool(MatrixRef values, int factor, int outRows, int outCols, float* dst);

// ---------------------------------------------------------------------------------------
// Which matrix to show
// ---------------------------------------------------------------------------------------

// scores (raw), masked_scores (÷T, -inf where masked), weights, q, k, v, context, concat,
// output.
enum class MatrixKind { Scores, MaskedScores, Weights, Q, K, V, Context, Concat, Output };
// Matrices whose values have a sign that matters (Q, K, V, raw and masked scores, context,
// concat, output): shown on a diverging map centred on 0 by default, in the app and in
// `attnscope export`. Weights (>= 0) are not.
bool isSignedMatrix(MatrixKind kind);
std::string_view toString(MatrixKind kind);
std::optional<MatrixKind> parseMatrixKind(std::string_view name);

// A matrix with row and column labels and a title, owning its values (what selectMatrix
// returns). It is drawn through a HeatmapView (below).
struct MatrixView {
  Matrix values;                       // rows x cols
  std::vector<std::string> rowLabels;  // rows entries
  std::vector<std::string> colLabels;  // cols entries
  std::string title;                   // e.g. "weights · head 2 of 8"
  // What the rows, the columns and the values are (io::axisTitlesOf): "query", "key",
  // "weight". Empty: no axis title / no colour-bar title.
  std::string rowAxis, colAxis, valueTitle;
  // rows x cols, false = masked (drawn hatched with no number); empty = no mask.
  BoolMatrix allowed;
};

// A matrix picked out of a result WITHOUT copying it: values() points into the result, or
// into `owned` for a mean over heads that the result does not store. Labels and title as
// in MatrixView. Valid while the result lives and is not recomputed.
struct SelectedMatrix {
  MatrixRef borrowed;  // into the result, unless `owned` holds the values
  Matrix owned;
  std::vector<std::string> rowLabels;
  std::vector<std::string> colLabels;
  std::string title;
  std::string rowAxis, colAxis, valueTitle;  // as in MatrixView
  const BoolMatrix* allowed = nullptr;        // into the result (weights), or null

  MatrixRef values() const { return owned.size() > 0 ? matrixRef(owned) : borrowed; }
};

// What the renderers, the exports and the screen widget draw: a NON-OWNING view of a matrix
// with its labels and title, so that a result's matrices, an imported tensor's (layer, head)
// slice or a model's output are shown without a copy. The owner must outlive the view.
// Label spans shorter than the matrix: the files pad them with the index ("0", "1", ...),
// the screen leaves the rest unlabelled.
struct HeatmapView {
  MatrixRef values;
  std::span<const std::string> rowLabels;
  std::span<const std::string> colLabels;
  std::string_view title;
  // Axis titles and the colour bar's title ("query", "key", "weight"); empty = none.
  std::string_view rowAxis, colAxis, valueTitle;
  // rows x cols, false = a masked cell: drawn hatched like -inf, with no number, and
  // "masked" on hover, although its value (a weight of 0) stays in the CSV. Null: none.
  const BoolMatrix* allowed = nullptr;

  // Cell (r, c) is masked by `allowed`: hatched, and no number (not "0").
  bool maskedByAllowed(int r, int c) const { return allowed != nullptr && !(*allowed)(r, c); }
  // Cell (r, c) is masked: -inf (a masked score, labelled "−∞") or masked by `allowed`.
  bool masked(int r, int c) const {
    const float v = values(r, c);
    return (v < 0 && std::isinf(v)) || maskedByAllowed(r, c);
  }

  HeatmapView() = default;
  HeatmapView(MatrixRef values, std::span<const std::string> rowLabels,
              std::span<const std::string> colLabels, std::string_view title)
      : values(values), rowLabels(rowLabels), colLabels(colLabels), title(title) {}
  // Views of a MatrixView or a SelectedMatrix (implicit, so either can be passed as is).
  HeatmapView(const MatrixView& owner)  // NOLINT(google-explicit-constructor)
      : values(matrixRef(owner.values)),
        rowLabels(owner.rowLabels),
        colLabels(owner.colLabels),
        title(owner.title),
        rowAxis(owner.rowAxis),
        colAxis(owner.colAxis),
        valueTitle(owner.valueTitle),
        allowed(owner.allowed.size() > 0 ? &owner.allowed : nullptr) {}
  HeatmapView(const SelectedMatrix& selected)  // NOLINT(google-explicit-constructor)
      : values(selected.values()),
        rowLabels(selected.rowLabels),
        colLabels(selected.colLabels),
        title(selected.title),
        rowAxis(selected.rowAxis),
        colAxis(selected.colAxis),
        valueTitle(selected.valueTitle),
        allowed(selected.allowed) {}
};

// Picks a matrix out of a result. head: 0-based head (the title says "head 2 of 8" for
// head 2, like --head), or -1 for the mean over heads (only
// scores and weights have a mean; concat and output ignore `head`). Errors name the field
// ("head" or "matrix").
Expected<MatrixView> selectMatrix(const AttentionResult& result, const Problem& problem,
                                  MatrixKind kind, int head);
// The same selection without copying the matrix (see SelectedMatrix): what the app shows.
Expected<SelectedMatrix> selectMatrixRef(const AttentionResult& result, const Problem& problem,
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
  int digits = kCellDigits;         // significant digits of cell labels (1..9); labels drop
                                    // digits where they would not fit (colour-bar ticks are
                                    // round numbers with the digits they need, colorbarTicks)
  std::optional<float> vmin, vmax;  // fixed colour range; auto (finite min/max) if unset
  bool centreZero = false;          // auto range symmetric about 0 (signed matrices, RdBu)
  RangeMode range = RangeMode::Global;  // Row: each row spans the map (io/color_scale.h);
                                        // Fixed: vmin / vmax (also implied by giving them)
  ColorScaleKind colorScale = ColorScaleKind::Linear;  // Log: log10 with a floor
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
// only when a cell is at least 2.5 label-font heights tall and every label fits its width
// (first by shrinking the font down to 7 px, then with fewer digits, see fittedCellLabel).
// Row/column labels are capped to io::kLabelDisplayChars code points ("…"), and beyond what
// fits thinned to every 2nd, 5th, 10th, ... label (io::labelStep), with the rule written
// under the grid ("rows: every 5th label"). Column labels read bottom to top when one does
// not fit its cell. The view's axis titles (rowAxis, colAxis) are drawn beside the labels,
// its valueTitle beside the colour bar, whose ticks are round numbers (io::colorbarTicks).
// Label vectors shorter than the matrix are padded with the index ("0", "1", ...).
// Errors (field): "scale" outside 1..8 or when the raster would exceed 100 megapixels
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
// written through io::writeFileAtomic (io/files.h), so it is never half-written.
// Errors name the file; an unknown extension is field "out".
Status exportMatrix(const HeatmapView& view, const HeatmapStyle& style, const std::string& path);

}  // namespace attn::io
