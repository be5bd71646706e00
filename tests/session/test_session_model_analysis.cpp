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

namespace {

namespace fs = std::filesystem;
using namespace attn;
using namespace attn::app;

class ModelAnalysisTest : public ::testing::Test {
 protected:
  void SetUp() override {
    vocab_ = gpt2test::defaultVocabulary();
    gpt2test::TinyConfig config;
    config.nLayer = 3;
    config.nHead = 4;
    config.nEmbd = 16;
    config.nPositions = 32;
    tiny_ = gpt2test::makeTinyModel(config, vocab_.size(), 21);
    test_ = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    dir_ = gpt2test::writeModelFolder("session_model_analysis_" + test_, tiny_, vocab_, "F32");
  }

  // Loads the folder and runs `text` synchronously (as a screenshot does).
  void load(AppState& state, const std::string& text) {
    state.model.loadRequest = dir_.string();
    state.model.text = text;
    ++state.model.textRevision;
    updateModel(state, 0);
    ASSERT_TRUE(state.model.model) << (state.notices.empty() ? "" : state.notices.back().text);
    ASSERT_TRUE(state.model.run && state.model.run->session);
  }

  std::shared_ptr<const model::Weights> weights(const AppState& state) const {
    return state.model.model->weights;
  }

  gpt2test::Vocabulary vocab_;
  gpt2test::TinyModel tiny_;
  std::string test_;
  fs::path dir_;
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
