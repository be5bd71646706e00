// The layer x head grid image (see attention_grid.h).
#include "render/attention_grid.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include "formats/files.h"
#include "render/heatmap_layout.h"

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
  if (style.resolution < 1 || style.resolution > 8) return Error{"", "scale", "must be in 1..8"};
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
  // Thumbnails at least kGridMinThumbnailPixels wide: larger cells for small matrices.
  int cells = 1;
  for (const Matrix& t : overview.thumbnails) {
    cells = std::max({cells, static_cast<int>(t.rows()), static_cast<int>(t.cols())});
  }
  heatmap.cellSize = std::max(style.cellPixels, (kGridMinThumbnailPixels + cells - 1) / cells);
  heatmap.resolution = style.resolution;
  heatmap.vmin = style.vmin.value_or(0.0f);
  // Weights on 0..1 (io::rangeRule's fixed rule for probabilities), unless one lies above 1.
  const float top = std::isfinite(hi) && hi > 1.0f ? hi : 1.0f;
  heatmap.vmax = style.vmax.value_or(top > *heatmap.vmin ? top : *heatmap.vmin + 1);
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
  // 3 the colour bar: the heatmap raster's own, cut from a one-column heatmap as tall as
  // the grid (its cells are left out; the bar starts at layout.cbX)
  const int gap = kGap * style.resolution;
  const long long gridHeight = static_cast<long long>(overview.layers) * (tileH + gap) + gap;
  HeatmapStyle barStyle = heatmap;
  barStyle.title = false;
  barStyle.colorbar = true;
  const int barRows = static_cast<int>(
      std::clamp<long long>((gridHeight / style.resolution - 2 * kGap + 39) / 40, 1, 2048));
  barStyle.cellSize = std::max<int>(1, static_cast<int>((gridHeight / style.resolution - 2 * kGap) /
                                                        barRows));
  MatrixView barView;
  barView.values = Matrix::Zero(barRows, 1);
  Expected<const detail::Font*> font = detail::loadFont(detail::fontPathOf(barStyle));
  if (!font) return font.error();
  const detail::Layout barLayout = detail::computeLayout(barView, barStyle, *font);
  Expected<Image> bar = renderHeatmap(barView, barStyle);
  if (!bar) return bar.error();
  const int barX0 = std::max(0, barLayout.cbX - 2 * barLayout.frame);
  const int barW = bar->width - barX0;

  // 4 tile them: rows are layers, columns are heads; the colour bar on the right
  const long long width = static_cast<long long>(overview.heads) * (tileW + gap) + gap + barW;
  const long long height = std::max<long long>(gridHeight, bar->height);
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
        gap + static_cast<int>(i % static_cast<std::size_t>(overview.heads)) * (tileW + gap);
    const int y0 =
        gap + static_cast<int>(i / static_cast<std::size_t>(overview.heads)) * (tileH + gap);
    for (int y = 0; y < tile.height; ++y) {
      std::copy_n(tile.rgb.data() + static_cast<std::size_t>(y) * tile.width * 3, tile.width * 3,
                  grid.rgb.data() + (static_cast<std::size_t>(y0 + y) * grid.width + x0) * 3);
    }
  }
  const int barLeft = grid.width - barW;
  for (int y = 0; y < bar->height; ++y) {
    std::copy_n(bar->rgb.data() + (static_cast<std::size_t>(y) * bar->width + barX0) * 3, barW * 3,
                grid.rgb.data() + (static_cast<std::size_t>(y) * grid.width + barLeft) * 3);
  }
  return grid;
}

Status exportAttentionGrid(const AttentionFile& file, const GridStyle& style,
                           const std::string& path) {
  if (lowerExtension(path) != ".png") return Error{path, "out", "the grid is written as .png only"};
  HeadOverviewOptions options;
  options.thumbnailSize = style.thumbnailSize;
  const HeadOverview overview = overviewHeads(file, options);
  Expected<Image> image = renderAttentionGrid(overview, style);
  if (!image) return withFile(image.error(), path);
  return writePng(*image, path);
}

}  // namespace attn::io
