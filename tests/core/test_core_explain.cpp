// core/explain: the inspector's explanations carry the actual numbers, agree with the
// result, and pcaProject2d keeps the geometry it promises.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/attention/explain.h"
#include "core/scenario/scenario.h"

namespace attn {
namespace test_core_explain {
namespace {

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

Matrix rows(std::initializer_list<std::initializer_list<float>> values) {
  const int r = static_cast<int>(values.size());
  const int c = static_cast<int>(values.begin()->size());
  Matrix m(r, c);
  int i = 0;
  for (const auto& row : values) {
    int j = 0;
    for (float v : row) m(i, j++) = v;
    ++i;
  }
  return m;
}

// The seed's own example: decoder state [5,1,20] against four annotations.
Scenario decoderScenario(ScoreKind score = ScoreKind::Dot) {
  Scenario s;
  s.mode = Mode::Cross;
  s.queries = rows({{5, 1, 20}});
  s.keys = rows({{3, 12, 45}, {59, 2, 5}, {1, 43, 5}, {4, 3, 45.3f}});
  s.options.score = score;
  return s;
}

struct Computed {
  Problem problem;
  AttentionResult result;
};

Computed run(const Scenario& s) {
  Expected<Problem> problem = buildProblem(s);
  EXPECT_TRUE(problem.ok()) << problem.error().message();
  Expected<AttentionResult> result = attend(problem->inputs, problem->options);
  EXPECT_TRUE(result.ok()) << result.error().message();
  return {problem.value(), result.value()};
}

bool anyStepContains(const Explanation& e, const std::string& text) {
  for (const std::string& step : e.steps)
    if (step.find(text) != std::string::npos) return true;
  return false;
}

std::string allSteps(const Explanation& e) {
  std::string out;
  for (const std::string& step : e.steps) out += step + "\n";
  return out;
}

// ---------------------------------------------------------------------------------------
// Scores
// ---------------------------------------------------------------------------------------

TEST(ExplainScore, DotShowsTheProductsAndTheSum) {
  const Computed c = run(decoderScenario());
  auto e = explainScore(c.result, c.problem, c.problem.options, 0, 0, 0);
  ASSERT_TRUE(e.ok()) << e.error().message();
  EXPECT_TRUE(anyStepContains(*e, "5·3 + 1·12 + 20·45 = 927")) << allSteps(*e);
  EXPECT_FLOAT_EQ(e->value, 927.0f);
  ASSERT_EQ(e->terms.size(), 3u);
  EXPECT_FLOAT_EQ(e->terms[2].value, 900.0f);
  EXPECT_FALSE(e->masked);
  auto last = explainScore(c.result, c.problem, c.problem.options, 0, 0, 3);
  ASSERT_TRUE(last.ok());
  EXPECT_NEAR(last->value, 929.0f, 1e-3);
}

TEST(ExplainScore, ScaledDotDividesByRootOfTheHeadWidth) {
  const Computed c = run(decoderScenario(ScoreKind::ScaledDot));
  auto e = explainScore(c.result, c.problem, c.problem.options, 0, 0, 0);
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(anyStepContains(*e, "÷ √d_h = ÷ √3")) << allSteps(*e);
  EXPECT_NEAR(e->value, 927.0f / std::sqrt(3.0f), 1e-2);
  EXPECT_TRUE(anyStepContains(*e, formatNumber(927.0f / std::sqrt(3.0f)))) << allSteps(*e);
}

TEST(ExplainScore, CosineShowsNormsAndHandlesZeroVectors) {
  Scenario s = decoderScenario(ScoreKind::Cosine);
  s.keys.row(1).setZero();
  const Computed c = run(s);
  auto e = explainScore(c.result, c.problem, c.problem.options, 0, 0, 0);
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(anyStepContains(*e, "|q| = ")) << allSteps(*e);
  const float expected = 927.0f / (std::sqrt(426.0f) * std::sqrt(2178.0f));
  EXPECT_NEAR(e->value, expected, 1e-5);
  auto zero = explainScore(c.result, c.problem, c.problem.options, 0, 0, 1);
  ASSERT_TRUE(zero.ok());
  EXPECT_TRUE(anyStepContains(*zero, "zero vector")) << allSteps(*zero);
  EXPECT_EQ(zero->value, 0.0f);
}

// The parametric scores: the explanation's own arithmetic reaches the result's score.
class ParametricScores : public ::testing::TestWithParam<ScoreKind> {};

TEST_P(ParametricScores, StepsReachTheResultsScore) {
  Scenario s = decoderScenario(GetParam());
  s.queries /= 20.0f;  // keep tanh out of saturation so the steps are informative
  s.keys /= 20.0f;
  s.options.seed = 7;
  const Computed c = run(s);
  for (int col = 0; col < 4; ++col) {
    auto e = explainScore(c.result, c.problem, c.problem.options, 0, 0, col);
    ASSERT_TRUE(e.ok());
    EXPECT_FALSE(e->formula.empty());
    EXPECT_GE(e->steps.size(), 3u);
    // Sum of the main terms (+ bias for mlp) reproduces the score.
    float sum = 0;
    for (const ExplainTerm& t : e->terms) sum += t.value;
    if (GetParam() == ScoreKind::Mlp) sum += c.result.heads[0].params.mlpOutBias;
    EXPECT_NEAR(sum, headScores(c.result, 0)(0, col), 1e-4) << allSteps(*e);
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, ParametricScores,
                         ::testing::Values(ScoreKind::General, ScoreKind::Additive,
                                           ScoreKind::Mlp));

TEST(ExplainScore, TemperatureAndMaskAreMentioned) {
  Scenario s;
  s.mode = Mode::Self;
  s.inputs = rows({{1, 0}, {0, 1}, {1, 1}});
  s.options.temperature = 2;
  s.options.mask.kind = MaskKind::Causal;
  const Computed c = run(s);
  auto e = explainScore(c.result, c.problem, c.problem.options, 0, 0, 2);
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(anyStepContains(*e, "÷ T = ÷ 2")) << allSteps(*e);
  EXPECT_TRUE(e->masked);
  EXPECT_TRUE(anyStepContains(*e, "masked (causal)")) << allSteps(*e);
}

TEST(ExplainScore, OutOfRangeIsAnErrorNamingTheField) {
  const Computed c = run(decoderScenario());
  auto badHead = explainScore(c.result, c.problem, c.problem.options, 3, 0, 0);
  ASSERT_FALSE(badHead.ok());
  EXPECT_EQ(badHead.error().field, "head");
  auto badRow = explainScore(c.result, c.problem, c.problem.options, 0, 5, 0);
  ASSERT_FALSE(badRow.ok());
  EXPECT_EQ(badRow.error().field, "row");
  auto badCol = explainWeight(c.result, c.problem, c.problem.options, 0, 0, 9);
  ASSERT_FALSE(badCol.ok());
  EXPECT_EQ(badCol.error().field, "col");
  EXPECT_FALSE(explainContext(c.result, c.problem, 0, 0, 3).ok());
}

// ---------------------------------------------------------------------------------------
// Weights
// ---------------------------------------------------------------------------------------

TEST(ExplainWeight, SoftmaxUsesTheRowsActualNumbers) {
  const Computed c = run(decoderScenario());
  auto e = explainWeight(c.result, c.problem, c.problem.options, 0, 0, 0);
  ASSERT_TRUE(e.ok());
  // s = 927, max = 929: e^(−2) / (e^(−2) + e^(−532) + e^(−781) + 1).
  EXPECT_TRUE(anyStepContains(*e, "s = 927, max = 929")) << allSteps(*e);
  EXPECT_TRUE(anyStepContains(*e, "e^(-2) = 0.1353")) << allSteps(*e);
  EXPECT_TRUE(anyStepContains(*e, "= 1.135")) << allSteps(*e);
  const float expected = std::exp(-2.0f) / (1.0f + std::exp(-2.0f));
  EXPECT_NEAR(e->value, expected, 1e-5);
  EXPECT_TRUE(anyStepContains(*e, "w = 0.1353 / 1.135 = " + formatNumber(expected)))
      << allSteps(*e);
}

TEST(ExplainWeight, MaskedCellsAndFullyMaskedRowsSaySo) {
  Scenario s;
  s.mode = Mode::Self;
  s.inputs = rows({{1, 0}, {0, 1}, {1, 1}});
  s.options.mask.kind = MaskKind::Custom;
  s.options.mask.custom = BoolMatrix::Constant(3, 3, true);
  s.options.mask.custom(0, 1) = false;
  s.options.mask.custom.row(2).setConstant(false);
  const Computed c = run(s);
  auto masked = explainWeight(c.result, c.problem, c.problem.options, 0, 0, 1);
  ASSERT_TRUE(masked.ok());
  EXPECT_TRUE(masked->masked);
  EXPECT_EQ(masked->value, 0.0f);
  EXPECT_TRUE(anyStepContains(*masked, "masked")) << allSteps(*masked);
  auto row = explainWeight(c.result, c.problem, c.problem.options, 0, 2, 0);
  ASSERT_TRUE(row.ok());
  EXPECT_TRUE(row->masked);
  EXPECT_TRUE(anyStepContains(*row, "every key")) << allSteps(*row);
}

// Hard, top-k and sparsemax: the explanation's final rule value matches the result's.
struct NormalizerCase {
  NormalizerKind kind;
  const char* ruleText;
};
class Normalizers : public ::testing::TestWithParam<NormalizerCase> {};

TEST_P(Normalizers, TheRuleGivesTheResultsWeight) {
  Scenario s;
  s.mode = Mode::Cross;
  s.queries = rows({{1, 0.5f}});
  s.keys = rows({{1, 0}, {0.9f, 0.4f}, {-1, 0}, {0.2f, 0.1f}, {0.8f, 0.1f}});
  s.options.normalizer.kind = GetParam().kind;
  s.options.normalizer.topK = 2;
  const Computed c = run(s);
  for (int col = 0; col < 5; ++col) {
    auto e = explainWeight(c.result, c.problem, c.problem.options, 0, 0, col);
    ASSERT_TRUE(e.ok());
    EXPECT_TRUE(anyStepContains(*e, GetParam().ruleText)) << allSteps(*e);
    // The line before "weight = ..." ends with the rule's own value.
    ASSERT_GE(e->steps.size(), 2u);
    const std::string& rule = e->steps[e->steps.size() - 2];
    const std::string want = formatNumber(c.result.heads[0].weights(0, col));
    EXPECT_EQ(rule.substr(rule.size() - want.size()), want) << allSteps(*e);
  }
}

TEST(ExplainWeight, ATinyTemperatureExplainsTheArgMaxNotATie) {
  // T = 1e-38 on scores 4 and 5: the weights are exactly 0 and 1 (issue 7), and the
  // explanation shows the row the normaliser saw, (s − max) ÷ T, not the clamped quotients
  // (FLT_MAX twice, which would explain a tie of 0.5 / 0.5).
  Scenario s;
  s.mode = Mode::Cross;
  s.queries = rows({{1}});
  s.keys = rows({{4}, {5}});
  s.options.temperature = 1e-38f;
  for (NormalizerKind kind : {NormalizerKind::Softmax, NormalizerKind::Hard,
                              NormalizerKind::TopK, NormalizerKind::Sparsemax}) {
    s.options.normalizer.kind = kind;
    const Computed c = run(s);
    for (int col = 0; col < 2; ++col) {
      auto e = explainWeight(c.result, c.problem, c.problem.options, 0, 0, col);
      ASSERT_TRUE(e.ok());
      EXPECT_EQ(e->value, col == 1 ? 1.0f : 0.0f);
      EXPECT_TRUE(anyStepContains(*e, "(score − max) ÷ T")) << allSteps(*e);
      ASSERT_GE(e->steps.size(), 2u);
      const std::string& rule = e->steps[e->steps.size() - 2];
      const std::string want = formatNumber(e->value);
      EXPECT_EQ(rule.substr(rule.size() - want.size()), want) << allSteps(*e);
      EXPECT_FALSE(anyStepContains(*e, "0.5")) << allSteps(*e);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, Normalizers,
    ::testing::Values(NormalizerCase{NormalizerKind::Hard, "max"},
                      NormalizerCase{NormalizerKind::TopK, "k-th largest"},
                      NormalizerCase{NormalizerKind::Sparsemax, "τ = "}));

TEST(ExplainWeight, MeanOverHeads) {
  Scenario s;
  s.mode = Mode::Self;
  s.inputs = rows({{1, 0, 2, 1}, {0, 1, 1, 0}, {1, 1, 0, 2}});
  s.options.heads = 2;
  const Computed c = run(s);
  auto e = explainWeight(c.result, c.problem, c.problem.options, -1, 1, 2);
  ASSERT_TRUE(e.ok());
  ASSERT_EQ(e->terms.size(), 2u);
  EXPECT_NEAR((e->terms[0].value + e->terms[1].value) / 2, e->value, 1e-6);
  auto score = explainScore(c.result, c.problem, c.problem.options, -1, 1, 2);
  ASSERT_TRUE(score.ok());
  EXPECT_NEAR(score->value,
              (headScores(c.result, 0)(1, 2) + headScores(c.result, 1)(1, 2)) / 2, 1e-6);
}

// ---------------------------------------------------------------------------------------
// Context, output, projections
// ---------------------------------------------------------------------------------------

TEST(ExplainContext, LargestTermsFirstAndTheyAddUp) {
  const Computed c = run(decoderScenario());
  auto e = explainContext(c.result, c.problem, 0, 0, 2);
  ASSERT_TRUE(e.ok());
  float sum = 0;
  for (std::size_t i = 0; i < e->terms.size(); ++i) {
    sum += e->terms[i].value;
    if (i > 0) {
      EXPECT_GE(std::abs(e->terms[i - 1].value), std::abs(e->terms[i].value));
    }
  }
  EXPECT_NEAR(sum, e->value, 1e-3);
  EXPECT_NEAR(e->value, c.result.heads[0].context(0, 2), 1e-6);
  EXPECT_EQ(e->hiddenTerms, 0);
}

TEST(ExplainContext, ManyKeysAreTruncatedWithACount) {
  Scenario s;
  s.mode = Mode::Self;
  s.inputs = Matrix::Zero(20, 2);
  for (int i = 0; i < 20; ++i) s.inputs.row(i) << 0.1f * i, 1.0f;
  const Computed c = run(s);
  auto e = explainContext(c.result, c.problem, 0, 3, 0);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->hiddenTerms, 20 - kExplainMaxTerms);
  EXPECT_TRUE(anyStepContains(*e, "+ 12 more")) << allSteps(*e);
}

TEST(ExplainOutput, XavierOutputIsTheSumOfItsTerms) {
  Scenario s;
  s.mode = Mode::Self;
  s.inputs = rows({{1, 0, 2, 1}, {0, 1, 1, 0}, {1, 1, 0, 2}});
  s.options.heads = 2;
  s.projection = ProjectionKind::Xavier;
  s.options.seed = 3;
  const Computed c = run(s);
  auto e = explainOutput(c.result, c.problem, 1, 2);
  ASSERT_TRUE(e.ok());
  float sum = 0;
  for (const ExplainTerm& t : e->terms) sum += t.value;
  EXPECT_NEAR(sum, e->value, 1e-4);
  auto q = explainProjected(c.result, c.problem, 'q', 1, 0, 1);
  ASSERT_TRUE(q.ok());
  float qsum = 0;
  for (const ExplainTerm& t : q->terms) qsum += t.value;
  EXPECT_NEAR(qsum, q->value, 1e-4);
}

TEST(ExplainProjected, IdentityIsTheRawInput) {
  const Computed c = run(decoderScenario());
  auto e = explainProjected(c.result, c.problem, 'k', 0, 3, 2);
  ASSERT_TRUE(e.ok());
  EXPECT_NEAR(e->value, 45.3f, 1e-4);
  EXPECT_NE(e->formula.find("identity"), std::string::npos);
}

TEST(FormatNumber, ShortAndReadable) {
  EXPECT_EQ(formatNumber(927.0f), "927");
  EXPECT_EQ(formatNumber(0.135335f), "0.1353");
  EXPECT_EQ(formatNumber(-0.0f), "0");
  EXPECT_EQ(formatNumber(-std::numeric_limits<float>::infinity()), "−∞");
}

// ---------------------------------------------------------------------------------------
// pcaProject2d
// ---------------------------------------------------------------------------------------

TEST(PcaProject2d, SmallWidthsArePassedThroughOrPadded) {
  const Matrix two = rows({{1, 2}, {-3, 4}});
  EXPECT_TRUE(pcaProject2d(two).isApprox(two));
  const Matrix one = rows({{1}, {-3}});
  const Matrix padded = pcaProject2d(one);
  ASSERT_EQ(padded.cols(), 2);
  EXPECT_EQ(padded(1, 0), -3.0f);
  EXPECT_EQ(padded(1, 1), 0.0f);
  EXPECT_EQ(pcaProject2d(Matrix(3, 0)).cols(), 2);
  EXPECT_EQ(pcaProject2d(Matrix(0, 5)).rows(), 0);
}

TEST(PcaProject2d, PointsInAPlaneKeepTheirLengthsAndAngles) {
  // Points in the plane spanned by (1,1,0,0)/√2 and (0,0,1,-1)/√2, inside 4-D.
  Matrix points(4, 4);
  points << 1, 1, 0, 0,  //
      0, 0, 2, -2,       //
      1, 1, 1, -1,       //
      -2, -2, 0.5f, -0.5f;
  const Matrix p = pcaProject2d(points);
  ASSERT_EQ(p.rows(), 4);
  ASSERT_EQ(p.cols(), 2);
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(p.row(i).norm(), points.row(i).norm(), 1e-4);
    for (int j = 0; j < 4; ++j)
      EXPECT_NEAR(p.row(i).dot(p.row(j)), points.row(i).dot(points.row(j)), 1e-3);
  }
  // Deterministic (fixed signs) and linear: the origin stays the origin.
  EXPECT_TRUE(pcaProject2d(points).isApprox(p));
  Matrix withOrigin(5, 4);
  withOrigin << points, Matrix::Zero(1, 4);
  EXPECT_NEAR(pcaProject2d(withOrigin).row(4).norm(), 0.0f, 1e-6);
}

TEST(PcaProject2d, OnePointInManyDimensions) {
  const Matrix p = pcaProject2d(rows({{3, 4, 0, 0, 0}}));
  EXPECT_NEAR(p.row(0).norm(), 5.0f, 1e-5);
  EXPECT_NEAR(std::abs(p(0, 1)), 0.0f, 1e-5);
}

}  // namespace
}  // namespace test_core_explain
}  // namespace attn
