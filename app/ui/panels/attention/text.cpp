// The Attention panel's text view (CircuitsVis style): the tokens as text, coloured by how
// much the selected token attends to them (or is attended by them).
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "app/ui/panels/attention/attention_panel.h"
#include "app/ui/panels/panel_common.h"

namespace attn::app::attention_panel {

using panel::tooltip;

void drawTextView(AttentionView& view, const MatrixView& displayed) {
  const Matrix& a = displayed.values;
  const int rows = static_cast<int>(a.rows()), cols = static_cast<int>(a.cols());
  const std::vector<std::string>& labels = displayed.colLabels;
  const int offset = cols - rows;  // query row of key token t is t - offset (KV cache)
  ImGui::Checkbox("attended by", &view.attendedBy);
  tooltip("Off: colour each token by how much the selected token attends to it (its row). "
          "On: by how much each token attends to the selected one (its column).");
  ImGui::SameLine();
  ImGui::TextDisabled("hover a token; click to pin it");
  const float font = ImGui::GetFontSize();
  ImGui::BeginChild("##textview", ImVec2(0, 0), false);
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const float width = ImGui::GetContentRegionAvail().x;
  const float lineH = font * 1.5f, pad = font * 0.2f;
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  const bool hoveredWindow = ImGui::IsWindowHovered();
  // Layout, hit test.
  std::vector<ImVec2> pos(static_cast<std::size_t>(cols));
  std::vector<float> widths(static_cast<std::size_t>(cols));
  float x = 0, y = 0;
  int hovered = -1;
  for (int t = 0; t < cols && t < static_cast<int>(labels.size()); ++t) {
    const float w = ImGui::CalcTextSize(labels[static_cast<std::size_t>(t)].c_str()).x + 2 * pad;
    if (x > 0 && x + w > width) {
      x = 0;
      y += lineH;
    }
    pos[static_cast<std::size_t>(t)] = ImVec2(origin.x + x, origin.y + y);
    widths[static_cast<std::size_t>(t)] = w;
    if (hoveredWindow && mouse.x >= origin.x + x && mouse.x < origin.x + x + w &&
        mouse.y >= origin.y + y && mouse.y < origin.y + y + lineH)
      hovered = t;
    x += w + pad;
  }
  ImGui::Dummy(ImVec2(width, y + lineH));
  if (hovered >= 0 && ImGui::IsMouseClicked(0))
    view.pinnedToken = view.pinnedToken == hovered ? -1 : hovered;
  const int selected = hovered >= 0 ? hovered : view.pinnedToken;
  // Weights of every token with respect to the selected one, scaled by their max.
  std::vector<float> weight(static_cast<std::size_t>(cols), 0.f);
  if (selected >= 0 && selected < cols) {
    float top = 0;
    for (int t = 0; t < cols; ++t) {
      float v = 0;
      if (!view.attendedBy) {
        const int r = selected - offset;
        v = r >= 0 && r < rows ? a(r, t) : 0.f;
      } else {
        const int r = t - offset;
        v = r >= 0 && r < rows ? a(r, selected) : 0.f;
      }
      weight[static_cast<std::size_t>(t)] = std::isfinite(v) ? v : 0.f;
      top = std::max(top, weight[static_cast<std::size_t>(t)]);
    }
    if (top > 0)
      for (float& w : weight) w /= top;
  }
  const ImU32 textColor = ImGui::GetColorU32(ImGuiCol_Text);
  for (int t = 0; t < cols && t < static_cast<int>(labels.size()); ++t) {
    const ImVec2 p = pos[static_cast<std::size_t>(t)];
    const ImVec2 q(p.x + widths[static_cast<std::size_t>(t)], p.y + lineH - pad);
    const float w = weight[static_cast<std::size_t>(t)];
    if (w > 0) draw->AddRectFilled(p, q, IM_COL32(250, 140, 40, static_cast<int>(w * 230.f)));
    if (t == selected) draw->AddRect(p, q, IM_COL32(66, 158, 245, 255), 0, 0, 2.f);
    draw->AddText(ImVec2(p.x + pad, p.y + pad), textColor, labels[static_cast<std::size_t>(t)].c_str());
  }
  if (hovered >= 0) {
    const int r = view.attendedBy ? -1 : hovered - offset;
    ImGui::BeginTooltip();
    ImGui::Text("%s (token %d)", labels[static_cast<std::size_t>(hovered)].c_str(), hovered);
    if (!view.attendedBy && (r < 0 || r >= rows)) ImGui::TextDisabled("not a query of this tensor");
    ImGui::EndTooltip();
  }
  ImGui::EndChild();
}

}  // namespace attn::app::attention_panel
