// RoPE: formats/models/rope_config.h (the one reader of the rope keys) and core/models/rope.h
// (the frequencies of every rope type), against
//   - tests/data/rope/golden.json: inverse frequencies and attention factors computed by
//     tests/formats/rope_reference.py from transformers' modeling_rope_utils formulas, and
//   - tests/formats/rope_reference.py forward: a PyTorch llama / gpt_neox forward pass with
//     each rope type (its stored output, tests/support/torch_cache.h).
// Plus the config errors (exit 2 from the CLI: tests/cli/test_cli_model_rope.cpp) and the KV
// cache of the length-dependent types (dynamic, longrope).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <numeric>
#include <span>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/models/rope.h"
#include "core/models/transformer.h"
#include "formats/models/model_config.h"
#include "formats/models/model_folder.h"
#include "formats/models/rope_config.h"
#include "tests/support/model_fixture.h"
#include "tests/support/test_paths.h"
#include "tests/support/torch_cache.h"

namespace test_formats_rope {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path sourceDir() { return fs::path(attn::testing::assetDir()).parent_path(); }

// ---------------------------------------------------------------------------------------
// Frequencies against the golden values
// ---------------------------------------------------------------------------------------

TEST(Rope, FrequenciesAndAttentionFactorsEqualTheTransformersFormulas) {
  const json golden = json::parse(gpt2test::readFile(sourceDir() / "tests/data/rope/golden.json"));
  ASSERT_GE(golden.at("cases").size(), 15u);
  for (const json& c : golden.at("cases")) {
    SCOPED_TRACE(c.at("name").get<std::string>());
    const json& config = c.at("config");
    attn::Expected<attn::io::RopeConfig> rope = attn::io::readRopeConfig(
        config, "config.json", {false, 1.0, config.at("max_position_embeddings").get<int>()});
    ASSERT_TRUE(rope.ok()) << rope.error().message();
    const int headDim = config.at("hidden_size").get<int>() / config.at("num_attention_heads").get<int>();
    const int dims = static_cast<int>(headDim * rope->partialRotaryFactor);
    ASSERT_TRUE(attn::model::validateRope(rope->theta, rope->scaling, dims).ok());
    const attn::model::RopeFrequencies f =
        attn::model::ropeFrequencies(rope->theta, rope->scaling, dims, c.at("length").get<std::int64_t>());
    const std::vector<double> expected = c.at("inv_freq").get<std::vector<double>>();
    ASSERT_EQ(f.inverse.size(), expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i)
      EXPECT_NEAR(f.inverse[i], expected[i], 1e-12 * expected[i]) << "pair " << i;
    EXPECT_NEAR(f.attentionFactor, c.at("attention_factor").get<double>(), 1e-12);
  }
}

TEST(Rope, CosSinCarryTheAttentionFactor) {
  attn::model::RopeFrequencies f;
  f.inverse = {1.0, 0.01};
  f.attentionFactor = 1.5;
  attn::Matrix cosines, sines;
  attn::model::ropeCosSin(f, 3, 2, cosines, sines);  // positions 3 and 4
  ASSERT_EQ(cosines.rows(), 2);
  ASSERT_EQ(cosines.cols(), 2);
  EXPECT_NEAR(cosines(0, 0), 1.5 * std::cos(3.0), 1e-6);
  EXPECT_NEAR(sines(1, 1), 1.5 * std::sin(0.04), 1e-6);
}

// ---------------------------------------------------------------------------------------
// The reader: where each value comes from, and what it refuses
// ---------------------------------------------------------------------------------------

json llamaConfig() {
  modeltest::Spec spec;
  return modeltest::configJson(spec);
}

TEST(RopeConfig, RopeParametersAndTopLevelKeysAgreeOrAreRefused) {
  json c = llamaConfig();
  c.erase("rope_theta");
  c.erase("rope_scaling");
  c["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 500000.0}};
  auto parsed = attn::io::parseModelConfig(c.dump(), "config.json");
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  EXPECT_EQ(parsed->ropeTheta, 500000.0);
  EXPECT_EQ(parsed->ropeScaling.type, attn::model::RopeType::Default);
  // The same value twice is fine; two values are refused naming both.
  c["rope_theta"] = 500000.0;
  EXPECT_TRUE(attn::io::parseModelConfig(c.dump(), "config.json").ok());
  c["rope_theta"] = 10000.0;
  auto both = attn::io::parseModelConfig(c.dump(), "config.json");
  ASSERT_FALSE(both.ok());
  EXPECT_EQ(both.error().field, "rope_theta");
  EXPECT_NE(both.error().message().find("rope_parameters.rope_theta"), std::string::npos);
  // llama3 inside rope_parameters is read, not dropped.
  c.erase("rope_theta");
  c["rope_parameters"] = {{"rope_type", "llama3"}, {"rope_theta", 500000.0}, {"factor", 8.0},
                          {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0},
                          {"original_max_position_embeddings", 32}};
  parsed = attn::io::parseModelConfig(c.dump(), "config.json");
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  EXPECT_EQ(parsed->ropeScaling.type, attn::model::RopeType::Llama3);
  EXPECT_EQ(parsed->ropeScaling.factor, 8.0);
  EXPECT_EQ(parsed->ropeScaling.originalMaxPositions, 32);
  // The keys it consumed, for the family's table of keys read.
  auto rope = attn::io::readRopeConfig(c, "config.json", {false, 1.0, 64});
  ASSERT_TRUE(rope.ok());
  EXPECT_EQ(rope->keysRead, std::vector<std::string>({"rope_parameters"}));
}

TEST(RopeConfig, RefusesNullsUnknownTypesAndKeysNamingThem) {
  struct Bad {
    std::function<void(json&)> edit;
    std::string field, words;
  };
  const std::vector<Bad> cases = {
      {[](json& c) { c["rope_theta"] = nullptr; }, "rope_theta", "null"},
      {[](json& c) { c["rope_scaling"] = {{"rope_type", "ntk-by-parts"}, {"factor", 2.0}}; },
       "rope_scaling.rope_type", "'ntk-by-parts' is not a rope type"},
      {[](json& c) { c["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}, {"finetuned", true}}; },
       "rope_scaling.finetuned", "is not a key of rope type 'linear'"},
      {[](json& c) { c["rope_scaling"] = {{"type", "linear"}, {"factor", nullptr}}; },
       "rope_scaling.factor", "null"},
      {[](json& c) {
         c["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0}};
       },
       "rope_scaling.high_freq_factor", "missing"},
      {[](json& c) {
         c.erase("rope_scaling");
         c["rope_parameters"] = {{"full_attention", {{"rope_type", "default"}}}};
       },
       "rope_parameters.full_attention", "is not a key of rope type 'default'"},
      {[](json& c) {
         c["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};
         c["rope_parameters"] = {{"rope_type", "default"}};
       },
       "rope_parameters", "disagrees with rope_scaling"},
      {[](json& c) {
         c.erase("rope_scaling");
         c["rope_parameters"] = {{"rope_type", "longrope"}, {"short_factor", {1.0}}, {"long_factor", {1.0}}};
       },
       "rope_parameters.short_factor", "has 1 numbers; the rotary needs 4"},
      {[](json& c) { c["partial_rotary_factor"] = 0.5; }, "partial_rotary_factor", "only 1"},
  };
  for (const Bad& bad : cases) {
    SCOPED_TRACE(bad.field);
    json c = llamaConfig();
    bad.edit(c);
    auto parsed = attn::io::parseModelConfig(c.dump(), "config.json");
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.error().file, "config.json");
    EXPECT_EQ(parsed.error().field, bad.field) << parsed.error().message();
    EXPECT_NE(parsed.error().message().find(bad.words), std::string::npos) << parsed.error().message();
  }
}

TEST(RopeConfig, GptNeoxReadsPartialRotaryFactorAsWellAsRotaryPct) {
  modeltest::Spec spec = modeltest::neoxSpec();  // d_h = 8
  json c = modeltest::configJson(spec);
  c.erase("rotary_pct");
  EXPECT_EQ(attn::io::parseModelConfig(c.dump(), "config.json")->rotaryDims, 2);  // 0.25 default
  c["partial_rotary_factor"] = 0.5;
  auto parsed = attn::io::parseModelConfig(c.dump(), "config.json");
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  EXPECT_EQ(parsed->rotaryDims, 4);
  c["rotary_pct"] = 0.5;  // both, agreeing
  EXPECT_EQ(attn::io::parseModelConfig(c.dump(), "config.json")->rotaryDims, 4);
  c["rotary_pct"] = 0.25;  // both, disagreeing
  parsed = attn::io::parseModelConfig(c.dump(), "config.json");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.error().field, "rotary_pct");
  c.erase("rotary_pct");
  c.erase("partial_rotary_factor");
  c["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 10000.0}, {"partial_rotary_factor", 1.0}};
  EXPECT_EQ(attn::io::parseModelConfig(c.dump(), "config.json")->rotaryDims, 8);  // transformers 5
}

TEST(RopeConfig, DynamicRunsToFactorTimesTheContext) {
  json c = llamaConfig();  // max_position_embeddings 64
  c["rope_scaling"] = {{"type", "dynamic"}, {"factor", 4.0}};
  auto parsed = attn::io::parseModelConfig(c.dump(), "config.json");
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  EXPECT_EQ(parsed->nPositions, 256);
  EXPECT_EQ(parsed->ropeScaling.maxPositions, 64);
}

// ---------------------------------------------------------------------------------------
// Forward passes
// ---------------------------------------------------------------------------------------

modeltest::Spec ropeSpec() {
  modeltest::Spec s;  // llama, GQA
  s.hidden = 64;      // 4 heads of 16: 8 rotary pairs
  s.inner = 64;
  s.positions = 256;
  return s;
}

std::vector<int> manyIds(int n, int vocab) {
  std::vector<int> ids;
  for (int i = 0; i < n; ++i) ids.push_back((i * 17 + i * i * 3 + 5) % vocab);
  return ids;
}

// A folder of `spec` with `edit` applied to its config.json. The q and k projections are
// scaled by 1/4 (exactly): the fixture's scores reach the hundreds, where float32 rounding
// alone moves attention by more than 1e-4 over 200+ tokens; smaller scores keep the test
// about the rotary and the attention still far from uniform.
fs::path writeRopeFolder(const std::string& name, const modeltest::Spec& spec,
                         const std::function<void(json&)>& edit) {
  modeltest::Tensors tensors = modeltest::makeTensors(spec, 57);
  for (auto& [tensorName, t] : tensors) {
    if (tensorName.ends_with("q_proj.weight") || tensorName.ends_with("k_proj.weight") ||
        tensorName.ends_with("query_key_value.weight")) {
      for (float& v : t.values) v *= 0.25f;
    }
  }
  const fs::path dir = modeltest::writeFolder(name, spec, tensors);
  json config = json::parse(gpt2test::readFile(dir / "config.json"));
  edit(config);
  gpt2test::writeFile(dir / "config.json", config.dump(2));
  return dir;
}

std::shared_ptr<const attn::model::Weights> load(const fs::path& dir) {
  auto loaded = attn::io::loadModelFolder(dir.string());
  EXPECT_TRUE(loaded.ok()) << loaded.error().message();
  return loaded.ok() ? loaded->weights : nullptr;
}

TEST(RopeForward, RopeParametersEqualsTopLevelRopeTheta) {
  const modeltest::Spec spec = ropeSpec();
  const fs::path a = writeRopeFolder("rope_top_theta", spec, [](json& c) { c["rope_theta"] = 500000.0; });
  const fs::path b = writeRopeFolder("rope_parameters_theta", spec, [](json& c) {
    c.erase("rope_theta");
    c.erase("rope_scaling");
    c["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 500000.0}};
  });
  const fs::path other = writeRopeFolder("rope_default_theta", spec, [](json& c) { c.erase("rope_theta"); });
  const std::vector<int> ids = manyIds(40, spec.vocab);
  auto ra = attn::model::forward(load(a), ids);
  auto rb = attn::model::forward(load(b), ids);
  auto ro = attn::model::forward(load(other), ids);
  ASSERT_TRUE(ra.ok() && rb.ok() && ro.ok());
  EXPECT_EQ(ra->attentionTensor(), rb->attentionTensor());
  EXPECT_EQ((ra->logits() - rb->logits()).cwiseAbs().maxCoeff(), 0.0f);
  // and θ = 10000 (what the reader used to run) is visibly another model
  const std::vector<float> x = ra->attentionTensor(), y = ro->attentionTensor();
  float worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::abs(x[i] - y[i]));
  EXPECT_GT(worst, 0.05f);
}

struct TorchRun {
  std::vector<modeltest::Reference> refs;
  std::string problem;
  bool skip = false;  // a live run (ATTNSCOPE_LIVE_TORCH) found no torch
};

// tests/formats/rope_reference.py forward on every (ids, folder) pair (one torch import), or
// its stored output (tests/support/torch_cache.h).
TorchRun runTorch(const std::vector<std::pair<std::vector<int>, fs::path>>& runs) {
  TorchRun run;
  attn::testing::ReferenceCall call{"rope_forward", "tests/formats/rope_reference.py", {"forward"}, {}};
  for (const auto& [ids, dir] : runs) {
    std::string idText;
    for (std::size_t i = 0; i < ids.size(); ++i) idText += (i ? "," : "") + std::to_string(ids[i]);
    call.args.push_back(idText);
    call.args.push_back(dir.string());
    call.inputs.push_back(dir);
  }
  const attn::testing::ReferenceOutput output = attn::testing::referenceOutput(call);
  run.skip = output.skip;
  if (!output.problem.empty() || output.skip) {
    run.problem = output.problem;
    return run;
  }
  std::istringstream lines(output.text);
  for (std::string line; std::getline(lines, line);) {
    const json result = json::parse(line);
    modeltest::Reference ref;
    ref.attention = result["attention"].get<decltype(ref.attention)>();
    ref.logits = result["logits"].get<std::vector<double>>();
    run.refs.push_back(std::move(ref));
  }
  if (run.refs.size() != runs.size()) run.problem = "rope_reference.py gave too few results";
  return run;
}

// Attention within 1e-4, the top-10 ids equal and their probabilities within 1e-4.
void expectMatches(const attn::model::DecoderRun& session, const modeltest::Reference& ref) {
  const auto& c = session.config();
  const int n = session.size();
  ASSERT_EQ(ref.attention.size(), static_cast<std::size_t>(c.nLayer));
  double worst = 0;
  for (int l = 0; l < c.nLayer; ++l)
    for (int h = 0; h < c.nHead; ++h) {
      const attn::Matrix a = session.attention(l, h);
      const auto& r = ref.attention[static_cast<std::size_t>(l)][static_cast<std::size_t>(h)];
      ASSERT_EQ(r.size(), static_cast<std::size_t>(n));
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j)
          worst = std::max(worst, std::abs(a(i, j) - r[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)]));
    }
  EXPECT_LT(worst, 1e-4);
  std::vector<int> order(ref.logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return ref.logits[static_cast<std::size_t>(a)] > ref.logits[static_cast<std::size_t>(b)];
  });
  const double mx = ref.logits[static_cast<std::size_t>(order[0])];
  double sum = 0;
  for (double z : ref.logits) sum += std::exp(z - mx);
  const auto top = session.topK(10);
  for (std::size_t k = 0; k < 10; ++k) {
    EXPECT_EQ(top[k].id, order[k]) << "rank " << k;
    EXPECT_NEAR(top[k].probability, std::exp(ref.logits[static_cast<std::size_t>(order[k])] - mx) / sum, 1e-4);
  }
}

struct ForwardCase {
  std::string name;
  modeltest::Spec spec;
  std::function<void(json&)> edit;
  int tokens;
};

std::vector<ForwardCase> forwardCases() {
  const modeltest::Spec llama = ropeSpec();
  modeltest::Spec neox = modeltest::neoxSpec();
  neox.hidden = 64;  // 4 heads of 16
  neox.inner = 64;
  neox.positions = 256;
  std::vector<double> shortFactor, longFactor;
  for (int i = 0; i < 8; ++i) {
    shortFactor.push_back(1.0 + 0.1 * i);
    longFactor.push_back(1.0 + 2.0 * i);
  }
  return {
      {"llama3", llama,
       [](json& c) {
         c["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                              {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 200}};
       },
       240},
      {"llama3_rope_parameters", llama,
       [](json& c) {
         c.erase("rope_theta");
         c.erase("rope_scaling");
         c["rope_parameters"] = {{"rope_type", "llama3"}, {"rope_theta", 500000.0}, {"factor", 32.0},
                                 {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0},
                                 {"original_max_position_embeddings", 200}};
       },
       240},
      {"yarn", llama,
       [](json& c) {
         c["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 64},
                              {"beta_fast", 8.0}, {"beta_slow", 1.0}};
       },
       200},
      {"dynamic", llama, [](json& c) {
         c["max_position_embeddings"] = 100;
         c["rope_scaling"] = {{"type", "dynamic"}, {"factor", 3.0}};
       },
       220},
      {"longrope_long", llama,
       [shortFactor, longFactor](json& c) {
         c["original_max_position_embeddings"] = 100;
         c["rope_scaling"] = {{"type", "longrope"}, {"short_factor", shortFactor}, {"long_factor", longFactor}};
       },
       150},
      {"longrope_short", llama,
       [shortFactor, longFactor](json& c) {
         c["original_max_position_embeddings"] = 100;
         c["rope_scaling"] = {{"type", "longrope"}, {"short_factor", shortFactor}, {"long_factor", longFactor}};
       },
       90},
      {"neox_partial_half", neox,
       [](json& c) {
         c.erase("rotary_pct");
         c["partial_rotary_factor"] = 0.5;
       },
       60},
  };
}

TEST(RopeForward, EveryRopeTypeMatchesPyTorchReference) {
  const std::vector<ForwardCase> cases = forwardCases();
  std::vector<std::pair<std::vector<int>, fs::path>> runs;
  for (const ForwardCase& c : cases)
    runs.emplace_back(manyIds(c.tokens, c.spec.vocab), writeRopeFolder("rope_forward_" + c.name, c.spec, c.edit));
  const TorchRun torch = runTorch(runs);
  if (torch.skip) GTEST_SKIP() << "python3 with torch is not installed (ATTNSCOPE_LIVE_TORCH)";
  ASSERT_TRUE(torch.problem.empty()) << torch.problem;
  for (std::size_t k = 0; k < cases.size(); ++k) {
    const ForwardCase& c = cases[k];
    SCOPED_TRACE(c.name);
    const auto& [ids, dir] = runs[k];
    auto weights = load(dir);
    ASSERT_TRUE(weights);
    if (c.name == "neox_partial_half") {
      EXPECT_EQ(weights->config.rotaryDims, 8);  // 0.5 of 16
    }
    auto session = attn::model::forward(weights, ids);
    ASSERT_TRUE(session.ok()) << session.error().message();
    expectMatches(*session, torch.refs[k]);
  }
}

// dynamic and longrope frequencies depend on the length: a session that grows past the
// threshold, or is cut back below it, equals a fresh run of its tokens.
TEST(RopeForward, LengthDependentTypesRecomputeTheCache) {
  for (const ForwardCase& c : forwardCases()) {
    if (c.name != "dynamic" && c.name != "longrope_long") continue;
    SCOPED_TRACE(c.name);
    auto weights = load(writeRopeFolder("rope_cache_" + c.name, c.spec, c.edit));
    ASSERT_TRUE(weights);
    const std::vector<int> ids = manyIds(c.tokens, c.spec.vocab);
    attn::model::DecoderRun session(weights);
    for (std::size_t i = 0; i < ids.size(); i += 37) {
      const std::size_t end = std::min(ids.size(), i + 37);
      ASSERT_TRUE(session.append(std::span<const int>(ids.data() + i, end - i)).ok());
    }
    auto full = attn::model::forward(weights, ids);
    ASSERT_TRUE(full.ok());
    const std::vector<float> a = full->attentionTensor(), b = session.attentionTensor();
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-5) << i;
    session.truncate(80);  // below both thresholds (100)
    auto shorter = attn::model::forward(weights, std::span<const int>(ids.data(), 80));
    ASSERT_TRUE(shorter.ok());
    const std::vector<float> s = shorter->attentionTensor(), t = session.attentionTensor();
    ASSERT_EQ(s.size(), t.size());
    for (std::size_t i = 0; i < s.size(); ++i) ASSERT_NEAR(s[i], t[i], 1e-5) << i;
    EXPECT_LT((shorter->logits() - session.logits()).cwiseAbs().maxCoeff(), 1e-4f);
  }
}

}  // namespace
}  // namespace test_formats_rope
