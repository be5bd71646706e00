// The heatmap widget (see heatmap_widget.h and docs/heatmaps.md).
//
// Per frame the cost does not depend on the number of cells: the values live in an R32F
// texture that is re-uploaded only when the content revision or the shape changes, the
// colormap is applied by assets/shaders/heatmap.frag through a 256-entry LUT, zoom and pan only
// move the UV rectangle, and text labels are drawn only for visible cells that are large
// enough. When cells are smaller than a pixel the shader reads a max-pooled level of detail
// (computed on the CPU at upload time), so that sharp peaks stay visible.
//
// This file: the cache, uploads, and heatmapWidget() calling its pieces, which live by
// concern in heatmap_widget_layout.cpp, heatmap_widget_draw.cpp and heatmap_widget_menu.cpp
// (see heatmap_widget_parts.h).
#include "app/ui/widgets/heatmap_widget.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include <imgui.h>

#include "app/ui/widgets/heatmap_prepared.h"
#include "app/ui/widgets/heatmap_textures.h"
#include "app/ui/widgets/heatmap_widget_impl.h"
#include "app/ui/widgets/heatmap_widget_parts.h"
#include "core/attention/aggregate.h"
#include "formats/files.h"

namespace attn::app {

namespace {

// Levels of detail stop when both sides are at most this many texels.
constexpr int kMinPooledSide = 16;

// Uploads the view's values (with -inf where its `allowed` masks a cell, so that the shader
// hatches it) and its max-pooled levels of detail (halvings until both sides are at
// most kMinPooledSide, GL's mip sizes max(1, side / 2)), and keeps its finite range for the
// auto colour range (once per upload, not per frame), or takes `finite` when the caller
// made it ahead (PreparedColors).
void uploadValues(HeatmapTextures& textures, HeatmapCache::Impl::Entry& entry,
                  const HeatmapView& view, const std::optional<io::ValueRange>* finite = nullptr) {
  MatrixRef values = view.values;
  entry.finite = finite ? *finite : io::finiteRange(values);
  Matrix masked;
  if (view.allowed != nullptr) {
    masked = values.copy();
    for (int r = 0; r < values.rows; ++r)
      for (int c = 0; c < values.cols; ++c)
        if (view.maskedByAllowed(r, c)) masked(r, c) = -std::numeric_limits<float>::infinity();
    values = matrixRef(masked);
  }
  const bool reshaped = values.rows != entry.rows || values.cols != entry.cols;
  entry.rows = values.rows;
  entry.cols = values.cols;
  if (reshaped) entry.u0 = entry.v0 = 0, entry.u1 = entry.v1 = 1;
  if (values.empty()) return;
  std::vector<std::vector<float>> pooled;
  std::vector<MatrixRef> levels{values};
  while ((levels.back().rows > kMinPooledSide || levels.back().cols > kMinPooledSide) &&
         (levels.back().rows > 1 || levels.back().cols > 1)) {
    const MatrixRef& last = levels.back();
    const int h = std::max(1, last.rows / 2), w = std::max(1, last.cols / 2);
    pooled.emplace_back(static_cast<std::size_t>(h) * static_cast<std::size_t>(w));
    // GL mip sizes (floor halves): a last odd row or column folds into the last block.
    maxPoolBlocks(last, 2, 2, h, w, pooled.back().data());
    levels.push_back(MatrixRef{pooled.back().data(), h, w, w});
  }
  entry.levels = static_cast<int>(levels.size());
  entry.texture = textures.upload(entry.texture, levels);
}

}  // namespace

// =======================================================================================
// HeatmapCache
// =======================================================================================

std::string fileStem(const std::string& text) { return io::fileSlug(text, "heatmap"); }

void HeatmapCache::Impl::releaseEntry(Entry& entry) {
  textures->release(entry.texture);
  entry.texture = 0;
}

void HeatmapCache::Impl::releaseAll() {
  for (auto& [id, entry] : entries) releaseEntry(entry);
  entries.clear();
  textures->release(imageTexture);
  imageTexture = 0;
}

HeatmapCache::HeatmapCache(std::unique_ptr<HeatmapTextures> textures)
    : impl_(std::make_unique<Impl>(std::move(textures))) {}

HeatmapCache::~HeatmapCache() {
  impl_->releaseAll();
}

HeatmapTextures& HeatmapCache::textures() {
  return *impl_->textures;
}

HeatmapCache::Impl& HeatmapCache::impl() {
  return *impl_;
}

std::string HeatmapCache::initGpu() {
  return impl_->textures->init();
}

// =======================================================================================
// The widget
// =======================================================================================

namespace {

// heatmapWidget() with or without PreparedColors (null: none).
HeatmapInteraction drawHeatmap(const char* id, HeatmapCache& cache, const HeatmapView& view,
                               std::uint64_t contentRevision, const HeatmapOptions& options,
                               const PreparedColors* prepared) {
  HeatmapInteraction interaction;
  HeatmapCache::Impl& impl = cache.impl();
  const int frame = ImGui::GetFrameCount();
  // 1 per-frame bookkeeping: forget heatmaps that have not been drawn for a while
  if (impl.recordsFrame != frame) {
    impl.records.clear();
    impl.recordsFrame = frame;
    impl.uploadedThisFrame = 0;
    impl.deferredUploads = 0;
    for (auto it = impl.entries.begin(); it != impl.entries.end();) {
      if (frame - it->second.lastFrame > 600) {
        impl.releaseEntry(it->second);
        it = impl.entries.erase(it);
      } else {
        ++it;
      }
    }
  }

  ImGui::PushID(id);
  const ImGuiID key = ImGui::GetID("##heatmap");
  HeatmapCache::Impl::Entry& entry = impl.entries[key];
  entry.lastFrame = frame;
  const int rows = view.values.rows;
  const int cols = view.values.cols;
  if (rows == 0 || cols == 0) {
    ImGui::TextDisabled("(empty matrix)");
    ImGui::PopID();
    return interaction;
  }
  // 2 upload only when the content or its shape changed, within the frame's byte budget
  //   (a same-shape re-upload past the budget waits for a later frame, showing the old one)
  const io::ColorNormalization normalization = io::normalizationOf(options);
  const bool positions = io::needsPositions(normalization);
  // What the caller made ahead, when it was made for this rule and these values' shape.
  if (prepared && (prepared->normalization != normalization ||
                   (positions && (prepared->positions.rows != rows || prepared->positions.cols != cols))))
    prepared = nullptr;
  // A change of the colour rule re-uploads when positions are (or were) uploaded.
  const bool changed = entry.revision != contentRevision ||
                       (entry.normalization != normalization &&
                        (positions || io::needsPositions(entry.normalization)));
  const bool reshaped = entry.rows != rows || entry.cols != cols || entry.revision == ~0ull;
  const std::size_t bytes = static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols) * 4;
  const bool overBudget = impl.uploadBudgetBytes > 0 && impl.uploadedThisFrame > 0 &&
                          impl.uploadedThisFrame + bytes > impl.uploadBudgetBytes;
  if (reshaped || (changed && !overBudget)) {
    entry.normalization = normalization;
    if (positions) {
      if (prepared)
        entry.positions = prepared->positions.map();  // into the last upload's storage when the shape is the same
      else
        entry.positions = io::colorPositions(view.values, normalization);
      const io::ValueRange whole =
          prepared ? prepared->range : io::normalizationRange(view.values, -1, normalization);
      entry.scaleTicks = normalization.range == RangeMode::Row
                             ? io::rowRangeTicks(normalization.colorScale)
                             : io::logDecadeTicks(whole);
      entry.scaleRange = whole;
      entry.caption = io::normalizationCaption(normalization, whole);
      // The positions, with the view's labels and mask (masked cells hatched as -inf).
      HeatmapView positioned = view;
      positioned.values = matrixRef(entry.positions);
      const std::optional<io::ValueRange> finite =
          prepared ? prepared->finite : io::finiteRange(view.values);  // of the values, for the readout
      uploadValues(*impl.textures, entry, positioned, &finite);
    } else {
      entry.positions = Matrix();
      entry.scaleTicks.clear();
      entry.caption.clear();
      uploadValues(*impl.textures, entry, view, prepared ? &prepared->finite : nullptr);
    }
    entry.revision = contentRevision;
    entry.labelFont = 0;  // labels may have changed too
    ++impl.uploads;
    impl.uploadedThisFrame += bytes;
  } else if (changed) {
    ++impl.deferredUploads;
  }
  // Positions (per row, log) are already on the map: their range is 0..1.
  const bool usePositions = entry.positions.size() > 0;
  // The rule in force (io::rangeRule): weights 0..1, signed symmetric, ... by default.
  const io::RangeRule rule = io::rangeRule(entry.finite, normalization);
  const io::ValueRange range =
      usePositions ? io::ValueRange{0, 1} : io::ruleRange(entry.finite, normalization);

  // 3 layout, 4 input, 5 drawing, 6 menu, 7 the record for the screenshot sidecar
  const std::string ruleText =
      usePositions && !entry.caption.empty()
          ? (rule == io::RangeRule::Row ? std::string("per row") : entry.caption)
          : io::rangeRuleCaption(rule, range);
  widget::Grid grid = widget::layoutGrid(entry, view, options, range, ruleText);
  grid.rule = rule;
  grid.recordLabels = impl.recordLabels;
  grid.ruleText = ruleText;
  if (usePositions && entry.positions.rows() == rows && entry.positions.cols() == cols)
    grid.positions = matrixRef(entry.positions);
  widget::applyKeyboardZoom(entry, options);
  widget::handleGridInput(entry, grid, interaction);
  widget::handleSpotlightInput(entry, grid, options, interaction);
  widget::drawGrid(impl, entry, grid, view, options, range);
  widget::drawSpotlight(entry, grid);
  widget::drawAxisLabels(entry, grid, view, options);
  widget::drawColorbar(impl, grid, view, options);
  widget::drawHoverReadout(entry, grid, view, options, interaction);
  interaction.exportRequested = widget::drawContextMenu(impl, entry, view, options);
  impl.records.push_back(widget::recordOf(id, grid, view, options, range));
  impl.records.back().spotRow = entry.spotRow;
  impl.records.back().spotCol = entry.spotCol;
  impl.records.back().dimRects = grid.dimRects;
  impl.records.back().colorbarTitle = grid.titleLines;

  // 8 reserve the space
  const float font = grid.font;
  const ImVec2 used(options.size.x > 0 ? options.size.x
                                       : grid.rowAxisWidth + grid.rowLabelWidth + grid.gridW +
                                             grid.colorbarWidth,
                    options.size.y > 0
                        ? options.size.y
                        : grid.colAxisHeight + grid.colLabelHeight + std::max(grid.gridH, font * 3));
  ImGui::SetCursorScreenPos(grid.origin);
  ImGui::Dummy(used);
  ImGui::PopID();
  return interaction;
}

}  // namespace

HeatmapInteraction heatmapWidget(const char* id, HeatmapCache& cache, const HeatmapView& view,
                                 std::uint64_t contentRevision, const HeatmapOptions& options) {
  return drawHeatmap(id, cache, view, contentRevision, options, nullptr);
}

HeatmapInteraction heatmapWidget(const char* id, HeatmapCache& cache, const HeatmapView& view,
                                 std::uint64_t contentRevision, const HeatmapOptions& options,
                                 const PreparedColors& prepared) {
  return drawHeatmap(id, cache, view, contentRevision, options, &prepared);
}

bool clearSpotlights(HeatmapCache& cache) {
  bool any = false;
  for (auto& [id, entry] : cache.impl().entries) {
    any = any || entry.spotRow >= 0 || entry.spotCol >= 0;
    entry.spotRow = entry.spotCol = -1;
  }
  return any;
}

// =======================================================================================
// Levels of detail behind a hovered cell
// =======================================================================================

PooledBlock pooledBlock(MatrixRef values, int level, int row, int col) {
  PooledBlock block;
  if (values.empty()) return block;
  row = std::clamp(row, 0, values.rows - 1);
  col = std::clamp(col, 0, values.cols - 1);
  // 1 the sides of every level, as uploadValues() makes them
  std::vector<int> heights{values.rows}, widths{values.cols};
  while (static_cast<int>(heights.size()) <= level &&
         (heights.back() > kMinPooledSide || widths.back() > kMinPooledSide) &&
         (heights.back() > 1 || widths.back() > 1)) {
    heights.push_back(std::max(1, heights.back() / 2));
    widths.push_back(std::max(1, widths.back() / 2));
  }
  level = std::clamp(level, 0, static_cast<int>(heights.size()) - 1);
  // 2 down: the texel of the hovered cell at `level` (maxPoolBlocks folds the last odd row in)
  int r = row, c = col;
  for (int k = 1; k <= level; ++k) {
    r = std::min(r / 2, heights[static_cast<std::size_t>(k)] - 1);
    c = std::min(c / 2, widths[static_cast<std::size_t>(k)] - 1);
  }
  // 3 up: the cells of that texel, level by level
  int r0 = r, r1 = r, c0 = c, c1 = c;
  for (int k = level; k >= 1; --k) {
    const int h = heights[static_cast<std::size_t>(k)], w = widths[static_cast<std::size_t>(k)];
    const int below_h = heights[static_cast<std::size_t>(k - 1)];
    const int below_w = widths[static_cast<std::size_t>(k - 1)];
    r1 = r1 == h - 1 ? below_h - 1 : 2 * r1 + 1;
    c1 = c1 == w - 1 ? below_w - 1 : 2 * c1 + 1;
    r0 = 2 * r0;
    c0 = 2 * c0;
  }
  block.row0 = r0, block.row1 = r1, block.col0 = c0, block.col1 = c1;
  // 4 the block's maximum (NaN wins, then the largest value)
  block.max = values(r0, c0);
  block.maxRow = r0, block.maxCol = c0;
  for (int rr = r0; rr <= r1; ++rr) {
    for (int cc = c0; cc <= c1; ++cc) {
      const float v = values(rr, cc);
      if (std::isnan(block.max)) break;
      if (std::isnan(v) || v > block.max) {
        block.max = v;
        block.maxRow = rr, block.maxCol = cc;
      }
    }
  }
  return block;
}

}  // namespace attn::app
