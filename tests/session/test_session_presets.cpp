// Every built-in preset (assets/scenarios/*.json) is computed, and everything it says is
// checked against the numbers: its machine-checkable "claims" (what the description says,
// core/attention/claims.h) and the statements of the pipeline's stage captions
// (app/session/pipeline_steps.h, stageDescription) for that scenario.
#include <gtest/gtest.h>

#include <filesystem>
#include <algorithm>
#include <string>
#include <vector>

#include "app/session/pipeline_steps.h"
#include "core/attention/claims.h"
#include "core/attention/selection.h"
#include "formats/claims_json.h"
#include "formats/scenario_json.h"
#include "tests/support/test_paths.h"

namespace test_session_presets {
namespace {

namespace fs = std::filesystem;
using namespace attn;

std::vector<fs::path> presets() {
  std::vector<fs::path> paths;
  for (const auto& entry : fs::directory_iterator(fs::path(attn::testing::assetDir()) / "scenarios"))
    if (entry.path().extension() == ".json") paths.push_back(entry.path());
  std::sort(paths.begin(), paths.end());
  return paths;
}

struct Computed {
  Scenario scenario;
  Problem problem;
  AttentionResult result;
};

Computed compute(const fs::path& path) {
  Computed c;
  Expected<Scenario> scenario = io::loadScenario(path.string());
  EXPECT_TRUE(scenario.ok()) << path << ": " << (scenario.ok() ? "" : scenario.error().problem);
  if (!scenario.ok()) return c;
  c.scenario = *scenario;
  Expected<Problem> problem = buildProblem(c.scenario);
  EXPECT_TRUE(problem.ok()) << path;
  if (!problem.ok()) return c;
  c.problem = *problem;
  Expected<AttentionResult> result = attend(c.problem.inputs, c.problem.options);
  EXPECT_TRUE(result.ok()) << path;
  if (result.ok()) c.result = *result;
  return c;
}

TEST(Presets, ThereAreSixAndEveryOneCarriesClaims) {
  const std::vector<fs::path> paths = presets();
  EXPECT_EQ(paths.size(), 6u);
  for (const fs::path& path : paths) {
    const Computed c = compute(path);
    EXPECT_FALSE(c.scenario.claims.empty()) << path << " states nothing checkable";
  }
}

TEST(Presets, EveryClaimHolds) {
  int checked = 0;
  for (const fs::path& path : presets()) {
    const Computed c = compute(path);
    ASSERT_FALSE(c.result.heads.empty()) << path;
    for (const std::string& failure : failedClaims(c.scenario.claims, c.result, c.problem))
      ADD_FAILURE() << path.filename().string() << ": " << failure;
    checked += static_cast<int>(c.scenario.claims.size());
  }
  EXPECT_GE(checked, 12);
}

// The sentences of a description: each ends at a '.' that follows a non-space character and
// precedes a space or the end ("v . tanh(...)" and "0..i" do not end one).
std::vector<std::string> sentencesOf(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t i = 1; i < text.size(); ++i) {
    const bool end = text[i] == '.' && text[i - 1] != ' ' && (i + 1 == text.size() || text[i + 1] == ' ');
    if (!end) continue;
    out.push_back(text.substr(start, i + 1 - start));
    start = i + 2;
  }
  if (start < text.size()) out.push_back(text.substr(start));
  return out;
}

// The statements of a preset: assets/claims/NAME.json beside assets/scenarios/NAME.json.
std::vector<Statement> statementsOf(const fs::path& preset) {
  const fs::path path = fs::path(attn::testing::assetDir()) / "claims" / preset.filename();
  Expected<std::vector<Statement>> statements = io::loadStatements(path.string());
  EXPECT_TRUE(statements.ok()) << (statements.ok() ? "" : statements.error().message());
  return statements.ok() ? *statements : std::vector<Statement>();
}

TEST(Presets, EverySentenceOfEveryDescriptionHasACheckedStatementThatHolds) {
  // Issue 31: every sentence a preset says is checked. Each statement quotes (says) the part
  // of the description it backs; every sentence contains at least one statement's quote;
  // and every statement holds for the preset's numbers.
  int sentences = 0, checked = 0;
  for (const fs::path& path : presets()) {
    const Computed c = compute(path);
    const std::string name = path.filename().string();
    const std::vector<Statement> statements = statementsOf(path);
    for (const Statement& st : statements) {
      EXPECT_FALSE(st.says.empty()) << name << ": a statement that quotes no sentence";
      EXPECT_NE(c.scenario.description.find(st.says), std::string::npos)
          << name << ": \"" << st.says << "\" is not in the description";
    }
    for (const std::string& sentence : sentencesOf(c.scenario.description)) {
      ++sentences;
      bool backed = false;
      for (const Statement& st : statements)
        backed = backed || (!st.says.empty() && sentence.find(st.says) != std::string::npos);
      EXPECT_TRUE(backed) << name << ": no statement checks \"" << sentence << "\"";
    }
    for (const std::string& failure : failedStatements(statements, c.result, c.problem))
      ADD_FAILURE() << name << ": " << failure;
    checked += static_cast<int>(statements.size());
  }
  EXPECT_GE(sentences, 24);
  EXPECT_GE(checked, 80);
}

TEST(Presets, SentencesSplitAtFullStopsOnly) {
  EXPECT_EQ(sentencesOf("A is v . tanh(x). B sees 0..i. C"),
            (std::vector<std::string>{"A is v . tanh(x).", "B sees 0..i.", "C"}));
}

TEST(Presets, TheNewStatementKindsReportTheNumbers) {
  // max-weight, entropy, argmax on the diagonal, shape and a what-if, each stated falsely
  // about presets whose numbers are known.
  const fs::path dir = fs::path(attn::testing::assetDir()) / "scenarios";
  const Computed eight = compute(dir / "eight_heads_sentence.json");
  Statement peaked;  // the old text: "some heads fix on one token"; head 4's largest is 0.3338
  peaked.claim.head = 4;
  peaked.maxAtLeast = 0.5f;
  Statement sharp;  // a row of entropy below 1 nat: every row of head 0 is above 2.09
  sharp.entropyAtMost = 1.0f;
  Statement shape;
  shape.claim.stage = "q";
  shape.shape = {12, 64};
  std::vector<std::string> failures =
      failedStatements({peaked, sharp, shape}, eight.result, eight.problem);
  ASSERT_EQ(failures.size(), 3u);
  EXPECT_NE(failures[0].find("is 0.3338, below 0.5"), std::string::npos) << failures[0];
  EXPECT_NE(failures[1].find("nats, above 1"), std::string::npos) << failures[1];
  EXPECT_NE(failures[2].find("is 12 x 8, not 12 x 64"), std::string::npos) << failures[2];
  // The local window's old sentence, "the centre counts most", is false.
  const Computed local = compute(dir / "local_window.json");
  Statement centre;
  centre.argmaxOnDiagonal = true;
  failures = failedStatements({centre}, local.result, local.problem);
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_NE(failures[0].find("row \"local\" puts 0.1941 on itself and 0.2445 on \"attention\""),
            std::string::npos)
      << failures[0];
  // What-if: at T = 1000 the decoder's weights even out (largest 0.3286), at T = 1 not; the
  // row's entropy is then close to ln 4 = 1.386 (1.334).
  const Computed decoder = compute(dir / "decoder_state.json");
  Statement even;
  even.maxAtMost = 0.33f;
  EXPECT_EQ(failedStatements({even}, decoder.result, decoder.problem).size(), 1u);
  even.withTemperature = 1000.0f;
  EXPECT_TRUE(failedStatements({even}, decoder.result, decoder.problem).empty());
  Statement uniform;
  uniform.withTemperature = 1000.0f;
  uniform.entropyAtLeast = 1.33f;
  uniform.entropyAtMost = 1.34f;
  EXPECT_TRUE(failedStatements({uniform}, decoder.result, decoder.problem).empty());
  uniform.withTemperature.reset();
  EXPECT_EQ(failedStatements({uniform}, decoder.result, decoder.problem).size(), 1u);
  // A scenario file's claims still read "claims[i]".
  Claim wrong;
  wrong.query = "s";
  wrong.argmaxKey = "h1";
  failures = failedClaims({wrong}, decoder.result, decoder.problem);
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_EQ(failures[0].rfind("claims[0]: ", 0), 0u) << failures[0];
}

TEST(Presets, MalformedStatementsNameTheField) {
  struct Case {
    const char* text;
    const char* field;
    const char* words;
  } cases[] = {
      {R"({})", "", "list of statements"},
      {R"([{"says": "x"}])", "[0]", "states nothing"},
      {R"([{"shape": [2]}])", "[0].shape", "[rows, cols]"},
      {R"([{"max_at_most": 1, "with": {"mask": "diagonal"}}])", "[0].with.mask", "unknown mask"},
      {R"([{"max_at_most": 1, "with": {"seed": 3}}])", "[0].with.seed", "unknown field"},
      {R"([{"max_at_most": 1, "with": {"temperature": 0}}])", "[0].with.temperature", "> 0"},
      {R"([{"entropy_at_least": "high"}])", "[0].entropy_at_least", "a number"},
      {R"([{"argmax_key": "a"}])", "[0].query", "query"},
  };
  for (const Case& one : cases) {
    Expected<std::vector<Statement>> parsed = io::parseStatements(one.text, "claims/x.json");
    ASSERT_FALSE(parsed.ok()) << one.text;
    EXPECT_EQ(parsed.error().file, "claims/x.json");
    EXPECT_EQ(parsed.error().field, one.field) << one.text;
    EXPECT_NE(parsed.error().problem.find(one.words), std::string::npos)
        << one.text << ": " << parsed.error().problem;
  }
}

TEST(Presets, EveryCaptionStatementHolds) {
  // The captions' checkable statements: "rows sum to 1", "rows sum to less than 1",
  // "masked keys get 0", for every head of every preset.
  for (const fs::path& path : presets()) {
    const Computed c = compute(path);
    const std::string name = path.filename().string();
    for (MatrixKind stage : app::kPipelineOrder) {
      const std::string caption = app::stageDescription(stage, c.scenario);
      EXPECT_FALSE(caption.empty()) << name << " " << toString(stage);
      if (stage != MatrixKind::Weights) continue;
      for (std::size_t h = 0; h < c.result.heads.size(); ++h) {
        const Matrix& w = c.result.heads[h].weights;
        float sums[2];
        const bool one = rowsSumToOne(w, c.result.fullyMaskedRows, 1e-4f, sums);
        if (caption.find("rows sum to 1") != std::string::npos) {
          EXPECT_TRUE(one) << name << " head " << h << ": \"" << caption << "\" but rows sum to "
                           << sums[0] << " .. " << sums[1];
        }
        if (caption.find("rows sum to less than 1") != std::string::npos) {
          EXPECT_LT(sums[1], 1.0f - 1e-3f) << name << " head " << h << ": \"" << caption << "\"";
        }
        if (caption.find("masked keys get 0") != std::string::npos) {
          for (Eigen::Index r = 0; r < w.rows(); ++r) {
            for (Eigen::Index k = 0; k < w.cols(); ++k) {
              if (!c.result.allowed(r, k)) {
                EXPECT_EQ(w(r, k), 0.0f) << name << " head " << h << " (" << r << ", " << k << ")";
              }
            }
          }
        }
      }
    }
  }
}

TEST(Presets, AFalseClaimIsReportedWithTheNumbers) {
  // Bahdanau's first decoder state prefers "mat" (the old description said "cat").
  const Computed c = compute(fs::path(attn::testing::assetDir()) / "scenarios" / "bahdanau_additive.json");
  Claim wrong;
  wrong.query = "s1";
  wrong.argmaxKey = "cat";
  Claim sums;
  sums.rowsSumToOne = false;  // softmax rows do sum to 1
  Claim missing;
  missing.query = "s9";
  missing.argmaxKey = "cat";
  const std::vector<std::string> failures = failedClaims({wrong, sums, missing}, c.result, c.problem);
  ASSERT_EQ(failures.size(), 3u);
  EXPECT_NE(failures[0].find("largest entry at \"mat\""), std::string::npos) << failures[0];
  EXPECT_NE(failures[1].find("is true"), std::string::npos) << failures[1];
  EXPECT_NE(failures[2].find("no row labelled \"s9\""), std::string::npos) << failures[2];
}

TEST(Presets, ClaimsSurviveASave) {
  const fs::path path = fs::path(attn::testing::assetDir()) / "scenarios" / "local_window.json";
  Expected<Scenario> scenario = io::loadScenario(path.string());
  ASSERT_TRUE(scenario.ok());
  ASSERT_FALSE(scenario->claims.empty());
  Expected<Scenario> back = io::parseScenario(io::scenarioToJson(*scenario), "saved.json");
  ASSERT_TRUE(back.ok()) << back.error().problem;
  EXPECT_EQ(back->claims, scenario->claims);
}

TEST(Presets, MalformedClaimsNameTheField) {
  struct Case {
    const char* claims;
    const char* field;
    const char* words;
  } cases[] = {
      {R"("claims": {})", "claims", "list of claims"},
      {R"("claims": [{"query": "a"}])", "claims[0]", "states nothing"},
      {R"("claims": [{"argmax_key": "a"}])", "claims[0].query", "query"},
      {R"("claims": [{"query": "a", "value": 0.5}])", "claims[0].key", "key"},
      {R"("claims": [{"rows_sum_to_one": 1}])", "claims[0].rows_sum_to_one", "true"},
      {R"("claims": [{"row_sums": true}])", "claims[0].row_sums", "unknown field"},
  };
  for (const Case& one : cases) {
    const std::string text =
        std::string(R"({"queries": [[1, 0]], "keys": [[1, 0]], )") + one.claims + "}";
    Expected<Scenario> parsed = io::parseScenario(text, "claims.json");
    ASSERT_FALSE(parsed.ok()) << one.claims;
    EXPECT_EQ(parsed.error().field, one.field) << one.claims;
    EXPECT_NE(parsed.error().problem.find(one.words), std::string::npos)
        << one.claims << ": " << parsed.error().problem;
  }
}

}  // namespace
}  // namespace test_session_presets
