// The sample images of assets/images/, drawn in code so that the tests use exactly the
// pictures that ship (tools/gen_images.cpp writes them; tests/render/test_render_image.cpp draws them in
// memory). Every shape is aligned to a 16-pixel grid, so with P = 16 each patch is either
// one flat colour or (the circle's and triangle's edges) a mix with the white background.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "render/heatmap_render.h"

namespace attn::samples {

inline void fillPixel(io::Image& image, int x, int y, io::Rgb color) {
  std::uint8_t* p = &image.rgb[(static_cast<std::size_t>(y) * image.width + x) * 3];
  p[0] = color.r;
  p[1] = color.g;
  p[2] = color.b;
}

inline io::Image blankImage(int width, int height, io::Rgb color) {
  io::Image image;
  image.width = width;
  image.height = height;
  image.rgb.resize(static_cast<std::size_t>(width) * height * 3);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) fillPixel(image, x, y, color);
  return image;
}

// Axis-aligned rectangle [x0, x1) x [y0, y1).
inline void fillRect(io::Image& image, int x0, int y0, int x1, int y1, io::Rgb color) {
  for (int y = std::max(y0, 0); y < std::min(y1, image.height); ++y)
    for (int x = std::max(x0, 0); x < std::min(x1, image.width); ++x) fillPixel(image, x, y, color);
}

// Disc of radius r around (cx, cy), pixel centres inside.
inline void fillDisc(io::Image& image, float cx, float cy, float r, io::Rgb color) {
  for (int y = 0; y < image.height; ++y) {
    for (int x = 0; x < image.width; ++x) {
      const float dx = x + 0.5f - cx, dy = y + 0.5f - cy;
      if (dx * dx + dy * dy <= r * r) fillPixel(image, x, y, color);
    }
  }
}

inline constexpr io::Rgb kWhite{255, 255, 255};
inline constexpr io::Rgb kRed{220, 30, 30};
inline constexpr io::Rgb kBlue{30, 70, 220};
inline constexpr io::Rgb kGreen{40, 170, 60};

// Where the shapes are, in pixels, for tests (P = 16 gives 14 x 10 patches).
struct ShapesLayout {
  static constexpr int kWidth = 224, kHeight = 160;
  // Two identical red squares, 48 x 48, on the 16-px grid: patches (1..3, 1..3) and
  // (5..7, 9..11) (row, col).
  static constexpr int kSquareA[4] = {16, 16, 64, 64};  // x0, y0, x1, y1
  static constexpr int kSquareB[4] = {144, 80, 192, 128};
  // A blue circle, centre (160, 40), radius 26: patches rows 0..4, cols 8..11.
  static constexpr float kCircle[3] = {160, 40, 26};
  // A green bar at the bottom left: patches (7..8, 1..5).
  static constexpr int kBar[4] = {16, 112, 96, 144};
};

// "shapes.png": two identical red squares, a blue circle and a green bar on white.
inline io::Image makeShapesImage() {
  using L = ShapesLayout;
  io::Image image = blankImage(L::kWidth, L::kHeight, kWhite);
  fillRect(image, L::kSquareA[0], L::kSquareA[1], L::kSquareA[2], L::kSquareA[3], kRed);
  fillRect(image, L::kSquareB[0], L::kSquareB[1], L::kSquareB[2], L::kSquareB[3], kRed);
  fillDisc(image, L::kCircle[0], L::kCircle[1], L::kCircle[2], kBlue);
  fillRect(image, L::kBar[0], L::kBar[1], L::kBar[2], L::kBar[3], kGreen);
  return image;
}

// "stripes.png", 256 x 128: a horizontal gradient from deep blue to orange with a white
// stripe 16 px wide every 48 px (x = 16, 64, 112, ...). With P = 16 every stripe patch is
// pure white, so without a positional encoding a stripe attends to all stripes alike; with
// one, to its neighbours.
inline io::Image makeStripesImage() {
  constexpr int kWidth = 256, kHeight = 128;
  io::Image image = blankImage(kWidth, kHeight, kWhite);
  for (int y = 0; y < kHeight; ++y) {
    for (int x = 0; x < kWidth; ++x) {
      const float t = static_cast<float>(x) / (kWidth - 1);
      const float s = static_cast<float>(y) / (kHeight - 1);
      const io::Rgb color{static_cast<std::uint8_t>(std::lround(30 + 210 * t)),
                          static_cast<std::uint8_t>(std::lround(40 + 100 * t + 30 * s)),
                          static_cast<std::uint8_t>(std::lround(150 - 120 * t))};
      fillPixel(image, x, y, color);
    }
  }
  for (int x0 = 16; x0 < kWidth; x0 += 48) fillRect(image, x0, 0, x0 + 16, kHeight, kWhite);
  return image;
}

}  // namespace attn::samples
