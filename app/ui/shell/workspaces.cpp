// The workspaces and their tiling (see workspaces.h): the table, the weights, the layout
// math and the switch. No ImGui.
#include "app/ui/shell/workspaces.h"

#include <algorithm>
#include <cmath>

#include "app/ui/panels/panel_registry.h"

namespace attn::app {

namespace {

// One entry per workspace. Weights are shares, not pixels: the Teach columns give the
// pipeline about half the width (as the three fixed columns before them did: 24 and 26
// font widths of a 1600 px window); the Model workspace gives the Model panel (its Heads tab
// needs the height) and the Attention panel half the height each, and the Patching panel a
// place beside the Attention panel when one is run. (No scenario Heads panel there: its
// heads are the teaching scenario's, not the model's; the model's are the Model panel's
// Heads tab.)
const std::vector<WorkspaceInfo> kWorkspaces = {
    {kWorkspaceNames[0], TileDirection::Columns,
     {{0.24f, {{"inputs", 0.5f, true}, {"settings", 0.5f, true}}},
      {0.50f, {{"pipeline", 1.f, true}}},
      {0.26f, {{"heads", 0.34f, true}, {"inspector", 0.36f, true}, {"geometry", 0.30f, true}}}},
     {"inputs", "settings", "pipeline", "heads", "inspector", "geometry"}},
    {kWorkspaceNames[1], TileDirection::Rows,
     {{0.5f, {{"model", 1.f, true}}},
      {0.5f, {{"attention", 0.62f, true}, {"patching", 0.38f, false}}}},
     {"model", "patching"}},
    {kWorkspaceNames[2], TileDirection::Columns,
     {{1.f, {{"attention", 1.f, true}}}},
     {"attention"}},
    {kWorkspaceNames[3], TileDirection::Columns,
     {{1.f, {{"image", 1.f, true}}}},
     {"image"}},
    {kWorkspaceNames[4], TileDirection::Columns,
     {{1.f, {{"training", 1.f, true}}}},
     {"training"}},
};

std::size_t weightCount(const WorkspaceInfo& ws) {
  std::size_t n = ws.groups.size();
  for (const TileGroup& g : ws.groups) n += g.slots.size();
  return n;
}

// Splits `length` pixels among `weights` (the shown tiles') with `gap` pixels between
// neighbours: the start offset and the size of each, whole pixels, the last one taking the
// rounding rest so the tiles end at `length`.
void share(float length, float gap, const std::vector<float>& weights, std::vector<float>& start,
           std::vector<float>& size) {
  const std::size_t n = weights.size();
  start.assign(n, 0.f);
  size.assign(n, 0.f);
  if (n == 0) return;
  const float room = std::max(0.f, length - gap * static_cast<float>(n - 1));
  float total = 0;
  for (float w : weights) total += w;
  float at = 0;
  for (std::size_t i = 0; i < n; ++i) {
    start[i] = at;
    size[i] = i + 1 == n ? std::max(0.f, length - at)
                         : std::floor(room * weights[i] / std::max(total, 1e-12f));
    at += size[i] + gap;
  }
}

}  // namespace

std::span<const WorkspaceInfo> workspaces() { return kWorkspaces; }

const WorkspaceInfo* findWorkspace(std::string_view id) {
  for (const WorkspaceInfo& ws : kWorkspaces)
    if (id == ws.id) return &ws;
  return nullptr;
}

const WorkspaceInfo& currentWorkspace(const ViewSettings& view) {
  const WorkspaceInfo* ws = findWorkspace(view.workspace);
  return ws ? *ws : kWorkspaces.front();
}

bool hasTile(const WorkspaceInfo& ws, std::string_view id) {
  for (const TileGroup& g : ws.groups)
    for (const TileSlot& slot : g.slots)
      if (id == slot.panel) return true;
  return false;
}

std::vector<float> defaultWeights(const WorkspaceInfo& ws) {
  std::vector<float> weights;
  for (const TileGroup& g : ws.groups) weights.push_back(g.weight);
  for (const TileGroup& g : ws.groups)
    for (const TileSlot& slot : g.slots) weights.push_back(slot.weight);
  return weights;
}

std::vector<float> workspaceWeights(const ViewSettings& view, const WorkspaceInfo& ws) {
  if (auto it = view.workspaceWeights.find(ws.id); it != view.workspaceWeights.end()) {
    const std::vector<float>& w = it->second;
    const bool valid = w.size() == weightCount(ws) &&
                       std::all_of(w.begin(), w.end(),
                                   [](float x) { return std::isfinite(x) && x > 0.f; });
    if (valid) return w;
  }
  return defaultWeights(ws);
}

WorkspaceLayout tileWorkspace(const WorkspaceInfo& ws, std::span<const float> weights,
                              const std::function<bool(std::string_view)>& shown, TileRect area,
                              float gap) {
  WorkspaceLayout layout;
  const std::vector<float> fallback = defaultWeights(ws);
  if (weights.size() != fallback.size()) weights = fallback;
  const bool columns = ws.direction == TileDirection::Columns;
  // 1 the groups with a shown panel share the outer length
  std::vector<int> groups;               // indices of the present groups
  std::vector<std::vector<int>> slots;   // per present group: its shown slots' weight indices
  std::vector<float> groupWeights;
  int slotIndex = static_cast<int>(ws.groups.size());
  for (std::size_t g = 0; g < ws.groups.size(); ++g) {
    std::vector<int> present;
    for (const TileSlot& slot : ws.groups[g].slots) {
      if (shown(slot.panel)) present.push_back(slotIndex);
      ++slotIndex;
    }
    if (present.empty()) continue;
    groups.push_back(static_cast<int>(g));
    slots.push_back(std::move(present));
    groupWeights.push_back(weights[g]);
  }
  const float outerLength = columns ? area.w : area.h;
  const float innerLength = columns ? area.h : area.w;
  std::vector<float> outerStart, outerSize;
  share(outerLength, gap, groupWeights, outerStart, outerSize);
  float groupTotal = 0;
  for (float w : groupWeights) groupTotal += w;
  // 2 within each group its shown panels share the inner length
  std::vector<std::pair<int, const char*>> slotPanels;  // weight index -> panel id
  slotIndex = static_cast<int>(ws.groups.size());
  for (const TileGroup& g : ws.groups)
    for (const TileSlot& slot : g.slots) slotPanels.push_back({slotIndex++, slot.panel});
  auto panelOf = [&](int weightIndex) {
    return slotPanels[static_cast<std::size_t>(weightIndex) - ws.groups.size()].second;
  };
  for (std::size_t k = 0; k < groups.size(); ++k) {
    std::vector<float> w;
    for (int i : slots[k]) w.push_back(weights[static_cast<std::size_t>(i)]);
    std::vector<float> innerStart, innerSize;
    share(innerLength, gap, w, innerStart, innerSize);
    float innerTotal = 0;
    for (float x : w) innerTotal += x;
    for (std::size_t j = 0; j < slots[k].size(); ++j) {
      TileRect r;
      if (columns) {
        r = {area.x + outerStart[k], area.y + innerStart[j], outerSize[k], innerSize[j]};
      } else {
        r = {area.x + innerStart[j], area.y + outerStart[k], innerSize[j], outerSize[k]};
      }
      layout.panels.push_back({panelOf(slots[k][j]), r});
      if (j + 1 < slots[k].size()) {  // the handle between this panel and the next
        Splitter s;
        s.vertical = !columns;  // panels of a row sit side by side
        s.first = slots[k][j];
        s.second = slots[k][j + 1];
        s.lengthPx = std::max(0.f, innerLength - gap * static_cast<float>(w.size() - 1));
        s.weightTotal = innerTotal;
        const float at = innerStart[j] + innerSize[j];
        s.rect = columns ? TileRect{r.x, area.y + at, r.w, gap}
                         : TileRect{area.x + at, r.y, gap, r.h};
        layout.splitters.push_back(s);
      }
    }
    if (k + 1 < groups.size()) {  // the handle between this group and the next
      Splitter s;
      s.vertical = columns;
      s.first = groups[k];
      s.second = groups[k + 1];
      s.lengthPx = std::max(0.f, outerLength - gap * static_cast<float>(groups.size() - 1));
      s.weightTotal = groupTotal;
      const float at = outerStart[k] + outerSize[k];
      s.rect = columns ? TileRect{area.x + at, area.y, gap, area.h}
                       : TileRect{area.x, area.y + at, area.w, gap};
      layout.splitters.push_back(s);
    }
  }
  return layout;
}

bool dragSplitter(std::vector<float>& weights, const Splitter& splitter, float deltaPx,
                  float minPx) {
  const auto a = static_cast<std::size_t>(splitter.first);
  const auto b = static_cast<std::size_t>(splitter.second);
  if (a >= weights.size() || b >= weights.size() || splitter.lengthPx <= 0 ||
      splitter.weightTotal <= 0 || deltaPx == 0)
    return false;
  const float perPixel = splitter.weightTotal / splitter.lengthPx;
  const float pair = weights[a] + weights[b];
  // Each keeps minPx when the pair has room for both, else they meet halfway.
  const float least = std::min(minPx * perPixel, pair * 0.5f);
  const float first = std::clamp(weights[a] + deltaPx * perPixel, least, pair - least);
  if (std::abs(first - weights[a]) <= 1e-6f * pair) return false;  // already at its end
  weights[a] = first;
  weights[b] = pair - first;
  return true;
}

void switchWorkspace(ViewSettings& view, const WorkspaceInfo& ws,
                     std::span<const std::string_view> alsoShow) {
  // What services opened before the switch is shown first and then, like every panel,
  // shown or hidden by the switch (the switch is the later word).
  takeShowRequests(view);
  view.workspace = ws.id;
  for (const PanelInfo& panel : panelRegistry()) {
    bool show = std::find(alsoShow.begin(), alsoShow.end(), std::string_view(panel.id)) !=
                alsoShow.end();
    for (const TileGroup& g : ws.groups)
      for (const TileSlot& slot : g.slots)
        if (std::string_view(slot.panel) == panel.id && slot.shownOnSwitch) show = true;
    *panelFlag(view, panel.id) = show && hasTile(ws, panel.id);
  }
}

const WorkspaceInfo* workspaceFor(std::span<const std::string_view> unplaced) {
  if (unplaced.empty()) return nullptr;
  // The home of the first unplaced panel breaks ties.
  const WorkspaceInfo* home = nullptr;
  for (const WorkspaceInfo& ws : kWorkspaces)
    if (std::find(ws.home.begin(), ws.home.end(), unplaced.front()) != ws.home.end()) home = &ws;
  const WorkspaceInfo* best = nullptr;
  int bestCount = 0;
  for (const WorkspaceInfo& ws : kWorkspaces) {
    int count = 0;
    for (std::string_view id : unplaced) count += hasTile(ws, id) ? 1 : 0;
    if (count > bestCount || (count == bestCount && count > 0 && &ws == home)) {
      best = &ws;
      bestCount = count;
    }
  }
  return best;
}

bool followShownPanels(ViewSettings& view) {
  takeShowRequests(view);  // what services opened: their panels shown (panel_registry.h)
  const WorkspaceInfo& current = currentWorkspace(view);
  std::vector<std::string_view> unplaced;
  for (const PanelInfo& panel : panelRegistry())
    if (panelShown(view, panel.id) && !hasTile(current, panel.id)) unplaced.push_back(panel.id);
  const WorkspaceInfo* next = workspaceFor(unplaced);
  if (next == nullptr) return false;
  switchWorkspace(view, *next, unplaced);
  return true;
}

}  // namespace attn::app
