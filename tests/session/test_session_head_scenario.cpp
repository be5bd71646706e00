// "Open this head in the pipeline" for every kind (app/session/head_scenario.h): a decoder's,
// an encoder's and a vision transformer's head become a scenario that says what it is
// (Scenario::modelHead: one self-attention head of the same n tokens), whose weights are the
// model's attention of that head, and whose captions (the Inputs panel's first line,
// app/session/pipeline_steps.h inputsHeader; the Q, K, V stage lines) state only what these
// numbers show. What cannot be opened is refused by name: a long input's summary, gemma2's
// soft-capped scores, a head outside the model. The file keeps model_head through a save.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "app/session/app_state.h"
#include "app/session/head_scenario.h"
#include "app/session/image_model.h"
#include "app/session/image_view.h"
#include "app/session/model_service.h"
#include "app/session/pipeline_steps.h"
#include "core/models/transformer.h"
#include "core/scenario/scenario.h"
#include "formats/scenario_json.h"
#include "tests/support/encoder_fixture.h"
#include "tests/support/model_session.h"
#include "tests/support/small_families.h"
#include "tests/support/vit_fixture.h"

namespace test_session_head_scenario {
namespace {

namespace fs = std::filesystem;
using namespace attn;
using namespace attn::app;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Every statement the scenario's captions make about head (layer, head) of a model of `n`
// tokens with these labels, checked against its numbers: the same n tokens as queries and
// keys (one row each, the labels equal), Q, K, V given as they are (identity projection),
// the weights the model's (`modelWeights`), the mask causal or none as the sentence says.
void expectTrueCaptions(const Scenario& s, int layer, int head, const std::vector<std::string>& labels,
                        const Matrix& modelWeights, bool causal, const std::string& modelType) {
  const int n = static_cast<int>(labels.size());
  ASSERT_TRUE(s.modelHead);
  EXPECT_EQ(s.modelHead->layer, layer);
  EXPECT_EQ(s.modelHead->head, head);
  EXPECT_EQ(s.modelHead->tokens, n);
  EXPECT_EQ(s.modelHead->causal, causal);
  EXPECT_EQ(s.modelHead->modelType, modelType);
  ASSERT_EQ(shownModelHead(s), &*s.modelHead);
  // "of the same n tokens (one row each, query i and key i the same token)"
  EXPECT_EQ(s.queries.rows(), n);
  EXPECT_EQ(s.keys.rows(), n);
  EXPECT_EQ(s.values.rows(), n);
  EXPECT_EQ(s.queryLabels, labels);
  EXPECT_EQ(s.keyLabels, labels);
  EXPECT_EQ(s.projection, ProjectionKind::Identity);  // "Q, K and V are this head's projections"
  // the weights are the model's attention of this head; causal: nothing above the diagonal
  Expected<AttentionResult> result = compute(s);
  ASSERT_TRUE(result.ok()) << result.error().message();
  const Matrix& w = result->heads[0].weights;
  ASSERT_EQ(w.rows(), n);
  double worst = 0, above = 0;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      worst = std::max(worst, static_cast<double>(std::abs(w(i, j) - modelWeights(i, j))));
      if (j > i) above += w(i, j);
    }
  EXPECT_LT(worst, 2e-5) << modelType;
  if (causal) {
    EXPECT_EQ(above, 0.0);
  } else {
    EXPECT_GT(above, 0.1);  // "every token sees every token": weight on later keys
  }
  // the sentence says exactly that
  const std::string header = inputsHeader(s);
  EXPECT_EQ(header.rfind("Self-attention head: layer " + std::to_string(layer) + ", head " + std::to_string(head) +
                             " of ",
                         0),
            0u)
      << header;
  EXPECT_TRUE(contains(header, " on " + std::to_string(n) + " tokens. ")) << header;
  EXPECT_TRUE(contains(header, "projections of the same " + std::to_string(n) + " tokens")) << header;
  EXPECT_EQ(contains(header, "Causal: each token sees itself and the tokens before it."), causal) << header;
  EXPECT_EQ(contains(header, "Every token sees every token."), !causal) << header;
  EXPECT_FALSE(contains(header, "Cross-attention")) << header;
  EXPECT_TRUE(contains(stageDescription(MatrixKind::Q, s), "the model's queries of this head (n x d_h), one row per token"));
  EXPECT_TRUE(contains(stageDescription(MatrixKind::K, s), "the model's keys of this head (n x d_h), one row per token, of the same tokens as Q"));
  EXPECT_TRUE(contains(stageDescription(MatrixKind::V, s), "the model's values of this head")) << header;
  EXPECT_TRUE(contains(stageDescription(MatrixKind::Input, s), "the same tokens'"));
}

TEST(HeadScenario, ADecoderHeadSaysWhatItIs) {
  AppState state;
  attn::testing::TinyGpt2Folder folder;
  folder.write("head_scenario", attn::testing::serviceGpt2Config(), 5);
  attn::testing::loadModel(state, folder.dir, "the cat sat on the mat");
  const ModelRun& run = *state.model.run;
  for (int layer : {0, 1})
    for (int head : {0, 1}) {
      Expected<Scenario> s = headScenario(run, layer, head, "tiny");
      ASSERT_TRUE(s.ok()) << s.error().message();
      expectTrueCaptions(*s, layer, head, run.labels, run.decoder->attention(layer, head), true, "gpt2");
      EXPECT_FALSE(s->modelHead->rotary);
      EXPECT_TRUE(contains(stageDescription(MatrixKind::Q, *s), "the model's queries of this head"));
    }
  // An edit that makes the rows another sequence (a query more) ends the model's head: the
  // captions say what the scenario is then.
  Scenario edited = headScenario(run, 0, 0, "tiny").value();
  edited.queries.conservativeResize(edited.queries.rows() + 1, Eigen::NoChange);
  edited.queries.bottomRows(1).setZero();
  EXPECT_EQ(shownModelHead(edited), nullptr);
  EXPECT_EQ(inputsHeader(edited).rfind("Cross-attention: queries come from one sequence", 0), 0u);
  // a head outside the model
  Expected<Scenario> outside = headScenario(run, 0, 2, "tiny");
  ASSERT_FALSE(outside.ok());
  EXPECT_EQ(outside.error().message(), "field 'head': head 2 is out of range (the model has 2 heads a layer)");
}

TEST(HeadScenario, AnEncoderHeadSaysWhatItIs) {
  AppState state;
  enctest::Spec spec;
  const fs::path dir = enctest::writeFolder("head_scenario_bert", spec, enctest::makeTensors(spec, 12));
  attn::testing::loadModel(state, dir, "the [MASK] sat on the mat.");
  const ModelRun& run = *state.model.run;
  ASSERT_TRUE(run.encoder);
  for (int layer = 0; layer < spec.layers; ++layer)
    for (int head = 0; head < spec.heads; ++head) {
      Expected<Scenario> s = headScenario(run, layer, head, "bert");
      ASSERT_TRUE(s.ok()) << s.error().message();
      expectTrueCaptions(*s, layer, head, run.labels, run.attention->copyHead(layer, head), false, "bert");
      EXPECT_EQ(s->options.mask.kind, MaskKind::None);
      EXPECT_EQ(s->queries.cols(), spec.hidden / spec.heads);
    }
}

TEST(HeadScenario, AVisionHeadSaysWhatItIs) {
  AppState state;
  const vittest::Spec spec;
  const fs::path dir = vittest::writeFolder("head_scenario_vit", spec, vittest::makeTensors(spec, 6));
  ASSERT_TRUE(openImage(state.image, attn::testing::writeRampPicture(dir).string()).ok());
  ImageModelState& m = state.image.model;
  m.loadRequest = dir.string();
  ASSERT_TRUE(updateImageModel(m, state.image.image, state.image.imageId, false).ok());
  ASSERT_TRUE(m.shown && m.shown->run);
  const HeadRun heads = headsOf(*m.shown);
  ASSERT_EQ(heads.labels.size(), 17u);  // [CLS] and 4 x 4 patches
  EXPECT_EQ(heads.labels[0], "[CLS]");
  EXPECT_EQ(heads.labels[16], "3,3");
  for (int layer = 0; layer < spec.layers; ++layer)
    for (int head = 0; head < spec.heads; ++head) {
      Expected<Scenario> s = headScenario(heads, layer, head, "vit");
      ASSERT_TRUE(s.ok()) << s.error().message();
      expectTrueCaptions(*s, layer, head, heads.labels, m.shown->run->attentionMatrix(layer, head), false, "vit");
    }
}

// gemma2: its score scale (query_pre_attn_scalar^-½) and each layer's sliding window are
// kept; its soft-capped scores cannot be, and are refused by name.
TEST(HeadScenario, WhatAScenarioCannotReproduceIsRefusedByName) {
  const std::vector<int> ids = {3, 1, 4, 1, 5, 9, 2, 6};
  auto runOf = [&](const model::Config& config) {
    auto weights = std::make_shared<const model::Weights>(model::randomWeights(config, 11));
    auto session = std::make_shared<model::DecoderRun>(weights);
    EXPECT_TRUE(session->setTokens(ids).ok());
    HeadRun heads;
    heads.decoder = session;
    heads.modelType = config.modelType;
    heads.labels.assign(ids.size(), "t");
    return heads;
  };
  const HeadRun capped = runOf(attn::testing::smallFamily(3));
  Expected<Scenario> refused = headScenario(capped, 0, 0, "g");
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(contains(refused.error().message(), "field 'head': gemma2 soft-caps its scores")) << refused.error().message();
  EXPECT_TRUE(contains(refused.error().message(), "its weights would not be the model's"));
  const HeadRun scaled = runOf(attn::testing::smallFamily(3, {.attnSoftcap = 0, .queryScale = 0.3f}));
  for (int layer : {0, 1}) {  // layer 1: a sliding window of 3
    Expected<Scenario> s = headScenario(scaled, layer, 1, "g");
    ASSERT_TRUE(s.ok()) << s.error().message();
    EXPECT_NE(s->options.temperature, 1.0f);
    Expected<AttentionResult> result = compute(*s);
    ASSERT_TRUE(result.ok()) << result.error().message();
    EXPECT_TRUE(result->heads[0].weights.isApprox(scaled.decoder->attention(layer, 1), 1e-4f)) << layer;
  }
  // a long input's run keeps no q, k and v
  ModelRun longRun;
  longRun.longInput = true;
  Expected<Scenario> summary = headScenario(longRun, 0, 0, "m");
  ASSERT_FALSE(summary.ok());
  EXPECT_TRUE(contains(summary.error().message(), "a long input is shown as its summary")) << summary.error().message();
}

// model_head survives a save and a load, and a file whose rows disagree with it is refused.
TEST(HeadScenario, TheFileKeepsModelHead) {
  AppState state;
  attn::testing::TinyGpt2Folder folder;
  folder.write("head_scenario_file", attn::testing::serviceGpt2Config(), 5);
  attn::testing::loadModel(state, folder.dir, "the cat sat");
  const Scenario s = headScenario(*state.model.run, 1, 0, "tiny").value();
  const std::string text = io::scenarioToJson(s);
  Expected<Scenario> back = io::parseScenario(text, "head.json");
  ASSERT_TRUE(back.ok()) << back.error().message();
  ASSERT_TRUE(back->modelHead);
  EXPECT_EQ(*back->modelHead, *s.modelHead);
  EXPECT_EQ(inputsHeader(*back), inputsHeader(s));
  nlohmann::json bad = nlohmann::json::parse(text);
  bad["model_head"]["tokens"] = 2;
  Expected<Scenario> refused = io::parseScenario(bad.dump(), "head.json");
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(contains(refused.error().message(), "field 'model_head.tokens': 2 tokens, but the file has"))
      << refused.error().message();
}

}  // namespace
}  // namespace test_session_head_scenario
