// The Attention panel's head view (BertViz style): two token columns joined by lines
// whose opacity is the weight; with few tokens, every head of the layer overlaid.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "app/ui/panels/attention/attention_panel.h"
#include "app/ui/panels/panel_common.h"

namespace attn::app::attention_panel {

using panel::tooltip;

namespace {

// The k largest finite entries of each row of `a`, as column indices (rows x k, -1 padded).
std::vector<int> topKPerRow(const Matrix& a, int k) {
  const int rows = static_cast<int>(a.rows()), cols = static_cast<int>(a.cols());
  std::vector<int> out(static_cast<std::size_t>(rows) * k, -1);
  std::vector<int> idx(static_cast<std::size_t>(cols));
  const int take = std::min(k, cols);
  for (int r = 0; r < rows; ++r) {
    std::iota(idx.begin(), idx.end(), 0);
    const auto value = [&](int c) {
      const float v = a(r, c);
      return std::isfinite(v) ? v : -1.f;
    };
    std::partial_sort(idx.begin(), idx.begin() + take, idx.end(),
                      [&](int x, int y) { return value(x) > value(y); });
    std::copy(idx.begin(), idx.begin() + take, out.begin() + static_cast<std::ptrdiff_t>(r) * k);
  }
  return out;
}

// Heads overlaid in the head view: every head of the shown layer, read from the file once
// per (file, layer, k) on the UI thread, hence only for small n (kMaxOverlayTokens).
constexpr int kMaxOverlayTokens = 256;

void ensureOverlay(AttentionView& view, int layer, int k) {
  if (view.overlayGeneration == view.generation && view.overlayLayer == layer &&
      view.overlayK == k)
    return;
  view.overlayHeads.clear();
  view.overlayTop.clear();
  for (int h = 0; h < view.source->tensor->heads(); ++h) {
    view.overlayHeads.push_back(view.source->tensor->copyHead(layer, h));
    view.overlayTop.push_back(topKPerRow(view.overlayHeads.back(), k));
  }
  view.overlayGeneration = view.generation;
  view.overlayLayer = layer;
  view.overlayK = k;
}

// A distinct colour for head h of `heads` (overlay).
ImVec4 headColor(int h, int heads) {
  return ImColor::HSV(static_cast<float>(h) / static_cast<float>(std::max(1, heads)), 0.75f, 1.f);
}

}  // namespace

void drawHeadView(AttentionView& view, const AttentionShown& shown) {
  const Matrix& a = shown.selected.view.values;
  const int rows = static_cast<int>(a.rows()), cols = static_cast<int>(a.cols());
  const float font = ImGui::GetFontSize();
  const bool large = cols > 32;
  if (large) {
    ImGui::SetNextItemWidth(font * 8.f);
    ImGui::SliderInt("lines per token", &view.topK, 1, 32);
    tooltip("With many tokens only each query's k strongest keys get a line.");
    ImGui::SameLine();
  }
  const int k = large ? view.topK : cols;
  const bool canOverlay = view.source->tensor->heads() > 1 && std::max(rows, cols) <= kMaxOverlayTokens;
  if (canOverlay) {
    ImGui::Checkbox("all heads of the layer", &view.overlay);
    tooltip("Overlay every head of this layer, one colour per head.");
  } else {
    ImGui::TextDisabled("(overlay of heads: up to %d tokens)", kMaxOverlayTokens);
  }
  const bool overlay = canOverlay && view.overlay;
  if (view.topFor != &shown || view.topKFor != k) {
    view.topIndex = topKPerRow(a, k);
    view.topFor = &shown;
    view.topKFor = k;
  }
  if (overlay) {
    ensureOverlay(view, shown.selection.layer, k);
    const int heads = static_cast<int>(view.overlayHeads.size());
    for (int h = 0; h < heads; ++h) {  // the legend: one colour per head
      ImGui::SameLine();
      ImGui::TextColored(headColor(h, heads), "h%d", h);
    }
  }
  ImGui::TextDisabled("queries (left) attend to keys (right); hover a token for its lines only");
  const std::vector<std::string>& qLabels = shown.selected.view.rowLabels;
  const std::vector<std::string>& kLabels = shown.selected.view.colLabels;
  const float rowH = font * 1.25f;
  const int n = std::max(rows, cols);
  ImGui::BeginChild("##headview", ImVec2(0, 0), false);
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const float width = ImGui::GetContentRegionAvail().x;
  const float colW = std::min(font * 10.f, width * 0.3f);
  const float leftX = origin.x + colW, rightX = origin.x + width - colW;
  ImGui::Dummy(ImVec2(width, rowH * static_cast<float>(n)));
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  int hoverQ = -1, hoverK = -1;
  if (ImGui::IsWindowHovered()) {
    const int r = static_cast<int>(std::floor((mouse.y - origin.y) / rowH));
    if (mouse.x < leftX && r >= 0 && r < rows) hoverQ = r;
    if (mouse.x > rightX && r >= 0 && r < cols) hoverK = r;
  }
  const ImVec4 text = ImGui::GetStyle().Colors[ImGuiCol_Text];
  const float clipTop = ImGui::GetWindowPos().y, clipBottom = clipTop + ImGui::GetWindowHeight();
  for (int r = 0; r < rows; ++r) {
    const float y = origin.y + rowH * (static_cast<float>(r) + 0.5f);
    if (y > clipTop - rowH && y < clipBottom + rowH && r < static_cast<int>(qLabels.size())) {
      const std::string& label = qLabels[static_cast<std::size_t>(r)];
      const float w = ImGui::CalcTextSize(label.c_str()).x;
      draw->AddText(ImVec2(leftX - w - font * 0.3f, y - font * 0.5f),
                    ImGui::ColorConvertFloat4ToU32(r == hoverQ ? panel::queryColor() : text),
                    label.c_str());
    }
  }
  for (int c = 0; c < cols; ++c) {
    const float y = origin.y + rowH * (static_cast<float>(c) + 0.5f);
    if (y > clipTop - rowH && y < clipBottom + rowH && c < static_cast<int>(kLabels.size())) {
      draw->AddText(ImVec2(rightX + font * 0.3f, y - font * 0.5f),
                    ImGui::ColorConvertFloat4ToU32(c == hoverK ? panel::keyColor() : text),
                    kLabels[static_cast<std::size_t>(c)].c_str());
    }
  }
  // One set of lines per matrix: the shown one, or every head in its own colour.
  const int sets = overlay ? static_cast<int>(view.overlayHeads.size()) : 1;
  for (int set = 0; set < sets; ++set) {
    const Matrix& m = overlay ? view.overlayHeads[static_cast<std::size_t>(set)] : a;
    const std::vector<int>& top = overlay ? view.overlayTop[static_cast<std::size_t>(set)]
                                          : view.topIndex;
    const ImVec4 rgb = overlay ? headColor(set, sets) : ImVec4(0.98f, 0.55f, 0.16f, 1.f);
    for (int r = 0; r < rows; ++r) {
      if (hoverQ >= 0 && r != hoverQ) continue;
      const float y0 = origin.y + rowH * (static_cast<float>(r) + 0.5f);
      for (int i = 0; i < k; ++i) {
        const int c = top[static_cast<std::size_t>(r) * k + i];
        if (c < 0) break;
        if (hoverK >= 0 && c != hoverK) continue;
        const float v = m(r, c);
        if (!std::isfinite(v) || v <= 0.005f) continue;
        const float y1 = origin.y + rowH * (static_cast<float>(c) + 0.5f);
        draw->AddLine(ImVec2(leftX, y0), ImVec2(rightX, y1),
                      ImGui::ColorConvertFloat4ToU32(
                          ImVec4(rgb.x, rgb.y, rgb.z, std::clamp(v, 0.f, 1.f))),
                      std::max(1.f, font * 0.12f));
      }
    }
  }
  if (hoverQ >= 0 || hoverK >= 0) {
    ImGui::BeginTooltip();
    if (hoverQ >= 0)
      ImGui::Text("query %d: its %d strongest keys", hoverQ, k);
    else
      ImGui::Text("key %d: the queries that attend to it", hoverK);
    ImGui::EndTooltip();
  }
  ImGui::EndChild();
}

}  // namespace attn::app::attention_panel
