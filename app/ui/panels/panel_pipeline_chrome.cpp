// The Pipeline panel's keys, its presentation toolbar (a window over the page that hides
// while the pointer rests) and the options of a presented heatmap (see
// app/ui/panels/panel_pipeline_parts.h).
#include <imgui.h>

#include <algorithm>
#include <string>
#include <vector>

#include "app/session/pipeline_steps.h"
#include "app/ui/panels/panel_common.h"
#include "app/ui/panels/panel_pipeline_parts.h"
#include "app/ui/shell/theme.h"  // kBaseFontPixels, kClassroomFontPixels
#include "render/heatmap_axis.h"  // io::kLabelFloor

namespace attn::app::pipeline {

using panel::tooltip;

KeyZoom handleStepKeys(AppState& state, HeatmapCache& heatmaps,
                       const std::vector<MatrixKind>& visible) {
  // The window queues every GLFW press (app/ui/shell/gui_window.cpp): ImGui 1.86 keeps only the key state per
  // frame, so a press and release inside one frame (a clicker, fast taps) would be lost.
  std::vector<StepKey> keys;
  keys.swap(state.panels.stepKeys);
  KeyZoom zoom;
  const ImGuiIO& io = ImGui::GetIO();
  if (io.WantTextInput || ImGui::IsAnyItemActive()) return zoom;
  // Esc closes a popup first (app/ui/shell/key_routing.h), then ends a spotlight; it goes
  // back a level only when nothing else wants it.
  if (ImGui::IsPopupOpen("", ImGuiPopupFlags_AnyPopup))
    std::erase(keys, StepKey::ShowAll);
  if (const auto esc = std::find(keys.begin(), keys.end(), StepKey::ShowAll);
      esc != keys.end() && state.view.presentation && clearSpotlights(heatmaps))
    keys.erase(esc);
  for (StepKey key : keys) {
    if (!state.view.presentation) break;
    if (key == StepKey::ZoomIn) ++zoom.steps;
    if (key == StepKey::ZoomOut) --zoom.steps;
    if (key == StepKey::ZoomReset) zoom.steps = 0, zoom.reset = true;
  }
  applyPipelineKeys(state.view, keys, visible);
  return zoom;
}

// A tooltip, but none in presentation (nothing floats over a projected page).
void tip(bool presenting, const std::string& text) {
  if (!presenting) tooltip(text);
}

// Presentation: the toolbar shows while the pointer moves and for kChromeSeconds after it
// stops (and while one of its menus is open); outside presentation it always shows.
void updateChrome(AppState& state, bool presenting) {
  PanelScratch& p = state.panels;
  const ImGuiIO& io = ImGui::GetIO();
  const double now = ImGui::GetTime();
  const bool valid = ImGui::IsMousePosValid();
  const bool moved = valid && (io.MousePos.x != p.pointerX || io.MousePos.y != p.pointerY);
  if (valid) p.pointerX = io.MousePos.x, p.pointerY = io.MousePos.y;
  // (a warning or error of the last kNoticeSeconds is in the toolbar: it stays while it is)
  bool problem = false;
  for (auto it = state.notices.rbegin(); it != state.notices.rend() && !problem; ++it) {
    if (now - it->time >= kNoticeSeconds) break;
    problem = it->kind != Notice::Kind::Info;
  }
  if (!presenting || moved || problem || ImGui::IsAnyMouseDown() || io.MouseWheel != 0.0f ||
      ImGui::IsPopupOpen("", ImGuiPopupFlags_AnyPopupId))
    p.pointerMovedAt = now;
  p.chromeShown = !presenting || now - p.pointerMovedAt < kChromeSeconds;
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
  const Notice* problem = nullptr;
  for (auto it = state.notices.rbegin(); it != state.notices.rend(); ++it) {
    if (ImGui::GetTime() - it->time >= kNoticeSeconds) break;
    if (it->kind != Notice::Kind::Info) {
      problem = &*it;
      break;
    }
  }
  const float room = ImGui::GetContentRegionAvail().x;
  if (problem) {
    const std::string text = panel::noticePrefix(problem->kind) + problem->text;
    ImGui::PushStyleColor(ImGuiCol_Text, panel::noticeColor(problem->kind, state.view.lightTheme));
    ImGui::TextUnformatted(widget::fitLabel(text, room, 1024).c_str());
    ImGui::PopStyleColor();
  } else {  // (cut to the line at large text sizes)
    ImGui::TextDisabled(
        "%s", widget::fitLabel("Enter: one stage alone  \xC2\xB7  click: spotlight  \xC2\xB7  "
                               "+ / \xE2\x88\x92 / 0: zoom  \xC2\xB7  Esc: back",
                               room, 1024)
                  .c_str());
  }
}

// Presentation: the toolbar in a window of its own over the top of the page, while the
// chrome shows (updateChrome); the page under it keeps its place either way.
void drawChromeWindow(AppState& state, const std::vector<MatrixKind>& visible,
                      const PageNav& nav) {
  if (!state.panels.chromeShown) return;
  const ImGuiViewport* viewport = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(viewport->Pos, ImGuiCond_Always);
  ImGui::SetNextWindowSize(ImVec2(viewport->Size.x, 0.0f), ImGuiCond_Always);
  ImGui::SetNextWindowBgAlpha(0.94f);
  ImGui::Begin("##presentation_chrome", nullptr,
               ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove |
                   ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoFocusOnAppearing |
                   ImGuiWindowFlags_NoNav);
  drawToolbar(state, visible, nav);
  ImGui::End();
}

// The smallest cell numbers in presentation, in font heights: kLabelFloor, and with the
// Classroom text size the same pixels as the Normal size's floor (Classroom never shows
// fewer numbers than Normal).
float leastNumberScale(const AppState& state) {
  return state.view.classroomText ? io::kLabelFloor * kBaseFontPixels / kClassroomFontPixels
                                  : io::kLabelFloor;
}

// A presented heatmap's options: no hover tooltip (a click inspects), the spotlight, numbers
// that grow with their cells, and the keyboard zoom when `zoomed` (the current stage).
void presentationOptions(HeatmapOptions& options, const AppState& state, const KeyZoom& zoom,
                         bool zoomed) {
  options.hoverReadout = false;
  options.spotlight = true;
  options.scaleNumbers = true;
  options.minNumberScale = leastNumberScale(state);
  if (zoomed) {
    options.zoomSteps = zoom.steps;
    options.zoomReset = zoom.reset;
  }
}

}  // namespace attn::app::pipeline
