// The window's model for every family (app/session/model_service.h, app/ui/panels/
// panel_model.cpp) on the small random checkpoints of tests/support/model_fixture.h with a
// tokenizer.json: the run's tokens (BOS from the post-processor, a typed "<|endoftext|>" as
// one special token), its attention against the plain-loop reference forward pass, "open this
// head in the pipeline" for a rotary GQA model (the scenario's weights are the model's), and
// the Model panel drawing headless. Qwen2, Mistral's sliding window and GPT-NeoX's partial
// rotary run without a window in tests/session/test_session_model_families.cpp.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <imgui.h>

#include "app/session/app_state.h"
#include "app/session/head_scenario.h"
#include "app/session/model_service.h"
#include "app/session/pipeline_steps.h"
#include "app/ui/panels/panels.h"
#include "core/scenario/scenario.h"
#include "tests/support/model_fixture.h"
#include "tests/support/model_session.h"
#include "tests/support/ui_headless.h"

namespace test_ui_model_families {
namespace {

namespace fs = std::filesystem;
using namespace attn;
using namespace attn::app;

class FamiliesInApp : public testui::HeadlessImGui, protected attn::testing::FamilyFixture {
 protected:
  FamiliesInApp() : FamilyFixture("ui_families") {}

  void frame(AppState& state) {
    ImGui::NewFrame();
    place(0, 0, 1200, 500);
    drawModelPanel(state, ui_);
    ImGui::Render();
  }
};

TEST_F(FamiliesInApp, LlamaRunsWithBosAndSpecialTokensAsOneToken) {
  AppState state;
  const modeltest::Spec spec = modeltest::llamaSpec();
  auto r = run(spec, "a<|endoftext|> tt", /*bos=*/true, state);
  ASSERT_TRUE(r) << (state.notices.empty() ? std::string() : state.notices.back().text);
  ASSERT_TRUE(r->error.empty()) << r->error;
  // <s>, a, <|endoftext|>, Ġt, t: the BOS from TemplateProcessing, the added token whole.
  EXPECT_EQ(r->ids, (std::vector<int>{258, 'a', 257, 256, 't'}));
  EXPECT_EQ(r->special, (std::vector<bool>{true, false, true, false, false}));
  EXPECT_EQ(r->labels[2], "<|endoftext|>");
  EXPECT_EQ(r->labels[3], "\xC2\xB7t");
  expectHeadsAndPipeline(spec, *r);
  // The pipeline says the rows are rotated and which KV head head 3 shares.
  Expected<Scenario> s = headScenario(*r, 1, 3, "llama");
  ASSERT_TRUE(s.ok());
  EXPECT_NE(s->description.find("after the rotary embedding"), std::string::npos) << s->description;
  EXPECT_NE(s->description.find("KV head 1"), std::string::npos) << s->description;
  EXPECT_NE(s->description.find("query heads 2\xE2\x80\x93" "3"), std::string::npos) << s->description;
  EXPECT_TRUE(rotaryHead(*s));
  EXPECT_NE(pipelineHint(*s).find("after the rotary embedding (RoPE)"), std::string::npos);
  EXPECT_NE(stageDescription(MatrixKind::Q, *s).find("after the rotary embedding"), std::string::npos);
  EXPECT_EQ(pipelineHint(Scenario{}).find("rotary"), std::string::npos);
  // Two heads of one group read the same keys.
  EXPECT_TRUE(headScenario(*r, 0, 2, "l")->keys.isApprox(headScenario(*r, 0, 3, "l")->keys));
  EXPECT_FALSE(headScenario(*r, 0, 1, "l")->keys.isApprox(headScenario(*r, 0, 2, "l")->keys));
  frame(state);
  frame(state);
}

}  // namespace
}  // namespace test_ui_model_families
