// The GPT-2 model in the app (app/session/model_service.h, app/ui/panels/panel_model.cpp) on the tiny model of
// tests/support/gpt2_fixture.h: the worker loads the folder and publishes runs whose attention,
// prediction and residual norms match the plain-loop reference and that the panels show;
// "open this head in the pipeline" gives a scenario whose weights are the head's; the Model
// panel draws headless. The service alone (the cache, the debounce, a bad folder) is tested
// without a window in tests/session/test_session_model_service.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include <imgui.h>

#include "app/session/app_state.h"
#include "app/session/attention_service.h"
#include "app/ui/shell/files.h"
#include "app/session/head_scenario.h"
#include "app/session/model_service.h"
#include "app/ui/panels/panel_registry.h"
#include "app/ui/panels/panels.h"
#include "core/scenario/scenario.h"
#include "tests/support/gpt2_fixture.h"
#include "tests/support/model_session.h"
#include "tests/support/ui_headless.h"

namespace test_ui_model {
namespace {

namespace fs = std::filesystem;
using namespace attn;
using namespace attn::app;

constexpr double kTolerance = 1e-4;

class ModelInApp : public testui::HeadlessImGui, protected attn::testing::TinyGpt2Fixture {
 protected:
  void SetUp() override {
    HeadlessImGui::SetUp();
    folder_.write("ui_model", attn::testing::serviceGpt2Config(), 11);
  }

  // One frame of the Model panel.
  void frame(AppState& state) {
    showWhatServicesOpened(state);
    ImGui::NewFrame();
    place(0, 0, 1600, 600);
    drawModelPanel(state, ui_);
    ImGui::Render();
  }

};

// =======================================================================================
// The service computes and publishes
// =======================================================================================

TEST_F(ModelInApp, WorkerLoadsRunsAndPublishesWhatThePanelsShow) {
  ModelService service(std::chrono::milliseconds(0));
  AppState state;
  state.model.loadRequest = dir_.string();
  type(state, "the cat sat on the mat");
  settle(state, service);
  ASSERT_TRUE(state.model.model) << (state.notices.empty() ? "" : state.notices.back().text);
  EXPECT_EQ(state.model.generation, 1u);
  // The service asks the window to show the model (never a panel by name); the window then
  // shows the Model and Attention panels.
  EXPECT_TRUE(showRequested(state.view, ShowRequest::Model));
  EXPECT_TRUE(takeShowRequests(state.view));
  EXPECT_TRUE(panelShown(state.view, "model"));
  EXPECT_TRUE(panelShown(state.view, "attention"));
  ASSERT_EQ(state.notices.size(), 2u);  // "loading model DIR…", then what was loaded
  EXPECT_EQ(state.notices[0].text.rfind("loading model " + dir_.string(), 0), 0u);
  EXPECT_NE(state.notices[1].text.find("loaded model ui_model_" + test_ + ": 3 layers \xC3\x97 2 heads, 8 wide"),
            std::string::npos)
      << state.notices[1].text;
  const std::shared_ptr<const ModelRun> run = state.model.run;
  ASSERT_TRUE(run);
  EXPECT_TRUE(run->error.empty()) << run->error;
  EXPECT_EQ(run->textRevision, state.model.textRevision);
  const int n = static_cast<int>(run->ids.size());
  ASSERT_GE(n, 6);
  EXPECT_EQ(run->reusedTokens, 0);
  EXPECT_EQ(run->computedTokens, n);

  // The attention of every head, as the Attention panel's file.
  EXPECT_EQ(state.attention.tensor(), run->attention);
  EXPECT_EQ(run->attention->layers(), 3);
  EXPECT_EQ(run->attention->heads(), 2);
  expectMatchesReference(*run);
  // Labels: the tokens for the screen, leading spaces as "·".
  ASSERT_EQ(static_cast<int>(run->attention->keyLabels().size()), n);
  EXPECT_EQ(joined(run->attention->keyLabels()), "the cat sat on the mat");
  EXPECT_EQ(run->attention->keyLabels().back().rfind("\xC2\xB7", 0), 0u)
      << run->attention->keyLabels().back();
  EXPECT_EQ(run->attention->queryLabels(), run->attention->keyLabels());

  // The prediction: the 10 most probable next tokens, softmax of the reference's last logits.
  const gpt2test::Reference ref = gpt2test::referenceForward(model_, run->ids);
  const std::vector<double>& logits = ref.logits.back();
  double top = -1e300, sum = 0;
  for (double z : logits) top = std::max(top, z);
  for (double z : logits) sum += std::exp(z - top);
  ASSERT_EQ(run->next.size(), 10u);
  for (std::size_t k = 0; k < run->next.size(); ++k) {
    const PredictedToken& t = run->next[k];
    EXPECT_NEAR(t.probability, std::exp(logits[static_cast<std::size_t>(t.id)] - top) / sum,
                kTolerance);
    if (k > 0) {
      EXPECT_LE(t.probability, run->next[k - 1].probability);
    }
  }
  // No token outside the ten is more probable than the tenth.
  int above = 0;
  for (double z : logits)
    if (std::exp(z - top) / sum > run->next.back().probability + 1e-6) ++above;
  EXPECT_LE(above, 9);

  // Residual-stream norms: (L+1) x n; row 0 is |wte[id] + wpe[i]|.
  ASSERT_EQ(run->residualNorms.rows(), 4);
  ASSERT_EQ(run->residualNorms.cols(), n);
  const int E = model_.config.nEmbd;
  for (int i = 0; i < n; ++i) {
    double norm = 0;
    for (int c = 0; c < E; ++c) {
      const double x =
          model_.at("wte.weight").values[static_cast<std::size_t>(run->ids[i] * E + c)] +
          model_.at("wpe.weight").values[static_cast<std::size_t>(i * E + c)];
      norm += x * x;
    }
    EXPECT_NEAR(run->residualNorms(0, i), std::sqrt(norm), kTolerance);
  }
}

// =======================================================================================
// Typing: the KV cache, debounce, latest wins
// =======================================================================================

TEST_F(ModelInApp, TooManyTokensIsAnErrorAndKeepsTheAttention) {
  AppState state;
  state.model.loadRequest = dir_.string();
  type(state, "the cat");
  updateModel(state, 0);
  const auto shown = state.attention.tensor();
  ASSERT_TRUE(shown);
  std::string text;
  for (int i = 0; i < 40; ++i) text += " the";  // at least 40 tokens > n_positions = 32
  type(state, text);
  updateModel(state, 1);
  ASSERT_TRUE(state.model.run);
  EXPECT_NE(state.model.run->error.find(" tokens are more than the model's context of 32"),
            std::string::npos)
      << state.model.run->error;
  EXPECT_EQ(state.attention.tensor(), shown);
  // Emptying the text clears the model's attention from the panel.
  type(state, "");
  updateModel(state, 2);
  EXPECT_TRUE(state.model.run->error.empty());
  EXPECT_TRUE(state.model.run->ids.empty());
}

TEST_F(ModelInApp, AttentionPanelShowsTheLiveHeadAndKeepsTheSelectionWhileTyping) {
  AppState state;
  state.model.loadRequest = dir_.string();
  type(state, "the cat sat on the mat");
  updateModel(state, 0);
  io::AttentionSelection selection;
  selection.layer = 2;
  selection.head = 1;
  selectAttentionView(state.attention, selection);
  for (int tab = 0; tab < 3; ++tab) {  // heatmap, head view, text view
    state.attention.requestTab = tab;
    for (int i = 0; i < 2; ++i) {
      updateAttention(state);
      ImGui::NewFrame();
      place(0, 0, 1600, 1000);
      drawAttentionPanel(state, ui_);
      ImGui::Render();
    }
  }
  ASSERT_TRUE(state.attention.shown);
  EXPECT_EQ(state.attention.shown->selected.view.values, state.model.run->decoder->attention(2, 1));
  EXPECT_EQ(state.attention.shown->selected.view.colLabels, state.model.run->labels);
  // One more word: the panel shows the same head of the new run.
  type(state, "the cat sat on the mat and");
  updateModel(state, 1);
  updateAttention(state);
  EXPECT_EQ(state.attention.selection.layer, 2);
  EXPECT_EQ(state.attention.selection.head, 1);
  ASSERT_TRUE(state.attention.shown);
  EXPECT_EQ(state.attention.shown->selected.view.values, state.model.run->decoder->attention(2, 1));
  EXPECT_GT(state.attention.shown->selected.view.values.rows(), 6);
}

// =======================================================================================
// Open this head in the pipeline
// =======================================================================================

TEST_F(ModelInApp, OpenHeadInPipelineGivesTheModelsWeights) {
  AppState state;
  state.model.loadRequest = dir_.string();
  type(state, "the cat sat on the mat and they're here");
  updateModel(state, 0);
  const std::shared_ptr<const ModelRun> run = state.model.run;
  ASSERT_TRUE(run && run->decoder);
  const gpt2test::Reference ref = gpt2test::referenceForward(model_, run->ids);
  const int n = static_cast<int>(run->ids.size());
  for (int l = 0; l < 3; ++l) {
    for (int h = 0; h < 2; ++h) {
      Expected<Scenario> scenario = headScenario(*run, l, h, "tiny");
      ASSERT_TRUE(scenario.ok()) << scenario.error().message();
      EXPECT_EQ(scenario->queries.rows(), n);
      EXPECT_EQ(scenario->queries.cols(), model_.config.nEmbd / model_.config.nHead);
      EXPECT_EQ(scenario->keyLabels, run->labels);
      // The real q rows, and the pipeline's weights = the model's attention of the head.
      for (int i = 0; i < n; ++i)
        for (int d = 0; d < scenario->queries.cols(); ++d)
          ASSERT_NEAR(scenario->queries(i, d), ref.q[l][h][i][d], kTolerance);
      Expected<AttentionResult> result = compute(*scenario);
      ASSERT_TRUE(result.ok()) << result.error().message();
      ASSERT_EQ(result->heads.size(), 1u);
      const Matrix& weights = result->heads[0].weights;
      const Matrix model = run->decoder->attention(l, h);
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
          ASSERT_NEAR(weights(i, j), model(i, j), kTolerance) << l << "/" << h;
          ASSERT_NEAR(weights(i, j), ref.attention[l][h][i][j], kTolerance);
        }
    }
  }
  EXPECT_FALSE(headScenario(*run, 3, 0, "tiny").ok());
  EXPECT_FALSE(headScenario(*run, 0, 2, "tiny").ok());

  // Into the document: unsaved edits are asked about first (nothing replaced yet) ...
  Scenario original;
  original.name = "mine";
  original.mode = Mode::Self;
  original.inputs = Matrix::Identity(3, 3);
  loadDocument(state, original, "mine.json");
  touch(state);
  endFrame(state, false);
  ASSERT_TRUE(state.dirty());
  FileUi ui;
  requestNewDocument(ui, state, headScenario(*run, 1, 1, "tiny").value(), 5.0);
  EXPECT_TRUE(ui.askUnsaved);
  EXPECT_EQ(ui.after, FileUi::After::New);
  EXPECT_EQ(state.doc.name, "mine");
  EXPECT_EQ(state.docPath, "mine.json");
  // ... a clean document is replaced at once, as a new untitled scenario.
  loadDocument(state, original, "mine.json");
  FileUi clean;
  requestNewDocument(clean, state, headScenario(*run, 1, 1, "tiny").value(), 6.0);
  EXPECT_FALSE(clean.askUnsaved);
  EXPECT_EQ(state.doc.name, "tiny layer 1 head 1");
  EXPECT_EQ(state.docPath, "");
  EXPECT_FALSE(state.dirty());
  update(state);
  ASSERT_TRUE(state.computed->result);
  const Matrix model = run->decoder->attention(1, 1);
  EXPECT_LT((state.computed->result->heads[0].weights - model).cwiseAbs().maxCoeff(), kTolerance);
  // The model is not changed.
  EXPECT_EQ(state.model.run, run);
  EXPECT_EQ(state.model.generation, 1u);
}

// =======================================================================================
// A bad folder keeps what was loaded
// =======================================================================================

// =======================================================================================
// The panel, headless
// =======================================================================================

TEST_F(ModelInApp, PanelDrawsTheResidualNormsHeatmap) {
  AppState state;
  frame(state);  // no model: a hint, nothing uploaded
  EXPECT_TRUE(mock().uploads.empty());
  state.model.loadRequest = dir_.string();
  type(state, "the cat sat on the mat");
  updateModel(state, 0);
  for (int i = 0; i < 3; ++i) frame(state);
  const ModelRun& run = *state.model.run;
  const std::size_t cells = static_cast<std::size_t>(run.residualNorms.size());
  bool found = false;
  for (const auto& upload : mock().uploads) {
    if (upload.top.size() != cells) continue;
    bool same = true;
    for (std::size_t k = 0; k < cells; ++k) same &= upload.top[k] == run.residualNorms.data()[k];
    found |= same;
  }
  EXPECT_TRUE(found) << "the residual norms were not uploaded as a heatmap";
  // Typing into the box is what the update step runs next.
  const std::uint64_t revision = state.model.textRevision;
  EXPECT_FALSE(state.model.computing());
  type(state, "the cat sat on the mat and");
  EXPECT_TRUE(state.model.computing());
  EXPECT_GT(state.model.textRevision, revision);
}

}  // namespace
}  // namespace test_ui_model
