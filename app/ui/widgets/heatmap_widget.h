// The heatmap widget: a matrix drawn through an R32F texture and a colormap LUT in a
// fragment shader (assets/shaders/heatmap.*), with zoom, pan, hover, labels and a colorbar.
// Per-frame cost does not grow with the number of cells: values are uploaded only when
// their revision changes, and only visible, large-enough cells get text labels.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <imgui.h>

#include "render/heatmap_render.h"

namespace attn::app {

// The colour rule (io::ColorRule: the map, the range mode, the scale, fixed ends, what the
// values are; the exports' rule too) and how the widget draws. With a Row range or a Log
// scale the widget uploads each cell's colour position instead of its value.
struct HeatmapOptions : io::ColorRule {
  bool cellLabels = true;           // numbers in cells large enough to hold them
  bool axisLabels = true;           // token labels along the axes
  bool allLabels = false;           // every token label drawn (presentation, stage alone)
  bool colorbar = true;
  bool slimColorbar = false;        // a narrow bar with its two ends only (thumbnails, cards)
  bool highlight = false;           // draw a highlight frame (pipeline step-through)
  int markRow = -1, markCol = -1;   // a cell to outline (linked hover), -1 = none
  ImVec2 size{0, 0};                // 0 = fit: cells square, as large as the space allows
  const char* tooltip = nullptr;    // extra line shown on hover (what the matrix means)
  // Presentation (app/ui/panels/panel_pipeline.cpp): no tooltip over the cells (a click
  // inspects instead); a click on a cell, a row label or a column label spotlights it (the
  // rest of the grid dimmed; a second click on it, or clearSpotlights, ends it); cell
  // numbers grow with their cells (up to kMaxNumberScale font heights); the keyboard zoom.
  bool hoverReadout = true;
  bool spotlight = false;
  bool scaleNumbers = false;
  float minNumberScale = 0.7f;  // the smallest cell numbers, in font heights (io::kLabelFloor;
                                // Classroom text in presentation goes as low as Normal's)
  int zoomSteps = 0;       // this frame: zoom in (> 0) or out by 1.25 per step, about the
                           // spotlight (else the middle of what is shown)
  bool zoomReset = false;  // this frame: back to the whole matrix
};

// The largest cell numbers of a heatmap with HeatmapOptions::scaleNumbers, in font heights.
inline constexpr float kMaxNumberScale = 2.0f;
// The name (ImFontConfig::Name) of the atlas's digits-only font at kMaxNumberScale times the
// text size (app/ui/shell/theme.cpp), which numbers larger than the text are drawn with.
inline constexpr const char* kNumberFontName = "attnscope numbers";

// What happened this frame. `row`/`col` are valid when hovered.
struct HeatmapInteraction {
  bool hovered = false;
  int row = -1, col = -1;
  bool clicked = false;        // left click on a cell (e.g. toggling a custom mask cell)
  bool exportRequested = false;  // the user chose an export entry from the context menu
  // The spotlight after this frame (HeatmapOptions::spotlight): a cell (both >= 0), a row
  // (col -1), a column (row -1) or none (both -1); `spotlightChanged` when a click set or
  // ended it this frame.
  int spotRow = -1, spotCol = -1;
  bool spotlightChanged = false;
};

class HeatmapTextures;

// Textures and zoom/pan of every heatmap on screen, keyed by ImGui id. Owned by the app,
// not by AppState. The textures are an interface (app/ui/widgets/heatmap_textures.h): OpenGL in the
// window, MockHeatmapTextures in headless tests, where the widget still lays out, labels
// and reports hover.
class HeatmapCache {
 public:
  explicit HeatmapCache(std::unique_ptr<HeatmapTextures> textures);
  ~HeatmapCache();
  HeatmapCache(const HeatmapCache&) = delete;
  HeatmapCache& operator=(const HeatmapCache&) = delete;

  // Loads what the textures need to draw (with GL: the shaders and LUT textures, which
  // needs a GL context). Returns an error message, empty on success.
  std::string initGpu();
  HeatmapTextures& textures();

  struct Impl;
  Impl& impl();

 private:
  std::unique_ptr<Impl> impl_;
};

// Draws `view` (non-owning: a result's matrix, a slice of an imported tensor, ...) as a
// heatmap. `contentRevision` must change whenever the values change
// (e.g. the document revision); the texture is re-uploaded only then.
// Right-click opens a context menu: export PNG (1x..8x), SVG, CSV through io::exportMatrix
// (the same files as `attnscope export`), reset zoom, copy value.
HeatmapInteraction heatmapWidget(const char* id, HeatmapCache& cache, const HeatmapView& view,
                                 std::uint64_t contentRevision, const HeatmapOptions& options);

// Ends every heatmap's spotlight (Escape in presentation). True when one was on.
bool clearSpotlights(HeatmapCache& cache);

// The width heatmapWidget gives the full colour bar of `view` beside its grid (the bar, its
// round ticks, one title line) at the current font, for a caller that sizes the widget
// (pixels). Per-row and log colours: an upper bound ("row max", the decades).
float colorbarWidthOf(const HeatmapView& view, const HeatmapOptions& options);

// The cells behind one texel of the widget's max-pooled level of detail `level` (0 = the
// cell itself). The widget halves rows and columns (max(1, side / 2) each time, a last odd
// row or column folding into the last block, attn::maxPoolBlocks) until both sides are at most 16
// cells; the cell (row, col) lies in the block [row0, row1] x [col0, col1] of `level`.
// `max` and (maxRow, maxCol): that block's largest value (NaN wins, as in the pooling) and
// where it is. `level` is clamped to the levels the widget makes for this shape.
struct PooledBlock {
  int row0 = 0, row1 = 0, col0 = 0, col1 = 0;
  float max = 0;
  int maxRow = 0, maxCol = 0;
};
PooledBlock pooledBlock(MatrixRef values, int level, int row, int col);

}  // namespace attn::app
