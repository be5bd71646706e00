// Draws attnscope's application icon, once as SVG and once as a PNG of any size, from the
// same shapes: a dark rounded tile holding a 5 x 5 causal attention matrix (the lower
// triangle coloured with viridis, the diagonal brightest, the masked upper triangle left
// dark). CMake runs it at build time (cmake/install.cmake):
//   build/gen_icon OUT_DIR 256      writes OUT_DIR/attnscope.svg and OUT_DIR/attnscope.png
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "formats/files.h"
#include "render/heatmap_render.h"

namespace {

using attn::io::Rgb;

// A rounded rectangle in the 256 x 256 design space, filled with one colour.
struct RoundedRect {
  double x = 0, y = 0, width = 0, height = 0, radius = 0;
  Rgb colour;
};

constexpr double kDesignSize = 256;
constexpr int kCells = 5;

// The icon's shapes, back to front.
std::vector<RoundedRect> iconShapes() {
  std::vector<RoundedRect> shapes;
  // 1 the tile
  shapes.push_back({8, 8, 240, 240, 44, Rgb{30, 34, 51}});
  // 2 the matrix: row q attends to keys 0..q (causal). Weight of key k in row q rises
  //   towards the diagonal (1, 2, ... q+1, normalised); the colour is viridis of weight
  //   divided by the row's largest, so every diagonal cell is the brightest yellow.
  const double margin = 40, gap = 8;
  const double cell = (kDesignSize - 2 * margin - (kCells - 1) * gap) / kCells;
  for (int q = 0; q < kCells; ++q) {
    for (int k = 0; k < kCells; ++k) {
      const double x = margin + k * (cell + gap), y = margin + q * (cell + gap);
      if (k > q) {
        shapes.push_back({x, y, cell, cell, 6, Rgb{44, 50, 72}});  // masked
        continue;
      }
      const float t = static_cast<float>(k + 1) / static_cast<float>(q + 1);
      shapes.push_back({x, y, cell, cell, 6,
                        attn::io::colormapColor(attn::ColormapKind::Viridis, 0.15f + 0.85f * t)});
    }
  }
  return shapes;
}

std::string hex(const Rgb& c) {
  char text[8];
  std::snprintf(text, sizeof text, "#%02x%02x%02x", c.r, c.g, c.b);
  return text;
}

std::string iconSvg(const std::vector<RoundedRect>& shapes) {
  std::string svg =
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"256\" height=\"256\" "
      "viewBox=\"0 0 256 256\">\n  <title>attnscope</title>\n";
  char line[256];
  for (const RoundedRect& r : shapes) {
    std::snprintf(line, sizeof line,
                  "  <rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" rx=\"%g\" fill=\"%s\"/>\n",
                  r.x, r.y, r.width, r.height, r.radius, hex(r.colour).c_str());
    svg += line;
  }
  svg += "</svg>\n";
  return svg;
}

// True when design-space point (px, py) lies inside the rounded rectangle.
bool inside(const RoundedRect& r, double px, double py) {
  if (px < r.x || py < r.y || px > r.x + r.width || py > r.y + r.height) return false;
  const double cx = std::clamp(px, r.x + r.radius, r.x + r.width - r.radius);
  const double cy = std::clamp(py, r.y + r.radius, r.y + r.height - r.radius);
  return (px - cx) * (px - cx) + (py - cy) * (py - cy) <= r.radius * r.radius;
}

// RGBA pixels, size x size: each pixel averages 4 x 4 samples, painting the shapes in order
// over transparency (straight alpha).
std::vector<std::uint8_t> iconPixels(const std::vector<RoundedRect>& shapes, int size) {
  constexpr int kSub = 4;
  std::vector<std::uint8_t> rgba(static_cast<std::size_t>(size) * size * 4);
  const double scale = kDesignSize / size;
  for (int y = 0; y < size; ++y) {
    for (int x = 0; x < size; ++x) {
      double r = 0, g = 0, b = 0, covered = 0;
      for (int sy = 0; sy < kSub; ++sy) {
        for (int sx = 0; sx < kSub; ++sx) {
          const double px = (x + (sx + 0.5) / kSub) * scale, py = (y + (sy + 0.5) / kSub) * scale;
          const RoundedRect* top = nullptr;
          for (const RoundedRect& shape : shapes) {
            if (inside(shape, px, py)) top = &shape;
          }
          if (top == nullptr) continue;
          r += top->colour.r;
          g += top->colour.g;
          b += top->colour.b;
          covered += 1;
        }
      }
      std::uint8_t* out = &rgba[(static_cast<std::size_t>(y) * size + x) * 4];
      if (covered > 0) {
        out[0] = static_cast<std::uint8_t>(std::lround(r / covered));
        out[1] = static_cast<std::uint8_t>(std::lround(g / covered));
        out[2] = static_cast<std::uint8_t>(std::lround(b / covered));
      }
      out[3] = static_cast<std::uint8_t>(std::lround(255.0 * covered / (kSub * kSub)));
    }
  }
  return rgba;
}

bool write(const std::string& path, const std::string& bytes) {
  if (attn::Status written = attn::io::writeFileAtomic(path, bytes); !written) {
    std::fprintf(stderr, "gen_icon: %s: %s\n", path.c_str(), written.error().message().c_str());
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const int size = argc == 3 ? std::atoi(argv[2]) : 0;
  if (argc != 3 || size < 16 || size > 4096) {
    std::fprintf(stderr, "usage: gen_icon OUT_DIR SIZE   (16..4096; writes attnscope.svg and "
                         "attnscope.png)\n");
    return 2;
  }
  const std::string folder = argv[1];
  const std::vector<RoundedRect> shapes = iconShapes();
  attn::Expected<std::string> png = attn::io::encodePngRgba(size, size, iconPixels(shapes, size));
  if (!png) {
    std::fprintf(stderr, "gen_icon: %s\n", png.error().message().c_str());
    return 2;
  }
  return write(folder + "/attnscope.svg", iconSvg(shapes)) &&
                 write(folder + "/attnscope.png", *png)
             ? 0
             : 2;
}
