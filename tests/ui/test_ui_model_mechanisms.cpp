// Issue 30's "show" selector in the window (app/session/mechanism_service.h,
// app/ui/panels/panel_mechanism.cpp) on the tiny random GPT-2 of tests/support/gpt2_fixture.h
// (3 layers, 4 heads, width 16) and the tiny BERT of tests/support/encoder_fixture.h:
//   - each choice puts in the Attention panel exactly the array of the core function on a
//     fresh forward pass of the same tokens (norm-weighted, value zeroing, flow raw and
//     normalised) and of `attnscope model --mechanisms` on the same folder and text;
//   - the heatmap uploads the selected matrix, its title names the mechanism and its colour
//     range is the mechanism's (0..max for a norm, 0..1 for shares);
//   - a new text keeps the choice (the old mechanism stays until the new one lands, never
//     the weights under the mechanism's name); rollout is a choice of the same selector (the
//     selection's Kind::Rollout) and weights gives the head back; Ctrl+M's cycle order;
//   - the worker computes them off the UI thread and honours its cancel flag;
//   - an encoder's value zeroing and norm-weighted equal the CLI's arrays;
//   - on an attention file only weights and rollout apply.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <iostream>
#include <cmath>
#include <string>
#include <vector>

#include <imgui.h>

#include "app/session/app_state.h"
#include "app/session/attention_service.h"
#include "app/session/mechanism_service.h"
#include "app/session/model_service.h"
#include "app/ui/panels/panels.h"
#include "app/ui/shell/drawn_text.h"
#include "core/base/format.h"
#include "core/models/mechanisms.h"
#include "formats/npz.h"
#include "tests/support/cli_run.h"
#include "tests/support/encoder_fixture.h"
#include "tests/support/gpt2_fixture.h"
#include "tests/support/model_session.h"
#include "tests/support/test_files.h"
#include "tests/support/ui_headless.h"

namespace test_ui_model_mechanisms {
namespace {

namespace fs = std::filesystem;
using namespace attn;
using namespace attn::app;

constexpr const char* kText = "the cat sat on the mat, the cat";

// Every value of an attention tensor, [L, H, n_q, n_k] row-major.
std::vector<float> tensorValues(const io::AttentionFile& file) {
  std::vector<float> values;
  for (int l = 0; l < file.layers(); ++l)
    for (int h = 0; h < file.heads(); ++h) {
      const Matrix m = file.copyHead(l, h);
      values.insert(values.end(), m.data(), m.data() + m.size());
    }
  return values;
}

// max |a − b| relative to max |b| (1 when b is all 0).
double relativeError(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double error = 0, top = 0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    error = std::max(error, static_cast<double>(std::abs(a[i] - b[i])));
    top = std::max(top, static_cast<double>(std::abs(b[i])));
  }
  return error / (top > 0 ? top : 1.0);
}

// Array `name` of an .npz: values (and shape).
std::vector<float> npzArray(const fs::path& npz, const std::string& name, std::vector<std::int64_t>* shape = nullptr) {
  auto archive = io::NpzArchive::open(npz.string());
  EXPECT_TRUE(archive) << (archive ? "" : archive.error().message());
  if (!archive) return {};
  auto array = archive->read(name);
  EXPECT_TRUE(array) << (array ? "" : array.error().message());
  if (!array) return {};
  if (shape) *shape = array->header.shape;
  std::vector<float> values(array->header.elementCount);
  for (std::uint64_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(array->element(i));
  return values;
}

std::vector<std::int64_t> shapeOf(const io::AttentionFile& file) {
  const io::AttentionShape& s = file.shape();
  return {s.layers, s.heads, s.queries, s.keys};
}

class MechanismsInApp : public testui::HeadlessImGui, protected attn::testing::TinyGpt2Fixture {
 protected:
  void SetUp() override {
    HeadlessImGui::SetUp();
    folder_.write("ui_mechanisms", attn::testing::analysisGpt2Config(48), 21);
  }

  // The Model panel above the Attention panel, one frame.
  void frame(AppState& state) {
    showWhatServicesOpened(state);
    ImGui::NewFrame();
    place(0, 0, 1600, 420);
    drawModelPanel(state, ui_);
    place(0, 420, 1600, 580);
    drawAttentionPanel(state, ui_);
    ImGui::Render();
  }

  // The mechanism on screen, after the update steps.
  static std::shared_ptr<const io::AttentionFile> shown(AppState& state) {
    updateMechanism(state);
    updateAttention(state);
    return state.attention.tensor();
  }
};

// 1 every choice against the core on a fresh forward pass, and against the CLI's npz
TEST_F(MechanismsInApp, EachChoiceShowsTheCoreAndCliArraysOfTheSameRun) {
  AppState state;
  attn::testing::loadModel(state, dir_, kText);
  const std::shared_ptr<const ModelRun> run = state.model.run;
  const std::vector<int> ids = run->ids;
  const int n = static_cast<int>(ids.size());
  ASSERT_GT(n, 8);
  const std::shared_ptr<const model::Weights> weights = state.model.model->weights;
  Expected<model::DecoderRun> fresh = model::forward(weights, ids);
  ASSERT_TRUE(fresh);
  const std::vector<float> wantNorm = model::normWeightedAttention(*fresh);
  Expected<std::vector<float>> wantZero = model::valueZeroing(weights, ids);
  ASSERT_TRUE(wantZero);
  Expected<Matrix> flowRaw = model::attentionFlow(*fresh, false), flowNormalised = model::attentionFlow(*fresh, true);
  ASSERT_TRUE(flowRaw && flowNormalised);
  const std::vector<float> wantFlowRaw(flowRaw->data(), flowRaw->data() + flowRaw->size());
  const std::vector<float> wantFlowNormalised(flowNormalised->data(), flowNormalised->data() + flowNormalised->size());

  // The CLI on the same folder and text.
  const fs::path out = attn::testing::freshDir("ui_mechanisms_cli");
  const attn::testing::RunResult cli = attn::testing::runAttnscope(
      {"model", dir_.string(), "--text", kText, "--out", (out / "m.npz").string(), "--mechanisms", "norm,valuezero,flow"},
      out);
  ASSERT_EQ(cli.exitCode, 0) << cli.err;
  // the same tokens: the CLI's attention is the run's
  std::vector<std::int64_t> attentionShape;
  const std::vector<float> cliAttention = npzArray(out / "m.npz", "attention", &attentionShape);
  ASSERT_EQ(attentionShape, shapeOf(*run->attention));
  EXPECT_LE(relativeError(tensorValues(*run->attention), cliAttention), 1e-6);

  EXPECT_EQ(shownMechanism(state), Mechanism::Weights);
  // norm-weighted [L, H, n, n]
  EXPECT_TRUE(setMechanism(state, Mechanism::NormWeighted));
  std::shared_ptr<const io::AttentionFile> tensor = shown(state);
  ASSERT_TRUE(state.model.mechanism.result) ;
  ASSERT_TRUE(state.model.mechanism.result->error.empty()) << state.model.mechanism.result->error;
  ASSERT_NE(tensor, run->attention);
  EXPECT_EQ(shapeOf(*tensor), (std::vector<std::int64_t>{3, 4, n, n}));
  EXPECT_LE(relativeError(tensorValues(*tensor), wantNorm), 1e-6);
  EXPECT_LE(relativeError(tensorValues(*tensor), npzArray(out / "m.npz", "norm_weighted")), 1e-6);
  EXPECT_EQ(shownMechanism(state), Mechanism::NormWeighted);
  EXPECT_NE(state.attention.source->name.find("norm-weighted"), std::string::npos) << state.attention.source->name;
  EXPECT_FALSE(state.attention.source->quantity.probability);
  // value zeroing [L, 1, n, n]
  EXPECT_TRUE(setMechanism(state, Mechanism::ValueZeroing));
  tensor = shown(state);
  EXPECT_EQ(shapeOf(*tensor), (std::vector<std::int64_t>{3, 1, n, n}));
  EXPECT_LE(relativeError(tensorValues(*tensor), *wantZero), 1e-6);
  EXPECT_LE(relativeError(tensorValues(*tensor), npzArray(out / "m.npz", "value_zeroing")), 1e-6);
  EXPECT_TRUE(state.attention.source->quantity.probability);  // row shares
  // flow [1, 1, n, n], raw then normalised
  EXPECT_TRUE(setMechanism(state, Mechanism::Flow));
  tensor = shown(state);
  EXPECT_EQ(shapeOf(*tensor), (std::vector<std::int64_t>{1, 1, n, n}));
  EXPECT_LE(relativeError(tensorValues(*tensor), wantFlowRaw), 1e-6);
  EXPECT_LE(relativeError(tensorValues(*tensor), npzArray(out / "m.npz", "attention_flow")), 1e-6);
  EXPECT_FALSE(state.attention.source->quantity.probability);
  EXPECT_TRUE(setNormalizeFlow(state, true));
  tensor = shown(state);
  EXPECT_LE(relativeError(tensorValues(*tensor), wantFlowNormalised), 1e-6);
  EXPECT_TRUE(state.attention.source->quantity.probability);
  EXPECT_NE(state.attention.source->name.find("rows normalised"), std::string::npos);
  // back to the weights: the run's own tensor
  EXPECT_TRUE(setMechanism(state, Mechanism::Weights));
  EXPECT_EQ(shown(state), run->attention);
  EXPECT_TRUE(state.attention.source->quantity.probability);
  // the last result, for this run, is shown again at once, without the worker
  EXPECT_TRUE(setMechanism(state, Mechanism::Flow));
  EXPECT_EQ(state.attention.source, state.model.mechanism.result->source);
  EXPECT_LE(relativeError(tensorValues(*state.attention.tensor()), wantFlowNormalised), 1e-6);
  // an older one is computed again
  EXPECT_TRUE(setMechanism(state, Mechanism::ValueZeroing));
  EXPECT_EQ(shapeOf(*shown(state)), (std::vector<std::int64_t>{3, 1, n, n}));
}

// 2 the heatmap: the uploaded matrix, the title and the colour range of each quantity
TEST_F(MechanismsInApp, HeatmapNamesTheMechanismAndUsesItsRange) {
  AppState state;
  attn::testing::loadModel(state, dir_, kText);
  io::AttentionSelection head;
  head.kind = io::AttentionSelection::Kind::Head;
  head.layer = 1;
  head.head = 2;
  selectAttentionView(state.attention, head);
  ASSERT_TRUE(setMechanism(state, Mechanism::NormWeighted));
  shown(state);
  // the head picked on the weights stays picked on the norm-weighted tensor
  EXPECT_EQ(state.attention.selection.layer, 1);
  EXPECT_EQ(state.attention.selection.head, 2);
  ASSERT_TRUE(state.attention.shown && state.attention.shown->error.empty());
  const Matrix want = state.attention.tensor()->copyHead(1, 2);
  mock().uploads.clear();
  for (int i = 0; i < 3; ++i) frame(state);
  bool uploaded = false;
  for (const auto& upload : mock().uploads)
    uploaded |= upload.top.size() == static_cast<std::size_t>(want.size()) &&
                std::equal(upload.top.begin(), upload.top.end(), want.data());
  EXPECT_TRUE(uploaded) << "the norm-weighted head 1.2 was not uploaded as the heatmap";
  std::vector<DrawnText> texts = drawnTexts(*ImGui::GetDrawData(), *ImGui::GetIO().Fonts);
  const auto drawnWith = [&](const std::string& part) {
    return std::any_of(texts.begin(), texts.end(), [&](const DrawnText& t) { return t.text.find(part) != std::string::npos; });
  };
  // (the headless font atlas has no ‖ and – glyphs: drawnTexts reads them back as "?")
  EXPECT_TRUE(drawnWith("norm-weighted ?a\xC2\xB7" "f(x)? \xC2\xB7 layer 1 of 3 \xC2\xB7 head 2 of 4"));
  // a norm: the colour bar's line names it and its range 0..the matrix's largest value, not 1
  EXPECT_TRUE(drawnWith("norm-weighted ?a\xC2\xB7" "f(x)? \xC2\xB7 fixed 0?" + formatNumber(want.maxCoeff(), 3)))
      << formatNumber(want.maxCoeff(), 3);
  EXPECT_GT(want.maxCoeff(), 1.0f);  // (so that a 0..1 range would have clipped it)
  // value zeroing: the title names the layer, the range is the shares' 0..1
  ASSERT_TRUE(setMechanism(state, Mechanism::ValueZeroing));
  shown(state);
  for (int i = 0; i < 3; ++i) frame(state);
  texts = drawnTexts(*ImGui::GetDrawData(), *ImGui::GetIO().Fonts);
  EXPECT_TRUE(drawnWith("value zeroing \xC2\xB7 layer 1"));
  EXPECT_TRUE(drawnWith("value zeroing \xC2\xB7 fixed 0?1")) << "the shares' colour range";
  // the selector names the choice in both panels
  int named = 0;
  for (const DrawnText& t : texts) named += t.text == "value zeroing";
  EXPECT_GE(named, 2);
}

// 3 a new text keeps the choice and recomputes it; the weights never stand in for it
TEST_F(MechanismsInApp, NewTextKeepsTheChoiceAndRecomputes) {
  AppState state;
  attn::testing::loadModel(state, dir_, kText);
  ASSERT_TRUE(setMechanism(state, Mechanism::Flow));
  const std::shared_ptr<const io::AttentionFile> before = shown(state);
  state.model.text = "the dog sat";
  ++state.model.textRevision;
  updateModel(state, 1);
  const std::shared_ptr<const ModelRun> run = state.model.run;
  ASSERT_TRUE(run && run->attention);
  // the new run is in, its weights are not shown under the flow's name
  EXPECT_EQ(state.attention.tensor(), before);
  EXPECT_NE(state.attention.tensor(), run->attention);
  const std::shared_ptr<const io::AttentionFile> after = shown(state);
  EXPECT_EQ(state.model.mechanism.show, Mechanism::Flow);
  const int n = static_cast<int>(run->ids.size());
  EXPECT_EQ(shapeOf(*after), (std::vector<std::int64_t>{1, 1, n, n}));
  Expected<model::DecoderRun> fresh = model::forward(state.model.model->weights, run->ids);
  ASSERT_TRUE(fresh);
  Expected<Matrix> flow = model::attentionFlow(*fresh, false);
  ASSERT_TRUE(flow);
  EXPECT_LE(relativeError(tensorValues(*after), std::vector<float>(flow->data(), flow->data() + flow->size())), 1e-6);
}

// 4 rollout is a choice of "show": the weights' Kind::Rollout; weights gives the head back
TEST_F(MechanismsInApp, RolloutIsAChoiceOfTheSameSelector) {
  AppState state;
  attn::testing::loadModel(state, dir_, kText);
  const std::shared_ptr<const ModelRun> run = state.model.run;
  io::AttentionSelection head;
  head.kind = io::AttentionSelection::Kind::Head;
  head.layer = 2;
  head.head = 3;
  selectAttentionView(state.attention, head);
  ASSERT_TRUE(setMechanism(state, Mechanism::Rollout));
  EXPECT_EQ(state.attention.tensor(), run->attention);
  EXPECT_EQ(state.attention.selection.kind, io::AttentionSelection::Kind::Rollout);
  EXPECT_EQ(state.attention.selection.layer, 2);  // all three layers
  EXPECT_EQ(shownMechanism(state), Mechanism::Rollout);
  updateAttention(state);
  ASSERT_TRUE(state.attention.shown && state.attention.shown->error.empty());
  EXPECT_NE(state.attention.shown->selected.view.title.find("rollout"), std::string::npos);
  // from rollout to a mechanism and back to the weights: head 2.3 again
  ASSERT_TRUE(setMechanism(state, Mechanism::NormWeighted));
  shown(state);
  EXPECT_EQ(state.attention.selection.kind, io::AttentionSelection::Kind::Head);
  ASSERT_TRUE(setMechanism(state, Mechanism::Weights));
  EXPECT_EQ(state.attention.tensor(), run->attention);
  EXPECT_EQ(state.attention.selection.kind, io::AttentionSelection::Kind::Head);
  EXPECT_EQ(state.attention.selection.layer, 2);
  EXPECT_EQ(state.attention.selection.head, 3);
  // picking a head while rollout is chosen leaves rollout: the choice follows
  ASSERT_TRUE(setMechanism(state, Mechanism::Rollout));
  selectAttentionView(state.attention, head);
  updateMechanism(state);
  EXPECT_EQ(state.model.mechanism.show, Mechanism::Weights);
  // Ctrl+M / Ctrl+Shift+M: weights → norm-weighted → value zeroing → flow → rollout → weights
  const Mechanism order[] = {Mechanism::NormWeighted, Mechanism::ValueZeroing, Mechanism::Flow, Mechanism::Rollout,
                             Mechanism::Weights};
  for (Mechanism next : order) {
    EXPECT_TRUE(cycleMechanism(state, 1));
    EXPECT_EQ(state.model.mechanism.show, next);
    shown(state);
  }
  EXPECT_TRUE(cycleMechanism(state, -1));
  EXPECT_EQ(state.model.mechanism.show, Mechanism::Rollout);
}

// 5 the worker: computed off the UI thread, the same array; its cancel flag stops value zeroing
TEST_F(MechanismsInApp, WorkerComputesAndCancels) {
  AppState state;
  attn::testing::loadModel(state, dir_, kText);
  MechanismService service;
  ASSERT_TRUE(setMechanism(state, Mechanism::ValueZeroing));
  for (int i = 0; i < 50 && (!state.model.mechanism.result || state.attention.source != state.model.mechanism.result->source); ++i) {
    updateMechanismAsync(state, service);
    service.waitIdle();
  }
  ASSERT_TRUE(state.model.mechanism.result && state.model.mechanism.result->source);
  EXPECT_EQ(state.attention.source, state.model.mechanism.result->source);
  Expected<std::vector<float>> want = model::valueZeroing(state.model.model->weights, state.model.run->ids);
  ASSERT_TRUE(want);
  EXPECT_LE(relativeError(tensorValues(*state.attention.tensor()), *want), 1e-6);
  EXPECT_FALSE(service.busy());
  // cancelled before the first re-run: an error naming it, nothing shown
  std::atomic<bool> cancel{true};
  int calls = 0;
  const std::shared_ptr<const MechanismResult> stopped = computeMechanism(
      {Mechanism::ValueZeroing, false, state.model.run, state.model.model, nullptr},
      [&](int, int) { ++calls; }, &cancel);
  EXPECT_FALSE(stopped->source);
  EXPECT_NE(stopped->error.find("stopped"), std::string::npos) << stopped->error;
  EXPECT_EQ(calls, 0);
  // an error of the current choice is kept for the selector's line; the view stays
  const SourcePtr before = state.attention.source;
  EXPECT_TRUE(publishMechanism(state, stopped));
  EXPECT_EQ(state.attention.source, before);
  EXPECT_EQ(state.model.mechanism.result, stopped);
}

// 6 an encoder: value zeroing and norm-weighted equal the CLI's arrays
TEST_F(MechanismsInApp, EncoderMechanismsEqualTheCli) {
  const fs::path bert = enctest::writeFolder("ui_mechanisms_bert", enctest::Spec{}, enctest::makeTensors(enctest::Spec{}, 12));
  const std::string text = "the cat sat on the mat.";
  AppState state;
  attn::testing::loadModel(state, bert, text);
  ASSERT_TRUE(state.model.encoder);
  const int n = static_cast<int>(state.model.run->ids.size());
  const fs::path out = attn::testing::freshDir("ui_mechanisms_bert_cli");
  const attn::testing::RunResult cli = attn::testing::runAttnscope(
      {"model", bert.string(), "--text", text, "--out", (out / "m.npz").string(), "--mechanisms", "norm,valuezero,flow"},
      out);
  ASSERT_EQ(cli.exitCode, 0) << cli.err;
  ASSERT_TRUE(setMechanism(state, Mechanism::ValueZeroing));
  std::shared_ptr<const io::AttentionFile> tensor = shown(state);
  ASSERT_TRUE(state.model.mechanism.result->error.empty()) << state.model.mechanism.result->error;
  EXPECT_EQ(shapeOf(*tensor), (std::vector<std::int64_t>{2, 1, n, n}));
  const std::vector<float> zero = tensorValues(*tensor);
  EXPECT_LE(relativeError(zero, npzArray(out / "m.npz", "value_zeroing")), 1e-6);
  // bidirectional: a row has weight on keys after the query too, and sums to 1
  double later = 0;
  for (int i = 0; i < n; ++i) {
    double sum = 0;
    for (int j = 0; j < n; ++j) {
      sum += zero[static_cast<std::size_t>(i * n + j)];
      if (j > i) later += zero[static_cast<std::size_t>(i * n + j)];
    }
    EXPECT_NEAR(sum, 1.0, 1e-5) << "row " << i;
  }
  EXPECT_GT(later, 0.1);
  ASSERT_TRUE(setMechanism(state, Mechanism::NormWeighted));
  tensor = shown(state);
  EXPECT_EQ(shapeOf(*tensor), (std::vector<std::int64_t>{2, 4, n, n}));
  EXPECT_LE(relativeError(tensorValues(*tensor), npzArray(out / "m.npz", "norm_weighted")), 1e-6);
  ASSERT_TRUE(setMechanism(state, Mechanism::Flow));
  tensor = shown(state);
  EXPECT_LE(relativeError(tensorValues(*tensor), npzArray(out / "m.npz", "attention_flow")), 1e-6);
}

// 7 an attention file: only weights and rollout apply
TEST_F(MechanismsInApp, FileSourcesOfferWeightsAndRolloutOnly) {
  AppState state;
  io::AttentionShape shape{2, 2, 3, 3};
  std::vector<float> values(2 * 2 * 3 * 3, 1.0f / 3.0f);
  Expected<io::AttentionFile> file = io::AttentionFile::fromMemory("uniform.npy", values, shape, {"a", "b", "c"}, "test");
  ASSERT_TRUE(file);
  auto source = std::make_shared<AttentionSource>();
  source->name = "uniform.npy";
  source->tensor = std::make_shared<const io::AttentionFile>(std::move(file).value());
  showSource(state.attention, source, KeepView::Nothing);
  EXPECT_FALSE(showsModelRun(state));
  EXPECT_FALSE(setMechanism(state, Mechanism::NormWeighted));
  EXPECT_FALSE(setMechanism(state, Mechanism::Flow));
  EXPECT_EQ(state.attention.source, source);
  EXPECT_TRUE(setMechanism(state, Mechanism::Rollout));
  EXPECT_EQ(state.attention.selection.kind, io::AttentionSelection::Kind::Rollout);
  EXPECT_EQ(shownMechanism(state), Mechanism::Rollout);
  EXPECT_TRUE(cycleMechanism(state, 1));  // rollout → weights (the only two)
  EXPECT_EQ(shownMechanism(state), Mechanism::Weights);
  EXPECT_EQ(state.attention.selection.kind, io::AttentionSelection::Kind::Head);
  for (int i = 0; i < 2; ++i) frame(state);  // the selector draws with the computed three disabled
}

}  // namespace
}  // namespace test_ui_model_mechanisms
