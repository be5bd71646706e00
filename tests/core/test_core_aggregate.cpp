// core/aggregate: mean/max over heads, rollout, entropy, top-1 mass and special-token
// filtering, against hand-worked values and a second, plain-loop formulation.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "core/attention/aggregate.h"

namespace test_core_aggregate {
namespace {

using namespace attn;

Matrix mat(std::initializer_list<std::initializer_list<float>> rows) {
  Matrix m(static_cast<Eigen::Index>(rows.size()), static_cast<Eigen::Index>(rows.begin()->size()));
  Eigen::Index r = 0;
  for (auto row : rows) {
    Eigen::Index c = 0;
    for (float v : row) m(r, c++) = v;
    ++r;
  }
  return m;
}

void expectNear(const Matrix& got, const Matrix& want, float tol = 1e-6f) {
  ASSERT_EQ(got.rows(), want.rows());
  ASSERT_EQ(got.cols(), want.cols());
  for (Eigen::Index r = 0; r < got.rows(); ++r)
    for (Eigen::Index c = 0; c < got.cols(); ++c)
      EXPECT_NEAR(got(r, c), want(r, c), tol) << "(" << r << ", " << c << ")";
}

// A random attention matrix: rows are softmaxes of random scores.
Matrix randomAttention(std::mt19937& rng, int n) {
  std::normal_distribution<float> normal(0.0f, 2.0f);
  Matrix a(n, n);
  for (int r = 0; r < n; ++r) {
    double sum = 0;
    for (int c = 0; c < n; ++c) sum += (a(r, c) = std::exp(normal(rng)));
    a.row(r) /= static_cast<float>(sum);
  }
  return a;
}

// =======================================================================================
// Mean and max over heads
// =======================================================================================

TEST(Aggregate, MeanAndMaxOverHeadsByHand) {
  const Matrix h0 = mat({{0.2f, 0.8f}, {1.0f, 0.0f}});
  const Matrix h1 = mat({{0.6f, 0.4f}, {0.5f, 0.5f}});
  const MatrixRef heads[] = {MatrixRef::of(h0), MatrixRef::of(h1)};
  expectNear(meanOverHeads(heads), mat({{0.4f, 0.6f}, {0.75f, 0.25f}}));
  expectNear(maxOverHeads(heads), mat({{0.6f, 0.8f}, {1.0f, 0.5f}}));
  EXPECT_EQ(meanOverHeads({}).size(), 0);
}

TEST(Aggregate, ReducerReadsStridedViewsAndRefusesOtherShapes) {
  // A 2 x 2 head inside a 2 x 3 buffer (row stride 3).
  const float buffer[] = {0.1f, 0.9f, 99.0f, 0.3f, 0.7f, 99.0f};
  const MatrixRef strided{buffer, 2, 2, 3};
  HeadReducer mean(HeadReducer::Kind::Mean, 2, 2);
  EXPECT_TRUE(mean.add(strided));
  EXPECT_TRUE(mean.add(strided));
  const Matrix wrong = Matrix::Ones(3, 2);
  EXPECT_FALSE(mean.add(MatrixRef::of(wrong)));
  EXPECT_EQ(mean.count(), 2);
  expectNear(mean.result(), mat({{0.1f, 0.9f}, {0.3f, 0.7f}}));
}

TEST(Aggregate, MaxKeepsNaNVisible) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Matrix h0 = mat({{0.5f, nan}});
  const Matrix h1 = mat({{0.7f, 0.2f}});
  const MatrixRef heads[] = {MatrixRef::of(h1), MatrixRef::of(h0)};
  const Matrix max = maxOverHeads(heads);
  EXPECT_FLOAT_EQ(max(0, 0), 0.7f);
  EXPECT_TRUE(std::isnan(max(0, 1)));
  EXPECT_TRUE(std::isnan(meanOverHeads(heads)(0, 1)));
}

// =======================================================================================
// Rollout
// =======================================================================================

TEST(Rollout, ResidualAttentionByHand) {
  // 0.5·A + 0.5·I = [[0.6, 0.1], [0, 0.5]]; rows renormalised: [[6/7, 1/7], [0, 1]].
  auto residual = residualAttention(mat({{0.2f, 0.2f}, {0.0f, 0.0f}}));
  ASSERT_TRUE(residual.ok());
  expectNear(*residual, mat({{6.0f / 7, 1.0f / 7}, {0.0f, 1.0f}}));
  auto notSquare = residualAttention(Matrix::Ones(2, 3));
  ASSERT_FALSE(notSquare.ok());
  EXPECT_EQ(notSquare.error().field, "attention");
}

TEST(Rollout, TwoLayersByHand) {
  // Â_1 from [[1, 0], [0.5, 0.5]] is [[1, 0], [0.25, 0.75]];
  // Â_2 from [[0, 1], [1, 0]] is [[0.5, 0.5], [0.5, 0.5]];
  // Â_2 · Â_1 = [[0.625, 0.375], [0.625, 0.375]].
  const Matrix layers[] = {mat({{1.0f, 0.0f}, {0.5f, 0.5f}}), mat({{0.0f, 1.0f}, {1.0f, 0.0f}})};
  auto one = attentionRollout(std::span<const Matrix>(layers, 1));
  ASSERT_TRUE(one.ok());
  expectNear(*one, mat({{1.0f, 0.0f}, {0.25f, 0.75f}}));
  auto two = attentionRollout(layers);
  ASSERT_TRUE(two.ok());
  expectNear(*two, mat({{0.625f, 0.375f}, {0.625f, 0.375f}}));
  // The order matters: Â_1 · Â_2 would be [[0.5, 0.5], [0.5, 0.5]].
  EXPECT_GT(std::abs((*two)(0, 0) - 0.5f), 0.1f);
}

TEST(Rollout, MatchesAPlainLoopFormulation) {
  std::mt19937 rng(7);
  const int n = 6, layerCount = 4, headCount = 3;
  std::vector<Matrix> means;
  // Independent formulation in double with explicit loops: mean over heads, residual,
  // renormalise, multiply from the first layer up.
  std::vector<std::vector<double>> rollout;
  for (int l = 0; l < layerCount; ++l) {
    std::vector<Matrix> heads;
    for (int h = 0; h < headCount; ++h) heads.push_back(randomAttention(rng, n));
    std::vector<MatrixRef> spans;
    for (const Matrix& m : heads) spans.push_back(MatrixRef::of(m));
    means.push_back(meanOverHeads(spans));

    std::vector<std::vector<double>> hat(n, std::vector<double>(n));
    for (int i = 0; i < n; ++i) {
      double sum = 0;
      for (int j = 0; j < n; ++j) {
        double mean = 0;
        for (int h = 0; h < headCount; ++h) mean += heads[h](i, j);
        mean /= headCount;
        hat[i][j] = 0.5 * mean + (i == j ? 0.5 : 0.0);
        sum += hat[i][j];
      }
      for (int j = 0; j < n; ++j) hat[i][j] /= sum;
    }
    if (l == 0) {
      rollout = hat;
    } else {
      std::vector<std::vector<double>> next(n, std::vector<double>(n, 0.0));
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j)
          for (int k = 0; k < n; ++k) next[i][j] += hat[i][k] * rollout[k][j];
      rollout = next;
    }
  }
  auto got = attentionRollout(means);
  ASSERT_TRUE(got.ok());
  for (int i = 0; i < n; ++i) {
    double rowSum = 0;
    for (int j = 0; j < n; ++j) {
      EXPECT_NEAR((*got)(i, j), rollout[i][j], 2e-6) << i << "," << j;
      rowSum += (*got)(i, j);
    }
    EXPECT_NEAR(rowSum, 1.0, 1e-5);  // products of row-stochastic matrices stay so
  }
}

TEST(Rollout, LayersMustAgree) {
  RolloutAccumulator rollout;
  EXPECT_TRUE(rollout.addLayer(Matrix::Identity(3, 3)).ok());
  auto bad = rollout.addLayer(Matrix::Identity(2, 2));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().problem.find("2 tokens"), std::string::npos);
  EXPECT_EQ(rollout.layers(), 1);
  EXPECT_FALSE(attentionRollout({}).ok());
}

// =======================================================================================
// Entropy and top-1 mass
// =======================================================================================

TEST(HeadStatistics, ByHand) {
  const Matrix uniform = Matrix::Constant(3, 4, 0.25f);
  HeadStats u = headStats(MatrixRef::of(uniform));
  EXPECT_NEAR(u.entropy, std::log(4.0), 1e-6);
  EXPECT_NEAR(u.top1Mass, 0.25, 1e-7);
  EXPECT_EQ(u.rowsUsed, 3);

  const Matrix oneHot = Matrix::Identity(3, 3);
  HeadStats o = headStats(MatrixRef::of(oneHot));
  EXPECT_NEAR(o.entropy, 0.0, 1e-12);
  EXPECT_NEAR(o.top1Mass, 1.0, 1e-12);

  // Rows [0.5, 0.5] (ln 2, max 0.5) and [1, 0] (0, max 1): means ln2 / 2 and 0.75.
  const Matrix mixed = mat({{0.5f, 0.5f}, {1.0f, 0.0f}});
  HeadStats m = headStats(MatrixRef::of(mixed));
  EXPECT_NEAR(m.entropy, std::log(2.0) / 2, 1e-7);
  EXPECT_NEAR(m.top1Mass, 0.75, 1e-7);
}

TEST(HeadStatistics, MatchesAPlainLoopOnRandomHeads) {
  std::mt19937 rng(11);
  const Matrix a = randomAttention(rng, 9);
  double entropy = 0, top1 = 0;
  for (int i = 0; i < 9; ++i) {
    double h = 0, best = 0;
    for (int j = 0; j < 9; ++j) {
      const double p = a(i, j);
      h += -p * std::log(p);
      best = std::max(best, p);
    }
    entropy += h / 9;
    top1 += best / 9;
  }
  HeadStats stats = headStats(MatrixRef::of(a));
  EXPECT_NEAR(stats.entropy, entropy, 1e-6);  // float terms, double sums
  EXPECT_NEAR(stats.top1Mass, top1, 1e-9);
}

TEST(HeadStatistics, NonFiniteRowsAreSkipped) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Matrix a = mat({{0.5f, 0.5f}, {nan, 1.0f}});
  HeadStats stats = headStats(MatrixRef::of(a));
  EXPECT_EQ(stats.rowsUsed, 1);
  EXPECT_NEAR(stats.entropy, std::log(2.0), 1e-7);
  const Matrix all = mat({{nan, 1.0f}});
  EXPECT_TRUE(std::isnan(headStats(MatrixRef::of(all)).entropy));
}

// =======================================================================================
// Thumbnails
// =======================================================================================

TEST(MaxPool, BlocksKeepTheirPeakAndNaN) {
  // 5 x 4 pooled to at most 2 x 2: blocks of 3 rows x 2 cols -> a 2 x 2 result.
  Matrix a = Matrix::Zero(5, 4);
  a(1, 1) = 0.9f;   // block (0, 0)
  a(2, 3) = 0.4f;   // block (0, 1)
  a(4, 0) = -0.5f;  // block (1, 0): with the zeros above it, the max is 0
  a(3, 2) = 0.7f;   // block (1, 1)
  const Matrix pooled = maxPool(MatrixRef::of(a), 2, 2);
  expectNear(pooled, mat({{0.9f, 0.4f}, {0.0f, 0.7f}}));
  // A plain-loop check on a random matrix.
  std::mt19937 rng(3);
  const Matrix r = randomAttention(rng, 37);
  const Matrix p = maxPool(MatrixRef::of(r), 8, 5);  // blocks 5 x 8 -> 8 x 5
  ASSERT_EQ(p.rows(), 8);
  ASSERT_EQ(p.cols(), 5);
  for (int br = 0; br < 8; ++br)
    for (int bc = 0; bc < 5; ++bc) {
      float best = -1;
      for (int i = br * 5; i < std::min(37, br * 5 + 5); ++i)
        for (int j = bc * 8; j < std::min(37, bc * 8 + 8); ++j) best = std::max(best, r(i, j));
      EXPECT_EQ(p(br, bc), best);
    }
  a(4, 3) = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(maxPool(MatrixRef::of(a), 2, 2)(1, 1)));
  expectNear(maxPool(MatrixRef::of(a), 5, 4).topLeftCorner(4, 4), a.topLeftCorner(4, 4));
}

// =======================================================================================
// Special tokens and focus
// =======================================================================================

TEST(SpecialTokens, MaskByDefaultListFirstTokenAndUserList) {
  const std::vector<std::string> labels = {"The", "[CLS]",         " [SEP] ",
                                           "cat", "<|endoftext|>", "foo"};
  SpecialTokenOptions options;
  EXPECT_EQ(specialTokenMask(labels, options),
            (std::vector<bool>{true, true, true, false, true, false}));
  options.firstToken = false;
  options.extra = {"foo"};
  EXPECT_EQ(specialTokenMask(labels, options),
            (std::vector<bool>{false, true, true, false, true, true}));
  options.defaultList = false;
  EXPECT_EQ(specialTokenMask(labels, options),
            (std::vector<bool>{false, false, false, false, false, true}));
}

TEST(SpecialTokens, DropKeysAndRenormaliseByHand) {
  const Matrix a = mat({{0.5f, 0.25f, 0.25f}, {1.0f, 0.0f, 0.0f}, {0.2f, 0.6f, 0.2f}});
  auto filtered = dropKeysAndRenormalise(MatrixRef::of(a), {true, false, false});
  ASSERT_TRUE(filtered.ok());
  expectNear(filtered->values, mat({{0.0f, 0.5f, 0.5f}, {0.0f, 0.0f, 0.0f}, {0.0f, 0.75f, 0.25f}}));
  EXPECT_EQ(filtered->emptyRows, (std::vector<Eigen::Index>{1}));
  auto wrong = dropKeysAndRenormalise(MatrixRef::of(a), {true});
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().field, "tokens");
}

}  // namespace
}  // namespace test_core_aggregate
