// The layer x head grid of an attention file as ONE labelled PNG (`attnscope export FILE
// --grid --out grid.png`): every head's thumbnail (io::overviewHeads, max-pooled to at most
// `thumbnailSize` cells per side) drawn by renderHeatmap with the title "L<layer> H<head>",
// rows are layers, columns are heads, one colour range for all of them. No GL, no UI.
#pragma once

#include <string>

#include "core/base/types.h"
#include "formats/attention_file.h"
#include "render/heatmap_render.h"

namespace attn::io {

inline constexpr int kGridMinThumbnailPixels = 96;  // at resolution 1

struct GridStyle {
  int thumbnailSize = 64;  // cells per side at most (1..128)
  int cellPixels = 2;      // pixels per thumbnail cell at least (1..8); raised so that a
                           // thumbnail is at least kGridMinThumbnailPixels wide
  int resolution = 1;      // 1..8, multiplies every size (export --scale)
  ColormapKind colormap = ColormapKind::Viridis;
  std::optional<float> vmin, vmax;  // default: 0 .. the largest finite value of all heads
};

// overview: from overviewHeads(file, {thumbnailSize}). The grid has a colour bar on its
// right (the heatmap raster's, round ticks from io::colorbarTicks). Errors: a style out of
// range, a grid above 100 megapixels, the font.
Expected<Image> renderAttentionGrid(const HeadOverview& overview, const GridStyle& style);

// Computes the overview and writes the grid to `path` (.png only).
Status exportAttentionGrid(const AttentionFile& file, const GridStyle& style,
                           const std::string& path);

}  // namespace attn::io
