// Presentation mode's mechanisms, shared by every view it can present (issue 31): the
// Pipeline (app/ui/panels/panel_pipeline.cpp), the Image view (panel_image.cpp) and the
// Training view (panel_training.cpp). F5 or View ▸ Presentation mode presents the view in
// front (presentedPanelId); that view then fills the window as a page with large type
// (the window's font, app/ui/shell/theme.h: at least 2.8 % of its height), no tooltips (a
// click inspects), a toolbar of its own that hides 2 s after the pointer stops (the
// chrome), Escape that closes a menu before anything else and clicker keys that keep
// stepping (app/ui/shell/key_routing.h), and + / - / 0 that zoom its heatmap. Panels only;
// ImGui, no GL.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <imgui.h>

#include "app/session/app_state.h"
#include "app/ui/panels/ui_state.h"
#include "app/ui/widgets/heatmap_widget.h"

namespace attn::app::present {

// The keyboard zoom asked for this frame (presentation: + / - / 0).
struct KeyZoom {
  int steps = 0;
  bool reset = false;
};

// The frame's step keys once presentation has had its say (takeKeys).
struct PresentKeys {
  std::vector<StepKey> keys;  // the rest, in order of pressing: for the view to apply
  KeyZoom zoom;               // + / - / 0 (presentation only)
};

// Takes the frame's queued keys (ui.scratch.stepKeys, emptied): none while a text field
// has the keyboard or an item is active; Escape is dropped while a popup is open (it closed
// it, app/ui/shell/key_routing.h); in presentation Escape ends a spotlight of ui.heatmaps
// first (that press is used up); the zoom keys are counted in presentation. Returns the
// keys left for the view (zoom keys included: the views ignore them).
PresentKeys takeKeys(const AppState& state, UiState& ui);

// A tooltip, but none in presentation (nothing floats over a projected page).
void tip(bool presenting, const std::string& text);

// Presentation: sets ui.scratch.chromeShown, true while the pointer moves, for
// kChromeSeconds after it stops, while a popup is open or a warning of the last
// kNoticeSeconds stands in the toolbar; always true outside presentation.
void updateChrome(const AppState& state, UiState& ui, bool presenting);

// The window flags of a presented page (no title bar, not movable or resizable, never in
// front of its own toolbar), 0 outside presentation.
ImGuiWindowFlags pageFlags(bool presenting);

// Begins panel `name`: as usual (beginPanel with `open`), or in presentation as a page over
// the window (pageFlags, half the usual padding, always open). False when the window is
// hidden or collapsed (already closed then).
bool beginPage(const char* name, bool* open, bool presenting);

// Presentation: `toolbar` in a window of its own over the top of the page while
// ui.scratch.chromeShown (updateChrome); the page under it keeps its place either way.
void drawChromeWindow(const UiState& ui, const std::function<void()>& toolbar);

// The end of a presentation toolbar line: the newest warning or error of the last
// kNoticeSeconds (no toast floats over a page), else `hint` (what the keys do), in the
// muted colour; either cut to the rest of the line.
void problemOrHint(const AppState& state, const std::string& hint);

// The smallest cell numbers in presentation, in font heights: io::kLabelFloor, and with the
// Classroom text size the same pixels as the Normal size's floor.
float leastNumberScale(const AppState& state);

// A presented heatmap's options: no hover tooltip (a click inspects), the spotlight, numbers
// that grow with their cells (down to leastNumberScale), and `zoom` when `zoomed`.
void presentationOptions(HeatmapOptions& options, const AppState& state, const KeyZoom& zoom,
                         bool zoomed);

// The panel presentation shows (a registry id, app/ui/panels/panel_registry.h): of the
// views it can present ("pipeline", "image", "training") the one whose window is in front
// among those shown, by ImGui's window order of the last frame; "pipeline" when none is.
const char* presentedPanelId(const ViewSettings& view);

}  // namespace attn::app::present
