// Core attention math: every score function, mask and normaliser against hand-worked numbers,
// and attend() against the seed's decoder example and independent naive formulations.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/attention/attention.h"
#include "tests/support/test_core_util.h"

namespace attn {
namespace test_core_attention {
namespace {

using testing::B;
using testing::M;
using testing::MatrixNear;
using testing::randomMatrix;
using testing::V;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr double kTol = 1e-5;

// =======================================================================================
// Step 2: score functions. One query q = [1, 2]; keys k0 = [3, 1], k1 = [0, -1].
// =======================================================================================

class Similarity : public ::testing::Test {
 protected:
  Matrix q = M({{1, 2}});
  Matrix k = M({{3, 1}, {0, -1}});
};

TEST_F(Similarity, Dot) {
  // q·k0 = 1·3 + 2·1 = 5; q·k1 = 1·0 + 2·(-1) = -2
  EXPECT_TRUE(MatrixNear(similarity(ScoreKind::Dot, q, k, {}), M({{5, -2}}), kTol));
}

TEST_F(Similarity, ScaledDot) {
  // d_h = 2: 5/√2 = 3.5355339, -2/√2 = -1.4142136
  EXPECT_TRUE(
      MatrixNear(similarity(ScoreKind::ScaledDot, q, k, {}), M({{3.5355339f, -1.4142136f}}), kTol));
}

TEST_F(Similarity, Cosine) {
  // |q| = √5, |k0| = √10, |k1| = 1: 5/√50 = 0.70710678; -2/√5 = -0.89442719
  std::vector<Warning> warnings;
  EXPECT_TRUE(MatrixNear(similarity(ScoreKind::Cosine, q, k, {}, &warnings),
                         M({{0.70710678f, -0.89442719f}}), kTol));
  EXPECT_TRUE(warnings.empty());
}

TEST_F(Similarity, CosineIsScaleInvariantAndBoundedForHugeVectors) {
  // Norms of 3e38-sized entries overflow float if computed naively; cosine must still be ±1.
  Matrix big = M({{3e38f, 3e38f}});
  Matrix keys = M({{1, 1}, {-2e38f, -2e38f}});
  Matrix s = similarity(ScoreKind::Cosine, big, keys, {});
  EXPECT_TRUE(MatrixNear(s, M({{1, -1}}), 1e-6));
}

TEST_F(Similarity, CosineZeroVectorScoresZeroAndWarns) {
  // The zero query and the zero key have no direction: score 0, never NaN, and reported.
  Matrix queries = M({{0, 0}, {1, 0}});
  Matrix keys = M({{1, 1}, {0, 0}});
  std::vector<Warning> warnings;
  Matrix s = similarity(ScoreKind::Cosine, queries, keys, {}, &warnings, 3);
  // row 0 all 0 (zero query); row 1: [1,0]·[1,1]/√2 = 0.70710678, zero key -> 0
  EXPECT_TRUE(MatrixNear(s, M({{0, 0}, {0.70710678f, 0}}), kTol));
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_EQ(warnings[0].code, "cosine_zero_vector");
  EXPECT_EQ(warnings[0].head, 3);
  EXPECT_EQ(warnings[0].row, 0);  // query 0
  EXPECT_EQ(warnings[1].code, "cosine_zero_vector");
  EXPECT_EQ(warnings[1].row, -1);  // a key, not a query row
  EXPECT_NE(warnings[1].message.find("key 1"), std::string::npos);
}

TEST_F(Similarity, General) {
  // W_a = [[1, 0], [2, 1]]: q·W_a = [1 + 4, 0 + 2] = [5, 2];
  // [5, 2]·k0 = 15 + 2 = 17; [5, 2]·k1 = 0 - 2 = -2
  ScoreParams p;
  p.generalW = M({{1, 0}, {2, 1}});
  EXPECT_TRUE(MatrixNear(similarity(ScoreKind::General, q, k, p), M({{17, -2}}), kTol));
}

TEST_F(Similarity, Additive) {
  // W₁ = I, W₂ = 0.5·I, b = [0, -1], v = [1, 2] (d_a = 2).
  // q·W₁ + b = [1, 1].
  // k0·W₂ = [1.5, 0.5] -> tanh([2.5, 1.5])·v = 0.98661430 + 2·0.90514825 = 2.79691081
  // k1·W₂ = [0, -0.5]  -> tanh([1.0, 0.5])·v = 0.76159416 + 2·0.46211716 = 1.68582847
  ScoreParams p;
  p.additiveWq = M({{1, 0}, {0, 1}});
  p.additiveWk = M({{0.5f, 0}, {0, 0.5f}});
  p.additiveBias = V({0, -1});
  p.additiveV = V({1, 2});
  EXPECT_TRUE(
      MatrixNear(similarity(ScoreKind::Additive, q, k, p), M({{2.79691081f, 1.68582847f}}), 1e-5));
}

TEST_F(Similarity, Mlp) {
  // d_m = 1: W_h = [1, -1, 0.5, 1]ᵀ (rows: q0, q1, k0, k1), b_h = 0.5, w_o = 2, b_o = -1.
  // k0: [1, 2, 3, 1]·W_h + 0.5 = 1 - 2 + 1.5 + 1 + 0.5 = 2   -> 2·tanh(2) - 1 = 0.92805516
  // k1: [1, 2, 0, -1]·W_h + 0.5 = 1 - 2 + 0 - 1 + 0.5 = -1.5 -> 2·tanh(-1.5) - 1 = -2.81029651
  ScoreParams p;
  p.mlpHiddenW = M({{1}, {-1}, {0.5f}, {1}});
  p.mlpHiddenBias = V({0.5f});
  p.mlpOutW = V({2});
  p.mlpOutBias = -1;
  EXPECT_TRUE(
      MatrixNear(similarity(ScoreKind::Mlp, q, k, p), M({{0.92805516f, -2.81029651f}}), 1e-5));
}

TEST_F(Similarity, AdditiveMatchesNaiveLoopOnRandomData) {
  const int dH = 5, dA = 7;
  Matrix queries = randomMatrix(6, dH, 1), keys = randomMatrix(9, dH, 2);
  ScoreParams p = completeScoreParams(ScoreKind::Additive, {}, dH, dA, 42);
  p.additiveBias = randomMatrix(dA, 1, 3).col(0);
  Matrix s = similarity(ScoreKind::Additive, queries, keys, p);
  Matrix naive(6, 9);
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 9; ++j) {
      double total = 0;
      for (int a = 0; a < dA; ++a) {
        double pre = p.additiveBias(a);
        for (int c = 0; c < dH; ++c)
          pre +=
              double(queries(i, c)) * p.additiveWq(c, a) + double(keys(j, c)) * p.additiveWk(c, a);
        total += p.additiveV(a) * std::tanh(pre);
      }
      naive(i, j) = static_cast<float>(total);
    }
  EXPECT_TRUE(MatrixNear(s, naive, 1e-5));
}

TEST_F(Similarity, InvalidParamsGiveZerosAndAWarningNotACrash) {
  ScoreParams p;
  p.generalW = M({{1, 2, 3}});
  std::vector<Warning> warnings;
  Matrix s = similarity(ScoreKind::General, q, k, p, &warnings);
  EXPECT_TRUE(MatrixNear(s, M({{0, 0}}), 0));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].code, "invalid_score_params");
}

TEST(CompleteScoreParams, FillsOnlyWhatIsMissingDeterministically) {
  ScoreParams given;
  given.additiveV = V({1, 2, 3});  // d_a = 3 comes from the given field
  ScoreParams a = completeScoreParams(ScoreKind::Additive, given, 4, 0, 9);
  ScoreParams b = completeScoreParams(ScoreKind::Additive, given, 4, 0, 9);
  ScoreParams c = completeScoreParams(ScoreKind::Additive, given, 4, 0, 10);
  EXPECT_EQ(a.additiveWq.rows(), 4);
  EXPECT_EQ(a.additiveWq.cols(), 3);
  EXPECT_EQ(a.additiveWk.cols(), 3);
  EXPECT_TRUE(MatrixNear(a.additiveBias, Matrix::Zero(3, 1), 0));
  EXPECT_TRUE(MatrixNear(a.additiveV, V({1, 2, 3}), 0));  // kept
  EXPECT_TRUE(MatrixNear(a.additiveWq, b.additiveWq, 0));
  EXPECT_FALSE(MatrixNear(a.additiveWq, c.additiveWq, 0));
  EXPECT_FALSE(MatrixNear(a.additiveWq, a.additiveWk, 0));  // W₁ and W₂ are independent

  ScoreParams mlp = completeScoreParams(ScoreKind::Mlp, {}, 3, 5, 1);
  EXPECT_EQ(mlp.mlpHiddenW.rows(), 6);
  EXPECT_EQ(mlp.mlpHiddenW.cols(), 5);
  EXPECT_EQ(mlp.mlpHiddenBias.size(), 5);
  EXPECT_EQ(mlp.mlpOutW.size(), 5);
  ScoreParams general = completeScoreParams(ScoreKind::General, {}, 3, 0, 1);
  EXPECT_EQ(general.generalW.rows(), 3);
  EXPECT_EQ(general.generalW.cols(), 3);
  ScoreParams dot = completeScoreParams(ScoreKind::Dot, {}, 3, 0, 1);
  EXPECT_EQ(dot.generalW.size(), 0);
  EXPECT_EQ(dot.additiveWq.size(), 0);
}

// =======================================================================================
// Step 3: masks
// =======================================================================================

TEST(Mask, None) {
  EXPECT_TRUE((buildMask({}, 2, 3).array() == true).all());
}

TEST(Mask, CausalSquare) {
  MaskOptions mask;
  mask.kind = MaskKind::Causal;
  EXPECT_EQ(buildMask(mask, 3, 4), B({{1, 0, 0, 0}, {1, 1, 0, 0}, {1, 1, 1, 0}}));
}

TEST(Mask, CausalCrossAttentionStillJLessOrEqualI) {
  MaskOptions mask;
  mask.kind = MaskKind::Causal;
  EXPECT_EQ(buildMask(mask, 4, 2), B({{1, 0}, {1, 1}, {1, 1}, {1, 1}}));
}

TEST(Mask, Padding) {
  MaskOptions mask;
  mask.kind = MaskKind::Padding;
  mask.keyValid = {true, true, false, true};
  EXPECT_EQ(buildMask(mask, 2, 4), B({{1, 1, 0, 1}, {1, 1, 0, 1}}));
}

TEST(Mask, LocalAligned) {
  // |j - i| <= 1
  MaskOptions mask;
  mask.kind = MaskKind::Local;
  mask.window = 1;
  Matrix weights = M({{7}});
  EXPECT_EQ(buildMask(mask, 4, 4, &weights),
            B({{1, 1, 0, 0}, {1, 1, 1, 0}, {0, 1, 1, 1}, {0, 0, 1, 1}}));
  EXPECT_EQ(weights.size(), 0);  // only local_gaussian has position weights
}

TEST(Mask, LocalFixedPosition) {
  // p = 2, D = 1: keys 1, 2, 3 for every query
  MaskOptions mask;
  mask.kind = MaskKind::Local;
  mask.window = 1;
  mask.center = MaskOptions::Center::Fixed;
  mask.position = 2;
  EXPECT_EQ(buildMask(mask, 2, 5), B({{0, 1, 1, 1, 0}, {0, 1, 1, 1, 0}}));
}

TEST(Mask, LocalHugeWindowDoesNotOverflow) {
  MaskOptions mask;
  mask.kind = MaskKind::Local;
  mask.window = std::numeric_limits<int>::max();
  EXPECT_TRUE((buildMask(mask, 3, 3).array() == true).all());
}

TEST(Mask, LocalGaussianWeights) {
  // D = 2 -> σ = 1: distance 0 -> 1, 1 -> exp(-1/2) = 0.60653066, 2 -> exp(-2) = 0.13533528,
  // 3 -> outside the window (masked, weight 0).
  MaskOptions mask;
  mask.kind = MaskKind::LocalGaussian;
  mask.window = 2;
  Matrix weights;
  BoolMatrix allowed = buildMask(mask, 1, 4, &weights);
  EXPECT_EQ(allowed, B({{1, 1, 1, 0}}));
  EXPECT_TRUE(MatrixNear(weights, M({{1, 0.60653066f, 0.13533528f, 0}}), 1e-6));
}

TEST(Mask, LocalGaussianZeroWindowHasNoNaN) {
  // D = 0 -> σ = 0: only j = p is allowed and its weight is 1 (the limit), not 0/0.
  MaskOptions mask;
  mask.kind = MaskKind::LocalGaussian;
  mask.window = 0;
  Matrix weights;
  BoolMatrix allowed = buildMask(mask, 3, 3, &weights);
  EXPECT_EQ(allowed, B({{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}));
  EXPECT_TRUE(MatrixNear(weights, Matrix::Identity(3, 3), 0));
}

TEST(Mask, Custom) {
  MaskOptions mask;
  mask.kind = MaskKind::Custom;
  mask.custom = B({{0, 1}, {1, 0}});
  EXPECT_EQ(buildMask(mask, 2, 2), mask.custom);
}

// =======================================================================================
// Step 4: normalisers, one row at a time
// =======================================================================================

struct RowResult {
  bool ok;
  std::vector<float> weights;
};

RowResult normalize(NormalizerKind kind, std::vector<float> scores, std::vector<int> allowed = {},
                    int topK = 2) {
  if (allowed.empty()) allowed.assign(scores.size(), 1);
  std::unique_ptr<bool[]> allowedBools(new bool[allowed.size()]);
  for (std::size_t j = 0; j < allowed.size(); ++j) allowedBools[j] = allowed[j] != 0;
  NormalizerOptions options;
  options.kind = kind;
  options.topK = topK;
  RowResult result;
  result.weights.assign(scores.size(), -7.0f);  // garbage that must be overwritten
  result.ok = normalizeRow(options, scores.data(), allowedBools.get(),
                           static_cast<int>(scores.size()), result.weights.data());
  return result;
}

void expectWeights(const RowResult& result, std::vector<float> expected, double tol = 1e-6) {
  ASSERT_EQ(result.weights.size(), expected.size());
  for (std::size_t j = 0; j < expected.size(); ++j)
    EXPECT_NEAR(result.weights[j], expected[j], tol) << "key " << j;
}

TEST(Softmax, HandWorked) {
  // exp([1, 2, 3] - 3) = [e^-2, e^-1, 1] / 1.50321 = [0.09003057, 0.24472847, 0.66524096]
  auto r = normalize(NormalizerKind::Softmax, {1, 2, 3});
  EXPECT_TRUE(r.ok);
  expectWeights(r, {0.09003057f, 0.24472847f, 0.66524096f});
}

TEST(Softmax, LargeScoresAreStable) {
  // The seed's example: 927 and 929 overflow a naive exp. exp(-2)/(1 + exp(-2)) = 0.11920292.
  auto r = normalize(NormalizerKind::Softmax, {927, 929});
  expectWeights(r, {0.11920292f, 0.88079708f});
}

TEST(Softmax, PlusMinus1e30HasNoNaN) {
  auto r = normalize(NormalizerKind::Softmax, {1e30f, -1e30f, 1e30f});
  expectWeights(r, {0.5f, 0, 0.5f}, 0);
  auto s = normalize(NormalizerKind::Softmax, {-1e30f, -1e30f});
  expectWeights(s, {0.5f, 0.5f}, 0);
  auto t = normalize(NormalizerKind::Softmax,
                     {std::numeric_limits<float>::max(), -std::numeric_limits<float>::max()});
  expectWeights(t, {1, 0}, 0);
}

TEST(Softmax, FarBelowTheMaximumIsExactlyZeroNotDenormal) {
  // exp(-100) underflows to a denormal in float; the weight is 0 (and the row still sums to 1)
  auto r = normalize(NormalizerKind::Softmax, {0, -100, -50});
  EXPECT_EQ(r.weights[1], 0.0f);
  EXPECT_NEAR(r.weights[2], std::exp(-50.0) / (1 + std::exp(-50.0)), 1e-28);
  EXPECT_GT(r.weights[2], 0.0f);
  EXPECT_NEAR(r.weights[0], 1.0f, 1e-7);
}

TEST(Softmax, RowsSumToOneAndShiftInvariant) {
  std::vector<float> scores = {0.3f, -1.2f, 2.5f, 0.0f, 1.1f};
  std::vector<float> shifted;
  for (float s : scores) shifted.push_back(s + 1000.0f);
  auto a = normalize(NormalizerKind::Softmax, scores);
  auto b = normalize(NormalizerKind::Softmax, shifted);
  double sum = 0;
  for (std::size_t j = 0; j < scores.size(); ++j) {
    sum += a.weights[j];
    EXPECT_GT(a.weights[j], 0);
    EXPECT_NEAR(a.weights[j], b.weights[j], 2e-4);  // 1000 + s loses ~6e-5 of s in float32
  }
  EXPECT_NEAR(sum, 1.0, 1e-6);
}

TEST(Softmax, MaskedKeysAreExactlyZero) {
  // allowed [1, 0, 1]: softmax over [1, 3] = [0.11920292, 0.88079708]; key 1 exactly 0
  auto r = normalize(NormalizerKind::Softmax, {1, 100, 3}, {1, 0, 1});
  EXPECT_EQ(r.weights[1], 0.0f);
  expectWeights(r, {0.11920292f, 0, 0.88079708f});
  // -inf scores of allowed keys also get exactly 0
  auto s = normalize(NormalizerKind::Softmax, {-kInf, 0});
  expectWeights(s, {0, 1}, 0);
}

TEST(Softmax, FullyMaskedRowIsZeroAndReported) {
  auto r = normalize(NormalizerKind::Softmax, {1, 2}, {0, 0});
  EXPECT_FALSE(r.ok);
  expectWeights(r, {0, 0}, 0);
  auto s = normalize(NormalizerKind::Softmax, {-kInf, -kInf});
  EXPECT_FALSE(s.ok);
  expectWeights(s, {0, 0}, 0);
  for (auto kind : {NormalizerKind::Hard, NormalizerKind::TopK, NormalizerKind::Sparsemax}) {
    auto t = normalize(kind, {1, 2}, {0, 0});
    EXPECT_FALSE(t.ok);
    expectWeights(t, {0, 0}, 0);
  }
}

TEST(Hard, OneHotAndTiesSplit) {
  expectWeights(normalize(NormalizerKind::Hard, {1, 3, 2}), {0, 1, 0}, 0);
  // two maxima share: [0, 0.5, 0.5, 0]
  expectWeights(normalize(NormalizerKind::Hard, {1, 3, 3, 2}), {0, 0.5f, 0.5f, 0}, 0);
  // three-way tie: 1/3 each
  expectWeights(normalize(NormalizerKind::Hard, {2, 2, 2}), {1 / 3.0f, 1 / 3.0f, 1 / 3.0f});
  // argmax over allowed keys only
  expectWeights(normalize(NormalizerKind::Hard, {1, 3, 2}, {1, 0, 1}), {0, 0, 1}, 0);
}

TEST(TopK, SoftmaxOverTheKLargest) {
  // k = 2 of [1, 3, 2, 0]: softmax([3, 2]) = [0.73105858, 0.26894142] on keys 1 and 2
  expectWeights(normalize(NormalizerKind::TopK, {1, 3, 2, 0}, {}, 2),
                {0, 0.73105858f, 0.26894142f, 0});
  // k = 1 is hard attention (without tie splitting)
  expectWeights(normalize(NormalizerKind::TopK, {1, 3, 2, 0}, {}, 1), {0, 1, 0, 0}, 0);
}

TEST(TopK, BoundaryTiesGoToTheLowerIndex) {
  // [2, 1, 1, 1], k = 2: key 0 and then the lowest-index 1 (key 1): softmax([2, 1])
  expectWeights(normalize(NormalizerKind::TopK, {2, 1, 1, 1}, {}, 2),
                {0.73105858f, 0.26894142f, 0, 0});
  // [1, 2, 2, 2], k = 2: keys 1 and 2
  expectWeights(normalize(NormalizerKind::TopK, {1, 2, 2, 2}, {}, 2), {0, 0.5f, 0.5f, 0});
}

TEST(TopK, KLargerThanAllowedKeepsAllAllowed) {
  // 2 allowed keys, k = 5: plain softmax over them, [1, 3] -> [0.11920292, 0.88079708]
  expectWeights(normalize(NormalizerKind::TopK, {1, 9, 3}, {1, 0, 1}, 5),
                {0.11920292f, 0, 0.88079708f});
  // masked keys are not counted among the k largest
  expectWeights(normalize(NormalizerKind::TopK, {1, 9, 3, 0}, {1, 0, 1, 1}, 2),
                {0.11920292f, 0, 0.88079708f, 0});
}

TEST(Sparsemax, WorkedExample) {
  // z = [1, 0.5, -1]; sorted z = [1, 0.5, -1], cumulative sums [1, 1.5, 0.5].
  // k = 1: 1 + 1·1 = 2 > 1 yes; k = 2: 1 + 2·0.5 = 2 > 1.5 yes; k = 3: 1 + 3·(-1) = -2 > 0.5 no.
  // k(z) = 2, τ = (1.5 - 1)/2 = 0.25, p = max(z - τ, 0) = [0.75, 0.25, 0].
  expectWeights(normalize(NormalizerKind::Sparsemax, {1, 0.5f, -1}), {0.75f, 0.25f, 0});
}

TEST(Sparsemax, MoreExamples) {
  // equal scores: uniform (k = 3, τ = (0 - 1)/3 = -1/3)
  expectWeights(normalize(NormalizerKind::Sparsemax, {0, 0, 0}), {1 / 3.0f, 1 / 3.0f, 1 / 3.0f});
  // [3, 0, 0]: k = 1 (1 + 2·0 = 1 > 3 fails at k = 2), τ = 2 -> [1, 0, 0]
  expectWeights(normalize(NormalizerKind::Sparsemax, {3, 0, 0}), {1, 0, 0});
  // [0.2, 0.1]: k = 2 (1 + 0.2 > 0.3), τ = (0.3 - 1)/2 = -0.35 -> [0.55, 0.45]
  expectWeights(normalize(NormalizerKind::Sparsemax, {0.2f, 0.1f}), {0.55f, 0.45f});
  // masked key 1 is ignored: same as the worked example
  expectWeights(normalize(NormalizerKind::Sparsemax, {1, 5, 0.5f, -1}, {1, 0, 1, 1}),
                {0.75f, 0, 0.25f, 0});
  // ±1e30: no NaN, all weight on the large one
  expectWeights(normalize(NormalizerKind::Sparsemax, {1e30f, -1e30f}), {1, 0}, 0);
  // shift invariance
  auto a = normalize(NormalizerKind::Sparsemax, {0.3f, 0.9f, 0.5f, -0.2f});
  auto b = normalize(NormalizerKind::Sparsemax, {10.3f, 10.9f, 10.5f, 9.8f});
  expectWeights(b, a.weights, 1e-5);
  double sum = 0;
  for (float w : a.weights) sum += w;
  EXPECT_NEAR(sum, 1.0, 1e-6);
}

// =======================================================================================
// attend(): whole mechanism
// =======================================================================================

// The seed's decoder example: decoder state h = [5, 1, 20] against four annotations.
TEST(Attend, DecoderStateExample) {
  Inputs in;
  in.queries = M({{5, 1, 20}});
  in.keys = M({{3, 12, 45}, {59, 2, 5}, {1, 43, 5}, {4, 3, 45.3f}});
  in.values = in.keys;
  Options options;
  options.score = ScoreKind::Dot;
  auto result = attend(in, options);
  ASSERT_TRUE(result.ok()) << result.error().message();
  const HeadResult& head = result->heads.at(0);
  // 5·3 + 1·12 + 20·45 = 927; 295 + 2 + 100 = 397; 5 + 43 + 100 = 148; 20 + 3 + 906 = 929
  EXPECT_TRUE(MatrixNear(headScores(*result, 0), M({{927, 397, 148, 929}}), 1e-3));
  // softmax: exp(-2)/(1 + exp(-2)) = 0.1192, the rest to key 3; 397 and 148 underflow to 0
  EXPECT_TRUE(MatrixNear(head.weights, M({{0.11920292f, 0, 0, 0.88079708f}}), 2e-5));
  // context = 0.1192·[3, 12, 45] + 0.8808·[4, 3, 45.3] = [3.88080, 4.07283, 45.26424]
  EXPECT_TRUE(MatrixNear(head.context, M({{3.88079708f, 4.07282630f, 45.26423912f}}), 2e-4));
  EXPECT_TRUE(MatrixNear(result->output, head.context, 0));  // identity: output = concat
  EXPECT_TRUE(result->warnings.empty());
}

// Plain single-head attention written out independently: softmax(q·kᵀ/√d)·v, in double.
Matrix naiveSingleHead(const Matrix& q, const Matrix& k, const Matrix& v, double temperature = 1) {
  const int nQ = int(q.rows()), nK = int(k.rows()), d = int(q.cols());
  Matrix out = Matrix::Zero(nQ, v.cols());
  for (int i = 0; i < nQ; ++i) {
    std::vector<double> s(nK);
    double maxS = -1e300, sum = 0;
    for (int j = 0; j < nK; ++j) {
      double dot = 0;
      for (int c = 0; c < d; ++c) dot += double(q(i, c)) * k(j, c);
      s[j] = dot / std::sqrt(double(d)) / temperature;
      maxS = std::max(maxS, s[j]);
    }
    for (double& x : s) sum += (x = std::exp(x - maxS));
    for (int j = 0; j < nK; ++j)
      for (int c = 0; c < v.cols(); ++c) out(i, c) += float(s[j] / sum * v(j, c));
  }
  return out;
}

TEST(Attend, OneHeadEqualsPlainAttention) {
  Inputs in{randomMatrix(5, 4, 11), randomMatrix(7, 4, 12), randomMatrix(7, 3, 13)};
  Options options;  // scaled_dot, 1 head, identity
  auto result = attend(in, options);
  ASSERT_TRUE(result.ok());
  EXPECT_TRUE(MatrixNear(result->output, naiveSingleHead(in.queries, in.keys, in.values), 1e-5));
  for (int i = 0; i < 5; ++i) EXPECT_NEAR(result->heads[0].weights.row(i).sum(), 1.0f, 1e-5);
  EXPECT_TRUE(MatrixNear(result->weightsMean, result->heads[0].weights, 0));
}

TEST(Attend, TemperatureDividesScores) {
  Inputs in{randomMatrix(3, 4, 21), randomMatrix(5, 4, 22), randomMatrix(5, 2, 23)};
  Options options;
  options.temperature = 2.5f;
  auto result = attend(in, options);
  ASSERT_TRUE(result.ok());
  EXPECT_TRUE(MatrixNear(headMaskedScores(*result, 0), headScores(*result, 0) / 2.5f, 1e-6));
  EXPECT_TRUE(
      MatrixNear(result->output, naiveSingleHead(in.queries, in.keys, in.values, 2.5), 1e-5));
}

// Multi-head attention as a plain loop over heads and columns, from the full-width matrices.
struct NaiveMultiHead {
  Matrix concat, output;
  std::vector<Matrix> weights;
};

NaiveMultiHead naiveMultiHead(const Inputs& in, const Projections& p, int heads, bool causal) {
  const int nQ = int(in.queries.rows()), nK = int(in.keys.rows());
  const int dModel = int(p.wq.cols()), dvModel = int(p.wv.cols());
  const int dH = dModel / heads, dvH = dvModel / heads;
  auto project = [](const Matrix& x, const Matrix& w, const Vector& b, int col0, int width) {
    Matrix out(x.rows(), width);
    for (int r = 0; r < x.rows(); ++r)
      for (int c = 0; c < width; ++c) {
        double acc = b.size() ? b(col0 + c) : 0.0;
        for (int e = 0; e < x.cols(); ++e) acc += double(x(r, e)) * w(e, col0 + c);
        out(r, c) = float(acc);
      }
    return out;
  };
  NaiveMultiHead result;
  result.concat = Matrix::Zero(nQ, dvModel);
  for (int h = 0; h < heads; ++h) {
    Matrix q = project(in.queries, p.wq, p.bq, h * dH, dH);
    Matrix k = project(in.keys, p.wk, p.bk, h * dH, dH);
    Matrix v = project(in.values, p.wv, p.bv, h * dvH, dvH);
    Matrix w = Matrix::Zero(nQ, nK);
    for (int i = 0; i < nQ; ++i) {
      std::vector<double> s(nK, -1e300);
      double maxS = -1e300, sum = 0;
      for (int j = 0; j < nK; ++j) {
        if (causal && j > i) continue;
        double dot = 0;
        for (int c = 0; c < dH; ++c) dot += double(q(i, c)) * k(j, c);
        s[j] = dot / std::sqrt(double(dH));
        maxS = std::max(maxS, s[j]);
      }
      for (int j = 0; j < nK; ++j)
        if (!(causal && j > i)) sum += std::exp(s[j] - maxS);
      for (int j = 0; j < nK; ++j)
        if (!(causal && j > i)) w(i, j) = float(std::exp(s[j] - maxS) / sum);
      for (int c = 0; c < dvH; ++c) {
        double acc = 0;
        for (int j = 0; j < nK; ++j) acc += double(w(i, j)) * v(j, c);
        result.concat(i, h * dvH + c) = float(acc);
      }
    }
    result.weights.push_back(w);
  }
  result.output = project(result.concat, p.wo, p.bo, 0, int(p.wo.cols()));
  return result;
}

TEST(Attend, MultiHeadMatchesNaiveLoops) {
  Inputs in{randomMatrix(6, 5, 31), randomMatrix(8, 3, 32), randomMatrix(8, 7, 33)};
  Projections p = xavierProjections(5, 3, 7, 8, 12, 34);
  p.bq = randomMatrix(8, 1, 35).col(0);
  p.bk = randomMatrix(8, 1, 36).col(0);
  p.bv = randomMatrix(12, 1, 37).col(0);
  p.wo = randomMatrix(12, 6, 38);  // d_out = 6 differs from dv_model on purpose
  p.bo = randomMatrix(6, 1, 39).col(0);
  Options options;
  options.heads = 4;
  options.projections = p;
  options.mask.kind = MaskKind::Causal;
  auto result = attend(in, options);
  ASSERT_TRUE(result.ok()) << result.error().message();
  NaiveMultiHead naive = naiveMultiHead(in, p, 4, true);
  ASSERT_EQ(result->heads.size(), 4u);
  Matrix mean = Matrix::Zero(6, 8);
  for (int h = 0; h < 4; ++h) {
    EXPECT_EQ(result->heads[h].q.cols(), 2);
    EXPECT_EQ(result->heads[h].v.cols(), 3);
    EXPECT_TRUE(MatrixNear(result->heads[h].weights, naive.weights[h], 1e-5)) << "head " << h;
    mean += naive.weights[h] / 4.0f;
  }
  EXPECT_TRUE(MatrixNear(result->concat, naive.concat, 1e-5));
  EXPECT_TRUE(MatrixNear(result->output, naive.output, 1e-5));
  EXPECT_TRUE(MatrixNear(result->weightsMean, mean, 1e-6));
  // masked cells are -inf in maskedScores and exactly 0 in the weights
  EXPECT_EQ(headMaskedScores(*result, 2)(0, 1), -kInf);
  EXPECT_EQ(result->heads[2].weights(0, 1), 0.0f);
}

TEST(Attend, IdentityHeadsTakeColumnBlocks) {
  // d = 4, 2 heads: head 0 sees columns 0-1, head 1 columns 2-3.
  Inputs in{M({{1, 0, 0, 1}}), M({{1, 0, 0, 0}, {0, 0, 0, 1}}), M({{1, 2, 3, 4}, {5, 6, 7, 8}})};
  Options options;
  options.score = ScoreKind::Dot;
  options.heads = 2;
  options.normalizer.kind = NormalizerKind::Hard;
  auto result = attend(in, options);
  ASSERT_TRUE(result.ok());
  // head 0: scores [1, 0] -> value 0's block [1, 2]; head 1: [0, 1] -> value 1's block [7, 8]
  EXPECT_TRUE(MatrixNear(headScores(*result, 0), M({{1, 0}}), 0));
  EXPECT_TRUE(MatrixNear(headScores(*result, 1), M({{0, 1}}), 0));
  EXPECT_TRUE(MatrixNear(result->concat, M({{1, 2, 7, 8}}), 0));
  EXPECT_TRUE(MatrixNear(result->weightsMean, M({{0.5f, 0.5f}}), 0));
}

TEST(Attend, PyTorchLayoutMatchesNaiveImplementation) {
  // Independent of projectionsFromPyTorch: index in_proj_weight the way PyTorch does.
  const int e = 6, heads = 3, dH = e / heads, nQ = 4, nK = 5;
  Matrix inW = randomMatrix(3 * e, e, 41), outW = randomMatrix(e, e, 42);
  Vector inB = randomMatrix(3 * e, 1, 43).col(0), outB = randomMatrix(e, 1, 44).col(0);
  Inputs in{randomMatrix(nQ, e, 45), randomMatrix(nK, e, 46), randomMatrix(nK, e, 47)};
  auto p = projectionsFromPyTorch(inW, inB, outW, outB);
  ASSERT_TRUE(p.ok()) << p.error().message();
  Options options;
  options.heads = heads;
  options.projections = *p;
  auto result = attend(in, options);
  ASSERT_TRUE(result.ok());

  // q_h[i][c] = Σ_e x[i][e]·W_in[h·d_h + c][e] + b_in[h·d_h + c] (K block at row E, V at 2E)
  auto proj = [&](const Matrix& x, int block, int h) {
    Matrix out(x.rows(), dH);
    for (int i = 0; i < x.rows(); ++i)
      for (int c = 0; c < dH; ++c) {
        const int row = block * e + h * dH + c;
        double acc = inB(row);
        for (int k = 0; k < e; ++k) acc += double(x(i, k)) * inW(row, k);
        out(i, c) = float(acc);
      }
    return out;
  };
  Matrix concat(nQ, e);
  for (int h = 0; h < heads; ++h) {
    Matrix ctx =
        naiveSingleHead(proj(in.queries, 0, h), proj(in.keys, 1, h), proj(in.values, 2, h));
    concat.middleCols(h * dH, dH) = ctx;
    EXPECT_TRUE(MatrixNear(result->heads[h].q, proj(in.queries, 0, h), 1e-5));
  }
  // output = concat·out_proj_weightᵀ + out_proj_bias
  Matrix output(nQ, e);
  for (int i = 0; i < nQ; ++i)
    for (int r = 0; r < e; ++r) {
      double acc = outB(r);
      for (int c = 0; c < e; ++c) acc += double(concat(i, c)) * outW(r, c);
      output(i, r) = float(acc);
    }
  EXPECT_TRUE(MatrixNear(result->concat, concat, 1e-5));
  EXPECT_TRUE(MatrixNear(result->output, output, 1e-5));
}

TEST(Attend, FullyMaskedRowGivesZeroWeightsAndAWarning) {
  Inputs in{M({{1, 0}, {0, 1}, {1, 1}}), M({{1, 0}, {0, 1}}), M({{1, 2}, {3, 4}})};
  Options options;
  options.mask.kind = MaskKind::Custom;
  options.mask.custom = B({{1, 1}, {0, 0}, {0, 1}});
  for (auto kind : {NormalizerKind::Softmax, NormalizerKind::Hard, NormalizerKind::TopK,
                    NormalizerKind::Sparsemax}) {
    options.normalizer.kind = kind;
    auto result = attend(in, options);
    ASSERT_TRUE(result.ok());
    EXPECT_EQ(result->fullyMaskedRows, std::vector<int>{1});
    ASSERT_EQ(result->warnings.size(), 1u);
    EXPECT_EQ(result->warnings[0].code, "fully_masked_row");
    EXPECT_EQ(result->warnings[0].row, 1);
    EXPECT_TRUE(MatrixNear(result->heads[0].weights.row(1), M({{0, 0}}), 0));
    EXPECT_TRUE(MatrixNear(result->heads[0].context.row(1), M({{0, 0}}), 0));
    EXPECT_TRUE(MatrixNear(result->heads[0].weights.row(2), M({{0, 1}}), 0));
    EXPECT_TRUE(result->output.allFinite());
  }
}

TEST(Attend, CosineZeroVectorHasNoNaN) {
  Inputs in{M({{0, 0}, {1, 1}}), M({{1, 0}, {0, 1}}), M({{1, 2}, {3, 4}})};
  Options options;
  options.score = ScoreKind::Cosine;
  auto result = attend(in, options);
  ASSERT_TRUE(result.ok());
  EXPECT_TRUE(result->output.allFinite());
  // zero query: scores 0 -> uniform weights
  EXPECT_TRUE(MatrixNear(result->heads[0].weights.row(0), M({{0.5f, 0.5f}}), 1e-7));
  ASSERT_EQ(result->warnings.size(), 1u);
  EXPECT_EQ(result->warnings[0].code, "cosine_zero_vector");
  EXPECT_EQ(result->warnings[0].head, 0);
  EXPECT_EQ(result->warnings[0].row, 0);
}

TEST(Attend, LocalGaussianMultipliesAfterNormalising) {
  // 3 equal keys, query 0, D = 2 (σ = 1): softmax = 1/3 each, times [1, e^-0.5, e^-2]
  Inputs in{M({{1, 0}}), M({{1, 0}, {1, 0}, {1, 0}}), M({{1}, {2}, {3}})};
  Options options;
  options.score = ScoreKind::Dot;
  options.mask.kind = MaskKind::LocalGaussian;
  options.mask.window = 2;
  auto result = attend(in, options);
  ASSERT_TRUE(result.ok());
  const float third = 1.0f / 3.0f;
  EXPECT_TRUE(MatrixNear(result->heads[0].weights,
                         M({{third, third * 0.60653066f, third * 0.13533528f}}), 1e-6));
  EXPECT_TRUE(MatrixNear(result->positionWeights, M({{1, 0.60653066f, 0.13533528f}}), 1e-6));
  // context = Σ w_j v_j, not renormalised: (1 + 2·0.60653066 + 3·0.13533528)/3 = 0.87369
  EXPECT_NEAR(result->output(0, 0), (1 + 2 * 0.60653066 + 3 * 0.13533528) / 3, 1e-6);
}

TEST(Attend, DecoderOutputStep) {
  // c = softmax([1, 0])·V = 0.73105858·[2, 0] + 0.26894142·[0, 4] = [1.46211716, 1.07576569]
  // h = [1, 0]; W_c = ones(4 x 1): y = tanh(1.46211716 + 1.07576569 + 1 + 0) = 0.99831074
  Inputs in{M({{1, 0}}), M({{1, 0}, {0, 1}}), M({{2, 0}, {0, 4}})};
  Options options;
  options.score = ScoreKind::Dot;
  options.decoderOutput.enabled = true;
  options.decoderOutput.wc = M({{1}, {1}, {1}, {1}});
  auto result = attend(in, options);
  ASSERT_TRUE(result.ok()) << result.error().message();
  EXPECT_TRUE(MatrixNear(result->output, M({{1.46211716f, 1.07576569f}}), 1e-6));
  EXPECT_TRUE(MatrixNear(result->decoderOutput, M({{0.99831074f}}), 1e-6));
  // W_c = [1, 0, 0, 1]ᵀ picks c_0 + h_1 = 1.46211716 -> tanh = 0.89806301
  options.decoderOutput.wc = M({{1}, {0}, {0}, {1}});
  result = attend(in, options);
  EXPECT_TRUE(MatrixNear(result->decoderOutput, M({{0.89806301f}}), 1e-6));
  // empty W_c: seeded Xavier with d_y = d_q_in = 2, reproducible
  options.decoderOutput.wc.resize(0, 0);
  auto a = attend(in, options), b = attend(in, options);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->decoderOutput.rows(), 1);
  EXPECT_EQ(a->decoderOutput.cols(), 2);
  EXPECT_TRUE(MatrixNear(a->decoderOutput, b->decoderOutput, 0));
  EXPECT_TRUE((a->decoderOutput.array().abs() < 1).all());
  options.decoderOutput.enabled = false;
  EXPECT_EQ(attend(in, options)->decoderOutput.size(), 0);
}

TEST(Attend, SeededParametricScoresAreReproducibleAndDifferPerHead) {
  Inputs in{randomMatrix(3, 4, 51), randomMatrix(4, 4, 52), randomMatrix(4, 4, 53)};
  for (auto kind : {ScoreKind::General, ScoreKind::Additive, ScoreKind::Mlp}) {
    Options options;
    options.score = kind;
    options.heads = 2;
    options.seed = 7;
    auto a = attend(in, options), b = attend(in, options);
    ASSERT_TRUE(a.ok()) << a.error().message();
    EXPECT_TRUE(MatrixNear(a->output, b->output, 0));
    EXPECT_TRUE(a->output.allFinite());
    EXPECT_FALSE(MatrixNear(headScores(*a, 0), headScores(*a, 1), 1e-3));
    options.seed = 8;
    auto c = attend(in, options);
    EXPECT_FALSE(MatrixNear(headScores(*a, 0), headScores(*c, 0), 1e-6)) << toString(kind);
    // the parameters used are reported, and feeding them back reproduces the scores
    options.seed = 999;
    options.scoreParams = {a->heads[0].params, a->heads[1].params};
    auto d = attend(in, options);
    EXPECT_TRUE(MatrixNear(headScores(*a, 1), headScores(*d, 1), 0));
  }
}

TEST(Attend, ScoreHiddenWidthIsUsedForSeededParams) {
  Inputs in{randomMatrix(2, 4, 61), randomMatrix(3, 4, 62), randomMatrix(3, 4, 63)};
  Options options;
  options.score = ScoreKind::Additive;
  options.scoreHidden = 9;
  auto result = attend(in, options);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->heads[0].params.additiveWq.cols(), 9);
  EXPECT_EQ(result->heads[0].params.additiveV.size(), 9);
}

TEST(Attend, HugeScoresGiveNoNaN) {
  // q·k = ±1e30 stays finite in float; softmax puts all weight on the first key
  Inputs in{M({{1e15f}}), M({{1e15f}, {-1e15f}}), M({{1}, {2}})};
  Options options;
  options.score = ScoreKind::Dot;
  auto result = attend(in, options);
  ASSERT_TRUE(result.ok());
  EXPECT_TRUE(MatrixNear(result->heads[0].weights, M({{1, 0}}), 0));
  // A tiny temperature overflows scores / T; it is clamped to ±FLT_MAX, not ±inf or NaN.
  options.temperature = 1e-30f;
  result = attend(in, options);
  ASSERT_TRUE(result.ok());
  EXPECT_TRUE(headMaskedScores(*result, 0).allFinite());
  EXPECT_TRUE(MatrixNear(result->heads[0].weights, M({{1, 0}}), 0));
}

TEST(Attend, OverflowingScoresAreAnErrorNotNaN) {
  // q·k = 1e40 does not fit in float32
  Inputs in{M({{1e20f}}), M({{1e20f}, {-1e20f}}), M({{1}, {2}})};
  Options options;
  options.score = ScoreKind::Dot;
  auto result = attend(in, options);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().field, "queries");
  EXPECT_NE(result.error().problem.find("overflow"), std::string::npos);
}

TEST(Attend, ExplicitProjectionsWithBiasHandWorked) {
  // X = [[1, 2]], W_q = W_k = I, b_q = [1, 0] -> q = [2, 2]; k = [1, 2] and [0, 1]
  // dot: [2·1 + 2·2, 0 + 2] = [6, 2]; hard -> key 0; W_v = [[2], [0]], b_v = [1]
  // v = [1·2 + 1, 0·2 + 1] = [3, 1] -> context [3]; W_o = [[10]], b_o = [0.5] -> 30.5
  Inputs in{M({{1, 2}}), M({{1, 2}, {0, 1}}), M({{1, 2}, {0, 1}})};
  Options options;
  options.score = ScoreKind::Dot;
  options.normalizer.kind = NormalizerKind::Hard;
  Projections& p = options.projections;
  p.identity = false;
  p.wq = M({{1, 0}, {0, 1}});
  p.bq = V({1, 0});
  p.wk = p.wq;
  p.wv = M({{2}, {0}});
  p.bv = V({1});
  p.wo = M({{10}});
  p.bo = V({0.5f});
  auto result = attend(in, options);
  ASSERT_TRUE(result.ok()) << result.error().message();
  EXPECT_TRUE(MatrixNear(result->heads[0].q, M({{2, 2}}), 0));
  EXPECT_TRUE(MatrixNear(headScores(*result, 0), M({{6, 2}}), 0));
  EXPECT_TRUE(MatrixNear(result->heads[0].v, M({{3}, {1}}), 0));
  EXPECT_TRUE(MatrixNear(result->concat, M({{3}}), 0));
  EXPECT_TRUE(MatrixNear(result->output, M({{30.5f}}), 0));
  // no W_o: output = concat
  p.wo.resize(0, 0);
  p.bo.resize(0);
  EXPECT_TRUE(MatrixNear(attend(in, options)->output, M({{3}}), 0));
}

TEST(Attend, EveryCombinationIsFiniteAndWeightsAreDistributions) {
  Inputs in{randomMatrix(5, 6, 71), randomMatrix(7, 6, 72), randomMatrix(7, 6, 73)};
  in.keys.row(3).setZero();  // exercises the cosine zero-vector path too
  for (auto score : {ScoreKind::Dot, ScoreKind::ScaledDot, ScoreKind::Cosine, ScoreKind::General,
                     ScoreKind::Additive, ScoreKind::Mlp})
    for (auto mask : {MaskKind::None, MaskKind::Causal, MaskKind::Padding, MaskKind::Local,
                      MaskKind::LocalGaussian})
      for (auto norm : {NormalizerKind::Softmax, NormalizerKind::Hard, NormalizerKind::TopK,
                        NormalizerKind::Sparsemax})
        for (int heads : {1, 2, 3}) {
          Options options;
          options.score = score;
          options.heads = heads;
          options.mask.kind = mask;
          options.mask.keyValid = {true, false, true, true, true, false, true};
          options.normalizer.kind = norm;
          options.projections = xavierProjections(6, 6, 6, 6, 6, 3);
          auto result = attend(in, options);
          ASSERT_TRUE(result.ok()) << result.error().message();
          SCOPED_TRACE(std::string(toString(score)) + "/" + std::string(toString(mask)) + "/" +
                       std::string(toString(norm)));
          EXPECT_TRUE(result->output.allFinite());
          for (int h = 0; h < heads; ++h) {
            const HeadResult& head = result->heads[h];
            EXPECT_FALSE(headMaskedScores(*result, h).hasNaN());
            EXPECT_TRUE(head.weights.allFinite());
            EXPECT_TRUE((head.weights.array() >= 0).all());
            for (int i = 0; i < 5; ++i) {
              for (int j = 0; j < 7; ++j) {
                if (!result->allowed(i, j)) {
                  EXPECT_EQ(head.weights(i, j), 0.0f);
                }
              }
              if (mask != MaskKind::LocalGaussian) {
                EXPECT_NEAR(head.weights.row(i).sum(), 1.0f, 1e-5);
              }
            }
          }
        }
}

// =======================================================================================
// attend(inputs, options, out): the same result, computed into reused storage
// =======================================================================================

// Every matrix and list of two results, compared bit for bit (memcmp: -0 and +0 differ).
void expectIdentical(const AttentionResult& a, const AttentionResult& b) {
  auto same = [](const auto& x, const auto& y, const char* what) {
    ASSERT_EQ(x.rows(), y.rows()) << what;
    ASSERT_EQ(x.cols(), y.cols()) << what;
    if (x.size() > 0) {
      EXPECT_EQ(std::memcmp(x.data(), y.data(), sizeof(*x.data()) * x.size()), 0) << what;
    }
  };
  ASSERT_EQ(a.heads.size(), b.heads.size());
  for (std::size_t h = 0; h < a.heads.size(); ++h) {
    SCOPED_TRACE("head " + std::to_string(h));
    same(a.heads[h].q, b.heads[h].q, "q");
    same(a.heads[h].k, b.heads[h].k, "k");
    same(a.heads[h].v, b.heads[h].v, "v");
    same(headScores(a, static_cast<int>(h)), headScores(b, static_cast<int>(h)), "scores");
    same(headMaskedScores(a, static_cast<int>(h)), headMaskedScores(b, static_cast<int>(h)),
         "maskedScores");
    same(a.heads[h].weights, b.heads[h].weights, "weights");
    same(a.heads[h].context, b.heads[h].context, "context");
  }
  same(a.allowed, b.allowed, "allowed");
  same(a.positionWeights, b.positionWeights, "positionWeights");
  same(a.concat, b.concat, "concat");
  same(a.output, b.output, "output");
  same(a.weightsMean, b.weightsMean, "weightsMean");
  same(a.decoderOutput, b.decoderOutput, "decoderOutput");
  EXPECT_EQ(a.fullyMaskedRows, b.fullyMaskedRows);
  ASSERT_EQ(a.warnings.size(), b.warnings.size());
  for (std::size_t i = 0; i < a.warnings.size(); ++i)
    EXPECT_EQ(a.warnings[i].message, b.warnings[i].message);
}

// Where the float matrices of a result keep their numbers.
std::vector<const float*> buffers(const AttentionResult& r) {
  std::vector<const float*> out = {r.concat.data(), r.output.data(), r.weightsMean.data(),
                                   r.decoderOutput.data()};
  for (const HeadResult& h : r.heads)
    for (const Matrix* m : {&h.q, &h.k, &h.v, &h.weights, &h.context})
      out.push_back(m->data());
  return out;
}

TEST(AttendInto, SameShapesReuseEveryBuffer) {
  const Matrix x = randomMatrix(9, 8, 81);
  Inputs in{x, x, x};
  Options options;
  options.heads = 2;
  options.projections = xavierProjections(8, 8, 8, 8, 8, 5);
  options.mask.kind = MaskKind::Causal;
  options.temperature = 0.5f;
  options.decoderOutput.enabled = true;
  AttentionResult out;
  ASSERT_TRUE(attend(in, options, out).ok());
  const std::vector<const float*> before = buffers(out);
  const bool* allowedBefore = out.allowed.data();
  // An edit that keeps the shapes (the window's case): new numbers, same buffers.
  in.queries(3, 2) = 0.75f;
  options.temperature = 2;
  ASSERT_TRUE(attend(in, options, out).ok());
  const std::vector<const float*> after = buffers(out);
  EXPECT_EQ(before, after);
  EXPECT_EQ(allowedBefore, out.allowed.data());
  expectIdentical(out, *attend(in, options));
}

TEST(AttendInto, EqualsTheValueFormWhateverOutHeldBefore) {
  // Reuse across changes of every kind: shapes, heads, masks, normalisers, decoder step,
  // warnings. Each time `out` must equal a fresh attend() exactly, with nothing left over.
  AttentionResult out;
  int step = 0;
  for (int n : {6, 6, 4, 7})
    for (int heads : {1, 2})
      for (auto mask : {MaskKind::LocalGaussian, MaskKind::None, MaskKind::Padding})
        for (auto norm : {NormalizerKind::Softmax, NormalizerKind::TopK, NormalizerKind::Sparsemax,
                          NormalizerKind::Hard}) {
          SCOPED_TRACE("step " + std::to_string(step));
          Inputs in{randomMatrix(n, 4, 90 + step), randomMatrix(n + 1, 4, 91),
                    randomMatrix(n + 1, 4, 92)};
          in.keys.row(0).setZero();  // a cosine warning in some steps
          Options options;
          options.heads = heads;
          options.score = step % 3 == 0 ? ScoreKind::Cosine : ScoreKind::ScaledDot;
          options.mask.kind = mask;
          options.mask.keyValid.assign(static_cast<std::size_t>(n + 1), step % 2 == 0);
          options.normalizer.kind = norm;
          options.decoderOutput.enabled = step % 4 == 1;
          if (step % 5 != 0) options.projections = xavierProjections(4, 4, 4, 4, 4, step);
          ASSERT_TRUE(attend(in, options, out).ok());
          expectIdentical(out, *attend(in, options));
          ++step;
        }
}

TEST(AttendInto, ValidationErrorLeavesOutUntouched) {
  Inputs in{M({{1, 0}, {0, 1}}), M({{1, 0}, {0, 1}}), M({{1, 2}, {3, 4}})};
  Options options;
  AttentionResult out;
  ASSERT_TRUE(attend(in, options, out).ok());
  const Matrix output = out.output;
  options.heads = 3;
  Status status = attend(in, options, out);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().field, "heads");
  EXPECT_TRUE(MatrixNear(out.output, output, 0));
}

// =======================================================================================
// The normaliser rules shared with the explanations
// =======================================================================================

TEST(TopKKeys, LargestFirstTiesToTheLowerIndexMaskedLeftOut) {
  const std::vector<float> s = {1, 3, 2, 3, -kInf, 5};
  const bool allowed[] = {true, true, true, true, true, false};
  EXPECT_EQ(topKKeys(s.data(), allowed, 6, 2), (std::vector<int>{1, 3}));
  EXPECT_EQ(topKKeys(s.data(), allowed, 6, 3), (std::vector<int>{1, 3, 2}));
  EXPECT_EQ(topKKeys(s.data(), nullptr, 6, 1), (std::vector<int>{5}));
  // k above the available keys: all of them (key 4 is -inf, key 5 masked), still ordered
  EXPECT_EQ(topKKeys(s.data(), allowed, 6, 10), (std::vector<int>{1, 3, 2, 0}));
  EXPECT_EQ(topKKeys(s.data(), allowed, 6, 0), (std::vector<int>{1}));  // k < 1 acts as 1
  const bool none[] = {false, false, false, false, false, false};
  EXPECT_TRUE(topKKeys(s.data(), none, 6, 2).empty());
}

TEST(SparsemaxThreshold, WorkedExampleAndShift) {
  // z = [1, 0.5, -1]: k(z) = 2, τ = (1.5 - 1)/2 = 0.25; relative to the max 1: -0.75
  const std::vector<float> s = {1, 0.5f, -1};
  SparsemaxThreshold t = sparsemaxThreshold(s.data(), nullptr, 3);
  EXPECT_EQ(t.maxScore, 1.0f);
  EXPECT_EQ(t.support, 2);
  EXPECT_NEAR(t.maxScore + t.tau, 0.25, 1e-12);
  // masking key 0 leaves [0.5, -1]: k = 1, τ = 0.5 - 1 = -0.5
  const bool allowed[] = {false, true, true};
  t = sparsemaxThreshold(s.data(), allowed, 3);
  EXPECT_EQ(t.maxScore, 0.5f);
  EXPECT_EQ(t.support, 1);
  EXPECT_NEAR(t.maxScore + t.tau, -0.5, 1e-12);
  const bool none[] = {false, false, false};
  EXPECT_EQ(sparsemaxThreshold(s.data(), none, 3).support, 0);
}

TEST(SparsemaxThreshold, AgreesWithNormalizeRow) {
  // The threshold and support the explanations show are the ones the weights came from.
  const Matrix s = randomMatrix(1, 40, 77) * 3.0f;
  std::unique_ptr<bool[]> allowed(new bool[40]);
  for (int j = 0; j < 40; ++j) allowed[j] = j % 7 != 3;
  NormalizerOptions sparsemax;
  sparsemax.kind = NormalizerKind::Sparsemax;
  std::vector<float> weights(40);
  ASSERT_TRUE(normalizeRow(sparsemax, s.data(), allowed.get(), 40, weights.data()));
  const SparsemaxThreshold t = sparsemaxThreshold(s.data(), allowed.get(), 40);
  int positive = 0;
  for (int j = 0; j < 40; ++j) {
    const double expected =
        allowed[j] ? std::max(static_cast<double>(s(0, j)) - t.maxScore - t.tau, 0.0) : 0.0;
    EXPECT_EQ(weights[j], static_cast<float>(expected)) << "key " << j;
    positive += weights[j] > 0 ? 1 : 0;
  }
  EXPECT_EQ(positive, t.support);
}

// =======================================================================================
// Bad numbers (issue 7): extreme temperatures and values at the float limit
// =======================================================================================

constexpr float kFltMax = std::numeric_limits<float>::max();

TEST(BadNumbers, TinyTemperatureGivesTheExactArgMaxNotAFalseTie) {
  // Scores 4 and 5 over T = 1e-38 are 4e38 and 5e38, both beyond FLT_MAX. Clamping them
  // before subtracting the maximum made them equal (weights 0.5 / 0.5). The limit T -> 0 of
  // softmax is the arg-max: key 1 gets exactly 1.
  Inputs in{M({{1}}), M({{4}, {5}}), M({{10}, {20}})};
  Options options;
  options.score = ScoreKind::Dot;
  for (float t : {1e-38f, 1e-30f, 1e-45f /* the smallest denormal */}) {
    options.temperature = t;
    for (NormalizerKind kind : {NormalizerKind::Softmax, NormalizerKind::Hard,
                                NormalizerKind::TopK, NormalizerKind::Sparsemax}) {
      options.normalizer.kind = kind;
      for (MaskKind mask : {MaskKind::None, MaskKind::Causal}) {
        // causal with one query allows key 0 only; use a padding mask that allows both keys
        options.mask.kind = mask == MaskKind::None ? MaskKind::None : MaskKind::Padding;
        options.mask.keyValid = {true, true};
        auto result = attend(in, options);
        ASSERT_TRUE(result.ok()) << result.error().message();
        EXPECT_EQ(result->heads[0].weights(0, 0), 0.0f) << t << " " << toString(kind);
        EXPECT_EQ(result->heads[0].weights(0, 1), 1.0f) << t << " " << toString(kind);
        EXPECT_EQ(result->heads[0].context(0, 0), 20.0f);
        // The shown masked scores stay finite (clamped for display only).
        EXPECT_TRUE(headMaskedScores(*result, 0).allFinite());
      }
    }
  }
}

TEST(BadNumbers, TinyTemperatureKeepsRealTiesAndTheMask) {
  // Equal scores are a real tie at any T; a masked key stays at 0 however large its score.
  Inputs in{M({{1}}), M({{5}, {4}, {5}, {9}}), M({{1}, {2}, {3}, {4}})};
  Options options;
  options.score = ScoreKind::Dot;
  options.temperature = 1e-38f;
  options.mask.kind = MaskKind::Padding;
  options.mask.keyValid = {true, true, true, false};
  auto result = attend(in, options);
  ASSERT_TRUE(result.ok());
  EXPECT_TRUE(MatrixNear(result->heads[0].weights, M({{0.5f, 0, 0.5f, 0}}), 0));
  EXPECT_FLOAT_EQ(result->heads[0].context(0, 0), 2.0f);  // (1 + 3) / 2
}

TEST(BadNumbers, NonFiniteOrNonPositiveTemperatureIsAnError) {
  Inputs in{M({{1}}), M({{4}, {5}}), M({{1}, {2}})};
  Options options;
  for (float t : {0.0f, -0.0f, -1e-38f, -1.0f, kInf, -kInf, std::nanf("")}) {
    options.temperature = t;
    auto result = attend(in, options);
    ASSERT_FALSE(result.ok()) << t;
    EXPECT_EQ(result.error().field, "temperature");
  }
}

TEST(BadNumbers, ValuesAtTheFloatLimitGiveAFiniteContext) {
  // n equal keys: weights 1/n rounded to float, whose sum is just over 1 for n = 3, 7, 10, ...
  // so the float GEMM weights·v overflowed to infinity (10 keys: weights 0.1f, context null
  // in the JSON). The exact context is FLT_MAX (and -FLT_MAX), which fits. For n = 7 even the
  // double sum of the rounded weights times FLT_MAX rounds to infinity in float.
  for (int n : {3, 7, 10, 33, 4096}) {
    Matrix keys = Matrix::Ones(n, 1);
    Matrix values(n, 3);
    values.col(0).setConstant(kFltMax);
    values.col(1).setConstant(-kFltMax);
    values.col(2).setConstant(1);
    Inputs in{M({{1}}), keys, values};
    Options options;
    options.score = ScoreKind::Dot;
    auto result = attend(in, options);
    ASSERT_TRUE(result.ok()) << result.error().message();
    for (int j = 0; j < n; ++j) EXPECT_EQ(result->heads[0].weights(0, j), 1.0f / float(n));
    // Exactly FLT_MAX when the float weights sum to 1 or more; a few ulps below otherwise.
    const float top = result->heads[0].context(0, 0), bottom = result->heads[0].context(0, 1);
    ASSERT_TRUE(std::isfinite(top) && std::isfinite(bottom)) << n;
    EXPECT_NEAR(top / kFltMax, 1.0, 1e-6) << n;
    EXPECT_EQ(bottom, -top) << n;
    if (n == 10) {
      EXPECT_EQ(top, kFltMax);
    }
    EXPECT_NEAR(result->heads[0].context(0, 2), 1.0f, 1e-6) << n;
    EXPECT_TRUE(result->output.allFinite());
  }
}

TEST(BadNumbers, RowsThatDoNotOverflowKeepTheFloatResult) {
  // Row 0 attends keys 1..7, whose values are FLT_MAX: it overflows in float and is
  // recomputed. Row 1 attends key 0 only (value 3) and keeps the GEMM's value.
  Matrix keys = Matrix::Ones(8, 1);
  Matrix values = Matrix::Constant(8, 1, kFltMax);
  values(0, 0) = 3;
  Inputs in{M({{1}, {1}}), keys, values};
  Options options;
  options.score = ScoreKind::Dot;
  options.mask.kind = MaskKind::Custom;
  options.mask.custom = B({{0, 1, 1, 1, 1, 1, 1, 1}, {1, 0, 0, 0, 0, 0, 0, 0}});
  auto result = attend(in, options);
  ASSERT_TRUE(result.ok()) << result.error().message();
  EXPECT_EQ(result->heads[0].context(0, 0), kFltMax);
  EXPECT_EQ(result->heads[0].context(1, 0), 3.0f);
}

TEST(BadNumbers, AnOverflowingValueProjectionIsAnErrorNamingValues) {
  // v = X·W_v with W_v = 4 truly overflows: an error, never an infinite context.
  Inputs in{M({{1}}), M({{1}, {1}}), M({{kFltMax}, {kFltMax}})};
  Options options;
  options.projections.identity = false;
  options.projections.wq = M({{1}});
  options.projections.wk = M({{1}});
  options.projections.wv = M({{4}});
  auto result = attend(in, options);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().field, "values");
  EXPECT_NE(result.error().problem.find("overflows float32"), std::string::npos);
}

}  // namespace
}  // namespace test_core_attention
}  // namespace attn
