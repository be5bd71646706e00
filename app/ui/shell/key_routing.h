// Where a key press of the window's queue goes (app/ui/shell/gui_window.cpp queues every GLFW
// press): the pipeline's step keys (app/session/frame_pacing.h) and the popups they meet.
// ImGui only (no GLFW calls), so that the rule is tested headless.
#pragma once

#include "app/session/frame_pacing.h"
#include "app/ui/panels/ui_state.h"

namespace attn::app {

// Routes one press (GLFW key code and modifier bits) to ui.scratch.stepKeys, where the
// Pipeline panel applies it this frame:
//   - a modal dialog (open, save, export, unsaved changes) or a text field with the keyboard
//     takes it: nothing is queued;
//   - a menu, combo or right-click menu (a popup that is not modal) is closed by any step
//     key; Escape then has done its work (it is not queued), while Space, the arrows,
//     PageUp/PageDown, Enter, F5 and the zoom keys still step, so a clicker is never dead
//     behind a menu left open.
// Must be called between ImGui::NewFrame() and the panels. Returns the step queued (None
// when none).
StepKey routeKeyPress(UiState& ui, int glfwKey, int glfwMods);

}  // namespace attn::app
