// The long-context head classes (core/models/head_classes.h, analysis.h's windowMass): the
// sink / local / distant masses of a hand-written pattern, the needle task's layout, the
// retrieval score of hand-written argmax keys, and on a tiny random llama (GQA, a window)
// the tiled pass's classes against the whole pattern's (DecoderRun) and a plain-loop retrieval.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/base/random.h"
#include "core/models/analysis.h"
#include "core/models/head_classes.h"
#include "core/models/long_context.h"

namespace test_core_head_classes {
namespace {

using attn::Expected;
using attn::Matrix;
using attn::SplitMix64;
using namespace attn::model;

// One layer, one head, three queries: rows [1], [0.25, 0.75], [0.5, 0.2, 0.3].
TEST(HeadClasses, MassesOfAHandWrittenPattern) {
  const std::vector<std::vector<float>> rows = {{1.0f}, {0.25f, 0.75f}, {0.5f, 0.2f, 0.3f}};
  const AttentionStack stack{1, 1, 3, [&](int, int, int i) { return std::span<const float>(rows[static_cast<std::size_t>(i)]); }};
  DetectOptions o;
  o.sinkKeys = 1;
  o.localWindow = 2;
  // sink: key 0 of each row; local: i − j < 2; distant: j >= 1 and i − j >= 2 (none)
  EXPECT_NEAR(windowMass(stack, o, HeadScoreKind::Sink)(0, 0), (1 + 0.25 + 0.5) / 3, 1e-7);
  EXPECT_NEAR(windowMass(stack, o, HeadScoreKind::Local)(0, 0), (1 + 1 + 0.5) / 3, 1e-7);
  EXPECT_NEAR(windowMass(stack, o, HeadScoreKind::Distant)(0, 0), 0.0, 1e-7);
  o.localWindow = 1;  // local = the diagonal; distant: row 2's key 1
  EXPECT_NEAR(windowMass(stack, o, HeadScoreKind::Local)(0, 0), (1 + 0.75 + 0.3) / 3, 1e-7);
  EXPECT_NEAR(windowMass(stack, o, HeadScoreKind::Distant)(0, 0), 0.2 / 3, 1e-7);
  o.sinkKeys = 2;  // sink: keys 0 and 1; through headScore as the CLI calls it
  EXPECT_NEAR(headScore(stack, {}, HeadScoreKind::Sink, o)(0, 0), (1 + 1 + 0.7) / 3, 1e-7);
  o.sinkKeys = 1;  // K = 1 is α0, sinkMass
  EXPECT_NEAR(headScore(stack, {}, HeadScoreKind::Sink, o)(0, 0), sinkMass(stack)(0, 0), 0);
}

TEST(HeadClasses, NeedleTaskLayout) {
  const std::vector<int> haystack = {10, 11, 12, 13, 14};
  const NeedleTask task = needleTask(haystack, 50, 7);
  SplitMix64 rng(7);
  std::vector<int> needle;
  for (int t = 0; t < 16; ++t) needle.push_back(static_cast<int>(rng.next() % 50));
  EXPECT_EQ(task.needle, needle);
  EXPECT_EQ(task.needleStart, 3);  // ⌊(5 + 1) / 2⌋
  EXPECT_EQ(task.answerStart, 21);  // 5 + 16
  std::vector<int> expected = {10, 11, 12};
  expected.insert(expected.end(), needle.begin(), needle.end());
  expected.insert(expected.end(), {13, 14});
  expected.insert(expected.end(), needle.begin(), needle.end());
  EXPECT_EQ(task.ids, expected);
}

TEST(HeadClasses, RetrievalOfHandWrittenArgmaxKeys) {
  std::vector<int> haystack(40);
  for (int i = 0; i < 40; ++i) haystack[static_cast<std::size_t>(i)] = 100 + i;  // never in a needle of ids < 100
  const NeedleTask task = needleTask(haystack, 100, 3);
  const int p = task.needleStart, a = task.answerStart;
  ASSERT_EQ(p, 20);
  // head 0 copies every answer token from the needle; head 1 attends to the answer's own
  // previous token (not the needle); head 2 copies the even tokens and points at the
  // haystack for the odd ones; head 3 points one past the right needle token (a miss unless
  // the needle repeats that token there)
  const Matrix scores = retrievalScores(task, 1, 4, [&](int, int h, int i) {
    const int t = i - (a - 1);
    switch (h) {
      case 0: return p + t;
      case 1: return i;
      case 2: return t % 2 == 0 ? p + t : 5;
      default: return p + t + 1;
    }
  });
  EXPECT_EQ(scores(0, 0), 1.0f);
  EXPECT_EQ(scores(0, 1), 0.0f);
  EXPECT_EQ(scores(0, 2), 0.5f);
  int repeats = 0;  // head 3 by hand: needle[t + 1] == needle[t] (t + 1 < 16) counts
  for (int t = 0; t + 1 < 16; ++t) repeats += task.needle[static_cast<std::size_t>(t + 1)] == task.needle[static_cast<std::size_t>(t)];
  EXPECT_EQ(scores(0, 3), repeats / 16.0f);
}

Config tinyLlama() {
  Config c;
  c.modelType = "llama";
  c.nLayer = 2;
  c.nHead = 4;
  c.nHeadKv = 2;
  c.nEmbd = 32;
  c.nInner = 48;
  c.nPositions = 256;
  c.vocabSize = 40;
  c.learnedPositions = false;
  c.tiedEmbeddings = false;
  c.rotaryDims = 8;
  c.norm = NormKind::RmsNorm;
  c.activation = Activation::Silu;
  c.qkvLayout = QkvLayout::Separate;
  c.gatedMlp = true;
  c.qkvBias = c.outBias = c.mlpBias = false;
  c.layerWindows = {0, 20};
  return c;
}

TEST(HeadClasses, TiledPassEqualsTheWholePatternOnATinyLlama) {
  const Config c = tinyLlama();
  Weights raw = randomWeights(c, 11);
  for (LayerWeights& layer : raw.layers) {  // q and k 20 times larger: peaked rows
    for (Linear* lin : {&layer.q, &layer.k}) {
      auto scaled = std::make_shared<Matrix>(lin->weight.dense() * 20.0f);
      raw.storage.push_back(scaled);
      lin->weight.data = scaled->data();
    }
  }
  auto w = std::make_shared<const Weights>(std::move(raw));
  SplitMix64 rng(12);
  std::vector<int> haystack(90);
  for (int& id : haystack) id = static_cast<int>(rng.next() % 40);
  DetectOptions o;
  o.sinkKeys = 3;
  o.localWindow = 9;
  SummaryOptions so;
  so.sink = 3;
  so.local = 9;
  so.topK = 1;
  so.rowBlock = 16;
  so.keyTile = 24;
  Expected<DecoderRun> run = forward(w, haystack);
  ASSERT_TRUE(run.ok());
  Expected<LongSummary> summary = summarizeAttention(w, haystack, so);
  ASSERT_TRUE(summary.ok());
  for (HeadScoreKind kind : {HeadScoreKind::Sink, HeadScoreKind::Local, HeadScoreKind::Distant, HeadScoreKind::Entropy}) {
    const Matrix whole = headScore(attentionStack(*run), haystack, kind, o);
    const Matrix tiled = summaryHeadScore(*summary, kind);
    EXPECT_LT((whole - tiled).cwiseAbs().maxCoeff(), 2e-6) << toString(kind);
  }
  // every row: sink + local + distant = 1 + the overlap of sink and local (rows i < K + W − 1)
  for (std::size_t e = 0; e < summary->lse.size(); ++e) {
    const int i = static_cast<int>(e % 90);
    const double total = summary->sinkMass[e] + summary->localMass[e] + summary->distantMass[e];
    if (i >= 3 + 9 - 1) {
      EXPECT_NEAR(total, 1.0, 2e-6);
    } else {
      EXPECT_GE(total, 1.0 - 2e-6);
    }
  }
  // retrieval: the needle run through the tiled pass's top-1, through the session's rows and
  // by a plain loop over the session's attention matrices
  const NeedleTask task = needleTask(haystack, c.vocabSize, 99);
  Expected<DecoderRun> needleRun = forward(w, task.ids);
  ASSERT_TRUE(needleRun.ok());
  Expected<LongSummary> needleSummary = summarizeAttention(w, task.ids, so);
  ASSERT_TRUE(needleSummary.ok());
  const Matrix fromSession = retrievalScores(task, *needleRun), fromTiles = retrievalScores(task, *needleSummary);
  Matrix byHand = Matrix::Zero(c.nLayer, c.nHead);
  for (int l = 0; l < c.nLayer; ++l)
    for (int h = 0; h < c.nHead; ++h) {
      const Matrix A = needleRun->attention(l, h);
      for (int t = 0; t < 16; ++t) {
        Eigen::Index j = 0;
        A.row(task.answerStart + t - 1).maxCoeff(&j);
        if (j >= task.needleStart && j < task.needleStart + 16 &&
            task.ids[static_cast<std::size_t>(j)] == task.needle[static_cast<std::size_t>(t)]) {
          byHand(l, h) += 1.0f / 16;
        }
      }
    }
  EXPECT_EQ(fromSession, byHand);
  EXPECT_EQ(fromTiles, byHand);
  // the scores rest on the argmax keys: the tiled pass's top-1 is the session's argmax at
  // every query of the needle run (or a key of the same weight, a tie)
  const int n = static_cast<int>(task.ids.size());
  int same = 0;
  for (int l = 0; l < c.nLayer; ++l)
    for (int h = 0; h < c.nHead; ++h) {
      const Matrix A = needleRun->attention(l, h);
      for (int i = 0; i < n; ++i) {
        Eigen::Index j = 0;
        const float best = A.row(i).maxCoeff(&j);
        const std::int32_t top = needleSummary->topIdx[static_cast<std::size_t>((l * c.nHead + h) * n + i)];
        same += top == j;
        EXPECT_NEAR(A(i, top), best, 1e-6);
      }
    }
  EXPECT_GT(same, c.nLayer * c.nHead * n * 99 / 100);
  std::printf("retrieval scores (layer x head):\n");
  for (int l = 0; l < c.nLayer; ++l) std::printf("  %.4f %.4f %.4f %.4f\n", byHand(l, 0), byHand(l, 1), byHand(l, 2), byHand(l, 3));
}

}  // namespace
}  // namespace test_core_head_classes
