// The Heads tab's analyses of the bidirectional kinds without a window
// (app/session/bidirectional_analysis.h): an encoder's run (encoder_service.h) and a vision
// transformer's (image_model.h) with heads ablated and scores asked for give the numbers of
// the core's ablateEncoderHeads / ablateVitHeads (themselves checked against PyTorch's
// head_mask in tests/cli/test_cli_analysis_bidirectional.cpp) and headScore; the views get
// the ablated run; a toggle in the encoder's state reruns through the model service; an
// ablated head outside the model is an error naming it; a ViT has no duplicate-token or
// induction score (an empty matrix, never NaN).
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "app/session/app_state.h"
#include "app/session/bidirectional_analysis.h"
#include "app/session/encoder_service.h"
#include "app/session/image_model.h"
#include "app/session/image_view.h"
#include "app/session/model_analysis.h"
#include "app/session/model_service.h"
#include "core/models/analysis_bidirectional.h"
#include "tests/support/encoder_fixture.h"
#include "tests/support/model_session.h"
#include "tests/support/test_files.h"
#include "tests/support/vit_fixture.h"

namespace test_session_bidirectional_heads {
namespace {

namespace fs = std::filesystem;
using namespace attn;
using namespace attn::app;

AnalysisRequest ablating(std::vector<model::HeadId> heads, model::AblationMode mode, std::uint64_t revision) {
  AnalysisRequest request;
  request.ablation.heads = std::move(heads);
  request.ablation.mode = mode;
  request.scores = true;
  request.revision = revision;
  return request;
}

TEST(BidirectionalHeads, EncoderRunEqualsTheCoreAblationAndScores) {
  const enctest::Spec spec;  // bert, 2 layers x 4 heads
  const fs::path dir = enctest::writeFolder("heads_bert", spec, enctest::makeTensors(spec, 8));
  auto encoder = loadWindowEncoder(dir.string());
  ASSERT_TRUE(encoder.ok()) << encoder.error().message();
  const model::EncoderWeights& weights = *(*encoder)->weights;
  for (const auto mode : {model::AblationMode::Zero, model::AblationMode::Mean}) {
    SCOPED_TRACE(mode == model::AblationMode::Zero ? "zero" : "mean");
    const AnalysisRequest request = ablating({{0, 1}, {1, 3}}, mode, 7);
    const auto run = runEncoderText(**encoder, "the [MASK] sat on the mat", 1, 1, request);
    ASSERT_TRUE(run->error.empty()) << run->error;
    EXPECT_EQ(run->analysisRevision, 7u);
    ASSERT_TRUE(run->analysis);
    const RunAnalysis& a = *run->analysis;
    ASSERT_EQ(a.masked.size(), 1u);
    EXPECT_EQ(a.masked[0].position, 2);
    auto core = model::ablateEncoderHeads(weights, run->ids, 4, request.ablation.heads, mode, 10);
    ASSERT_TRUE(core.ok());
    const auto& clean = core->clean[0].next;
    const auto& ablated = core->ablated[0].next;
    ASSERT_EQ(a.masked[0].next.size(), ablated.size());
    double moved = 0;
    for (std::size_t k = 0; k < ablated.size(); ++k) {
      const PredictionChange& c = a.masked[0].next[k];
      EXPECT_EQ(c.id, ablated[k].id);
      EXPECT_NEAR(c.probability, ablated[k].probability, 1e-6);
      EXPECT_NEAR(c.logit, ablated[k].logit, 1e-5);
      EXPECT_EQ(run->masked[0].next[k].id, ablated[k].id);  // the view shows the ablated run
      for (const model::TokenProbability& t : clean) {
        if (t.id == c.id) {
          EXPECT_NEAR(c.cleanProbability, t.probability, 1e-6);
        }
      }
      moved = std::max(moved, std::abs(static_cast<double>(c.probability) - c.cleanProbability));
    }
    EXPECT_GT(moved, 1e-3) << "the ablation changed nothing measurable";
    // the scores are the clean run's; the attention on screen is the ablated run's (the
    // weights of the ablated heads themselves are the same: z is taken after the softmax)
    auto plain = model::runEncoder(weights, run->ids);
    ASSERT_TRUE(plain.ok());
    const model::AttentionStack stack = model::attentionStack(plain->attention, 2, 4, plain->size());
    ASSERT_EQ(a.scores.size(), std::size(model::kAllHeadScores));
    for (std::size_t k = 0; k < a.scores.size(); ++k) {
      const Matrix want = model::headScore(stack, run->ids, model::kAllHeadScores[k], request.detect);
      EXPECT_TRUE(a.scores[k].isApprox(want, 1e-6f)) << model::toString(model::kAllHeadScores[k]);
    }
    auto mask = model::headMask(2, 4, request.ablation.heads, mode);
    ASSERT_TRUE(mask.ok());
    auto ablatedRun = model::runEncoder(weights, run->ids, &*mask);
    ASSERT_TRUE(ablatedRun.ok());
    EXPECT_EQ(run->attention->copyHead(1, 0), ablatedRun->attentionMatrix(1, 0));
    EXPECT_FALSE(run->attention->copyHead(1, 0).isApprox(plain->attentionMatrix(1, 0), 1e-4f))
        << "layer 1 follows the ablation in layer 0";
  }
  // a head outside the model is an error naming it
  const auto bad = runEncoderText(**encoder, "the [MASK]", 1, 1, ablating({{2, 0}}, model::AblationMode::Zero, 8));
  EXPECT_NE(bad->error.find("head 2.0 is outside the model's 2 layers x 4 heads"), std::string::npos) << bad->error;
  EXPECT_EQ(bad->analysisRevision, 8u);
}

TEST(BidirectionalHeads, AToggleInTheEncoderStateRerunsAtOnce) {
  AppState state;
  enctest::Spec spec;
  ModelService service(std::chrono::milliseconds(0));
  state.model.loadRequest = enctest::writeFolder("heads_toggle", spec, enctest::makeTensors(spec, 9)).string();
  state.model.text = "the [MASK] sat";
  ++state.model.textRevision;
  for (int i = 0; i < 3; ++i) {  // the load, the text, the run
    updateModelAsync(state, service, 0);
    service.waitIdle();
  }
  updateModelAsync(state, service, 0);
  ASSERT_TRUE(state.model.run);
  EXPECT_FALSE(state.model.run->analysis);  // nothing asked
  toggleAblatedHead(state.model.analysis, {1, 2});
  setScoreKind(state.model.analysis, 0);
  EXPECT_TRUE(state.model.computing());
  updateModelAsync(state, service, 0);
  service.waitIdle();
  updateModelAsync(state, service, 0);
  EXPECT_FALSE(state.model.computing());
  ASSERT_TRUE(state.model.run->analysis);
  EXPECT_EQ(state.model.run->analysis->ablation.heads, (std::vector<model::HeadId>{{1, 2}}));
  EXPECT_EQ(state.model.run->analysis->scores.size(), std::size(model::kAllHeadScores));
  // a model of other sizes drops the heads outside it
  enctest::Spec small;
  small.layers = 1;
  state.model.loadRequest = enctest::writeFolder("heads_small", small, enctest::makeTensors(small, 9)).string();
  updateModel(state, 0);
  EXPECT_TRUE(state.model.analysis.request.ablation.heads.empty());
}

TEST(BidirectionalHeads, VitRunEqualsTheCoreAblationAndHasNoIdScores) {
  AppState state;
  const vittest::Spec spec;
  const fs::path dir = vittest::writeFolder("heads_vit", spec, vittest::makeTensors(spec, 6));
  ASSERT_TRUE(openImage(state.image, attn::testing::writeRampPicture(dir).string()).ok());
  ImageModelState& m = state.image.model;
  m.loadRequest = dir.string();
  ASSERT_TRUE(updateImageModel(m, state.image.image, state.image.imageId, false).ok());
  ASSERT_TRUE(m.shown && m.shown->run);
  EXPECT_FALSE(m.shown->analysis);
  ASSERT_TRUE(setAblatedHeads(m.analysis, {{0, 0}, {1, 2}}, 2, 4));
  setScoreKind(m.analysis, 0);
  auto updated = updateImageModel(m, state.image.image, state.image.imageId, false);
  ASSERT_TRUE(updated.ok());
  EXPECT_TRUE(*updated);  // the request's revision changed: it ran again
  ASSERT_TRUE(m.shown->analysis);
  const RunAnalysis& a = *m.shown->analysis;
  const std::vector<float> pixels = io::vitPixels(*m.vit, *state.image.image);
  auto core = model::ablateVitHeads(*m.vit->weights, pixels, a.ablation.heads, model::AblationMode::Zero, 5);
  ASSERT_TRUE(core.ok());
  ASSERT_EQ(a.next.size(), 5u);
  for (std::size_t k = 0; k < 5; ++k) {
    EXPECT_EQ(a.next[k].id, core->ablated[k].id);
    EXPECT_NEAR(a.next[k].probability, core->ablated[k].probability, 1e-6);
    EXPECT_EQ(a.next[k].display, m.vit->weights->labels[static_cast<std::size_t>(core->ablated[k].id)]);
    EXPECT_EQ(m.shown->top[k].id, core->ablated[k].id);  // the labels on screen: the ablated run's
  }
  auto plain = model::runVit(*m.vit->weights, pixels);
  ASSERT_TRUE(plain.ok());
  const model::AttentionStack stack = model::attentionStack(plain->attention, 2, 4, plain->tokens);
  for (std::size_t k = 0; k < a.scores.size(); ++k) {
    const model::HeadScoreKind kind = model::kAllHeadScores[k];
    if (model::needsTokenIds(kind)) {
      EXPECT_EQ(a.scores[k].size(), 0) << model::toString(kind);
      continue;
    }
    EXPECT_TRUE(a.scores[k].isApprox(model::headScore(stack, {}, kind, a.detect), 1e-6f)) << model::toString(kind);
  }
}

}  // namespace
}  // namespace test_session_bidirectional_heads

namespace test_session_bidirectional_heads {
namespace {

// The ids of the labels a ViT run shows, best first.
std::vector<int> topIds(const ImageModelState& m) {
  std::vector<int> ids;
  for (const auto& t : m.shown->top) ids.push_back(t.id);
  return ids;
}


// The ViT's Heads tab is in the undo history (issue 32, point 7), as the decoder's is
// (tests/ui/test_ui_model_undo.cpp): an ablation is one step, undo brings back the clean run
// and redo the ablated one; a step taken on a ViT that has since been loaded again is
// dropped, not undone.
TEST(BidirectionalHeads, VitAblationIsUndoneAndRedone) {
  AppState state;
  const vittest::Spec spec;
  const fs::path dir = vittest::writeFolder("heads_vit_undo", spec, vittest::makeTensors(spec, 6));
  ASSERT_TRUE(openImage(state.image, attn::testing::writeRampPicture(dir).string()).ok());
  ImageModelState& m = state.image.model;
  auto update = [&] { ASSERT_TRUE(updateImageModel(m, state.image.image, state.image.imageId, false).ok()); };
  m.loadRequest = dir.string();
  update();
  endFrame(state, false);  // loading a model moves the baseline, it is no step
  EXPECT_FALSE(undo(state));
  ASSERT_TRUE(m.shown && m.shown->run);
  const std::vector<int> clean = topIds(m);
  ASSERT_TRUE(setAblatedHeads(m.analysis, {{0, 0}, {1, 2}}, 2, 4));
  update();
  endFrame(state, false);  // the ablation: one step
  ASSERT_TRUE(m.shown->analysis);
  const std::vector<int> ablated = topIds(m);
  ASSERT_NE(ablated, clean) << "the fixture's ablation changes the labels";

  ASSERT_TRUE(undo(state));
  EXPECT_TRUE(m.analysis.request.ablation.heads.empty());
  update();
  EXPECT_EQ(topIds(m), clean);
  ASSERT_TRUE(redo(state));
  EXPECT_EQ(m.analysis.request.ablation.heads, (std::vector<model::HeadId>{{0, 0}, {1, 2}}));
  update();
  EXPECT_EQ(topIds(m), ablated);

  // the same folder loaded again is another model: the step before the ablation is dropped
  m.loadRequest = dir.string();
  update();
  endFrame(state, false);
  EXPECT_FALSE(undo(state));
  EXPECT_EQ(m.analysis.request.ablation.heads, (std::vector<model::HeadId>{{0, 0}, {1, 2}}));
}

}  // namespace
}  // namespace test_session_bidirectional_heads
