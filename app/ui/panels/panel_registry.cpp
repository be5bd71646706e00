// The panel list (see panel_registry.h). One line per panel.
#include "app/ui/panels/panel_registry.h"

#include <algorithm>
#include <string>

#include "app/ui/panels/panels.h"

namespace attn::app {

namespace {

constexpr PanelInfo kPanels[] = {
    // id, title, help, draw, dock, weight in its column, shown by default
    {"inputs", "Inputs", "Query, key and value vectors, labels, sentence", drawInputsPanel,
     PanelDock::Left, 0.5f, true},
    {"settings", "Settings", "Mode, score function, heads, mask, normaliser", drawSettingsPanel,
     PanelDock::Left, 0.5f, true},
    {"pipeline", "Pipeline",
     "Q, K, V \xE2\x86\x92 scores \xE2\x86\x92 weights \xE2\x86\x92 context \xE2\x86\x92 output",
     drawPipelinePanel, PanelDock::Centre, 1.f, true},
    {"heads", "Heads", "Per-head weights and their mean", drawHeadsPanel, PanelDock::Right, 0.34f,
     true},
    {"inspector", "Inspector", "Explains the hovered cell step by step", drawInspectorPanel,
     PanelDock::Right, 0.36f, true},
    {"geometry", "Geometry", "Queries and keys as 2-D arrows", drawGeometryPanel,
     PanelDock::Right, 0.30f, true},
    {"image", "Image", "Self-attention over the patches of an image (open a PNG or JPEG)",
     drawImagePanel, PanelDock::Floating, 1.f, false},
    {"training", "Training", "Train a small attention model and watch its attention form",
     drawTrainingPanel, PanelDock::Floating, 1.f, false},
    {"model", "Model", "A model folder: type, and its attention updates live",
     drawModelPanel, PanelDock::Floating, 1.f, false},
    {"attention", "Attention", "An opened .npy / .npz file: model, head and text views",
     drawAttentionPanel, PanelDock::Floating, 1.f, false},
    {"patching", "Patching",
     "Activation patching: a clean and a corrupted prompt, heads or the residual stream",
     drawPatchingPanel, PanelDock::Floating, 0.8f, false},
};

}  // namespace

std::span<const PanelInfo> panelRegistry() { return kPanels; }

const PanelInfo* findPanel(std::string_view id) {
  auto it = std::find_if(std::begin(kPanels), std::end(kPanels),
                         [&](const PanelInfo& p) { return id == p.id; });
  return it == std::end(kPanels) ? nullptr : &*it;
}

bool panelShown(const ViewSettings& view, std::string_view id) {
  if (auto it = view.panels.find(id); it != view.panels.end()) return it->second;
  const PanelInfo* info = findPanel(id);
  return info && info->shownByDefault;
}

bool* panelFlag(ViewSettings& view, std::string_view id) {
  auto it = view.panels.find(id);
  if (it == view.panels.end()) {
    const PanelInfo* info = findPanel(id);
    it = view.panels.emplace(std::string(id), info && info->shownByDefault).first;
  }
  return &it->second;
}

std::vector<ViewKey> viewsOnScreen(const AppState& state) {
  std::vector<ViewKey> views;
  for (const PanelScratch::CachedView& entry : state.panels.viewCache)
    views.push_back({entry.kind, entry.head});
  return views;
}

}  // namespace attn::app
