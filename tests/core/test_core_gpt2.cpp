// core/gpt2: the forward pass against an independent plain-loop reference (double
// precision, tests/support/gpt2_fixture.h), the KV cache against full recomputation, the prediction,
// and the session's errors.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <numeric>
#include <vector>

#include "core/models/transformer.h"
#include "tests/support/gpt2_fixture.h"

namespace test_core_gpt2 {
namespace {

using attn::Matrix;
using attn::model::Config;
using attn::model::DecoderRun;
using attn::model::Weights;

constexpr double kTolerance = 1e-4;

// Weights straight from the fixture's named tensors (no file): GPT-2's Conv1D tensors as
// they are stored, [in, out].
std::shared_ptr<const Weights> toWeights(const gpt2test::TinyModel& model) {
  Config c;
  c.modelType = "gpt2";
  c.nLayer = model.config.nLayer;
  c.nHead = c.nHeadKv = model.config.nHead;
  c.nEmbd = model.config.nEmbd;
  c.nInner = 4 * c.nEmbd;
  c.nPositions = model.config.nPositions;
  c.vocabSize = model.vocabSize;
  c.normEpsilon = static_cast<float>(model.config.eps);
  Weights w;
  w.config = c;
  auto tensor = [&](const std::string& name) {
    const auto& t = model.at(name);
    auto buffer = std::make_shared<std::vector<float>>(t.values);
    w.storage.push_back(buffer);
    return attn::model::Tensor{buffer->data(), t.shape[0], t.shape.size() > 1 ? t.shape[1] : 1};
  };
  auto conv = [&](const std::string& name) {
    attn::model::Linear lin;
    lin.weight = tensor(name + ".weight");
    lin.bias = tensor(name + ".bias");
    return lin;
  };
  auto norm = [&](const std::string& name) {
    return attn::model::NormWeights{tensor(name + ".weight"), tensor(name + ".bias")};
  };
  w.embed = tensor("wte.weight");
  w.positions = tensor("wpe.weight");
  for (int l = 0; l < c.nLayer; ++l) {
    const std::string p = "h." + std::to_string(l) + ".";
    attn::model::LayerWeights layer;
    layer.norm1 = norm(p + "ln_1");
    layer.qkv = conv(p + "attn.c_attn");
    layer.out = conv(p + "attn.c_proj");
    layer.norm2 = norm(p + "ln_2");
    layer.up = conv(p + "mlp.c_fc");
    layer.down = conv(p + "mlp.c_proj");
    w.layers.push_back(layer);
  }
  w.finalNorm = norm("ln_f");
  w.lmHead = w.embed;
  return std::make_shared<const Weights>(std::move(w));
}

std::vector<int> someIds(int n, int vocab, int seed) {
  std::vector<int> ids;
  for (int i = 0; i < n; ++i) ids.push_back((i * 37 + seed * 11 + i * i * 5) % vocab);
  return ids;
}

// Every number the session keeps, against the reference.
void expectMatchesReference(const DecoderRun& session, const gpt2test::Reference& ref) {
  const int n = session.size();
  const Config& c = session.config();
  for (int l = 0; l < c.nLayer; ++l) {
    for (int h = 0; h < c.nHead; ++h) {
      Matrix a = session.attention(l, h);
      ASSERT_EQ(a.rows(), n);
      ASSERT_EQ(a.cols(), n);
      for (int i = 0; i < n; ++i) {
        for (int j = 0; j < n; ++j) {
          EXPECT_NEAR(a(i, j), ref.attention[l][h][i][j], kTolerance)
              << "l" << l << " h" << h << " " << i << "," << j;
        }
      }
      auto q = session.query(l, h);
      auto k = session.key(l, h);
      auto v = session.value(l, h);
      ASSERT_EQ(q.rows(), n);
      ASSERT_EQ(q.cols(), c.headDim());
      for (int i = 0; i < n; ++i) {
        for (int d = 0; d < c.headDim(); ++d) {
          EXPECT_NEAR(q(i, d), ref.q[l][h][i][d], kTolerance);
          EXPECT_NEAR(k(i, d), ref.k[l][h][i][d], kTolerance);
          EXPECT_NEAR(v(i, d), ref.v[l][h][i][d], kTolerance);
        }
      }
    }
  }
  ASSERT_EQ(session.logits().size(), c.vocabSize);
  for (int t = 0; t < c.vocabSize; ++t) {
    EXPECT_NEAR(session.logits()[t],
                ref.logits[static_cast<std::size_t>(n - 1)][static_cast<std::size_t>(t)],
                kTolerance)
        << "token " << t;
  }
}

class Gpt2Forward : public ::testing::Test {
 protected:
  void SetUp() override {
    vocab_ = gpt2test::defaultVocabulary();
    model_ = gpt2test::makeTinyModel(gpt2test::TinyConfig{}, vocab_.size(), 7);
    weights_ = toWeights(model_);
  }
  gpt2test::Vocabulary vocab_;
  gpt2test::TinyModel model_;
  std::shared_ptr<const Weights> weights_;
};

// =======================================================================================
// Forward pass vs reference
// =======================================================================================

TEST_F(Gpt2Forward, WeightsValidate) {
  EXPECT_TRUE(attn::model::validate(*weights_).ok());
  EXPECT_EQ(
      weights_->parameterBytes(),
      static_cast<std::size_t>(vocab_.size() * 8 + 24 * 8 +
                               2 * (4 * 8 + 8 * 24 + 24 + 64 + 8 + 8 * 32 + 32 + 32 * 8 + 8) + 16) *
          4);
}

TEST_F(Gpt2Forward, MatchesPlainLoopReference) {
  for (int n : {1, 2, 5, 13, 24}) {
    const std::vector<int> ids = someIds(n, vocab_.size(), n);
    auto session = attn::model::forward(weights_, ids);
    ASSERT_TRUE(session.ok()) << session.error().message();
    SCOPED_TRACE("n = " + std::to_string(n));
    expectMatchesReference(*session, gpt2test::referenceForward(model_, ids));
  }
}

TEST_F(Gpt2Forward, AttentionIsCausalAndRowsSumToOne) {
  const std::vector<int> ids = someIds(11, vocab_.size(), 3);
  auto session = attn::model::forward(weights_, ids);
  ASSERT_TRUE(session.ok());
  for (int l = 0; l < 2; ++l) {
    for (int h = 0; h < 2; ++h) {
      Matrix a = session->attention(l, h);
      for (int i = 0; i < 11; ++i) {
        EXPECT_NEAR(a.row(i).sum(), 1.0f, 1e-5f);
        for (int j = i + 1; j < 11; ++j) EXPECT_EQ(a(i, j), 0.0f);
        auto row = session->attentionRow(l, h, i);
        ASSERT_EQ(row.size(), static_cast<std::size_t>(i + 1));
        for (int j = 0; j <= i; ++j) EXPECT_EQ(row[static_cast<std::size_t>(j)], a(i, j));
      }
      // The first token can only attend to itself.
      EXPECT_FLOAT_EQ(a(0, 0), 1.0f);
    }
  }
  // The test weights make attention far from uniform (otherwise the comparison is weak).
  Matrix a = session->attention(1, 0);
  EXPECT_GT(a.row(10).maxCoeff(), 2.0f / 11.0f);
}

TEST_F(Gpt2Forward, AttentionTensorLayout) {
  const std::vector<int> ids = someIds(6, vocab_.size(), 9);
  auto session = attn::model::forward(weights_, ids);
  ASSERT_TRUE(session.ok());
  const std::vector<float> all = session->attentionTensor();
  ASSERT_EQ(all.size(), 2u * 2u * 6u * 6u);
  for (int l = 0; l < 2; ++l) {
    for (int h = 0; h < 2; ++h) {
      Matrix a = session->attention(l, h);
      for (int i = 0; i < 6; ++i) {
        for (int j = 0; j < 6; ++j) {
          EXPECT_EQ(all[static_cast<std::size_t>(((l * 2 + h) * 6 + i) * 6 + j)], a(i, j));
        }
      }
    }
  }
}

TEST_F(Gpt2Forward, TopKIsSoftmaxOfLogitsSorted) {
  const std::vector<int> ids = someIds(7, vocab_.size(), 1);
  auto session = attn::model::forward(weights_, ids);
  ASSERT_TRUE(session.ok());
  const auto ref = gpt2test::referenceForward(model_, ids);
  const auto& logits = ref.logits.back();
  double maxLogit = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (double z : logits) sum += std::exp(z - maxLogit);
  std::vector<int> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return logits[a] > logits[b]; });

  const auto top = session->topK(10);
  ASSERT_EQ(top.size(), 10u);
  for (std::size_t r = 0; r < top.size(); ++r) {
    EXPECT_EQ(top[r].id, order[r]) << "rank " << r;
    EXPECT_NEAR(top[r].probability, std::exp(logits[order[r]] - maxLogit) / sum, 1e-6);
    EXPECT_NEAR(top[r].logit, logits[order[r]], kTolerance);
    if (r > 0) {
      EXPECT_GE(top[r - 1].probability, top[r].probability);
    }
  }
  // The whole distribution sums to one.
  const auto all = session->topK(1 << 30);
  ASSERT_EQ(all.size(), static_cast<std::size_t>(vocab_.size()));
  double total = 0;
  for (const auto& t : all) total += t.probability;
  EXPECT_NEAR(total, 1.0, 1e-5);
  EXPECT_TRUE(session->topK(0).empty());
  EXPECT_TRUE(session->topK(-3).empty());
}

TEST_F(Gpt2Forward, ResidualNormsMatchEmbeddingsAndGrowPerLayer) {
  const std::vector<int> ids = someIds(5, vocab_.size(), 4);
  auto session = attn::model::forward(weights_, ids);
  ASSERT_TRUE(session.ok());
  Matrix norms = session->residualNorms();
  ASSERT_EQ(norms.rows(), 3);
  ASSERT_EQ(norms.cols(), 5);
  for (int i = 0; i < 5; ++i) {
    double s = 0;
    for (int c = 0; c < 8; ++c) {
      const double x = model_.at("wte.weight").values[static_cast<std::size_t>(ids[i] * 8 + c)] +
                       model_.at("wpe.weight").values[static_cast<std::size_t>(i * 8 + c)];
      s += x * x;
    }
    EXPECT_NEAR(norms(0, i), std::sqrt(s), 1e-5);
    for (int r = 1; r < 3; ++r) EXPECT_GT(norms(r, i), 0.0f);
  }
}

TEST(Gpt2Gelu, TanhFormValues) {
  // 0.5·x·(1 + tanh(√(2/π)(x + 0.044715x³))) at a few points, worked in double.
  for (double x : {-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 3.0}) {
    const double expected =
        0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    EXPECT_NEAR(attn::model::geluTanh(static_cast<float>(x)), expected, 1e-6) << x;
  }
  EXPECT_NEAR(attn::model::geluTanh(1.0f), 0.841192, 1e-6);  // vs exact GELU 0.841345
}

// =======================================================================================
// KV cache
// =======================================================================================

TEST_F(Gpt2Forward, AppendingOneAtATimeEqualsFullRecompute) {
  const std::vector<int> ids = someIds(17, vocab_.size(), 5);
  auto full = attn::model::forward(weights_, ids);
  ASSERT_TRUE(full.ok());
  DecoderRun incremental(weights_);
  for (int i = 0; i < 17; ++i) {
    ASSERT_TRUE(
        incremental.append(std::span<const int>(&ids[static_cast<std::size_t>(i)], 1)).ok());
    ASSERT_EQ(incremental.size(), i + 1);
  }
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 2; ++h) {
      EXPECT_LT((incremental.attention(l, h) - full->attention(l, h)).cwiseAbs().maxCoeff(), 1e-5f);
      EXPECT_LT((Matrix(incremental.query(l, h)) - Matrix(full->query(l, h))).cwiseAbs().maxCoeff(),
                1e-5f);
      EXPECT_LT((Matrix(incremental.value(l, h)) - Matrix(full->value(l, h))).cwiseAbs().maxCoeff(),
                1e-5f);
    }
  EXPECT_LT((incremental.logits() - full->logits()).cwiseAbs().maxCoeff(), 1e-5f);
  EXPECT_LT((incremental.residualNorms() - full->residualNorms()).cwiseAbs().maxCoeff(), 1e-5f);
  expectMatchesReference(incremental, gpt2test::referenceForward(model_, ids));
}

TEST_F(Gpt2Forward, SetTokensReusesTheCommonPrefix) {
  const std::vector<int> first = someIds(12, vocab_.size(), 2);
  std::vector<int> second(first.begin(), first.begin() + 7);
  for (int extra : {3, 99, 150, 4, 8}) second.push_back(extra);

  DecoderRun session(weights_);
  auto reused = session.setTokens(first);
  ASSERT_TRUE(reused.ok());
  EXPECT_EQ(*reused, 0);
  reused = session.setTokens(second);
  ASSERT_TRUE(reused.ok());
  EXPECT_EQ(*reused, 7);
  EXPECT_EQ(session.tokens(), second);
  expectMatchesReference(session, gpt2test::referenceForward(model_, second));

  // The same tokens again: nothing to do, everything reused.
  reused = session.setTokens(second);
  ASSERT_TRUE(reused.ok());
  EXPECT_EQ(*reused, 12);

  // A strict prefix (deleting at the end): the prediction after the shorter text.
  std::vector<int> prefix(second.begin(), second.begin() + 4);
  reused = session.setTokens(prefix);
  ASSERT_TRUE(reused.ok());
  EXPECT_EQ(*reused, 4);
  EXPECT_EQ(session.size(), 4);
  expectMatchesReference(session, gpt2test::referenceForward(model_, prefix));

  // Everything different from the first token on.
  std::vector<int> other = someIds(9, vocab_.size(), 30);
  other[0] = prefix[0] == 5 ? 6 : 5;
  reused = session.setTokens(other);
  ASSERT_TRUE(reused.ok());
  EXPECT_EQ(*reused, 0);
  expectMatchesReference(session, gpt2test::referenceForward(model_, other));

  // Empty: no tokens, no prediction.
  reused = session.setTokens({});
  ASSERT_TRUE(reused.ok());
  EXPECT_EQ(session.size(), 0);
  EXPECT_EQ(session.logits().size(), 0);
  EXPECT_TRUE(session.topK(10).empty());
  EXPECT_EQ(session.residualNorms().cols(), 0);
}

TEST_F(Gpt2Forward, TwoSessionsTakingTurnsCatchUpFromTheirOwnPrefix) {
  // The compute worker's pattern: update the session the UI does not hold.
  const std::vector<int> ids = someIds(10, vocab_.size(), 12);
  DecoderRun sessions[2] = {DecoderRun(weights_), DecoderRun(weights_)};
  for (int n = 1; n <= 10; ++n) {
    DecoderRun& s = sessions[n % 2];
    const std::vector<int> prefix(ids.begin(), ids.begin() + n);
    auto reused = s.setTokens(prefix);
    ASSERT_TRUE(reused.ok());
    EXPECT_EQ(*reused, std::max(0, n - 2)) << n;  // it last saw the text two keystrokes ago
    auto fresh = attn::model::forward(weights_, prefix);
    ASSERT_TRUE(fresh.ok());
    EXPECT_LT((s.logits() - fresh->logits()).cwiseAbs().maxCoeff(), kTolerance);
    EXPECT_LT((s.attention(1, 1) - fresh->attention(1, 1)).cwiseAbs().maxCoeff(), 1e-5f);
  }
}

TEST_F(Gpt2Forward, TruncateThenAppendEqualsFresh) {
  const std::vector<int> ids = someIds(15, vocab_.size(), 6);
  DecoderRun session(weights_);
  ASSERT_TRUE(session.setTokens(ids).ok());
  session.truncate(6);
  std::vector<int> expected(ids.begin(), ids.begin() + 6);
  expectMatchesReference(session, gpt2test::referenceForward(model_, expected));
  const std::vector<int> more = {10, 20, 30};
  ASSERT_TRUE(session.append(more).ok());
  expected.insert(expected.end(), more.begin(), more.end());
  expectMatchesReference(session, gpt2test::referenceForward(model_, expected));
  session.truncate(100);  // larger than size(): ignored
  EXPECT_EQ(session.size(), 9);
  session.clear();
  EXPECT_EQ(session.size(), 0);
}

// =======================================================================================
// Errors
// =======================================================================================

TEST_F(Gpt2Forward, BadIdsAndTooManyTokensLeaveTheSessionUnchanged) {
  DecoderRun session(weights_);
  const std::vector<int> ids = someIds(5, vocab_.size(), 8);
  ASSERT_TRUE(session.setTokens(ids).ok());
  const attn::Vector logits = session.logits();

  std::vector<int> bad = ids;
  bad.push_back(vocab_.size());
  auto result = session.setTokens(bad);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.error().message().find("token 5 has id " + std::to_string(vocab_.size())),
            std::string::npos)
      << result.error().message();
  bad.back() = -1;
  EXPECT_FALSE(session.append(std::vector<int>{-1}).ok());

  std::vector<int> tooMany = someIds(25, vocab_.size(), 8);  // n_positions = 24
  result = session.setTokens(tooMany);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.error().message().find("25 tokens are more than the model's context of 24"),
            std::string::npos);
  std::vector<int> twenty(20, 1);
  EXPECT_FALSE(session.append(twenty).ok());  // 5 + 20 > 24

  EXPECT_EQ(session.tokens(), ids);
  EXPECT_EQ((session.logits() - logits).cwiseAbs().maxCoeff(), 0.0f);
}

TEST(Gpt2Config, Validation) {
  Config c;
  EXPECT_TRUE(attn::model::validate(c).ok());
  c.nHead = 7;
  auto s = attn::model::validate(c);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().field, "n_head");
  c = Config{};
  c.nLayer = 0;
  EXPECT_EQ(attn::model::validate(c).error().field, "n_layer");
  c = Config{};
  c.normEpsilon = 0;
  EXPECT_EQ(attn::model::validate(c).error().field, "layer_norm_epsilon");
  c = Config{};
  c.vocabSize = attn::model::kMaxVocab + 1;
  EXPECT_EQ(attn::model::validate(c).error().field, "vocab_size");
}

TEST(Gpt2Weights, ValidateNamesTheTensor) {
  Config c;
  c.nLayer = 2;
  c.nHead = c.nHeadKv = 2;
  c.nEmbd = 4;
  c.nInner = 16;
  c.nPositions = 8;
  c.vocabSize = 10;
  Weights w = attn::model::randomWeights(c, 1);
  EXPECT_TRUE(attn::model::validate(w).ok());
  // The core names the tensor by its role (the checkpoint's names are formats/models').
  w.layers[1].down.weight.rows = 15;
  auto s = attn::model::validate(w);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message(), "tensor layer 1 mlp down weight: shape [15, 4], expected [16, 4]");
}

}  // namespace
}  // namespace test_core_gpt2
