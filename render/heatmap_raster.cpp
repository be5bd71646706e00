// The PNG raster of a heatmap (see heatmap_render.h): cells, hatch, text and colorbar on
// an RGB canvas.
#include <algorithm>
#include <cmath>

#include "render/heatmap_layout.h"

namespace attn::io {

namespace detail {

namespace {

class Canvas {
 public:
  explicit Canvas(Image& image) : image_(image) {}

  void fill(int x0, int y0, int x1, int y1, Rgb color) {
    x0 = std::max(x0, 0), y0 = std::max(y0, 0);
    x1 = std::min(x1, image_.width), y1 = std::min(y1, image_.height);
    for (int y = y0; y < y1; ++y) {
      std::uint8_t* p = pixel(x0, y);
      for (int x = x0; x < x1; ++x, p += 3) p[0] = color.r, p[1] = color.g, p[2] = color.b;
    }
  }
  // A frame of `line` px just OUTSIDE [x0, x1) x [y0, y1).
  void frame(int x0, int y0, int x1, int y1, int line, Rgb color) {
    fill(x0 - line, y0 - line, x1 + line, y0, color);
    fill(x0 - line, y1, x1 + line, y1 + line, color);
    fill(x0 - line, y0, x0, y1, color);
    fill(x1, y0, x1 + line, y1, color);
  }
  void blend(int x, int y, Rgb color, int alpha) {
    if (x < 0 || y < 0 || x >= image_.width || y >= image_.height || alpha <= 0) return;
    std::uint8_t* p = pixel(x, y);
    auto mix = [alpha](std::uint8_t dst, std::uint8_t src) {
      return static_cast<std::uint8_t>((src * alpha + dst * (255 - alpha) + 127) / 255);
    };
    p[0] = mix(p[0], color.r), p[1] = mix(p[1], color.g), p[2] = mix(p[2], color.b);
  }
  // Horizontal text with its pen starting at (x, baseline).
  void text(const Font& font, const std::u32string& text, float px, float x, float baseline,
            Rgb color) {
    if (text.empty()) return;
    const TextMask mask = rasterizeText(font, text, px);
    const int ox = static_cast<int>(std::lround(x)) - mask.originX;
    const int oy = static_cast<int>(std::lround(baseline)) - mask.baseline;
    for (int my = 0; my < mask.height; ++my) {
      for (int mx = 0; mx < mask.width; ++mx) {
        blend(ox + mx, oy + my, color, mask.coverage[static_cast<size_t>(my * mask.width + mx)]);
      }
    }
  }
  // Text rotated 90° counter-clockwise (reading bottom to top): the pen starts at
  // (baselineX, bottomY) and moves up; glyphs lie to the left of baselineX.
  void textUp(const Font& font, const std::u32string& text, float px, float baselineX,
              float bottomY, Rgb color) {
    if (text.empty()) return;
    const TextMask mask = rasterizeText(font, text, px);
    const int bx = static_cast<int>(std::lround(baselineX));
    const int by = static_cast<int>(std::lround(bottomY));
    for (int my = 0; my < mask.height; ++my) {
      for (int mx = 0; mx < mask.width; ++mx) {
        // mask (mx, my) -> image: x grows with my, y shrinks as mx grows
        blend(bx + (my - mask.baseline), by - 1 - (mx - mask.originX), color,
              mask.coverage[static_cast<size_t>(my * mask.width + mx)]);
      }
    }
  }

 private:
  std::uint8_t* pixel(int x, int y) {
    return image_.rgb.data() +
           (static_cast<size_t>(y) * static_cast<size_t>(image_.width) + static_cast<size_t>(x)) *
               3;
  }
  Image& image_;
};

// Hatch of a masked cell: "/" diagonals every 8 px, `line` px thick, in cell-local
// coordinates so every masked cell looks the same.
bool onHatch(int localX, int localY, int cellEdge, int scale) {
  const int period = 8 * scale;
  if (cellEdge < 6) return false;
  return (localX + localY) % period < scale;
}

}  // namespace

void drawRaster(Image& image, const HeatmapView& view, const HeatmapStyle& style, const Layout& L,
                const Font& font) {
  image.width = L.width;
  image.height = L.height;
  image.rgb.assign(static_cast<size_t>(L.width) * static_cast<size_t>(L.height) * 3, 255);
  Canvas canvas(image);
  Matrix pooledStorage;
  const MatrixRef pooled = gridValues(view, L, pooledStorage);

  // 1 cells
  for (int r = 0; r < L.gridRows; ++r) {
    for (int c = 0; c < L.gridCols; ++c) {
      const float v = pooled(r, c);
      const int x0 = L.cellX(c), y0 = L.cellY(r);
      canvas.fill(x0, y0, x0 + L.cell, y0 + L.cell, valueColor(style.colormap, v, L.range));
      if (v == -kInf && L.cell >= 6) {
        for (int y = 0; y < L.cell; ++y) {
          for (int x = 0; x < L.cell; ++x) {
            if (onHatch(x, y, L.cell, L.resolution))
              canvas.fill(x0 + x, y0 + y, x0 + x + 1, y0 + y + 1, kMaskedHatchColor);
          }
        }
      }
    }
  }
  canvas.frame(L.gridX, L.gridY, L.gridX + L.gridW, L.gridY + L.gridH, L.frame, kFrameColor);

  // 2 cell labels, black or white by the cell's luminance
  if (L.showCellLabels) {
    for (int r = 0; r < L.rows; ++r) {
      for (int c = 0; c < L.cols; ++c) {
        if (view.maskedByAllowed(r, c)) continue;  // hatched, no "0"
        const float v = view.values(r, c);
        const std::u32string text = displayNumber(&font, v, L.cellDigits);
        const float cx = static_cast<float>(L.cellX(c)) + static_cast<float>(L.cell) / 2;
        const float cy = static_cast<float>(L.cellY(r)) + static_cast<float>(L.cell) / 2;
        const TextPlacement at = placeText(font, text, L.cellPx, cx, cy, Align::Center);
        canvas.text(font, text, L.cellPx, at.x, at.baseline,
                    cellLabelColor(style.colormap, L.colorValue(view, r, c), L.range));
      }
    }
  }

  // 3 title and axis labels
  if (L.showTitle) {
    canvas.text(font, displayText(&font, L.title), L.titlePx, static_cast<float>(L.titleX),
                static_cast<float>(L.titleBaseline), Rgb{0, 0, 0});
  }
  const float half = static_cast<float>(L.cell) / 2;
  if (L.showRowLabels) {
    for (int r = 0; r < L.rows; r += L.rowStep) {
      const std::u32string text = displayText(&font, shownRowLabel(view, r));
      const float cy = static_cast<float>(L.cellY(r / L.pool)) + half;
      const TextPlacement at =
          placeText(font, text, L.axisPx, static_cast<float>(L.rowLabelRight), cy, Align::Right);
      canvas.text(font, text, L.axisPx, at.x, at.baseline, kTextColor);
    }
  }
  if (L.showColLabels) {
    for (int c = 0; c < L.cols; c += L.colStep) {
      const std::u32string text = displayText(&font, shownColLabel(view, c));
      const float cx = static_cast<float>(L.cellX(c / L.pool)) + half;
      if (L.colLabelsVertical) {
        canvas.textUp(font, text, L.axisPx, cx + font.capHeight * L.axisPx / 2,
                      static_cast<float>(L.colLabelBottom), kTextColor);
      } else {
        const float baseline = static_cast<float>(L.colLabelBottom) - font.descent * L.axisPx;
        canvas.text(font, text, L.axisPx, cx - textWidth(&font, text, L.axisPx) / 2, baseline,
                    kTextColor);
      }
    }
  }

  // 4 axis titles and the thinning note
  const float gridMidX = static_cast<float>(L.gridX) + static_cast<float>(L.gridW) / 2;
  const float gridMidY = static_cast<float>(L.gridY) + static_cast<float>(L.gridH) / 2;
  if (L.showColAxis) {
    const std::u32string text = displayText(&font, view.colAxis);
    canvas.text(font, text, L.axisPx, gridMidX - textWidth(&font, text, L.axisPx) / 2,
                static_cast<float>(L.colAxisBaseline), kTextColor);
  }
  if (L.showRowAxis) {
    const std::u32string text = displayText(&font, view.rowAxis);
    canvas.textUp(font, text, L.axisPx, static_cast<float>(L.rowAxisX),
                  gridMidY + textWidth(&font, text, L.axisPx) / 2, kTextColor);
  }
  if (!L.note.empty()) {
    canvas.text(font, displayText(&font, L.note), L.tickPx, static_cast<float>(L.gridX),
                static_cast<float>(L.noteBaseline), kTextColor);
  }

  // 5 colorbar: top = high values, framed, with round ticks (io::colorbarTicks) and a title
  if (L.showColorbar) {
    for (int y = 0; y < L.cbH; ++y) {
      const float t =
          L.cbH > 1 ? 1.0f - static_cast<float>(y) / static_cast<float>(L.cbH - 1) : 0.5f;
      canvas.fill(L.cbX, L.cbY + y, L.cbX + L.cbW, L.cbY + y + 1, colormapColor(style.colormap, t));
    }
    canvas.frame(L.cbX, L.cbY, L.cbX + L.cbW, L.cbY + L.cbH, L.frame, kFrameColor);
    for (std::size_t i = 0; i < L.ticks.size(); ++i) {
      const float t = L.ticks[i];
      const int y = L.tickY(t);
      canvas.fill(L.cbX + L.cbW, y, L.cbX + L.cbW + L.tickLength, y + L.frame, kFrameColor);
      const std::u32string text = L.tickTexts.empty() ? displayNumber(&font, t, L.tickDigits)
                                                      : displayText(&font, L.tickTexts[i]);
      const TextPlacement at =
          placeText(font, text, L.tickPx, static_cast<float>(L.tickLabelX),
                    static_cast<float>(y) + static_cast<float>(L.frame) / 2, Align::Left);
      canvas.text(font, text, L.tickPx, at.x, at.baseline, kTextColor);
    }
    if (L.showValueTitle) {
      const std::u32string text = displayText(&font, view.valueTitle);
      const float cbMidY = static_cast<float>(L.cbY) + static_cast<float>(L.cbH) / 2;
      canvas.textUp(font, text, L.axisPx, static_cast<float>(L.valueTitleX),
                    cbMidY + textWidth(&font, text, L.axisPx) / 2, kTextColor);
    }
  }
}

}  // namespace detail

using namespace detail;

Expected<Image> renderHeatmap(const HeatmapView& view, const HeatmapStyle& style) {
  Status valid = checkStyle(view, style);
  if (!valid) return valid.error();
  Expected<const Font*> font = loadFont(fontPathOf(style));
  if (!font) return font.error();
  const Layout layout = computeLayout(view, style, *font);
  Status size = checkRasterSize(layout);
  if (!size) return size.error();
  Image image;
  drawRaster(image, view, style, layout, **font);
  return image;
}

}  // namespace attn::io
