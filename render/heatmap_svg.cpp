// The SVG of a heatmap (see heatmap_render.h): the same layout as the PNG, as vector shapes
// and text.
#include <cstdio>

#include "render/font_chain.h"
#include "render/heatmap_layout.h"

namespace attn::io::detail {

namespace {

std::string hexColor(Rgb c) {
  char buffer[8];
  std::snprintf(buffer, sizeof buffer, "#%02x%02x%02x", c.r, c.g, c.b);
  return buffer;
}

// XML text/attribute escaping; control characters XML 1.0 forbids are dropped, invalid
// UTF-8 becomes U+FFFD.
std::string xmlEscape(std::string_view text) {
  std::string out;
  for (char32_t cp : decodeUtf8(text)) {
    switch (cp) {
      case U'&':
        out += "&amp;";
        break;
      case U'<':
        out += "&lt;";
        break;
      case U'>':
        out += "&gt;";
        break;
      case U'"':
        out += "&quot;";
        break;
      case U'\'':
        out += "&apos;";
        break;
      default:
        if (cp < 0x20 && cp != U'\t' && cp != U'\n' && cp != U'\r') break;
        if (cp == 0xFFFE || cp == 0xFFFF) break;
        appendUtf8(out, cp);
    }
  }
  return out;
}

std::string num(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.6g", v);
  return buffer;
}

std::string svgText(const Font& font, std::string_view label, float px, float x, float baseline,
                    const char* anchor, Rgb color, const std::string& extra = "") {
  const std::string utf8 = toUtf8(displayText(&font, label));
  return "<text x=\"" + num(x) + "\" y=\"" + num(baseline) + "\" font-size=\"" + num(px) +
         "\" text-anchor=\"" + anchor + "\" fill=\"" + hexColor(color) + "\"" + extra + ">" +
         xmlEscape(utf8) + "</text>\n";
}

}  // namespace

// One cohesive numbered algorithm (steps 1-6, in drawing order), kept as one function on
// purpose: it is the SVG twin of drawRaster() and follows the same Layout top to bottom.
std::string renderSvg(const HeatmapView& view, const HeatmapStyle& style, const Layout& L,
                      const Font& font) {
  std::string out;
  out.reserve(4096 + static_cast<size_t>(L.gridRows) * static_cast<size_t>(L.gridCols) * 16);
  const int s = L.resolution;
  out += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(L.width) +
         "\" height=\"" + std::to_string(L.height) + "\" viewBox=\"0 0 " + std::to_string(L.width) +
         " " + std::to_string(L.height) + "\" font-family=\"" + xmlEscape(fontChainFamilies()) + "\">\n";
  if (!view.title.empty()) out += "<title>" + xmlEscape(view.title) + "</title>\n";

  // 1 definitions: the masked-cell hatch and the colorbar gradient
  const int period = 8 * s;
  out += "<defs>\n<pattern id=\"masked\" patternUnits=\"userSpaceOnUse\" width=\"" +
         std::to_string(period) + "\" height=\"" + std::to_string(period) + "\">\n<rect width=\"" +
         std::to_string(period) + "\" height=\"" + std::to_string(period) + "\" fill=\"" +
         hexColor(kMaskedColor) + "\"/>\n<path d=\"M0," + std::to_string(period) + " L" +
         std::to_string(period) + ",0 M-1,1 L1,-1 M" + std::to_string(period - 1) + "," +
         std::to_string(period + 1) + " L" + std::to_string(period + 1) + "," +
         std::to_string(period - 1) + "\" stroke=\"" + hexColor(kMaskedHatchColor) +
         "\" stroke-width=\"" + std::to_string(s) + "\"/>\n</pattern>\n";
  if (L.showColorbar) {
    out += "<linearGradient id=\"colorbar\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">\n";
    const auto& lut = colormapLut(style.colormap);
    for (int i = 0; i < 256; i += 5) {  // 52 stops: the maps are smooth
      out += "<stop offset=\"" + num(i / 255.0) + "\" stop-color=\"" +
             hexColor(lut[static_cast<size_t>(i)]) + "\"/>\n";
    }
    out += "</linearGradient>\n";
  }
  out += "</defs>\n";
  out += "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";

  // 2 cells; runs of equal colour in a row are merged (large matrices stay small)
  Matrix pooledStorage;
  const MatrixRef pooled = gridValues(view, L, pooledStorage);
  out += "<g shape-rendering=\"crispEdges\">\n";
  for (int r = 0; r < L.gridRows; ++r) {
    int c = 0;
    while (c < L.gridCols) {
      const float v = pooled(r, c);
      const bool masked = v == -kInf;
      const Rgb color = valueColor(style.colormap, v, L.range);
      int end = c + 1;
      if (L.pitch == L.cell) {
        while (end < L.gridCols) {
          const float w = pooled(r, end);
          if ((w == -kInf) != masked || !(valueColor(style.colormap, w, L.range) == color)) break;
          ++end;
        }
      }
      const int x0 = L.cellX(c);
      out += "<rect x=\"" + std::to_string(x0) + "\" y=\"" + std::to_string(L.cellY(r)) +
             "\" width=\"" + std::to_string(L.cellX(end - 1) + L.cell - x0) + "\" height=\"" +
             std::to_string(L.cell) + "\" fill=\"" +
             (masked && L.cell >= 6 ? std::string("url(#masked)") : hexColor(color)) + "\"/>\n";
      c = end;
    }
  }
  out += "</g>\n";
  const double f = L.frame / 2.0;
  out += "<rect x=\"" + num(L.gridX - f) + "\" y=\"" + num(L.gridY - f) + "\" width=\"" +
         num(L.gridW + 2 * f) + "\" height=\"" + num(L.gridH + 2 * f) +
         "\" fill=\"none\" stroke=\"" + hexColor(kFrameColor) + "\" stroke-width=\"" +
         std::to_string(L.frame) + "\"/>\n";

  // 3 cell labels
  if (L.showCellLabels) {
    for (int r = 0; r < L.rows; ++r) {
      for (int c = 0; c < L.cols; ++c) {
        if (view.maskedByAllowed(r, c)) continue;  // hatched, no "0"
        const float v = view.values(r, c);
        const std::string text = toUtf8(displayNumber(&font, v, L.cellDigits));
        const float cx = static_cast<float>(L.cellX(c)) + static_cast<float>(L.cell) / 2;
        const float cy = static_cast<float>(L.cellY(r)) + static_cast<float>(L.cell) / 2;
        out += svgText(font, text, L.cellPx, cx, cy + font.capHeight * L.cellPx / 2, "middle",
                       cellLabelColor(style.colormap, L.colorValue(view, r, c), L.range));
      }
    }
  }

  // 4 title and axis labels
  if (L.showTitle) {
    out += svgText(font, L.title, L.titlePx, static_cast<float>(L.titleX),
                   static_cast<float>(L.titleBaseline), "start", Rgb{0, 0, 0});
  }
  const float half = static_cast<float>(L.cell) / 2;
  if (L.showRowLabels) {
    for (int r = 0; r < L.rows; r += L.rowStep) {
      const float cy = static_cast<float>(L.cellY(r / L.pool)) + half;
      out += svgText(font, shownRowLabel(view, r), L.axisPx, static_cast<float>(L.rowLabelRight),
                     cy + font.capHeight * L.axisPx / 2, "end", kTextColor);
    }
  }
  if (L.showColLabels) {
    for (int c = 0; c < L.cols; c += L.colStep) {
      const float cx = static_cast<float>(L.cellX(c / L.pool)) + half;
      if (L.colLabelsVertical) {
        const float bx = cx + font.capHeight * L.axisPx / 2;
        const float by = static_cast<float>(L.colLabelBottom);
        out += svgText(font, shownColLabel(view, c), L.axisPx, 0, 0, "start", kTextColor,
                       " transform=\"translate(" + num(bx) + "," + num(by) + ") rotate(-90)\"");
      } else {
        out += svgText(font, shownColLabel(view, c), L.axisPx, cx,
                       static_cast<float>(L.colLabelBottom) - font.descent * L.axisPx, "middle",
                       kTextColor);
      }
    }
  }

  // 5 axis titles and the thinning note
  auto upright = [&](std::string_view text, float baselineX, float centreY) {
    const float half = textWidth(&font, displayText(&font, text), L.axisPx) / 2;
    return svgText(font, text, L.axisPx, 0, 0, "start", kTextColor,
                   " transform=\"translate(" + num(baselineX) + "," + num(centreY + half) +
                       ") rotate(-90)\"");
  };
  if (L.showColAxis) {
    out += svgText(font, view.colAxis, L.axisPx,
                   static_cast<float>(L.gridX) + static_cast<float>(L.gridW) / 2,
                   static_cast<float>(L.colAxisBaseline), "middle", kTextColor);
  }
  if (L.showRowAxis) {
    out += upright(view.rowAxis, static_cast<float>(L.rowAxisX),
                   static_cast<float>(L.gridY) + static_cast<float>(L.gridH) / 2);
  }
  if (!L.note.empty()) {
    out += svgText(font, L.note, L.tickPx, static_cast<float>(L.gridX),
                   static_cast<float>(L.noteBaseline), "start", kTextColor);
  }

  // 6 colorbar
  if (L.showColorbar) {
    out += "<rect x=\"" + std::to_string(L.cbX) + "\" y=\"" + std::to_string(L.cbY) +
           "\" width=\"" + std::to_string(L.cbW) + "\" height=\"" + std::to_string(L.cbH) +
           "\" fill=\"url(#colorbar)\"/>\n";
    out += "<rect x=\"" + num(L.cbX - f) + "\" y=\"" + num(L.cbY - f) + "\" width=\"" +
           num(L.cbW + 2 * f) + "\" height=\"" + num(L.cbH + 2 * f) + "\" fill=\"none\" stroke=\"" +
           hexColor(kFrameColor) + "\" stroke-width=\"" + std::to_string(L.frame) + "\"/>\n";
    for (std::size_t i = 0; i < L.ticks.size(); ++i) {
      const float t = L.ticks[i];
      const double y = L.tickY(t) + f;
      out += "<line x1=\"" + std::to_string(L.cbX + L.cbW) + "\" y1=\"" + num(y) + "\" x2=\"" +
             std::to_string(L.cbX + L.cbW + L.tickLength) + "\" y2=\"" + num(y) + "\" stroke=\"" +
             hexColor(kFrameColor) + "\" stroke-width=\"" + std::to_string(L.frame) + "\"/>\n";
      out += svgText(font,
                     L.tickTexts.empty() ? toUtf8(displayNumber(&font, t, L.tickDigits))
                                         : L.tickTexts[i],
                     L.tickPx,
                     static_cast<float>(L.tickLabelX),
                     static_cast<float>(y) + font.capHeight * L.tickPx / 2, "start", kTextColor);
    }
    if (L.showValueTitle) {
      out += upright(view.valueTitle, static_cast<float>(L.valueTitleX),
                     static_cast<float>(L.cbY) + static_cast<float>(L.cbH) / 2);
    }
  }
  out += "</svg>\n";
  return out;
}

}  // namespace attn::io::detail
