// Undo for the model state (issue 32, point 7; app/session/model_snapshot.h): on the tiny
// random GPT-2 of tests/support/gpt2_fixture.h,
//   - a head ablated by a click in the Model panel's grid is one undo step; Ctrl+Z's undo()
//     asks for the clean run without computing it (the run on screen stays until the
//     worker's lands), and the run that lands has the clean prediction and attention, equal
//     to the run before the ablation and to model::forward(); redo brings back
//     ablateHeads()' prediction;
//   - the head the Attention panel shows, a scenario edit and an ablation made one after the
//     other undo and redo in that order, in one history; the model steps never make the
//     scenario dirty;
//   - a step taken on a model that has been replaced since does nothing and is dropped.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include <imgui.h>

#include "app/session/app_state.h"
#include "app/session/model_analysis.h"
#include "app/session/model_service.h"
#include "app/ui/panels/panels.h"
#include "core/models/analysis.h"
#include "tests/support/gpt2_fixture.h"
#include "tests/support/model_session.h"
#include "tests/support/ui_headless.h"

namespace test_ui_model_undo {
namespace {

namespace fs = std::filesystem;
using namespace attn;
using namespace attn::app;

class ModelUndo : public testui::HeadlessImGui, protected attn::testing::TinyGpt2Fixture {
 protected:
  void SetUp() override {
    HeadlessImGui::SetUp();
    folder_.write("ui_model_undo", attn::testing::analysisGpt2Config(), 33);
  }

  // Loads the folder and runs `text` synchronously (TinyGpt2Fixture::load), then closes the
  // frame: loading is no undo step.
  void loadClosed(AppState& state, const std::string& text) {
    load(state, text);
    ASSERT_TRUE(state.model.run->attention);
    endFrame(state, false);
  }

  // One frame of the Model panel; the mouse at `mouse`, the left button down or not; then
  // the window's end of frame (the undo step closes unless an item is still active).
  void frame(AppState& state, ImVec2 mouse = ImVec2(-1, -1), bool down = false) {
    showWhatServicesOpened(state);
    ImGuiIO& io = ImGui::GetIO();
    io.MousePos = mouse;
    io.MouseDown[0] = down;
    ImGui::NewFrame();
    place(0, 0, 1600, 700);
    drawModelPanel(state, ui_);
    const bool active = ImGui::IsAnyItemActive();
    ImGui::Render();
    endFrame(state, active);
  }

  // A click (press, release) on head layer.head of the Heads tab's grid.
  void clickHead(AppState& state, int layer, int head) {
    const auto& drawn = state.model.analysis.drawnHeads;
    auto cell = std::find_if(drawn.begin(), drawn.end(), [&](const auto& c) {
      return c.layer == layer && c.head == head;
    });
    ASSERT_NE(cell, drawn.end()) << layer << "." << head << " is not drawn";
    const ImVec2 centre(cell->x + cell->side * 0.5f, cell->y + cell->side * 0.5f);
    frame(state, centre, true);
    frame(state, centre, false);
  }

  // The window's update step with the service, until the run on screen is the newest.
  static void settleNewest(AppState& state, ModelService& service) {
    settle(state, service);
    ASSERT_FALSE(state.model.computing());
  }
};

// The largest difference between two runs' attention over every head (they must have the
// same shape).
float attentionDifference(const ModelRun& a, const ModelRun& b) {
  float worst = 0;
  for (int l = 0; l < a.attention->layers(); ++l)
    for (int h = 0; h < a.attention->heads(); ++h)
      worst = std::max(worst, (a.attention->copyHead(l, h) - b.attention->copyHead(l, h))
                                  .cwiseAbs()
                                  .maxCoeff());
  return worst;
}

TEST_F(ModelUndo, UndoingAnAblationBringsBackTheCleanRunComputedOnTheWorker) {
  AppState state;
  loadClosed(state, "the cat sat on the mat and they're here");
  const std::shared_ptr<const ModelRun> clean = state.model.run;
  EXPECT_TRUE(state.history.undo.empty()) << "loading a model is not an undo step";
  state.model.analysis.showHeadsTab = true;
  for (int i = 0; i < 3; ++i) frame(state);  // the Heads tab in front, the grid laid out
  ASSERT_TRUE(state.history.undo.empty());

  // 1 a click ablates head 1.2: one undo step, the scenario still clean
  clickHead(state, 1, 2);
  ASSERT_EQ(state.model.analysis.request.ablation.heads, (std::vector<model::HeadId>{{1, 2}}));
  ASSERT_EQ(state.history.undo.size(), 1u);
  EXPECT_FALSE(state.dirty()) << "an ablation is not an edit of the scenario";
  ModelService service(std::chrono::minutes(1));  // typing's debounce: never reached here
  settleNewest(state, service);
  const std::shared_ptr<const ModelRun> ablated = state.model.run;
  ASSERT_TRUE(ablated->analysis && ablated->analysis->ablating()) << ablated->error;
  ASSERT_EQ(ablated->next.size(), clean->next.size());
  EXPECT_GT(attentionDifference(*ablated, *clean), 1e-4f) << "layer 2 moved";

  // 2 Ctrl+Z: the ablation is gone at once, the run comes from the worker (undo computes
  //   nothing: the ablated run stays on screen until then), and the scenario is untouched
  const std::uint64_t revision = state.revision;
  const std::size_t runsBefore = service.runsCompleted();
  ASSERT_TRUE(undo(state));
  EXPECT_TRUE(state.model.analysis.request.ablation.heads.empty());
  EXPECT_EQ(state.model.run, ablated) << "undo itself never runs the model";
  EXPECT_TRUE(state.model.computing());
  EXPECT_EQ(state.revision, revision) << "the scenario is not recomputed";
  EXPECT_FALSE(state.dirty());
  EXPECT_EQ(state.history.redo.size(), 1u);
  settleNewest(state, service);
  EXPECT_EQ(service.runsCompleted(), runsBefore + 1) << "one run, on the worker";
  const std::shared_ptr<const ModelRun> undone = state.model.run;
  ASSERT_NE(undone, ablated);
  EXPECT_FALSE(undone->analysis && undone->analysis->ablating());
  // 3 the un-ablated output: the same prediction and attention as before the ablation, and
  //   as model::forward() of the same tokens
  EXPECT_EQ(undone->ids, clean->ids);
  ASSERT_EQ(undone->next.size(), clean->next.size());
  for (std::size_t i = 0; i < clean->next.size(); ++i) {
    EXPECT_EQ(undone->next[i].id, clean->next[i].id) << "rank " << i;
    EXPECT_NEAR(undone->next[i].probability, clean->next[i].probability, 1e-6f) << "rank " << i;
  }
  EXPECT_LE(attentionDifference(*undone, *clean), 1e-6f);
  Expected<model::DecoderRun> reference = model::forward(state.model.model->weights, undone->ids);
  ASSERT_TRUE(reference) << reference.error().message();
  for (int l = 0; l < 3; ++l)
    for (int h = 0; h < 4; ++h)
      EXPECT_LE((undone->attention->copyHead(l, h) - reference->attention(l, h)).cwiseAbs().maxCoeff(),
                1e-6f)
          << l << "." << h;
  ASSERT_TRUE(state.attention.source);
  EXPECT_TRUE(state.attention.source->intervention.empty()) << state.attention.source->intervention;

  // 4 Ctrl+Y: ablated again, the prediction ablateHeads()' for {1.2}
  ASSERT_TRUE(redo(state));
  EXPECT_EQ(state.model.analysis.request.ablation.heads, (std::vector<model::HeadId>{{1, 2}}));
  settleNewest(state, service);
  const std::vector<model::HeadId> heads = {{1, 2}};
  Expected<model::Ablation> want = model::ablateHeads(
      state.model.model->weights, state.model.run->ids, heads, model::AblationMode::Zero,
      kModelPredictions);
  ASSERT_TRUE(want) << want.error().message();
  ASSERT_TRUE(state.model.run->analysis && state.model.run->analysis->ablating());
  const model::Prediction& got = state.model.run->analysis->ablated;
  ASSERT_EQ(got.next.size(), want->ablated.next.size());
  for (std::size_t i = 0; i < got.next.size(); ++i) {
    EXPECT_EQ(got.next[i].id, want->ablated.next[i].id) << "rank " << i;
    EXPECT_NEAR(got.next[i].probability, want->ablated.next[i].probability, 1e-6f);
  }
  EXPECT_NEAR(got.loss, want->ablated.loss, 1e-6 * std::max(1.0, std::abs(want->ablated.loss)));
  EXPECT_LE(attentionDifference(*state.model.run, *ablated), 1e-6f);
  EXPECT_FALSE(redo(state)) << "nothing left to redo";
}

TEST_F(ModelUndo, TheShownHeadAScenarioEditAndAnAblationUndoInOrder) {
  AppState state;
  Scenario scenario;
  scenario.options.temperature = 1;
  loadDocument(state, scenario, "");
  loadClosed(state, "the cat sat on the mat");
  ASSERT_TRUE(state.history.undo.empty());
  const Scalar temperature = state.doc.options.temperature;

  // 1 another head in the Attention panel (as a right-click on the grid does)
  io::AttentionSelection head23;
  head23.layer = 2;
  head23.head = 3;
  selectAttentionView(state.attention, head23);
  endFrame(state, false);
  // 2 a scenario edit
  state.doc.options.temperature = temperature * 2;
  touch(state);
  endFrame(state, false);
  EXPECT_TRUE(state.dirty());
  // 3 an ablation, with the mean mode, in one frame: one step
  toggleAblatedHead(state.model.analysis, {0, 1});
  setAblationMode(state.model.analysis, model::AblationMode::Mean);
  endFrame(state, false);
  ASSERT_EQ(state.history.undo.size(), 3u);

  const auto expectState = [&](Scalar t, int layer, int head, bool ablated, bool dirty,
                               const std::string& when) {
    EXPECT_EQ(state.doc.options.temperature, t) << when;
    EXPECT_EQ(state.attention.selection.layer, layer) << when;
    EXPECT_EQ(state.attention.selection.head, head) << when;
    EXPECT_EQ(state.model.analysis.request.ablation.heads.size(), ablated ? 1u : 0u) << when;
    EXPECT_EQ(state.model.analysis.request.ablation.mode,
              ablated ? model::AblationMode::Mean : model::AblationMode::Zero)
        << when;
    EXPECT_EQ(state.dirty(), dirty) << when;
  };
  expectState(temperature * 2, 2, 3, true, true, "after the edits");
  ASSERT_TRUE(undo(state));
  expectState(temperature * 2, 2, 3, false, true, "undo 1: the ablation");
  updateModel(state, 0);  // the runs in between (synchronous here) change no step
  endFrame(state, false);
  ASSERT_TRUE(undo(state));
  expectState(temperature, 2, 3, false, false, "undo 2: the scenario edit");
  ASSERT_TRUE(undo(state));
  expectState(temperature, 0, 0, false, false, "undo 3: the head shown");
  EXPECT_FALSE(undo(state));
  ASSERT_TRUE(redo(state));
  expectState(temperature, 2, 3, false, false, "redo 1");
  ASSERT_TRUE(redo(state));
  expectState(temperature * 2, 2, 3, false, true, "redo 2");
  ASSERT_TRUE(redo(state));
  expectState(temperature * 2, 2, 3, true, true, "redo 3");
  updateModel(state, 0);
  ASSERT_TRUE(state.model.run->analysis && state.model.run->analysis->ablating());
  // The run the redo asked for is ablateHeads()' for {0.1} (mean).
  const std::vector<model::HeadId> heads = {{0, 1}};
  Expected<model::Ablation> want = model::ablateHeads(
      state.model.model->weights, state.model.run->ids, heads, model::AblationMode::Mean,
      kModelPredictions);
  ASSERT_TRUE(want);
  EXPECT_NEAR(state.model.run->analysis->ablated.loss, want->ablated.loss,
              1e-6 * std::max(1.0, std::abs(want->ablated.loss)));
}

TEST_F(ModelUndo, AStepOfAReplacedModelIsDropped) {
  AppState state;
  loadDocument(state, Scenario{}, "");
  state.doc.options.temperature = 3;  // a scenario step first
  touch(state);
  endFrame(state, false);
  loadClosed(state, "the cat sat");
  toggleAblatedHead(state.model.analysis, {1, 1});
  endFrame(state, false);
  ASSERT_EQ(state.history.undo.size(), 2u);
  // The folder opened again: a new model (generation); the ablation stays (the head exists).
  loadClosed(state, "the cat sat");
  ASSERT_EQ(state.model.analysis.request.ablation.heads, (std::vector<model::HeadId>{{1, 1}}));
  const std::uint64_t analysisRevision = state.model.analysis.request.revision;
  // Undo skips the old model's step (it would change nothing) and undoes the scenario edit.
  ASSERT_TRUE(undo(state));
  EXPECT_EQ(state.doc.options.temperature, Scenario{}.options.temperature);
  EXPECT_EQ(state.model.analysis.request.ablation.heads, (std::vector<model::HeadId>{{1, 1}}));
  EXPECT_EQ(state.model.analysis.request.revision, analysisRevision) << "no run asked for";
  EXPECT_FALSE(undo(state));
}

}  // namespace
}  // namespace test_ui_model_undo
