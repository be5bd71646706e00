// The Attention panel's focus view: one row (a query's attention over the keys) or one
// column (how much each query attends to a key) of the shown matrix as labelled bars.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "app/session/attention_analysis.h"
#include "app/ui/panels/attention/attention_panel.h"
#include "app/ui/panels/panel_common.h"
#include "core/base/cell_number.h"

namespace attn::app::attention_panel {

using panel::tooltip;

void drawFocusView(AttentionView& view, const MatrixView& displayed,
                   const std::vector<bool>& dropped) {
  AttentionFocus& focus = view.focus;
  const float font = ImGui::GetFontSize();
  const int rows = static_cast<int>(displayed.values.rows());
  const int cols = static_cast<int>(displayed.values.cols());
  int mode = focus.column ? 1 : 0;
  ImGui::RadioButton("row: a query", &mode, 0);
  tooltip("How the chosen query spreads its attention over the keys (a row of the heatmap).");
  ImGui::SameLine();
  ImGui::RadioButton("column: a key", &mode, 1);
  tooltip("How much each query attends to the chosen key (a column of the heatmap).");
  focus.column = mode == 1;
  const int extent = focus.column ? cols : rows;
  ImGui::SameLine();
  ImGui::SetNextItemWidth(font * 12.f);
  ImGui::SliderInt(focus.column ? "key" : "query", &focus.index, 0, std::max(0, extent - 1));
  tooltip("Click a cell of the heatmap to focus its query.");
  const FocusBars bars = focusBars(displayed, focus.column, focus.index, dropped);
  focus.index = std::max(0, bars.index);
  ImGui::TextUnformatted(bars.title.c_str());
  ImGui::SameLine();
  ImGui::TextDisabled(view.filter.enabled && view.filter.cache
                          ? "(special tokens dropped, rows renormalised)"
                          : "(raw values)");
  if (bars.values.empty()) return;
  // Bars scaled to the largest finite value, with the value written after each bar.
  float top = 0;
  for (float v : bars.values)
    if (std::isfinite(v)) top = std::max(top, v);
  ImGui::BeginChild("##focusbars", ImVec2(0, 0), false);
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const float width = ImGui::GetContentRegionAvail().x;
  const float labelW = std::min(font * 9.f, width * 0.3f), valueW = font * 4.5f;
  const float barW = std::max(font, width - labelW - valueW - font);
  const float rowH = font * 1.3f;
  const ImVec4 barColor = focus.column ? panel::queryColor() : panel::keyColor();
  const ImU32 textColor = ImGui::GetColorU32(ImGuiCol_Text);
  const ImU32 mutedColor = ImGui::GetColorU32(ImGuiCol_TextDisabled);
  const ImU32 nanColor = IM_COL32(io::kNanColor.r, io::kNanColor.g, io::kNanColor.b, 255);
  ImGui::PushStyleVar(ImGuiStyleVar_ItemSpacing, ImVec2(ImGui::GetStyle().ItemSpacing.x, 0));
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(bars.values.size()), rowH);
  while (clipper.Step()) {
    for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
      const std::size_t at = static_cast<std::size_t>(i);
      const float v = bars.values[at];
      const bool isDropped = bars.dropped[at];
      const ImVec2 p = ImGui::GetCursorScreenPos();
      const std::string& label = bars.labels[at];
      const float labelWidth = ImGui::CalcTextSize(label.c_str()).x;
      draw->PushClipRect(p, ImVec2(p.x + labelW - font * 0.3f, p.y + rowH), true);
      draw->AddText(ImVec2(std::max(p.x, p.x + labelW - font * 0.3f - labelWidth),
                           p.y + (rowH - font) * 0.5f),
                    isDropped ? mutedColor : textColor, label.c_str());
      draw->PopClipRect();
      const ImVec2 b0(p.x + labelW, p.y + rowH * 0.15f);
      std::string valueText;
      if (!std::isfinite(v)) {
        // Never a bar length: a hatched magenta box and the value's name.
        const ImVec2 b1(b0.x + font * 2.f, p.y + rowH * 0.85f);
        draw->AddRectFilled(b0, b1, nanColor);
        for (float x = b0.x; x < b1.x; x += font * 0.4f)
          draw->AddLine(ImVec2(x, b1.y), ImVec2(std::min(b1.x, x + (b1.y - b0.y)), b0.y),
                        IM_COL32(110, 0, 110, 255));
        valueText = cellNumber(v, kCellDigits);
      } else if (isDropped) {
        valueText = "dropped";
      } else {
        const float length = top > 0 ? barW * std::clamp(v / top, 0.f, 1.f) : 0.f;
        draw->AddRectFilled(b0, ImVec2(b0.x + std::max(length, 1.f), p.y + rowH * 0.85f),
                            ImGui::ColorConvertFloat4ToU32(barColor));
        valueText = cellNumber(v, kCellDigits);  // the cell-number rule, one precision
      }
      draw->AddText(ImVec2(p.x + labelW + barW + font * 0.4f, p.y + (rowH - font) * 0.5f),
                    isDropped ? mutedColor : textColor, valueText.c_str());
      ImGui::Dummy(ImVec2(width, rowH));
      if (ImGui::IsItemHovered()) {
        ImGui::BeginTooltip();
        ImGui::Text("%s %d '%s': %s", focus.column ? "query" : "key", i, label.c_str(),
                    formatNumber(v, kTooltipDigits).c_str());
        if (isDropped)
          ImGui::TextDisabled("a special token: dropped, its weight moved to the rest");
        ImGui::EndTooltip();
      }
    }
  }
  clipper.End();
  ImGui::PopStyleVar();
  ImGui::EndChild();
}

}  // namespace attn::app::attention_panel
