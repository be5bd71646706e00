// The qwen3, gemma2 and phi3 GGUF rows (Family::gguf, in their family files): a file
// written here as convert_hf_to_gguf.py writes one (llama.cpp's tensor names from gguf-py's
// tensor_mapping.py, ggml dims innermost first, Gemma's norm weights stored as 1 + w, the
// {arch}.* keys) runs as the same weights in a safetensors folder: every layer's and head's
// attention within 1e-5, the logits within 1e-4.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "core/base/random.h"
#include "core/models/transformer.h"
#include "formats/gguf.h"
#include "formats/models/gguf_model.h"
#include "formats/models/model_folder.h"
#include "tests/support/gguf_writer.h"
#include "tests/support/gpt2_fixture.h"

namespace test_formats_gguf_families {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct Case {
  std::string name, type;
  json config;  // config.json (Hugging Face keys)
};

// gguf-py's names for the Hugging Face modules of these families.
std::string ggufName(const std::string& type, const std::string& hf) {
  if (hf == "model.embed_tokens.weight") return "token_embd.weight";
  if (hf == "model.norm.weight") return "output_norm.weight";
  if (hf == "lm_head.weight") return "output.weight";
  static const std::map<std::string, std::string> kLayer = {
      {"input_layernorm", "attn_norm"},         {"self_attn.q_proj", "attn_q"},
      {"self_attn.k_proj", "attn_k"},           {"self_attn.v_proj", "attn_v"},
      {"self_attn.o_proj", "attn_output"},      {"self_attn.qkv_proj", "attn_qkv"},
      {"self_attn.q_norm", "attn_q_norm"},      {"self_attn.k_norm", "attn_k_norm"},
      {"mlp.gate_proj", "ffn_gate"},            {"mlp.up_proj", "ffn_up"},
      {"mlp.gate_up_proj", "ffn_up"},           {"mlp.down_proj", "ffn_down"},
      {"pre_feedforward_layernorm", "ffn_norm"}, {"post_feedforward_layernorm", "post_ffw_norm"}};
  const std::string rest = hf.substr(std::string("model.layers.").size());
  const std::size_t dot = rest.find('.'), last = rest.rfind('.');
  const std::string module = rest.substr(dot + 1, last - dot - 1);
  std::string gguf = module == "post_attention_layernorm" ? (type == "gemma2" ? "post_attention_norm" : "ffn_norm")
                                                          : kLayer.at(module);
  return "blk." + rest.substr(0, dot) + "." + gguf + rest.substr(last);
}

struct Written {
  fs::path folder, gguf;
};

Written writeBoth(const Case& c) {
  const json& cfg = c.config;
  const std::int64_t E = cfg.at("hidden_size"), F = cfg.at("intermediate_size"), V = cfg.at("vocab_size");
  const std::int64_t H = cfg.at("num_attention_heads"), Hkv = cfg.at("num_key_value_heads");
  const std::int64_t dh = cfg.contains("head_dim") ? cfg.at("head_dim").get<std::int64_t>() : E / H;
  const int layers = cfg.at("num_hidden_layers");
  const bool gemma = c.type == "gemma2";
  attn::SplitMix64 rng(131);
  std::vector<gpt2test::RawTensor> hf;
  attn::testing::GgufWriter w;
  const std::string a = c.type + ".";
  w.string("general.architecture", c.type);
  w.u32(a + "block_count", static_cast<std::uint32_t>(layers));
  w.u32(a + "context_length", cfg.at("max_position_embeddings"));
  w.u32(a + "embedding_length", static_cast<std::uint32_t>(E));
  w.u32(a + "feed_forward_length", static_cast<std::uint32_t>(F));
  w.u32(a + "attention.head_count", static_cast<std::uint32_t>(H));
  w.u32(a + "attention.head_count_kv", static_cast<std::uint32_t>(Hkv));
  w.u32(a + "attention.key_length", static_cast<std::uint32_t>(dh));
  w.u32(a + "attention.value_length", static_cast<std::uint32_t>(dh));
  w.f32(a + "rope.freq_base", cfg.at("rope_theta").get<float>());
  w.u32(a + "rope.dimension_count",
        static_cast<std::uint32_t>(static_cast<double>(dh) * cfg.value("partial_rotary_factor", 1.0)));
  w.f32(a + "attention.layer_norm_rms_epsilon", cfg.at("rms_norm_eps").get<float>());
  if (gemma) {
    w.f32(a + "attn_logit_softcapping", cfg.at("attn_logit_softcapping").get<float>());
    w.f32(a + "final_logit_softcapping", cfg.at("final_logit_softcapping").get<float>());
    w.u32(a + "attention.sliding_window", cfg.at("sliding_window"));
  }
  auto add = [&](const std::string& name, std::vector<std::int64_t> shape, int range, int shift, float offset) {
    std::int64_t count = 1;
    for (auto d : shape) count *= d;
    std::vector<float> v(static_cast<std::size_t>(count));
    for (float& x : v) {
      const int k = static_cast<int>(rng.next() % static_cast<std::uint64_t>(2 * range + 1)) - range;
      x = offset + std::ldexp(static_cast<float>(k), -shift);
    }
    hf.push_back({name, "F32", shape, gpt2test::encodeFloats(v, "F32")});
    // the converter: Gemma's norms + 1 (Gemma2Model.modify_tensors); dims reversed
    if (gemma && name.size() > 11 && name.compare(name.size() - 11, 11, "norm.weight") == 0)
      for (float& x : v) x += 1.0f;
    std::vector<std::uint64_t> dims(shape.rbegin(), shape.rend());
    w.tensor(ggufName(c.type, name), dims, 0, std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4));
  };
  const float centre = gemma ? 0.0f : 1.0f;
  add("model.embed_tokens.weight", {V, E}, 127, 6, 0);
  for (int l = 0; l < layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    add(p + "input_layernorm.weight", {E}, 63, 7, centre);
    add(p + "post_attention_layernorm.weight", {E}, 63, 7, centre);
    if (c.type == "phi3") {
      add(p + "self_attn.qkv_proj.weight", {(H + 2 * Hkv) * dh, E}, 127, 6, 0);
      add(p + "mlp.gate_up_proj.weight", {2 * F, E}, 127, 6, 0);
    } else {
      add(p + "self_attn.q_proj.weight", {H * dh, E}, 127, 6, 0);
      add(p + "self_attn.k_proj.weight", {Hkv * dh, E}, 127, 6, 0);
      add(p + "self_attn.v_proj.weight", {Hkv * dh, E}, 127, 6, 0);
      add(p + "mlp.gate_proj.weight", {F, E}, 127, 6, 0);
      add(p + "mlp.up_proj.weight", {F, E}, 127, 6, 0);
    }
    add(p + "self_attn.o_proj.weight", {E, H * dh}, 127, 7, 0);
    add(p + "mlp.down_proj.weight", {E, F}, 127, 8, 0);
    if (c.type == "qwen3") {
      add(p + "self_attn.q_norm.weight", {dh}, 63, 7, 1.0f);
      add(p + "self_attn.k_norm.weight", {dh}, 63, 7, 1.0f);
    }
    if (gemma) {
      add(p + "pre_feedforward_layernorm.weight", {E}, 63, 7, 0.0f);
      add(p + "post_feedforward_layernorm.weight", {E}, 63, 7, 0.0f);
    }
  }
  add("model.norm.weight", {E}, 63, 7, centre);
  if (!cfg.value("tie_word_embeddings", gemma)) add("lm_head.weight", {V, E}, 127, 7, 0);
  Written out;
  out.folder = gpt2test::freshDir("gguf_families_" + c.name);
  gpt2test::writeFile(out.folder / "config.json", cfg.dump(2));
  gpt2test::writeFile(out.folder / "model.safetensors", gpt2test::safetensorsBytes(hf, json{{"format", "pt"}}));
  out.gguf = gpt2test::freshDir("gguf_families_" + c.name + "_gguf") / "m.gguf";
  gpt2test::writeFile(out.gguf, w.finish());
  return out;
}

std::vector<Case> cases() {
  const json base = {{"hidden_size", 32}, {"intermediate_size", 48}, {"num_hidden_layers", 3},
                     {"num_attention_heads", 4}, {"num_key_value_heads", 2},
                     {"max_position_embeddings", 64}, {"vocab_size", 61}, {"rms_norm_eps", 1e-6}};
  json qwen3 = base, gemma2 = base, phi3 = base;
  qwen3.update({{"model_type", "qwen3"}, {"head_dim", 12}, {"tie_word_embeddings", true},
                {"rope_theta", 1000000.0}});
  // GGUF has no query_pre_attn_scalar: llama.cpp scales by head_dim^-1/2 (but for the 27B)
  gemma2.update({{"model_type", "gemma2"}, {"head_dim", 16}, {"query_pre_attn_scalar", 16},
                 {"attn_logit_softcapping", 4.0}, {"final_logit_softcapping", 3.0},
                 {"sliding_window", 4}, {"rope_theta", 10000.0}});
  // llama.cpp runs Phi-3 without its sliding window: none in the folder either
  phi3.update({{"model_type", "phi3"}, {"tie_word_embeddings", false}, {"rope_theta", 10000.0},
               {"sliding_window", nullptr}});
  json phi3Partial = phi3;
  phi3Partial["partial_rotary_factor"] = 0.5;
  return {{"qwen3", "qwen3", qwen3}, {"gemma2", "gemma2", gemma2}, {"phi3", "phi3", phi3},
          {"phi3_partial", "phi3", phi3Partial}};
}

TEST(GgufFamilies, Qwen3Gemma2Phi3FilesEqualTheirSafetensorsFolders) {
  std::vector<int> ids;
  for (int i = 0; i < 20; ++i) ids.push_back((i * 17 + i * i * 3 + 5) % 61);  // longer than gemma2's window
  for (const Case& c : cases()) {
    const Written files = writeBoth(c);
    attn::Expected<attn::io::ModelFolder> g = attn::io::loadModelFolder(files.gguf.string());
    ASSERT_TRUE(g) << c.name << ": " << g.error().message();
    attn::Expected<attn::io::ModelFolder> s = attn::io::loadModelFolder(files.folder.string());
    ASSERT_TRUE(s) << c.name << ": " << s.error().message();
    EXPECT_EQ(g->weights->config.modelType, c.type);
    EXPECT_EQ(g->weights->config.rotaryDims, s->weights->config.rotaryDims) << c.name;
    EXPECT_EQ(g->weights->config.windowOf(0), s->weights->config.windowOf(0)) << c.name;
    attn::Expected<attn::model::DecoderRun> a = attn::model::forward(g->weights, ids);
    attn::Expected<attn::model::DecoderRun> b = attn::model::forward(s->weights, ids);
    ASSERT_TRUE(a && b) << c.name;
    double worst = 0;
    for (int l = 0; l < 3; ++l)
      for (int h = 0; h < 4; ++h)
        worst = std::max(worst, static_cast<double>((a->attention(l, h) - b->attention(l, h)).cwiseAbs().maxCoeff()));
    const double logits = (a->logits() - b->logits()).cwiseAbs().maxCoeff();
    EXPECT_LT(worst, 1e-5) << c.name;
    EXPECT_LT(logits, 1e-4) << c.name;
    std::printf("%-13s attention max |diff| %.2g, logits %.2g\n", c.name.c_str(), worst, logits);
  }
}

// Two choices llama.cpp makes that no GGUF key states, checked on metadata-only files (the
// weights' shapes do not matter to ggufConfig): llama-model.cpp's LLM_ARCH_GEMMA2 sets
// f_attention_scale to 1/√(n_embd / n_head) when n_layer is 46 (the 27B model: 4608 / 32 =
// 144, not its key_length 128) and 1/√key_length otherwise; LLM_ARCH_PHI3 sets n_swa = 0
// ("Phi SWA is currently disabled") whatever attention.sliding_window says.
TEST(GgufFamilies, Gemma2ScaleOfThe27BShapeAndPhi3WithoutItsWindowAsLlamaCpp) {
  auto config = [](const std::string& arch, int layers, int width, int heads, int keyLength, int window) {
    attn::testing::GgufWriter w;
    const std::string a = arch + ".";
    w.string("general.architecture", arch);
    w.u32(a + "block_count", static_cast<std::uint32_t>(layers));
    w.u32(a + "context_length", 8192);
    w.u32(a + "embedding_length", static_cast<std::uint32_t>(width));
    w.u32(a + "feed_forward_length", static_cast<std::uint32_t>(2 * width));
    w.u32(a + "attention.head_count", static_cast<std::uint32_t>(heads));
    w.u32(a + "attention.head_count_kv", static_cast<std::uint32_t>(heads / 2));
    w.u32(a + "attention.key_length", static_cast<std::uint32_t>(keyLength));
    w.u32(a + "attention.value_length", static_cast<std::uint32_t>(keyLength));
    w.f32(a + "rope.freq_base", 10000.0f);
    w.f32(a + "attention.layer_norm_rms_epsilon", 1e-6f);
    w.u32(a + "attention.sliding_window", static_cast<std::uint32_t>(window));
    w.tensor("token_embd.weight", {static_cast<std::uint64_t>(width), 2}, 0,
             std::string(static_cast<std::size_t>(width) * 2 * 4, '\0'));
    const std::string bytes = w.finish();
    attn::Expected<attn::io::GgufFile> file = attn::io::parseGguf(
        {reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()}, arch + ".gguf");
    if (!file) {
      ADD_FAILURE() << file.error().message();
      return attn::model::Config{};
    }
    attn::Expected<attn::model::Config> c = attn::io::ggufConfig(*file);
    if (!c) {
      ADD_FAILURE() << c.error().message();
      return attn::model::Config{};
    }
    return *c;
  };
  // gemma-2-27b: 46 layers, 4608 wide, 32 heads of 128
  const attn::model::Config g27 = config("gemma2", 46, 4608, 32, 128, 4096);
  EXPECT_NEAR(g27.scoreScale(), 1.0 / std::sqrt(144.0), 1e-7);
  // the same widths with 42 layers (the 9B's count): key_length
  const attn::model::Config g9 = config("gemma2", 42, 4608, 32, 128, 4096);
  EXPECT_NEAR(g9.scoreScale(), 1.0 / std::sqrt(128.0), 1e-7);
  EXPECT_EQ(g27.windowOf(0), 4096);  // the window on the even layers
  EXPECT_EQ(g27.windowOf(1), 0);
  // Phi-3-mini-4k: attention.sliding_window 2047 in the file, none applied
  const attn::model::Config phi = config("phi3", 32, 3072, 32, 96, 2047);
  for (int l = 0; l < 32; ++l) EXPECT_EQ(phi.windowOf(l), 0) << l;
}

}  // namespace
}  // namespace test_formats_gguf_families
