// The model analyses' state without a window (app/session/model_analysis.h) on the tiny random
// GPT-2 of tests/support/gpt2_fixture.h: a typed list of heads to ablate is parsed, sorted,
// deduplicated and checked against the loaded model's layers and heads, and a refused list
// changes nothing. The window's ablation (analyseRun, through the run interface) is the
// engine's hooked pass byte for byte, and equals a second formulation on edited weights: a
// head ablated with zero is its output-projection rows zeroed, a head ablated with its mean
// is those rows zeroed and the mean's projection added to the bias. The Model panel's grid,
// the head scores it draws and the Patching panel are tested in
// tests/ui/test_ui_model_analysis.cpp.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "app/session/app_state.h"
#include "app/session/model_analysis.h"
#include "app/session/model_driver.h"
#include "app/session/model_service.h"
#include "core/models/analysis.h"
#include "core/models/model_run.h"
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

// The same floats, bit for bit.
template <class A, class B>
void expectSameFloats(const A& a, const B& b, const std::string& what) {
  ASSERT_EQ(static_cast<std::size_t>(a.size()), static_cast<std::size_t>(b.size())) << what;
  EXPECT_EQ(std::memcmp(a.data(), b.data(), sizeof(float) * static_cast<std::size_t>(a.size())), 0) << what;
}

void expectSamePrediction(const model::Prediction& got, const model::Prediction& want, const std::string& what) {
  expectSameFloats(got.logits, want.logits, what + " logits");
  EXPECT_EQ(std::memcmp(&got.loss, &want.loss, sizeof got.loss), 0) << what << " loss";
  ASSERT_EQ(got.next.size(), want.next.size()) << what;
  for (std::size_t i = 0; i < got.next.size(); ++i) {
    EXPECT_EQ(got.next[i].id, want.next[i].id) << what << " top " << i;
    EXPECT_EQ(got.next[i].probability, want.next[i].probability) << what << " top " << i;
  }
}

const std::vector<model::HeadId> kAblated = {{0, 1}, {1, 2}, {2, 0}};

TEST_F(ModelAnalysisTest, WindowAblationIsTheHookedPassByteForByte) {
  AppState state;
  load(state, "the cat sat on the mat");
  const io::ModelFolder& folder = *state.model.model;
  const std::vector<int> ids = state.model.run->ids;
  ASSERT_GE(ids.size(), 5u);
  for (const model::AblationMode mode : {model::AblationMode::Zero, model::AblationMode::Mean}) {
    const std::string what = mode == model::AblationMode::Zero ? "zero" : "mean";
    AnalysisRequest request;
    request.ablation.heads = kAblated;
    request.ablation.mode = mode;
    const AnalysedRun got = analyseRun(folder, *state.model.run->decoder, request, kModelPredictions, nullptr);
    ASSERT_TRUE(got.error.empty()) << got.error;
    ASSERT_TRUE(got.ablated && got.analysis);
    // the engine's hooks: the ablated pass recorded, and a recorded clean pass
    Expected<std::shared_ptr<const model::Hooks>> hooks = model::ablationHooks(folder.weights->config, kAblated, mode);
    ASSERT_TRUE(hooks);
    Expected<model::DecoderRun> ablated = model::runWithHooks(folder.weights, ids, *hooks);
    Expected<model::DecoderRun> clean = model::runWithHooks(folder.weights, ids, model::recordingHooks());
    ASSERT_TRUE(ablated && clean);
    expectSameFloats(got.ablated->attentionTensor(), ablated->attentionTensor(), what + " attention");
    expectSameFloats(got.ablated->residualNorms(), ablated->residualNorms(), what + " residual norms");
    expectSameFloats(got.ablated->logits(), ablated->logits(), what + " next-token logits");
    expectSamePrediction(got.analysis->ablated, model::predictionOf(*ablated, ids, kModelPredictions), what + " ablated");
    expectSamePrediction(got.analysis->clean, model::predictionOf(*clean, ids, kModelPredictions), what + " clean");
    // the panel's rows: the ablated top-K with the clean values beside them
    ASSERT_EQ(got.analysis->next.size(), static_cast<std::size_t>(kModelPredictions));
    for (const PredictionChange& change : got.analysis->next)
      EXPECT_EQ(change.cleanLogit, got.analysis->clean.logits[change.id]) << what;
  }
}

// The tiny model with head h of layer l ablated by editing its weights: its rows of the
// output projection (Conv1D [in, out]: rows h·d_h .. (h+1)·d_h − 1) zeroed, and `mean` (1 x d_h,
// empty for zero ablation) times those rows added to the projection's bias.
gpt2test::TinyModel withHeadRemoved(gpt2test::TinyModel model, const model::HeadId& head,
                                    const Eigen::RowVectorXf& mean) {
  const int E = model.config.nEmbd, dh = E / model.config.nHead;
  const std::string prefix = "h." + std::to_string(head.layer) + ".attn.c_proj.";
  std::vector<float>& w = model.tensors.at(prefix + "weight").values;
  std::vector<float>& bias = model.tensors.at(prefix + "bias").values;
  for (int r = head.head * dh; r < (head.head + 1) * dh; ++r) {
    for (int c = 0; c < E; ++c) {
      float& weight = w[static_cast<std::size_t>(r * E + c)];
      if (mean.size() > 0) bias[static_cast<std::size_t>(c)] += mean[r - head.head * dh] * weight;
      weight = 0;
    }
  }
  return model;
}

// A plain run of `model` written as a folder and loaded, with the logits at every position.
model::RunOutput plainRunOf(const gpt2test::TinyModel& model, const std::string& name, const std::vector<int>& ids) {
  const fs::path dir = gpt2test::writeModelFolder(name, model, gpt2test::defaultVocabulary(), "F32");
  Expected<io::LoadedModel> loaded = loadTextModel(dir.string());
  EXPECT_TRUE(loaded) << (loaded ? "" : loaded.error().message());
  if (!loaded) return {};
  model::RunOptions options;
  options.logits = true;
  Expected<model::RunOutput> run = runLoaded(*loaded, {ids, {}}, options);
  EXPECT_TRUE(run) << (run ? "" : run.error().message());
  return run ? std::move(run).value() : model::RunOutput{};
}

TEST_F(ModelAnalysisTest, WindowAblationEqualsTheHeadsOutputRowsRemoved) {
  AppState state;
  load(state, "the cat sat on the mat");
  const io::ModelFolder& folder = *state.model.model;
  const std::vector<int> ids = state.model.run->ids;
  const int dh = folder.weights->config.headDim();
  // zero: every head of kAblated together; mean: head 1.2 alone (the z its mean is taken over
  // is the clean pass's, since nothing upstream of layer 1 changes)
  model::RunOptions recordZ;
  recordZ.z = true;
  Expected<model::RunOutput> clean = runLoaded(folder, {ids, {}}, recordZ);
  ASSERT_TRUE(clean);
  const model::HeadId meanHead{1, 2};
  const Eigen::RowVectorXf mean =
      clean->headZ(meanHead.layer).middleCols(static_cast<Eigen::Index>(meanHead.head) * dh, dh).colwise().mean();
  for (const model::AblationMode mode : {model::AblationMode::Zero, model::AblationMode::Mean}) {
    const bool zero = mode == model::AblationMode::Zero;
    AnalysisRequest request;
    request.ablation.heads = zero ? kAblated : std::vector<model::HeadId>{meanHead};
    request.ablation.mode = mode;
    const AnalysedRun got = analyseRun(folder, *state.model.run->decoder, request, kModelPredictions, nullptr);
    ASSERT_TRUE(got.error.empty()) << got.error;
    gpt2test::TinyModel edited = model_;
    for (const model::HeadId& h : request.ablation.heads) edited = withHeadRemoved(edited, h, zero ? Eigen::RowVectorXf() : mean);
    const model::RunOutput want = plainRunOf(edited, "session_model_analysis_edited_" + test_, ids);
    ASSERT_EQ(want.tokens, static_cast<int>(ids.size()));
    const std::vector<float> attention = got.ablated->attentionTensor();
    ASSERT_EQ(attention.size(), want.attention.size());
    double attentionGap = 0;
    for (std::size_t i = 0; i < attention.size(); ++i)
      attentionGap = std::max(attentionGap, static_cast<double>(std::abs(attention[i] - want.attention[i])));
    EXPECT_LE(attentionGap, 1e-5) << (zero ? "zero" : "mean");
    const model::Prediction edit = model::predictionOf(want.logits, ids, kModelPredictions);
    EXPECT_LE((got.analysis->ablated.logits - edit.logits).cwiseAbs().maxCoeff(), 2e-5f) << (zero ? "zero" : "mean");
    EXPECT_NEAR(got.analysis->ablated.loss, edit.loss, 1e-5);
    for (int k = 0; k < 3; ++k) EXPECT_EQ(got.analysis->ablated.next[k].id, edit.next[k].id) << k;
    // and the ablation did something: the edit is not the clean model
    EXPECT_GT((got.analysis->ablated.logits - got.analysis->clean.logits).cwiseAbs().maxCoeff(), 1e-3f);
  }
}

}  // namespace
}  // namespace test_session_model_analysis
