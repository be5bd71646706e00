// The model service for every family without a window (app/session/model_service.h,
// app/session/pipeline_steps.h) on the small random checkpoints of
// tests/support/model_fixture.h with a tokenizer.json: no BOS without a post-processor, and
// for Qwen2, Mistral (sliding window) and GPT-NeoX (partial rotary) the run's attention
// against the plain-loop reference forward pass and "open this head in the pipeline" giving
// the model's weights. Llama (BOS, a special token) and the Model panel drawing are tested in
// tests/ui/test_ui_model_families.cpp.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "app/session/app_state.h"
#include "app/session/head_scenario.h"
#include "app/session/model_service.h"
#include "app/session/pipeline_steps.h"
#include "core/scenario/scenario.h"
#include "tests/support/model_fixture.h"
#include "tests/support/model_session.h"

namespace test_session_model_families {
namespace {

namespace fs = std::filesystem;
using namespace attn;
using namespace attn::app;

class FamiliesInSession : public ::testing::Test, protected attn::testing::FamilyFixture {
 protected:
  FamiliesInSession() : FamilyFixture("session_families") {}
};

TEST_F(FamiliesInSession, NoBosWithoutAPostProcessor) {
  AppState state;
  auto r = run(modeltest::qwen2Spec(), "tt<s>", /*bos=*/false, state);
  ASSERT_TRUE(r && r->error.empty());
  EXPECT_EQ(r->ids, (std::vector<int>{'t', 't', 258}));
  EXPECT_EQ(r->special, (std::vector<bool>{false, false, true}));
  expectHeadsAndPipeline(modeltest::qwen2Spec(), *r);
}

TEST_F(FamiliesInSession, MistralSlidingWindowPipelineMatchesTheModel) {
  AppState state;
  const modeltest::Spec spec = modeltest::mistralSpec();  // window 4, 1 KV head
  auto r = run(spec, "a cat sat on the mat", /*bos=*/true, state);
  ASSERT_TRUE(r && r->error.empty());
  ASSERT_GT(r->ids.size(), 8u);
  expectHeadsAndPipeline(spec, *r);
  Expected<Scenario> s = headScenario(*r, 0, 0, "mistral");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->options.mask.kind, MaskKind::Custom);
  EXPECT_NE(s->description.find("sliding_window"), std::string::npos);
  // Query 6 sees keys 3..6 only.
  EXPECT_FALSE(s->options.mask.custom(6, 2));
  EXPECT_TRUE(s->options.mask.custom(6, 3));
  EXPECT_FALSE(s->options.mask.custom(6, 7));
}

TEST_F(FamiliesInSession, GptNeoxPartialRotaryPipelineMatchesTheModel) {
  AppState state;
  const modeltest::Spec spec = modeltest::neoxSpec();
  auto r = run(spec, "the cat", /*bos=*/false, state);
  ASSERT_TRUE(r && r->error.empty());
  expectHeadsAndPipeline(spec, *r);
  Expected<Scenario> s = headScenario(*r, 0, 0, "neox");
  EXPECT_NE(s->description.find("first 2 of 8 dimensions"), std::string::npos) << s->description;
  EXPECT_EQ(s->description.find("KV head"), std::string::npos);
}

}  // namespace
}  // namespace test_session_model_families
