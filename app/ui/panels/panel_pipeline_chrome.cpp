// The Pipeline panel's keys and its presentation toolbar (a window over the page that hides
// while the pointer rests), on presentation's shared parts (app/ui/panels/presentation.h;
// see app/ui/panels/panel_pipeline_parts.h).
#include <imgui.h>

#include <algorithm>
#include <string>
#include <vector>

#include "app/session/pipeline_steps.h"
#include "app/ui/panels/panel_common.h"
#include "app/ui/panels/panel_pipeline_parts.h"

namespace attn::app::pipeline {

KeyZoom handleStepKeys(AppState& state, UiState& ui,
                       const std::vector<MatrixKind>& visible) {
  const present::PresentKeys taken = present::takeKeys(state, ui);
  applyPipelineKeys(state.view, taken.keys, visible);
  return taken.zoom;
}

// The toolbar: head, stepping buttons, presentation on / off, the step; in presentation
// also the pages and the newest problem (or the keys' hint), cut to the line. Drawn at the
// top of the panel, or in presentation over the page in a window of its own.
void drawToolbar(AppState& state, const std::vector<MatrixKind>& visible, const PageNav& nav) {
  const float font = ImGui::GetFontSize();
  const bool presenting = state.view.presentation;
  const AttentionResult& result = *state.computed->result;
  int& current = state.view.pipelineStage;
  const int heads = static_cast<int>(result.heads.size());
  const int head = clampedHead(state);  // -1 = the mean over heads
  if (heads > 1) {
    ImGui::SetNextItemWidth(font * 5.0f);
    if (ImGui::BeginCombo("head", head < 0 ? "mean" : std::to_string(head).c_str())) {
      if (ImGui::Selectable("mean", head < 0)) state.view.focusedHead = -1;
      tip(presenting, "The mean over heads of the scores and weights (what PyTorch returns with "
                      "average_attn_weights=True). Q, K, V and the context exist per head only.");
      for (int h = 0; h < heads; ++h) {
        if (ImGui::Selectable(std::to_string(h).c_str(), h == head)) state.view.focusedHead = h;
      }
      ImGui::EndCombo();
    }
    tip(presenting,
        "The head whose stages are shown, or the mean over heads. Each head attends on its "
        "own column block of Q, K and V. (Click a thumbnail in the Heads panel to pick one "
        "too.)");
    ImGui::SameLine();
  }
  if (ImGui::ArrowButton("##prev", ImGuiDir_Left)) current = stepPipelineStage(current, -1, visible);
  tip(presenting, "Previous stage (Left arrow).");
  ImGui::SameLine();
  if (ImGui::ArrowButton("##next", ImGuiDir_Right)) current = stepPipelineStage(current, +1, visible);
  tip(presenting, "Next stage (Space or Right arrow). Stepping past the last stage shows all again.");
  ImGui::SameLine();
  ImGui::BeginDisabled(current < 0);
  if (ImGui::Button("All")) current = -1;
  ImGui::EndDisabled();
  tip(presenting, "Show every stage at once (Escape).");
  ImGui::SameLine();
  if (ImGui::Button(presenting ? "Exit presentation" : "Present")) {
    state.view.presentation = !presenting;
    state.view.stageFullScreen = false;
  }
  tip(presenting, "Presentation mode (F5): the pipeline alone, full screen, with large type, "
                  "its stages in rows and pages that fit. Enter (or a double-click on a "
                  "stage) shows the current stage alone with its explanation; Escape goes "
                  "back.");
  ImGui::SameLine();
  if (current < 0) {
    ImGui::TextDisabled("All %d stages", static_cast<int>(visible.size()));
  } else {
    int index = 0;
    for (int i = 0; i < static_cast<int>(visible.size()); ++i)
      if (stageIndex(visible[i]) == current) index = i;
    ImGui::Text("Step %d / %d", index + 1, static_cast<int>(visible.size()));
  }
  if (!presenting) return;
  ImGui::SameLine(0.0f, font * 1.5f);
  if (nav.stored != nullptr && nav.pages > 1) {
    if (ImGui::ArrowButton("##pageUp", ImGuiDir_Up)) *nav.stored = std::max(0, nav.page - 1);
    ImGui::SameLine();
    if (ImGui::ArrowButton("##pageDown", ImGuiDir_Down))
      *nav.stored = std::min(nav.pages - 1, nav.page + 1);
    ImGui::SameLine();
    ImGui::TextDisabled("page %d / %d", nav.page + 1, nav.pages);
    ImGui::SameLine(0.0f, font);
  }
  // The newest warning or error of the last kNoticeSeconds takes the hint's place (no toast
  // floats over a presented page), cut to the line.
  present::problemOrHint(state, "Enter: one stage alone  \xC2\xB7  click: spotlight  \xC2\xB7  "
                                "+ / \xE2\x88\x92 / 0: zoom  \xC2\xB7  Esc: back");
}

// Presentation: the toolbar in a window of its own over the top of the page, while the
// chrome shows (updateChrome); the page under it keeps its place either way.
void drawChromeWindow(AppState& state, const UiState& ui, const std::vector<MatrixKind>& visible,
                      const PageNav& nav) {
  present::drawChromeWindow(ui, [&] { drawToolbar(state, visible, nav); });
}

}  // namespace attn::app::pipeline
