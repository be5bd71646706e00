// The pieces of heatmapWidget(), one per concern (internal to the widget; not for panels):
//   app/ui/widgets/heatmap_widget.cpp         the cache, uploads, and heatmapWidget() calling the rest
//   app/ui/widgets/heatmap_widget_layout.cpp  where things go, zoom / pan / hover input
//   app/ui/widgets/heatmap_widget_draw.cpp    quad, cell labels, axis labels, colorbar, hover readout,
//                                  the screenshot record
//   app/ui/widgets/heatmap_widget_menu.cpp    the context menu and the export dialog
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <imgui.h>

#include "app/ui/widgets/heatmap_widget_impl.h"
#include "app/ui/widgets/tooltip.h"
#include "render/heatmap_axis.h"

namespace attn::app::widget {

using Entry = HeatmapCache::Impl::Entry;

// One heatmap's geometry in this frame: the layout (layoutGrid), then the visible part of
// the matrix after zoom and pan (handleGridInput), then the level of detail (drawGrid).
struct Grid {
  int rows = 0, cols = 0;
  float font = 0;
  ImVec2 origin;  // top-left corner of the widget
  // Left of the grid: the row axis title (read bottom to top), then the row labels; above
  // it: the column axis title line, then the column labels (rotated when one does not fit
  // its cell); right of it: the colour bar with its ticks and title.
  float rowAxisWidth = 0, colAxisHeight = 0;
  float rowLabelWidth = 0, colLabelHeight = 0, colorbarWidth = 0;
  bool colLabelsRotated = false;
  int rowStep = 1, colStep = 1;  // every k-th label drawn (io::labelStep), by drawAxisLabels
  float rowLabelPx = 0, colLabelPx = 0;  // the labels' font sizes (io::fitRowLabels, ...)
  bool slimBare = false;  // a slim colour bar too narrow for its end numbers
  // The labels as drawn, by index ("" = skipped), when recordLabels (a layout dump).
  bool recordLabels = false;
  std::vector<std::string> rowLabelsDrawn, colLabelsDrawn;
  io::ValueRange range;          // the colour range
  io::RangeRule rule = io::RangeRule::MinMax;  // the rule in force (io::rangeRule)
  std::string ruleText;          // under the colour bar: "fixed 0–1", "per row", ...
  io::ColorbarTicks ticks;       // the colour bar's round ticks (io::colorbarTicks)
  // Per-row / log colours: cells are coloured by `positions` over {0, 1} (empty otherwise),
  // and the colour bar is labelled by `scaleTicks` (positions and texts) when not null,
  // instead of the round `ticks`, with `vminText` / `vmaxText` at its ends.
  MatrixRef positions;
  const std::vector<io::ColorbarTick>* scaleTicks = nullptr;
  std::string vminText, vmaxText;
  ImVec2 gridMin, gridMax;  // screen rectangle of the grid
  float gridW = 0, gridH = 0;
  // The visible part (UV) and what it means on screen.
  float u0 = 0, v0 = 0, u1 = 1, v1 = 1;
  float cellPxW = 0, cellPxH = 0;  // one cell on screen
  int firstRow = 0, lastRow = 0, firstCol = 0, lastCol = 0;
  int level = 0;            // level of detail the quad reads
  bool cellLabels = false;  // cell labels are drawn
  float cellLabelPx = 0;    // their font size (drawGrid: the font, or smaller so all fit)
  int cellDigits = kCellDigits;  // the cell numbers' one precision (significant digits,
                                 // drawGrid: matrixDigits of core/base/format.h)
  int numberedCells = 0;    // cells that got their number (drawGrid)
  int hatchedCells = 0;     // cells left without one because the view masks them (hatched)
  bool drawn = false;       // the quad was drawn

  // Screen position of the top-left corner of cell (r, c).
  ImVec2 cellScreenMin(int r, int c) const {
    return ImVec2(gridMin.x + (c - u0 * cols) * cellPxW, gridMin.y + (r - v0 * rows) * cellPxH);
  }
};

// The token labels' floors (render/heatmap_axis.h).
using io::kAllLabelsFloorPx;
using io::kLabelFloor;

// -- heatmap_widget_layout.cpp
// The text at the top (or bottom) end of a slim colour bar: the range's end as a number.
std::string slimEndText(io::ValueRange range, bool top);
// Row labels | grid | colorbar, column labels above: cells square where the space allows.
Grid layoutGrid(Entry& entry, const HeatmapView& view, const HeatmapOptions& options,
                io::ValueRange range);
// Zoom (wheel, around the cursor), pan (drag), reset (double-click), hover and click; then
// the visible part of the matrix into `grid`.
void handleGridInput(Entry& entry, Grid& grid, HeatmapInteraction& interaction);

// -- heatmap_widget_draw.cpp
// (fitLabel, which cuts a label to a width, is declared in app/ui/widgets/tooltip.h: the
// panels use it too)
// The label of a cell as drawn on screen: cellNumber(value, grid.cellDigits) at the grid's
// cell-label size, or nullopt when it does not fit the cell's width.
std::optional<std::string> screenCellLabel(float value, const Grid& grid);
// The text of cell (r, c): none for a cell the view's `allowed` masks (it is hatched: a
// weight of 0 there means "not attended"), else screenCellLabel of its value.
std::optional<std::string> cellText(const HeatmapView& view, int r, int c, const Grid& grid);
// The textured quad (level of detail chosen here), the highlight frame, the cell labels.
void drawGrid(HeatmapCache::Impl& impl, const Entry& entry, Grid& grid, const HeatmapView& view,
              const HeatmapOptions& options, io::ValueRange range);
// Row and column labels (capped, io::capLabel; thinned to every k-th, io::labelStep, with
// the rule beside the axis title), the axis titles. Sets grid.rowStep / colStep.
void drawAxisLabels(const Entry& entry, Grid& grid, const HeatmapView& view,
                    const HeatmapOptions& options);
// The colour bar with round ticks (or the per-row / log scale's ticks) and the view's valueTitle.
void drawColorbar(HeatmapCache::Impl& impl, const Grid& grid, const HeatmapView& view,
                  const HeatmapOptions& options);
// The hovered cell's frame and tooltip (not while panning).
void drawHoverReadout(const Entry& entry, const Grid& grid, const HeatmapView& view,
                      const HeatmapOptions& options, const HeatmapInteraction& interaction);
// Where the heatmap was drawn and one sample cell (for the screenshot sidecar).
HeatmapRecord recordOf(const char* id, const Grid& grid, const HeatmapView& view,
                       const HeatmapOptions& options, io::ValueRange range);

// -- heatmap_widget_menu.cpp
// The right-click menu (export, reset zoom, copy value) and the export dialog. Returns true
// when a file was exported this frame.
bool drawContextMenu(HeatmapCache::Impl& impl, Entry& entry, const HeatmapView& view,
                     const HeatmapOptions& options);

}  // namespace attn::app::widget
