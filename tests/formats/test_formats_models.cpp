// formats/models + core/models: every family the engine runs, from small random checkpoints
// written here in the exact Hugging Face layout (tests/support/model_fixture.h), against
//   - the plain-loop double-precision reference of the fixture (always), and
//   - tests/formats/hf_reference.py, a PyTorch forward pass written from the Hugging Face
//     modelling equations (its stored output, tests/support/torch_cache.h; ATTNSCOPE_LIVE_TORCH=1
//     runs it now).
// Checks: attention within 1e-4, the top-10 next tokens equal, probabilities within 1e-4;
// sharded, F16 and BF16 variants; F32 weights used in place; the KV cache; and the errors
// that used to be silent (more layers in the file, an untied lm_head, unknown options).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <span>
#include <sstream>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "core/models/analysis.h"
#include "core/models/transformer.h"
#include "core/isa/isa.h"
#include "formats/models/model_folder.h"
#include "tests/support/model_fixture.h"
#include "tests/support/torch_reference.h"

namespace test_formats_models {
namespace {

namespace fs = std::filesystem;
using modeltest::Spec;
using nlohmann::json;

constexpr double kTolerance = 1e-4;

// 20 ids: longer than the mistral window (4), every id in the vocabulary range.
std::vector<int> someIds(int vocab) {
  std::vector<int> ids;
  for (int i = 0; i < 20; ++i) ids.push_back((i * 17 + i * i * 3 + 5) % vocab);
  return ids;
}

std::vector<double> softmax(const std::vector<double>& logits) {
  const double mx = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (double z : logits) sum += std::exp(z - mx);
  std::vector<double> p;
  for (double z : logits) p.push_back(std::exp(z - mx) / sum);
  return p;
}

std::vector<int> topIds(const std::vector<double>& logits, int k) {
  std::vector<int> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return logits[static_cast<std::size_t>(a)] > logits[static_cast<std::size_t>(b)]; });
  order.resize(static_cast<std::size_t>(k));
  return order;
}

// Attention within 1e-4 everywhere, top-10 equal, probabilities within 1e-4.
void expectMatches(const attn::model::DecoderRun& session, const modeltest::Reference& ref) {
  const auto& c = session.config();
  const int n = session.size();
  ASSERT_EQ(ref.attention.size(), static_cast<std::size_t>(c.nLayer));
  double worst = 0;
  for (int l = 0; l < c.nLayer; ++l) {
    ASSERT_EQ(ref.attention[static_cast<std::size_t>(l)].size(), static_cast<std::size_t>(c.nHead));
    for (int h = 0; h < c.nHead; ++h) {
      attn::Matrix a = session.attention(l, h);
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j)
          worst = std::max(worst, std::abs(a(i, j) - ref.attention[static_cast<std::size_t>(l)][static_cast<std::size_t>(h)]
                                                               [static_cast<std::size_t>(i)][static_cast<std::size_t>(j)]));
    }
  }
  EXPECT_LT(worst, kTolerance) << "largest attention difference";
  const std::vector<double> p = softmax(ref.logits);
  const std::vector<int> expected = topIds(ref.logits, 10);
  const auto top = session.topK(10);
  ASSERT_EQ(top.size(), 10u);
  for (std::size_t r = 0; r < 10; ++r) {
    EXPECT_EQ(top[r].id, expected[r]) << "rank " << r;
    EXPECT_NEAR(top[r].probability, p[static_cast<std::size_t>(top[r].id)], kTolerance);
  }
  // The test weights make attention far from uniform (otherwise the comparison is weak).
  EXPECT_GT(session.attention(c.nLayer - 1, 0).row(n - 1).maxCoeff(), 3.0f / static_cast<float>(n));
}

struct Case {
  std::string name;
  Spec spec;
  std::string dtype = "F32";
  int shards = 1;
};

std::vector<Case> allCases() {
  Spec linear = modeltest::llamaSpec();
  linear.linearFactor = 2.0;
  return {{"gpt2", modeltest::gpt2Spec()},
          {"llama_gqa", modeltest::llamaSpec()},
          {"qwen2_bias", modeltest::qwen2Spec()},
          {"mistral_window", modeltest::mistralSpec()},
          {"neox_partial", modeltest::neoxSpec()},
          {"llama_linear_rope", linear},
          {"llama_sharded", modeltest::llamaSpec(), "F32", 3},
          {"qwen2_bf16", modeltest::qwen2Spec(), "BF16"},
          {"neox_f16_sharded", modeltest::neoxSpec(), "F16", 2},
          {"mistral_bf16", modeltest::mistralSpec(), "BF16"}};
}

fs::path writeCase(const Case& c, modeltest::Tensors& tensors) {
  tensors = modeltest::makeTensors(c.spec, 17);
  return modeltest::writeFolder("models_" + c.name, c.spec, tensors, c.dtype, c.shards);
}

TEST(ModelFamilies, MatchPlainLoopReference) {
  for (const Case& c : allCases()) {
    SCOPED_TRACE(c.name);
    modeltest::Tensors tensors;
    const fs::path dir = writeCase(c, tensors);
    auto loaded = attn::io::loadModelFolder(dir.string());
    ASSERT_TRUE(loaded.ok()) << loaded.error().message();
    const auto& config = loaded->weights->config;
    EXPECT_EQ(config.modelType, c.spec.modelType);
    EXPECT_EQ(config.nHeadKv, c.spec.headsKv);
    const std::vector<int> ids = someIds(c.spec.vocab);
    auto session = attn::model::forward(loaded->weights, ids);
    ASSERT_TRUE(session.ok()) << session.error().message();
    expectMatches(*session, modeltest::referenceForward(c.spec, tensors, ids));
  }
}

TEST(ModelFamilies, KvCacheEqualsFullRun) {
  for (const Case& c : allCases()) {
    SCOPED_TRACE(c.name);
    modeltest::Tensors tensors;
    auto loaded = attn::io::loadModelFolder(writeCase(c, tensors).string());
    ASSERT_TRUE(loaded.ok()) << loaded.error().message();
    const std::vector<int> ids = someIds(c.spec.vocab);
    auto full = attn::model::forward(loaded->weights, ids);
    ASSERT_TRUE(full.ok());
    attn::model::DecoderRun session(loaded->weights);
    for (int id : ids) ASSERT_TRUE(session.append(std::span<const int>(&id, 1)).ok());
    std::vector<int> edited = ids;
    edited[15] = (edited[15] + 1) % c.spec.vocab;
    ASSERT_EQ(*session.setTokens(edited), 15);  // reuses the first 15
    ASSERT_EQ(*session.setTokens(ids), 15);
    const std::vector<float> a = full->attentionTensor(), b = session.attentionTensor();
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], kTolerance) << i;
    EXPECT_LT((full->logits() - session.logits()).cwiseAbs().maxCoeff(), 1e-4f);
    // Query heads 0 .. H/H_kv - 1 all read KV head 0 (the same keys, not copies).
    const auto& config = loaded->weights->config;
    const int group = config.nHead / config.nHeadKv;
    EXPECT_EQ(session.key(0, group - 1).data(), session.key(0, 0).data());
    EXPECT_EQ(config.kvHeadOf(config.nHead - 1), config.nHeadKv - 1);
  }
}

TEST(ModelFamilies, F32TensorsAreUsedInPlace) {
  modeltest::Tensors tensors;
  const Case c{"inplace", modeltest::llamaSpec()};
  const fs::path dir = writeCase(c, tensors);
  auto checkpoint = attn::io::Checkpoint::open(dir.string());
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.error().message();
  auto weights = attn::io::loadModelWeights(*checkpoint, *attn::io::loadModelConfig((dir / "config.json").string()));
  ASSERT_TRUE(weights.ok()) << weights.error().message();
  const auto* entry = checkpoint->find("model.layers.1.mlp.down_proj.weight");
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(static_cast<const void*>(weights->layers[1].down.weight.data),
            static_cast<const void*>(entry->file->bytes(*entry->info).data()));
  EXPECT_TRUE(weights->layers[1].down.outByIn);
  EXPECT_EQ(weights->storedAs, "F32");
  EXPECT_EQ(weights->fileBytes, entry->file->fileSize());
}

// A BF16 checkpoint's weight matrices are used in place (their 16-bit values in the mapping);
// norms and biases are converted. LoadOptions{false} converts everything: the same weights.
TEST(ModelFamilies, Bf16MatricesAreUsedInPlace) {
  modeltest::Tensors tensors;
  const Case b{"inplace_bf16", modeltest::qwen2Spec(), "BF16"};
  const fs::path dir = writeCase(b, tensors);
  auto checkpoint = attn::io::Checkpoint::open(dir.string());
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.error().message();
  const auto config = attn::io::loadModelConfig((dir / "config.json").string());
  ASSERT_TRUE(config.ok());
  auto inPlace = attn::io::loadModelWeights(*checkpoint, *config);
  ASSERT_TRUE(inPlace.ok()) << inPlace.error().message();
  const auto* entry = checkpoint->find("model.layers.1.mlp.down_proj.weight");
  ASSERT_NE(entry, nullptr);
  const attn::model::Tensor& down = inPlace->layers[1].down.weight;
  EXPECT_TRUE(down.isBf16());
  EXPECT_EQ(down.data, nullptr);
  EXPECT_EQ(static_cast<const void*>(down.bf16),
            static_cast<const void*>(entry->file->bytes(*entry->info).data()));
  EXPECT_TRUE(inPlace->embed.isBf16());
  EXPECT_FALSE(inPlace->layers[1].q.bias.isBf16());  // vectors are converted
  EXPECT_FALSE(inPlace->layers[1].norm1.weight.isBf16());
  EXPECT_EQ(inPlace->storedAs, "BF16");
  const auto& expected = tensors.at("model.layers.1.mlp.down_proj.weight").values;
  const attn::Matrix widened = down.dense();
  EXPECT_TRUE(std::equal(expected.begin(), expected.end(), widened.data()));
  // The parameters are counted as stored: 2 bytes each.
  auto converted = attn::io::loadModelWeights(*checkpoint, *config, attn::io::LoadOptions{false});
  ASSERT_TRUE(converted.ok());
  EXPECT_EQ(converted->storedAs, "BF16 as F32");
  EXPECT_FALSE(converted->layers[1].down.weight.isBf16());
  EXPECT_TRUE(std::equal(expected.begin(), expected.end(), converted->layers[1].down.weight.data));
  EXPECT_LT(inPlace->parameterBytes(), converted->parameterBytes() * 6 / 10);
}

// The BF16 products (in place, on every instruction set this CPU runs, baseline included)
// against the float32 run of the same weights: attention within 2e-2 (issue 22's bound; the
// kernels widen each weight exactly and accumulate in float32, so the difference is float
// rounding), the same top-1, and the KV cache path too. gpt2 exercises the Conv1D [in, out]
// kernel, llama (GQA) and gpt_neox the nn.Linear [out, in] one.
TEST(ModelFamilies, Bf16InPlaceMatchesF32OfTheSameWeights) {
  for (const Case& c : {Case{"bf16_gpt2", modeltest::gpt2Spec(), "BF16"},
                        Case{"bf16_llama", modeltest::llamaSpec(), "BF16"},
                        Case{"bf16_neox", modeltest::neoxSpec(), "BF16"}}) {
    SCOPED_TRACE(c.name);
    modeltest::Tensors tensors;
    const fs::path dir = writeCase(c, tensors);
    auto reference = attn::io::loadModelFolder(dir.string(), attn::io::LoadOptions{false});
    ASSERT_TRUE(reference.ok()) << reference.error().message();
    const std::vector<int> ids = someIds(c.spec.vocab);
    auto f32 = attn::model::forward(reference->weights, ids);
    ASSERT_TRUE(f32.ok());
    const std::vector<float> expected = f32->attentionTensor();
    for (attn::kernels::Isa isa : {attn::kernels::Isa::Baseline, attn::kernels::Isa::Avx2,
                                   attn::kernels::Isa::Avx512}) {
      if (!attn::kernels::isSupported(isa)) continue;
      SCOPED_TRACE(std::string(attn::kernels::isaName(isa)));
      const attn::kernels::Isa before = attn::kernels::activeIsa();
      ASSERT_TRUE(attn::kernels::setActiveIsa(isa));
      auto loaded = attn::io::loadModelFolder(dir.string());
      ASSERT_TRUE(loaded.ok()) << loaded.error().message();
      ASSERT_TRUE(loaded->weights->layers[0].up.weight.isBf16());
      attn::model::DecoderRun session(loaded->weights);
      for (int id : ids) ASSERT_TRUE(session.append(std::span<const int>(&id, 1)).ok());
      auto full = attn::model::forward(loaded->weights, ids);
      attn::kernels::setActiveIsa(before);
      ASSERT_TRUE(full.ok());
      double worst = 0;
      for (const auto* s : {&session, &*full}) {
        const std::vector<float> got = s->attentionTensor();
        ASSERT_EQ(got.size(), expected.size());
        for (std::size_t i = 0; i < got.size(); ++i)
          worst = std::max(worst, static_cast<double>(std::abs(got[i] - expected[i])));
        EXPECT_EQ(s->topK(1)[0].id, f32->topK(1)[0].id);
        EXPECT_LT((s->logits() - f32->logits()).cwiseAbs().maxCoeff(), 1e-3f);
      }
      EXPECT_LT(worst, 2e-2);
      EXPECT_LT(worst, 1e-3) << "widened weights and float32 sums: only rounding differs";
    }
  }
}

// The analyses read lm_head and W_o through the same paths (applyLinear, readRow, dense), so
// they work on a BF16 model used in place and agree with its converted twin.
TEST(ModelFamilies, AnalysesRunOnBf16InPlace) {
  modeltest::Tensors tensors;
  const fs::path dir = writeCase(Case{"bf16_analysis", modeltest::llamaSpec(), "BF16"}, tensors);
  auto inPlace = attn::io::loadModelFolder(dir.string());
  auto converted = attn::io::loadModelFolder(dir.string(), attn::io::LoadOptions{false});
  ASSERT_TRUE(inPlace.ok() && converted.ok());
  ASSERT_TRUE(inPlace->weights->lmHead.isBf16());
  const std::vector<int> ids = someIds(modeltest::llamaSpec().vocab);
  auto lensA = attn::model::logitLens(inPlace->weights, ids, 3);
  auto lensB = attn::model::logitLens(converted->weights, ids, 3);
  ASSERT_TRUE(lensA.ok() && lensB.ok());
  for (std::size_t l = 0; l < lensA->top.size(); ++l)
    for (std::size_t i = 0; i < lensA->top[l].size(); ++i) {
      EXPECT_EQ(lensA->top[l][i][0].id, lensB->top[l][i][0].id) << l << "," << i;
      EXPECT_NEAR(lensA->top[l][i][0].logit, lensB->top[l][i][0].logit, 1e-3);
    }
  auto dlaA = attn::model::directLogitAttribution(inPlace->weights, ids, 3, 5);
  auto dlaB = attn::model::directLogitAttribution(converted->weights, ids, 3, 5);
  ASSERT_TRUE(dlaA.ok() && dlaB.ok());
  EXPECT_LT((dlaA->heads - dlaB->heads).cwiseAbs().maxCoeff(), 1e-3f);
  EXPECT_NEAR(dlaA->metric, dlaB->metric, 1e-3);
  EXPECT_GT(dlaB->heads.cwiseAbs().maxCoeff(), 1e-3f);  // not all zero
}

// =======================================================================================
// Errors that were silent
// =======================================================================================

void expectError(const fs::path& dir, std::vector<std::string> fragments) {
  auto loaded = attn::io::loadModelFolder(dir.string());
  ASSERT_FALSE(loaded.ok());
  for (const std::string& f : fragments)
    EXPECT_NE(loaded.error().message().find(f), std::string::npos)
        << "'" << f << "' not in " << loaded.error().message();
}

void editConfig(const fs::path& dir, const std::function<void(json&)>& edit) {
  json config = json::parse(gpt2test::readFile(dir / "config.json"));
  edit(config);
  gpt2test::writeFile(dir / "config.json", config.dump());
}

TEST(ModelErrors, ConfigFieldsAreNamed) {
  struct ConfigCase {
    std::string name;
    Spec spec;
    std::function<void(json&)> edit;
    std::vector<std::string> fragments;
  };
  const std::vector<ConfigCase> cases = {
      {"unknown_type", modeltest::llamaSpec(), [](json& c) { c["model_type"] = "mamba"; },
       {"config.json", "field 'model_type'", "mamba",
        // every row of the family table, by kind
        "(decoders gpt2, llama", "qwen3, gemma2, phi3", "; encoders bert, distilbert, roberta; vision transformers vit, deit)"}},
      {"type_not_string", modeltest::llamaSpec(), [](json& c) { c["model_type"] = 7; },
       {"field 'model_type': 7 is not a string"}},
      {"rope_unknown", modeltest::llamaSpec(),
       [](json& c) { c["rope_scaling"] = {{"type", "ntk"}, {"factor", 2.0}}; },
       {"field 'rope_scaling.type'", "'ntk' is not a rope type"}},
      {"rope_llama3", modeltest::llamaSpec(),
       [](json& c) { c["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}}; },
       {"field 'rope_scaling.low_freq_factor'", "llama3"}},
      {"gqa_divide", modeltest::llamaSpec(), [](json& c) { c["num_key_value_heads"] = 3; },
       {"field 'num_key_value_heads'", "do not divide"}},
      {"heads_divide", modeltest::llamaSpec(), [](json& c) { c["num_attention_heads"] = 5; },
       {"field 'num_attention_heads'"}},
      {"no_hidden", modeltest::neoxSpec(), [](json& c) { c.erase("hidden_size"); },
       {"field 'hidden_size': missing"}},
      {"act", modeltest::llamaSpec(), [](json& c) { c["hidden_act"] = "gelu_10"; },
       {"field 'hidden_act'"}},
      {"qwen_window", modeltest::qwen2Spec(), [](json& c) { c["use_sliding_window"] = true; },
       {"field 'use_sliding_window'"}},
      {"head_dim", modeltest::llamaSpec(), [](json& c) { c["head_dim"] = 16; },
       {"tensor 'model.layers.0.self_attn.q_proj.weight'", "expected [64, 32]"}},
      {"unknown_key", modeltest::llamaSpec(), [](json& c) { c["attn_logit_softcapping"] = 30.0; },
       {"field 'attn_logit_softcapping'", "not a setting attnscope reads for llama"}},
      {"null_number", modeltest::llamaSpec(), [](json& c) { c["rms_norm_eps"] = nullptr; },
       {"field 'rms_norm_eps'", "null"}},
      {"rope_parameters", modeltest::llamaSpec(),
       [](json& c) { c["rope_parameters"] = {{"rope_theta", 500000.0}}; },
       {"field 'rope_theta'", "disagrees with rope_parameters.rope_theta"}},
      {"neox_partial_factor", modeltest::neoxSpec(), [](json& c) { c["partial_rotary_factor"] = 0.5; },
       {"field 'rotary_pct'", "disagrees with partial_rotary_factor"}},
      {"rotary_odd", modeltest::neoxSpec(), [](json& c) { c["rotary_pct"] = 0.125; },
       {"field 'rotary_pct'"}},
  };
  for (const ConfigCase& c : cases) {
    SCOPED_TRACE(c.name);
    const fs::path dir = modeltest::writeFolder("models_cfg_" + c.name, c.spec,
                                                modeltest::makeTensors(c.spec, 3));
    editConfig(dir, c.edit);
    expectError(dir, c.fragments);
  }
}

TEST(ModelErrors, FileWithMoreLayersThanConfig) {
  for (Spec spec : {modeltest::gpt2Spec(), modeltest::llamaSpec(), modeltest::neoxSpec()}) {
    SCOPED_TRACE(spec.modelType);
    const fs::path dir = modeltest::writeFolder("models_layers_" + spec.modelType, spec,
                                                modeltest::makeTensors(spec, 3));
    editConfig(dir, [](json& c) {
      if (c.contains("n_layer")) c["n_layer"] = 1;
      else c["num_hidden_layers"] = 1;
    });
    expectError(dir, {"model.safetensors", "belongs to layer 1",
                      spec.modelType == "gpt2" ? "n_layer is 1" : "num_hidden_layers is 1"});
  }
}

TEST(ModelErrors, UntiedLmHeadIsHonouredOrRefused) {
  // gpt2 with tie_word_embeddings false: lm_head.weight is used (and the reference agrees).
  Spec spec = modeltest::gpt2Spec();
  spec.tied = false;
  modeltest::Tensors tensors = modeltest::makeTensors(spec, 5);
  tensors["lm_head.weight"] = tensors.at("wte.weight");
  for (float& v : tensors["lm_head.weight"].values) v = -v * 0.5f;
  fs::path dir = modeltest::writeFolder("models_untied", spec, tensors);
  editConfig(dir, [](json& c) { c["tie_word_embeddings"] = false; });
  auto loaded = attn::io::loadModelFolder(dir.string());
  ASSERT_TRUE(loaded.ok()) << loaded.error().message();
  const std::vector<int> ids = someIds(spec.vocab);
  auto session = attn::model::forward(loaded->weights, ids);
  ASSERT_TRUE(session.ok());
  expectMatches(*session, modeltest::referenceForward(spec, tensors, ids));
  // The same file with the default (tied): the differing lm_head is an error, not ignored.
  dir = modeltest::writeFolder("models_untied_default", spec, tensors);
  expectError(dir, {"field 'tie_word_embeddings'", "'lm_head.weight' differs from 'wte.weight'"});
  // An untied llama without lm_head.weight.
  Spec llama = modeltest::llamaSpec();
  tensors = modeltest::makeTensors(llama, 5);
  tensors.erase("lm_head.weight");
  dir = modeltest::writeFolder("models_no_head", llama, tensors);
  expectError(dir, {"model.safetensors", "tensor 'lm_head.weight': missing"});
}

TEST(ModelErrors, TensorsNamedWithTheirFile) {
  Spec spec = modeltest::llamaSpec();
  // A bias config.json does not ask for.
  modeltest::Tensors tensors = modeltest::makeTensors(spec, 5);
  tensors["model.layers.0.self_attn.q_proj.bias"] = {{spec.hidden}, std::vector<float>(32, 0.5f)};
  fs::path dir = modeltest::writeFolder("models_extra_bias", spec, tensors);
  expectError(dir, {"tensor 'model.layers.0.self_attn.q_proj.bias'", "not used by a llama model"});
  // A wrong shape in a shard names the shard.
  tensors = modeltest::makeTensors(spec, 5);
  tensors["model.layers.1.self_attn.k_proj.weight"].shape = {32, 16};
  dir = modeltest::writeFolder("models_shard_shape", spec, tensors, "F32", 2);
  expectError(dir, {"model-0000", ".safetensors", "tensor 'model.layers.1.self_attn.k_proj.weight'",
                    "shape [32, 16], expected [16, 32]"});
  // The index names a shard that lacks the tensor.
  dir = modeltest::writeFolder("models_shard_index", spec, modeltest::makeTensors(spec, 5), "F32", 2);
  json index = json::parse(gpt2test::readFile(dir / "model.safetensors.index.json"));
  index["weight_map"]["model.norm.weight"] =
      index["weight_map"]["model.norm.weight"] == "model-00001-of-00002.safetensors"
          ? "model-00002-of-00002.safetensors"
          : "model-00001-of-00002.safetensors";
  gpt2test::writeFile(dir / "model.safetensors.index.json", index.dump());
  expectError(dir, {"tensor 'model.norm.weight': missing", "index.json puts it in this file"});
  index["weight_map"]["model.norm.weight"] = "../x.safetensors";
  gpt2test::writeFile(dir / "model.safetensors.index.json", index.dump());
  expectError(dir, {"model.safetensors.index.json", "field 'weight_map'", "not a file name"});
}

// =======================================================================================
// Against PyTorch
// =======================================================================================

using modeltest::runTorchReference;

TEST(ModelFamilies, MatchPyTorchReference) {
  const std::vector<Case> cases = allCases();
  std::vector<fs::path> dirs;
  std::vector<modeltest::Tensors> tensors(cases.size());
  for (std::size_t i = 0; i < cases.size(); ++i) dirs.push_back(writeCase(cases[i], tensors[i]));
  const std::vector<int> ids = someIds(61);  // every case's vocabulary has >= 61 tokens
  std::vector<modeltest::Reference> torchRefs;
  std::string problem;
  bool skip = false;
  const bool ran = runTorchReference("model_families", dirs, ids, torchRefs, problem, skip);
  if (skip) GTEST_SKIP() << "python3 with torch is not installed (ATTNSCOPE_LIVE_TORCH)";
  ASSERT_TRUE(ran) << problem;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].name);
    auto loaded = attn::io::loadModelFolder(dirs[i].string());
    ASSERT_TRUE(loaded.ok()) << loaded.error().message();
    auto session = attn::model::forward(loaded->weights, ids);
    ASSERT_TRUE(session.ok());
    expectMatches(*session, torchRefs[i]);
    // And the two references agree with each other (both in double precision).
    const auto plain = modeltest::referenceForward(cases[i].spec, tensors[i], ids);
    ASSERT_EQ(plain.logits.size(), torchRefs[i].logits.size());
    for (std::size_t t = 0; t < plain.logits.size(); ++t)
      ASSERT_NEAR(plain.logits[t], torchRefs[i].logits[t], 1e-9);
  }
}

}  // namespace
}  // namespace test_formats_models
