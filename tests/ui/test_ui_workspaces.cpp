// Workspaces (issue 32, point 9; app/ui/shell/workspaces.h), with no window: the table covers
// every panel, each workspace's default tiles at 1600 x 1000 and 1280 x 800 neither overlap
// nor fall under 200 px a side and fill the room but for the gaps, a hidden panel's room
// goes to its neighbours, a splitter drag moves exactly the dragged pixels from one tile to
// the other (and stops at the least size), a panel a service shows switches to the
// workspace that holds it, and the workspace and its weights go through the autosave's view
// object (bad entries ignored). The real window's tiles, read back from ImGui through the
// layout dump, are checked in tests/smoke/test_smoke_workspaces.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/session/app_state.h"
#include "app/ui/panels/panel_registry.h"
#include "app/ui/shell/files.h"
#include "app/ui/shell/workspaces.h"

namespace test_ui_workspaces {
namespace {

using namespace attn::app;

// The room of a window of this size under a 21 px menu bar and above a 29 px status line
// (ImGui's frame height and the status bar at the 15 px font).
TileRect room(float width, float height) { return {0.f, 21.f, width, height - 21.f - 29.f}; }

constexpr float kGap = 5.f;

WorkspaceLayout tileDefault(const WorkspaceInfo& ws, TileRect area, const ViewSettings& view) {
  return tileWorkspace(ws, workspaceWeights(view, ws),
                       [&](std::string_view id) { return panelShown(view, id); }, area, kGap);
}

bool overlap(const TileRect& a, const TileRect& b) {
  return a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
}

const PlacedPanel* placed(const WorkspaceLayout& layout, std::string_view id) {
  for (const PlacedPanel& p : layout.panels)
    if (id == p.panel) return &p;
  return nullptr;
}

// Tiles are inside the room, disjoint, at least 200 px a side, and with the gaps they fill
// the room exactly.
void expectTiled(const WorkspaceLayout& layout, const TileRect& area, const std::string& what) {
  double covered = 0;
  for (std::size_t i = 0; i < layout.panels.size(); ++i) {
    const TileRect& r = layout.panels[i].rect;
    const std::string name = what + " " + layout.panels[i].panel;
    EXPECT_GE(r.w, 200.f) << name;
    EXPECT_GE(r.h, 200.f) << name;
    EXPECT_GE(r.x, area.x) << name;
    EXPECT_GE(r.y, area.y) << name;
    EXPECT_LE(r.x + r.w, area.x + area.w + 1e-3f) << name;
    EXPECT_LE(r.y + r.h, area.y + area.h + 1e-3f) << name;
    EXPECT_EQ(r.w, std::floor(r.w)) << name << ": whole pixels";
    for (std::size_t j = i + 1; j < layout.panels.size(); ++j)
      EXPECT_FALSE(overlap(r, layout.panels[j].rect))
          << name << " overlaps " << layout.panels[j].panel;
    covered += double(r.w) * r.h;
  }
  for (const Splitter& s : layout.splitters) {
    covered += double(s.rect.w) * s.rect.h;
    for (const PlacedPanel& p : layout.panels)
      EXPECT_FALSE(overlap(s.rect, p.rect)) << what << ": a splitter over " << p.panel;
  }
  // Splitters of one group's panels and the groups' splitters never cross: what is left is
  // exactly the room. (Rows of panels side by side: the inner splitters are only as tall as
  // their row; columns: only as wide as their column.)
  EXPECT_NEAR(covered, double(area.w) * area.h, 1.0) << what << ": tiles + gaps = the room";
}

// =======================================================================================
// The table
// =======================================================================================

TEST(Workspaces, EveryPanelHasATileAndExactlyOneHome) {
  ASSERT_EQ(workspaces().size(), 5u);
  std::set<int> digits;
  for (const WorkspaceInfo& ws : workspaces()) {
    digits.insert(ws.digit);
    EXPECT_EQ(findWorkspace(ws.id), &ws);
    for (const char* id : ws.home) EXPECT_TRUE(hasTile(ws, id)) << ws.id << " home " << id;
    for (const TileGroup& g : ws.groups)
      for (const TileSlot& slot : g.slots) EXPECT_NE(findPanel(slot.panel), nullptr) << slot.panel;
  }
  EXPECT_EQ(digits, (std::set<int>{1, 2, 3, 4, 5})) << "Ctrl+1 ... Ctrl+5, one each";
  for (const PanelInfo& panel : panelRegistry()) {
    int homes = 0;
    for (const WorkspaceInfo& ws : workspaces())
      homes += int(std::count_if(ws.home.begin(), ws.home.end(),
                                 [&](const char* id) { return std::string_view(id) == panel.id; }));
    EXPECT_EQ(homes, 1) << panel.id;
  }
  // The issue's arrangement: Teach holds inputs, pipeline and inspector; Model the model
  // and attention, and not the scenario's Heads panel (its heads are the teaching
  // scenario's: beside a model they would read as the model's, which are the Model panel's
  // Heads tab).
  for (const char* id : {"inputs", "pipeline", "inspector", "heads"})
    EXPECT_TRUE(hasTile(*findWorkspace("teach"), id)) << id;
  for (const char* id : {"model", "attention"})
    EXPECT_TRUE(hasTile(*findWorkspace("model"), id)) << id;
  EXPECT_FALSE(hasTile(*findWorkspace("model"), "heads"));
  // The names are the session's table, entry for entry (what --workspace and the autosave
  // read, app/session/workspace_names.h).
  ASSERT_EQ(workspaces().size(), std::size(kWorkspaceNames));
  for (std::size_t i = 0; i < std::size(kWorkspaceNames); ++i) {
    EXPECT_STREQ(workspaces()[i].id, kWorkspaceNames[i].id);
    EXPECT_STREQ(workspaces()[i].name, kWorkspaceNames[i].name);
    EXPECT_EQ(workspaces()[i].digit, kWorkspaceNames[i].digit);
  }
  EXPECT_EQ(workspaceIds(), "teach, model, attention, image, training");
  EXPECT_EQ(&currentWorkspace(ViewSettings{}), findWorkspace("teach"));
  ViewSettings unknown;
  unknown.workspace = "nope";
  EXPECT_EQ(&currentWorkspace(unknown), findWorkspace("teach"));
}

// =======================================================================================
// Tiling
// =======================================================================================

TEST(Workspaces, EveryWorkspaceTilesWithoutOverlapAt1600x1000And1280x800) {
  for (const WorkspaceInfo& ws : workspaces()) {
    ViewSettings view;
    switchWorkspace(view, ws);
    for (const auto& [w, h] : {std::pair{1600.f, 1000.f}, std::pair{1280.f, 800.f}}) {
      const TileRect area = room(w, h);
      const WorkspaceLayout layout = tileDefault(ws, area, view);
      const std::string what = std::string(ws.id) + " at " + std::to_string(int(w));
      // Every panel the switch showed has its tile; nothing else is shown.
      std::size_t shown = 0;
      for (const PanelInfo& panel : panelRegistry()) {
        if (!panelShown(view, panel.id)) continue;
        ++shown;
        EXPECT_NE(placed(layout, panel.id), nullptr) << what << " " << panel.id;
      }
      EXPECT_EQ(layout.panels.size(), shown) << what;
      expectTiled(layout, area, what);
    }
  }
}

TEST(Workspaces, TheModelWorkspaceWithPatchingStillTiles) {
  const WorkspaceInfo& model = *findWorkspace("model");
  ViewSettings view;
  const std::string_view patching[] = {"patching"};
  switchWorkspace(view, model, patching);
  EXPECT_TRUE(panelShown(view, "patching"));
  for (const auto& [w, h] : {std::pair{1600.f, 1000.f}, std::pair{1280.f, 800.f}}) {
    const TileRect area = room(w, h);
    const WorkspaceLayout layout = tileDefault(model, area, view);
    ASSERT_EQ(layout.panels.size(), 3u);  // model; attention | patching
    expectTiled(layout, area, "model + patching at " + std::to_string(int(w)));
  }
}

TEST(Workspaces, WorkedTilesOfTheModelWorkspace) {
  // 1600 x 950 of room, 5 px gaps, rows 0.5 / 0.5, the model alone in the first, the
  // attention alone in the second: row 1 = floor(945 * 0.5) = 472 px, row 2 = 950 - 477 =
  // 473, each the full width. With patching, attention 0.62 / patching 0.38 of the second
  // row: attention = floor(1595 * 0.62) = 988, patching = 1600 - 993 = 607.
  const WorkspaceInfo& model = *findWorkspace("model");
  ViewSettings view;
  switchWorkspace(view, model);
  WorkspaceLayout layout = tileDefault(model, {0, 0, 1600, 950}, view);
  ASSERT_EQ(layout.panels.size(), 2u);
  const PlacedPanel* m = placed(layout, "model");
  const PlacedPanel* a = placed(layout, "attention");
  ASSERT_TRUE(m && a);
  EXPECT_EQ(m->rect.x, 0.f);
  EXPECT_EQ(m->rect.y, 0.f);
  EXPECT_EQ(m->rect.w, 1600.f);
  EXPECT_EQ(m->rect.h, 472.f);
  EXPECT_EQ(a->rect.x, 0.f);
  EXPECT_EQ(a->rect.y, 477.f);
  EXPECT_EQ(a->rect.w, 1600.f);
  EXPECT_EQ(a->rect.h, 473.f);
  ASSERT_EQ(layout.splitters.size(), 1u);  // row | row
  EXPECT_FALSE(layout.splitters[0].vertical);
  EXPECT_EQ(layout.splitters[0].rect.y, 472.f);
  EXPECT_EQ(layout.splitters[0].rect.h, 5.f);
  *panelFlag(view, "patching") = true;
  layout = tileDefault(model, {0, 0, 1600, 950}, view);
  const PlacedPanel* p = placed(layout, "patching");
  a = placed(layout, "attention");
  ASSERT_TRUE(p && a);
  EXPECT_EQ(a->rect.w, 988.f);
  EXPECT_EQ(p->rect.x, 993.f);
  EXPECT_EQ(p->rect.w, 607.f);
  EXPECT_EQ(p->rect.y, 477.f);
}

TEST(Workspaces, AHiddenPanelsRoomGoesToItsNeighbours) {
  const WorkspaceInfo& teach = *findWorkspace("teach");
  ViewSettings view;
  switchWorkspace(view, teach);
  const TileRect area = room(1600, 1000);
  *panelFlag(view, "settings") = false;  // inputs alone in the left column: its full height
  WorkspaceLayout layout = tileDefault(teach, area, view);
  ASSERT_TRUE(placed(layout, "inputs"));
  EXPECT_EQ(placed(layout, "inputs")->rect.h, area.h);
  EXPECT_EQ(placed(layout, "settings"), nullptr);
  expectTiled(layout, area, "teach without settings");
  // The whole left column hidden: the pipeline and the right column share the width.
  *panelFlag(view, "inputs") = false;
  layout = tileDefault(teach, area, view);
  ASSERT_TRUE(placed(layout, "pipeline"));
  EXPECT_EQ(placed(layout, "pipeline")->rect.x, area.x);
  // 0.50 : 0.26 of 1595 px
  EXPECT_EQ(placed(layout, "pipeline")->rect.w, std::floor(1595.f * 0.50f / 0.76f));
  expectTiled(layout, area, "teach without its left column");
}

TEST(Workspaces, ASplitterMovesTheDraggedPixelsAndStopsAtTheLeastSize) {
  const WorkspaceInfo& teach = *findWorkspace("teach");
  ViewSettings view;
  switchWorkspace(view, teach);
  const TileRect area = room(1600, 1000);
  std::vector<float> weights = workspaceWeights(view, teach);
  WorkspaceLayout before = tileWorkspace(
      teach, weights, [&](std::string_view id) { return panelShown(view, id); }, area, kGap);
  // The splitter between the left column and the pipeline.
  auto columnSplit = std::find_if(before.splitters.begin(), before.splitters.end(),
                                  [](const Splitter& s) { return s.vertical && s.first == 0; });
  ASSERT_NE(columnSplit, before.splitters.end());
  ASSERT_TRUE(dragSplitter(weights, *columnSplit, 120.f, 150.f));
  EXPECT_NEAR(weights[0] + weights[1], 0.24f + 0.50f, 1e-6f) << "the pair's sum is kept";
  const WorkspaceLayout after = tileWorkspace(
      teach, weights, [&](std::string_view id) { return panelShown(view, id); }, area, kGap);
  EXPECT_NEAR(placed(after, "inputs")->rect.w - placed(before, "inputs")->rect.w, 120.f, 1.f);
  EXPECT_NEAR(placed(before, "pipeline")->rect.w - placed(after, "pipeline")->rect.w, 120.f, 1.f);
  EXPECT_NEAR(placed(after, "heads")->rect.w, placed(before, "heads")->rect.w, 1.f)
      << "the third column does not move";
  // Far to the right: the pipeline keeps 150 px.
  dragSplitter(weights, *columnSplit, 5000.f, 150.f);
  const WorkspaceLayout squeezed = tileWorkspace(
      teach, weights, [&](std::string_view id) { return panelShown(view, id); }, area, kGap);
  EXPECT_NEAR(placed(squeezed, "pipeline")->rect.w, 150.f, 1.f);
  EXPECT_FALSE(dragSplitter(weights, *columnSplit, 10.f, 150.f)) << "already at its least";
  // A row splitter of a stack: inputs grows by 80 px down, settings shrinks by as much.
  auto rowSplit = std::find_if(before.splitters.begin(), before.splitters.end(),
                               [](const Splitter& s) { return !s.vertical; });
  ASSERT_NE(rowSplit, before.splitters.end());
  std::vector<float> rows = workspaceWeights(view, teach);
  ASSERT_TRUE(dragSplitter(rows, *rowSplit, 80.f, 150.f));
  const WorkspaceLayout down = tileWorkspace(
      teach, rows, [&](std::string_view id) { return panelShown(view, id); }, area, kGap);
  EXPECT_NEAR(placed(down, "inputs")->rect.h - placed(before, "inputs")->rect.h, 80.f, 1.f);
  EXPECT_NEAR(placed(before, "settings")->rect.h - placed(down, "settings")->rect.h, 80.f, 1.f);
}

// =======================================================================================
// Switching
// =======================================================================================

TEST(Workspaces, APanelAServiceShowsLeadsToTheWorkspaceThatHoldsIt) {
  const auto pick = [](std::vector<std::string_view> unplaced) {
    const WorkspaceInfo* ws = workspaceFor(unplaced);
    return ws ? std::string(ws->id) : std::string("none");
  };
  EXPECT_EQ(pick({}), "none");
  EXPECT_EQ(pick({"model", "attention"}), "model");  // a model folder opened
  EXPECT_EQ(pick({"attention"}), "attention");       // an attention file: its home
  EXPECT_EQ(pick({"image"}), "image");
  EXPECT_EQ(pick({"training"}), "training");
  EXPECT_EQ(pick({"patching"}), "model");
  EXPECT_EQ(pick({"pipeline"}), "teach");

  // Teach, then a model loads (the service asks to show the model: the Model and Attention
  // panels, never the scenario's Heads panel beside a model).
  ViewSettings view;
  EXPECT_FALSE(followShownPanels(view)) << "the default panels are Teach's";
  EXPECT_EQ(view.workspace, "teach");
  requestShow(view, ShowRequest::Model);
  EXPECT_TRUE(followShownPanels(view));
  EXPECT_TRUE(view.showRequests.empty()) << "taken";
  EXPECT_EQ(view.workspace, "model");
  for (const PanelInfo& panel : panelRegistry())
    EXPECT_EQ(panelShown(view, panel.id), std::string_view(panel.id) == "model" ||
                                              std::string_view(panel.id) == "attention")
        << panel.id;
  EXPECT_FALSE(followShownPanels(view)) << "settled";
  // A patching run (the service's request): it has a tile here, so no switch.
  requestShow(view, ShowRequest::Patching);
  EXPECT_FALSE(followShownPanels(view));
  EXPECT_TRUE(panelShown(view, "patching"));
  // An image dropped on the window: the Image workspace, the image alone.
  requestShow(view, ShowRequest::Image);
  EXPECT_TRUE(followShownPanels(view));
  EXPECT_EQ(view.workspace, "image");
  for (const PanelInfo& panel : panelRegistry())
    EXPECT_EQ(panelShown(view, panel.id), std::string_view(panel.id) == "image") << panel.id;
  // An attention file: the Attention file workspace.
  requestShow(view, ShowRequest::AttentionFile);
  EXPECT_TRUE(followShownPanels(view));
  EXPECT_EQ(view.workspace, "attention");
  // View > Inputs from there: back to Teach with its panels.
  *panelFlag(view, "inputs") = true;
  EXPECT_TRUE(followShownPanels(view));
  EXPECT_EQ(view.workspace, "teach");
  EXPECT_TRUE(panelShown(view, "pipeline"));
  EXPECT_FALSE(panelShown(view, "image"));
}

// `screenshot --model DIR --workspace teach`: the model's request comes before the switch,
// and the switch is the later word (Teach's panels alone, nothing left to follow).
TEST(Workspaces, ASwitchAfterAServiceAskedWins) {
  ViewSettings view;
  requestShow(view, ShowRequest::Model);
  switchWorkspace(view, *findWorkspace("teach"));
  EXPECT_TRUE(view.showRequests.empty());
  EXPECT_FALSE(followShownPanels(view));
  EXPECT_EQ(view.workspace, "teach");
  EXPECT_FALSE(panelShown(view, "model"));
  EXPECT_FALSE(panelShown(view, "attention"));
  EXPECT_TRUE(panelShown(view, "pipeline"));
}

// =======================================================================================
// The autosave's view object
// =======================================================================================

TEST(Workspaces, TheWorkspaceAndItsWeightsGoThroughTheViewJson) {
  ViewSettings view;
  switchWorkspace(view, *findWorkspace("model"));
  std::vector<float> weights = defaultWeights(*findWorkspace("model"));
  weights[0] = 0.3f;
  weights[1] = 0.7f;
  view.workspaceWeights["model"] = weights;
  const std::string json = viewToJson(view, "", /*includeUi=*/true);
  ViewSettings back;
  applyViewJson(back, json, true);
  EXPECT_EQ(back.workspace, "model");
  ASSERT_EQ(back.workspaceWeights.count("model"), 1u);
  EXPECT_EQ(back.workspaceWeights["model"], weights);
  EXPECT_EQ(workspaceWeights(back, *findWorkspace("model")), weights);
  // Not in a scenario file's view object (personal settings, like the panels).
  EXPECT_EQ(viewToJson(view, "", false).find("workspace"), std::string::npos);

  // Bad entries are ignored: an unknown workspace, a negative or non-numeric weight, a
  // wrong count (the defaults then).
  ViewSettings bad;
  applyViewJson(bad, R"({"workspace": "nope", "workspaces": {"teach": [1, -2, 3],
                         "image": ["x"], "model": [1, 2]}})", true);
  EXPECT_EQ(bad.workspace, "teach");
  EXPECT_EQ(bad.workspaceWeights.count("teach"), 0u);
  EXPECT_EQ(bad.workspaceWeights.count("image"), 0u);
  EXPECT_EQ(workspaceWeights(bad, *findWorkspace("model")), defaultWeights(*findWorkspace("model")))
      << "two weights for a workspace that has six";
}

}  // namespace
}  // namespace test_ui_workspaces
