// Key presses to pipeline steps, past open popups (see key_routing.h).
#include "app/ui/shell/key_routing.h"

#include <imgui.h>
#include <imgui_internal.h>  // GetTopMostPopupModal, ClosePopupsExceptModals

#include "app/session/frame_pacing.h"

namespace attn::app {

StepKey routeKeyPress(UiState& ui, int glfwKey, int glfwMods) {
  const StepKey step = stepKeyFor(glfwKey, glfwMods);
  if (step == StepKey::None) return StepKey::None;
  // 1 a modal dialog or a text field keeps its keys (Space, arrows, Enter, Escape)
  if (ImGui::GetTopMostPopupModal() != nullptr || ImGui::GetIO().WantTextInput)
    return StepKey::None;
  // 2 a menu or right-click menu left open: closed by the key; Escape stops there
  if (ImGui::IsPopupOpen("", ImGuiPopupFlags_AnyPopupId | ImGuiPopupFlags_AnyPopupLevel)) {
    ImGui::ClosePopupsExceptModals();
    if (step == StepKey::ShowAll) return StepKey::None;
  }
  ui.scratch.stepKeys.push_back(step);
  return step;
}

}  // namespace attn::app
