// The attention overlay of one query patch (render/image_overlay.h).
#include "render/image_overlay.h"

#include "render/color_scale.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace attn::io {

// =======================================================================================
// Overlay
// =======================================================================================

ValueRange overlayRange(const Vector& weights, const OverlayStyle& style) {
  const Matrix row = weights.transpose();
  ColorNormalization n;
  n.range = style.range;
  n.vmin = style.vmin;
  n.vmax = style.vmax;
  n.probability = true;
  return ruleRange(finiteRange(matrixRef(row)), n);
}

Expected<Image> renderPatchOverlay(const Image& image, const PatchGrid& grid, const Vector& weights,
                                   int queryIndex, const OverlayStyle& style) {
  // 1 checks
  if (!(style.opacity >= 0 && style.opacity <= 1)) {
    return Error{"", "opacity", "must be in 0..1"};
  }
  if (style.resolution < 1 || style.resolution > 8) return Error{"", "scale", "must be an integer in 1..8"};
  if (image.width != grid.imageCols || image.height != grid.imageRows ||
      image.rgb.size() != static_cast<std::size_t>(image.width) * image.height * 3) {
    return Error{"", "image",
                 "does not match the patch grid (" + imageSizeText(image.width, image.height) + " vs " +
                     imageSizeText(grid.imageCols, grid.imageRows) + ")"};
  }
  const long long outWidth = static_cast<long long>(image.width) * style.resolution;
  const long long outHeight = static_cast<long long>(image.height) * style.resolution;
  if (outWidth * outHeight > 100'000'000LL) {
    return Error{"", "scale",
                 "the overlay would be " + imageSizeText(outWidth, outHeight) +
                     " pixels, above 100 megapixels; use a smaller scale"};
  }
  if (weights.size() != grid.count()) {
    return Error{"", "weights",
                 "has " + std::to_string(weights.size()) + " entries, expected " +
                     std::to_string(grid.count()) + " (one per patch)"};
  }
  if (queryIndex < -1 || queryIndex >= grid.count()) {
    return Error{"", "query", "patch " + std::to_string(queryIndex) + " is out of range"};
  }
  if (style.vmin && style.vmax && *style.vmin > *style.vmax) {
    return Error{"", "vmin", "must not be above vmax"};
  }

  // 2 one colour per patch
  const ValueRange range = overlayRange(weights, style);
  std::vector<Rgb> colors(static_cast<std::size_t>(grid.count()));
  for (int i = 0; i < grid.count(); ++i) colors[i] = valueColor(style.colormap, weights[i], range);

  // 3 blend, pixel by pixel of the output
  Image out;
  out.width = static_cast<int>(outWidth);
  out.height = static_cast<int>(outHeight);
  out.rgb.resize(static_cast<std::size_t>(outWidth * outHeight) * 3);
  const float a = style.opacity;
  const int s = style.resolution, p = grid.patch;
  for (int y = 0; y < out.height; ++y) {
    const int sy = y / s;
    const int patchRow = sy / p;
    for (int x = 0; x < out.width; ++x) {
      const int sx = x / s;
      const int patchCol = sx / p;
      const std::uint8_t* in = &image.rgb[(static_cast<std::size_t>(sy) * image.width + sx) * 3];
      std::uint8_t* o = &out.rgb[(static_cast<std::size_t>(y) * out.width + x) * 3];
      if (patchRow >= grid.rows || patchCol >= grid.cols) {
        for (int c = 0; c < 3; ++c) o[c] = static_cast<std::uint8_t>((in[c] + 128 + 1) / 2);
        continue;
      }
      const Rgb color = colors[static_cast<std::size_t>(grid.index(patchRow, patchCol))];
      const float target[3] = {float(color.r), float(color.g), float(color.b)};
      for (int c = 0; c < 3; ++c) {
        o[c] = static_cast<std::uint8_t>(std::lround((1 - a) * in[c] + a * target[c]));
      }
    }
  }

  // 4 the query's frame: black at the patch edge, then white, inside the patch
  if (style.outlineQuery && queryIndex >= 0) {
    const int x0 = (queryIndex % grid.cols) * p * s, y0 = (queryIndex / grid.cols) * p * s;
    const int edge = p * s;
    const int black = std::max(1, s), white = std::max(1, edge / 10);
    for (int y = 0; y < edge; ++y) {
      for (int x = 0; x < edge; ++x) {
        const int distance = std::min({x, y, edge - 1 - x, edge - 1 - y});
        if (distance >= black + white) continue;
        const std::uint8_t v = distance < black ? 0 : 255;
        std::uint8_t* o = &out.rgb[(static_cast<std::size_t>(y0 + y) * out.width + x0 + x) * 3];
        o[0] = o[1] = o[2] = v;
      }
    }
  }
  return out;
}

Expected<Image> renderStretchedOverlay(const Image& image, int rows, int cols, const Vector& weights,
                                       int queryIndex, const OverlayStyle& style) {
  // 1 checks
  if (!(style.opacity >= 0 && style.opacity <= 1)) return Error{"", "opacity", "must be in 0..1"};
  if (rows < 1 || cols < 1 || rows > image.height || cols > image.width) {
    return Error{"", "image",
                 imageSizeText(image.width, image.height) + " is smaller than the " + std::to_string(cols) + "x" +
                     std::to_string(rows) + " patch grid"};
  }
  if (weights.size() != static_cast<Eigen::Index>(rows) * cols) {
    return Error{"", "weights",
                 "has " + std::to_string(weights.size()) + " entries, expected " + std::to_string(rows * cols) +
                     " (one per patch)"};
  }
  if (queryIndex < -1 || queryIndex >= rows * cols) {
    return Error{"", "query", "patch " + std::to_string(queryIndex) + " is out of range"};
  }
  if (style.vmin && style.vmax && *style.vmin > *style.vmax) return Error{"", "vmin", "must not be above vmax"};

  // 2 one colour per patch, 3 blend every pixel with its patch's colour
  const ValueRange range = overlayRange(weights, style);
  std::vector<Rgb> colors(static_cast<std::size_t>(rows) * cols);
  for (int i = 0; i < rows * cols; ++i) colors[static_cast<std::size_t>(i)] = valueColor(style.colormap, weights[i], range);
  Image out;
  out.width = image.width;
  out.height = image.height;
  out.rgb.resize(image.rgb.size());
  const float a = style.opacity;
  for (int y = 0; y < image.height; ++y) {
    const int r = static_cast<int>(static_cast<long long>(y) * rows / image.height);
    for (int x = 0; x < image.width; ++x) {
      const int c = static_cast<int>(static_cast<long long>(x) * cols / image.width);
      const Rgb color = colors[static_cast<std::size_t>(r) * cols + c];
      const float target[3] = {float(color.r), float(color.g), float(color.b)};
      const std::size_t at = (static_cast<std::size_t>(y) * image.width + x) * 3;
      for (int k = 0; k < 3; ++k)
        out.rgb[at + k] = static_cast<std::uint8_t>(std::lround((1 - a) * image.rgb[at + k] + a * target[k]));
    }
  }

  // 4 the query patch's frame (2 px black, 2 px white inside)
  if (style.outlineQuery && queryIndex >= 0) {
    const int r = queryIndex / cols, c = queryIndex % cols;
    const int x0 = static_cast<int>(static_cast<long long>(c) * image.width / cols);
    const int x1 = static_cast<int>(static_cast<long long>(c + 1) * image.width / cols);
    const int y0 = static_cast<int>(static_cast<long long>(r) * image.height / rows);
    const int y1 = static_cast<int>(static_cast<long long>(r + 1) * image.height / rows);
    for (int y = y0; y < y1; ++y)
      for (int x = x0; x < x1; ++x) {
        const int distance = std::min({x - x0, y - y0, x1 - 1 - x, y1 - 1 - y});
        if (distance >= 4) continue;
        std::uint8_t* o = &out.rgb[(static_cast<std::size_t>(y) * out.width + x) * 3];
        o[0] = o[1] = o[2] = distance < 2 ? 0 : 255;
      }
  }
  return out;
}

// =======================================================================================
// Encoding
// =======================================================================================

}  // namespace attn::io
