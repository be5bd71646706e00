// The one list of panels. Adding a view means adding its file (app/panel_*.cpp, one draw
// function) and one line in app/ui/panels/panel_registry.cpp: the View menu, the visibility
// flags and their place in the autosave all come from this list; where the window tiles it
// is its place in the workspaces (app/ui/shell/workspaces.h).
#pragma once

#include <span>
#include <string_view>

#include "app/session/app_state.h"
#include "app/ui/widgets/heatmap_widget.h"

namespace attn::app {

struct PanelInfo {
  const char* id;    // stable key: ViewSettings::panels and the autosave's "panels" object
  const char* name;  // window title and View menu entry (also the ImGui window id)
  const char* help;  // View menu tooltip
  void (*draw)(AppState&, HeatmapCache&);  // draws the window (Begin/End inside)
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

}  // namespace attn::app
