// The model tests' session fixtures, one home for the set-up that tests/session (the services
// without a window) and tests/ui (the same runs drawn by the panels) share:
//   - TinyGpt2Folder / TinyGpt2Fixture: a tiny random GPT-2 folder (tests/support/gpt2_fixture.h)
//     written once per test, loaded synchronously (loadModel) or through the service
//     (settleModel);
//   - FamilyFixture: one family's random checkpoint with a byte-level tokenizer.json
//     (tests/support/model_fixture.h), run synchronously, its heads and their pipeline
//     scenarios checked against the plain-loop reference (expectHeadsAndPipeline);
//   - writeRampPicture: the 50 x 37 picture the ViT tests (tests/support/vit_fixture.h) run.
// The ui fixtures build on these beside testui::HeadlessImGui (tests/support/ui_headless.h).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "app/session/app_state.h"
#include "app/session/head_scenario.h"
#include "app/session/model_service.h"
#include "app/session/pipeline_steps.h"
#include "core/scenario/scenario.h"
#include "formats/files.h"
#include "formats/image.h"
#include "tests/support/gpt2_fixture.h"
#include "tests/support/model_fixture.h"

namespace attn::testing {

namespace fs = std::filesystem;

// The name of the running test (one folder per test: ctest runs a binary's tests in
// parallel processes).
inline std::string currentTestName() {
  return ::testing::UnitTest::GetInstance()->current_test_info()->name();
}

// ---------------------------------------------------------------------------------------
// A tiny GPT-2 folder
// ---------------------------------------------------------------------------------------

// The model service's tests: 3 layers, 2 heads of 4 dimensions, 32 positions.
inline gpt2test::TinyConfig serviceGpt2Config() {
  gpt2test::TinyConfig config;
  config.nLayer = 3;
  config.nHead = 2;
  config.nPositions = 32;
  return config;
}

// The analyses' tests: 3 layers, 4 heads of 4 dimensions (16 wide), `positions` positions.
inline gpt2test::TinyConfig analysisGpt2Config(int positions = 32) {
  gpt2test::TinyConfig config;
  config.nLayer = 3;
  config.nHead = 4;
  config.nEmbd = 16;
  config.nPositions = positions;
  return config;
}

// A tiny random GPT-2 (the default vocabulary, F32 safetensors) in folder
// "<prefix>_<test name>", written by write().
struct TinyGpt2Folder {
  gpt2test::Vocabulary vocab;
  gpt2test::TinyModel model;
  std::string test;  // the running test's name
  fs::path dir;

  void write(const std::string& prefix, const gpt2test::TinyConfig& config, std::uint64_t seed) {
    vocab = gpt2test::defaultVocabulary();
    model = gpt2test::makeTinyModel(config, static_cast<int>(vocab.size()), seed);
    test = currentTestName();
    dir = gpt2test::writeModelFolder(prefix + "_" + test, model, vocab, "F32");
  }
};

// Types `text` into the Model panel's text (a new text revision).
inline void typeText(app::AppState& state, const std::string& text) {
  state.model.text = text;
  ++state.model.textRevision;
}

// Loads `folder` and runs `text` synchronously (as a screenshot does); fails the test when
// no model (decoder or encoder) or no run with attention came of it.
inline void loadModel(app::AppState& state, const fs::path& folder, const std::string& text) {
  state.model.loadRequest = folder.string();
  typeText(state, text);
  app::updateModel(state, 0);
  ASSERT_TRUE(state.model.model || state.model.encoder)
      << (state.notices.empty() ? "" : state.notices.back().text);
  ASSERT_TRUE(state.model.run && state.model.run->attention);
}

// Runs the window's model step with `service` (clock 1, 2, ... s) until nothing is left to
// do: no load asked for or running, no run computing, no patching running; then one more
// step at 30 s, past any debounce.
inline void settleModel(app::AppState& state, app::ModelService& service) {
  for (int i = 0; i < 20; ++i) {
    app::updateModelAsync(state, service, 1.0 + i);
    service.waitIdle();
    if (!service.busy() && state.model.loadRequest.empty() && state.model.loading.empty() &&
        !state.model.computing() && !state.model.analysis.patching.running())
      break;
  }
  app::updateModelAsync(state, service, 30.0);
}

// Token labels joined, with the screen's "·" back as spaces: the text again.
inline std::string joinedLabels(const std::vector<std::string>& labels) {
  std::string all, out;
  for (const std::string& label : labels) all += label;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (all.compare(i, 2, "\xC2\xB7") == 0) {
      out.push_back(' ');
      ++i;
    } else {
      out.push_back(all[i]);
    }
  }
  return out;
}

// Every (layer, head, query, key) of `run` against the reference forward pass of `model` on
// the run's ids, within `tolerance`.
inline void expectMatchesReference(const gpt2test::TinyModel& model, const app::ModelRun& run,
                                   double tolerance) {
  ASSERT_TRUE(run.attention);
  const gpt2test::Reference ref = gpt2test::referenceForward(model, run.ids);
  const int n = static_cast<int>(run.ids.size());
  ASSERT_EQ(run.attention->shape().queries, n);
  ASSERT_EQ(run.attention->shape().keys, n);
  for (int l = 0; l < model.config.nLayer; ++l)
    for (int h = 0; h < model.config.nHead; ++h) {
      const Matrix a = run.attention->copyHead(l, h);
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j)
          ASSERT_NEAR(a(i, j), ref.attention[l][h][i][j], tolerance)
              << "layer " << l << " head " << h << " (" << i << ", " << j << ")";
    }
}

// The part of a model-service fixture that tests/session and tests/ui share: a test class
// derives from its gtest base (or testui::HeadlessImGui) and from this, and writes folder_
// in its SetUp().
class TinyGpt2Fixture {
 protected:
  static void settle(app::AppState& state, app::ModelService& service) {
    settleModel(state, service);
  }
  static std::string joined(const std::vector<std::string>& labels) { return joinedLabels(labels); }
  static void type(app::AppState& state, const std::string& text) { typeText(state, text); }
  // Every head of `run` against folder_'s reference within 1e-4.
  void expectMatchesReference(const app::ModelRun& run) const {
    attn::testing::expectMatchesReference(folder_.model, run, 1e-4);
  }
  // Loads folder_ and runs `text` synchronously (as a screenshot does); fails unless a
  // decoder model with a run and its decoder came of it.
  void load(app::AppState& state, const std::string& text) const {
    loadModel(state, folder_.dir, text);
    ASSERT_TRUE(state.model.model);
    ASSERT_TRUE(state.model.run && state.model.run->decoder);
  }
  static std::shared_ptr<const model::Weights> weights(const app::AppState& state) {
    return state.model.model->weights;
  }

  TinyGpt2Folder folder_;
  const gpt2test::TinyModel& model_ = folder_.model;
  const std::string& test_ = folder_.test;
  const fs::path& dir_ = folder_.dir;
};

// ---------------------------------------------------------------------------------------
// A family's checkpoint
// ---------------------------------------------------------------------------------------

// One family's random checkpoint (vocabulary 300, weights of seed 23) with a byte-level
// tokenizer.json, in folder "<prefix>_<test name>": the part of a family fixture that
// tests/session and tests/ui share (a test class derives from its gtest base and from this,
// naming its prefix).
class FamilyFixture {
 protected:
  explicit FamilyFixture(std::string prefix) : prefix_(std::move(prefix)) {}

  // Writes `spec`'s folder (`bos`: the tokenizer's post-processor adds a BOS) and runs
  // `text` synchronously in `state`; the run (null when none).
  std::shared_ptr<const app::ModelRun> run(modeltest::Spec spec, const std::string& text,
                                           bool bos, app::AppState& state) {
    spec.vocab = 300;
    tensors_ = modeltest::makeTensors(spec, 23);
    const fs::path dir = modeltest::writeFolder(prefix_ + "_" + currentTestName(), spec, tensors_);
    modeltest::writeByteLevelTokenizerJson(dir, bos);
    state.model.loadRequest = dir.string();
    typeText(state, text);
    app::updateModel(state, 0);
    return state.model.run;
  }

  // Every head of `run` against the reference, and the pipeline scenario of every head
  // (app::headScenario) computing the same weights, within 1e-4.
  void expectHeadsAndPipeline(const modeltest::Spec& spec, const app::ModelRun& run) const {
    constexpr double kTolerance = 1e-4;
    ASSERT_TRUE(run.attention && run.decoder);
    const modeltest::Reference ref = modeltest::referenceForward(spec, tensors_, run.ids);
    const int n = static_cast<int>(run.ids.size());
    for (int l = 0; l < spec.layers; ++l) {
      for (int h = 0; h < spec.heads; ++h) {
        const Matrix a = run.attention->copyHead(l, h);
        for (int i = 0; i < n; ++i)
          for (int j = 0; j < n; ++j)
            ASSERT_NEAR(a(i, j), ref.attention[l][h][i][j], kTolerance) << l << "/" << h;
        Expected<Scenario> scenario = app::headScenario(run, l, h, spec.modelType);
        ASSERT_TRUE(scenario.ok()) << scenario.error().message();
        EXPECT_EQ(scenario->queries.cols(), spec.headDim());
        Expected<AttentionResult> result = compute(*scenario);
        ASSERT_TRUE(result.ok()) << result.error().message();
        const Matrix& weights = result->heads[0].weights;
        for (int i = 0; i < n; ++i)
          for (int j = 0; j < n; ++j)
            ASSERT_NEAR(weights(i, j), ref.attention[l][h][i][j], kTolerance)
                << spec.modelType << " layer " << l << " head " << h << " (" << i << ", " << j
                << ")";
      }
    }
  }

  modeltest::Tensors tensors_;

 private:
  std::string prefix_;
};

// ---------------------------------------------------------------------------------------
// A picture for the ViT
// ---------------------------------------------------------------------------------------

// A 50 x 37 PNG of smooth colour ramps, dir/picture.png; its path.
inline fs::path writeRampPicture(const fs::path& dir) {
  io::Image image;
  image.width = 50;
  image.height = 37;
  for (int y = 0; y < image.height; ++y)
    for (int x = 0; x < image.width; ++x)
      image.rgb.insert(image.rgb.end(), {std::uint8_t(x * 5), std::uint8_t(200 - y * 4),
                                         std::uint8_t((x * y) % 256)});
  const fs::path path = dir / "picture.png";
  EXPECT_TRUE(io::writePng(image, path.string()).ok());
  return path;
}

}  // namespace attn::testing
