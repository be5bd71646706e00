// The compute worker (app/session/compute_service.h): same numbers as the synchronous path, latest
// request wins, the UI never waits, and the previous result stays on screen meanwhile.
#include <gtest/gtest.h>

#include <filesystem>

#include "app/session/compute_service.h"
#include "formats/scenario_json.h"
#include "tests/support/test_paths.h"

namespace test_session_compute {
namespace {

namespace fs = std::filesystem;
using namespace attn;
using namespace attn::app;

Scenario preset(const std::string& stem) {
  Expected<Scenario> scenario =
      io::loadScenario((fs::path(attn::testing::assetDir()) / "scenarios" / (stem + ".json")).string());
  EXPECT_TRUE(scenario.ok());
  return scenario.ok() ? scenario.value() : Scenario{};
}

// A self-attention scenario big enough that one compute takes a noticeable time.
Scenario bigScenario(int n, int d, int heads) {
  Scenario s;
  s.mode = Mode::Self;
  s.inputs = Matrix::Zero(n, d);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < d; ++j) s.inputs(i, j) = static_cast<float>(((i * 31 + j * 17) % 23) - 11) / 7.f;
  s.options.score = ScoreKind::ScaledDot;
  s.options.heads = heads;
  return s;
}

TEST(ComputeDocument, MatchesTheCoreComputeBitForBit) {
  const Scenario s = preset("decoder_state");
  std::shared_ptr<Computed> computed = computeDocument(s, 7, nullptr);
  ASSERT_TRUE(computed->error.empty()) << computed->error;
  EXPECT_EQ(computed->revision, 7u);
  Expected<AttentionResult> direct = compute(s);
  ASSERT_TRUE(direct.ok());
  ASSERT_TRUE(computed->result.has_value());
  EXPECT_EQ(computed->result->heads[0].weights, direct->heads[0].weights);
  EXPECT_EQ(computed->result->output, direct->output);
  // Decoder-state weights, as in the notebook.
  EXPECT_NEAR(computed->result->heads[0].weights(0, 0), 0.11920292f, 1e-7f);
  EXPECT_NEAR(computed->result->heads[0].weights(0, 3), 0.880797f, 1e-6f);
}

TEST(ComputeDocument, ReusesARecycledResultsBuffers) {
  const Scenario s = bigScenario(64, 16, 2);
  std::shared_ptr<Computed> first = computeDocument(s, 1, nullptr);
  const float* buffer = first->result->heads[0].weights.data();
  std::shared_ptr<Computed> second = computeDocument(s, 2, std::move(first));
  EXPECT_EQ(second->result->heads[0].weights.data(), buffer);  // same storage, no realloc
  EXPECT_EQ(second->revision, 2u);
}

TEST(ComputeDocument, PreparesTheViewsAskedForOnTheWorker) {
  const Scenario s = bigScenario(96, 16, 2);
  const std::vector<ViewKey> keys = {{MatrixKind::Scores, 1},
                                     {MatrixKind::MaskedScores, 0},
                                     {MatrixKind::Scores, -1},
                                     {MatrixKind::Weights, 1},
                                     {MatrixKind::Scores, 5}};  // no head 5: skipped
  std::shared_ptr<Computed> computed = computeDocument(s, 4, nullptr, keys);
  ASSERT_TRUE(computed->error.empty()) << computed->error;
  ASSERT_EQ(computed->views.size(), 4u);
  const AttentionResult& result = *computed->result;
  for (std::size_t i = 0; i < 4; ++i) {
    const PreparedView& prepared = computed->views[i];
    EXPECT_EQ(prepared.key.kind, keys[i].kind);
    EXPECT_EQ(prepared.key.head, keys[i].head);
    // The same values, labels and title as the UI thread's own selection.
    Expected<SelectedMatrix> direct =
        selectMatrixRef(result, *computed->problem, keys[i].kind, keys[i].head);
    ASSERT_TRUE(direct.ok());
    EXPECT_EQ(prepared.view.title, direct->title);
    EXPECT_EQ(prepared.view.rowLabels, direct->rowLabels);
    const auto a = prepared.view.values(), b = direct->values();
    ASSERT_EQ(a.rows, b.rows);
    ASSERT_EQ(a.cols, b.cols);
    EXPECT_EQ(Matrix(a.map()), Matrix(b.map())) << i;
  }
  // Head 1's scores are the recomputed ones (bit for bit what was normalised).
  const Matrix scores = headScores(result, 1);
  EXPECT_EQ(computed->views[0].view.values()(3, 7), scores(3, 7));
  // A recompute clears the views it does not get asked for again.
  std::shared_ptr<Computed> again = computeDocument(s, 5, std::move(computed));
  EXPECT_TRUE(again->views.empty());
}

TEST(ComputeDocument, AnErrorIsAValueNotAThrow) {
  Scenario s = preset("decoder_state");
  s.options.heads = 2;  // width 3 is not divisible by 2
  std::shared_ptr<Computed> computed = computeDocument(s, 3, nullptr);
  EXPECT_FALSE(computed->error.empty());
  EXPECT_FALSE(computed->result.has_value());
  EXPECT_NE(computed->error.find("heads"), std::string::npos) << computed->error;
}

TEST(ComputeService, ComputesWhatWasSubmitted) {
  ComputeService service;
  service.submit(std::make_shared<const Scenario>(preset("decoder_state")), 5);
  service.waitIdle();
  EXPECT_FALSE(service.busy());
  std::shared_ptr<const Computed> result = service.take();
  ASSERT_TRUE(result);
  EXPECT_EQ(result->revision, 5u);
  EXPECT_NEAR(headScores(*result->result, 0)(0, 0), 927.f, 1e-3f);
  EXPECT_FALSE(service.take());  // taken once
}

TEST(ComputeService, LatestRequestWinsAndStaleOnesAreDropped) {
  ComputeService service;
  // A slow request first, so that the next ones queue up behind it.
  service.submit(std::make_shared<const Scenario>(bigScenario(768, 64, 8)), 1);
  for (std::uint64_t revision = 2; revision <= 40; ++revision) {
    Scenario s = preset("decoder_state");
    s.keys(0, 0) = static_cast<float>(revision);
    service.submit(std::make_shared<const Scenario>(std::move(s)), revision);
  }
  service.waitIdle();
  std::shared_ptr<const Computed> result = service.take();
  ASSERT_TRUE(result);
  EXPECT_EQ(result->revision, 40u);
  // Key 0 = [40, 12, 45]: score of [5, 1, 20] is 200 + 12 + 900.
  EXPECT_NEAR(headScores(*result->result, 0)(0, 0), 1112.f, 1e-3f);
  // 40 requests, but the ones queued behind the slow first one (or behind each other, when
  // the worker had not even started yet) replaced each other.
  EXPECT_LT(service.completed(), 40u);
  EXPECT_GE(service.completed(), 1u);
}

TEST(UpdateAsync, NeverWaitsAndKeepsThePreviousResultWhileComputing) {
  ComputeService service;
  AppState state;
  loadDocument(state, bigScenario(512, 64, 8), "");
  ASSERT_TRUE(state.computing());
  updateAsync(state, service);  // submits; the result cannot be there yet in most runs
  service.waitIdle();
  EXPECT_TRUE(updateAsync(state, service));
  EXPECT_FALSE(state.computing());
  ASSERT_TRUE(state.computed->result.has_value());
  const std::uint64_t shownRevision = state.computed->revision;

  // An edit: the document moves on, the old result stays on screen until the new one lands.
  state.doc.inputs(0, 0) += 1.f;
  touch(state);
  EXPECT_TRUE(state.computing());
  updateAsync(state, service);
  EXPECT_TRUE(state.computed->result.has_value());  // still the previous result
  EXPECT_EQ(state.computed->revision, shownRevision);
  service.waitIdle();
  EXPECT_TRUE(updateAsync(state, service));
  EXPECT_EQ(state.computed->revision, state.revision);
  EXPECT_FALSE(state.computing());

  // The async result equals the synchronous one.
  AppState sync;
  loadDocument(sync, state.doc, "");
  update(sync);
  EXPECT_EQ(sync.computed->result->heads[3].weights, state.computed->result->heads[3].weights);
}

TEST(UpdateAsync, AsksTheWorkerForTheViewsOnScreen) {
  ComputeService service;
  AppState state;
  loadDocument(state, bigScenario(64, 16, 4), "");
  // What the panels show (the window passes panel::viewsOnScreen; the service reads no
  // panel state). A result this small can come back inside the submitting call (when the
  // UI thread is descheduled right after the submit), so the test settles rather than
  // counting calls.
  std::vector<ViewKey> onScreen;
  const auto settle = [&] {
    updateAsync(state, service, onScreen);
    service.waitIdle();
    updateAsync(state, service, onScreen);
    ASSERT_EQ(state.computed->revision, state.revision);
  };
  settle();
  EXPECT_TRUE(state.computed->views.empty());
  onScreen = {{MatrixKind::Scores, 2}, {MatrixKind::Weights, -1}};
  state.doc.inputs(0, 0) += 1.f;
  touch(state);
  settle();
  ASSERT_EQ(state.computed->views.size(), 2u);
  EXPECT_EQ(state.computed->views[0].key.kind, MatrixKind::Scores);
  EXPECT_EQ(state.computed->views[0].key.head, 2);
  EXPECT_EQ(state.computed->views[1].key.head, -1);
  const Matrix scores = headScores(*state.computed->result, 2);
  EXPECT_EQ(state.computed->views[0].view.values().copy(), scores);
}

TEST(UpdateAsync, FocusedHeadIsClampedWhenTheResultArrives) {
  ComputeService service;
  AppState state;
  loadDocument(state, bigScenario(8, 8, 4), "");
  state.view.focusedHead = 3;
  updateAsync(state, service);
  service.waitIdle();
  updateAsync(state, service);
  EXPECT_EQ(state.view.focusedHead, 3);
  state.doc.options.heads = 2;
  touch(state);
  updateAsync(state, service);
  service.waitIdle();
  updateAsync(state, service);
  EXPECT_EQ(state.view.focusedHead, 0);
}

}  // namespace
}  // namespace test_session_compute

namespace test_session_compute {
namespace {

TEST(SharedScenario, RestoreGivesBackTheDocumentAndLeavesTheSourceIntact) {
  Scenario s = preset("bahdanau_additive");
  s.options.mask.kind = MaskKind::Custom;
  s.options.mask.custom = BoolMatrix::Constant(s.queries.rows(), s.keys.rows(), true);
  s.options.mask.custom(0, 1) = false;
  s.options.projections.wq = Matrix::Identity(3, 3);
  s.options.projections.bq = Vector::Constant(3, 0.5f);
  const Scenario before = s;
  SharedScenario snapshot = SharedScenario::share(s, nullptr);
  EXPECT_EQ(s.queries, before.queries);  // moved out and back
  EXPECT_EQ(s.keys, before.keys);
  EXPECT_EQ(s.options.mask.custom, before.options.mask.custom);
  const Scenario restored = snapshot.restore();
  EXPECT_EQ(restored.queries, before.queries);
  EXPECT_EQ(restored.keys, before.keys);
  EXPECT_EQ(restored.options.mask.custom, before.options.mask.custom);
  EXPECT_EQ(restored.options.projections.wq, before.options.projections.wq);
  EXPECT_EQ(restored.options.projections.bq, before.options.projections.bq);
  EXPECT_EQ(restored.options.score, before.options.score);
  EXPECT_EQ(restored.name, before.name);
  EXPECT_EQ(restored.queryLabels, before.queryLabels);
}

TEST(SharedScenario, UndoStepsShareEveryUnchangedMatrix) {
  AppState state;
  loadDocument(state, bigScenario(2048, 64, 8), "");
  // 50 temperature edits: the 2048 x 64 inputs must exist once in the whole history.
  for (int i = 0; i < 50; ++i) {
    applyEdit(state, setTemperature(state.doc, 1.0f + 0.01f * static_cast<float>(i + 1)), 0);
    endFrame(state, false);
  }
  ASSERT_EQ(state.history.undo.size(), 50u);
  const void* inputs = state.history.committed.matrixIdentity(0);
  for (const Snapshot& step : state.history.undo) EXPECT_EQ(step.doc.matrixIdentity(0), inputs);
  // A cell edit of the inputs gives that step its own inputs; the next temperature edit
  // shares it again.
  applyEdit(state, setValue(state.doc, Sequence::Inputs, 3, 3, 9.f), 0);
  endFrame(state, false);
  EXPECT_NE(state.history.committed.matrixIdentity(0), inputs);
  const void* edited = state.history.committed.matrixIdentity(0);
  applyEdit(state, setTemperature(state.doc, 5.f), 0);
  endFrame(state, false);
  EXPECT_EQ(state.history.committed.matrixIdentity(0), edited);
  // Undo all the way back gives the original values.
  while (undo(state)) {
  }
  EXPECT_EQ(state.doc.options.temperature, 1.f);
  EXPECT_EQ(state.doc.inputs, bigScenario(2048, 64, 8).inputs);
  while (redo(state)) {
  }
  EXPECT_EQ(state.doc.options.temperature, 5.f);
  EXPECT_EQ(state.doc.inputs(3, 3), 9.f);
}

}  // namespace
}  // namespace test_session_compute
