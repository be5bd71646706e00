// The Heads panel: a thumbnail of every head's attention weights plus their mean. Clicking a
// thumbnail focuses that head in the detail views; a fixed colour range makes the heads
// comparable (the same colour means the same weight in every thumbnail).
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "app/session/pipeline_steps.h"
#include "app/ui/panels/panel_common.h"
#include "app/ui/panels/panel_registry.h"
#include "app/ui/panels/panels.h"

namespace attn::app {

namespace {

using panel::tooltip;

// What a thumbnail of `kind` shows, for its tooltip.
const char* thumbnailMeaning(MatrixKind kind, bool mean) {
  switch (kind) {
    case MatrixKind::Scores:
      return mean ? "mean over heads of the raw scores (the step-through is at the scores)"
                  : "raw scores of this head (rows: queries, columns: keys)";
    case MatrixKind::MaskedScores:
      return "masked scores of this head (rows: queries, columns: keys)";
    default:
      return mean ? "mean over heads of the attention weights"
                  : "attention weights of this head (rows: queries, columns: keys)";
  }
}

// Draws one thumbnail of `kind` (nullopt: a placeholder, the step-through has not reached
// the scores yet); returns true when it was clicked.
bool thumbnail(AppState& state, UiState& ui, int head, float side, bool focused,
               std::optional<MatrixKind> kind) {
  const std::optional<int> selected = kind ? headForStage(*kind, head) : std::nullopt;
  const SelectedMatrix* view =
      selected ? panel::cachedView(state, ui.scratch, *kind, *selected) : nullptr;
  const std::string title = head < 0 ? "mean" : "head " + std::to_string(head);
  ImGui::BeginGroup();
  ImGui::PushID(head);
  // The title doubles as a button, for when the thumbnail is too small to aim at.
  bool clicked = ImGui::Selectable(title.c_str(), focused, 0, ImVec2(side, 0));
  tooltip(head < 0 ? "The mean of all heads' weights (what PyTorch returns with "
                     "average_attn_weights=True). Click to show it in detail."
                   : "Click to focus this head: the Pipeline, Inspector and Geometry panels "
                     "show it.");
  if (view != nullptr) {
    HeatmapOptions options = panel::heatmapOptions(state, *kind);
    options.size = ImVec2(side, side);
    options.slimColorbar = true;
    options.axisLabels = false;
    options.cellLabels = state.view.cellLabels;  // the widget draws them when they fit
    options.highlight = focused;
    options.tooltip = thumbnailMeaning(*kind, head < 0);
    const HeatmapInteraction hit = heatmapWidget(
        "##thumb", ui.heatmaps, *view,
        panel::contentRevision(state.computed->revision, *kind, head), options);
    panel::setHover(state, ui, hit, *kind, head);
    clicked |= hit.clicked;
  } else {
    // Not reached yet while stepping (or no mean of this stage): an empty frame of the same
    // size, so the grid does not move.
    const ImVec2 p0 = ImGui::GetCursorScreenPos();
    clicked |= ImGui::InvisibleButton("##placeholder", ImVec2(side, side));
    ImDrawList* draw = ImGui::GetWindowDrawList();
    const ImVec2 p1(p0.x + side, p0.y + side);
    draw->AddRect(p0, p1, ImGui::GetColorU32(ImGuiCol_Border));
    const char* text = kind ? "no mean" : "?";
    const ImVec2 size = ImGui::CalcTextSize(text);
    draw->AddText(ImVec2((p0.x + p1.x - size.x) * 0.5f, (p0.y + p1.y - size.y) * 0.5f),
                  ImGui::GetColorU32(ImGuiCol_TextDisabled), text);
    tooltip(kind ? "The masked scores have no mean over heads: step on to the weights."
                 : "Not computed yet in the step-through: the thumbnails appear at the scores "
                   "step, and show the weights from the weights step on.");
  }
  ImGui::PopID();
  ImGui::EndGroup();
  return clicked;
}

}  // namespace

// =======================================================================================
// The panel
// =======================================================================================

void drawHeadsPanel(AppState& state, UiState& ui) {
  if (!panel::beginResultPanel("Heads", panelFlag(state.view, "heads"), state)) return;
  const float font = ImGui::GetFontSize();
  const int heads = panel::resultHeads(state);
  const int focused = clampedHead(state);
  // While stepping through the Pipeline, show only what has been reached.
  const std::optional<MatrixKind> shown = headsPanelMatrix(state.view);

  // 1 colour range.
  bool fixed = state.view.fixedRange;
  if (ImGui::Checkbox("Same colour range", &fixed)) state.view.fixedRange = fixed;
  tooltip("Use one fixed colour range for every head (default 0..1, the range of any weight), "
          "so the same colour means the same weight in every thumbnail. Off: each heatmap "
          "stretches its own min..max.");
  if (state.view.fixedRange) {
    ImGui::SameLine();
    ImGui::SetNextItemWidth(font * 9.0f);
    float range[2] = {state.view.rangeMin, state.view.rangeMax};
    if (ImGui::DragFloat2("##range", range, 0.01f, 0.0f, 1.0f, "%.2f")) {
      state.view.rangeMin = std::min(range[0], range[1] - 0.01f);
      state.view.rangeMax = std::max(range[1], range[0] + 0.01f);
    }
    tooltip("The fixed range: weights at or below the first number get the lowest colour, at "
            "or above the second the highest.");
  }
  ImGui::SameLine();
  std::string what = countOf(heads, "head", "heads");
  if (!shown)
    what += ", step-through before the scores";
  else if (*shown != MatrixKind::Weights)
    what += std::string(", showing the ") +
            (*shown == MatrixKind::Scores ? "scores" : "masked scores") + " (step-through)";
  if (heads > 1) what += "; click one to focus it";
  panel::mutedWrapped(what);
  if (ImGui::SmallButton("Open in the Attention panel"))
    panel::showInAttentionPanel(state, scenarioSource(*state.computed, state.doc.name));
  tooltip("The weights of every head as a 1-layer tensor in the Attention panel: its head, "
          "text, focus and compare views.");

  // 2 the grid: the mean first (when there are several heads), then every head.
  const int count = heads > 1 ? heads + 1 : 1;
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const ImGuiStyle& style = ImGui::GetStyle();
  const float titleHeight = ImGui::GetFrameHeightWithSpacing();
  // The largest square that fits `count` thumbnails, not smaller than 4 font heights
  // (then the panel scrolls).
  float side = font * 4.0f;
  for (int columns = 1; columns <= count; ++columns) {
    const int rows = (count + columns - 1) / columns;
    const float byWidth = (avail.x - style.ItemSpacing.x * static_cast<float>(columns - 1)) /
                          static_cast<float>(columns);
    const float byHeight =
        (avail.y - (titleHeight + style.ItemSpacing.y) * static_cast<float>(rows)) /
        static_cast<float>(rows);
    side = std::max(side, std::min(byWidth, byHeight));
  }
  side = std::min(side, font * 24.0f);
  const int columns = std::max(1, static_cast<int>((avail.x + style.ItemSpacing.x) /
                                                  (side + style.ItemSpacing.x)));
  ImGui::BeginChild("##grid", ImVec2(0, 0), false);
  int index = 0;
  auto place = [&](int head) {
    if (index % columns != 0) ImGui::SameLine();
    const bool isFocused = heads == 1 ? true : focused == head;
    if (thumbnail(state, ui, head, side, isFocused, shown) && heads > 1) {
      state.view.focusedHead = head;
    }
    ++index;
  };
  if (heads > 1) place(-1);
  for (int h = 0; h < heads; ++h) place(h);
  ImGui::EndChild();
  ImGui::End();
}

}  // namespace attn::app
