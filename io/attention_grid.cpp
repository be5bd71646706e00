// The layer x head grid image (see attention_grid.h).
#include "io/attention_grid.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include "io/files.h"

namespace attn::io {

namespace {

constexpr int kGap = 6;  // pixels between thumbnails and around the grid

std::string twoPart(char a, int x, char b, int y) {
  std::string out(1, a);
  out += std::to_string(x);
  out += ' ';
  out += b;
  out += std::to_string(y);
  return out;
}

}  // namespace

Expected<Image> renderAttentionGrid(const HeadOverview& overview, const GridStyle& style) {
  if (style.thumbnailSize < 1 || style.thumbnailSize > 128) {
    return Error{"", "thumbnailSize", "must be in 1..128"};
  }
  if (style.cellPixels < 1 || style.cellPixels > 8)
    return Error{"", "cellPixels", "must be in 1..8"};
  const std::size_t count = static_cast<std::size_t>(overview.layers * overview.heads);
  if (count == 0 || overview.thumbnails.size() != count) {
    return Error{"", "grid", "no heads to draw"};
  }
  // 1 one colour range for every head, so thumbnails compare
  float hi = -std::numeric_limits<float>::infinity();
  for (const Matrix& t : overview.thumbnails) {
    for (Eigen::Index i = 0; i < t.size(); ++i) {
      if (std::isfinite(t.data()[i])) hi = std::max(hi, t.data()[i]);
    }
  }
  HeatmapStyle heatmap;
  heatmap.colormap = style.colormap;
  heatmap.cellLabels = false;
  heatmap.axisLabels = false;
  heatmap.colorbar = false;
  heatmap.title = true;
  heatmap.cellSize = style.cellPixels;
  heatmap.vmin = style.vmin.value_or(0.0f);
  heatmap.vmax =
      style.vmax.value_or(std::isfinite(hi) && hi > *heatmap.vmin ? hi : *heatmap.vmin + 1);
  if (!(*heatmap.vmin < *heatmap.vmax)) return Error{"", "vmin", "must be less than vmax"};

  // 2 each thumbnail, titled "L<layer> H<head>"
  std::vector<Image> tiles;
  tiles.reserve(count);
  int tileW = 0, tileH = 0;
  for (int l = 0; l < overview.layers; ++l) {
    for (int h = 0; h < overview.heads; ++h) {
      MatrixView view;
      view.values = overview.thumbnails[static_cast<std::size_t>(l * overview.heads + h)];
      view.title = twoPart('L', l, 'H', h);
      Expected<Image> tile = renderHeatmap(view, heatmap);
      if (!tile) return tile.error();
      tileW = std::max(tileW, tile->width);
      tileH = std::max(tileH, tile->height);
      tiles.push_back(std::move(tile).value());
    }
  }
  // 3 tile them: rows are layers, columns are heads
  const long long width = static_cast<long long>(overview.heads) * (tileW + kGap) + kGap;
  const long long height = static_cast<long long>(overview.layers) * (tileH + kGap) + kGap;
  if (width * height > 100'000'000) {
    return Error{"", "grid",
                 "the grid would be " + std::to_string(width) + " x " + std::to_string(height) +
                     " pixels, above 100 megapixels; use a smaller thumbnail size"};
  }
  Image grid;
  grid.width = static_cast<int>(width);
  grid.height = static_cast<int>(height);
  grid.rgb.assign(static_cast<std::size_t>(width * height * 3), 255);
  for (std::size_t i = 0; i < tiles.size(); ++i) {
    const Image& tile = tiles[i];
    const int x0 =
        kGap + static_cast<int>(i % static_cast<std::size_t>(overview.heads)) * (tileW + kGap);
    const int y0 =
        kGap + static_cast<int>(i / static_cast<std::size_t>(overview.heads)) * (tileH + kGap);
    for (int y = 0; y < tile.height; ++y) {
      std::copy_n(tile.rgb.data() + static_cast<std::size_t>(y) * tile.width * 3, tile.width * 3,
                  grid.rgb.data() + (static_cast<std::size_t>(y0 + y) * grid.width + x0) * 3);
    }
  }
  return grid;
}

Status exportAttentionGrid(const AttentionFile& file, const GridStyle& style,
                           const std::string& path) {
  std::string extension = std::filesystem::path(path).extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (extension != ".png") return Error{path, "out", "the grid is written as .png only"};
  HeadOverviewOptions options;
  options.thumbnailSize = style.thumbnailSize;
  const HeadOverview overview = overviewHeads(file, options);
  Expected<Image> image = renderAttentionGrid(overview, style);
  if (!image) {
    Error error = image.error();
    if (error.file.empty()) error.file = path;
    return error;
  }
  Expected<std::string> png = encodePng(*image);
  if (!png) {
    Error error = png.error();
    if (error.file.empty()) error.file = path;
    return error;
  }
  return writeFileAtomic(path, *png);
}

}  // namespace attn::io
