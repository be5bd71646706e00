// The model analyses' state without a window (app/session/model_analysis.h) on the tiny random
// GPT-2 of tests/support/gpt2_fixture.h: a typed list of heads to ablate is parsed, sorted,
// deduplicated and checked against the loaded model's layers and heads, and a refused list
// changes nothing. The Model panel's grid, the head scores it draws and the Patching panel
// are tested in tests/ui/test_ui_model_analysis.cpp.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "app/session/app_state.h"
#include "app/session/model_analysis.h"
#include "app/session/model_service.h"
#include "tests/support/gpt2_fixture.h"
#include "tests/support/model_session.h"

namespace test_session_model_analysis {
namespace {

namespace fs = std::filesystem;
using namespace attn;
using namespace attn::app;

class ModelAnalysisTest : public ::testing::Test, protected attn::testing::TinyGpt2Fixture {
 protected:
  void SetUp() override {
    folder_.write("session_model_analysis", attn::testing::analysisGpt2Config(), 21);
  }
};

TEST_F(ModelAnalysisTest, AblationListTypedAndCheckedAgainstTheModel) {
  AppState state;
  load(state, "the cat sat");
  ModelAnalysisState& analysis = state.model.analysis;
  Expected<std::vector<model::HeadId>> heads = parseHeadList("2.3, 0.1,1.0 2.3");
  ASSERT_TRUE(heads);
  ASSERT_TRUE(setAblatedHeads(analysis, *heads, weights(state)->config));
  EXPECT_EQ(analysis.request.ablation.heads, (std::vector<model::HeadId>{{0, 1}, {1, 0}, {2, 3}}));
  EXPECT_EQ(formatHeadList(analysis.request.ablation.heads), "0.1, 1.0, 2.3");
  const std::uint64_t revision = analysis.request.revision;
  Status outside = setAblatedHeads(analysis, {{3, 0}}, weights(state)->config);
  ASSERT_FALSE(outside);
  EXPECT_NE(outside.error().message().find("head 3.0 is outside the model's 3 layers x 4 heads"),
            std::string::npos)
      << outside.error().message();
  EXPECT_EQ(analysis.request.revision, revision) << "a refused list changes nothing";
  Expected<std::vector<model::HeadId>> bad = parseHeadList("1.2, x");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("item 2 \"x\" is not LAYER.HEAD"), std::string::npos)
      << bad.error().message();
}

}  // namespace
}  // namespace test_session_model_analysis
