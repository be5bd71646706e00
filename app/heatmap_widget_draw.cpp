// Heatmap widget: drawing (see heatmap_widget_parts.h). The quad goes through the
// HeatmapTextures interface; text goes into the window's draw list.
#include <algorithm>
#include <cmath>
#include <limits>

#include <imgui.h>

#include "app/heatmap_textures.h"
#include "app/heatmap_widget_parts.h"

namespace attn::app::widget {

namespace {

// ImGui colour of an io colour.
ImU32 imColor(io::Rgb c) {
  return IM_COL32(c.r, c.g, c.b, 255);
}

// Text cut to `maxWidth` with an ellipsis.
std::string fitText(const std::string& text, float maxWidth) {
  if (ImGui::CalcTextSize(text.c_str()).x <= maxWidth) return text;
  std::string cut = text;
  while (!cut.empty()) {
    // Drop one UTF-8 code point.
    do cut.pop_back();
    while (!cut.empty() && (static_cast<unsigned char>(cut.back()) & 0xC0) == 0x80);
    if (!cut.empty() && (static_cast<unsigned char>(cut.back()) & 0x80)) cut.pop_back();
    const std::string candidate = cut + "\xE2\x80\xA6";  // …
    if (ImGui::CalcTextSize(candidate.c_str()).x <= maxWidth) return candidate;
  }
  return {};
}

}  // namespace

std::optional<std::string> screenCellLabel(float value, const Grid& g) {
  // The shared formatter with fewer digits where the cell is narrow (io::fittedCellLabel,
  // the rule of the exports), none when even one digit does not fit.
  return io::fittedCellLabel(value, kCellDigits, [&](const std::string& text) {
    return ImGui::CalcTextSize(text.c_str()).x <= g.cellPxW - g.font * 0.3f;
  });
}

void drawGrid(HeatmapCache::Impl& impl, const Entry& entry, Grid& g, const io::HeatmapView& view,
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
  if (options.highlight) {
    drawList->AddRect(ImVec2(g.gridMin.x - 3, g.gridMin.y - 3),
                      ImVec2(g.gridMax.x + 3, g.gridMax.y + 3),
                      ImGui::GetColorU32(ImGuiCol_PlotHistogram), 0.f, 0, 3.f);
  }

  // 2 cell labels: only visible cells that are at least ~2.5 font heights tall
  g.cellLabels = options.cellLabels && g.cellPxH >= font * 2.5f && g.level == 0;
  if (!g.cellLabels) return;
  drawList->PushClipRect(g.gridMin, g.gridMax, true);
  for (int r = g.firstRow; r <= g.lastRow; ++r) {
    for (int c = g.firstCol; c <= g.lastCol; ++c) {
      const float value = view.values(r, c);
      const std::optional<std::string> text = screenCellLabel(value, g);
      if (!text) continue;
      const ImVec2 size = ImGui::CalcTextSize(text->c_str());
      const ImVec2 cellMin = g.cellScreenMin(r, c);
      const ImVec2 at(std::round(cellMin.x + (g.cellPxW - size.x) * 0.5f),
                      std::round(cellMin.y + (g.cellPxH - size.y) * 0.5f));
      const float colorValue = g.positions.empty() ? value : g.positions(r, c);
      drawList->AddText(at, imColor(io::cellLabelColor(options.colormap, colorValue, range)),
                        text->c_str());
    }
  }
  drawList->PopClipRect();
}

void drawAxisLabels(const Entry& entry, const Grid& g, const io::HeatmapView& view,
                    const HeatmapOptions& options) {
  // Columns above, rows to the left; skipped evenly when too dense.
  if (!options.axisLabels) return;
  ImDrawList* drawList = ImGui::GetWindowDrawList();
  const ImU32 textColor = ImGui::GetColorU32(ImGuiCol_Text);
  const float font = g.font;
  if (!view.colLabels.empty()) {
    const float widest = entry.colLabelWidth;
    const int step = std::max(1, static_cast<int>(std::ceil((widest + font * 0.5f) / g.cellPxW)));
    drawList->PushClipRect(ImVec2(g.gridMin.x - font, g.origin.y),
                           ImVec2(g.gridMax.x + font, g.gridMin.y), true);
    for (int c = g.firstCol; c <= g.lastCol && c < static_cast<int>(view.colLabels.size()); ++c) {
      if (c % step != 0) continue;
      const std::string text =
          fitText(view.colLabels[c], std::max(g.cellPxW * step - font * 0.3f, font));
      const float width = ImGui::CalcTextSize(text.c_str()).x;
      const float centre = g.cellScreenMin(0, c).x + g.cellPxW * 0.5f;
      drawList->AddText(ImVec2(std::round(centre - width * 0.5f), g.gridMin.y - font * 1.15f),
                        textColor, text.c_str());
    }
    drawList->PopClipRect();
  }
  if (!view.rowLabels.empty()) {
    const int step = std::max(1, static_cast<int>(std::ceil(font * 1.05f / g.cellPxH)));
    drawList->PushClipRect(ImVec2(g.origin.x, g.gridMin.y - font * 0.5f),
                           ImVec2(g.gridMin.x, g.gridMax.y + font * 0.5f), true);
    for (int r = g.firstRow; r <= g.lastRow && r < static_cast<int>(view.rowLabels.size()); ++r) {
      if (r % step != 0) continue;
      const std::string text = fitText(view.rowLabels[r], g.rowLabelWidth - font * 0.4f);
      const ImVec2 size = ImGui::CalcTextSize(text.c_str());
      const float centre = g.cellScreenMin(r, 0).y + g.cellPxH * 0.5f;
      drawList->AddText(
          ImVec2(g.gridMin.x - font * 0.3f - size.x, std::round(centre - size.y * 0.5f)), textColor,
          text.c_str());
    }
    drawList->PopClipRect();
  }
}

void drawColorbar(HeatmapCache::Impl& impl, const Grid& g, const HeatmapOptions& options) {
  // The LUT texture, high values at the top, with the range's ends.
  if (!options.colorbar) return;
  ImDrawList* drawList = ImGui::GetWindowDrawList();
  const ImU32 textColor = ImGui::GetColorU32(ImGuiCol_Text);
  const float font = g.font;
  const ImVec2 barMin(g.gridMax.x + font * 0.5f, g.gridMin.y);
  const ImVec2 barMax(barMin.x + font * 0.8f, g.gridMin.y + std::max(g.gridH, font * 3));
  if (impl.textures->ready())
    impl.textures->drawColorbar(drawList, options.colormap, barMin, barMax);
  drawList->AddRect(barMin, barMax, ImGui::GetColorU32(ImGuiCol_Border));
  drawList->AddText(ImVec2(barMax.x + font * 0.3f, barMin.y - font * 0.1f), textColor,
                    g.vmaxText.c_str());
  drawList->AddText(ImVec2(barMax.x + font * 0.3f, barMax.y - font * 0.95f), textColor,
                    g.vminText.c_str());
  // Log decades between the ends, where they do not collide with each other or the ends.
  if (g.scaleTicks != nullptr) {
    const float height = barMax.y - barMin.y;
    float lastY = barMax.y - font * 0.95f;  // the bottom label's top
    for (const io::ColorbarTick& tick : *g.scaleTicks) {
      if (tick.position <= 0.0f || tick.position >= 1.0f) continue;  // the ends are labelled
      const float y = barMax.y - tick.position * height;
      drawList->AddLine(ImVec2(barMax.x - font * 0.25f, y), ImVec2(barMax.x, y), textColor);
      if (y + font * 0.5f > lastY || y - font * 0.5f < barMin.y + font * 0.9f) continue;
      drawList->AddText(ImVec2(barMax.x + font * 0.3f, y - font * 0.5f), textColor,
                        tick.text.c_str());
      lastY = y - font * 0.5f;
    }
  }
}

void drawHoverReadout(const Entry& entry, const Grid& g, const io::HeatmapView& view,
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
  ImGui::TextUnformatted(view.title.data(), view.title.data() + view.title.size());
  const std::string rowLabel = r < static_cast<int>(view.rowLabels.size()) ? view.rowLabels[r] : "";
  const std::string colLabel = c < static_cast<int>(view.colLabels.size()) ? view.colLabels[c] : "";
  ImGui::Text("row %d %s \xE2\x86\x92 column %d %s", r, rowLabel.c_str(), c, colLabel.c_str());
  const float value = view.values(r, c);
  const bool masked = std::isinf(value) && value < 0;
  ImGui::Text("value: %s%s", formatNumber(value, kTooltipDigits).c_str(),
              masked ? " (masked)" : "");
  if (!entry.caption.empty()) {
    ImGui::TextDisabled("colour: %s", entry.caption.c_str());
    if (entry.normalization.range == io::RangeMode::Row) {
      const io::ValueRange rowRange = io::normalizationRange(view.values, r, entry.normalization);
      ImGui::TextDisabled("row %d spans %s \xE2\x80\xA6 %s", r,
                          formatNumber(rowRange.lo, kCellDigits).c_str(),
                          formatNumber(rowRange.hi, kCellDigits).c_str());
    }
  }
  if (options.tooltip) ImGui::TextDisabled("%s", options.tooltip);
  if (g.level > 0)
    ImGui::TextDisabled("cells are smaller than a pixel: showing the max of each block");
  ImGui::TextDisabled("wheel: zoom  drag: pan  double-click: reset  right-click: export");
  ImGui::EndTooltip();
}

HeatmapRecord recordOf(const char* id, const Grid& g, const io::HeatmapView& view,
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
      if (!std::isfinite(value)) continue;
      const float distance = std::fabs(io::colorPosition(value, range) - 0.5f);
      if (distance < best) best = distance, r = rr, c = cc;
    }
  }
  const ImVec2 cellMin = g.cellScreenMin(r, c);
  record.sampleRow = r;
  record.sampleCol = c;
  record.sampleValue = view.values(r, c);
  if (g.cellLabels) record.sampleLabel = screenCellLabel(record.sampleValue, g).value_or("");
  record.cellMin = ImVec2(std::max(cellMin.x, g.gridMin.x), std::max(cellMin.y, g.gridMin.y));
  record.cellMax = ImVec2(std::min(cellMin.x + g.cellPxW, g.gridMax.x),
                          std::min(cellMin.y + g.cellPxH, g.gridMax.y));
  // Above the centred label: labels are one font height tall and centred, so the top
  // fifth of a labelled cell (>= 2.5 font heights) is free of text.
  record.samplePoint = ImVec2((record.cellMin.x + record.cellMax.x) * 0.5f,
                              record.cellMin.y + (record.cellMax.y - record.cellMin.y) * 0.15f);
  ImDrawList* drawList = ImGui::GetWindowDrawList();
  const ImVec2 clipMin = drawList->GetClipRectMin(), clipMax = drawList->GetClipRectMax();
  const ImVec2 p = record.samplePoint;
  record.sampleVisible = p.x >= clipMin.x && p.y >= clipMin.y && p.x < clipMax.x && p.y < clipMax.y;
  return record;
}

}  // namespace attn::app::widget
