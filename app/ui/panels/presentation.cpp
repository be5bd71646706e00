// Presentation mode's shared mechanisms (see app/ui/panels/presentation.h): the keys, the
// chrome that hides, the page window, presented heatmaps and which view is presented.
#include "app/ui/panels/presentation.h"

#include <algorithm>

#include <imgui_internal.h>  // the window order (GImGui->Windows)

#include "app/ui/panels/panel_common.h"
#include "app/ui/panels/panel_registry.h"
#include "app/ui/shell/theme.h"  // kBaseFontPixels, kClassroomFontPixels
#include "render/heatmap_axis.h"  // io::kLabelFloor

namespace attn::app::present {

PresentKeys takeKeys(const AppState& state, UiState& ui) {
  // The window queues every GLFW press (app/ui/shell/gui_window.cpp): ImGui 1.86 keeps only
  // the key state per frame, so a press and release inside one frame (a clicker, fast taps)
  // would be lost.
  PresentKeys out;
  out.keys.swap(ui.scratch.stepKeys);
  const ImGuiIO& io = ImGui::GetIO();
  if (io.WantTextInput || ImGui::IsAnyItemActive()) {
    out.keys.clear();
    return out;
  }
  // Esc closes a popup first (app/ui/shell/key_routing.h), then ends a spotlight; it goes
  // back a level only when nothing else wants it.
  if (ImGui::IsPopupOpen("", ImGuiPopupFlags_AnyPopup)) std::erase(out.keys, StepKey::ShowAll);
  if (const auto esc = std::find(out.keys.begin(), out.keys.end(), StepKey::ShowAll);
      esc != out.keys.end() && state.view.presentation && clearSpotlights(ui.heatmaps))
    out.keys.erase(esc);
  for (StepKey key : out.keys) {
    if (!state.view.presentation) break;
    if (key == StepKey::ZoomIn) ++out.zoom.steps;
    if (key == StepKey::ZoomOut) --out.zoom.steps;
    if (key == StepKey::ZoomReset) out.zoom.steps = 0, out.zoom.reset = true;
  }
  return out;
}

void tip(bool presenting, const std::string& text) {
  if (!presenting) panel::tooltip(text);
}

namespace {

// The newest warning or error of the last kNoticeSeconds, or null.
const Notice* recentProblem(const AppState& state) {
  const double now = ImGui::GetTime();
  for (auto it = state.notices.rbegin(); it != state.notices.rend(); ++it) {
    if (now - it->time >= kNoticeSeconds) break;
    if (it->kind != Notice::Kind::Info) return &*it;
  }
  return nullptr;
}

}  // namespace

// The toolbar shows while the pointer moves and for kChromeSeconds after it stops (and while
// one of its menus is open); outside presentation it always shows.
void updateChrome(const AppState& state, UiState& ui, bool presenting) {
  PanelScratch& p = ui.scratch;
  const ImGuiIO& io = ImGui::GetIO();
  const double now = ImGui::GetTime();
  const bool valid = ImGui::IsMousePosValid();
  const bool moved = valid && (io.MousePos.x != p.pointerX || io.MousePos.y != p.pointerY);
  if (valid) p.pointerX = io.MousePos.x, p.pointerY = io.MousePos.y;
  // (a warning or error of the last kNoticeSeconds is in the toolbar: it stays while it is)
  const bool problem = recentProblem(state) != nullptr;
  if (!presenting || moved || problem || ImGui::IsAnyMouseDown() || io.MouseWheel != 0.0f ||
      ImGui::IsPopupOpen("", ImGuiPopupFlags_AnyPopupId))
    p.pointerMovedAt = now;
  p.chromeShown = !presenting || now - p.pointerMovedAt < kChromeSeconds;
}

ImGuiWindowFlags pageFlags(bool presenting) {
  return presenting ? ImGuiWindowFlags_NoTitleBar | ImGuiWindowFlags_NoResize |
                          ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoCollapse |
                          ImGuiWindowFlags_NoBringToFrontOnFocus
                    : 0;
}

bool beginPage(const char* name, bool* open, bool presenting) {
  bool alwaysOpen = true;  // (a page has no close button)
  if (presenting) {  // half the usual padding around the page, for its pictures
    const ImVec2 padding = ImGui::GetStyle().WindowPadding;
    ImGui::PushStyleVar(ImGuiStyleVar_WindowPadding, ImVec2(padding.x * 0.5f, padding.y * 0.5f));
  }
  const bool shown = panel::beginPanel(name, presenting ? &alwaysOpen : open, pageFlags(presenting));
  if (presenting) ImGui::PopStyleVar();
  return shown;
}

void drawChromeWindow(const UiState& ui, const std::function<void()>& toolbar) {
  if (!ui.scratch.chromeShown) return;
  const ImGuiViewport* viewport = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(viewport->Pos, ImGuiCond_Always);
  ImGui::SetNextWindowSize(ImVec2(viewport->Size.x, 0.0f), ImGuiCond_Always);
  ImGui::SetNextWindowBgAlpha(0.94f);
  ImGui::Begin("##presentation_chrome", nullptr,
               ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove |
                   ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoFocusOnAppearing |
                   ImGuiWindowFlags_NoNav);
  toolbar();
  ImGui::End();
}

void problemOrHint(const AppState& state, const std::string& hint) {
  const float room = ImGui::GetContentRegionAvail().x;
  if (const Notice* problem = recentProblem(state)) {
    const std::string text = panel::noticePrefix(problem->kind) + problem->text;
    ImGui::PushStyleColor(ImGuiCol_Text, panel::noticeColor(problem->kind, state.view.lightTheme));
    ImGui::TextUnformatted(widget::fitLabel(text, room, 1024).c_str());
    ImGui::PopStyleColor();
  } else {  // (cut to the line at large text sizes)
    ImGui::TextDisabled("%s", widget::fitLabel(hint, room, 1024).c_str());
  }
}

// Classroom never shows fewer numbers than Normal: its floor is the Normal size's in pixels.
float leastNumberScale(const AppState& state) {
  return state.view.classroomText ? io::kLabelFloor * kBaseFontPixels / kClassroomFontPixels
                                  : io::kLabelFloor;
}

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

const char* presentedPanelId(const ViewSettings& view) {
  const ImGuiContext& g = *GImGui;
  const char* front = "pipeline";
  int frontIndex = -1;
  for (const char* id : {"pipeline", "image", "training"}) {
    const PanelInfo* info = findPanel(id);
    if (info == nullptr || !panelShown(view, id)) continue;
    for (int i = 0; i < g.Windows.Size; ++i) {  // back to front
      const ImGuiWindow* window = g.Windows[i];
      if (window->WasActive && std::string_view(window->Name) == info->name && i > frontIndex) {
        front = id;
        frontIndex = i;
      }
    }
  }
  return front;
}

}  // namespace attn::app::present
