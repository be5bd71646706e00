// The maximum flow of core/models/max_flow.h against the minimum cut found by enumerating
// every s-t cut (max-flow = min-cut), on small random graphs; the attention flow and head
// circuits of core/models/mechanisms.h on cases with a closed form; norm-weighted attention
// against f_h(x_j) built from the weights; and value zeroing's one-layer re-run against
// whole-model re-runs with the same edit (GQA, sliding windows per layer, learned positions).
// The numbers against an independent numpy program: tests/cli/test_cli_mechanisms.cpp.
#include <gtest/gtest.h>

#include <Eigen/LU>
#include <Eigen/SVD>
#include <algorithm>
#include <cmath>
#include <iostream>
#include <vector>

#include "core/attention/aggregate.h"
#include "core/base/random.h"
#include "core/models/analysis.h"
#include "core/models/head_spectra.h"
#include "core/models/layers.h"
#include "core/models/max_flow.h"
#include "core/models/mechanisms.h"

namespace test_core_mechanisms {
namespace {

using attn::Matrix;
using attn::SplitMix64;
using attn::model::FlowEdge;

double uniform(SplitMix64& rng) { return static_cast<double>(rng.next() >> 11) * 0x1.0p-53; }

// min over every node set S with source ∈ S, sink ∉ S of Σ capacity(u -> v), u ∈ S, v ∉ S.
double bruteForceMinCut(int nodes, const std::vector<FlowEdge>& edges, int source, int sink) {
  double best = std::numeric_limits<double>::infinity();
  for (unsigned mask = 0; mask < (1u << nodes); ++mask) {
    if (!(mask >> source & 1u) || (mask >> sink & 1u)) continue;
    double cut = 0;
    for (const FlowEdge& e : edges)
      if ((mask >> e.from & 1u) && !(mask >> e.to & 1u)) cut += e.capacity;
    best = std::min(best, cut);
  }
  return best;
}

TEST(MaxFlow, EqualsTheBruteForceMinimumCutOnRandomGraphs) {
  SplitMix64 rng(30);
  int checked = 0, positive = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const int nodes = 2 + static_cast<int>(rng.next() % 9);  // 2..10 nodes: 2^10 cuts at most
    const double density = 0.2 + 0.6 * uniform(rng);
    std::vector<FlowEdge> edges;
    for (int u = 0; u < nodes; ++u)
      for (int v = 0; v < nodes; ++v) {
        if (u == v || uniform(rng) > density) continue;
        edges.push_back({u, v, uniform(rng) * 3.0});
        if (uniform(rng) < 0.1) edges.push_back({u, v, uniform(rng)});  // a parallel edge
      }
    const int source = static_cast<int>(rng.next() % static_cast<unsigned>(nodes));
    int sink = static_cast<int>(rng.next() % static_cast<unsigned>(nodes - 1));
    if (sink >= source) ++sink;
    const double flow = attn::model::maxFlow(nodes, edges, source, sink);
    const double cut = bruteForceMinCut(nodes, edges, source, sink);
    EXPECT_NEAR(flow, cut, 1e-12 * std::max(1.0, cut)) << "trial " << trial << ", " << nodes << " nodes";
    ++checked;
    positive += cut > 0;
  }
  EXPECT_EQ(checked, 300);
  EXPECT_GT(positive, 150);  // most graphs connect source and sink
}

TEST(MaxFlow, OneNetworkAnswersManyPairsFromTheZeroFlow) {
  // A layered graph like the attention flow's: asking twice gives the same answer, and the
  // pairs agree with fresh networks.
  SplitMix64 rng(7);
  const int layers = 3, width = 3, nodes = (layers + 1) * width;
  std::vector<FlowEdge> edges;
  for (int k = 0; k < layers; ++k)
    for (int i = 0; i < width; ++i)
      for (int j = 0; j < width; ++j) edges.push_back({k * width + j, (k + 1) * width + i, uniform(rng)});
  attn::model::FlowNetwork network(nodes);
  for (const FlowEdge& e : edges) network.addEdge(e.from, e.to, e.capacity);
  for (int repeat = 0; repeat < 2; ++repeat)
    for (int i = 0; i < width; ++i)
      for (int j = 0; j < width; ++j) {
        const double fresh = bruteForceMinCut(nodes, edges, j, layers * width + i);
        EXPECT_NEAR(network.maxFlow(j, layers * width + i), fresh, 1e-12);
      }
  EXPECT_EQ(network.maxFlow(2, 2), 0.0);
}

// Random causal mean-attention matrices: rows of a lower triangle that sum to 1.
std::vector<Matrix> randomCausalMeans(int layers, int n, std::uint64_t seed) {
  SplitMix64 rng(seed);
  std::vector<Matrix> out;
  for (int l = 0; l < layers; ++l) {
    Matrix a = Matrix::Zero(n, n);
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j <= i; ++j) a(i, j) = static_cast<float>(0.05 + uniform(rng));
      a.row(i) /= a.row(i).sum();
    }
    out.push_back(a);
  }
  return out;
}

TEST(AttentionFlow, OneLayerIsTheResidualAttentionItself) {
  // With one layer every path is one edge: F = Â = 0.5·A + 0.5·I (rows renormalised).
  const std::vector<Matrix> means = randomCausalMeans(1, 6, 3);
  auto flow = attn::model::attentionFlow(means, false);
  ASSERT_TRUE(flow) << flow.error().message();
  auto residual = attn::residualAttention(means[0]);
  ASSERT_TRUE(residual);
  EXPECT_LE(((*flow) - (*residual)).cwiseAbs().maxCoeff(), 1e-6f);
}

TEST(AttentionFlow, IsBoundedByTheSinksInflowAndCausalAndNormalises) {
  const int n = 7, layers = 4;
  const std::vector<Matrix> means = randomCausalMeans(layers, n, 11);
  auto raw = attn::model::attentionFlow(means, false, 2);
  auto normalized = attn::model::attentionFlow(means, true, 1);
  ASSERT_TRUE(raw && normalized);
  auto top = attn::residualAttention(means.back());
  ASSERT_TRUE(top);
  for (int i = 0; i < n; ++i) {
    double sum = 0;
    for (int j = 0; j < n; ++j) {
      if (j > i) {
        EXPECT_EQ((*raw)(i, j), 0.0f) << i << "," << j;  // no path to an earlier token
      }
      // at most what enters the sink: Σ_j Â_top[i, j] = 1
      EXPECT_LE((*raw)(i, j), 1.0f + 1e-6f);
      // at least one path's bottleneck: the chain i -> i -> ... -> i carries
      // min over layers of Â_k[i, i] >= 0.5
      if (j == i) {
        EXPECT_GE((*raw)(i, i), 0.5f - 1e-6f);
      }
      sum += (*raw)(i, j);
    }
    for (int j = 0; j < n; ++j) EXPECT_NEAR((*normalized)(i, j), (*raw)(i, j) / sum, 1e-6);
  }
  // bad input: an empty list, mismatched sizes
  EXPECT_FALSE(attn::model::attentionFlow(std::vector<Matrix>{}, false));
  std::vector<Matrix> mixed = means;
  mixed.push_back(Matrix::Identity(n + 1, n + 1));
  auto refused = attn::model::attentionFlow(mixed, false);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().problem.find("layer 4"), std::string::npos) << refused.error().problem;
}

TEST(HeadCircuits, ProductSingularValuesEqualTheFullSvd) {
  SplitMix64 rng(5);
  for (const auto& [E, k] : std::vector<std::pair<int, int>>{{12, 4}, {9, 9}, {3, 5}}) {
    Eigen::MatrixXd a(E, k), b(E, k);
    for (Eigen::Index i = 0; i < a.size(); ++i) {
      a.data()[i] = uniform(rng) - 0.5;
      b.data()[i] = uniform(rng) - 0.5;
    }
    const Eigen::VectorXd full = Eigen::JacobiSVD<Eigen::MatrixXd>(a * b.transpose()).singularValues();
    const Eigen::VectorXd fast = attn::model::productSingularValues(a, b);
    ASSERT_LE(fast.size(), full.size());
    for (Eigen::Index i = 0; i < full.size(); ++i) {
      const double ours = i < fast.size() ? fast[i] : 0.0;
      EXPECT_NEAR(ours, full[i], 1e-12 * full[0]) << E << "x" << k << " value " << i;
    }
  }
}

// The copying score Σλ/Σ|λ| on matrices whose eigenvalues are known: diag(1, -1, 2) has
// 2 / 4; a quarter turn has ±i (real parts 0, |λ| 1 each); a similar matrix S·D·S⁻¹ keeps
// D's eigenvalues (3, 1, -1: 3 / 5); the zero matrix has no nonzero eigenvalue (NaN).
TEST(HeadCircuits, CopyingScoreIsTheEigenvaluesSumOverTheirAbsoluteSum) {
  EXPECT_NEAR(attn::model::copyingScore(Eigen::Vector3d(1, -1, 2).asDiagonal().toDenseMatrix()), 0.5, 1e-12);
  Eigen::MatrixXd turn(2, 2);
  turn << 0, -1, 1, 0;
  EXPECT_NEAR(attn::model::copyingScore(turn), 0.0, 1e-12);
  Eigen::MatrixXd s(3, 3);
  s << 2, 1, 0, 0, 1, 3, 1, 0, 1;  // det 5
  const Eigen::MatrixXd d = Eigen::Vector3d(3, 1, -1).asDiagonal();
  EXPECT_NEAR(attn::model::copyingScore(s * d * s.inverse()), 0.6, 1e-12);
  EXPECT_TRUE(std::isnan(attn::model::copyingScore(Eigen::MatrixXd::Zero(3, 3))));
  EXPECT_TRUE(std::isnan(attn::model::copyingScore(Eigen::MatrixXd(0, 0))));
}

// A small model of each kind the engine runs differently here.
attn::model::Config smallConfig(bool llama) {
  attn::model::Config c;
  c.nLayer = 3;
  c.nHead = 4;
  c.nEmbd = 32;
  c.nInner = 48;
  c.nPositions = 32;
  c.vocabSize = 40;
  if (llama) {  // GQA, RMSNorm, rotary, SwiGLU, a window on layer 1 only
    c.modelType = "llama";
    c.nHeadKv = 2;
    c.norm = attn::model::NormKind::RmsNorm;
    c.activation = attn::model::Activation::Silu;
    c.qkvLayout = attn::model::QkvLayout::Separate;
    c.gatedMlp = true;
    c.learnedPositions = false;
    c.rotaryDims = c.nEmbd / c.nHead;
    c.qkvBias = c.outBias = c.mlpBias = false;
    c.tiedEmbeddings = false;
    c.layerWindows = {0, 3, 0};
  } else {
    c.nHeadKv = c.nHead;
  }
  return c;
}

std::vector<int> someIds(int n, int vocab) {
  std::vector<int> ids;
  for (int i = 0; i < n; ++i) ids.push_back((7 * i + 3) % vocab);
  return ids;
}

TEST(NormWeighted, EqualsTheWeightsTimesTheTransformedValuesBuiltFromTheWeights) {
  for (bool llama : {false, true}) {
    const attn::model::Config c = smallConfig(llama);
    auto weights = std::make_shared<const attn::model::Weights>(attn::model::randomWeights(c, 12));
    const std::vector<int> ids = someIds(9, c.vocabSize);
    auto hooks = std::make_shared<attn::model::Hooks>();
    hooks->record = true;
    auto run = attn::model::runWithHooks(weights, ids, hooks);
    ASSERT_TRUE(run) << run.error().message();
    const std::vector<float> norm = attn::model::normWeightedAttention(*run);
    const int n = 9, H = c.nHead, dh = c.headDim();
    ASSERT_EQ(norm.size(), static_cast<std::size_t>(c.nLayer * H * n * n));
    double worst = 0, largest = 0;
    for (int l = 0; l < c.nLayer; ++l) {
      // f_h(x_j) = (Norm1(x_j)·W_V^g + b_V^g)·W_O^h from the recorded stream and the weights
      const attn::model::LayerWeights& w = weights->layers[static_cast<std::size_t>(l)];
      Matrix normed;
      attn::model::applyNorm(run->recording().resid[static_cast<std::size_t>(l)], w.norm1, c, normed);
      const Eigen::MatrixXd a = normed.cast<double>();
      Eigen::MatrixXd values, out;
      if (llama) {  // nn.Linear [out, in]
        values = a * w.v.weight.dense().cast<double>().transpose();
        out = w.out.weight.dense().cast<double>().transpose();
      } else {  // Conv1D [in, out], columns q | k | v
        values = (a * w.qkv.weight.dense().cast<double>()).rightCols(c.nEmbd);
        values.rowwise() += w.qkv.bias.vector().cast<double>().tail(c.nEmbd).transpose();
        out = w.out.weight.dense().cast<double>();
      }
      for (int h = 0; h < H; ++h) {
        const int g = h / (H / c.nHeadKv);
        const Eigen::MatrixXd f = values.middleCols(g * dh, dh) * out.middleRows(h * dh, dh);
        const Matrix attention = run->attention(l, h);
        for (int i = 0; i < n; ++i)
          for (int j = 0; j < n; ++j) {
            const double expected = attention(i, j) * f.row(j).norm();
            const double ours = norm[static_cast<std::size_t>(((l * H + h) * n + i) * n + j)];
            worst = std::max(worst, std::abs(ours - expected));
            largest = std::max(largest, std::abs(expected));
          }
      }
    }
    EXPECT_GT(largest, 0.0);
    EXPECT_LE(worst, 1e-5 * largest) << (llama ? "llama" : "gpt2");
    std::cout << "[ measured ] " << (llama ? "llama" : "gpt2") << " norm-weighted: max error " << worst
              << " of max " << largest << "\n";
  }
}

TEST(ValueZeroing, TheOneLayerReRunEqualsWholeModelReRuns) {
  // Z from valueZeroing() against the definition run on the whole model: for every layer l
  // and token j, a full pass whose layer-l heads get z_h − a_h[:, j]·v_{g,j} (Replace hooks),
  // its resid[l + 1] against the clean pass's, cosine distance, rows divided by their sums.
  for (bool llama : {false, true}) {
    const attn::model::Config c = smallConfig(llama);
    auto weights = std::make_shared<const attn::model::Weights>(attn::model::randomWeights(c, 5));
    const std::vector<int> ids = someIds(7, c.vocabSize);
    const int n = 7, dh = c.headDim();
    auto zeroing = attn::model::valueZeroing(weights, ids, 1);
    ASSERT_TRUE(zeroing) << zeroing.error().message();
    auto record = std::make_shared<attn::model::Hooks>();
    record->record = true;
    auto clean = attn::model::runWithHooks(weights, ids, record);
    ASSERT_TRUE(clean);
    double worst = 0;
    for (int l = 0; l < c.nLayer; ++l) {
      Eigen::MatrixXd expected = Eigen::MatrixXd::Zero(n, n);
      for (int j = 0; j < n; ++j) {
        auto hooks = std::make_shared<attn::model::Hooks>();
        hooks->record = true;
        for (int h = 0; h < c.nHead; ++h) {
          const Matrix z = clean->recording().z[static_cast<std::size_t>(l)].middleCols(h * dh, dh);
          const Matrix edited = z - clean->attention(l, h).col(j) * clean->value(l, h).row(j);
          hooks->heads.push_back({l, h, attn::model::HeadEdit::Replace, edited});
        }
        auto zeroed = attn::model::runWithHooks(weights, ids, hooks);
        ASSERT_TRUE(zeroed);
        for (int i = j; i < n; ++i) {
          const Eigen::RowVectorXd y = clean->recording().resid[static_cast<std::size_t>(l + 1)].row(i).cast<double>();
          const Eigen::RowVectorXd yz = zeroed->recording().resid[static_cast<std::size_t>(l + 1)].row(i).cast<double>();
          expected(i, j) = 1.0 - y.dot(yz) / (y.norm() * yz.norm());
        }
      }
      for (int i = 0; i < n; ++i) {
        expected.row(i) /= expected.row(i).sum();
        for (int j = 0; j < n; ++j) {
          const double ours = (*zeroing)[static_cast<std::size_t>((l * n + i) * n + j)];
          worst = std::max(worst, std::abs(ours - expected(i, j)));
          if (j > i) {
            EXPECT_EQ(ours, 0.0) << l << "," << i << "," << j;
          }
        }
      }
    }
    EXPECT_LE(worst, 1e-4) << (llama ? "llama" : "gpt2");
    std::cout << "[ measured ] " << (llama ? "llama" : "gpt2") << " value zeroing, one layer against the whole model: max error "
              << worst << "\n";
  }
}

TEST(HeadCircuits, HeadWeightsReproduceTheEnginesOwnQKVInEveryLayout) {
  // For each q/k/v layout (gpt2's fused Conv1D blocks, gpt_neox's per-head interleaved rows,
  // llama's separate projections with GQA): headWeights()' W and b give the q, k and v the
  // engine computed, LN1(x)·W + b (no rotary here, so q and k stay linear); and the circuits
  // are the full SVD of their products.
  for (int layout = 0; layout < 3; ++layout) {
    attn::model::Config c = smallConfig(layout == 2);
    c.rotaryDims = 0;
    if (layout == 1) {
      c.modelType = "gpt_neox";
      c.qkvLayout = attn::model::QkvLayout::FusedPerHead;
      c.parallelResidual = true;
      c.learnedPositions = false;
      c.tiedEmbeddings = false;
    }
    auto weights = std::make_shared<const attn::model::Weights>(attn::model::randomWeights(c, 40 + layout));
    const std::vector<int> ids = someIds(8, c.vocabSize);
    auto hooks = std::make_shared<attn::model::Hooks>();
    hooks->record = true;
    auto run = attn::model::runWithHooks(weights, ids, hooks);
    ASSERT_TRUE(run) << run.error().message();
    const std::vector<attn::model::HeadCircuit> circuits = attn::model::headCircuits(*weights);
    ASSERT_EQ(circuits.size(), static_cast<std::size_t>(c.nLayer * c.nHead));
    const int dh = c.headDim();
    double worstProjection = 0, worstCircuit = 0;
    for (int l = 0; l < c.nLayer; ++l) {
      Matrix normed;
      attn::model::applyNorm(run->recording().resid[static_cast<std::size_t>(l)],
                             weights->layers[static_cast<std::size_t>(l)].norm1, c, normed);
      const Eigen::MatrixXd a = normed.cast<double>();
      for (int h = 0; h < c.nHead; ++h) {
        const attn::model::HeadWeights hw = attn::model::headWeights(*weights, l, h);
        EXPECT_EQ(hw.kvHead, h / (c.nHead / c.nHeadKv));
        auto check = [&](const Eigen::MatrixXd& w, const Eigen::RowVectorXd& b, const attn::model::MatrixView& engine) {
          const Eigen::MatrixXd ours = (a * w).rowwise() + b;
          const double scale = engine.cast<double>().cwiseAbs().maxCoeff();
          worstProjection = std::max(worstProjection, (ours - engine.cast<double>()).cwiseAbs().maxCoeff() / scale);
        };
        check(hw.q, hw.qBias, run->query(l, h));
        check(hw.k, hw.kBias, run->key(l, h));
        check(hw.v, hw.vBias, run->value(l, h));
        const attn::model::HeadCircuit& circuit = circuits[static_cast<std::size_t>(l * c.nHead + h)];
        EXPECT_EQ(circuit.kvHead, hw.kvHead);
        const Eigen::VectorXd qk = Eigen::JacobiSVD<Eigen::MatrixXd>(hw.q * hw.k.transpose()).singularValues();
        const Eigen::VectorXd ov = Eigen::JacobiSVD<Eigen::MatrixXd>(hw.v * hw.out).singularValues();
        for (int k = 0; k < 8; ++k) {
          const double qkFull = k < dh ? qk[k] : 0.0, ovFull = k < dh ? ov[k] : 0.0;
          worstCircuit = std::max({worstCircuit, std::abs(circuit.qk[static_cast<std::size_t>(k)] - qkFull) / qk[0],
                                   std::abs(circuit.ov[static_cast<std::size_t>(k)] - ovFull) / ov[0]});
        }
      }
    }
    EXPECT_LE(worstProjection, 1e-5) << "layout " << layout;
    EXPECT_LE(worstCircuit, 1e-10) << "layout " << layout;
    std::cout << "[ measured ] layout " << layout << ": q/k/v from headWeights against the engine's "
              << worstProjection << " (relative), circuits against the full SVD " << worstCircuit << "\n";
  }
}

}  // namespace
}  // namespace test_core_mechanisms
