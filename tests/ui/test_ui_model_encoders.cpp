// Encoder folders in the window (app/session/encoder_service.h, app/ui/panels/
// panel_model_encoder.cpp) on the random checkpoints of tests/support/encoder_fixture.h: a
// load routed by config.json, the run's tokens and attention against the library's own
// runEncoder, the fill-mask prediction of every mask token, a checkpoint without the head,
// and the Model panel drawing headless. The worker path without a window:
// tests/session/test_session_encoder_service.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <imgui.h>

#include "app/session/app_state.h"
#include "app/session/encoder_service.h"
#include "app/session/head_scenario.h"
#include "app/ui/shell/drawn_text.h"
#include "app/session/model_service.h"
#include "app/ui/panels/panels.h"
#include "core/models/encoder.h"
#include "formats/models/open_model.h"
#include "tests/support/encoder_fixture.h"
#include "tests/support/ui_headless.h"

namespace test_ui_model_encoders {
namespace {

namespace fs = std::filesystem;
using namespace attn;
using namespace attn::app;
using attn::app::DrawnText;
using attn::app::drawnTexts;

class EncoderInApp : public testui::HeadlessImGui {
 protected:
  fs::path folder(const enctest::Spec& spec, const std::string& name) {
    return enctest::writeFolder(name, spec, enctest::makeTensors(spec, 12));
  }
  void frame(AppState& state) {
    ImGui::NewFrame();
    place(0, 0, 1200, 500);
    drawModelPanel(state, ui_);
    ImGui::Render();
  }
};

TEST_F(EncoderInApp, LoadsRunsAndPredictsEveryMask) {
  AppState state;
  const fs::path dir = folder(enctest::Spec{}, "bert");
  EXPECT_EQ(io::modelKindOf(dir.string()), io::ModelKind::Encoder);
  state.model.loadRequest = dir.string();
  state.model.text = "the [MASK] sat on the [MASK].";
  ++state.model.textRevision;
  ASSERT_TRUE(updateModel(state, 0));
  ASSERT_TRUE(state.model.encoder);
  EXPECT_FALSE(state.model.model);
  const std::shared_ptr<const ModelRun> run = state.model.run;
  ASSERT_TRUE(run);
  ASSERT_TRUE(run->error.empty()) << run->error;
  EXPECT_TRUE(run->encoder);
  EXPECT_TRUE(run->mlmHead);
  // [CLS] the [MASK] sat on the [MASK] . [SEP]
  EXPECT_EQ(run->ids, (std::vector<int>{2, 5, 4, 7, 8, 5, 4, 16, 3}));
  EXPECT_EQ(run->special, (std::vector<bool>{true, false, true, false, false, false, true, false, true}));
  ASSERT_EQ(run->masked.size(), 2u);
  EXPECT_EQ(run->masked[0].position, 2);
  EXPECT_EQ(run->masked[1].position, 6);
  // The same numbers as the library's own run.
  auto reference = model::runEncoder(*state.model.encoder->weights, run->ids);
  ASSERT_TRUE(reference.ok());
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 4; ++h) EXPECT_TRUE(run->attention->copyHead(l, h).isApprox(reference->attentionMatrix(l, h)));
  for (const MaskedPrediction& m : run->masked) {
    auto logits = model::mlmLogits(*state.model.encoder->weights, *reference, m.position);
    ASSERT_TRUE(logits.ok());
    const auto top = model::topProbabilities(*logits, 10);
    ASSERT_EQ(m.next.size(), 10u);
    for (std::size_t k = 0; k < 10; ++k) {
      EXPECT_EQ(m.next[k].id, top[k].id);
      EXPECT_FLOAT_EQ(m.next[k].probability, top[k].probability);
    }
  }
  // The Attention panel shows the run's attention.
  EXPECT_EQ(state.attention.tensor(), run->attention);
  frame(state);
  frame(state);
  // Typing runs again; the bidirectional attention of every token changes with a new word.
  state.model.text = "the [MASK] sat on the mat";
  ++state.model.textRevision;
  ASSERT_TRUE(updateModel(state, 0));
  ASSERT_EQ(state.model.run->masked.size(), 1u);
  frame(state);
}

TEST_F(EncoderInApp, WithoutTheHeadAttentionStillRuns) {
  AppState state;
  enctest::Spec spec;
  spec.mlmHead = false;
  state.model.loadRequest = folder(spec, "bare").string();
  state.model.text = "the [MASK] sat";
  ++state.model.textRevision;
  updateModel(state, 0);
  ASSERT_TRUE(state.model.run);
  EXPECT_FALSE(state.model.run->mlmHead);
  EXPECT_TRUE(state.model.run->masked.empty());
  EXPECT_TRUE(state.model.run->attention);
  frame(state);
  frame(state);
}

// An encoder's head opens in the pipeline as a model's does (app/session/head_scenario.h):
// the Model panel draws with the head selected, and the Inputs panel then says the rows are
// that self-attention head's, not "Cross-attention" (the sentence's statements are
// checked against the numbers in tests/session/test_session_head_scenario.cpp).
TEST_F(EncoderInApp, OpenThisHeadSaysItIsASelfAttentionHead) {
  AppState state;
  state.model.loadRequest = folder(enctest::Spec{}, "bert_head").string();
  state.model.text = "the [MASK] sat on the mat.";
  ++state.model.textRevision;
  ASSERT_TRUE(updateModel(state, 0));
  const std::shared_ptr<const ModelRun> run = state.model.run;
  ASSERT_TRUE(run && run->qkv);
  state.attention.selection.kind = io::AttentionSelection::Kind::Head;
  state.attention.selection.layer = 1;
  state.attention.selection.head = 2;
  frame(state);
  frame(state);
  Expected<Scenario> scenario = headScenario(*run, 1, 2, "bert_head");
  ASSERT_TRUE(scenario.ok()) << scenario.error().message();
  loadDocument(state, std::move(scenario).value(), "");
  update(state);
  for (int i = 0; i < 2; ++i) {
    ImGui::NewFrame();
    place(0, 0, 1600, 500);
    drawInputsPanel(state, ui_);
    ImGui::Render();
  }
  const std::vector<DrawnText> inputs = drawnTexts(*ImGui::GetDrawData(), *ImGui::GetIO().Fonts);
  std::string all;
  for (const DrawnText& t : inputs) all += t.text + "\n";
  EXPECT_NE(all.find("Self-attention head: layer 1, head 2 of bert_head (bert)"), std::string::npos) << all;
  EXPECT_EQ(all.find("Cross-attention"), std::string::npos) << all;

  // The Settings panel says the same: no self / cross radio for a model's head (its rows
  // are given as Q, K and V, cross mode internally), until an edit makes the scenario the
  // user's own (its tooltip: a projection chosen, positional encoding added).
  const auto settingsText = [&] {
    for (int i = 0; i < 2; ++i) {
      ImGui::NewFrame();
      place(0, 0, 800, 900);
      drawSettingsPanel(state, ui_);
      ImGui::Render();
    }
    std::string text;
    for (const DrawnText& t : drawnTexts(*ImGui::GetDrawData(), *ImGui::GetIO().Fonts)) text += t.text + "\n";
    return text;
  };
  const std::string settings = settingsText();
  EXPECT_NE(settings.find("self-attention head (layer 1, head 2)"), std::string::npos) << settings;
  EXPECT_EQ(settings.find("cross\n"), std::string::npos) << settings;
  state.doc.positionalEncoding = true;
  update(state);
  const std::string edited = settingsText();
  EXPECT_EQ(edited.find("self-attention head"), std::string::npos) << edited;
  EXPECT_NE(edited.find("cross\n"), std::string::npos) << edited;
  EXPECT_NE(edited.find("self\n"), std::string::npos) << edited;
}

// The residual-stream norm rows carry one naming for every kind (the decoder's and the
// encoder's Model panel both draw with residualRowLabels): row l >= 1 is the stream entering
// block l, the last row the output of the last block.
TEST(ResidualRows, OneNamingForEveryKind) {
  EXPECT_EQ(residualRowLabels(4), (std::vector<std::string>{"emb", "L1", "L2", "out"}));
  EXPECT_EQ(residualRowLabels(3), (std::vector<std::string>{"emb", "L1", "out"}));
  EXPECT_EQ(residualRowLabels(2), (std::vector<std::string>{"emb", "out"}));
}

}  // namespace
}  // namespace test_ui_model_encoders
