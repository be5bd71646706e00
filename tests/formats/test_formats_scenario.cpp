// Scenario files: presets, round trips, every kind of bad input, atomic saving.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "formats/scenario_json.h"
#include "tests/support/test_files.h"
#include "tests/support/test_paths.h"

namespace attn {
namespace test_formats_scenario {
namespace {

namespace fs = std::filesystem;

const fs::path kPresetDir = fs::path(attn::testing::assetDir()) / "scenarios";

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

// A fresh folder per test, so tests can run in parallel (ctest -j).
fs::path testDir() { return testing::testCaseDir("io_scenario"); }
using testing::readFile;
using testing::writeFile;

std::vector<fs::path> presets() {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(kPresetDir)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

template <class M>
bool sameBits(const M& a, const M& b) {
  if (a.rows() != b.rows() || a.cols() != b.cols()) return false;
  return a.size() == 0 ||
         std::memcmp(a.data(), b.data(), sizeof(typename M::Scalar) * a.size()) == 0;
}

void expectSameParams(const ScoreParams& a, const ScoreParams& b) {
  EXPECT_TRUE(sameBits(a.generalW, b.generalW));
  EXPECT_TRUE(sameBits(a.additiveWq, b.additiveWq));
  EXPECT_TRUE(sameBits(a.additiveWk, b.additiveWk));
  EXPECT_TRUE(sameBits(a.additiveBias, b.additiveBias));
  EXPECT_TRUE(sameBits(a.additiveV, b.additiveV));
  EXPECT_TRUE(sameBits(a.mlpHiddenW, b.mlpHiddenW));
  EXPECT_TRUE(sameBits(a.mlpHiddenBias, b.mlpHiddenBias));
  EXPECT_TRUE(sameBits(a.mlpOutW, b.mlpOutW));
  EXPECT_EQ(std::memcmp(&a.mlpOutBias, &b.mlpOutBias, sizeof(Scalar)), 0);
}

void expectSameScenario(const Scenario& a, const Scenario& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.description, b.description);
  EXPECT_EQ(a.mode, b.mode);
  EXPECT_TRUE(sameBits(a.inputs, b.inputs));
  EXPECT_EQ(a.inputLabels, b.inputLabels);
  EXPECT_EQ(a.sentence, b.sentence);
  EXPECT_EQ(a.embeddingDim, b.embeddingDim);
  EXPECT_TRUE(sameBits(a.queries, b.queries));
  EXPECT_TRUE(sameBits(a.keys, b.keys));
  EXPECT_TRUE(sameBits(a.values, b.values));
  EXPECT_EQ(a.queryLabels, b.queryLabels);
  EXPECT_EQ(a.keyLabels, b.keyLabels);
  EXPECT_EQ(a.positionalEncoding, b.positionalEncoding);
  EXPECT_EQ(a.options.score, b.options.score);
  EXPECT_EQ(a.options.heads, b.options.heads);
  EXPECT_EQ(std::memcmp(&a.options.temperature, &b.options.temperature, sizeof(Scalar)), 0);
  EXPECT_EQ(a.options.seed, b.options.seed);
  EXPECT_EQ(a.projection, b.projection);
  EXPECT_EQ(a.modelWidth, b.modelWidth);
  const Projections& p = a.options.projections;
  const Projections& q = b.options.projections;
  EXPECT_TRUE(sameBits(p.wq, q.wq));
  EXPECT_TRUE(sameBits(p.bq, q.bq));
  EXPECT_TRUE(sameBits(p.wk, q.wk));
  EXPECT_TRUE(sameBits(p.bk, q.bk));
  EXPECT_TRUE(sameBits(p.wv, q.wv));
  EXPECT_TRUE(sameBits(p.bv, q.bv));
  EXPECT_TRUE(sameBits(p.wo, q.wo));
  EXPECT_TRUE(sameBits(p.bo, q.bo));
  EXPECT_TRUE(sameBits(a.inProjWeight, b.inProjWeight));
  EXPECT_TRUE(sameBits(a.inProjBias, b.inProjBias));
  EXPECT_TRUE(sameBits(a.outProjWeight, b.outProjWeight));
  EXPECT_TRUE(sameBits(a.outProjBias, b.outProjBias));
  ASSERT_EQ(a.options.scoreParams.size(), b.options.scoreParams.size());
  for (std::size_t h = 0; h < a.options.scoreParams.size(); ++h) {
    expectSameParams(a.options.scoreParams[h], b.options.scoreParams[h]);
  }
  EXPECT_EQ(a.options.scoreHidden, b.options.scoreHidden);
  EXPECT_EQ(a.options.mask.kind, b.options.mask.kind);
  EXPECT_EQ(a.options.mask.keyValid, b.options.mask.keyValid);
  EXPECT_EQ(a.options.mask.window, b.options.mask.window);
  EXPECT_EQ(a.options.mask.center, b.options.mask.center);
  EXPECT_EQ(a.options.mask.position, b.options.mask.position);
  EXPECT_TRUE(a.options.mask.custom.rows() == b.options.mask.custom.rows() &&
              a.options.mask.custom.cols() == b.options.mask.custom.cols() &&
              (a.options.mask.custom.size() == 0 || a.options.mask.custom == b.options.mask.custom));
  EXPECT_EQ(a.options.normalizer.kind, b.options.normalizer.kind);
  EXPECT_EQ(a.options.normalizer.topK, b.options.normalizer.topK);
  EXPECT_EQ(a.options.decoderOutput.enabled, b.options.decoderOutput.enabled);
  EXPECT_TRUE(sameBits(a.options.decoderOutput.wc, b.options.decoderOutput.wc));
  EXPECT_EQ(a.viewJson, b.viewJson);
}

void expectSameResult(const AttentionResult& a, const AttentionResult& b) {
  ASSERT_EQ(a.heads.size(), b.heads.size());
  for (std::size_t h = 0; h < a.heads.size(); ++h) {
    SCOPED_TRACE("head " + std::to_string(h));
    EXPECT_TRUE(sameBits(a.heads[h].q, b.heads[h].q));
    EXPECT_TRUE(sameBits(a.heads[h].k, b.heads[h].k));
    EXPECT_TRUE(sameBits(a.heads[h].v, b.heads[h].v));
    EXPECT_TRUE(sameBits(headScores(a, static_cast<int>(h)), headScores(b, static_cast<int>(h))));
    EXPECT_TRUE(sameBits(headMaskedScores(a, static_cast<int>(h)),
                         headMaskedScores(b, static_cast<int>(h))));
    EXPECT_TRUE(sameBits(a.heads[h].weights, b.heads[h].weights));
    EXPECT_TRUE(sameBits(a.heads[h].context, b.heads[h].context));
  }
  EXPECT_TRUE(sameBits(a.concat, b.concat));
  EXPECT_TRUE(sameBits(a.output, b.output));
  EXPECT_TRUE(sameBits(a.weightsMean, b.weightsMean));
  EXPECT_TRUE(sameBits(a.decoderOutput, b.decoderOutput));
  EXPECT_EQ(a.warnings.size(), b.warnings.size());
}

// save -> load must give the same Scenario and bit-identical results; writing is idempotent.
void expectRoundTrip(const Scenario& original, const fs::path& file) {
  ASSERT_TRUE(io::saveScenario(original, file.string()).ok());
  const auto loaded = io::loadScenario(file.string());
  ASSERT_TRUE(loaded.ok()) << loaded.error().message() << "\n" << readFile(file);
  expectSameScenario(original, *loaded);
  EXPECT_EQ(io::scenarioToJson(original), io::scenarioToJson(*loaded));
  const auto first = compute(original);
  const auto second = compute(*loaded);
  ASSERT_TRUE(first.ok()) << first.error().message();
  ASSERT_TRUE(second.ok()) << second.error().message();
  expectSameResult(*first, *second);
}

Expected<Scenario> parse(const std::string& json) {
  return io::parseScenario(json, "bad.json");
}

// The error is one line and names the file, the field and the problem.
void expectError(const std::string& json, const std::string& field, const std::string& problem) {
  const auto result = parse(json);
  ASSERT_FALSE(result.ok()) << "accepted: " << json.substr(0, 200);
  const std::string message = result.error().message();
  EXPECT_EQ(result.error().file, "bad.json");
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_NE(message.find("bad.json"), std::string::npos) << message;
  if (!field.empty()) {
    EXPECT_EQ(result.error().field, field) << message;
    EXPECT_NE(message.find("'" + field + "'"), std::string::npos) << message;
  }
  EXPECT_NE(message.find(problem), std::string::npos) << message;
}

const std::string kMinimal = R"({"queries": [[5, 1, 20]], "keys": [[3, 12, 45], [59, 2, 5]],
                                 "score": "dot"})";

// Builds {"queries": [[0], [0], ...]} with `rows` rows of `cols` zeros.
std::string zeros(int rows, int cols) {
  std::string row = "[";
  for (int c = 0; c < cols; ++c) row += c ? ",0" : "0";
  row += "]";
  std::string out = "[";
  for (int r = 0; r < rows; ++r) out += (r ? "," : "") + row;
  return out + "]";
}

// ---------------------------------------------------------------------------------------
// Presets
// ---------------------------------------------------------------------------------------

TEST(Presets, AllSixArePresent) {
  for (const char* name : {"decoder_state", "self_attention_two_heads", "fbi_causal",
                           "bahdanau_additive", "local_window", "eight_heads_sentence"}) {
    EXPECT_TRUE(fs::exists(kPresetDir / (std::string(name) + ".json"))) << name;
  }
}

TEST(Presets, EveryPresetLoadsAndComputesWithoutWarnings) {
  const auto files = presets();
  ASSERT_GE(files.size(), 6u);
  for (const fs::path& file : files) {
    SCOPED_TRACE(file.string());
    const auto scenario = io::loadScenario(file.string());
    ASSERT_TRUE(scenario.ok()) << scenario.error().message();
    EXPECT_FALSE(scenario->name.empty());
    EXPECT_GT(scenario->description.size(), 80u) << "a preset's description should teach";
    const auto result = compute(*scenario);
    ASSERT_TRUE(result.ok()) << result.error().message();
    for (const Warning& warning : result->warnings) ADD_FAILURE() << warning.message;
    for (const HeadResult& head : result->heads) {
      EXPECT_TRUE(head.weights.allFinite());
      EXPECT_TRUE(head.context.allFinite());
    }
  }
}

TEST(Presets, DecoderStateGivesTheTutorialScores) {
  const auto scenario = io::loadScenario((kPresetDir / "decoder_state.json").string());
  ASSERT_TRUE(scenario.ok()) << scenario.error().message();
  EXPECT_EQ(scenario->mode, Mode::Cross);
  EXPECT_EQ(scenario->options.score, ScoreKind::Dot);
  const auto result = compute(*scenario);
  ASSERT_TRUE(result.ok());
  const Matrix scores = headScores(*result, 0);
  EXPECT_FLOAT_EQ(scores(0, 0), 927);
  EXPECT_FLOAT_EQ(scores(0, 1), 397);
  EXPECT_FLOAT_EQ(scores(0, 2), 148);
  EXPECT_FLOAT_EQ(scores(0, 3), 929);
  EXPECT_NEAR(result->heads[0].weights(0, 3), 0.8808, 1e-4);
}

TEST(Presets, SettingsMatchWhatTheyTeach) {
  auto load = [](const char* name) {
    auto s = io::loadScenario((kPresetDir / name).string());
    EXPECT_TRUE(s.ok()) << s.error().message();
    return std::move(s).value();
  };
  const Scenario twoHeads = load("self_attention_two_heads.json");
  EXPECT_EQ(twoHeads.mode, Mode::Self);
  EXPECT_EQ(twoHeads.options.heads, 2);
  EXPECT_EQ(twoHeads.projection, ProjectionKind::Xavier);
  EXPECT_EQ(twoHeads.inputs.rows(), 4);

  const Scenario fbi = load("fbi_causal.json");
  EXPECT_EQ(fbi.options.mask.kind, MaskKind::Causal);
  EXPECT_TRUE(fbi.positionalEncoding);
  const auto fbiResult = compute(fbi);
  ASSERT_TRUE(fbiResult.ok());
  const Matrix& w = fbiResult->heads[0].weights;
  ASSERT_EQ(w.rows(), 6);
  for (int i = 0; i < 6; ++i)
    for (int j = i + 1; j < 6; ++j) EXPECT_EQ(w(i, j), 0) << i << "," << j;

  const Scenario bahdanau = load("bahdanau_additive.json");
  EXPECT_EQ(bahdanau.options.score, ScoreKind::Additive);
  ASSERT_EQ(bahdanau.options.scoreParams.size(), 1u);
  EXPECT_EQ(bahdanau.options.scoreParams[0].additiveV.size(), 3);

  const Scenario local = load("local_window.json");
  EXPECT_TRUE(local.options.mask.kind == MaskKind::Local || local.options.mask.kind == MaskKind::LocalGaussian);

  const Scenario eight = load("eight_heads_sentence.json");
  EXPECT_EQ(eight.options.heads, 8);
  EXPECT_EQ(eight.embeddingDim, 64);
  const auto eightResult = compute(eight);
  ASSERT_TRUE(eightResult.ok());
  EXPECT_EQ(eightResult->heads.size(), 8u);
  EXPECT_EQ(eightResult->heads[0].weights.rows(), 12);
}

TEST(Presets, EveryPresetRoundTripsExactly) {
  const fs::path dir = testDir();
  for (const fs::path& file : presets()) {
    SCOPED_TRACE(file.string());
    const auto scenario = io::loadScenario(file.string());
    ASSERT_TRUE(scenario.ok()) << scenario.error().message();
    expectRoundTrip(*scenario, dir / file.filename());
  }
}

// ---------------------------------------------------------------------------------------
// The format: minimal files, defaults, names other tools write
// ---------------------------------------------------------------------------------------

TEST(Format, MinimalFileIsCrossIdentityOneHead) {
  const auto scenario = parse(kMinimal);
  ASSERT_TRUE(scenario.ok()) << scenario.error().message();
  EXPECT_EQ(scenario->mode, Mode::Cross);
  EXPECT_EQ(scenario->projection, ProjectionKind::Identity);
  EXPECT_EQ(scenario->options.heads, 1);
  EXPECT_EQ(scenario->options.score, ScoreKind::Dot);
  EXPECT_EQ(scenario->values.size(), 0);  // values default to keys
  const auto result = compute(*scenario);
  ASSERT_TRUE(result.ok());
  EXPECT_FLOAT_EQ(headScores(*result, 0)(0, 1), 397);
}

TEST(Format, ModeDefaultsToSelfWithoutKeys) {
  const auto scenario = parse(R"({"inputs": [[1, 0], [0, 1], [1, 1]], "labels": ["a", "b", "c"]})");
  ASSERT_TRUE(scenario.ok()) << scenario.error().message();
  EXPECT_EQ(scenario->mode, Mode::Self);
  EXPECT_EQ(scenario->inputLabels, (std::vector<std::string>{"a", "b", "c"}));
}

TEST(Format, InProjWeightImpliesPyTorch) {
  // E = 4, two heads: in_proj_weight (12 x 4), biases, out_proj (4 x 4).
  nlohmann::json j;
  j["queries"] = {{1, 2, 3, 4}, {0, 1, 0, 1}};
  j["keys"] = {{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 1}};
  j["values"] = {{1, 1, 0, 0}, {0, 1, 1, 0}, {0, 0, 1, 1}};
  j["score"] = "scaled_dot";
  j["heads"] = 2;
  nlohmann::json in = nlohmann::json::array();
  for (int r = 0; r < 12; ++r) {
    nlohmann::json row = nlohmann::json::array();
    for (int c = 0; c < 4; ++c) row.push_back(0.125 * ((r * 7 + c * 3) % 9) - 0.5);
    in.push_back(row);
  }
  j["in_proj_weight"] = in;
  j["in_proj_bias"] = nlohmann::json::array();
  for (int i = 0; i < 12; ++i) j["in_proj_bias"].push_back(0.01 * i);
  j["out_proj_weight"] = {{1, 0, 0, 0.5}, {0, 1, 0, 0}, {0, 0, 1, 0}, {0.25, 0, 0, 1}};
  j["out_proj_bias"] = {0.1, 0.2, 0.3, 0.4};
  const auto scenario = parse(j.dump());
  ASSERT_TRUE(scenario.ok()) << scenario.error().message();
  EXPECT_EQ(scenario->projection, ProjectionKind::PyTorch);
  EXPECT_EQ(scenario->inProjWeight.rows(), 12);
  EXPECT_FLOAT_EQ(scenario->inProjBias(3), 0.03f);
  expectRoundTrip(*scenario, testDir() / "pytorch.json");

  // Wrong shapes are reported by the core, named as the file's field.
  j["in_proj_weight"] = {{1, 2, 3, 4}};
  expectError(j.dump(), "in_proj_weight", "");
}

TEST(Format, ExplicitProjectionsRoundTrip) {
  const auto scenario = parse(R"({
    "mode": "self", "inputs": [[1, 0, 2], [0, 1, -1], [0.5, 0.25, 0.125]],
    "score": "general", "heads": 2,
    "projections": {
      "wq": [[0.1, 0.2, 0.3, 0.4], [0.5, 0.6, 0.7, 0.8], [0.9, 1.0, 1.1, 1.2]],
      "bq": [0.01, 0.02, 0.03, 0.04],
      "wk": [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]],
      "wv": [[1, 2], [3, 4], [5, 6]], "bv": [-1, 1],
      "wo": [[0.5, 0.5, 0.5], [1, -1, 0]], "bo": [0, 0, 1e-3]
    },
    "score_params": {"general_w": [[1, 0.5], [0.25, 1]]},
    "temperature": 0.7
  })");
  ASSERT_TRUE(scenario.ok()) << scenario.error().message();
  EXPECT_EQ(scenario->projection, ProjectionKind::Explicit);  // implied by `projections`
  ASSERT_EQ(scenario->options.scoreParams.size(), 2u);  // one object = the same for every head
  EXPECT_FLOAT_EQ(scenario->options.scoreParams[1].generalW(0, 1), 0.5f);
  EXPECT_EQ(scenario->options.temperature, 0.7f);
  expectRoundTrip(*scenario, testDir() / "explicit.json");
}

TEST(Format, ScoreParamsPerHeadAndEveryOptionRoundTrip) {
  const auto scenario = parse(R"({
    "name": "everything", "description": "Ünïcödé \"quotes\" and \\ backslashes\n",
    "mode": "cross",
    "queries": [[1, 2], [3, 4], [-0.0, 1e-45]],
    "keys": [[1, 0], [0, 1], [1, 1], [2, -1]],
    "values": [[1, 2, 3, 0], [4, 5, 6, 0], [7, 8, 9, 0], [0.1, 0.2, 0.3, 1e-7]],
    "query_labels": ["x", "y", "z"], "key_labels": ["a", "b", "c", "d"],
    "positional_encoding": true,
    "score": "mlp", "heads": 2, "seed": 9007199254740992, "score_hidden": 3,
    "score_params": [
      {"mlp_hidden_w": [[1, 0, 0], [0, 1, 0]], "mlp_hidden_bias": [0, 0, 0.5],
       "mlp_out_w": [1, -1, 0.5], "mlp_out_bias": -0.25},
      {}
    ],
    "mask": {"kind": "padding", "key_valid": [true, 1, 0, true], "window": 3,
             "center": "fixed", "position": 1},
    "normalizer": {"kind": "top_k", "k": 3},
    "decoder_output": {"enabled": true},
    "view": {"colormap": "magma", "zoom": 1.25, "pi": 3.141592653589793, "n": [1, 2]}
  })");
  ASSERT_TRUE(scenario.ok()) << scenario.error().message();
  EXPECT_EQ(scenario->options.seed, std::uint64_t{1} << 53);
  EXPECT_EQ(scenario->options.mask.keyValid, (std::vector<bool>{true, true, false, true}));
  EXPECT_EQ(scenario->options.mask.center, MaskOptions::Center::Fixed);
  EXPECT_EQ(scenario->options.normalizer.kind, NormalizerKind::TopK);
  EXPECT_EQ(scenario->options.normalizer.topK, 3);
  EXPECT_TRUE(scenario->options.decoderOutput.enabled);
  EXPECT_TRUE(std::signbit(scenario->queries(2, 0)));
  EXPECT_EQ(scenario->queries(2, 1), std::numeric_limits<float>::denorm_min());
  EXPECT_FLOAT_EQ(scenario->options.scoreParams[0].mlpOutBias, -0.25f);
  // The view object is kept as JSON text, doubles and all.
  const auto view = nlohmann::json::parse(scenario->viewJson);
  EXPECT_EQ(view["colormap"], "magma");
  EXPECT_EQ(view["pi"].get<double>(), 3.141592653589793);
  const fs::path dir = testDir();
  expectRoundTrip(*scenario, dir / "everything.json");

  // The decoder output appears in the result JSON when enabled.
  const auto problem = buildProblem(*scenario);
  ASSERT_TRUE(problem.ok());
  const auto result = attend(problem->inputs, problem->options);
  ASSERT_TRUE(result.ok());
  const auto json = nlohmann::json::parse(io::resultToJson(*result, *problem));
  EXPECT_TRUE(json.contains("decoder_output"));
}

TEST(Format, CustomMaskAndStringForms) {
  const auto scenario = parse(R"({
    "queries": [[1, 0], [0, 1]], "keys": [[1, 0], [0, 1], [1, 1]], "score": "cosine",
    "mask": {"kind": "custom", "matrix": [[1, 0, true], [false, 1, 1]]},
    "normalizer": "sparsemax", "decoder_output": false})");
  ASSERT_TRUE(scenario.ok()) << scenario.error().message();
  EXPECT_EQ(scenario->options.mask.kind, MaskKind::Custom);
  EXPECT_FALSE(scenario->options.mask.custom(0, 1));
  EXPECT_TRUE(scenario->options.mask.custom(0, 2));
  EXPECT_EQ(scenario->options.normalizer.kind, NormalizerKind::Sparsemax);
  expectRoundTrip(*scenario, testDir() / "custom.json");

  const auto causal = parse(R"({"inputs": [[1], [2], [3]], "mask": "causal", "heads": 1.0})");
  ASSERT_TRUE(causal.ok()) << causal.error().message();
  EXPECT_EQ(causal->options.mask.kind, MaskKind::Causal);
}

TEST(Format, FloatsAreWrittenShortAndReadBackExactly) {
  Scenario s;
  s.mode = Mode::Self;
  s.options.score = ScoreKind::Dot;
  s.inputs.resize(1, 3);
  s.inputs << 0.1f, 45.3f, -2.5f;
  const std::string text = io::scenarioToJson(s);
  EXPECT_NE(text.find("[0.1, 45.3, -2.5]"), std::string::npos) << text;

  // Awkward values: extremes, denormals, negative zero, and random bit patterns.
  std::mt19937 rng(12345);
  std::vector<float> values = {std::numeric_limits<float>::max(),
                               std::numeric_limits<float>::lowest(),
                               std::numeric_limits<float>::min(),
                               std::numeric_limits<float>::denorm_min(),
                               -0.0f,
                               0.0f,
                               1.0f / 3.0f,
                               16777217.0f,
                               3.4028235e38f,
                               -7.038531e-26f};
  while (values.size() < 64 * 64) {
    const std::uint32_t bits = rng();
    float f;
    std::memcpy(&f, &bits, sizeof f);
    // Keep |x| below 1e18 so validate()'s finiteness checks of projections stay happy.
    if (std::isfinite(f) && std::fabs(f) < 1e18f) values.push_back(f);
  }
  s.inputs.resize(64, 64);
  for (int i = 0; i < 64 * 64; ++i) s.inputs(i / 64, i % 64) = values[static_cast<std::size_t>(i)];
  const std::string written = io::scenarioToJson(s);
  const auto loaded = io::parseScenario(written, "floats.json");
  ASSERT_TRUE(loaded.ok()) << loaded.error().message();
  EXPECT_TRUE(sameBits(s.inputs, loaded->inputs));

  // Readers that parse a double and then cast to float (Python, numpy, nlohmann) get the
  // same floats too, including -7.038531e-26, whose shortest text double-rounds wrongly.
  const auto json = nlohmann::json::parse(written);
  for (int i = 0; i < 64 * 64; ++i) {
    const float viaDouble = static_cast<float>(json["inputs"][i / 64][i % 64].get<double>());
    ASSERT_EQ(std::memcmp(&viaDouble, &s.inputs(i / 64, i % 64), sizeof(float)), 0)
        << json["inputs"][i / 64][i % 64].dump();
  }
}

TEST(Format, ResultJsonHasEveryPart) {
  const auto scenario = io::loadScenario((kPresetDir / "self_attention_two_heads.json").string());
  ASSERT_TRUE(scenario.ok());
  const auto problem = buildProblem(*scenario);
  ASSERT_TRUE(problem.ok());
  const auto result = attend(problem->inputs, problem->options);
  ASSERT_TRUE(result.ok());
  const auto json = nlohmann::json::parse(io::resultToJson(*result, *problem));
  ASSERT_EQ(json["heads"].size(), 2u);
  for (const char* key : {"q", "k", "v", "scores", "weights", "context"}) {
    EXPECT_TRUE(json["heads"][0].contains(key)) << key;
  }
  for (const char* key :
       {"concat", "output", "weights_mean", "query_labels", "key_labels", "warnings"}) {
    EXPECT_TRUE(json.contains(key)) << key;
  }
  EXPECT_FALSE(json.contains("decoder_output"));
  EXPECT_EQ(json["query_labels"][3], "a4");
  const auto& weights = json["heads"][1]["weights"];
  ASSERT_EQ(weights.size(), 4u);
  ASSERT_EQ(weights[0].size(), 4u);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j)
      EXPECT_EQ(static_cast<float>(weights[i][j].get<double>()), result->heads[1].weights(i, j));
  EXPECT_EQ(json["output"].size(), 4u);

  // Warnings carry code, message, head and row.
  const auto masked = parse(R"({"queries": [[1]], "keys": [[1], [2]],
                                "mask": {"kind": "custom", "matrix": [[0, 0]]}})");
  ASSERT_TRUE(masked.ok()) << masked.error().message();
  const auto maskedProblem = buildProblem(*masked);
  const auto maskedResult = attend(maskedProblem->inputs, maskedProblem->options);
  ASSERT_TRUE(maskedResult.ok());
  const auto maskedJson = nlohmann::json::parse(io::resultToJson(*maskedResult, *maskedProblem));
  ASSERT_FALSE(maskedJson["warnings"].empty());
  for (const char* key : {"code", "message", "head", "row"}) {
    EXPECT_TRUE(maskedJson["warnings"][0].contains(key)) << key;
  }
}

// ---------------------------------------------------------------------------------------
// Bad input: every error is one line naming the file, the field and the problem
// ---------------------------------------------------------------------------------------

TEST(BadInput, InvalidJsonNamesLineAndField) {
  expectError(R"({"queries": [[1, 2]], "keys": [[1, 2]],, "score": "dot"})", "keys",
              "invalid JSON at line 1, column 41 (byte 40)");
  expectError("{\n  \"queries\": [[1, 2],\n  [3 4]]\n}", "queries[1][1]", "line 3");
  expectError("[1, 2", "", "invalid JSON");
  expectError(R"({"queries": [[1, 2]]} trailing)", "", "invalid JSON");
}

TEST(BadInput, WrongTypes) {
  expectError(R"({"queries": "abc", "keys": [[1]]})", "queries",
              "expected a list of rows of numbers, got the string \"abc\"");
  expectError(R"({"queries": [5, 1, 20], "keys": [[1, 2, 3]]})", "queries",
              "write one row as [[1, 2, 3]]");
  expectError(R"({"queries": [[1, true]], "keys": [[1, 2]]})", "queries[0][1]",
              "expected a number, got true");
  expectError(R"({"heads": "two", "inputs": [[1]]})", "heads", "expected a whole number");
  expectError(R"({"heads": 1.5, "inputs": [[1]]})", "heads",
              "expected a whole number, got the number 1.5");
  expectError(R"({"heads": 0.1, "inputs": [[1]]})", "heads", "got the number 0.1");
  expectError(R"({"positional_encoding": 1, "inputs": [[1]]})", "positional_encoding",
              "expected true or false");
  expectError(R"({"query_labels": ["a", 2], "queries": [[1], [2]], "keys": [[1]]})",
              "query_labels[1]", "expected a string");
  expectError(R"({"score_params": 3, "inputs": [[1]]})", "score_params", "expected an object");
  expectError(R"({"view": [1], "inputs": [[1]]})", "view", "expected an object");
  expectError(R"([1, 2, 3])", "", "expected a JSON object");
  expectError(R"({"inputs": [[1]], "mask": {"kind": "padding", "key_valid": [1, 2]}})",
              "mask.key_valid[1]", "expected true/false or 0/1");
  expectError(R"({"inputs": [[1]], "in_proj_bias": [[1]]})", "in_proj_bias", "entry 0 is a list");
}

TEST(BadInput, RaggedRows) {
  expectError(R"({"queries": [[1, 2, 3, 4]], "keys": [[1, 2, 3, 4], [1, 2, 3, 4], [1, 2, 3]]})",
              "keys", "row 2 has 3 numbers, row 0 has 4");
  expectError(R"({"queries": [[]], "keys": [[1]]})", "queries", "row 0 is empty");
  expectError(R"({"inputs": [[1]], "mask": {"kind": "custom", "matrix": [[1], [1, 0]]}})",
              "mask.matrix", "row 1 has 2 entries, row 0 has 1");
}

TEST(BadInput, NonFiniteAndTooLargeNumbers) {
  expectError(R"({"queries": [[1, "NaN"]], "keys": [[1, 2]]})", "queries[0][1]",
              "NaN and infinity are not allowed");
  expectError(R"({"queries": [[1, "-Infinity"]], "keys": [[1, 2]]})", "queries[0][1]",
              "NaN and infinity are not allowed");
  expectError(R"({"queries": [[1, 1e999]], "keys": [[1, 2]]})", "queries[0][1]",
              "number 1e999 is too large");
  expectError(R"({"queries": [[1, 2]], "keys": [[1, -3.5e38]]})", "keys[0][1]",
              "too large for a 32-bit float");
  expectError(R"({"inputs": [[1]], "temperature": 1e39})", "temperature",
              "too large for a 32-bit float");
  expectError(R"({"inputs": [[1]], "temperature": 0})", "temperature", "greater than 0");
  expectError(R"({"inputs": [[1]], "temperature": -1})", "temperature", "greater than 0");
  // Tiny numbers underflow to zero (or a denormal), like a float cast does.
  const auto tiny = parse(R"({"queries": [[1e-50, 1]], "keys": [[1, 2]]})");
  ASSERT_TRUE(tiny.ok()) << tiny.error().message();
  EXPECT_EQ(tiny->queries(0, 0), 0.0f);
}

TEST(BadInput, UnknownNames) {
  expectError(R"({"queries": [[1]], "keys": [[1]], "score": "dott"})", "score",
              "unknown score 'dott' (expected one of dot, scaled_dot, cosine, general, additive, "
              "mlp)");
  expectError(R"({"inputs": [[1]], "mask": "casual"})", "mask", "unknown mask kind 'casual'");
  expectError(R"({"inputs": [[1]], "mask": {"kind": "windowed"}})", "mask.kind",
              "unknown mask kind 'windowed'");
  expectError(R"({"inputs": [[1]], "mask": {"kind": "local", "center": "middle"}})", "mask.center",
              "unknown center 'middle'");
  expectError(R"({"inputs": [[1]], "normalizer": "softermax"})", "normalizer",
              "unknown normalizer 'softermax'");
  expectError(R"({"inputs": [[1]], "projection": "random"})", "projection",
              "unknown projection 'random'");
  expectError(R"({"inputs": [[1]], "mode": "both"})", "mode", "unknown mode 'both'");
  expectError(R"({"inputs": [[1]], "score": 3})", "score", "expected one of dot");
}

TEST(BadInput, UnknownFieldsAreTypos) {
  expectError(R"({"querys": [[1]], "keys": [[1]]})", "querys",
              "unknown field 'querys' (did you mean 'queries'?)");
  expectError(R"({"inputs": [[1]], "mask": {"kind": "local", "windw": 2}})", "mask.windw",
              "unknown field 'windw' (did you mean 'window'?)");
  expectError(R"({"inputs": [[1]], "colour": "red"})", "colour", "unknown field 'colour'");
  expectError(R"({"inputs": [[1]], "score_params": [{"general": [[1]]}]})",
              "score_params[0].general", "unknown field 'general'");
  expectError(R"({"inputs": [[1]], "projections": {"w_q": [[1]]}})", "projections.w_q",
              "did you mean 'wq'?");
}

TEST(BadInput, MessagesStayOnOneLine) {
  // Found by fuzz_scenario: an escaped newline in a key went into the field path.
  expectError("{\"versio\\n\": 1}", "versio?", "unknown field 'versio?' (did you mean");
  expectError("{\"inputs\": [[1]], \"score\": \"dot\\r\\nx\"}", "score", "unknown score 'dot??x'");
}

TEST(BadInput, DuplicateKeys) {
  expectError(R"({"queries": [[1]], "keys": [[1]], "queries": [[2]]})", "queries", "appears twice");
}

TEST(BadInput, RangesAndVersion) {
  expectError(R"({"inputs": [[1]], "heads": 0})", "heads",
              "must be between 1 and 64, got the number 0");
  expectError(R"({"inputs": [[1]], "heads": 65})", "heads", "must be between 1 and 64");
  expectError(R"({"inputs": [[1]], "seed": -1})", "seed", "from 0 to 2^53");
  expectError(R"({"inputs": [[1]], "seed": 9007199254740993})", "seed", "from 0 to 2^53");
  expectError(R"({"inputs": [[1]], "seed": 1.5})", "seed", "from 0 to 2^53");
  expectError(R"({"inputs": [[1]], "mask": {"kind": "local", "window": -1}})", "mask.window",
              "must be between 0 and");
  expectError(R"({"inputs": [[1]], "normalizer": {"kind": "top_k", "k": 0}})", "normalizer.k",
              "must be between 1 and");
  expectError(R"({"inputs": [[1]], "embedding_dim": 5000})", "embedding_dim",
              "must be between 1 and 4096");
  expectError(R"({"inputs": [[1]], "version": 2})", "version", "must be 1, got the number 2");
  // Seeds written as 1e6 by other tools are whole numbers.
  const auto seeded = parse(R"({"inputs": [[1]], "seed": 1e15})");
  ASSERT_TRUE(seeded.ok()) << seeded.error().message();
  EXPECT_EQ(seeded->options.seed, 1000000000000000ull);
}

TEST(BadInput, SizesAboveLimitsAreRejectedBeforeAllocating) {
  // The reader stops at the first row / number past the limit, so it cannot know the count.
  expectError(R"({"queries": )" + zeros(Limits::kMaxTokens + 1, 1) + R"(, "keys": [[1]]})",
              "queries", "has more than 4096 rows (the limit is 4096)");
  expectError(R"({"queries": [[1]], "keys": )" + zeros(1, Limits::kMaxWidth + 1) + "}", "keys",
              "row 0 has more than 4096 numbers (the limit is 4096)");
  std::string words;
  for (int i = 0; i <= Limits::kMaxTokens; ++i) words += "w ";
  expectError(R"({"sentence": ")" + words + R"("})", "sentence",
              "has 4097 words, more than the limit of 4096");
  expectError(R"({"inputs": [[1]], "score_params": [)" +
                  [] {
                    std::string list;
                    for (int i = 0; i <= Limits::kMaxHeads; ++i) list += i ? ",{}" : "{}";
                    return list;
                  }() +
                  "]}",
              "score_params", "has more than 64 entries (the limit is 64)");
}

// Issue 7: limits are checked while reading. The reader reports how far it read, so these
// assert on bounded work (bytes and numbers read), not on wall-clock time.
TEST(ReadLimits, FortyMillionRowsAreRefusedFromTheFileSizeWithoutReading) {
  // 200 MB, 40 million rows of [1] (the limit is 4096 rows, and 64 MiB).
  const fs::path file = testDir() / "forty_million_rows.json";
  {
    std::ofstream out(file, std::ios::binary);
    out << R"({"mode": "self", "inputs": [)";
    const std::string rows = [] {
      std::string block;
      for (int i = 0; i < 100000; ++i) block += "[1],\n";
      return block;
    }();
    for (int i = 0; i < 400; ++i) out << rows;
    out << "[1]]}";
  }
  ASSERT_GE(fs::file_size(file), 200'000'000u);
  io::ScenarioReadStats stats;
  stats.bytesRead = 1;
  const auto result = io::loadScenario(file.string(), &stats);
  fs::remove(file);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.error().problem.find("more than the limit of"), std::string::npos);
  EXPECT_EQ(stats.bytesRead, 0u);
  EXPECT_EQ(stats.numbersRead, 0u);
}

TEST(ReadLimits, TooManyRowsStopAtTheFirstRowPastTheLimit) {
  // 12 million rows (60 MB, under the byte limit): the reader stops at row 4097.
  const std::size_t rows = 12'000'000;
  std::string text = R"({"mode": "self", "inputs": [)";
  text.reserve(text.size() + rows * 5 + 8);
  for (std::size_t i = 0; i < rows; ++i) text += i ? ",\n[1]" : "[1]";
  text += "]}";
  ASSERT_LT(text.size(), io::kMaxScenarioBytes);
  io::ScenarioReadStats stats;
  const auto result = io::parseScenario(text, "rows.json", &stats);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().field, "inputs");
  EXPECT_EQ(result.error().problem, "has more than 4096 rows (the limit is 4096)");
  EXPECT_EQ(stats.numbersRead, 4096u);
  EXPECT_LE(stats.bytesRead, 30u + 4097u * 5u);
}

TEST(ReadLimits, AWideRowStopsAtTheFirstNumberPastTheLimit) {
  std::string text = R"({"queries": [[)";
  for (int i = 0; i < 5'000'000; ++i) text += i ? ",1" : "1";
  text += R"(]], "keys": [[1]]})";
  io::ScenarioReadStats stats;
  const auto result = io::parseScenario(text, "wide.json", &stats);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().field, "queries");
  EXPECT_EQ(result.error().problem, "row 0 has more than 4096 numbers (the limit is 4096)");
  EXPECT_EQ(stats.numbersRead, 4097u);
  EXPECT_LE(stats.bytesRead, 20u + 4097u * 2u);
}

TEST(ReadLimits, EveryListHasItsLimit) {
  auto stopsEarly = [](const std::string& head, const std::string& entry, std::size_t count,
                       const std::string& tail, const std::string& field,
                       const std::string& problem) {
    std::string text = head;
    for (std::size_t i = 0; i < count; ++i) text += (i ? "," : "") + entry;
    text += tail;
    io::ScenarioReadStats stats;
    const auto result = io::parseScenario(text, "x.json", &stats);
    ASSERT_FALSE(result.ok()) << field;
    EXPECT_EQ(result.error().field, field);
    EXPECT_EQ(result.error().problem, problem);
    EXPECT_LT(stats.bytesRead, text.size() / 4) << field;
  };
  stopsEarly(R"({"inputs": [[1]], "labels": [)", R"("a")", 40000, "]}", "labels",
             "has more than 4096 entries (the limit is 4096)");
  stopsEarly(R"({"inputs": [[1]], "mask": {"kind": "padding", "key_valid": [)", "true", 40000,
             "]}}", "mask.key_valid", "has more than 4096 entries (the limit is 4096)");
  stopsEarly(R"({"inputs": [[1]], "score_params": [)", "{}", 4000, "]}", "score_params",
             "has more than 64 entries (the limit is 64)");
  stopsEarly(R"({"inputs": [[1]], "in_proj_weight": [)", "[1]", 50000, "]}", "in_proj_weight",
             "has more than 12288 rows (the limit is 12288)");
  stopsEarly(R"({"inputs": [[1]], "projections": {"wq": [[)", "1", 50000, "]]}}",
             "projections.wq", "row 0 has more than 4096 numbers (the limit is 4096)");
  stopsEarly(R"({"inputs": [[1]], "view": {"x": [)", "null", 50000, "]}}", "view.x",
             "has more than 12288 entries (the limit is 12288)");
}

TEST(ReadLimits, TheNumberCountStopsAtTheFirstNumberPastTheLimit) {
  // 4096 x 1025 = 4,198,400 numbers: every list is within its limit, the count is not.
  std::string row = "[";
  for (int c = 0; c < 1025; ++c) row += c ? ",0" : "0";
  row += "]";
  std::string text = R"({"mode": "self", "inputs": [)";
  for (int r = 0; r < 4096; ++r) text += (r ? "," : "") + row;
  text += "]}";
  io::ScenarioReadStats stats;
  const auto result = io::parseScenario(text, "many.json", &stats);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().problem, "the file has more than 4194304 numbers (the limit is 4194304)");
  EXPECT_EQ(stats.numbersRead, io::kMaxScenarioNumbers + 1);
  EXPECT_LT(stats.bytesRead, text.size());
}

TEST(ReadLimits, PackedListsReadBackExactly) {
  // Lists of numbers and of true/false are stored packed while reading; mixed lists are not.
  // Either way the values and the error messages are the ones of the file.
  const auto scenario = parse(R"({"queries": [[1.5, -2, 16777217, 1e-50]], "keys": [[1, 2, 3, 4]],
    "mask": {"kind": "padding", "key_valid": [true, 0]}, "key_labels": ["a", "b"],
    "values": [[1], [2]], "mode": "cross"})");
  ASSERT_FALSE(scenario.ok());  // key_valid has 2 entries, there is 1 key
  const auto ok = parse(R"({"queries": [[1.5, -2, 16777217, 1e-50]], "keys": [[1, 2, 3, 4]],
    "mask": {"kind": "padding", "key_valid": [true]}, "key_labels": ["a"]})");
  ASSERT_TRUE(ok.ok()) << ok.error().message();
  EXPECT_EQ(ok->queries(0, 0), 1.5f);
  EXPECT_EQ(ok->queries(0, 1), -2.0f);
  EXPECT_EQ(ok->queries(0, 2), 16777216.0f);
  EXPECT_EQ(ok->queries(0, 3), 0.0f);
  EXPECT_EQ(ok->options.mask.keyValid, std::vector<bool>{true});
  expectError(R"({"queries": [[1, true]], "keys": [[1, 2]]})", "queries[0][1]",
              "expected a number, got true");
  expectError(R"({"queries": [[true, 1]], "keys": [[1, 2]]})", "queries[0][0]",
              "expected a number, got true");
  expectError(R"({"queries": [[1, "NaN"]], "keys": [[1, 2]]})", "queries[0][1]",
              "(NaN and infinity are not allowed)");
  expectError(R"({"queries": [1, 2], "keys": [[1, 2]]})", "queries",
              "row 0 is the number 1 (write one row as [[1, 2, 3]])");
  expectError(R"({"queries": [[1]], "keys": [[1]], "query_labels": [5]})", "query_labels[0]",
              "expected a string, got the number 5");
  expectError(R"({"inputs": [[1]], "mask": {"kind": "padding", "key_valid": [1, 2]}})",
              "mask.key_valid[1]", "expected true/false or 0/1, got the number 2");
  expectError(R"({"inputs": [[1]], "in_proj_bias": [1, [2]]})", "in_proj_bias",
              "entry 1 is a list");
}

TEST(Projection, QkvInterleavedIsReadAndWritten) {
  // E = 2, two heads: interleaved rows [q0; k0; v0; q1; k1; v1].
  const std::string text = R"({"mode": "self", "inputs": [[1, 2], [3, -1]], "heads": 2,
    "projection": "qkv_interleaved",
    "in_proj_weight": [[1, 0], [2, 0], [3, 0], [0, 4], [0, 5], [0, 6]],
    "out_proj_weight": [[1, 0], [0, 1]]})";
  const auto scenario = parse(text);
  ASSERT_TRUE(scenario.ok()) << scenario.error().message();
  EXPECT_EQ(scenario->projection, ProjectionKind::QkvInterleaved);
  const std::string saved = io::scenarioToJson(*scenario);
  EXPECT_NE(saved.find(R"("projection": "qkv_interleaved")"), std::string::npos) << saved;
  const auto reloaded = parse(saved);
  ASSERT_TRUE(reloaded.ok()) << reloaded.error().message();
  EXPECT_EQ(reloaded->projection, ProjectionKind::QkvInterleaved);
  // Head 0 projects with rows q0 = [1, 0], k0 = [2, 0], v0 = [3, 0]: q = x·q0ᵀ = x[0].
  const auto result = compute(*reloaded);
  ASSERT_TRUE(result.ok()) << result.error().message();
  EXPECT_EQ(result->heads[0].q(0, 0), 1.0f);
  EXPECT_EQ(result->heads[0].k(1, 0), 6.0f);   // 2·3
  EXPECT_EQ(result->heads[1].v(1, 0), -6.0f);  // 6·(-1)
  expectError(R"({"mode": "self", "inputs": [[1, 2]], "heads": 2, "projection": "qkv_interleavd"})",
              "projection", "expected one of identity, xavier, explicit, pytorch, qkv_interleaved");
}

TEST(ResultJson, MatricesPrintedDirectlyMatchTheDomPrinter) {
  // resultToJson prints the matrices straight into the text (no 16-byte-per-number DOM); with
  // a label holding its placeholder's control character it falls back to the DOM printer.
  // Both must give the same text, apart from that label.
  Scenario s;
  s.mode = Mode::Cross;
  auto filled = [](int rows, int cols, float phase) {
    Matrix m(rows, cols);
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) m(r, c) = std::sin(phase + 1.7f * r + 0.3f * c);
    return m;
  };
  s.queries = filled(3, 4, 0.1f);
  s.keys = filled(5, 4, 2.0f);
  s.options.heads = 2;
  s.projection = ProjectionKind::Xavier;
  s.options.decoderOutput.enabled = true;
  s.options.mask.kind = MaskKind::Causal;
  s.queryLabels = {"a", "b", "c"};
  auto problem = buildProblem(s);
  ASSERT_TRUE(problem.ok()) << problem.error().message();
  auto result = attend(problem->inputs, problem->options);
  ASSERT_TRUE(result.ok());
  const std::string direct = io::resultToJson(*result, *problem);
  problem->queryLabels[1] = std::string("b\x01");
  std::string viaDom = io::resultToJson(*result, *problem);
  const std::string escaped = "\"b\\u0001\"";
  const std::size_t at = viaDom.find(escaped);
  ASSERT_NE(at, std::string::npos);
  viaDom.replace(at, escaped.size(), "\"b\"");
  EXPECT_EQ(direct, viaDom);
  // And it is JSON with every number of the result.
  const auto json = nlohmann::json::parse(direct);
  EXPECT_EQ(static_cast<float>(json["heads"][1]["weights"][2][1].get<double>()),
            result->heads[1].weights(2, 1));
  EXPECT_EQ(json["decoder_output"].size(), 3u);
}

TEST(BadInput, ProblemsTheCoreFindsNameTheField) {
  // heads must divide the width
  expectError(R"({"inputs": [[1, 2, 3, 4]], "heads": 3})", "heads", "");
  // labels must match rows
  expectError(R"({"queries": [[1], [2]], "keys": [[1]], "query_labels": ["a"]})", "query_labels",
              "has 1 label but there are 2 queries");
  // keys and values must pair up
  expectError(R"({"queries": [[1]], "keys": [[1], [2]], "values": [[1]]})", "values",
              "has 1 row but there are 2 keys");
  // A custom mask of the wrong shape names the JSON field (mask.matrix), in the singular.
  expectError(R"({"inputs": [[1]], "mask": {"kind": "custom", "matrix": [[1, 0]]}})", "mask.matrix",
              "is 1 x 2 but there is 1 query and 1 key (expected 1 x 1)");
  // cross attention needs keys; self attention needs inputs
  expectError(R"({"queries": [[1]]})", "keys", "is empty");
  expectError(R"({"score": "dot"})", "inputs", "is empty");
  expectError(R"({})", "inputs", "is empty");
}

TEST(BadInput, DeepNestingIsRejectedWithoutRecursion) {
  expectError(std::string(100000, '['), "", "nested deeper than 64 levels");
  expectError(std::string(100000, '[') + std::string(100000, ']'), "",
              "nested deeper than 64 levels");
  expectError(R"({"inputs": [[1]], "view": {"a": )" + std::string(1000, '[') + "}", "",
              "nested deeper than 64 levels");
  // The deepest view that is accepted also survives a save.
  const std::string deepView =
      R"({"inputs": [[1]], "view": )" + std::string(62, '[') + std::string(62, ']') + "}";
  expectError(deepView, "view", "expected an object");
  const std::string deepestView =
      R"({"inputs": [[1]], "view": {"a": )" + std::string(62, '[') + std::string(62, ']') + "}}";
  const auto accepted = parse(deepestView);
  ASSERT_TRUE(accepted.ok()) << accepted.error().message();
  const auto reloaded = parse(io::scenarioToJson(*accepted));
  ASSERT_TRUE(reloaded.ok()) << reloaded.error().message();
  EXPECT_EQ(reloaded->viewJson, accepted->viewJson);
  expectError(
      R"({"inputs": [[1]], "view": {"a": )" + std::string(63, '[') + std::string(63, ']') + "}}",
      "", "nested deeper than 64 levels");
  std::string deepObject;
  for (int i = 0; i < 50000; ++i) deepObject += R"({"a":)";
  expectError(deepObject, "", "nested deeper than 64 levels");
}

TEST(BadInput, EmptyTruncatedAndNotUtf8) {
  expectError("", "", "empty");
  expectError(" \n\t ", "", "empty");
  const std::string preset = readFile(kPresetDir / "decoder_state.json");
  for (std::size_t cut : {preset.size() / 3, preset.size() / 2, preset.size() - 2}) {
    expectError(preset.substr(0, cut), "", "invalid JSON");
  }
  expectError("{\"name\": \"caf\xe9\", \"inputs\": [[1]]}", "name", "invalid JSON");
  expectError("\xff\xfe{}", "", "invalid JSON");
}

// ---------------------------------------------------------------------------------------
// Files
// ---------------------------------------------------------------------------------------

TEST(Files, LoadErrorsNameTheFile) {
  const fs::path dir = testDir();
  auto expectLoadError = [](const fs::path& path, const std::string& problem) {
    const auto result = io::loadScenario(path.string());
    ASSERT_FALSE(result.ok());
    const std::string message = result.error().message();
    EXPECT_NE(message.find(path.string()), std::string::npos) << message;
    EXPECT_NE(message.find(problem), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  };
  expectLoadError(dir / "missing.json", "no such file");
  expectLoadError(dir, "is a directory");

  writeFile(dir / "empty.json", "");
  expectLoadError(dir / "empty.json", "empty");

  const std::string preset = readFile(kPresetDir / "decoder_state.json");
  writeFile(dir / "truncated.json", preset.substr(0, preset.size() / 2));
  expectLoadError(dir / "truncated.json", "invalid JSON");

  // A sparse file one byte over the limit: rejected from its size, never read.
  const fs::path huge = dir / "huge.json";
  writeFile(huge, "{");
  fs::resize_file(huge, io::kMaxScenarioBytes + 1);
  std::string limitText = "more than the limit of ";
  limitText += std::to_string(io::kMaxScenarioBytes);
  limitText += " bytes (64 MiB)";
  expectLoadError(huge, limitText);
  fs::remove(huge);

  writeFile(dir / "typo.json", R"({"querys": [[1]], "keys": [[1]]})");
  expectLoadError(dir / "typo.json", "field 'querys': unknown field 'querys'");

  if (::mkfifo((dir / "fifo.json").c_str(), 0600) == 0) {
    expectLoadError(dir / "fifo.json", "not a regular file");
  }
}

std::vector<std::string> listDir(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST(Files, SaveIsAtomicAndLeavesNoTemporaryFile) {
  const fs::path dir = testDir();
  const fs::path file = dir / "scenario.json";
  const auto scenario = parse(kMinimal);
  ASSERT_TRUE(scenario.ok());
  ASSERT_TRUE(io::saveScenario(*scenario, file.string()).ok());
  EXPECT_EQ(listDir(dir), std::vector<std::string>{"scenario.json"});
  EXPECT_EQ(fs::status(file).permissions() & fs::perms::owner_read, fs::perms::owner_read);
  EXPECT_EQ(fs::status(file).permissions() & fs::perms::others_read, fs::perms::others_read);

  // Overwriting keeps the mode and replaces the content.
  fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write);
  Scenario changed = *scenario;
  changed.name = "changed";
  ASSERT_TRUE(io::saveScenario(changed, file.string()).ok());
  EXPECT_EQ(listDir(dir), std::vector<std::string>{"scenario.json"});
  EXPECT_EQ(io::loadScenario(file.string())->name, "changed");
  EXPECT_EQ(fs::status(file).permissions(), fs::perms::owner_read | fs::perms::owner_write);

  // writeFileAtomic is the same machinery for any text.
  ASSERT_TRUE(io::writeFileAtomic((dir / "note.txt").string(), "hello").ok());
  EXPECT_EQ(readFile(dir / "note.txt"), "hello");
}

TEST(Files, FailedSaveKeepsTheOldFileAndNamesIt) {
  const fs::path dir = testDir();
  const auto scenario = parse(kMinimal);
  ASSERT_TRUE(scenario.ok());

  // Path is a directory.
  fs::create_directories(dir / "folder.json");
  auto status = io::saveScenario(*scenario, (dir / "folder.json").string());
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message().find((dir / "folder.json").string()), std::string::npos);
  EXPECT_NE(status.error().message().find("is a directory"), std::string::npos);
  EXPECT_TRUE(fs::is_directory(dir / "folder.json"));

  // Folder does not exist.
  status = io::saveScenario(*scenario, (dir / "nowhere" / "x.json").string());
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message().find("x.json"), std::string::npos);
  EXPECT_NE(status.error().message().find("cannot create a temporary file"), std::string::npos);

  // Writing fails half way (file size limit; works even as root): old file intact, no temp.
  const fs::path file = dir / "keep.json";
  writeFile(file, "old content");
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  auto* previous = ::signal(SIGXFSZ, SIG_IGN);
  rlimit small = old;
  small.rlim_cur = 64;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  status = io::saveScenario(*scenario, file.string());
  ::setrlimit(RLIMIT_FSIZE, &old);
  ::signal(SIGXFSZ, previous);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message().find(file.string()), std::string::npos);
  EXPECT_NE(status.error().message().find("cannot write"), std::string::npos)
      << status.error().message();
  EXPECT_EQ(readFile(file), "old content");
  EXPECT_EQ(listDir(dir), (std::vector<std::string>{"folder.json", "keep.json"}));

  // Folder not writable (root ignores permissions, so only as a normal user).
  if (::geteuid() != 0) {
    const fs::path locked = dir / "locked";
    fs::create_directories(locked);
    writeFile(locked / "s.json", "old");
    fs::permissions(locked, fs::perms::owner_read | fs::perms::owner_exec);
    status = io::saveScenario(*scenario, (locked / "s.json").string());
    fs::permissions(locked, fs::perms::owner_all);
    ASSERT_FALSE(status.ok());
    EXPECT_NE(status.error().message().find("s.json"), std::string::npos);
    EXPECT_EQ(readFile(locked / "s.json"), "old");
    EXPECT_EQ(listDir(locked), std::vector<std::string>{"s.json"});
  }
}

TEST(Files, SaveThroughSymlinkReplacesTheTarget) {
  const fs::path dir = testDir();
  const auto scenario = parse(kMinimal);
  ASSERT_TRUE(scenario.ok());
  writeFile(dir / "real.json", "old");
  fs::create_symlink("real.json", dir / "link.json");
  ASSERT_TRUE(io::saveScenario(*scenario, (dir / "link.json").string()).ok());
  EXPECT_TRUE(fs::is_symlink(dir / "link.json"));
  EXPECT_TRUE(io::loadScenario((dir / "real.json").string()).ok());
}

}  // namespace
}  // namespace test_formats_scenario
}  // namespace attn

namespace attn {
namespace test_formats_scenario {
namespace {

// The colour keys of `view` are checked on load (docs/scenarios.md); the rest stays free-form.
TEST(ViewColours, ColourRangeAndScaleAreValidated) {
  const std::string head = R"({"inputs": [[1, 0], [0, 1]], "view": )";
  auto load = [&](const std::string& view) {
    return io::parseScenario(head + view + "}", "view.json");
  };
  for (const char* good : {R"({"color_range": "row", "color_scale": "log"})",
                           R"({"color_range": "fixed", "fixed_range": [0, 0.5]})",
                           R"({"color_range": "global", "anything": [1, "x"]})"}) {
    const auto loaded = load(good);
    EXPECT_TRUE(loaded.ok()) << good << ": " << loaded.error().message();
  }
  const struct {
    const char* view;
    const char* field;
    const char* words;
  } bad[] = {
      {R"({"color_range": "rows"})", "view.color_range", "\"rows\""},
      {R"({"color_range": 1})", "view.color_range", "the number 1"},
      {R"({"color_range": "fixed"})", "view.color_range", "fixed_range"},
      {R"({"color_scale": "log10"})", "view.color_scale", "\"log10\""},
      {R"({"fixed_range": [1, 0]})", "view.fixed_range", "less than"},
      {R"({"fixed_range": [1]})", "view.fixed_range", "[min, max]"},
  };
  for (const auto& c : bad) {
    const auto loaded = load(c.view);
    ASSERT_FALSE(loaded.ok()) << c.view;
    EXPECT_EQ(loaded.error().field, c.field) << c.view;
    EXPECT_NE(loaded.error().problem.find(c.words), std::string::npos)
        << c.view << ": " << loaded.error().problem;
    EXPECT_EQ(loaded.error().file, "view.json");
  }
}

}  // namespace
}  // namespace test_formats_scenario
}  // namespace attn
