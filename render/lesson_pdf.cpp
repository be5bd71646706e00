// The lesson PDF (see lesson_pdf.h): cairo's PDF surface, the heatmap drawn from
// render/heatmap_layout.h's Layout (as heatmap_raster.cpp and heatmap_svg.cpp draw it), text
// shaped by render/font.h and shown with cairo_show_text_glyphs, so that each run of glyphs
// carries the characters it draws (the PDF's text layer).
#include "render/lesson_pdf.h"

#include <cairo-ft.h>
#include <cairo-pdf.h>
#include <cairo.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>

#include "formats/files.h"
#include "render/heatmap_layout.h"

namespace attn::io {

namespace {

using detail::Font;
using detail::Layout;
using detail::kFrameColor;

constexpr double kPi = 3.14159265358979323846;

struct Ink {
  double r, g, b;
};
Ink ink(Rgb c) {
  return {c.r / 255.0, c.g / 255.0, c.b / 255.0};
}

// One cairo font face per face of the font table, made once (cairo keeps its own reference
// to the FT_Face, which lives for the process).
cairo_font_face_t* cairoFace(int face) {
  static std::mutex mutex;
  static std::map<int, cairo_font_face_t*> faces;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = faces.find(face); it != faces.end()) return it->second;
  auto* ft = static_cast<FT_Face>(detail::freeTypeFace(face));
  cairo_font_face_t* made = ft ? cairo_ft_font_face_create_for_ft_face(ft, 0) : nullptr;
  faces[face] = made;
  return made;
}

// `text` with its pen at (x, baseline) in the current user space: shaped, then one
// cairo_show_text_glyphs per run of glyphs of one face, each run with the UTF-8 it draws.
void showText(cairo_t* cr, const Font& font, const std::u32string& text, double px, double x,
              double baseline, Ink color) {
  if (text.empty()) return;
  const detail::ShapedLine line = detail::shapeText(font, text);
  // where each cluster's characters end: the next larger cluster start, or the text's end
  std::vector<std::uint32_t> starts;
  for (const auto& g : line.glyphs) starts.push_back(g.cluster);
  std::sort(starts.begin(), starts.end());
  auto clusterEnd = [&](std::uint32_t c) {
    auto it = std::upper_bound(starts.begin(), starts.end(), c);
    return it == starts.end() ? static_cast<std::uint32_t>(text.size()) : *it;
  };
  cairo_set_source_rgb(cr, color.r, color.g, color.b);
  cairo_set_font_size(cr, px);
  for (size_t begin = 0; begin < line.glyphs.size();) {
    size_t end = begin + 1;
    while (end < line.glyphs.size() && line.glyphs[end].face == line.glyphs[begin].face) ++end;
    cairo_font_face_t* face = cairoFace(line.glyphs[begin].face);
    if (face == nullptr) {
      begin = end;
      continue;
    }
    cairo_set_font_face(cr, face);
    std::vector<cairo_glyph_t> glyphs;
    std::uint32_t lo = line.glyphs[begin].cluster, hi = lo;
    for (size_t i = begin; i < end; ++i) {
      const detail::ShapedGlyph& g = line.glyphs[i];
      glyphs.push_back({g.glyph, x + g.x * px, baseline - g.y * px});
      lo = std::min(lo, g.cluster);
      hi = std::max(hi, g.cluster);
    }
    const std::string utf8 =
        detail::toUtf8(text.substr(lo, std::max<std::uint32_t>(clusterEnd(hi), lo + 1) - lo));
    const bool backward = line.glyphs[begin].cluster > line.glyphs[end - 1].cluster;
    const cairo_text_cluster_t cluster{static_cast<int>(utf8.size()),
                                       static_cast<int>(glyphs.size())};
    cairo_show_text_glyphs(cr, utf8.c_str(), static_cast<int>(utf8.size()), glyphs.data(),
                           static_cast<int>(glyphs.size()), &cluster, 1,
                           backward ? CAIRO_TEXT_CLUSTER_FLAG_BACKWARD
                                    : static_cast<cairo_text_cluster_flags_t>(0));
    begin = end;
  }
}

// Text rotated to read bottom to top, its pen at (x, bottom).
void showTextUp(cairo_t* cr, const Font& font, const std::u32string& text, double px, double x,
                double bottom, Ink color) {
  cairo_save(cr);
  cairo_translate(cr, x, bottom);
  cairo_rotate(cr, -kPi / 2);
  showText(cr, font, text, px, 0, 0, color);
  cairo_restore(cr);
}

void fillRect(cairo_t* cr, double x, double y, double w, double h, Ink color) {
  cairo_set_source_rgb(cr, color.r, color.g, color.b);
  cairo_rectangle(cr, x, y, w, h);
  cairo_fill(cr);
}

// A frame of `line` just outside the rectangle, as heatmap_raster.cpp draws it.
void frameRect(cairo_t* cr, double x, double y, double w, double h, double line, Ink color) {
  cairo_set_source_rgb(cr, color.r, color.g, color.b);
  cairo_set_line_width(cr, line);
  cairo_rectangle(cr, x - line / 2, y - line / 2, w + line, h + line);
  cairo_stroke(cr);
}

// The heatmap of `L` at the origin of the current user space (Layout pixels), in the
// order of heatmap_raster.cpp: cells, hatch, frame, numbers, labels, axis titles, note,
// colour bar.
void drawHeatmap(cairo_t* cr, const HeatmapView& view, const HeatmapStyle& style, const Layout& L,
                 const Font& font, Ink text) {
  using detail::Align;
  Matrix pooledStorage;
  const MatrixRef pooled = detail::gridValues(view, L, pooledStorage);
  // 1 cells, masked ones hatched
  for (int r = 0; r < L.gridRows; ++r) {
    for (int c = 0; c < L.gridCols; ++c) {
      const float v = pooled(r, c);
      const double x0 = L.cellX(c), y0 = L.cellY(r);
      fillRect(cr, x0, y0, L.cell, L.cell, ink(valueColor(style.colormap, v, L.range)));
      if (v == -detail::kInf && L.cell >= 6) {
        cairo_save(cr);
        cairo_rectangle(cr, x0, y0, L.cell, L.cell);
        cairo_clip(cr);
        const Ink hatch = ink(kMaskedHatchColor);
        cairo_set_source_rgb(cr, hatch.r, hatch.g, hatch.b);
        cairo_set_line_width(cr, L.resolution);
        const double period = 8.0 * L.resolution;
        for (double d = 0; d < 2.0 * L.cell + period; d += period) {
          cairo_move_to(cr, x0 + d, y0);
          cairo_line_to(cr, x0 + d - L.cell, y0 + L.cell);
        }
        cairo_stroke(cr);
        cairo_restore(cr);
      }
    }
  }
  frameRect(cr, L.gridX, L.gridY, L.gridW, L.gridH, L.frame, ink(kFrameColor));
  // 2 the numbers, black or white by the cell's luminance
  if (L.showCellLabels) {
    for (int r = 0; r < L.rows; ++r) {
      for (int c = 0; c < L.cols; ++c) {
        if (view.maskedByAllowed(r, c)) continue;
        const std::u32string number = detail::displayNumber(&font, view.values(r, c), L.cellDigits);
        const float cx = static_cast<float>(L.cellX(c)) + static_cast<float>(L.cell) / 2;
        const float cy = static_cast<float>(L.cellY(r)) + static_cast<float>(L.cell) / 2;
        const detail::TextPlacement at =
            detail::placeText(font, number, L.cellPx, cx, cy, Align::Center);
        showText(cr, font, number, L.cellPx, at.x, at.baseline,
                 ink(cellLabelColor(style.colormap, L.colorValue(view, r, c), L.range)));
      }
    }
  }
  // 3 labels
  const float half = static_cast<float>(L.cell) / 2;
  if (L.showRowLabels) {
    for (int r = 0; r < L.rows; r += L.rowStep) {
      const std::u32string label = detail::displayText(&font, detail::shownRowLabel(view, r));
      const float cy = static_cast<float>(L.cellY(r / L.pool)) + half;
      const detail::TextPlacement at = detail::placeText(
          font, label, L.axisPx, static_cast<float>(L.rowLabelRight), cy, Align::Right);
      showText(cr, font, label, L.axisPx, at.x, at.baseline, text);
    }
  }
  if (L.showColLabels) {
    for (int c = 0; c < L.cols; c += L.colStep) {
      const std::u32string label = detail::displayText(&font, detail::shownColLabel(view, c));
      const float cx = static_cast<float>(L.cellX(c / L.pool)) + half;
      if (L.colLabelsVertical) {
        showTextUp(cr, font, label, L.axisPx, cx + font.capHeight * L.axisPx / 2,
                   L.colLabelBottom, text);
      } else {
        showText(cr, font, label, L.axisPx, cx - detail::textWidth(&font, label, L.axisPx) / 2,
                 static_cast<float>(L.colLabelBottom) - font.descent * L.axisPx, text);
      }
    }
  }
  // 4 axis titles and the thinning note
  const float gridMidX = static_cast<float>(L.gridX) + static_cast<float>(L.gridW) / 2;
  const float gridMidY = static_cast<float>(L.gridY) + static_cast<float>(L.gridH) / 2;
  if (L.showColAxis) {
    const std::u32string t = detail::displayText(&font, view.colAxis);
    showText(cr, font, t, L.axisPx, gridMidX - detail::textWidth(&font, t, L.axisPx) / 2,
             L.colAxisBaseline, text);
  }
  if (L.showRowAxis) {
    const std::u32string t = detail::displayText(&font, view.rowAxis);
    showTextUp(cr, font, t, L.axisPx, L.rowAxisX,
               gridMidY + detail::textWidth(&font, t, L.axisPx) / 2, text);
  }
  if (!L.note.empty())
    showText(cr, font, detail::displayText(&font, L.note), L.tickPx, L.gridX, L.noteBaseline, text);
  // 5 the colour bar: a vertical gradient (top = high), framed, ticks and their numbers, title
  if (!L.showColorbar) return;
  cairo_pattern_t* gradient = cairo_pattern_create_linear(0, L.cbY + L.cbH, 0, L.cbY);
  for (int i = 0; i <= 32; ++i) {
    const float t = static_cast<float>(i) / 32;
    const Ink c = ink(colormapColor(style.colormap, t));
    cairo_pattern_add_color_stop_rgb(gradient, t, c.r, c.g, c.b);
  }
  cairo_set_source(cr, gradient);
  cairo_rectangle(cr, L.cbX, L.cbY, L.cbW, L.cbH);
  cairo_fill(cr);
  cairo_pattern_destroy(gradient);
  frameRect(cr, L.cbX, L.cbY, L.cbW, L.cbH, L.frame, ink(kFrameColor));
  for (std::size_t i = 0; i < L.ticks.size(); ++i) {
    const float t = L.ticks[i];
    const int y = L.tickY(t);
    fillRect(cr, L.cbX + L.cbW, y, L.tickLength, L.frame, ink(kFrameColor));
    const std::u32string label = L.tickTexts.empty()
                                     ? detail::displayNumber(&font, t, L.tickDigits)
                                     : detail::displayText(&font, L.tickTexts[i]);
    const detail::TextPlacement at = detail::placeText(
        font, label, L.tickPx, static_cast<float>(L.tickLabelX),
        static_cast<float>(y) + static_cast<float>(L.frame) / 2, Align::Left);
    showText(cr, font, label, L.tickPx, at.x, at.baseline, text);
  }
  if (L.showValueTitle) {
    const std::u32string t = detail::displayText(&font, view.valueTitle);
    const float cbMidY = static_cast<float>(L.cbY) + static_cast<float>(L.cbH) / 2;
    showTextUp(cr, font, t, L.axisPx, L.valueTitleX,
               cbMidY + detail::textWidth(&font, t, L.axisPx) / 2, text);
  }
}

// `text` broken at spaces into lines at most `width` wide at `px` (a longer word stays
// whole on its own line).
std::vector<std::u32string> wrap(const Font& font, const std::u32string& text, float px,
                                 float width) {
  std::vector<std::u32string> lines;
  std::u32string line;
  size_t i = 0;
  while (i <= text.size()) {
    size_t next = text.find(U' ', i);
    if (next == std::u32string::npos) next = text.size();
    const std::u32string word = text.substr(i, next - i);
    const std::u32string candidate = line.empty() ? word : line + U" " + word;
    if (!line.empty() && detail::textWidth(&font, candidate, px) > width) {
      lines.push_back(line);
      line = word;
    } else {
      line = candidate;
    }
    i = next + 1;
  }
  if (!line.empty()) lines.push_back(line);
  return lines;
}

// One page (canvas pixels): header, heading, caption, heatmap on the left, explanation on
// the right.
void drawPage(cairo_t* cr, const LessonDeck& deck, const LessonPage& page, int index, int count,
              const Font& font) {
  const double W = deck.width, H = deck.height;
  const Ink background = deck.light ? Ink{1, 1, 1} : Ink{0.09, 0.09, 0.11};
  const Ink text = deck.light ? Ink{0.1, 0.1, 0.1} : Ink{0.95, 0.95, 0.95};
  const Ink muted = deck.light ? Ink{0.35, 0.35, 0.35} : Ink{0.65, 0.65, 0.65};
  const Ink accent = deck.light ? Ink{0.54, 0.35, 0.0} : Ink{0.9, 0.7, 0.0};
  fillRect(cr, 0, 0, W, H, background);
  const double margin = 0.04 * H;
  const float small = static_cast<float>(0.024 * H), body = static_cast<float>(0.032 * H),
              heading = static_cast<float>(0.06 * H);
  // 1 header: the scenario and its settings, the step
  double y = margin + font.ascent * small;
  const std::u32string step = detail::decodeUtf8("step " + std::to_string(index + 1) + " of " +
                                                 std::to_string(count));
  const double stepWidth = detail::textWidth(&font, step, small);
  showText(cr, font, step, small, W - margin - stepWidth, y, muted);
  const std::u32string header = detail::decodeUtf8(deck.title + "  ·  " + deck.settings);
  const auto headerLines = wrap(font, header, small, static_cast<float>(W - 3 * margin - stepWidth));
  for (const auto& line : headerLines) {
    showText(cr, font, line, small, margin, y, muted);
    y += font.lineHeight(small);
  }
  // 2 the stage's name and caption
  y += font.ascent * heading - font.ascent * small;
  showText(cr, font, detail::decodeUtf8(page.stageName), heading, margin, y, accent);
  y += font.descent * heading + 0.01 * H + font.ascent * body;
  for (const auto& line : wrap(font, detail::decodeUtf8(page.caption), body,
                               static_cast<float>(W - 2 * margin))) {
    showText(cr, font, line, body, margin, y, text);
    y += font.lineHeight(body) * 1.1;
  }
  y += 0.02 * H;
  // 3 the heatmap in the left 60 %, as large as the box allows
  const double boxX = margin, boxY = y, boxW = 0.6 * W - 1.5 * margin, boxH = H - margin - y;
  const Layout L = detail::computeLayout(page.view, page.style, &font);
  if (L.width > 0 && L.height > 0 && boxW > 0 && boxH > 0) {
    const double scale = std::min({boxW / L.width, boxH / L.height, 4.0});
    cairo_save(cr);
    cairo_translate(cr, boxX + (boxW - L.width * scale) / 2, boxY);
    cairo_scale(cr, scale, scale);
    drawHeatmap(cr, page.view, page.style, L, font, text);
    cairo_restore(cr);
  }
  // 4 the explanation of one cell on the right
  const double textX = 0.6 * W, textW = W - margin - textX;
  double ty = boxY + font.ascent * body;
  for (size_t i = 0; i < page.explanation.size(); ++i) {
    const float px = i == 0 ? body : body * 0.9f;
    for (const auto& line :
         wrap(font, detail::decodeUtf8(page.explanation[i]), px, static_cast<float>(textW))) {
      if (ty > H - margin) break;
      showText(cr, font, line, px, textX, ty, i == 1 ? accent : text);
      ty += font.lineHeight(px) * 1.1;
    }
    ty += 0.005 * H;
  }
}

cairo_status_t appendBytes(void* closure, const unsigned char* data, unsigned int length) {
  static_cast<std::string*>(closure)->append(reinterpret_cast<const char*>(data), length);
  return CAIRO_STATUS_SUCCESS;
}

}  // namespace

Status writeLessonPdf(const LessonDeck& deck, const std::vector<LessonPage>& pages,
                      const std::string& path) {
  if (pages.empty()) return Error{path, "pages", "the lesson has no stages"};
  if (deck.width < 320 || deck.width > 8192 || deck.height < 320 || deck.height > 8192) {
    return Error{path, "size",
                 "must be WxH with both in 320..8192 (got " + std::to_string(deck.width) + "x" +
                     std::to_string(deck.height) + ")"};
  }
  for (const LessonPage& page : pages) {
    if (Status valid = detail::checkStyle(page.view, page.style); !valid)
      return Error{path, valid.error().field, valid.error().problem};
  }
  Expected<const Font*> font = detail::loadFont(detail::fontPathOf(pages.front().style));
  if (!font) return font.error();
  std::string bytes;
  cairo_surface_t* surface =
      cairo_pdf_surface_create_for_stream(appendBytes, &bytes, deck.width / 2.0, deck.height / 2.0);
  cairo_pdf_surface_set_metadata(surface, CAIRO_PDF_METADATA_TITLE, deck.title.c_str());
  cairo_pdf_surface_set_metadata(surface, CAIRO_PDF_METADATA_CREATOR, "attnscope lesson");
  cairo_t* cr = cairo_create(surface);
  cairo_font_options_t* options = cairo_font_options_create();
  cairo_font_options_set_hint_style(options, CAIRO_HINT_STYLE_NONE);
  cairo_font_options_set_hint_metrics(options, CAIRO_HINT_METRICS_OFF);
  cairo_set_font_options(cr, options);
  cairo_font_options_destroy(options);
  for (size_t i = 0; i < pages.size(); ++i) {
    cairo_save(cr);
    cairo_scale(cr, 0.5, 0.5);  // canvas pixels -> points
    drawPage(cr, deck, pages[i], static_cast<int>(i), static_cast<int>(pages.size()), **font);
    cairo_restore(cr);
    cairo_show_page(cr);
  }
  cairo_destroy(cr);
  cairo_surface_finish(surface);
  const cairo_status_t status = cairo_surface_status(surface);
  cairo_surface_destroy(surface);
  if (status != CAIRO_STATUS_SUCCESS)
    return Error{path, "", std::string("cairo could not write the PDF: ") +
                               cairo_status_to_string(status)};
  return writeFileAtomic(path, bytes);
}

}  // namespace attn::io
