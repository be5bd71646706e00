// core/scenario_edits: every document edit validates and clamps in the core, whatever the
// front end (a slider, a typed value, a test) produced.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/scenario/scenario_edits.h"

namespace test_core_scenario_edits {
namespace {

using namespace attn;

Scenario decoderState() {
  Scenario s;
  s.mode = Mode::Cross;
  s.queries = Matrix{{5, 1, 20}};
  s.keys = Matrix{{3, 12, 45}, {59, 2, 5}, {1, 43, 5}, {4, 3, 45.3f}};
  return s;
}

TEST(ScenarioEdits, TemperatureIsValidatedAndClampedInTheCore) {
  Scenario s = decoderState();
  EditOutcome nan = setTemperature(s, std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE(nan.refused());
  EXPECT_EQ(s.options.temperature, 1.f);
  EXPECT_TRUE(setTemperature(s, 0.f).refused());
  EXPECT_TRUE(setTemperature(s, -2.f).refused());
  EXPECT_TRUE(setTemperature(s, std::numeric_limits<float>::infinity()).refused());
  EXPECT_EQ(s.options.temperature, 1.f);

  // A preset suggests T = 1000: beyond the slider's 100, inside the editable range.
  EditOutcome big = setTemperature(s, 1000.f);
  EXPECT_TRUE(big.changed);
  EXPECT_TRUE(big.note.empty());
  EXPECT_EQ(s.options.temperature, 1000.f);

  EditOutcome huge = setTemperature(s, 1e9f);
  EXPECT_TRUE(huge.changed);
  EXPECT_EQ(s.options.temperature, kMaxTemperature);
  EXPECT_NE(huge.note.find("10000"), std::string::npos) << huge.note;
  EditOutcome tiny = setTemperature(s, 1e-30f);
  EXPECT_EQ(s.options.temperature, kMinTemperature);
  EXPECT_NE(tiny.note.find("0.0001"), std::string::npos) << tiny.note;
  EXPECT_FALSE(setTemperature(s, kMinTemperature).changed);  // no change, no undo step
}

TEST(ScenarioEdits, IntegerSettingsAreClamped) {
  Scenario s = decoderState();
  setTopK(s, -5);
  EXPECT_EQ(s.options.normalizer.topK, 1);
  setTopK(s, 1 << 30);
  EXPECT_EQ(s.options.normalizer.topK, Limits::kMaxTokens);
  setLocalWindow(s, -1);
  EXPECT_EQ(s.options.mask.window, 0);
  setWindowPosition(s, 99);
  EXPECT_EQ(s.options.mask.position, 3);  // n_k = 4
  setScoreHidden(s, -3);
  EXPECT_EQ(s.options.scoreHidden, 0);
  EditOutcome seed = setSeed(s, ~std::uint64_t{0});
  EXPECT_EQ(s.options.seed, kMaxSeed);
  EXPECT_FALSE(seed.note.empty());
}

TEST(ScenarioEdits, ScoreSwitchDropsFileParameters) {
  Scenario s = decoderState();
  s.options.scoreParams.resize(1);
  s.options.scoreParams[0].generalW = Matrix::Identity(3, 3);
  EditOutcome outcome = setScore(s, ScoreKind::Additive);
  EXPECT_TRUE(outcome.changed);
  EXPECT_TRUE(s.options.scoreParams.empty());
  EXPECT_FALSE(outcome.note.empty());
  EXPECT_FALSE(setScore(s, ScoreKind::Additive).changed);
}

TEST(ScenarioEdits, AllowAllNeedsACustomMaskAndCombineMergesSteps) {
  Scenario s = decoderState();
  EXPECT_TRUE(allowAllCustomMask(s).refused());
  ASSERT_TRUE(toggleCustomMaskCell(s, 0, 2).changed);
  EXPECT_FALSE(s.options.mask.custom(0, 2));
  EXPECT_TRUE(allowAllCustomMask(s).changed);
  EXPECT_TRUE(s.options.mask.custom.all());

  EditOutcome both = combine(setValue(s, Sequence::Queries, 0, 0, 7.f),
                             setValue(s, Sequence::Queries, 0, 1, 8.f));
  EXPECT_TRUE(both.changed);
  EXPECT_EQ(s.queries(0, 0), 7.f);
  EXPECT_EQ(s.queries(0, 1), 8.f);
  // Under identity projection queries and keys share their width: keys follow in width only.
  EXPECT_EQ(s.keys.cols(), 3);
}

TEST(ScenarioEdits, ResetToRestoresTheOriginal) {
  const Scenario original = decoderState();
  Scenario s = original;
  setTemperature(s, 3.f);
  setHeads(s, 3);
  EXPECT_TRUE(resetTo(s, original).changed);
  EXPECT_EQ(s.options.temperature, 1.f);
  EXPECT_EQ(s.options.heads, 1);
  EXPECT_EQ(s.keys, original.keys);
}

TEST(ScenarioEdits, HiddenWidthZeroIsRefusedWithAMessage) {
  Scenario s = decoderState();
  s.options.score = ScoreKind::Additive;
  const EditOutcome zero = setScoreHidden(s, 0);
  EXPECT_TRUE(zero.refused());
  EXPECT_NE(zero.note.find("at least 1"), std::string::npos) << zero.note;
  EXPECT_NE(zero.note.find("stays d_h"), std::string::npos) << zero.note;  // file default kept
  EXPECT_EQ(s.options.scoreHidden, 0);
  EXPECT_TRUE(setScoreHidden(s, -3).refused());
  // 1 is a real layer; above the limit is clamped, with a note.
  EXPECT_TRUE(setScoreHidden(s, 1).changed);
  EXPECT_EQ(s.options.scoreHidden, 1);
  EXPECT_TRUE(setScoreHidden(s, 0).refused());
  EXPECT_EQ(s.options.scoreHidden, 1);
  const EditOutcome big = setScoreHidden(s, Limits::kMaxWidth + 5);
  EXPECT_TRUE(big.changed);
  EXPECT_EQ(s.options.scoreHidden, Limits::kMaxWidth);
  EXPECT_NE(big.note.find("clamped"), std::string::npos) << big.note;
  EXPECT_TRUE(buildProblem(s).ok());
}

TEST(ScenarioEdits, ASentenceInCrossModeKeepsTheModeAndReplacesOneSide) {
  Scenario s = decoderState();
  s.options.score = ScoreKind::ScaledDot;
  s.options.temperature = 2.f;
  const Matrix queries = s.queries;

  // Keys: the words become the keys (at the keys' width 3, not the 16 asked for).
  const EditOutcome keys = setSentence(s, "le chat noir", 16, SentenceTarget::Keys);
  ASSERT_TRUE(keys.changed) << keys.note;
  EXPECT_NE(keys.note.find("width 3"), std::string::npos) << keys.note;
  EXPECT_EQ(s.mode, Mode::Cross);
  EXPECT_EQ(s.options.score, ScoreKind::ScaledDot);
  EXPECT_EQ(s.projection, ProjectionKind::Identity);
  EXPECT_EQ(s.options.temperature, 2.f);
  EXPECT_TRUE(s.sentence.empty());
  EXPECT_EQ(s.queries, queries);
  ASSERT_EQ(s.keys.rows(), 3);
  ASSERT_EQ(s.keys.cols(), 3);
  EXPECT_EQ(s.keyLabels, (std::vector<std::string>{"le", "chat", "noir"}));
  // The seeded embeddings of the words, as self mode would make them.
  EXPECT_EQ(s.keys, seededEmbeddings({"le", "chat", "noir"}, 3, s.options.seed));
  Expected<Problem> problem = buildProblem(s);
  ASSERT_TRUE(problem.ok()) << problem.error().message();
  EXPECT_EQ(problem->inputs.keys.rows(), 3);

  // Queries: the keys stay.
  const Matrix newKeys = s.keys;
  ASSERT_TRUE(setSentence(s, "the black cat sat", 3, SentenceTarget::Queries).changed);
  EXPECT_EQ(s.mode, Mode::Cross);
  EXPECT_EQ(s.queries.rows(), 4);
  EXPECT_EQ(s.queryLabels.size(), 4u);
  EXPECT_EQ(s.keys, newKeys);
  EXPECT_TRUE(buildProblem(s).ok());

  // Separate values follow the new keys (one per key, their own width kept).
  s.values = Matrix::Ones(3, 2);
  ASSERT_TRUE(setSentence(s, "a b c d e", 3, SentenceTarget::Keys).changed);
  EXPECT_EQ(s.values.rows(), 5);
  EXPECT_EQ(s.values.cols(), 2);
  EXPECT_TRUE(buildProblem(s).ok());

  // A padding mask belonged to the old keys: it starts over.
  ASSERT_TRUE(setMaskKind(s, MaskKind::Padding).changed);
  ASSERT_TRUE(togglePaddingKey(s, 1).changed);
  ASSERT_TRUE(setSentence(s, "x y", 3, SentenceTarget::Keys).changed);
  EXPECT_EQ(s.options.mask.kind, MaskKind::None);
  EXPECT_TRUE(buildProblem(s).ok());

  // Self mode has no separate queries or keys; Self switches as before.
  Scenario self = s;
  ASSERT_TRUE(setSentence(self, "one two", 4, SentenceTarget::Self).changed);
  EXPECT_EQ(self.mode, Mode::Self);
  EXPECT_TRUE(setSentence(self, "three", 4, SentenceTarget::Queries).refused());
}

}  // namespace
}  // namespace test_core_scenario_edits
