// The panel list (see panel_registry.h). One line per panel.
#include "app/ui/panels/panel_registry.h"

#include <algorithm>
#include <string>

#include "app/ui/panels/panel_training.h"
#include "app/ui/panels/panels.h"
#include "app/ui/widgets/heatmap_textures.h"

namespace attn::app {

namespace {

constexpr PanelInfo kPanels[] = {
    // id, title, help, draw, shown by default
    {"inputs", "Inputs", "Query, key and value vectors, labels, sentence", drawInputsPanel, true},
    {"settings", "Settings", "Mode, score function, heads, mask, normaliser", drawSettingsPanel, true},
    {"pipeline", "Pipeline",
     "Q, K, V \xE2\x86\x92 scores \xE2\x86\x92 weights \xE2\x86\x92 context \xE2\x86\x92 output",
     drawPipelinePanel, true},
    {"heads", "Heads", "Per-head weights and their mean", drawHeadsPanel, true},
    {"inspector", "Inspector", "Explains the hovered cell step by step", drawInspectorPanel, true},
    {"geometry", "Geometry", "Queries and keys as 2-D arrows", drawGeometryPanel, true},
    {"image", "Image", "Self-attention over the patches of an image (open a PNG or JPEG)",
     drawImagePanel, false},
    {"training", "Training", "Train a small attention model and watch its attention form",
     drawTrainingPanel, false},
    {"model", "Model", "A model folder: type, and its attention updates live",
     drawModelPanel, false},
    {"attention", "Attention", "An opened .npy / .npz file: model, head and text views",
     drawAttentionPanel, false},
    {"patching", "Patching",
     "Activation patching: a clean and a corrupted prompt, heads or the residual stream",
     drawPatchingPanel, false},
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

std::span<const char* const> panelsFor(ShowRequest what) {
  static constexpr const char* kModel[] = {"model", "attention"};
  static constexpr const char* kAttention[] = {"attention"};
  static constexpr const char* kImage[] = {"image"};
  static constexpr const char* kPatching[] = {"patching"};
  switch (what) {
    case ShowRequest::Model: return kModel;
    case ShowRequest::AttentionFile: return kAttention;
    case ShowRequest::Image: return kImage;
    case ShowRequest::Patching: return kPatching;
  }
  return {};
}

bool takeShowRequests(ViewSettings& view) {
  if (view.showRequests.empty()) return false;
  for (ShowRequest what : view.showRequests)
    for (const char* id : panelsFor(what)) view.panels.insert_or_assign(std::string(id), true);
  view.showRequests.clear();
  return true;
}

UiState::UiState(std::unique_ptr<HeatmapTextures> textures) : heatmaps(std::move(textures)) {}
UiState::~UiState() = default;

std::vector<ViewKey> viewsOnScreen(const UiState& ui) {
  std::vector<ViewKey> views;
  for (const PanelScratch::CachedView& entry : ui.scratch.viewCache)
    views.push_back({entry.kind, entry.head});
  return views;
}

}  // namespace attn::app
