// The families issue 28 added through the family table (formats/models/families/): qwen3
// (explicit head_dim, q/k norms; F32 and BF16), gemma2 ((1 + w) RMSNorm, sandwich norms,
// embedding scale, query_pre_attn_scalar, attention and final soft-capping, sliding window
// on even layers) and phi3 (fused qkv_proj / gate_up_proj, full and 0.5 partial rotary,
// sliding window), from small random checkpoints in the exact Hugging Face layout, against
// tests/formats/hf_reference.py (PyTorch, written from modeling_qwen3 / modeling_gemma2 /
// modeling_phi3; its stored output, tests/support/torch_cache.h): attention within 1e-4 (BF16 2e-3),
// probabilities within the same, the top-10 equal. Plus the config keys the reader refuses.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "core/models/transformer.h"
#include "formats/models/families.h"
#include "formats/models/model_folder.h"
#include "tests/support/model_fixture.h"
#include "tests/support/torch_reference.h"

namespace test_formats_model_families {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct FamilyCase {
  std::string name;
  json config;
  std::string dtype = "F32";
  double tolerance = 1e-4;
};

// Values k / 2^shift with |k| <= range (exact in BF16), around `offset`.
struct Maker {
  attn::SplitMix64 rng;  // core/base/random.h
  std::vector<gpt2test::RawTensor> tensors;
  std::string dtype;
  void add(const std::string& name, std::vector<std::int64_t> shape, int range, int shift,
           float offset = 0) {
    std::int64_t count = 1;
    for (auto d : shape) count *= d;
    std::vector<float> v(static_cast<std::size_t>(count));
    for (float& x : v) {
      const int k = static_cast<int>(rng.next() % static_cast<std::uint64_t>(2 * range + 1)) - range;
      x = offset + std::ldexp(static_cast<float>(k), -shift);
    }
    tensors.push_back({name, dtype, std::move(shape), gpt2test::encodeFloats(v, dtype)});
  }
};

// The Hugging Face tensors of `c` (model_type qwen3, gemma2 or phi3), named as in
// modeling_qwen3 / modeling_gemma2 / modeling_phi3.
fs::path writeCase(const FamilyCase& fc) {
  const json& c = fc.config;
  const std::string type = c.at("model_type");
  const std::int64_t E = c.at("hidden_size"), F = c.at("intermediate_size"), V = c.at("vocab_size");
  const std::int64_t H = c.at("num_attention_heads"), Hkv = c.at("num_key_value_heads");
  const std::int64_t dh = c.contains("head_dim") ? c.at("head_dim").get<std::int64_t>() : E / H;
  const float normCentre = type == "gemma2" ? 0.0f : 1.0f;  // gemma2 stores w of (1 + w)
  Maker m{attn::SplitMix64(97), {}, fc.dtype};
  m.add("model.embed_tokens.weight", {V, E}, 127, 6);
  for (int l = 0; l < c.at("num_hidden_layers").get<int>(); ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    m.add(p + "input_layernorm.weight", {E}, 63, 7, normCentre);
    m.add(p + "post_attention_layernorm.weight", {E}, 63, 7, normCentre);
    if (type == "phi3") {
      m.add(p + "self_attn.qkv_proj.weight", {(H + 2 * Hkv) * dh, E}, 127, 6);
      m.add(p + "mlp.gate_up_proj.weight", {2 * F, E}, 127, 6);
    } else {
      m.add(p + "self_attn.q_proj.weight", {H * dh, E}, 127, 6);
      m.add(p + "self_attn.k_proj.weight", {Hkv * dh, E}, 127, 6);
      m.add(p + "self_attn.v_proj.weight", {Hkv * dh, E}, 127, 6);
      m.add(p + "mlp.gate_proj.weight", {F, E}, 127, 6);
      m.add(p + "mlp.up_proj.weight", {F, E}, 127, 6);
    }
    m.add(p + "self_attn.o_proj.weight", {E, H * dh}, 127, 7);
    m.add(p + "mlp.down_proj.weight", {E, F}, 127, 8);
    if (type == "qwen3") {
      m.add(p + "self_attn.q_norm.weight", {dh}, 63, 7, 1.0f);
      m.add(p + "self_attn.k_norm.weight", {dh}, 63, 7, 1.0f);
    }
    if (type == "gemma2") {
      m.add(p + "pre_feedforward_layernorm.weight", {E}, 63, 7, 0.0f);
      m.add(p + "post_feedforward_layernorm.weight", {E}, 63, 7, 0.0f);
    }
  }
  m.add("model.norm.weight", {E}, 63, 7, normCentre);
  if (!c.value("tie_word_embeddings", type == "gemma2")) m.add("lm_head.weight", {V, E}, 127, 7);
  const fs::path dir = gpt2test::freshDir("families_" + fc.name);
  gpt2test::writeFile(dir / "config.json", c.dump(2));
  gpt2test::writeFile(dir / "model.safetensors",
                      gpt2test::safetensorsBytes(m.tensors, json{{"format", "pt"}}));
  return dir;
}

json baseConfig(const std::string& type) {
  return {{"architectures", {"X"}}, {"model_type", type},  {"hidden_size", 32},
          {"intermediate_size", 48}, {"num_hidden_layers", 3}, {"num_attention_heads", 4},
          {"num_key_value_heads", 2}, {"max_position_embeddings", 64}, {"vocab_size", 61},
          {"rms_norm_eps", 1e-6}, {"bos_token_id", 1}, {"eos_token_id", 2},
          {"torch_dtype", "float32"}, {"transformers_version", "4.51.0"}, {"use_cache", true}};
}

std::vector<FamilyCase> cases() {
  json qwen3 = baseConfig("qwen3");
  qwen3.update({{"head_dim", 12}, {"tie_word_embeddings", true}, {"rope_theta", 1000000.0},
                {"hidden_act", "silu"}, {"attention_bias", false}, {"use_sliding_window", false},
                {"sliding_window", nullptr}, {"max_window_layers", 28}, {"rope_scaling", nullptr}});
  json gemma2 = baseConfig("gemma2");
  gemma2.update({{"head_dim", 16}, {"query_pre_attn_scalar", 24}, {"attn_logit_softcapping", 4.0},
                 {"final_logit_softcapping", 3.0}, {"sliding_window", 4}, {"rope_theta", 10000.0},
                 {"hidden_act", "gelu_pytorch_tanh"}, {"hidden_activation", "gelu_pytorch_tanh"},
                 {"cache_implementation", "hybrid"}, {"attention_bias", false}});
  json phi3 = baseConfig("phi3");
  phi3.update({{"tie_word_embeddings", false}, {"hidden_act", "silu"}, {"rope_theta", 10000.0},
               {"sliding_window", 6}, {"rope_scaling", nullptr}, {"embd_pdrop", 0.0},
               {"resid_pdrop", 0.0}, {"original_max_position_embeddings", 64}});
  json phi3Partial = phi3;
  phi3Partial["partial_rotary_factor"] = 0.5;
  return {{"qwen3", qwen3},
          {"qwen3_bf16", qwen3, "BF16", 2e-3},
          {"gemma2", gemma2},
          {"phi3", phi3},
          {"phi3_partial", phi3Partial}};
}

// 20 ids inside the vocabulary (longer than the sliding windows).
std::vector<int> someIds() {
  std::vector<int> ids;
  for (int i = 0; i < 20; ++i) ids.push_back((i * 17 + i * i * 3 + 5) % 61);
  return ids;
}

TEST(NewFamilies, LoadThroughTheTable) {
  for (const FamilyCase& fc : cases()) {
    SCOPED_TRACE(fc.name);
    auto loaded = attn::io::loadModelFolder(writeCase(fc).string());
    ASSERT_TRUE(loaded.ok()) << loaded.error().message();
    const attn::model::Config& c = loaded->weights->config;
    EXPECT_EQ(c.modelType, fc.config.at("model_type").get<std::string>());
    EXPECT_EQ(c.headDim(), fc.config.value("head_dim", 8));
    EXPECT_NE(attn::io::findFamily(c.modelType), nullptr);
    if (fc.name == "phi3_partial") {
      EXPECT_EQ(c.rotaryDims, 4);
    }
    if (fc.name == "gemma2") {
      EXPECT_EQ(c.layerWindows, (std::vector<int>{4, 0, 4}));  // even layers slide
      EXPECT_FLOAT_EQ(c.queryScale, static_cast<float>(1 / std::sqrt(24.0)));
    }
    if (fc.dtype == "BF16") {
      EXPECT_EQ(loaded->weights->storedAs.rfind("BF16", 0), 0u);
    }
  }
}

TEST(NewFamilies, MatchPyTorchReference) {
  const std::vector<FamilyCase> all = cases();
  std::vector<fs::path> dirs;
  for (const FamilyCase& fc : all) dirs.push_back(writeCase(fc));
  const std::vector<int> ids = someIds();
  std::vector<modeltest::Reference> refs;
  std::string problem;
  bool skip = false;
  const bool ran = modeltest::runTorchReference("new_families", dirs, ids, refs, problem, skip);
  if (skip) GTEST_SKIP() << "python3 with torch is not installed (ATTNSCOPE_LIVE_TORCH)";
  ASSERT_TRUE(ran) << problem;
  for (std::size_t i = 0; i < all.size(); ++i) {
    SCOPED_TRACE(all[i].name);
    auto loaded = attn::io::loadModelFolder(dirs[i].string());
    ASSERT_TRUE(loaded.ok()) << loaded.error().message();
    auto session = attn::model::forward(loaded->weights, ids);
    ASSERT_TRUE(session.ok());
    const modeltest::Reference& ref = refs[i];
    const attn::model::Config& c = session->config();
    ASSERT_EQ(ref.attention.size(), static_cast<std::size_t>(c.nLayer));
    double worst = 0;
    for (int l = 0; l < c.nLayer; ++l)
      for (int h = 0; h < c.nHead; ++h) {
        const attn::Matrix a = session->attention(l, h);
        for (std::size_t q = 0; q < ids.size(); ++q)
          for (std::size_t k = 0; k < ids.size(); ++k)
            worst = std::max(worst, std::abs(a(static_cast<long>(q), static_cast<long>(k)) -
                                             ref.attention[static_cast<std::size_t>(l)][static_cast<std::size_t>(h)][q][k]));
      }
    EXPECT_LT(worst, all[i].tolerance) << "largest attention difference";
    // The reference's softmax and top 10 against the engine's.
    const double mx = *std::max_element(ref.logits.begin(), ref.logits.end());
    double sum = 0;
    for (double z : ref.logits) sum += std::exp(z - mx);
    std::vector<int> order(ref.logits.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return ref.logits[static_cast<std::size_t>(a)] > ref.logits[static_cast<std::size_t>(b)];
    });
    const auto top = session->topK(10);
    ASSERT_EQ(top.size(), 10u);
    for (std::size_t k = 0; k < 10; ++k) {
      EXPECT_EQ(top[k].id, order[k]) << "rank " << k;
      EXPECT_NEAR(top[k].probability, std::exp(ref.logits[static_cast<std::size_t>(order[k])] - mx) / sum,
                  all[i].tolerance);
    }
    // Not a degenerate case: attention is far from uniform somewhere.
    EXPECT_GT(session->attention(0, 0).maxCoeff(), 0.3f);
  }
}

// Each new family's options refused or read, naming the key.
TEST(NewFamilies, ConfigKeysReadOrRefusedByName) {
  struct Edit {
    std::string family, key;
    json value;
    std::string fragment;
  };
  const std::vector<Edit> edits = {
      {"qwen3", "use_sliding_window", true, "field 'use_sliding_window'"},
      {"qwen3", "rope_theta", nullptr, "field 'rope_theta': is null"},
      {"qwen3", "rms_norm_eps", nullptr, "field 'rms_norm_eps': is null"},
      {"gemma2", "query_pre_attn_scalar", nullptr, "field 'query_pre_attn_scalar': is null"},
      {"gemma2", "hidden_activation", "gelu_10", "field 'hidden_activation'"},
      {"gemma2", "layer_types", json::array({"full_attention"}), "field 'layer_types'"},
      {"phi3", "rope_scaling", json{{"type", "longrope"}}, "field 'rope_scaling.short_factor': missing"},
      {"phi3", "partial_rotary_factor", 0.375, "field 'partial_rotary_factor'"},
      {"phi3", "quantization_config", json::object(), "field 'quantization_config': is not a setting"},
  };
  for (const Edit& e : edits) {
    SCOPED_TRACE(e.family + " " + e.key);
    FamilyCase fc;
    for (const FamilyCase& c : cases())
      if (c.name == e.family) fc = c;
    fc.name = "cfg_" + e.family + "_" + e.key;
    fc.config[e.key] = e.value;
    auto loaded = attn::io::loadModelFolder(writeCase(fc).string());
    ASSERT_FALSE(loaded.ok());
    EXPECT_NE(loaded.error().message().find(e.fragment), std::string::npos) << loaded.error().message();
    EXPECT_NE(loaded.error().message().find("config.json"), std::string::npos);
  }
}

}  // namespace
}  // namespace test_formats_model_families
