// Workspaces (issue 32, point 9): the window tiles its panels by task instead of floating
// them. A workspace is a fixed arrangement of registry panels (app/ui/panels/panel_registry.h):
// groups side by side (columns of stacked panels) or one above the other (rows of panels side
// by side), each group and each panel with a weight, its share of the room. Splitters between
// the tiles move weight from one neighbour to the other; the weights of every workspace are
// kept in ViewSettings::workspaceWeights (and so in the autosave).
//
//   Teach           inputs, settings | pipeline | heads, inspector, geometry
//   Model           model / attention, patching (patching when asked for)
//   Attention file  attention
//   Image           image
//   Training        training
//
// No panel ever opens over another: a panel shown that has no tile in the current workspace
// (a service opened it: a model folder, an image, a file) switches to the workspace that
// holds it (workspaceFor). The layout math here is plain data and floats, no ImGui: the
// window (app/ui/shell/gui_workspaces.cpp) places the ImGui windows on the rectangles and
// draws the splitter handles.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "app/session/app_state.h"
#include "app/session/workspace_names.h"

namespace attn::app {

// How a workspace's groups share the window: side by side (each group a column of panels
// stacked top to bottom) or one above the other (each group a row of panels left to right).
enum class TileDirection { Columns, Rows };

struct TileSlot {
  const char* panel;   // registry id
  float weight;        // default share of its group's length
  bool shownOnSwitch;  // shown when the workspace is switched to (else only when asked for)
};

struct TileGroup {
  float weight;  // default share of the window along the workspace's direction
  std::vector<TileSlot> slots;
};

// A workspace: its name (id, title, tooltip, key: the session's table,
// app/session/workspace_names.h) and its tiles.
struct WorkspaceInfo : WorkspaceName {
  TileDirection direction;
  std::vector<TileGroup> groups;
  // The panels that, shown while another workspace has no tile for them, lead here (a
  // panel may have tiles in several workspaces but one home).
  std::vector<const char*> home;
};

// Every workspace, in toolbar order (Ctrl+1 ... Ctrl+5).
std::span<const WorkspaceInfo> workspaces();
// The workspace with this id, or null.
const WorkspaceInfo* findWorkspace(std::string_view id);
// view.workspace's, or the first (Teach) when the id is unknown.
const WorkspaceInfo& currentWorkspace(const ViewSettings& view);
// True when `ws` has a tile for panel `id`.
bool hasTile(const WorkspaceInfo& ws, std::string_view id);

// The weights of `ws`: each group's, then each panel's (groups in order, slots in order).
// Its defaults, or the user's from view.workspaceWeights when those have the right count
// and are all finite and > 0.
std::vector<float> defaultWeights(const WorkspaceInfo& ws);
std::vector<float> workspaceWeights(const ViewSettings& view, const WorkspaceInfo& ws);

// A rectangle in window coordinates (pixels): top-left corner and size.
struct TileRect {
  float x = 0, y = 0, w = 0, h = 0;
};

struct PlacedPanel {
  const char* panel;  // registry id
  TileRect rect;
};

// The handle between two neighbouring tiles (two groups, or two panels of one group).
struct Splitter {
  TileRect rect;           // the gap between them: what the mouse grabs
  bool vertical = true;    // a vertical bar, dragged left and right
  int first = 0, second = 0;  // indices into the weights of the tile before and after it
  float lengthPx = 0;      // the pixels that the weights of all the shown siblings share
  float weightTotal = 0;   // the sum of those weights
};

struct WorkspaceLayout {
  std::vector<PlacedPanel> panels;  // one per shown panel that has a tile, in workspace order
  std::vector<Splitter> splitters;
};

// Tiles `area` for the shown panels of `ws` (`shown(id)`), by `weights` (workspaceWeights):
// a group with no shown panel takes no room, and the shown ones share what is left by their
// weights; `gap` pixels separate neighbouring tiles (the splitters lie in them). Tiles
// never overlap; they cover `area` but for the gaps (sizes rounded down to whole pixels).
WorkspaceLayout tileWorkspace(const WorkspaceInfo& ws, std::span<const float> weights,
                              const std::function<bool(std::string_view)>& shown, TileRect area,
                              float gap);

// Moves `splitter` by `deltaPx` (right or down positive): weight passes from one neighbour to
// the other, the pair's sum unchanged, each keeping at least `minPx` pixels (when the pair
// has room for both). Returns true when the weights changed.
bool dragSplitter(std::vector<float>& weights, const Splitter& splitter, float deltaPx,
                  float minPx);

// Makes `ws` the current workspace: view.workspace, its panels that show on a switch shown,
// plus those of `alsoShow` it has tiles for, and every other panel hidden. Pending show
// requests (ViewSettings::showRequests) are taken first: the switch overrides them.
void switchWorkspace(ViewSettings& view, const WorkspaceInfo& ws,
                     std::span<const std::string_view> alsoShow = {});

// The workspace to switch to for `unplaced`: shown panels without a tile in the current
// one. The workspace with tiles for most of them; on a tie, the home of the first of them.
// Null when `unplaced` is empty.
const WorkspaceInfo* workspaceFor(std::span<const std::string_view> unplaced);

// Keeps the window's panels tiled: first shows the panels of what services opened
// (takeShowRequests, app/ui/panels/panel_registry.h); then the shown panels that have no
// tile in the current workspace switch to workspaceFor() them. Returns true when it
// switched.
bool followShownPanels(ViewSettings& view);

}  // namespace attn::app
