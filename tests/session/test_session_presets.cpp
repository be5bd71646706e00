// Every built-in preset (assets/scenarios/*.json) is computed, and everything it says is
// checked against the numbers: its machine-checkable "claims" (what the description says,
// core/attention/claims.h) and the statements of the pipeline's stage captions
// (app/session/pipeline_steps.h, stageDescription) for that scenario.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "app/session/pipeline_steps.h"
#include "core/attention/claims.h"
#include "core/attention/selection.h"
#include "formats/scenario_json.h"

namespace {

namespace fs = std::filesystem;
using namespace attn;

std::vector<fs::path> presets() {
  std::vector<fs::path> paths;
  for (const auto& entry : fs::directory_iterator(fs::path(ATTNSCOPE_ASSET_DIR) / "scenarios"))
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
  const Computed c = compute(fs::path(ATTNSCOPE_ASSET_DIR) / "scenarios" / "bahdanau_additive.json");
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
  const fs::path path = fs::path(ATTNSCOPE_ASSET_DIR) / "scenarios" / "local_window.json";
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
