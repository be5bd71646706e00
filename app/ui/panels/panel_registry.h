// The one list of panels. Adding a view means adding its file (app/panel_*.cpp, one draw
// function) and one line in app/ui/panels/panel_registry.cpp: the View menu, the visibility
// flags and their place in the autosave all come from this list; where the window tiles it
// is its place in the workspaces (app/ui/shell/workspaces.h).
#pragma once

#include <span>
#include <string_view>

#include "app/session/app_state.h"
#include "app/ui/panels/ui_state.h"

namespace attn::app {

struct PanelInfo {
  const char* id;    // stable key: ViewSettings::panels and the autosave's "panels" object
  const char* name;  // window title and View menu entry (also the ImGui window id)
  const char* help;  // View menu tooltip
  void (*draw)(AppState&, UiState&);  // draws the window (Begin/End inside)
  bool shownByDefault;  // shown when neither the user nor the autosave said otherwise
};

// Every panel, in menu order.
std::span<const PanelInfo> panelRegistry();
// The panel with this id, or null.
const PanelInfo* findPanel(std::string_view id);

// Whether panel `id` is shown: the user's choice in view.panels, else its default.
bool panelShown(const ViewSettings& view, std::string_view id);
// The visibility flag of panel `id` for ImGui::Begin / MenuItem (created with the panel's
// default on first use; the pointer stays valid as long as `view`).
bool* panelFlag(ViewSettings& view, std::string_view id);

// The panels that show what a service opened (ShowRequest): a model -> Model and Attention,
// an attention file -> Attention, an image -> Image, patching -> Patching.
std::span<const char* const> panelsFor(ShowRequest what);
// Shows the panels of every request in view.showRequests and empties it. Returns true when
// there was one.
bool takeShowRequests(ViewSettings& view);

}  // namespace attn::app
