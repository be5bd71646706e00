// Writes a random-weight Hugging Face model folder of a real model's shape, for benchmarks
// (`attnscope bench --model`, scripts/bench-model-vs-pytorch.sh) and for the large-model
// checks that do not belong in ctest (a 1.1B BF16 Llama is 2.2 GB):
//
//   build/gen_checkpoint --preset gpt2-small --dtype f32 --out /tmp/gpt2s
//   build/gen_checkpoint --preset llama-1.1b --dtype bf16 --out /tmp/tinyllama
//
// The folder holds config.json, model.safetensors and, for gpt2, a byte-level vocab.json +
// merges.txt (the 256 byte tokens and one merge; the gpt2 checkpoint carries the attn.bias
// mask buffers as the published files do, so gpt2-small is 548 MB in F32). Tensors are written one at a time, each
// generated from its own seed (deriveSeed(seed, name)), so a 1.1B checkpoint never needs more
// than one tensor in memory. Values: weights uniform with std 0.02 (as Hugging Face's
// initializer_range), norm weights 1 ± 0.1, biases std 0.02; BF16 / F16 values are the F32
// values rounded to nearest even, so every dtype of one seed holds the same weights up to
// that rounding.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/base/random.h"
#include "core/models/gpt2/bpe.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::ordered_json;

struct Shape {
  std::string family;  // gpt2, llama, qwen2, mistral, gpt_neox
  int layers, hidden, heads, headsKv, inner, vocab, positions;
  bool tied;
};

// Real models' shapes (the names say which).
const std::map<std::string, Shape>& presets() {
  static const std::map<std::string, Shape> table = {
      {"gpt2-small", {"gpt2", 12, 768, 12, 12, 3072, 50257, 1024, true}},
      {"gpt2-medium", {"gpt2", 24, 1024, 16, 16, 4096, 50257, 1024, true}},
      {"llama-1.1b", {"llama", 22, 2048, 32, 4, 5632, 32000, 2048, false}},  // TinyLlama
      {"smollm-135m", {"llama", 30, 576, 9, 3, 1536, 49152, 2048, true}},
      {"qwen2-0.5b", {"qwen2", 24, 896, 14, 2, 4864, 151936, 32768, true}},
      {"mistral-tiny", {"mistral", 4, 512, 8, 2, 1408, 32000, 4096, false}},
      {"pythia-160m", {"gpt_neox", 12, 768, 12, 12, 3072, 50304, 2048, false}},
  };
  return table;
}

std::uint16_t toHalfBits(float value, bool bf16) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, 4);
  if (bf16) {  // round to nearest even (values here are finite)
    return static_cast<std::uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
  }
  // IEEE half, round to nearest even; the values here are far from half's range limits.
  const std::uint32_t sign = (bits >> 16) & 0x8000u;
  const int exponent = static_cast<int>((bits >> 23) & 0xFF) - 127 + 15;
  std::uint32_t mantissa = bits & 0x7FFFFFu;
  if (exponent <= 0) {  // subnormal or zero half
    if (exponent < -10) return static_cast<std::uint16_t>(sign);
    mantissa |= 0x800000u;
    const int shift = 14 - exponent;
    std::uint32_t half = mantissa >> shift;
    const std::uint32_t rest = mantissa & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rest > mid || (rest == mid && (half & 1u))) ++half;
    return static_cast<std::uint16_t>(sign | half);
  }
  std::uint32_t half = (static_cast<std::uint32_t>(exponent) << 10) | (mantissa >> 13);
  const std::uint32_t rest = mantissa & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;
  return static_cast<std::uint16_t>(sign | half);
}

struct TensorPlan {
  std::string name;
  std::vector<std::int64_t> shape;
  float std, mean;
  bool causalMask = false;  // GPT-2's attn.bias buffer: ones on and below the diagonal
  std::int64_t count() const {
    std::int64_t c = 1;
    for (auto d : shape) c *= d;
    return c;
  }
};

std::vector<TensorPlan> planTensors(const Shape& s) {
  std::vector<TensorPlan> out;
  const std::int64_t E = s.hidden, F = s.inner, V = s.vocab, dh = s.hidden / s.heads;
  const std::int64_t Q = s.heads * dh, KV = s.headsKv * dh;
  auto weight = [&](std::string name, std::vector<std::int64_t> shape) {
    out.push_back({std::move(name), std::move(shape), 0.02f, 0.0f});
  };
  auto bias = [&](std::string name, std::int64_t n) { out.push_back({std::move(name), {n}, 0.02f, 0.0f}); };
  auto norm = [&](const std::string& name, bool withBias) {
    out.push_back({name + ".weight", {E}, 0.1f, 1.0f});
    if (withBias) bias(name + ".bias", E);
  };
  if (s.family == "gpt2") {
    weight("wte.weight", {V, E});
    out.push_back({"wpe.weight", {s.positions, E}, 0.01f, 0.0f});
    for (int l = 0; l < s.layers; ++l) {
      const std::string p = "h." + std::to_string(l) + ".";
      norm(p + "ln_1", true);
      // The causal-mask buffer the published GPT-2 files carry (50 MB of GPT-2 small's
      // 548 MB); attnscope skips it, as it must skip the real one.
      out.push_back({p + "attn.bias", {1, 1, s.positions, s.positions}, 0.0f, 0.0f, true});
      weight(p + "attn.c_attn.weight", {E, 3 * E});
      bias(p + "attn.c_attn.bias", 3 * E);
      weight(p + "attn.c_proj.weight", {E, E});
      bias(p + "attn.c_proj.bias", E);
      norm(p + "ln_2", true);
      weight(p + "mlp.c_fc.weight", {E, F});
      bias(p + "mlp.c_fc.bias", F);
      weight(p + "mlp.c_proj.weight", {F, E});
      bias(p + "mlp.c_proj.bias", E);
    }
    norm("ln_f", true);
  } else if (s.family == "gpt_neox") {
    weight("gpt_neox.embed_in.weight", {V, E});
    for (int l = 0; l < s.layers; ++l) {
      const std::string p = "gpt_neox.layers." + std::to_string(l) + ".";
      norm(p + "input_layernorm", true);
      norm(p + "post_attention_layernorm", true);
      weight(p + "attention.query_key_value.weight", {3 * E, E});
      bias(p + "attention.query_key_value.bias", 3 * E);
      weight(p + "attention.dense.weight", {E, E});
      bias(p + "attention.dense.bias", E);
      weight(p + "mlp.dense_h_to_4h.weight", {F, E});
      bias(p + "mlp.dense_h_to_4h.bias", F);
      weight(p + "mlp.dense_4h_to_h.weight", {E, F});
      bias(p + "mlp.dense_4h_to_h.bias", E);
    }
    norm("gpt_neox.final_layer_norm", true);
    if (!s.tied) weight("embed_out.weight", {V, E});
  } else {  // llama, mistral, qwen2
    weight("model.embed_tokens.weight", {V, E});
    for (int l = 0; l < s.layers; ++l) {
      const std::string p = "model.layers." + std::to_string(l) + ".";
      norm(p + "input_layernorm", false);
      weight(p + "self_attn.q_proj.weight", {Q, E});
      weight(p + "self_attn.k_proj.weight", {KV, E});
      weight(p + "self_attn.v_proj.weight", {KV, E});
      if (s.family == "qwen2") {
        bias(p + "self_attn.q_proj.bias", Q);
        bias(p + "self_attn.k_proj.bias", KV);
        bias(p + "self_attn.v_proj.bias", KV);
      }
      weight(p + "self_attn.o_proj.weight", {E, Q});
      norm(p + "post_attention_layernorm", false);
      weight(p + "mlp.gate_proj.weight", {F, E});
      weight(p + "mlp.up_proj.weight", {F, E});
      weight(p + "mlp.down_proj.weight", {E, F});
    }
    norm("model.norm", false);
    if (!s.tied) weight("lm_head.weight", {V, E});
  }
  return out;
}

ordered_json configJson(const Shape& s) {
  if (s.family == "gpt2") {
    return {{"model_type", "gpt2"},       {"n_layer", s.layers},  {"n_head", s.heads},
            {"n_embd", s.hidden},          {"n_inner", s.inner},   {"n_positions", s.positions},
            {"vocab_size", s.vocab},       {"layer_norm_epsilon", 1e-5},
            {"activation_function", "gelu_new"}};
  }
  ordered_json c = {{"model_type", s.family},
                    {"num_hidden_layers", s.layers},
                    {"hidden_size", s.hidden},
                    {"num_attention_heads", s.heads},
                    {"intermediate_size", s.inner},
                    {"max_position_embeddings", s.positions},
                    {"vocab_size", s.vocab},
                    {"tie_word_embeddings", s.tied}};
  if (s.family == "gpt_neox") {
    c["rotary_pct"] = 0.25;
    c["rotary_emb_base"] = 10000;
    c["layer_norm_eps"] = 1e-5;
    c["hidden_act"] = "gelu";
    c["use_parallel_residual"] = true;
  } else {
    c["num_key_value_heads"] = s.headsKv;
    c["rms_norm_eps"] = 1e-5;
    c["rope_theta"] = s.family == "qwen2" ? 1000000.0 : 10000.0;
    c["hidden_act"] = "silu";
    if (s.family == "mistral") c["sliding_window"] = 4096;
  }
  return c;
}

int usage() {
  std::fprintf(stderr,
               "usage: gen_checkpoint --preset NAME --out DIR [--dtype f32|bf16|f16] [--layers N]\n"
               "                      [--seed S]\n"
               "presets:");
  for (const auto& [name, shape] : presets()) std::fprintf(stderr, " %s", name.c_str());
  std::fprintf(stderr, "\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string preset, outDir, dtype = "f32";
  int layers = 0;
  std::uint64_t seed = 42;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i], value = argv[i + 1];
    if (key == "--preset") preset = value;
    else if (key == "--out") outDir = value;
    else if (key == "--dtype") dtype = value;
    else if (key == "--layers") layers = std::atoi(value.c_str());
    else if (key == "--seed") seed = std::strtoull(value.c_str(), nullptr, 10);
    else return usage();
  }
  if (argc % 2 != 1 || preset.empty() || outDir.empty() || !presets().count(preset) ||
      (dtype != "f32" && dtype != "bf16" && dtype != "f16") || layers < 0) {
    return usage();
  }
  Shape shape = presets().at(preset);
  if (layers > 0) shape.layers = layers;
  const std::vector<TensorPlan> plan = planTensors(shape);
  const int elementBytes = dtype == "f32" ? 4 : 2;
  const char* dtypeName = dtype == "f32" ? "F32" : dtype == "bf16" ? "BF16" : "F16";

  // 1 the header: every tensor's offsets, then padding to 8 bytes
  ordered_json header = ordered_json::object();
  std::uint64_t offset = 0;
  for (const TensorPlan& t : plan) {
    const std::uint64_t bytes = static_cast<std::uint64_t>(t.count()) * elementBytes;
    header[t.name] = {{"dtype", dtypeName}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  while (text.size() % 8 != 0) text += ' ';

  // 2 the data, one tensor at a time
  std::error_code ec;
  fs::create_directories(outDir, ec);
  const fs::path dir(outDir);
  std::ofstream file(dir / "model.safetensors", std::ios::binary | std::ios::trunc);
  const std::uint64_t length = text.size();
  file.write(reinterpret_cast<const char*>(&length), 8);  // little-endian host
  file << text;
  std::vector<char> buffer;
  for (const TensorPlan& t : plan) {
    attn::SplitMix64 rng(attn::deriveSeed(seed, t.name));
    const float a = t.std * std::sqrt(3.0f);  // uniform on [-a, a] has std a/√3
    const std::int64_t count = t.count();
    buffer.resize(static_cast<std::size_t>(count) * elementBytes);
    for (std::int64_t i = 0; i < count; ++i) {
      const std::int64_t P = t.shape.back();
      const float v = t.causalMask ? (i % P <= (i / P) % P ? 1.0f : 0.0f)
                                   : t.mean + a * rng.uniformSymmetric();
      if (elementBytes == 4) {
        std::memcpy(buffer.data() + 4 * i, &v, 4);
      } else {
        const std::uint16_t bits = toHalfBits(v, dtype == "bf16");
        std::memcpy(buffer.data() + 2 * i, &bits, 2);
      }
    }
    file.write(buffer.data(), static_cast<std::streamsize>(buffer.size()));
  }
  file.close();
  if (!file) {
    std::fprintf(stderr, "gen_checkpoint: %s: write failed\n", (dir / "model.safetensors").c_str());
    return 2;
  }

  // 3 config.json and, for gpt2, a byte-level tokenizer
  std::ofstream(dir / "config.json") << configJson(shape).dump(2) << '\n';
  if (shape.family == "gpt2") {
    nlohmann::json vocab = nlohmann::json::object();
    for (int b = 0; b < 256; ++b) {
      std::string token;
      attn::appendUtf8(token, attn::gpt2::byteToUnicode()[static_cast<std::size_t>(b)]);
      vocab[token] = b;
    }
    vocab["\xC4\xA0t"] = 256;  // "Ġt"
    std::ofstream(dir / "vocab.json") << vocab.dump();
    std::ofstream(dir / "merges.txt") << "#version: 0.2\n\xC4\xA0 t\n";
  }
  std::printf("gen_checkpoint: wrote %s (%s, %s, %d layers, %.1f MB)\n", outDir.c_str(),
              preset.c_str(), dtypeName, shape.layers,
              static_cast<double>(fs::file_size(dir / "model.safetensors")) / 1e6);
  return 0;
}
