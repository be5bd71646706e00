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
inline constexpr Rgb kMaskedColor{200, 200, 200};  // -inf (masked score): light grey, hatched
inline constexpr Rgb kNanColor{255, 0, 255};       // NaN: magenta (should never happen)

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
  Matrix values;                        // rows x cols
  std::vector<std::string> rowLabels;   // rows entries
  std::vector<std::string> colLabels;   // cols entries
  std::string title;                    // e.g. "weights, head 2"
};

// Picks a matrix out of a result. head: 0-based head, or -1 for the mean over heads (only
// scores and weights have a mean; concat and output ignore `head`). Errors name the field
// ("head" or "matrix").
Expected<MatrixView> selectMatrix(const AttentionResult& result, const Problem& problem,
                                  MatrixKind kind, int head);

// ---------------------------------------------------------------------------------------
// Rendering
// ---------------------------------------------------------------------------------------

struct HeatmapStyle {
  ColormapKind colormap = ColormapKind::Viridis;
  bool cellLabels = true;   // numbers in the cells
  bool axisLabels = true;   // token labels on the axes
  bool colorbar = true;
  bool title = true;
  int scale = 1;            // 1..8, multiplies every size (resolution for slides)
  int cellSize = 40;        // cell edge in pixels at scale 1 (shrunk for large matrices)
  int decimals = 2;         // digits after the point in cell labels
  std::optional<float> vmin, vmax;  // fixed colour range; auto (finite min/max) if unset
};

struct Image {
  int width = 0, height = 0;
  std::vector<std::uint8_t> rgb;  // width*height*3, row 0 at the top
};

// Rasterises a heatmap with (optional) title, axis labels, cell labels and a colorbar.
// Text uses DejaVu Sans through stb_truetype. Masked (-inf) cells are drawn hatched grey,
// NaN cells magenta. The pixel rectangle of cell (r, c) is returned by cellRect().
Expected<Image> renderHeatmap(const MatrixView& view, const HeatmapStyle& style);

struct PixelRect {
  int x0, y0, x1, y1;  // half-open: [x0, x1) x [y0, y1)
};
// Where renderHeatmap() draws cell (row, col) for this view and style.
PixelRect cellRect(const MatrixView& view, const HeatmapStyle& style, int row, int col);

// Writes the view to `path`, format by extension: .png (renderHeatmap + stb_image_write),
// .svg (vector, same layout), .csv (labels + values, full float precision). Errors name
// the file.
Status exportMatrix(const MatrixView& view, const HeatmapStyle& style, const std::string& path);

}  // namespace attn::io
