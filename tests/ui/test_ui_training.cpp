// The Training panel without a window: it draws for every model (ImGui asserts abort, so a
// mismatched Begin/End would fail here), it follows the background trainer, and its file
// jobs write the model JSON, the attention maps and the PNG sequence.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <imgui.h>
#include <stb/stb_image.h>
#include <nlohmann/json.hpp>

#include "app/session/app_state.h"
#include "app/ui/shell/drawn_text.h"
#include "app/ui/widgets/heatmap_textures.h"
#include "app/ui/widgets/heatmap_widget.h"
#include "app/ui/panels/panel_registry.h"
#include "app/ui/panels/panel_training.h"
#include "app/ui/panels/panels.h"
#include "tests/support/test_paths.h"
#include "tests/support/ui_headless.h"

namespace test_ui_training {
namespace {

namespace fs = std::filesystem;
using namespace attn;
using namespace attn::app;
using attn::app::DrawnText;

class TrainingPanel : public testui::HeadlessImGui {
 protected:
  void SetUp() override {
    HeadlessImGui::SetUp();
    dir_ = fs::path(attn::testing::testTmp()) / "ui_training" /
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void frames(AppState& state, int count = 3) {
    for (int i = 0; i < count; ++i) {
      ImGui::NewFrame();
      place(100, 50, 1200, 850);
      drawTrainingPanel(state, ui_);
      ImGui::Render();
    }
  }

  fs::path dir_;
};

TEST_F(TrainingPanel, HiddenByDefaultAndListedInTheRegistry) {
  const PanelInfo* info = findPanel("training");
  ASSERT_NE(info, nullptr);
  EXPECT_FALSE(info->shownByDefault);
  AppState state;
  EXPECT_FALSE(panelShown(state.view, "training"));
  frames(state, 2);  // hidden: nothing is created
  EXPECT_EQ(ui_.training, nullptr);
  EXPECT_EQ(state.trainer, nullptr);
}

TEST_F(TrainingPanel, DrawsEveryModelAndFollowsTheTrainer) {
  AppState state;
  *panelFlag(state.view, "training") = true;
  frames(state);
  ASSERT_NE(ui_.training, nullptr);
  TrainingPanelState& t = *ui_.training;
  EXPECT_EQ(t.trainer, state.trainer.get());  // the session owns the trainer
  t.trainer->waitIdle();
  EXPECT_EQ(t.trainer->snapshot()->steps, 0);

  struct Case {
    train::TaskKind task;
    train::ModelKind model;
    ScoreKind score;
    std::size_t maps;
  };
  const Case cases[] = {
      {train::TaskKind::Reverse, train::ModelKind::EncDec, ScoreKind::Additive, 1},
      {train::TaskKind::Shift, train::ModelKind::EncDec, ScoreKind::General, 1},
      {train::TaskKind::Copy, train::ModelKind::Encoder, ScoreKind::ScaledDot, 4},  // 2x2
      {train::TaskKind::Markers, train::ModelKind::Pool, ScoreKind::Dot, 1},
  };
  for (const Case& c : cases) {
    t.config.task.kind = c.task;
    t.config.model.kind = c.model;
    t.config.model.score = c.score;
    t.config.model.layers = 2;
    t.config.model.heads = 2;
    ASSERT_TRUE(t.trainer->reset(t.config, 100).ok());
    t.trainer->stepOnce(7);
    t.trainer->waitIdle();
    frames(state);
    const auto& s = *t.snapshot;  // what the panel read in its last frame
    EXPECT_EQ(s.steps, 7);
    EXPECT_EQ(s.maps.size(), c.maps);
    EXPECT_EQ(s.config.model.kind, c.model);
    t.mapIndex = static_cast<int>(c.maps) - 1;  // the last map (layer 2 head 2 for encoder)
    frames(state, 2);
  }
  t.trainer->start();  // the budget of 100 steps ends it
  t.trainer->waitIdle();
  frames(state);
  EXPECT_EQ(t.snapshot->steps, 100);
  EXPECT_FALSE(t.snapshot->running);
}

TEST_F(TrainingPanel, CurvesHaveAxesWithTickNumbersAndTitles) {
  // Issue 31: the loss and accuracy curves have axes: the value's title and round ticks on
  // the left, the training step's ticks and "step" below, read back from the draw data.
  AppState state;
  *panelFlag(state.view, "training") = true;
  frames(state);
  ASSERT_NE(ui_.training, nullptr);
  TrainingPanelState& t = *ui_.training;
  EXPECT_EQ(t.trainer, state.trainer.get());  // the session owns the trainer
  ASSERT_TRUE(t.trainer->reset(t.config, 100).ok());
  t.trainer->stepOnce(100);
  t.trainer->waitIdle();
  frames(state);
  ASSERT_EQ(t.snapshot->steps, 100);
  int steps = 0, loss = 0, accuracy = 0, half = 0, fifty = 0;
  for (const DrawnText& text : drawnTexts(*ImGui::GetDrawData(), *ImGui::GetIO().Fonts)) {
    steps += text.text == "step";
    loss += text.text == "loss";
    accuracy += text.text == "accuracy";
    half += text.text == "0.5";   // the accuracy axis: 0, 0.5, 1
    fifty += text.text == "50";   // the step axis over 0..100
  }
  EXPECT_EQ(steps, 2);
  EXPECT_EQ(loss, 1);
  EXPECT_EQ(accuracy, 1);
  EXPECT_GE(half, 1);
  EXPECT_EQ(fifty, 2);
}

TEST_F(TrainingPanel, MapViewLabelsInputsAndTargets) {
  TrainingSnapshot s;
  s.example.input = {1, 2, 3};
  s.example.target = {3, 2, 1};
  const Matrix w = Matrix::Identity(3, 3);
  const MatrixView cross = trainingMapView(s, w, "cross-attention", 42);
  EXPECT_EQ(cross.colLabels, (std::vector<std::string>{"1", "2", "3"}));
  EXPECT_EQ(cross.rowLabels, (std::vector<std::string>{"3", "2", "1"}));
  EXPECT_NE(cross.title.find("step 42"), std::string::npos);
  const MatrixView self = trainingMapView(s, w, "layer 1 head 1", 0);
  EXPECT_EQ(self.rowLabels, self.colLabels);
}

TEST_F(TrainingPanel, SaveAndExportWriteTheFiles) {
  BackgroundTrainer trainer;
  train::TrainConfig config;
  config.task.length = 5;
  config.task.vocab = 6;
  config.model.width = 8;
  config.threads = 1;
  ASSERT_TRUE(trainer.reset(config, 0).ok());
  trainer.stepOnce(40);
  trainer.waitIdle();
  const auto snapshot = trainer.snapshot();
  ASSERT_GE(snapshot->frames.size(), 2u);

  const std::string folder = (dir_ / "out").string();  // created by the save
  const std::string saved = saveTrainingSnapshot(*snapshot, folder, ColormapKind::Viridis);
  EXPECT_EQ(saved.rfind("saved", 0), 0u) << saved;
  std::ifstream in(fs::path(folder) / "model.json");
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json doc = nlohmann::json::parse(text.str());
  EXPECT_EQ(doc["steps"].get<long long>(), 40);
  EXPECT_EQ(doc["task"], "reverse");
  ASSERT_TRUE(doc["parameters"].contains("src_embed"));
  EXPECT_EQ(doc["parameters"]["src_embed"].size(), 6u);     // vocab rows
  EXPECT_EQ(doc["parameters"]["src_embed"][0].size(), 8u);  // width columns
  EXPECT_FLOAT_EQ(
      doc["parameters"]["W_o"][1][2].get<float>(),
      snapshot->params[std::find(snapshot->paramNames.begin(), snapshot->paramNames.end(), "W_o") -
                       snapshot->paramNames.begin()](1, 2));
  EXPECT_TRUE(fs::exists(fs::path(folder) / "attention_0.csv"));
  EXPECT_TRUE(fs::exists(fs::path(folder) / "attention_0.png"));

  const std::string exported = exportTrainingFrames(*snapshot, folder, ColormapKind::Magma);
  EXPECT_EQ(exported.rfind("exported", 0), 0u) << exported;
  for (std::size_t i = 0; i < snapshot->frames.size(); ++i) {
    char name[48];
    std::snprintf(name, sizeof name, "attention_%04zu.png", i);
    const fs::path png = fs::path(folder) / name;
    ASSERT_TRUE(fs::exists(png)) << png;
    int w = 0, h = 0, n = 0;
    ASSERT_TRUE(stbi_info(png.string().c_str(), &w, &h, &n)) << png;
    EXPECT_GT(w, 100);
    EXPECT_GT(h, 100);
  }
  char extra[48];
  std::snprintf(extra, sizeof extra, "attention_%04zu.png", snapshot->frames.size());
  EXPECT_FALSE(fs::exists(fs::path(folder) / extra));

  TrainingSnapshot empty;
  EXPECT_EQ(exportTrainingFrames(empty, folder, ColormapKind::Viridis).rfind("cannot", 0), 0u);
  // A folder that cannot be made (a file is in the way).
  std::ofstream(dir_ / "blocker") << "x";
  EXPECT_EQ(saveTrainingSnapshot(*snapshot, (dir_ / "blocker" / "sub").string(),
                                 ColormapKind::Viridis)
                .rfind("cannot", 0),
            0u);
}

train::TrainConfig tinyReverse(int threads) {
  train::TrainConfig config;
  config.task.kind = train::TaskKind::Reverse;
  config.task.length = 4;
  config.task.vocab = 5;
  config.model.width = 16;
  config.model.seed = 3;
  config.seed = 3;
  config.batch = 16;
  config.threads = threads;
  config.heldOut = 500;
  return config;
}

TEST(TrainingService, StepPauseBudgetAndSnapshots) {
  BackgroundTrainer background;
  EXPECT_EQ(background.snapshot()->steps, 0);
  train::TrainConfig bad = tinyReverse(1);
  bad.batch = 0;
  EXPECT_EQ(background.reset(bad, 0).error().field, "batch");

  ASSERT_TRUE(background.reset(tinyReverse(2), 60).ok());
  background.stepOnce(5);
  background.waitIdle();
  auto snapshot = background.snapshot();
  EXPECT_EQ(snapshot->steps, 5);
  EXPECT_FALSE(snapshot->running);
  ASSERT_EQ(snapshot->maps.size(), 1u);
  EXPECT_EQ(snapshot->maps[0].weights.rows(), 4);
  EXPECT_EQ(snapshot->maps[0].weights.cols(), 4);
  EXPECT_EQ(snapshot->example.input.size(), 4u);
  EXPECT_FALSE(snapshot->frames.empty());
  EXPECT_FALSE(snapshot->accuracyCurve.empty());

  background.setExampleIndex(3);
  background.start();  // runs to the budget of 60 steps, then stops by itself
  background.waitIdle();
  snapshot = background.snapshot();
  EXPECT_EQ(snapshot->steps, 60);
  EXPECT_FALSE(snapshot->running);
  EXPECT_EQ(snapshot->exampleIndex, 3);
  EXPECT_EQ(snapshot->lossCurve.size(), 60u);  // one point per step while short
  EXPECT_EQ(snapshot->accuracySteps.back(), 60);
  EXPECT_EQ(snapshot->params.size(), snapshot->paramNames.size());

  ASSERT_TRUE(background.reset(tinyReverse(1), 0).ok());
  background.waitIdle();
  EXPECT_EQ(background.snapshot()->steps, 0);
  EXPECT_TRUE(background.snapshot()->lossCurve.empty());
}

}  // namespace
}  // namespace test_ui_training
