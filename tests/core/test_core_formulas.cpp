// One notation (issue 7): the formula strings of core/attention/formulas.h appear verbatim in
// docs/formulas.md, and the explanations use them. (The settings panel's use of them is
// checked in test_ui_panels.)
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "core/attention/explain.h"
#include "core/attention/formulas.h"
#include "core/scenario/scenario.h"
#include "tests/support/test_core_util.h"
#include "tests/support/test_paths.h"

namespace attn {
namespace test_core_formulas {
namespace {

std::string formulasDoc() {
  std::ifstream in(attn::testing::assetDir() + "/../docs/formulas.md", std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

constexpr ScoreKind kScores[] = {ScoreKind::Dot,     ScoreKind::ScaledDot, ScoreKind::Cosine,
                                 ScoreKind::General, ScoreKind::Additive,  ScoreKind::Mlp};
constexpr NormalizerKind kNormalizers[] = {NormalizerKind::Softmax, NormalizerKind::Hard,
                                           NormalizerKind::TopK, NormalizerKind::Sparsemax};
constexpr MaskKind kMasks[] = {MaskKind::None,  MaskKind::Causal,        MaskKind::Padding,
                               MaskKind::Local, MaskKind::LocalGaussian, MaskKind::Custom};

TEST(Formulas, EveryStringAppearsInTheDocs) {
  const std::string doc = formulasDoc();
  ASSERT_FALSE(doc.empty());
  auto expectInDoc = [&](std::string_view formula) {
    ASSERT_FALSE(formula.empty());
    EXPECT_NE(doc.find(formula), std::string::npos)
        << "docs/formulas.md does not contain: " << formula;
  };
  for (ScoreKind kind : kScores) expectInDoc(formulas::score(kind));
  for (NormalizerKind kind : kNormalizers) expectInDoc(formulas::normalizer(kind));
  for (MaskKind kind : kMasks) expectInDoc(formulas::mask(kind));
  expectInDoc(formulas::temperature());
  expectInDoc(formulas::context());
}

TEST(Formulas, OneNotationNoColumnVectorForms) {
  // The row-vector notation of the code: q·k, q·W, never qᵀk or W·q.
  for (ScoreKind kind : kScores) {
    const std::string formula(formulas::score(kind));
    EXPECT_EQ(formula.find("qᵀ"), std::string::npos) << formula;
    EXPECT_EQ(formula.find("vᵀ"), std::string::npos) << formula;
    EXPECT_EQ(formula.find("d_k"), std::string::npos) << formula;
    EXPECT_EQ(formula.rfind("score(q, k) = ", 0), 0u) << formula;
  }
}

TEST(Formulas, ExplanationsUseThem) {
  Scenario s;
  s.mode = Mode::Self;
  s.inputs = testing::randomMatrix(3, 4, 5);
  for (ScoreKind kind : kScores) {
    s.options.score = kind;
    auto problem = buildProblem(s);
    ASSERT_TRUE(problem.ok()) << problem.error().message();
    auto result = attend(problem->inputs, problem->options);
    ASSERT_TRUE(result.ok());
    auto e = explainScore(*result, *problem, problem->options, 0, 1, 2);
    ASSERT_TRUE(e.ok()) << e.error().message();
    EXPECT_EQ(e->formula.rfind(formulas::score(kind), 0), 0u) << e->formula;
  }
  s.options.score = ScoreKind::Dot;
  for (NormalizerKind kind : {NormalizerKind::Softmax, NormalizerKind::Hard,
                              NormalizerKind::Sparsemax}) {
    s.options.normalizer.kind = kind;
    auto problem = buildProblem(s);
    ASSERT_TRUE(problem.ok());
    auto result = attend(problem->inputs, problem->options);
    ASSERT_TRUE(result.ok());
    auto e = explainWeight(*result, *problem, problem->options, 0, 1, 2);
    ASSERT_TRUE(e.ok()) << e.error().message();
    EXPECT_EQ(e->formula, formulas::normalizer(kind));
  }
}

}  // namespace
}  // namespace test_core_formulas
}  // namespace attn
