// The summary view's session side (app/session/long_context_service.h) without a window, on
// a random mistral checkpoint (GQA: 4 query heads on 2 KV heads, a sliding window of 300 so
// that windows cross the tiles) with a byte-level tokenizer, fed ~1500-token texts:
//   - a long text is not run in full: the run holds its tokens only;
//   - the summary the update step publishes equals core's summarizeAttention on the same ids;
//   - the visible block equals exactTile, and against an independent float64 softmax from the
//     kept q and k; a pooled block is the max of its cells; hiding the sinks moves k0;
//   - the workers give the same summary and tile as the synchronous step;
//   - Cancel leaves the previous summary on screen and says so.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "app/session/app_state.h"
#include "app/session/long_context_service.h"
#include "app/session/model_service.h"
#include "core/models/long_context.h"
#include "tests/support/model_fixture.h"
#include "tests/support/long_text.h"
#include "tests/support/model_session.h"

namespace test_session_long_context {
namespace {

namespace fs = std::filesystem;
using namespace attn;
using namespace attn::app;

constexpr int kWindow = 300;
constexpr double kFloatTol = 5e-5, kDoubleTol = 1e-4;  // see the first test

using attn::testing::longText;

class LongContextTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    modeltest::Spec spec = modeltest::mistralSpec();
    spec.headsKv = 2;
    spec.slidingWindow = kWindow;
    spec.positions = 8192;
    spec.vocab = 259;  // writeByteLevelTokenizerJson's ids
    // One folder per test process: ctest runs this suite's tests as parallel processes, each
    // with its own set-up, so a shared folder was rewritten under a running test (the
    // filter names the test this process runs).
    dir_ = modeltest::writeFolder("session_long_context." + std::string(GTEST_FLAG_GET(filter)), spec,
                                  modeltest::makeTensors(spec, 29))
               .string();
    modeltest::writeByteLevelTokenizerJson(dir_, true);
  }

  // A state with the folder loaded and `text` run synchronously (the run holds the tokens).
  static void loadLong(AppState& state, const std::string& text) {
    state.model.loadRequest = dir_;
    attn::testing::typeText(state, text);
    updateModel(state, 0);
    ASSERT_TRUE(state.model.model) << (state.notices.empty() ? "" : state.notices.back().text);
    ASSERT_TRUE(state.model.run);
    ASSERT_TRUE(state.model.run->error.empty()) << state.model.run->error;
  }

  // Steps the window's update (async) until the pass and the tile are done.
  static void settleLong(AppState& state) {
    for (int i = 0; i < 50; ++i) {
      updateLongContext(state, 1.0 + i, true);
      const LongContextState* lc = state.model.longContext.get();
      if (!lc) return;
      if (lc->service) lc->service->waitIdle();
      if (!lc->running && !lc->tileRunning && (!lc->service || (!lc->service->summaryBusy() && !lc->service->tileBusy())))
        if (i > 0) break;
    }
    updateLongContext(state, 60.0, true);
  }

  static std::string dir_;
};

std::string LongContextTest::dir_;

// The float64 weights of rows [q0, q1) x keys [k0, k1) of one head from the kept q and k:
// s = scale·q·k, the causal window, a softmax over every visible key of the row.
std::vector<double> referenceBlock(const LongSummaryResult& r, int layer, int head, int q0, int q1, int k0, int k1) {
  const Matrix& qk = r.qk[static_cast<std::size_t>(layer)];
  const int dh = r.headDim, kvHead = head / (r.summary.heads / r.headsKv);
  const int window = r.masks[static_cast<std::size_t>(layer)].window;
  std::vector<double> out;
  for (int i = q0; i < q1; ++i) {
    const int lo = window > 0 ? std::max(0, i - window + 1) : 0;
    std::vector<double> s(static_cast<std::size_t>(i + 1), 0.0);
    double m = -1e300;
    for (int j = lo; j <= i; ++j) {
      double dot = 0;
      for (int d = 0; d < dh; ++d)
        dot += static_cast<double>(qk(i, head * dh + d)) * static_cast<double>(qk(j, (r.summary.heads + kvHead) * dh + d));
      s[static_cast<std::size_t>(j)] = dot * r.scale;
      m = std::max(m, s[static_cast<std::size_t>(j)]);
    }
    double sum = 0;
    for (int j = lo; j <= i; ++j) sum += std::exp(s[static_cast<std::size_t>(j)] - m);
    for (int j = k0; j < k1; ++j)
      out.push_back(j >= lo && j <= i ? std::exp(s[static_cast<std::size_t>(j)] - m) / sum : 0.0);
  }
  return out;
}

TEST(LongContextThreshold, TokensOrTheAttentionBudget) {
  model::Config c;
  c.nLayer = 4;
  c.nHead = 9;
  EXPECT_FALSE(isLongInput(c, kLongInputTokens));
  EXPECT_TRUE(isLongInput(c, kLongInputTokens + 1));
  // Llama-3.2-1B's 16 x 32 heads: 512 tokens are 512 MiB of attention, 1024 are 2 GiB.
  c.nLayer = 16;
  c.nHead = 32;
  EXPECT_FALSE(isLongInput(c, 512));
  EXPECT_TRUE(isLongInput(c, 1000));  // 1.9 GiB > kMaxLiveAttentionBytes
}

TEST_F(LongContextTest, SummaryEqualsSummarizeAttentionAndTheTileIsExact) {
  AppState state;
  loadLong(state, longText(1500, 1));
  const std::shared_ptr<const ModelRun> run = state.model.run;
  ASSERT_TRUE(run->longInput);
  EXPECT_FALSE(run->attention);  // no [L, H, n, n]
  EXPECT_FALSE(run->decoder);
  const int n = static_cast<int>(run->ids.size());
  ASSERT_GT(n, kLongInputTokens);
  ASSERT_EQ(run->labels.size(), run->ids.size());

  ASSERT_TRUE(updateLongContext(state, 0, false));
  ASSERT_TRUE(state.model.longContext);
  const LongContextState& lc = *state.model.longContext;
  ASSERT_TRUE(lc.result) << lc.status;
  const LongSummaryResult& r = *lc.result;
  // 1 the summary: core's pass on the same ids, default options (sink 4, local 64, top-8)
  Expected<model::LongSummary> direct = model::summarizeAttention(state.model.model->weights, run->ids, {});
  ASSERT_TRUE(direct) << direct.error().message();
  const model::LongSummary& s = r.summary;
  ASSERT_EQ(s.n, n);
  ASSERT_EQ(s.layers, 2);
  ASSERT_EQ(s.heads, 4);
  auto expectNear = [](const std::vector<float>& a, const std::vector<float>& b, double tol, const char* what) {
    ASSERT_EQ(a.size(), b.size()) << what;
    double worst = 0;
    for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(double(a[i]) - double(b[i])));
    EXPECT_LE(worst, tol) << what;
  };
  expectNear(s.lse, direct->lse, 1e-5, "lse");
  expectNear(s.entropy, direct->entropy, 1e-5, "entropy");
  expectNear(s.sinkMass, direct->sinkMass, 1e-6, "sink");
  expectNear(s.localMass, direct->localMass, 1e-6, "local");
  expectNear(s.distantMass, direct->distantMass, 1e-6, "distant");
  expectNear(s.colSum, direct->colSum, 1e-4, "col_sum");
  expectNear(s.topW, direct->topW, 1e-6, "top-k weights");
  // 2 the grid: per-head means over the queries, in double here
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 4; ++h) {
      double sink = 0, entropy = 0;
      for (int i = 0; i < n; ++i) {
        sink += direct->sinkMass[static_cast<std::size_t>((l * 4 + h) * n + i)];
        entropy += direct->entropy[static_cast<std::size_t>((l * 4 + h) * n + i)];
      }
      EXPECT_NEAR(metricGrid(r, SummaryMetric::Sink)(l, h), sink / n, 1e-6);
      EXPECT_NEAR(metricGrid(r, SummaryMetric::Entropy)(l, h), entropy / n, 1e-5);
      // every row sums to 1, so the column sums of a head add up to n
      const std::span<const float> col = headColumnSums(r, l, h);
      double total = 0;
      for (float v : col) total += v;
      EXPECT_NEAR(total, n, 1e-3 * n);
      EXPECT_EQ(headRow(r, SummaryMetric::Local, l, h).size(), static_cast<std::size_t>(n));
    }
  // 3 the first view: the whole matrix of head (0, 0), max-pooled to kMaxTileSide a side
  ASSERT_TRUE(lc.shown);
  const LongTile& whole = *lc.shown;
  EXPECT_EQ(whole.view, (TileView{0, 0, 0, n, 0, n}));
  EXPECT_EQ(whole.rowStep, (n + kMaxTileSide - 1) / kMaxTileSide);
  ASSERT_EQ(whole.weights.rows(), (n + whole.rowStep - 1) / whole.rowStep);
  model::SummaryOptions full;
  full.tiles = {model::TileRequest{0, 0, 0, n, 0, n}, model::TileRequest{1, 3, 1200, 1264, 1000, 1264}};
  Expected<model::LongSummary> tiles = model::summarizeAttention(state.model.model->weights, run->ids, full);
  ASSERT_TRUE(tiles) << tiles.error().message();
  const Matrix& exact = tiles->tiles[0];
  double worstPool = 0;
  for (int r0 = 0; r0 < whole.weights.rows(); ++r0)
    for (int c0 = 0; c0 < whole.weights.cols(); ++c0) {
      const int a = r0 * whole.rowStep, b = std::min(n, a + whole.rowStep);
      const int c = c0 * whole.colStep, d = std::min(n, c + whole.colStep);
      const float pooled = exact.block(a, c, b - a, d - c).maxCoeff();
      worstPool = std::max(worstPool, std::abs(double(whole.weights(r0, c0)) - pooled));
    }
  // The fixture's large random weights give scores of tens, so one float rounding of a score
  // moves exp(s − lse) by ~1e-5: the float results agree within kFloatTol, the float64
  // reference within kDoubleTol.
  EXPECT_LE(worstPool, kFloatTol);
  // 4 a zoomed block, cell for cell: exactTile in the pass, and float64 from the kept q, k
  const std::optional<LongTile> zoom = cutTile(r, TileView{1, 3, 1200, 1264, 1000, 1264}, false);
  ASSERT_TRUE(zoom);
  ASSERT_EQ(zoom->rowStep, 1);
  ASSERT_EQ(zoom->colStep, 1);
  ASSERT_EQ(zoom->weights.rows(), 64);
  ASSERT_EQ(zoom->weights.cols(), 264);
  EXPECT_LE((zoom->weights - tiles->tiles[1]).cwiseAbs().maxCoeff(), kFloatTol);
  const std::vector<double> reference = referenceBlock(r, 1, 3, 1200, 1264, 1000, 1264);
  double worst = 0;
  int masked = 0;
  for (int i = 0; i < 64; ++i)
    for (int j = 0; j < 264; ++j) {
      const double want = reference[static_cast<std::size_t>(i * 264 + j)];
      worst = std::max(worst, std::abs(zoom->weights(i, j) - want));
      masked += want == 0.0 && zoom->weights(i, j) == 0.0f;
    }
  EXPECT_LE(worst, kDoubleTol);
  EXPECT_GT(masked, 0);  // the window (300) and the causal edge both cut this block
  // the widget's work made with the block: the finite range, and the log colour positions,
  // log10 between the floor max(smallest positive weight, 1e-4) and the fixed top 1
  float smallest = 1, largest = 0, least = 1;
  for (int i = 0; i < 64; ++i)
    for (int j = 0; j < 264; ++j) {
      const float w = zoom->weights(i, j);
      if (w > 0) smallest = std::min(smallest, w);
      largest = std::max(largest, w);
      least = std::min(least, w);
    }
  ASSERT_TRUE(zoom->finite);
  EXPECT_EQ(zoom->finite->lo, least);
  EXPECT_EQ(zoom->finite->hi, largest);
  const double floor = std::max(static_cast<double>(smallest), 1e-4);
  EXPECT_FLOAT_EQ(zoom->logRange.lo, static_cast<float>(floor));
  EXPECT_FLOAT_EQ(zoom->logRange.hi, 1.0f);
  ASSERT_EQ(zoom->logPositions.rows(), 64);
  ASSERT_EQ(zoom->logPositions.cols(), 264);
  double worstPosition = 0;
  for (int i = 0; i < 64; ++i)
    for (int j = 0; j < 264; ++j) {
      const double w = zoom->weights(i, j);
      const double want = w <= floor ? 0.0 : std::clamp(std::log10(w / floor) / -std::log10(floor), 0.0, 1.0);
      worstPosition = std::max(worstPosition, std::abs(zoom->logPositions(i, j) - want));
    }
  EXPECT_LE(worstPosition, 1e-5);
  // 5 hiding the sinks starts the block at key `sink`
  const std::optional<LongTile> hidden = cutTile(r, TileView{0, 1, 0, 256, 0, 256}, true);
  ASSERT_TRUE(hidden);
  EXPECT_EQ(hidden->view.k0, 4);
  EXPECT_EQ(hidden->weights.cols(), 252);
}

TEST_F(LongContextTest, WorkersGiveTheSynchronousSummaryAndTile) {
  const std::string text = longText(1500, 2);
  AppState sync;
  loadLong(sync, text);
  updateLongContext(sync, 0, false);
  ASSERT_TRUE(sync.model.longContext && sync.model.longContext->result);

  ModelService service(std::chrono::milliseconds(0));
  AppState async;
  async.model.loadRequest = dir_;
  attn::testing::typeText(async, text);
  attn::testing::settleModel(async, service);
  ASSERT_TRUE(async.model.run && async.model.run->longInput);
  updateLongContext(async, 0, true);
  ASSERT_TRUE(async.model.longContext);
  LongContextState& lc = *async.model.longContext;
  EXPECT_TRUE(lc.running);
  EXPECT_EQ(lc.total, 8);  // 2 layers x 4 heads
  settleLong(async);
  ASSERT_TRUE(lc.result) << lc.status;
  EXPECT_FALSE(lc.running);
  EXPECT_TRUE(lc.status.empty()) << lc.status;
  const model::LongSummary& a = lc.result->summary;
  const model::LongSummary& b = sync.model.longContext->result->summary;
  ASSERT_EQ(a.n, b.n);
  for (std::size_t i = 0; i < a.lse.size(); ++i) {
    ASSERT_NEAR(a.lse[i], b.lse[i], 1e-5);
    ASSERT_NEAR(a.sinkMass[i], b.sinkMass[i], 1e-6);
  }
  ASSERT_TRUE(lc.shown);
  EXPECT_LE((lc.shown->weights - sync.model.longContext->shown->weights).cwiseAbs().maxCoeff(), 1e-6);
  // Pan and zoom: the newest block is computed, exactly as cutTile does it; the block it
  // replaces is freed (by the release worker), not kept alive with the summary.
  const std::weak_ptr<const LongTile> firstTile = lc.shown;
  lc.layer = 1;
  lc.head = 2;
  lc.tile = TileView{1, 2, 900, 1000, 800, 1000};
  settleLong(async);
  ASSERT_TRUE(lc.shown);
  EXPECT_EQ(lc.shown->view, (TileView{1, 2, 900, 1000, 800, 1000}));
  const std::optional<LongTile> want = cutTile(*lc.result, lc.tile, false);
  ASSERT_TRUE(want);
  EXPECT_LE((lc.shown->weights - want->weights).cwiseAbs().maxCoeff(), 0.0);
  lc.service->waitIdle();
  EXPECT_TRUE(firstTile.expired());
  EXPECT_GE(lc.service->released(), 1u);
  const std::vector<double> reference = referenceBlock(*lc.result, 1, 2, 900, 1000, 800, 1000);
  double worst = 0;
  for (int i = 0; i < 100; ++i)
    for (int j = 0; j < 200; ++j) worst = std::max(worst, std::abs(lc.shown->weights(i, j) - reference[static_cast<std::size_t>(i * 200 + j)]));
  EXPECT_LE(worst, kDoubleTol);
}

TEST_F(LongContextTest, CancelKeepsThePreviousSummaryOnScreen) {
  ModelService service(std::chrono::milliseconds(0));
  AppState state;
  state.model.loadRequest = dir_;
  attn::testing::typeText(state, longText(1200, 3));
  attn::testing::settleModel(state, service);
  settleLong(state);
  ASSERT_TRUE(state.model.longContext && state.model.longContext->result);
  LongContextState& lc = *state.model.longContext;
  // A longer text (about 5000 tokens), cancelled as soon as it is asked. The pass takes tens
  // of milliseconds here, so on a loaded machine it can finish before the Cancel reaches it
  // (the finished summary is then shown, rightly): another text is tried, up to 5; at least
  // one Cancel must take effect, and each one that does keeps the previous summary.
  int cancelled = 0;
  for (unsigned attempt = 0; attempt < 5 && cancelled == 0; ++attempt) {
    const std::shared_ptr<const LongSummaryResult> previous = lc.result;
    attn::testing::typeText(state, longText(5000, 4 + 10 * attempt));
    attn::testing::settleModel(state, service);
    ASSERT_TRUE(state.model.run->longInput);
    updateLongContext(state, 100, true);
    ASSERT_TRUE(lc.running);
    lc.cancelRequested = true;  // the panel's Cancel
    settleLong(state);
    EXPECT_FALSE(lc.running);
    if (lc.result != previous) {  // the pass finished first: it is this text's summary
      ASSERT_TRUE(lc.result);
      EXPECT_EQ(lc.result->summary.n, static_cast<int>(state.model.run->ids.size()));
      continue;
    }
    ++cancelled;
    EXPECT_NE(lc.status.find("cancelled"), std::string::npos) << lc.status;
    EXPECT_NE(lc.status.find("previous"), std::string::npos) << lc.status;
  }
  EXPECT_EQ(cancelled, 1) << "no Cancel took effect in 5 texts";
  const std::shared_ptr<const LongSummaryResult> first = lc.result;
  // Another text runs again (the cancel does not stick).
  attn::testing::typeText(state, longText(1100, 5));
  attn::testing::settleModel(state, service);
  settleLong(state);
  ASSERT_TRUE(lc.result);
  EXPECT_NE(lc.result, first);
  EXPECT_EQ(lc.result->summary.n, static_cast<int>(state.model.run->ids.size()));
  EXPECT_TRUE(lc.status.empty()) << lc.status;
}

TEST_F(LongContextTest, ATextFileBecomesTheModelsText) {
  const fs::path file = fs::path(dir_).parent_path() / "session_long_context_text.txt";
  const std::string text = longText(2000, 6);
  gpt2test::writeFile(file, text);
  AppState state;
  EXPECT_FALSE(openModelText(state, file.string(), 0));  // no model yet
  ASSERT_FALSE(state.notices.empty());
  EXPECT_NE(state.notices.back().text.find("no decoder model"), std::string::npos) << state.notices.back().text;
  loadLong(state, "short");
  EXPECT_FALSE(state.model.run->longInput);
  const std::uint64_t revision = state.model.textRevision;
  const std::string missing = (fs::path(dir_) / "missing.txt").string();
  EXPECT_FALSE(openModelText(state, missing, 0));
  EXPECT_NE(state.notices.back().text.find(missing), std::string::npos) << state.notices.back().text;
  EXPECT_EQ(state.model.text, "short");  // unchanged
  ASSERT_TRUE(openModelText(state, file.string(), 0));
  EXPECT_EQ(state.model.text, text);
  EXPECT_EQ(state.model.textRevision, revision + 1);
  updateModel(state, 0);
  ASSERT_TRUE(state.model.run);
  EXPECT_TRUE(state.model.run->longInput);
  EXPECT_GT(state.model.run->ids.size(), static_cast<std::size_t>(kLongInputTokens));
}

}  // namespace
}  // namespace test_session_long_context
