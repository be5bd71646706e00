// The tiled pass of core/models/long_context.h against the full attention the engine keeps
// (DecoderRun::attention, checked against PyTorch by tests/formats' reference): every summary
// array of every layer and head, on n = 300 tokens of random decoders of four families
// (gpt2; llama with GQA and per-layer sliding windows; gpt_neox's parallel residual;
// gemma2 with soft-capping, query_pre_attn_scalar and sandwich norms), with tiles smaller
// than the window so that windows and the diagonal cross tile edges. The bidirectional
// mask against a double loop; the options' errors; cancelling.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <vector>

#include "core/base/random.h"
#include "tests/support/small_families.h"
#include "core/models/long_context.h"
#include "core/models/transformer.h"

namespace test_core_long_context {
namespace {

using attn::Expected;
using attn::Matrix;
using attn::Status;
using attn::SplitMix64;
using namespace attn::model;

// The four families of tests/support/small_families.h at 512 positions; gemma2 with a
// soft-cap of 4 and query_pre_attn_scalar^-½ with a scalar of 2.8.
Config family(int kind) {
  return attn::testing::smallFamily(kind, {.positions = 512, .vocab = 50, .window = 37, .attnSoftcap = 4,
                                           .finalSoftcap = 0, .queryScale = 0.6f});
}

// Random weights whose queries and keys are `gain` times larger (a fused q | k | v: all
// three), so that attention is far from uniform (sinks, peaks) rather than the near-uniform
// rows of std-0.02 weights.
std::shared_ptr<const Weights> sharpWeights(const Config& c, std::uint64_t seed, float gain) {
  Weights w = randomWeights(c, seed);
  auto scale = [&](Linear& lin) {
    auto scaled = std::make_shared<Matrix>(lin.weight.dense() * gain);
    w.storage.push_back(scaled);
    lin.weight.data = scaled->data();
  };
  for (LayerWeights& layer : w.layers) {
    if (c.qkvLayout == QkvLayout::Separate) {
      scale(layer.q);
      scale(layer.k);
    } else {
      scale(layer.qkv);
    }
  }
  return std::make_shared<const Weights>(std::move(w));
}

std::vector<int> randomIds(int n, int vocab, std::uint64_t seed) {
  SplitMix64 rng(seed);
  std::vector<int> ids(static_cast<std::size_t>(n));
  for (int& id : ids) id = static_cast<int>(rng.next() % static_cast<std::uint64_t>(vocab));
  return ids;
}

TEST(LongContext, EverySummaryEqualsTheFullAttentionOfFourFamilies) {
  const int n = 300, sink = 4, local = 20, K = 5;
  const std::vector<int> ids = randomIds(n, 50, 29);
  for (int kind = 0; kind < 4; ++kind) {
    SCOPED_TRACE("family " + std::to_string(kind));
    const Config c = family(kind);
    auto w = sharpWeights(c, 290 + static_cast<std::uint64_t>(kind), kind == 0 || kind == 2 ? 12.0f : 25.0f);
    Expected<DecoderRun> full = forward(w, ids);
    ASSERT_TRUE(full.ok());
    SummaryOptions options;
    options.sink = sink;
    options.local = local;
    options.topK = K;
    options.rowBlock = 16;  // tiles smaller than the window of 37: windows cross tile edges
    options.keyTile = 40;
    options.threads = 2;
    options.tiles = {{1, 3, 100, 292, 0, 300}, {2, 0, 0, 7, 0, 5}};
    int calls = 0, last = 0;
    Expected<LongSummary> s = summarizeAttention(w, ids, options, [&](int done, int total) {
      ++calls;
      last = done;
      EXPECT_EQ(total, c.nLayer * c.nHead);
    });
    ASSERT_TRUE(s.ok()) << s.error().message();
    EXPECT_EQ(calls, c.nLayer * c.nHead);
    EXPECT_EQ(last, c.nLayer * c.nHead);
    double worst[7] = {};  // lse, entropy, sink, local, colsum (relative), topk w, tile
    int sharpRows = 0;
    for (int l = 0; l < c.nLayer; ++l) {
      const int window = c.windowOf(l);
      for (int h = 0; h < c.nHead; ++h) {
        const Matrix A = full->attention(l, h);
        const auto q = full->query(l, h);
        const auto k = full->key(l, h);
        const std::size_t at = static_cast<std::size_t>((l * c.nHead + h) * n);
        Eigen::VectorXd col = Eigen::VectorXd::Zero(n);
        for (int i = 0; i < n; ++i) {
          const int lo = window > 0 ? std::max(0, i - window + 1) : 0;
          // lse in double from the session's own q and k (scaled, capped)
          double m = -1e300;
          std::vector<double> sc;
          for (int j = lo; j <= i; ++j) {
            double v = static_cast<double>(q.row(i).cast<double>().dot(k.row(j).cast<double>())) * c.scoreScale();
            if (c.attnSoftcap > 0) v = c.attnSoftcap * std::tanh(v / c.attnSoftcap);
            sc.push_back(v);
            m = std::max(m, v);
          }
          double sum = 0;
          for (double v : sc) sum += std::exp(v - m);
          const double lse = m + std::log(sum);
          double entropy = 0, sinkMass = 0, localMass = 0, distantMass = 0;
          std::vector<std::pair<double, int>> row;
          for (int j = 0; j < n; ++j) {
            const double a = A(i, j);
            if (j > i || j < lo) {
              EXPECT_EQ(a, 0.0);
              continue;
            }
            if (a > 0) entropy -= a * std::log(a);
            if (j < sink) sinkMass += a;
            if (i - j < local) localMass += a;
            if (j >= sink && i - j >= local) distantMass += a;
            col[j] += a;
            row.push_back({a, j});
          }
          if (!row.empty() && std::max_element(row.begin(), row.end())->first > 0.5) ++sharpRows;
          std::sort(row.begin(), row.end(), [](auto x, auto y) { return x.first != y.first ? x.first > y.first : x.second < y.second; });
          worst[0] = std::max(worst[0], std::abs(s->lse[at + i] - lse));
          worst[1] = std::max(worst[1], std::abs(s->entropy[at + i] - entropy));
          worst[2] = std::max(worst[2], std::abs(s->sinkMass[at + i] - sinkMass));
          worst[3] = std::max({worst[3], std::abs(s->localMass[at + i] - localMass), std::abs(s->distantMass[at + i] - distantMass)});
          for (int t = 0; t < K; ++t) {
            const std::size_t e = (at + static_cast<std::size_t>(i)) * K + static_cast<std::size_t>(t);
            if (t >= static_cast<int>(row.size())) {  // fewer visible keys than K
              EXPECT_EQ(s->topIdx[e], -1);
              EXPECT_EQ(s->topW[e], 0.0f);
              continue;
            }
            const int j = s->topIdx[e];
            ASSERT_GE(j, lo);
            ASSERT_LE(j, i);
            // the weight is the t-th largest, and it is key j's (a tie may pick either key)
            worst[5] = std::max(worst[5], std::abs(s->topW[e] - row[static_cast<std::size_t>(t)].first));
            worst[5] = std::max(worst[5], std::abs(static_cast<double>(s->topW[e]) - A(i, j)));
            if (t > 0) {
              EXPECT_GE(s->topW[e - 1], s->topW[e]);
            }
          }
        }
        for (int j = 0; j < n; ++j)
          worst[4] = std::max(worst[4], std::abs(s->colSum[at + j] - col[j]) / std::max(1e-3, col[j]));
      }
    }
    const Matrix& tile = s->tiles[0];
    ASSERT_EQ(tile.rows(), 192);
    ASSERT_EQ(tile.cols(), 300);
    const Matrix A13 = full->attention(1, 3);
    worst[6] = (tile - A13.middleRows(100, 192)).cwiseAbs().maxCoeff();
    const Matrix A20 = full->attention(2, 0);
    EXPECT_LT((s->tiles[1] - A20.topLeftCorner(7, 5)).cwiseAbs().maxCoeff(), 5e-6);
    std::printf("family %d: lse %.2e entropy %.2e sink %.2e local/distant %.2e colsum(rel) %.2e topk %.2e tile %.2e; %d sharp rows\n",
                kind, worst[0], worst[1], worst[2], worst[3], worst[4], worst[5], worst[6], sharpRows);
    EXPECT_LT(worst[0], 1e-4);
    EXPECT_LT(worst[1], 1e-4);
    EXPECT_LT(worst[2], 1e-5);
    EXPECT_LT(worst[3], 1e-5);
    EXPECT_LT(worst[4], 1e-4);
    EXPECT_LT(worst[5], 1e-5);
    EXPECT_LT(worst[6], 5e-6);
    EXPECT_GT(sharpRows, 60);  // the comparison is not between near-uniform rows
  }
}

// The bidirectional mask (an encoder's) and local = |i − j| < local, on random q, k against a
// double loop; the head's output against Σ a_ij·v_j.
TEST(LongContext, BidirectionalHeadAgainstADoubleLoop) {
  const int n = 70, d = 8, local = 6, sink = 3, K = 4;
  SplitMix64 rng(7);
  Matrix q(n, d), k(n, d), v(n, d);
  for (Matrix* m : {&q, &k, &v})
    for (Eigen::Index i = 0; i < m->size(); ++i) m->data()[i] = 2.0f * rng.uniformSymmetric();
  const MatrixView qv(q.data(), n, d, Eigen::OuterStride<>(d)), kv(k.data(), n, d, Eigen::OuterStride<>(d)),
      vv(v.data(), n, d, Eigen::OuterStride<>(d));
  SummaryOptions options;
  options.sink = sink;
  options.local = local;
  options.topK = K;
  options.rowBlock = 9;
  options.keyTile = 13;
  std::vector<float> lse(n), entropy(n), sinkMass(n), localMass(n), colSum(n), topW(n * K);
  std::vector<std::int32_t> topIdx(n * K);
  Matrix context(n, d);
  HeadOutputs out{lse.data(), entropy.data(), sinkMass.data(), localMass.data(), colSum.data(),
                  topIdx.data(), topW.data(), context.data(), d};
  std::vector<float> distantMass(n);
  out.distantMass = distantMass.data();
  const float scale = 0.5f;
  ASSERT_TRUE(tiledHeadPass(qv, kv, vv, scale, 0, KeyMask{false, 0}, options, out));
  Eigen::VectorXd col = Eigen::VectorXd::Zero(n);
  for (int i = 0; i < n; ++i) {
    Eigen::VectorXd s(n);
    for (int j = 0; j < n; ++j) s[j] = scale * q.row(i).cast<double>().dot(k.row(j).cast<double>());
    const double m = s.maxCoeff();
    const double l = (s.array() - m).exp().sum();
    const Eigen::VectorXd a = (s.array() - m).exp() / l;
    EXPECT_NEAR(lse[i], m + std::log(l), 1e-5);
    EXPECT_NEAR(entropy[i], -(a.array() * a.array().log()).sum(), 1e-5);
    EXPECT_NEAR(sinkMass[i], a.head(sink).sum(), 1e-6);
    double near = 0, far = 0;
    for (int j = 0; j < n; ++j) {
      if (std::abs(i - j) < local) near += a[j];
      if (std::abs(i - j) >= local && j >= sink) far += a[j];
    }
    EXPECT_NEAR(localMass[i], near, 1e-6);
    EXPECT_NEAR(distantMass[i], far, 1e-6);
    col += a;
    const Eigen::RowVectorXd ctx = a.transpose() * v.cast<double>();
    EXPECT_LT((context.row(i).cast<double>() - ctx).cwiseAbs().maxCoeff(), 1e-5);
    std::vector<int> order(n);
    for (int j = 0; j < n; ++j) order[j] = j;
    std::sort(order.begin(), order.end(), [&](int x, int y) { return a[x] > a[y]; });
    for (int t = 0; t < K; ++t) {
      EXPECT_NEAR(topW[i * K + t], a[order[t]], 1e-6);
      EXPECT_NEAR(a[topIdx[i * K + t]], a[order[t]], 1e-6);
    }
  }
  for (int j = 0; j < n; ++j) EXPECT_NEAR(colSum[j], col[j], 1e-5 * std::max(1.0, col[j]));
}

TEST(LongContext, OptionsAreCheckedByName) {
  auto field = [](const SummaryOptions& o) {
    Status s = validateSummaryOptions(o, 4, 9, 100);
    return s ? std::string("ok") : s.error().field + ": " + s.error().problem;
  };
  SummaryOptions o;
  EXPECT_EQ(field(o), "ok");
  o.sink = 0;
  EXPECT_EQ(field(o).rfind("sink:", 0), 0u);
  o = SummaryOptions{};
  o.local = -3;
  EXPECT_EQ(field(o).rfind("local:", 0), 0u);
  o = SummaryOptions{};
  o.topK = 101;
  EXPECT_EQ(field(o).rfind("topk:", 0), 0u);
  for (TileRequest t : {TileRequest{4, 0, 0, 10, 0, 10}, TileRequest{0, 9, 0, 10, 0, 10},
                        TileRequest{0, 0, 5, 101, 0, 10}, TileRequest{0, 0, 5, 5, 0, 10},
                        TileRequest{0, 0, 0, 10, -1, 10}}) {
    o = SummaryOptions{};
    o.tiles = {t};
    EXPECT_EQ(field(o).rfind("tile:", 0), 0u) << field(o);
  }
}

TEST(LongContext, CancelStopsThePass) {
  const Config c = family(1);
  auto w = sharpWeights(c, 5, 1.0f);
  const std::vector<int> ids = randomIds(200, 50, 3);
  std::atomic<bool> cancel{false};
  SummaryOptions options;
  options.threads = 1;
  int heads = 0;
  Expected<LongSummary> s = summarizeAttention(w, ids, options, [&](int done, int) {
    heads = done;
    if (done == 2) cancel = true;
  }, &cancel);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().problem, "cancelled");
  EXPECT_EQ(heads, 2);
}

// ---------------------------------------------------------------------------------------
// The case: a SmolLM-135M-width llama (hidden 576, 4 layers, 9 query heads, 3 KV
// heads, head_dim 64, MLP 1536; core's randomWeights with q and k 4 times larger, so that
// rows have peaks instead of the near-uniform rows of std-0.02 weights) against a float64
// reference computed in row chunks of 256 from the model's own q and k (SummaryOptions::
// onLayerQkv hands them over): lse and entropy within 2e-3, masses and top-k weights 1e-4,
// column sums 1e-3 relative, top-k indices causal, a 192-row tile within 1e-5. ctest runs
// n = 2048; n = 8192 (about a minute here) runs with
//   build-test/tests_core --gtest_also_run_disabled_tests --gtest_filter='*8192*'
// ---------------------------------------------------------------------------------------

Config smolWidth(int n) {
  Config c;
  c.modelType = "llama";
  c.nLayer = 4;
  c.nHead = 9;
  c.nHeadKv = 3;
  c.nEmbd = 576;
  c.nInner = 1536;
  c.nPositions = n;
  c.vocabSize = 49152;
  c.norm = NormKind::RmsNorm;
  c.activation = Activation::Silu;
  c.qkvLayout = QkvLayout::Separate;
  c.gatedMlp = true;
  c.learnedPositions = false;
  c.rotaryDims = 64;
  c.qkvBias = c.outBias = c.mlpBias = false;
  return c;
}

void checkAgainstFloat64(int n) {
  const Config c = smolWidth(n);
  auto w = sharpWeights(c, 135, 4.0f);
  const std::vector<int> ids = randomIds(n, c.vocabSize, 8192);
  const int H = c.nHead, dh = c.headDim(), K = 8, sink = 4, local = 64;
  std::vector<Matrix> qk(static_cast<std::size_t>(c.nLayer));  // n x (H + H_kv)·d_h per layer
  SummaryOptions options;  // the CLI's defaults: sink 4, local 64, top 8
  options.tiles = {{2, 5, n / 2, n / 2 + 192, 0, n}};
  options.onLayerQkv = [&](int layer, const MatrixView& qkv) {
    qk[static_cast<std::size_t>(layer)] = qkv.leftCols((H + c.nHeadKv) * dh);
  };
  Expected<LongSummary> s = summarizeAttention(w, ids, options);
  ASSERT_TRUE(s.ok()) << s.error().message();
  std::printf("n = %d: the summary pass took %.1f s\n", n, s->seconds);
  double worst[7] = {};  // lse, entropy, sink, local, top-k weight, colsum (relative), tile
  double entropyMin = 1e9;
  Matrix tileRef;
  constexpr int kChunk = 256;
  for (int l = 0; l < c.nLayer; ++l) {
    const Matrix& m = qk[static_cast<std::size_t>(l)];
    for (int h = 0; h < H; ++h) {
      const Eigen::MatrixXd q = m.middleCols(h * dh, dh).cast<double>();
      const Eigen::MatrixXd k = m.middleCols((H + c.kvHeadOf(h)) * dh, dh).cast<double>();
      const std::size_t at = static_cast<std::size_t>((l * H + h) * n);
      Eigen::VectorXd col = Eigen::VectorXd::Zero(n);
      for (int r0 = 0; r0 < n; r0 += kChunk) {
        const int rows = std::min(kChunk, n - r0);
        const Eigen::MatrixXd scores = (q.middleRows(r0, rows) * k.topRows(r0 + rows).transpose()) * static_cast<double>(c.scoreScale());
        for (int r = 0; r < rows; ++r) {
          const int i = r0 + r;
          const Eigen::VectorXd row = scores.row(r).head(i + 1).transpose();
          const double mx = row.maxCoeff();
          const double lse = mx + std::log((row.array() - mx).exp().sum());
          const Eigen::VectorXd a = (row.array() - lse).exp();
          const double entropy = -(a.array() * (row.array() - lse)).sum();
          if (i >= 256) entropyMin = std::min(entropyMin, entropy);
          col.head(i + 1) += a;
          const std::size_t e = at + static_cast<std::size_t>(i);
          worst[0] = std::max(worst[0], std::abs(s->lse[e] - lse));
          worst[1] = std::max(worst[1], std::abs(s->entropy[e] - entropy));
          worst[2] = std::max(worst[2], std::abs(s->sinkMass[e] - a.head(std::min(sink, i + 1)).sum()));
          worst[3] = std::max(worst[3], std::abs(s->localMass[e] - a.tail(std::min(local, i + 1)).sum()));
          std::vector<double> sorted(a.data(), a.data() + a.size());
          const int top = std::min(K, i + 1);
          std::partial_sort(sorted.begin(), sorted.begin() + top, sorted.end(), std::greater<>());
          for (int t = 0; t < K; ++t) {
            const std::int32_t j = s->topIdx[e * K + static_cast<std::size_t>(t)];
            const float wt = s->topW[e * K + static_cast<std::size_t>(t)];
            if (t >= top) {
              ASSERT_EQ(j, -1);
              continue;
            }
            ASSERT_GE(j, 0);
            ASSERT_LE(j, i);  // causal
            worst[4] = std::max({worst[4], std::abs(wt - sorted[static_cast<std::size_t>(t)]), std::abs(wt - a[j])});
          }
          if (l == 2 && h == 5 && i >= n / 2 && i < n / 2 + 192) {
            if (tileRef.size() == 0) tileRef = Matrix::Zero(192, n);
            tileRef.row(i - n / 2).head(i + 1) = a.transpose().cast<float>();
          }
        }
      }
      for (int j = 0; j < n; ++j)
        worst[5] = std::max(worst[5], std::abs(s->colSum[at + static_cast<std::size_t>(j)] - col[j]) / col[j]);
    }
  }
  worst[6] = (s->tiles[0] - tileRef).cwiseAbs().maxCoeff();
  std::printf("n = %d: lse %.2e entropy %.2e sink %.2e local %.2e topk w %.2e colsum (rel) %.2e tile %.2e; "
              "lowest entropy of rows >= 256: %.2f nats\n", n, worst[0], worst[1], worst[2], worst[3], worst[4], worst[5], worst[6], entropyMin);
  EXPECT_LT(worst[0], 2e-3);
  EXPECT_LT(worst[1], 2e-3);
  EXPECT_LT(worst[2], 1e-4);
  EXPECT_LT(worst[3], 1e-4);
  EXPECT_LT(worst[4], 1e-4);
  EXPECT_LT(worst[5], 1e-3);
  EXPECT_LT(worst[6], 1e-5);
  EXPECT_LT(entropyMin, 2.0);  // some rows are peaked, not uniform (log n = 7.6 at 2048)
}

TEST(LongContext, SmolLmWidth2048AgainstFloat64) { checkAgainstFloat64(2048); }
TEST(LongContext, DISABLED_SmolLmWidth8192AgainstFloat64) { checkAgainstFloat64(8192); }

}  // namespace
}  // namespace test_core_long_context
