// The session's seams: an edited cell reaching the state through the latest-wins compute
// worker with no panel scratch read by the service; opening a multi-array .npz reading the
// archive once; the one path classifier; the attention sources and their one reset.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "app/session/attention_service.h"
#include "app/session/attention_source.h"
#include "app/session/compute_service.h"
#include "app/session/latest_worker.h"
#include "formats/npz.h"
#include "tests/support/attention_test_files.h"

namespace test_session_sources {
namespace {

using namespace attn;
using namespace attn::app;
namespace fs = std::filesystem;
namespace tf = attn::testfiles;

// A self-attention scenario of n tokens, d wide, H heads, with fixed values.
Scenario smallScenario(int n, int d, int heads) {
  Scenario s;
  s.mode = Mode::Self;
  s.inputs = Matrix::Zero(n, d);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < d; ++j) s.inputs(i, j) = static_cast<float>(((i * 7 + j * 3) % 11) - 5) / 4.f;
  s.options.score = ScoreKind::ScaledDot;
  s.options.heads = heads;
  return s;
}

// Polls the window's step until the result of the current revision is on screen (at most
// 30 s), like the frames of the window do.
void settle(AppState& state, ComputeService& service, const std::vector<ViewKey>& views) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (state.computed->revision != state.revision &&
         std::chrono::steady_clock::now() < deadline) {
    updateAsync(state, service, views);
    service.waitIdle();
  }
  updateAsync(state, service, views);
}

// =======================================================================================
// Edit a cell -> the state, with the views the caller asked for (the session holds no panel
// scratch a service could read: the panels' own state is app/ui's UiState)
// =======================================================================================

TEST(EditFlow, AnEditedCellReachesTheStateWithTheViewsTheCallerAsked) {
  ComputeService service;
  AppState state;
  loadDocument(state, smallScenario(6, 8, 2), "");
  const std::vector<ViewKey> onScreen = {{MatrixKind::Weights, 1}};
  settle(state, service, onScreen);
  ASSERT_EQ(state.computed->revision, state.revision);

  // 1 the edit: one cell, committed the way panels commit edits
  const std::uint64_t before = state.revision;
  applyEdit(state, setValue(state.doc, Sequence::Inputs, 2, 3, 9.5f), 1.0);
  ASSERT_EQ(state.revision, before + 1);
  ASSERT_FLOAT_EQ(state.doc.inputs(2, 3), 9.5f);
  // 2 the worker computes it and the step publishes it
  settle(state, service, onScreen);
  ASSERT_EQ(state.computed->revision, state.revision);
  ASSERT_TRUE(state.computed->error.empty()) << state.computed->error;

  // The result is the edited document's, bit for bit (the synchronous path).
  AppState sync;
  loadDocument(sync, state.doc, "");
  ASSERT_TRUE(update(sync));
  for (int h = 0; h < 2; ++h)
    EXPECT_EQ(state.computed->result->heads[h].weights, sync.computed->result->heads[h].weights);
  // Exactly the views the caller passed were prepared.
  ASSERT_EQ(state.computed->views.size(), 1u);
  EXPECT_EQ(state.computed->views[0].key.kind, MatrixKind::Weights);
  EXPECT_EQ(state.computed->views[0].key.head, 1);
  EXPECT_EQ(state.computed->views[0].view.values().copy(),
            sync.computed->result->heads[1].weights);
  // The edit reached the result: column 3 lies in head 0's slice of the 8 dimensions (2
  // heads x 4, identity projection), so head 0's row for token 2 changed and head 1 did not.
  AppState old;
  loadDocument(old, smallScenario(6, 8, 2), "");
  update(old);
  EXPECT_NE(state.computed->result->heads[0].weights.row(2),
            old.computed->result->heads[0].weights.row(2));
  EXPECT_EQ(state.computed->result->heads[1].weights, old.computed->result->heads[1].weights);
}

// =======================================================================================
// The latest-wins worker
// =======================================================================================

TEST(LatestWorker, AQueuedJobIsReplacedAndTheRunningOneIsAskedToStop) {
  LatestWorker worker;
  std::atomic<bool> started{false}, sawCancel{false};
  std::atomic<int> ran{0}, lastValue{0};
  worker.submit([&](const std::atomic<bool>& cancel) {
    started = true;
    while (!cancel) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    sawCancel = true;
  });
  while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  // Two submits while the first runs: the first of them is replaced before it starts.
  for (int value : {1, 2}) {
    worker.submit([&, value](const std::atomic<bool>&) {
      ++ran;
      lastValue = value;
    });
  }
  worker.waitIdle();
  EXPECT_TRUE(sawCancel);
  EXPECT_EQ(ran, 1);
  EXPECT_EQ(lastValue, 2);
  EXPECT_EQ(worker.completed(), 2u);  // the cancelled first job and the last one
  EXPECT_FALSE(worker.busy());
}

TEST(LatestWorker, ADebouncedJobWaitsForItsTime) {
  LatestWorker worker;
  const auto start = LatestWorker::Clock::now();
  std::atomic<long long> waitedMs{-1};
  worker.submit(
      [&](const std::atomic<bool>&) {
        waitedMs = std::chrono::duration_cast<std::chrono::milliseconds>(
                       LatestWorker::Clock::now() - start)
                       .count();
      },
      start + std::chrono::milliseconds(80));
  EXPECT_TRUE(worker.busy());
  worker.waitIdle();
  EXPECT_GE(waitedMs, 80);
}

// =======================================================================================
// Opening an .npz with several arrays reads the archive once
// =======================================================================================

TEST(FileSource, AMultiArrayNpzIsOpenedOnce) {
  const fs::path dir = tf::freshDir("session_sources_npz");
  tf::NpySpec heads;
  heads.shape = {2, 4, 4};
  tf::NpySpec single;
  single.shape = {4, 4};
  const fs::path path = dir / "two.npz";
  tf::writeFile(path, tf::makeZip({{"a.npy", tf::npyBytes(heads, tf::attentionPattern())},
                                    {"b.npy", tf::npyBytes(single, tf::attentionPattern()), true}}));
  AppState state;
  // 1 no array named: the choice, from one open
  std::uint64_t opens = io::npzArchiveOpens();
  EXPECT_FALSE(openAttentionFile(state, path.string(), 0));
  EXPECT_EQ(io::npzArchiveOpens() - opens, 1u);
  ASSERT_EQ(state.attention.chooseArrays.size(), 2u);
  EXPECT_EQ(state.attention.chooseArrays[0].name, "a");
  // 2 one picked: opened once more, and shown
  opens = io::npzArchiveOpens();
  io::AttentionOpenOptions options;
  options.arrayName = "a";
  ASSERT_TRUE(openAttentionFile(state, path.string(), 0, options));
  EXPECT_EQ(io::npzArchiveOpens() - opens, 1u);
  ASSERT_TRUE(state.attention.source);
  EXPECT_EQ(state.attention.source->shape().heads, 2);
  EXPECT_EQ(state.attention.source->name, "two.npz");
  EXPECT_FLOAT_EQ(state.attention.tensor()->copyHead(0, 1)(3, 2),
                  static_cast<float>(tf::pattern(0, 1, 3, 2)));
  // The CLI's open still calls several arrays an error naming the field.
  Expected<io::AttentionFile> strict = io::AttentionFile::open(path.string());
  ASSERT_FALSE(strict);
  EXPECT_EQ(strict.error().field, "array");
}

// =======================================================================================
// The path classifier
// =======================================================================================

TEST(ClassifyPath, OneRuleForEveryFrontEnd) {
  EXPECT_EQ(classifyPath("run.npy"), PathKind::AttentionFile);
  EXPECT_EQ(classifyPath("/a/b/RUN.NPZ"), PathKind::AttentionFile);
  EXPECT_EQ(classifyPath("photo.JPG"), PathKind::Image);
  EXPECT_EQ(classifyPath("x.pgm"), PathKind::Image);
  EXPECT_EQ(classifyPath("scenario.json"), PathKind::Scenario);
  EXPECT_EQ(classifyPath("npy"), PathKind::Scenario);
  EXPECT_TRUE(isAttentionPath("a.npz"));
  EXPECT_TRUE(isImagePath("a.png"));
  EXPECT_FALSE(isImagePath("a.npz"));
}

// =======================================================================================
// Sources
// =======================================================================================

TEST(ScenarioSource, HoldsTheHeadsWithTheProblemsLabels) {
  AppState state;
  Scenario s;
  s.mode = Mode::Cross;
  s.queries = Matrix::Zero(3, 4);
  s.keys = Matrix::Zero(5, 4);
  s.values = Matrix::Zero(5, 4);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) s.queries(i, j) = static_cast<float>(i - j) / 3.f;
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 4; ++j) s.keys(i, j) = static_cast<float>((i * j) % 3) / 2.f;
  s.values = s.keys;
  s.queryLabels = {"q0", "q1", "q2"};
  s.keyLabels = {"k0", "k1", "k2", "k3", "k4"};
  s.options.score = ScoreKind::ScaledDot;
  s.options.heads = 2;
  loadDocument(state, s, "");
  ASSERT_TRUE(update(state));
  ASSERT_TRUE(state.computed->error.empty()) << state.computed->error;
  Expected<SourcePtr> source = scenarioSource(*state.computed, "cross");
  ASSERT_TRUE(source) << source.error().message();
  const AttentionSource& src = **source;
  EXPECT_EQ(src.shape().layers, 1);
  EXPECT_EQ(src.shape().heads, 2);
  EXPECT_EQ(src.shape().queries, 3);  // more keys than queries, labelled separately
  EXPECT_EQ(src.shape().keys, 5);
  EXPECT_EQ(src.queryLabels()[2], "q2");
  EXPECT_EQ(src.keyLabels()[4], "k4");
  EXPECT_FALSE(src.views.text);  // cross attention: the keys are not the queries' tokens
  EXPECT_TRUE(src.views.grid);
  EXPECT_EQ(src.tensor->copyHead(0, 1), state.computed->result->heads[1].weights);
  // Shown: the worker path (the synchronous one here) selects from it like from a file.
  showSource(state.attention, *source, KeepView::Nothing);
  ASSERT_TRUE(updateAttention(state));
  ASSERT_TRUE(state.attention.shown);
  EXPECT_EQ(state.attention.shown->selected.view.values, state.computed->result->heads[0].weights);
}

TEST(ShowSource, KeepsTheSelectionOnlyWhenAsked) {
  AttentionView view;
  auto make = [](int heads) {
    std::vector<float> values(static_cast<std::size_t>(2 * heads * 3 * 3), 0.25f);
    io::AttentionShape shape{2, heads, 3, 3};
    auto source = std::make_shared<AttentionSource>();
    source->name = "t";
    source->tensor = std::make_shared<const io::AttentionFile>(
        io::AttentionFile::fromMemory("t", values, shape, {"a", "b", "c"}, "").value());
    return SourcePtr(source);
  };
  showSource(view, make(4), KeepView::Nothing);
  selectAttentionView(view, {io::AttentionSelection::Kind::Head, 1, 3});
  view.pinnedToken = 2;
  const std::uint64_t generation = view.generation;
  // The next run of the same model: the selection stays, clamped to 2 heads.
  showSource(view, make(2), KeepView::Selection);
  EXPECT_EQ(view.generation, generation + 1);
  EXPECT_EQ(view.selection.layer, 1);
  EXPECT_EQ(view.selection.head, 1);
  EXPECT_EQ(view.pinnedToken, 2);
  EXPECT_FALSE(view.shown);
  // Another file: everything goes.
  showSource(view, make(4), KeepView::Nothing);
  EXPECT_EQ(view.selection.layer, 0);
  EXPECT_EQ(view.selection.head, 0);
  EXPECT_EQ(view.pinnedToken, -1);
  // None: the panel is empty.
  showSource(view, nullptr, KeepView::Nothing);
  EXPECT_FALSE(view.source);
  EXPECT_FALSE(view.tensor());
}

}  // namespace
}  // namespace test_session_sources
