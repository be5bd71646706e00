// Internals of HeatmapCache shared by the widget, the window (export notices, document
// name) and the screenshot sidecar (where each heatmap was drawn). Not for panels.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <imgui.h>

#include "app/ui/widgets/heatmap_textures.h"
#include "app/ui/widgets/heatmap_widget.h"
#include "render/color_scale.h"

namespace attn::app {

// Where one heatmap was drawn in the current frame, and one sample cell of it, so that a
// screenshot can be checked pixel by pixel against io::colormapColor.
struct HeatmapRecord {
  std::string id;     // the id passed to heatmapWidget()
  std::string title;  // MatrixView::title
  ColormapKind colormap = ColormapKind::Viridis;
  float vmin = 0, vmax = 1;  // the colour range (io::colorRange; vmin == vmax: constant)
  int rows = 0, cols = 0;
  ImVec2 gridMin, gridMax;               // screen rectangle of the visible grid
  float u0 = 0, v0 = 0, u1 = 1, v1 = 1;  // visible part of the matrix (UV)
  int level = 0;                         // level of detail: 0 = one texel per cell
  bool drawn = false;                    // the GPU quad was drawn (false headless)
  // The sample cell: its rectangle on screen (clipped to the grid), its value, and a point
  // inside it that no label covers.
  int sampleRow = -1, sampleCol = -1;
  float sampleValue = 0;
  std::string sampleLabel;  // the text drawn on the sample cell ("" when it has none)
  ImVec2 cellMin, cellMax, samplePoint;
  bool sampleVisible = false;  // the sample point is inside the window's clip rectangle
  // The axes as drawn: every rowStep-th / colStep-th label (io::labelStep), the column
  // labels rotated or not, the colour bar's ticks.
  int rowStep = 1, colStep = 1;
  bool colLabelsRotated = false;
  std::vector<float> ticks;
  // For the layout dump (screenshot --layout-out): one cell on screen, whether the cells
  // hold their numbers, the range rule in force, and the axis labels as drawn ("" = skipped;
  // filled only while HeatmapCache::Impl::recordLabels is set).
  float cellW = 0, cellH = 0;
  float fontPx = 0;  // the font the widget drew with
  float rowLabelPx = 0, colLabelPx = 0;  // the axis labels' font sizes (shrunk to fit)
  ImVec2 boundsMin, boundsMax;  // the whole widget: axis titles, labels, grid, colour bar
  ImVec2 clipMin, clipMax;      // the panel's clip rectangle (what of it can be seen)
  bool numbersDrawn = false;
  float numberPx = 0;  // the cell numbers' font size (smaller than fontPx where that fits all)
  // Of the visible cells: how many got their number, how many are hatched (masked by the
  // view: no number on purpose). numbersDrawn and numbered + hatched < visible: a blank cell.
  int numberedCells = 0, hatchedCells = 0, visibleCells = 0;
  std::string rangeRule;
  std::vector<std::string> rowLabels, colLabels;
  // The matrix as the cells show it, row-major (rows x cols), for a layout dump to check the
  // numbers drawn against (filled only while recordLabels is set, and only up to
  // kRecordedValues cells); masked cells of the view (hatched) are -inf.
  std::vector<float> values;
};

// The most cells whose values a layout dump records (HeatmapRecord::values).
inline constexpr int kRecordedValues = 65536;

struct HeatmapCache::Impl {
  explicit Impl(std::unique_ptr<HeatmapTextures> textures) : textures(std::move(textures)) {}

  std::unique_ptr<HeatmapTextures> textures;  // never null

  struct Entry {
    TextureId texture = 0;
    int rows = 0, cols = 0;
    int levels = 1;  // max-pooled levels of detail uploaded as mip levels
    std::uint64_t revision = ~0ull;
    std::optional<io::ValueRange> finite;  // io::finiteRange of the values, per upload
    // Per-row / log colours (io/color_scale.h): the rule of the last upload, and when it needs
    // them the uploaded colour positions (range {0, 1}: cell label colours read them), the
    // colour bar's ticks and the rule's caption for the tooltip.
    io::ColorNormalization normalization;
    Matrix positions;
    std::vector<io::ColorbarTick> scaleTicks;
    io::ValueRange scaleRange;  // io::normalizationRange of the whole matrix
    std::string caption;
    float u0 = 0, v0 = 0, u1 = 1, v1 = 1;  // zoom / pan
    bool panned = false;                   // the current press turned into a drag
    int lastFrame = 0;
    int contextRow = -1, contextCol = -1;  // cell under the mouse when the menu opened
    // Widest row / column label at font size `labelFont`, measured once per content
    // revision (not per frame: a 2048-token axis has 2048 labels).
    float labelFont = 0, rowLabelWidth = 0, colLabelWidth = 0;
    // Export dialog.
    bool openExport = false;
    std::string exportPath;
    int exportScale = 1;
    std::string exportStatus;
    bool exportFailed = false;
  };
  std::unordered_map<ImGuiID, Entry> entries;

  std::vector<HeatmapRecord> records;  // heatmaps drawn in frame `recordsFrame`
  bool recordLabels = false;  // records keep the axis labels as drawn (a layout dump)
  int recordsFrame = -1;

  std::string exportPrefix = "attnscope";  // scenario name for default export file names
  std::vector<std::string> messages;       // export results, drained into notices by the window
  // The image view's picture (app/ui/panels/panel_image.cpp): an RGB8 texture and the image it holds.
  unsigned imageTexture = 0;
  std::uint64_t imageTextureId = 0;
  std::uint64_t uploads = 0;  // texture uploads so far (the frame-time harness reports them)
  // Re-uploads of changed values share a byte budget per frame, so that a result that
  // changes many 2048 x 2048 heatmaps at once is spread over a few frames instead of
  // stalling one (a heatmap keeps showing its previous texture until its turn). 0 = no
  // budget (screenshots and tests: every upload happens in the frame that asks for it).
  // A first upload and a change of shape are never deferred.
  std::size_t uploadBudgetBytes = 0;
  std::size_t uploadedThisFrame = 0;
  int deferredUploads = 0;  // re-uploads postponed in the last frame (the window keeps drawing)

  void releaseEntry(Entry& entry);
  void releaseAll();
};

// "Decoder state (Luong)" -> "decoder_state_luong": safe in a file name.
std::string fileStem(const std::string& text);

}  // namespace attn::app
