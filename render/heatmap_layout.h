// The layout shared by the PNG rasteriser, the SVG writer and cellRect(), and the
// pieces the heatmap files share (render/heatmap_raster.cpp, heatmap_svg.cpp, heatmap_csv.cpp,
// heatmap_render.cpp). Internal to io/; not an API.
//
// The layout is computed at scale 1 in whole pixels and then multiplied by the scale, so a
// 2x export is exactly twice the size of a 1x export and the cell rectangles that tests and
// the app check are exact.
#pragma once

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "render/color_scale.h"
#include "render/font.h"
#include "render/heatmap_axis.h"
#include "render/heatmap_render.h"

namespace attn::io::detail {

inline constexpr float kInf = std::numeric_limits<float>::infinity();

// The grid may use at most this many pixels per side at scale 1; beyond it cells shrink,
// and below one pixel per cell the matrix is max-pooled.
inline constexpr int kGridBudget = 2048;

inline constexpr Rgb kTextColor{25, 25, 25};
inline constexpr Rgb kFrameColor{70, 70, 70};

// Everything in FINAL pixels (resolution applied), except where noted.
struct Layout {
  int resolution = 1;
  int rows = 0, cols = 0;          // of the matrix
  int pool = 1;                    // max-pool factor (1 = none)
  int gridRows = 0, gridCols = 0;  // after pooling
  int cell = 0, pitch = 0;         // cell edge, cell + gap
  int gridX = 0, gridY = 0, gridW = 0, gridH = 0;
  int width = 0, height = 0;
  int frame = 1;  // frame line width around grid and colorbar

  float titlePx = 0, axisPx = 0, cellPx = 0, tickPx = 0;  // font em sizes
  bool showTitle = false, showRowLabels = false, showColLabels = false;
  bool showCellLabels = false, showColorbar = false;
  bool colLabelsVertical = false;
  int cellDigits = kCellDigits;  // significant digits of the cell labels (<= style.digits)
  int rowStep = 1, colStep = 1;
  int rowLabelRight = 0;   // right edge of the row labels
  int colLabelBottom = 0;  // bottom edge of the column labels
  int titleX = 0, titleBaseline = 0;
  // Axis titles (HeatmapView::rowAxis / colAxis): the column axis's centred above the column
  // labels, the row axis's read bottom to top left of the row labels (x of its baseline).
  bool showColAxis = false, showRowAxis = false;
  int colAxisBaseline = 0, rowAxisX = 0;
  // The thinning rule under the grid ("rows: every 2nd label"), when labels are skipped.
  std::string note;
  int noteBaseline = 0;
  int cbX = 0, cbY = 0, cbW = 0, cbH = 0;
  int tickLength = 0, tickLabelX = 0;
  // The colour bar's title (HeatmapView::valueTitle), read bottom to top right of the ticks.
  bool showValueTitle = false;
  int valueTitleX = 0;
  ValueRange range;
  RangeRule rule = RangeRule::MinMax;  // the rule in force (io::rangeRule)
  // Colorbar tick values, bottom to top: io::colorbarTicks for one linear range (shown with
  // `tickDigits` significant digits), or positions labelled by `tickTexts` (below).
  std::vector<float> ticks;
  int tickDigits = kCellDigits;
  // Per-row ranges or the log scale (render/color_scale.h): the cells are coloured by their
  // positions on the map (`positions`, full size, range {0, 1}), the ticks are positions too
  // and `tickTexts` (one per tick) say what they mean ("0.01", "row max"). `caption` names the
  // rule after the title: "per row: row min → row max", "log₁₀ scale, ...", or for one
  // linear range io::rangeRuleCaption ("fixed 0–1", "symmetric ±2.5", "min–max").
  Matrix positions;
  std::vector<std::string> tickTexts;
  std::string caption;
  std::string title;  // view.title, then " (caption)" when there is one
  // What cell (r, c) is coloured by: its position, or its value over `range`.
  float colorValue(const HeatmapView& view, int r, int c) const {
    return positions.size() > 0 ? positions(r, c) : view.values(r, c);
  }

  int cellX(int gridCol) const { return gridX + gridCol * pitch; }
  int cellY(int gridRow) const { return gridY + gridRow * pitch; }
  // y of a colorbar value's tick line.
  int tickY(float value) const {
    const double span = static_cast<double>(range.hi) - range.lo;
    const double t = span > 0 ? (value - static_cast<double>(range.lo)) / span : 0.5;
    return cbY + static_cast<int>(std::lround((1 - t) * (cbH - frame)));
  }
};

// The row / column label, or the index when the view has fewer labels.
std::string rowLabel(const HeatmapView& view, int r);
std::string colLabel(const HeatmapView& view, int c);
// The same as drawn: capped to kLabelDisplayChars code points (io::capLabel).
std::string shownRowLabel(const HeatmapView& view, int r);
std::string shownColLabel(const HeatmapView& view, int c);
// Errors of a style or an empty matrix (see renderHeatmap in heatmap_render.h).
Status checkStyle(const HeatmapView& view, const HeatmapStyle& style);
// The style's font file, or DejaVu Sans.
std::string fontPathOf(const HeatmapStyle& style);
// The whole layout. `font` may be null (cellRect without a font): text is then estimated.
Layout computeLayout(const HeatmapView& view, const HeatmapStyle& style, const Font* font);
// The grid's colour values (the matrix, or its positions when `L.positions` is set) or their
// max-pooled blocks (kept in `storage`), with -inf in the cells the view's `allowed` masks.
MatrixRef gridValues(const HeatmapView& view, const Layout& L, Matrix& storage);
// Refuses rasters over 100 megapixels (field "scale"); the SVG has no such limit.
Status checkRasterSize(const Layout& layout);

// Where a text's origin goes: centred vertically on y (using the cap height, which centres
// digits and capitals), horizontally by alignment.
enum class Align { Left, Center, Right };
struct TextPlacement {
  float x;         // pen start
  float baseline;  // baseline y
};
TextPlacement placeText(const Font& font, const std::u32string& text, float px, float anchorX,
                        float centreY, Align align);

// The three renderings (heatmap_raster.cpp, heatmap_svg.cpp, heatmap_csv.cpp).
void drawRaster(Image& image, const HeatmapView& view, const HeatmapStyle& style, const Layout& L,
                const Font& font);
std::string renderSvg(const HeatmapView& view, const HeatmapStyle& style, const Layout& L,
                      const Font& font);
std::string renderCsv(const HeatmapView& view);

}  // namespace attn::io::detail
