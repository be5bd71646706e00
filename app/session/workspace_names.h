// The window's workspaces by name (issue 32, point 9): the one table of their ids, titles,
// tooltips and Ctrl+digit keys. ViewSettings::workspace, the autosave and `attnscope
// screenshot --workspace` (its help lists these ids) name a workspace by `id`; the window's
// tiling of each (app/ui/shell/workspaces.cpp) is built on this table, entry for entry.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace attn::app {

struct WorkspaceName {
  const char* id;    // stable key: ViewSettings::workspace, the autosave, screenshot --workspace
  const char* name;  // toolbar, View menu
  const char* help;  // their tooltip
  int digit;         // Ctrl+digit switches to it
};

// Every workspace, in toolbar order (Ctrl+1 ... Ctrl+5).
inline constexpr WorkspaceName kWorkspaceNames[] = {
    {"teach", "Teach",
     "The scenario: inputs and settings, the pipeline, heads, inspector and geometry", 1},
    {"model", "Model",
     "A model folder: the Model panel (its heads in the Heads tab), the Attention panel (and "
     "Patching when run)",
     2},
    {"attention", "Attention file", "An opened .npy / .npz attention file in the Attention panel",
     3},
    {"image", "Image", "An image's patches attending to each other", 4},
    {"training", "Training", "Train a small attention model and watch its attention form", 5},
};

// The ids joined by `separator` ("teach, model, attention, image, training").
inline std::string workspaceIds(std::string_view separator = ", ") {
  std::string out;
  for (const WorkspaceName& ws : kWorkspaceNames) {
    if (!out.empty()) out += separator;
    out += ws.id;
  }
  return out;
}

}  // namespace attn::app
