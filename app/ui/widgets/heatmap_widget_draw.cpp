// Heatmap widget: drawing (see heatmap_widget_parts.h). The quad goes through the
// HeatmapTextures interface; text goes into the window's draw list.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <span>
#include <string_view>
#include <utility>

#include <imgui.h>

#include "app/ui/widgets/heatmap_textures.h"
#include "app/ui/widgets/heatmap_widget_parts.h"
#include "core/base/cell_number.h"

namespace attn::app::widget {

namespace {

// ImGui colour of an io colour.
ImU32 imColor(io::Rgb c) {
  return IM_COL32(c.r, c.g, c.b, 255);
}

// Draws `text` reading bottom to top: the tops of the glyphs face left, the text starts at
// `bottom` (the left edge of its line box at its lowest point) and runs upwards, and
// nothing is drawn outside `clipMin`..`clipMax` (nor outside the draw list's clip
// rectangle). ImGui 1.86 has no rotated text: the glyphs are drawn upright, clipped on the
// CPU to the clip rectangle turned back, and their vertices turned by a quarter turn about
// `bottom`.
void addTextUp(ImDrawList* drawList, ImVec2 bottom, ImU32 color, const std::string& text,
               ImVec2 clipMin, ImVec2 clipMax, float size = 0) {
  if (size <= 0) size = ImGui::GetFontSize();
  // 1 the clip rectangle in upright coordinates: screen (X, Y) <- upright (x, y) with
  //   X = bx + (y - by), Y = by - (x - bx)
  const ImVec2 listMin = drawList->GetClipRectMin(), listMax = drawList->GetClipRectMax();
  clipMin = ImVec2(std::max(clipMin.x, listMin.x), std::max(clipMin.y, listMin.y));
  clipMax = ImVec2(std::min(clipMax.x, listMax.x), std::min(clipMax.y, listMax.y));
  if (clipMin.x >= clipMax.x || clipMin.y >= clipMax.y) return;
  const float bx = bottom.x, by = bottom.y;
  const ImVec4 upright(bx + by - clipMax.y, by + clipMin.x - bx, bx + by - clipMin.y,
                       by + clipMax.x - bx);
  // 2 upright glyphs, clipped on the CPU (the GPU clip rectangle would be the wrong one)
  const int first = drawList->VtxBuffer.Size;
  drawList->PushClipRect(ImVec2(-1e7f, -1e7f), ImVec2(1e7f, 1e7f), false);
  drawList->AddText(ImGui::GetFont(), size, bottom, color, text.c_str(),
                    text.c_str() + text.size(), 0.f, &upright);
  drawList->PopClipRect();
  // 3 the quarter turn
  for (int i = first; i < drawList->VtxBuffer.Size; ++i) {
    ImVec2& p = drawList->VtxBuffer[i].pos;
    p = ImVec2(bx + (p.y - by), by - (p.x - bx));
  }
}

// Records label `index` as drawn (the list holds "" for the ones skipped).
void recordLabel(std::vector<std::string>& drawn, int index, const std::string& text) {
  if (index < 0) return;
  if (static_cast<int>(drawn.size()) <= index) drawn.resize(static_cast<std::size_t>(index) + 1);
  drawn[static_cast<std::size_t>(index)] = text;
}

}  // namespace

std::string fitLabel(std::string_view text, float maxWidth, std::size_t maxCodePoints,
                     float size) {
  // Two or three measurements of at most maxCodePoints code points: linear, bounded.
  const std::string capped = io::capLabel(text, maxCodePoints);
  ImFont* imFont = ImGui::GetFont();
  if (size <= 0) size = ImGui::GetFontSize();
  const char* begin = capped.c_str();
  const char* end = begin + capped.size();
  const char* fits = end;
  // (ImGui stops before a glyph that reaches max_width exactly: allow a hair more)
  imFont->CalcTextSizeA(size, maxWidth + 0.01f, 0.f, begin, end, &fits);
  if (fits == end) return capped;
  const char* ellipsis = "\xE2\x80\xA6";  // …
  const float ellipsisWidth = imFont->CalcTextSizeA(size, FLT_MAX, 0.f, ellipsis).x;
  imFont->CalcTextSizeA(size, std::max(maxWidth - ellipsisWidth + 0.01f, 0.f), 0.f, begin, end,
                        &fits);
  if (fits == begin) return ellipsisWidth <= maxWidth ? std::string(ellipsis) : std::string();
  // Never cut inside a code point.
  while (fits > begin && (static_cast<unsigned char>(*fits) & 0xC0) == 0x80) --fits;
  return std::string(begin, fits) + ellipsis;
}

std::optional<std::string> screenCellLabel(float value, const Grid& g) {
  // The matrix's one precision (drawGrid: g.cellDigits, the cell-number rule of
  // core/base/format.h) at the grid's cell-label size; none when it does not fit the cell
  // (then drawGrid draws no number in any cell). Widths scale with the size.
  const float px = g.cellLabelPx > 0 ? g.cellLabelPx : g.font;
  const std::string text = cellNumber(value, g.cellDigits);
  if (ImGui::CalcTextSize(text.c_str()).x * px / g.font > g.cellPxW - px * 0.3f)
    return std::nullopt;
  return text;
}

std::optional<std::string> cellText(const HeatmapView& view, int r, int c, const Grid& g) {
  if (view.maskedByAllowed(r, c)) return std::nullopt;  // hatched, never "0"
  return screenCellLabel(view.values(r, c), g);
}

void drawGrid(HeatmapCache::Impl& impl, const Entry& entry, Grid& g, const HeatmapView& view,
              const HeatmapOptions& options, io::ValueRange range) {
  // 1 the textured quad, at the level of detail where a cell is about a pixel
  ImDrawList* drawList = ImGui::GetWindowDrawList();
  const float font = g.font;
  const float framebufferScale = std::max(ImGui::GetIO().DisplayFramebufferScale.x, 1.f);
  const float visibleCols = (g.u1 - g.u0) * g.cols, visibleRows = (g.v1 - g.v0) * g.rows;
  const float cellsPerPixel = std::max(visibleCols / (g.gridW * framebufferScale),
                                       visibleRows / (g.gridH * framebufferScale));
  g.level = 0;
  if (cellsPerPixel > 1.f) g.level = static_cast<int>(std::ceil(std::log2(cellsPerPixel) - 1e-3f));
  g.level = std::clamp(g.level, 0, std::max(0, entry.levels - 1));
  g.drawn = impl.textures->ready() && entry.texture != 0;
  if (g.drawn) {
    impl.textures->drawQuad(
        drawList, HeatmapQuad{entry.texture, options.colormap, range, g.level,
                              std::max(6.f, std::round(font * 0.5f)) * framebufferScale, g.gridMin,
                              g.gridMax, ImVec2(g.u0, g.v0), ImVec2(g.u1, g.v1)});
  }
  if (options.markRow >= 0 && options.markCol >= 0 && options.markRow < g.rows &&
      options.markCol < g.cols) {
    // A cell linked from another heatmap (compare view): outlined, clipped to the grid.
    const ImVec2 cellMin = g.cellScreenMin(options.markRow, options.markCol);
    drawList->PushClipRect(g.gridMin, g.gridMax, true);
    const float thick = std::max(1.f, font * 0.12f);
    drawList->AddRect(ImVec2(cellMin.x - thick, cellMin.y - thick),
                      ImVec2(cellMin.x + g.cellPxW + thick, cellMin.y + g.cellPxH + thick),
                      ImGui::GetColorU32(ImGuiCol_PlotHistogram), 0.f, 0, 2.f * thick);
    drawList->PopClipRect();
  }
  if (options.highlight) {
    drawList->AddRect(ImVec2(g.gridMin.x - 3, g.gridMin.y - 3),
                      ImVec2(g.gridMax.x + 3, g.gridMax.y + 3),
                      ImGui::GetColorU32(ImGuiCol_PlotHistogram), 0.f, 0, 3.f);
  }

  // 2 cell labels: visible cells at least io::kCellLabelHeights (1.3) heights of the size the
  //   numbers are drawn at: the text fits with a small margin (each label is also fitted to
  //   the cell's width).
  //   One rule for every cell of the heatmap (core/base/format.h, the cell-number rule):
  //   each visible cell that is not hatched gets its number with ONE precision for all of
  //   them, never fewer significant digits than keep every number within 5 % of its value,
  //   at the largest size of font, 0.85 and kLabelFloor x font that the cells are tall
  //   enough for and at which every one of them fits; or none does: a cell is never blank
  //   beside one that prints, and a number is never false.
  g.cellLabels = options.cellLabels && g.cellPxH >= font * kLabelFloor * io::kCellLabelHeights &&
                 g.level == 0;
  if (!g.cellLabels) return;
  int least = 1;  // the fewest digits every visible number needs to read true
  for (int r = g.firstRow; r <= g.lastRow; ++r)
    for (int c = g.firstCol; c <= g.lastCol && least < 2; ++c)
      if (!view.maskedByAllowed(r, c)) least = std::max(least, leastTrueDigits(view.values(r, c)));
  std::vector<std::string> texts;
  texts.reserve(static_cast<std::size_t>((g.lastRow - g.firstRow + 1) * (g.lastCol - g.firstCol + 1)));
  bool fits = false;
  for (const float scale : {1.0f, 0.85f, kLabelFloor}) {
    if (g.cellPxH < font * scale * io::kCellLabelHeights) continue;  // too low for this size
    g.cellLabelPx = font * scale;
    g.cellDigits = matrixDigits(least, kCellDigits, [&](int digits) {
      g.cellDigits = digits;
      texts.clear();
      for (int r = g.firstRow; r <= g.lastRow; ++r) {
        for (int c = g.firstCol; c <= g.lastCol; ++c) {
          if (view.maskedByAllowed(r, c)) {
            texts.emplace_back();  // hatched: no number, on purpose
            continue;
          }
          std::optional<std::string> text = cellText(view, r, c, g);
          if (!text) return false;
          texts.push_back(std::move(*text));
        }
      }
      return true;
    });
    fits = g.cellDigits > 0;
    if (fits) break;
  }
  if (!fits) {  // not every cell can hold its number: none does
    g.cellLabels = false;
    g.cellLabelPx = 0;
    g.cellDigits = kCellDigits;
    return;
  }
  const float px = g.cellLabelPx;
  drawList->PushClipRect(g.gridMin, g.gridMax, true);
  std::size_t index = 0;
  for (int r = g.firstRow; r <= g.lastRow; ++r) {
    for (int c = g.firstCol; c <= g.lastCol; ++c) {
      const float value = view.values(r, c);
      const std::string& text = texts[index++];
      if (text.empty()) {
        ++g.hatchedCells;
        continue;
      }
      ++g.numberedCells;
      // (a layout dump reads each number as its own text: its own draw command)
      if (g.recordLabels) drawList->AddDrawCmd();
      const ImVec2 size = ImGui::GetFont()->CalcTextSizeA(px, FLT_MAX, 0.f, text.c_str());
      const ImVec2 cellMin = g.cellScreenMin(r, c);
      const ImVec2 at(std::round(cellMin.x + (g.cellPxW - size.x) * 0.5f),
                      std::round(cellMin.y + (g.cellPxH - size.y) * 0.5f));
      const float colorValue = g.positions.empty() ? value : g.positions(r, c);
      drawList->AddText(ImGui::GetFont(), px, at,
                        imColor(io::cellLabelColor(options.colormap, colorValue, range)),
                        text.c_str());
    }
  }
  drawList->PopClipRect();
}

// Axis and colour-bar titles with their thinning rules ("dimension · every 5th label · rows:
// every 2nd label") are longer than a label; they are fitted to the room, not capped.
constexpr std::size_t kTitleChars = 120;

void drawAxisLabels(const Entry& entry, Grid& g, const HeatmapView& view,
                    const HeatmapOptions& options) {
  // Columns above, rows to the left; every k-th when too dense, with the rule written
  // beside the axis title ("key · every 2nd label"); each label capped (io::capLabel) and
  // fitted to its room with "…".
  if (!options.axisLabels) return;
  ImDrawList* drawList = ImGui::GetWindowDrawList();
  const ImU32 textColor = ImGui::GetColorU32(ImGuiCol_Text);
  const float font = g.font;
  const float lineHeight = ImGui::GetTextLineHeight();
  const bool hasCols = !view.colLabels.empty(), hasRows = !view.rowLabels.empty();
  const char* dot = " \xC2\xB7 ";  // " · "
  // 1 the label sizes and steps (io::fitRowLabels, io::fitColumnLabels): never thinned
  //   while a row (a column) holds its label at the full font; below that the labels shrink
  //   down to a floor (kLabelFloor of the font), then column labels turn, and only then
  //   every k-th is drawn. In presentation and "this stage alone" (allLabels) every label
  //   is drawn, shrunk as far as it takes (down to kAllLabelsFloorPx).
  const io::AxisLabelFit rowFit =
      io::fitRowLabels(g.cellPxH, font, font * kLabelFloor, kAllLabelsFloorPx, options.allLabels);
  g.rowLabelPx = rowFit.px;
  g.rowStep = hasRows ? rowFit.step : 1;
  io::AxisLabelFit colFit = io::fitColumnLabels(entry.colLabelWidth, font * 0.4f, g.cellPxW, font,
                                                font * kLabelFloor, kAllLabelsFloorPx,
                                                options.allLabels);
  if (colFit.up != g.colLabelsRotated) {
    // The layout (at the same zoom) decided otherwise: keep its band, fit within it.
    colFit = io::fitRowLabels(g.cellPxW, font, font * kLabelFloor, kAllLabelsFloorPx,
                              options.allLabels);
    if (!g.colLabelsRotated) {
      colFit.px = font * kLabelFloor;
      colFit.step = options.allLabels
                        ? 1
                        : io::labelStep(entry.colLabelWidth * kLabelFloor + font * 0.4f, g.cellPxW);
    }
  }
  g.colLabelPx = colFit.px;
  g.colStep = hasCols ? colFit.step : 1;  // 2 the titles: "key · every 2nd label" above, "query" read upwards on the left; the rows'
  //   rule goes above too when it does not fit beside the rows
  std::string rowTitle(view.rowAxis), colTitle(view.colAxis);
  const std::string rowNote = io::thinningNote(g.rowStep), colNote = io::thinningNote(g.colStep);
  if (!colNote.empty()) colTitle += (colTitle.empty() ? "" : dot) + colNote;
  if (!rowNote.empty()) {
    const std::string full = rowTitle + (rowTitle.empty() ? "" : dot) + rowNote;
    if (ImGui::CalcTextSize(full.c_str()).x <= g.gridH || !hasCols)
      rowTitle = full;
    else
      colTitle += (colTitle.empty() ? "" : dot) + std::string("rows: ") + rowNote;
  }
  if (hasCols) {
    // 3 column labels: upright when the widest fits a cell, else read bottom to top
    const float top = g.origin.y + g.colAxisHeight;
    drawList->PushClipRect(ImVec2(g.gridMin.x - font, top), ImVec2(g.gridMax.x + font, g.gridMin.y),
                           true);
    const int first = g.firstCol - g.firstCol % g.colStep;
    for (int c = first; c <= g.lastCol && c < static_cast<int>(view.colLabels.size());
         c += g.colStep) {
      const float centre = g.cellScreenMin(0, c).x + g.cellPxW * 0.5f;
      if (g.colLabelsRotated) {
        const float px = g.colLabelPx, line = lineHeight * px / font;
        const std::string text =
            fitLabel(view.colLabels[c], g.colLabelHeight - font * 0.3f, io::kLabelDisplayChars, px);
        addTextUp(drawList, ImVec2(std::round(centre - line * 0.5f), g.gridMin.y - font * 0.2f),
                  textColor, text, ImVec2(g.gridMin.x - line * 0.5f, top),
                  ImVec2(g.gridMax.x + line * 0.5f, g.gridMin.y), px);
        if (g.recordLabels) recordLabel(g.colLabelsDrawn, c, text);
      } else {
        const float px = g.colLabelPx;
        const std::string text =
            fitLabel(view.colLabels[c], g.cellPxW * g.colStep, io::kLabelDisplayChars, px);
        if (g.recordLabels) recordLabel(g.colLabelsDrawn, c, text);
        const float width = ImGui::GetFont()->CalcTextSizeA(px, FLT_MAX, 0.f, text.c_str()).x;
        // On the band's baseline whatever the size (a shrunk label sits low, by the grid).
        drawList->AddText(ImGui::GetFont(), px,
                          ImVec2(std::round(centre - width * 0.5f),
                                 g.gridMin.y - font * 0.15f - px),
                          textColor, text.c_str());
      }
    }
    drawList->PopClipRect();
    // 4 the column title line, centred on the grid within the widget's width
    const float left = g.origin.x + g.rowAxisWidth, right = g.gridMax.x + g.colorbarWidth;
    const std::string title = fitLabel(colTitle, std::max(right - left, font * 3), kTitleChars);
    const float width = ImGui::CalcTextSize(title.c_str()).x;
    const float x = std::clamp(g.gridMin.x + (g.gridW - width) * 0.5f, left,
                               std::max(left, right - width));
    drawList->AddText(ImVec2(std::round(x), g.origin.y), textColor, title.c_str());
  }
  if (hasRows) {
    // 5 row labels, right-aligned against the grid
    const float left = g.origin.x + g.rowAxisWidth;
    drawList->PushClipRect(ImVec2(left, g.gridMin.y - font * 0.5f),
                           ImVec2(g.gridMin.x, g.gridMax.y + font * 0.5f), true);
    const int first = g.firstRow - g.firstRow % g.rowStep;
    for (int r = first; r <= g.lastRow && r < static_cast<int>(view.rowLabels.size());
         r += g.rowStep) {
      const float px = g.rowLabelPx;
      const std::string text =
          fitLabel(view.rowLabels[r], g.rowLabelWidth - font * 0.4f, io::kLabelDisplayChars, px);
      const ImVec2 size = ImGui::GetFont()->CalcTextSizeA(px, FLT_MAX, 0.f, text.c_str());
      const float centre = g.cellScreenMin(r, 0).y + g.cellPxH * 0.5f;
      drawList->AddText(ImGui::GetFont(), px,
                        ImVec2(g.gridMin.x - font * 0.3f - size.x, std::round(centre - size.y * 0.5f)),
                        textColor, text.c_str());
      if (g.recordLabels) recordLabel(g.rowLabelsDrawn, r, text);
    }
    drawList->PopClipRect();
    // 6 the row title, read bottom to top, centred beside the grid
    const std::string title = fitLabel(rowTitle, std::max(g.gridH, font * 3), kTitleChars);
    const float width = ImGui::CalcTextSize(title.c_str()).x;
    addTextUp(drawList, ImVec2(g.origin.x, std::round(g.gridMin.y + (g.gridH + width) * 0.5f)),
              textColor, title, g.origin, ImVec2(left, g.gridMax.y + font));
  }
}

void drawColorbar(HeatmapCache::Impl& impl, const Grid& g, const HeatmapView& view,
                  const HeatmapOptions& options) {
  // The LUT texture, high values at the top, round ticks (io::colorbarTicks), the title.
  if (!options.colorbar) return;
  ImDrawList* drawList = ImGui::GetWindowDrawList();
  const ImU32 textColor = ImGui::GetColorU32(ImGuiCol_Text);
  const ImU32 borderColor = ImGui::GetColorU32(ImGuiCol_Border);
  const float font = g.font;
  const ImVec2 barMin(g.gridMax.x + font * (options.slimColorbar ? 0.3f : 0.5f), g.gridMin.y);
  const ImVec2 barMax(barMin.x + font * (options.slimColorbar ? 0.45f : 0.8f),
                      g.gridMin.y + std::max(g.gridH, font * (options.slimColorbar ? 2 : 3)));
  if (impl.textures->ready())
    impl.textures->drawColorbar(drawList, options.colormap, barMin, barMax);
  drawList->AddRect(barMin, barMax, borderColor);
  float right = barMax.x;
  if (options.slimColorbar) {
    // The two ends only ("0" at the bottom, "1" at the top): enough to tell 0.08 from 0.8.
    if (g.slimBare) return;
    const float textX = barMax.x + font * 0.2f;
    const std::string top = g.scaleTicks != nullptr ? g.vmaxText : slimEndText(g.range, true);
    const std::string bottom = g.scaleTicks != nullptr ? g.vminText : slimEndText(g.range, false);
    drawList->AddText(ImVec2(textX, barMin.y - font * 0.1f), textColor, top.c_str());
    drawList->AddText(ImVec2(textX, barMax.y - font * 0.95f), textColor, bottom.c_str());
    return;
  }
  if (g.scaleTicks != nullptr) {
    // Per-row / log colours (io/color_scale.h): the ends labelled ("row min" / "row max", or
    // the log floor and top), decades between them where they do not collide with each
    // other or the ends.
    const float textX = barMax.x + font * 0.45f;
    drawList->AddText(ImVec2(textX, barMin.y - font * 0.1f), textColor, g.vmaxText.c_str());
    drawList->AddText(ImVec2(textX, barMax.y - font * 0.95f), textColor, g.vminText.c_str());
    right = std::max({right, textX + ImGui::CalcTextSize(g.vmaxText.c_str()).x,
                      textX + ImGui::CalcTextSize(g.vminText.c_str()).x});
    const float height = barMax.y - barMin.y;
    float lastY = barMax.y - font * 0.95f;  // the bottom label's top
    for (const io::ColorbarTick& tick : *g.scaleTicks) {
      if (tick.position <= 0.0f || tick.position >= 1.0f) continue;  // the ends are labelled
      const float y = std::round(barMax.y - tick.position * height);
      drawList->AddLine(ImVec2(barMax.x, y), ImVec2(barMax.x + font * 0.3f, y), textColor);
      if (y + font * 0.5f > lastY || y - font * 0.5f < barMin.y + font * 0.9f) continue;
      drawList->AddText(ImVec2(textX, y - font * 0.5f), textColor, tick.text.c_str());
      right = std::max(right, textX + ImGui::CalcTextSize(tick.text.c_str()).x);
      lastY = y - font * 0.5f;
    }
  } else {
    for (float t : g.ticks.values) {
      const float position = io::colorPosition(t, g.range);
      const float y = std::round(barMax.y - position * (barMax.y - barMin.y));
      drawList->AddLine(ImVec2(barMax.x, y), ImVec2(barMax.x + font * 0.3f, y), textColor);
      const std::string text = formatNumber(t, g.ticks.digits);
      const ImVec2 size = ImGui::CalcTextSize(text.c_str());
      drawList->AddText(ImVec2(barMax.x + font * 0.45f, std::round(y - size.y * 0.5f)), textColor,
                        text.c_str());
      right = std::max(right, barMax.x + font * 0.45f + size.x);
    }
  }
  // The title names the values and the range rule in force: "weight · fixed 0–1".
  std::string fullTitle(view.valueTitle);
  if (!g.ruleText.empty()) fullTitle += (fullTitle.empty() ? "" : " \xC2\xB7 ") + g.ruleText;
  if (!fullTitle.empty()) {
    // Longer than the bar: a smaller font (down to kLabelFloor) before it ends in "…".
    const float room = barMax.y - barMin.y;
    const float full = ImGui::CalcTextSize(io::capLabel(fullTitle, kTitleChars).c_str()).x;
    const float px = font * std::clamp(room / std::max(full, 1.f), kLabelFloor, 1.f);
    const std::string title = fitLabel(fullTitle, room, kTitleChars, px);
    const float width = ImGui::GetFont()->CalcTextSizeA(px, FLT_MAX, 0.f, title.c_str()).x;
    const ImVec2 at(right + font * 0.3f, std::round((barMin.y + barMax.y + width) * 0.5f));
    addTextUp(drawList, at, textColor, title, ImVec2(at.x, barMin.y),
              ImVec2(at.x + font * 1.2f, barMax.y), px);
  }
}

// The full text of a label for the hover readout: up to kHoverLabelChars code points (a
// 10 MB label would make a tooltip as wide as the screen many times over), then its length.
constexpr std::size_t kHoverLabelChars = 400;
std::string hoverLabel(std::string_view label) {
  std::string text = io::capLabel(label, kHoverLabelChars);
  if (text.size() < label.size())
    text += " (" + countOf(static_cast<long long>(label.size()), "byte", "bytes") + ")";
  return text;
}

namespace {

// The value line of the hover readout: "value: 0.119", or "masked (−∞): ..." for a masked
// score, never a number that could be read as a weight.
std::string hoverValue(const HeatmapView& view, int r, int c) {
  const float value = view.values(r, c);
  if (view.masked(r, c))
    return "masked (" + formatNumber(value, kTooltipDigits) + "): this key is not attended";
  if (std::isnan(value)) return "value: NaN (not a number: marked, not coloured)";
  if (std::isinf(value)) return "value: +inf (marked, not coloured)";
  return "value: " + formatNumber(value, kTooltipDigits);
}

// "query 3 “cat”", "dimension 2", "row 4": the axis (or row / column), the index, and the
// label when it says more than the index.
std::string axisReadout(std::string_view axis, const char* fallback, int index,
                        std::span<const std::string> labels) {
  std::string text = axis.empty() ? fallback : std::string(axis);
  text += ' ';
  text += std::to_string(index);
  if (index < static_cast<int>(labels.size())) {
    const std::string& label = labels[static_cast<size_t>(index)];
    if (!label.empty() && label != std::to_string(index))
      text += " \xE2\x80\x9C" + hoverLabel(label) + "\xE2\x80\x9D";  // “label”
  }
  return text;
}

}  // namespace

void drawHoverReadout(const Entry& entry, const Grid& g, const HeatmapView& view,
                      const HeatmapOptions& options, const HeatmapInteraction& interaction) {
  if (!interaction.hovered || entry.panned) return;
  ImDrawList* drawList = ImGui::GetWindowDrawList();
  const int r = interaction.row, c = interaction.col;
  const ImVec2 cellMin = g.cellScreenMin(r, c);
  drawList->PushClipRect(g.gridMin, g.gridMax, true);
  drawList->AddRect(cellMin, ImVec2(cellMin.x + g.cellPxW, cellMin.y + g.cellPxH),
                    IM_COL32(255, 255, 255, 220), 0.f, 0, std::max(1.f, g.font * 0.12f));
  drawList->PopClipRect();
  ImGui::BeginTooltip();
  ImGui::PushTextWrapPos(g.font * 32);
  ImGui::TextUnformatted(view.title.data(), view.title.data() + view.title.size());
  // The full labels (the axes show them capped and maybe thinned).
  const std::string rowText = axisReadout(view.rowAxis, "row", r, view.rowLabels);
  const std::string colText = axisReadout(view.colAxis, "column", c, view.colLabels);
  ImGui::TextUnformatted((rowText + " \xE2\x86\x92 " + colText).c_str());  // →
  ImGui::TextUnformatted(hoverValue(view, r, c).c_str());
  if (!entry.caption.empty()) {  // per-row / log colours: the rule, and this row's range
    ImGui::TextDisabled("colour: %s", entry.caption.c_str());
    if (entry.normalization.range == RangeMode::Row) {
      const io::ValueRange rowRange = io::normalizationRange(view.values, r, entry.normalization);
      ImGui::TextDisabled("row %d spans %s \xE2\x80\xA6 %s", r,
                          formatNumber(rowRange.lo, kCellDigits).c_str(),
                          formatNumber(rowRange.hi, kCellDigits).c_str());
    }
  }
  // A token's label for the block readout, "" when it only repeats the index.
  const auto labelOf = [](std::span<const std::string> labels, int i) {
    if (i >= static_cast<int>(labels.size())) return std::string();
    const std::string& label = labels[static_cast<std::size_t>(i)];
    return label == std::to_string(i) ? std::string() : hoverLabel(label);
  };
  const auto rowLabel = [&](int i) { return labelOf(view.rowLabels, i); };
  const auto colLabel = [&](int i) { return labelOf(view.colLabels, i); };
  const auto describe = [](float value) {
    std::string text = formatNumber(value, kTooltipDigits);
    if (std::isnan(value))
      text += " (NaN)";
    else if (std::isinf(value))
      text += value < 0 ? " (-inf, masked)" : " (+inf)";
    return text;
  };
  if (options.tooltip) ImGui::TextDisabled("%s", options.tooltip);
  if (g.level > 0) {
    // The pixel shows the max of a block of cells: say which tokens it covers, and where
    // its maximum (the colour on screen) is.
    const PooledBlock block = pooledBlock(view.values, g.level, r, c);
    ImGui::TextDisabled("cells are smaller than a pixel: this pixel is the max of a block");
    ImGui::Text(
        "rows %d\xE2\x80\x93%d (%s \xE2\x80\xA6 %s), columns %d\xE2\x80\x93%d (%s "
        "\xE2\x80\xA6 %s)",
        block.row0, block.row1, rowLabel(block.row0).c_str(), rowLabel(block.row1).c_str(),
        block.col0, block.col1, colLabel(block.col0).c_str(), colLabel(block.col1).c_str());
    ImGui::Text("block max %s at row %d %s \xE2\x86\x92 column %d %s", describe(block.max).c_str(),
                block.maxRow, rowLabel(block.maxRow).c_str(), block.maxCol,
                colLabel(block.maxCol).c_str());
  }
  ImGui::TextDisabled("wheel: zoom  drag: pan  double-click: reset  right-click: export");
  ImGui::PopTextWrapPos();
  ImGui::EndTooltip();
}

HeatmapRecord recordOf(const char* id, const Grid& g, const HeatmapView& view,
                       const HeatmapOptions& options, io::ValueRange range) {
  HeatmapRecord record;
  record.id = id;
  record.title = std::string(view.title);
  record.colormap = options.colormap;
  record.vmin = range.lo;
  record.vmax = range.hi;
  record.rows = g.rows;
  record.cols = g.cols;
  record.gridMin = g.gridMin;
  record.gridMax = g.gridMax;
  record.u0 = g.u0, record.v0 = g.v0, record.u1 = g.u1, record.v1 = g.v1;
  record.level = g.level;
  record.drawn = g.drawn;
  record.rowStep = g.rowStep;
  record.colStep = g.colStep;
  record.colLabelsRotated = g.colLabelsRotated;
  record.cellW = g.cellPxW;
  record.cellH = g.cellPxH;
  record.fontPx = g.font;
  record.rowLabelPx = g.rowLabelPx;
  record.colLabelPx = g.colLabelPx;
  record.boundsMin = g.origin;
  record.boundsMax =
      ImVec2(g.gridMax.x + g.colorbarWidth,
             std::max(g.gridMax.y, g.gridMin.y + g.font * (options.slimColorbar ? 2.f : 3.f)));
  record.numbersDrawn = g.cellLabels;
  record.numberPx = g.cellLabels ? g.cellLabelPx : 0;
  record.numberedCells = g.numberedCells;
  record.hatchedCells = g.hatchedCells;
  record.visibleCells = (g.lastRow - g.firstRow + 1) * (g.lastCol - g.firstCol + 1);
  record.rangeRule = std::string(io::toString(g.rule));
  if (g.recordLabels) {
    record.rowLabels = g.rowLabelsDrawn;
    record.colLabels = g.colLabelsDrawn;
    // Labels past the last drawn one (thinned, or scrolled out) are "" too.
    if (!view.rowLabels.empty()) record.rowLabels.resize(view.rowLabels.size());
    if (!view.colLabels.empty()) record.colLabels.resize(view.colLabels.size());
    if (static_cast<long long>(g.rows) * g.cols <= kRecordedValues) {
      record.values.reserve(static_cast<std::size_t>(g.rows) * g.cols);
      for (int rr = 0; rr < g.rows; ++rr)
        for (int cc = 0; cc < g.cols; ++cc)
          record.values.push_back(view.maskedByAllowed(rr, cc)
                                      ? -std::numeric_limits<float>::infinity()
                                      : view.values(rr, cc));
    }
  }
  if (g.scaleTicks != nullptr) {  // per row / log: the positions of the scale's own ticks
    record.ticks.clear();
    for (const io::ColorbarTick& tick : *g.scaleTicks) record.ticks.push_back(tick.position);
  } else {
    record.ticks = g.ticks.values;
  }
  // The sample: among (at most 32 x 32, strided) visible cells, the finite value closest
  // to the middle of the colour range, so a check of its pixel tells colours apart.
  int r = std::clamp(static_cast<int>((g.v0 + g.v1) * 0.5f * g.rows), g.firstRow, g.lastRow);
  int c = std::clamp(static_cast<int>((g.u0 + g.u1) * 0.5f * g.cols), g.firstCol, g.lastCol);
  const int rowStep = std::max(1, (g.lastRow - g.firstRow + 1) / 32);
  const int colStep = std::max(1, (g.lastCol - g.firstCol + 1) / 32);
  float best = std::numeric_limits<float>::infinity();
  for (int rr = g.firstRow; rr <= g.lastRow; rr += rowStep) {
    for (int cc = g.firstCol; cc <= g.lastCol; cc += colStep) {
      const float value = view.values(rr, cc);
      if (!std::isfinite(value) || view.maskedByAllowed(rr, cc)) continue;  // hatched
      const float distance = std::fabs(io::colorPosition(value, range) - 0.5f);
      if (distance < best) best = distance, r = rr, c = cc;
    }
  }
  const ImVec2 cellMin = g.cellScreenMin(r, c);
  record.sampleRow = r;
  record.sampleCol = c;
  record.sampleValue = view.values(r, c);
  if (g.cellLabels) record.sampleLabel = cellText(view, r, c, g).value_or("");
  record.cellMin = ImVec2(std::max(cellMin.x, g.gridMin.x), std::max(cellMin.y, g.gridMin.y));
  record.cellMax = ImVec2(std::min(cellMin.x + g.cellPxW, g.gridMax.x),
                          std::min(cellMin.y + g.cellPxH, g.gridMax.y));
  // Above the centred label: labels are one font height tall and centred, so the top
  // 0.15 font heights of a labelled cell (>= 1.3 font heights) are free of text; a pixel
  // below the cell's top edge.
  record.samplePoint = ImVec2((record.cellMin.x + record.cellMax.x) * 0.5f,
                              record.cellMin.y + std::min((record.cellMax.y - record.cellMin.y) * 0.15f,
                                                          std::max(1.f, g.font * 0.08f)));
  ImDrawList* drawList = ImGui::GetWindowDrawList();
  const ImVec2 clipMin = drawList->GetClipRectMin(), clipMax = drawList->GetClipRectMax();
  record.clipMin = clipMin;
  record.clipMax = clipMax;
  const ImVec2 p = record.samplePoint;
  record.sampleVisible = p.x >= clipMin.x && p.y >= clipMin.y && p.x < clipMax.x && p.y < clipMax.y;
  return record;
}

}  // namespace attn::app::widget
