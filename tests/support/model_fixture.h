// Small random decoder checkpoints in the exact Hugging Face layout of each family the
// engine runs (gpt2, llama with GQA, qwen2 with q/k/v biases, mistral with a sliding window,
// gpt_neox with partial rotary), written by the tests themselves: config.json and
// model.safetensors, or shards with model.safetensors.index.json, in F32, F16 or BF16.
// Plus an independent plain-loop reference forward pass in double precision, written from
// the Hugging Face modelling equations over the named tensors (it shares no code with
// core/models). tests/formats/hf_reference.py is the same forward pass in PyTorch.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/gpt2_fixture.h"

namespace modeltest {

namespace fs = std::filesystem;
using nlohmann::json;
using gpt2test::NamedTensor;
using gpt2test::RawTensor;

// One family's shape and options.
struct Spec {
  std::string modelType = "llama";
  int layers = 2, heads = 4, headsKv = 2, hidden = 32, inner = 48, positions = 64, vocab = 61;
  double theta = 10000.0, eps = 1e-5, rotaryPct = 0.25, linearFactor = 1.0;
  int slidingWindow = 0;  // mistral
  bool tied = false;
  bool parallelResidual = true;  // gpt_neox
  int headDim() const { return hidden / heads; }
};

inline Spec gpt2Spec() {
  Spec s;
  s.modelType = "gpt2";
  s.headsKv = s.heads;
  s.inner = 4 * s.hidden;
  s.tied = true;
  s.vocab = 257;  // the 256 byte tokens and one merge (writeFolder's vocab.json)
  return s;
}
inline Spec llamaSpec() { return Spec{}; }  // GQA: 4 query heads share 2 KV heads
inline Spec qwen2Spec() {
  Spec s;
  s.modelType = "qwen2";
  s.tied = true;  // as Qwen2.5-0.5B
  s.theta = 1000000.0;
  return s;
}
inline Spec mistralSpec() {
  Spec s;
  s.modelType = "mistral";
  s.headsKv = 1;
  s.slidingWindow = 4;
  return s;
}
inline Spec neoxSpec() {
  Spec s;
  s.modelType = "gpt_neox";
  s.headsKv = s.heads;
  s.inner = 4 * s.hidden;
  s.rotaryPct = 0.25;  // 2 of 8 dimensions per head, as Pythia
  return s;
}

using Tensors = std::map<std::string, NamedTensor>;

// Random tensors with the family's names. Values are k / 2^s with |k| < 128, exact in F16
// and BF16, large enough that attention is far from uniform.
inline Tensors makeTensors(const Spec& c, std::uint64_t seed) {
  Tensors out;
  attn::SplitMix64 generator(seed);  // core/base/random.h
  auto next = [&]() { return generator.next(); };
  auto add = [&](const std::string& name, std::vector<std::int64_t> shape, int range, int shift,
                 float offset = 0) {
    std::int64_t count = 1;
    for (auto d : shape) count *= d;
    std::vector<float> v(static_cast<std::size_t>(count));
    for (float& x : v) {
      const int k = static_cast<int>(next() % static_cast<std::uint64_t>(2 * range + 1)) - range;
      x = offset + std::ldexp(static_cast<float>(k), -shift);
    }
    out[name] = NamedTensor{std::move(shape), std::move(v)};
  };
  const std::int64_t E = c.hidden, F = c.inner, V = c.vocab, dh = c.headDim();
  const std::int64_t Q = c.heads * dh, KV = c.headsKv * dh;
  if (c.modelType == "gpt2") {
    add("wte.weight", {V, E}, 127, 6);
    add("wpe.weight", {c.positions, E}, 127, 8);
    for (int l = 0; l < c.layers; ++l) {
      const std::string p = "h." + std::to_string(l) + ".";
      add(p + "ln_1.weight", {E}, 63, 7, 1.0f);
      add(p + "ln_1.bias", {E}, 100, 9);
      add(p + "attn.c_attn.weight", {E, 3 * E}, 127, 6);
      add(p + "attn.c_attn.bias", {3 * E}, 100, 8);
      add(p + "attn.c_proj.weight", {E, E}, 127, 7);
      add(p + "attn.c_proj.bias", {E}, 100, 9);
      add(p + "ln_2.weight", {E}, 63, 7, 1.0f);
      add(p + "ln_2.bias", {E}, 100, 9);
      add(p + "mlp.c_fc.weight", {E, F}, 127, 7);
      add(p + "mlp.c_fc.bias", {F}, 100, 8);
      add(p + "mlp.c_proj.weight", {F, E}, 127, 8);
      add(p + "mlp.c_proj.bias", {E}, 100, 9);
    }
    add("ln_f.weight", {E}, 63, 7, 1.0f);
    add("ln_f.bias", {E}, 100, 9);
  } else if (c.modelType == "gpt_neox") {
    add("gpt_neox.embed_in.weight", {V, E}, 127, 6);
    for (int l = 0; l < c.layers; ++l) {
      const std::string p = "gpt_neox.layers." + std::to_string(l) + ".";
      add(p + "input_layernorm.weight", {E}, 63, 7, 1.0f);
      add(p + "input_layernorm.bias", {E}, 100, 9);
      add(p + "post_attention_layernorm.weight", {E}, 63, 7, 1.0f);
      add(p + "post_attention_layernorm.bias", {E}, 100, 9);
      add(p + "attention.query_key_value.weight", {3 * E, E}, 127, 6);
      add(p + "attention.query_key_value.bias", {3 * E}, 100, 8);
      add(p + "attention.dense.weight", {E, E}, 127, 7);
      add(p + "attention.dense.bias", {E}, 100, 9);
      add(p + "mlp.dense_h_to_4h.weight", {F, E}, 127, 7);
      add(p + "mlp.dense_h_to_4h.bias", {F}, 100, 8);
      add(p + "mlp.dense_4h_to_h.weight", {E, F}, 127, 8);
      add(p + "mlp.dense_4h_to_h.bias", {E}, 100, 9);
    }
    add("gpt_neox.final_layer_norm.weight", {E}, 63, 7, 1.0f);
    add("gpt_neox.final_layer_norm.bias", {E}, 100, 9);
    add("embed_out.weight", {V, E}, 127, 7);
  } else {  // llama, mistral, qwen2
    add("model.embed_tokens.weight", {V, E}, 127, 6);
    for (int l = 0; l < c.layers; ++l) {
      const std::string p = "model.layers." + std::to_string(l) + ".";
      add(p + "input_layernorm.weight", {E}, 63, 7, 1.0f);
      add(p + "self_attn.q_proj.weight", {Q, E}, 127, 6);
      add(p + "self_attn.k_proj.weight", {KV, E}, 127, 6);
      add(p + "self_attn.v_proj.weight", {KV, E}, 127, 6);
      if (c.modelType == "qwen2") {
        add(p + "self_attn.q_proj.bias", {Q}, 100, 7);
        add(p + "self_attn.k_proj.bias", {KV}, 100, 7);
        add(p + "self_attn.v_proj.bias", {KV}, 100, 7);
      }
      add(p + "self_attn.o_proj.weight", {E, Q}, 127, 7);
      add(p + "post_attention_layernorm.weight", {E}, 63, 7, 1.0f);
      add(p + "mlp.gate_proj.weight", {F, E}, 127, 6);
      add(p + "mlp.up_proj.weight", {F, E}, 127, 6);
      add(p + "mlp.down_proj.weight", {E, F}, 127, 8);
    }
    add("model.norm.weight", {E}, 63, 7, 1.0f);
    if (!c.tied) add("lm_head.weight", {V, E}, 127, 7);
  }
  return out;
}

inline json configJson(const Spec& c) {
  if (c.modelType == "gpt2") {
    return {{"model_type", "gpt2"}, {"activation_function", "gelu_new"},
            {"n_layer", c.layers},  {"n_head", c.heads},
            {"n_embd", c.hidden},   {"n_inner", c.inner},
            {"n_positions", c.positions}, {"vocab_size", c.vocab},
            {"layer_norm_epsilon", c.eps}, {"bos_token_id", 0}, {"eos_token_id", 0}};
  }
  json out = {{"model_type", c.modelType},
              {"hidden_size", c.hidden},
              {"intermediate_size", c.inner},
              {"num_hidden_layers", c.layers},
              {"num_attention_heads", c.heads},
              {"max_position_embeddings", c.positions},
              {"vocab_size", c.vocab},
              {"tie_word_embeddings", c.tied},
              {"bos_token_id", 1},
              {"eos_token_id", 2},
              {"torch_dtype", "float32"}};
  if (c.modelType == "gpt_neox") {
    out["layer_norm_eps"] = c.eps;
    out["rotary_pct"] = c.rotaryPct;
    out["rotary_emb_base"] = c.theta;
    out["hidden_act"] = "gelu";
    out["use_parallel_residual"] = c.parallelResidual;
    return out;
  }
  out["num_key_value_heads"] = c.headsKv;
  out["rms_norm_eps"] = c.eps;
  out["rope_theta"] = c.theta;
  out["hidden_act"] = "silu";
  out["rope_scaling"] =
      c.linearFactor == 1.0 ? json(nullptr) : json{{"type", "linear"}, {"factor", c.linearFactor}};
  if (c.modelType == "mistral")
    out["sliding_window"] = c.slidingWindow > 0 ? json(c.slidingWindow) : json(nullptr);
  if (c.modelType == "qwen2") {
    out["use_sliding_window"] = false;
    out["sliding_window"] = 4096;
    out["max_window_layers"] = 21;
  }
  return out;
}

// Writes FOLDER/config.json and the tensors in `dtype`: one model.safetensors (shards <= 1)
// or `shards` files model-0000i-of-0000n.safetensors with model.safetensors.index.json.
inline fs::path writeFolder(const std::string& name, const Spec& spec, const Tensors& tensors,
                            const std::string& dtype = "F32", int shards = 1) {
  fs::path dir = gpt2test::freshDir(name);
  gpt2test::writeFile(dir / "config.json", configJson(spec).dump(2));
  if (spec.modelType == "gpt2") {  // GPT-2's tokenizer files: 256 byte tokens and "Ġt"
    json vocab = json::object();
    for (int i = 0; i < 256; ++i) vocab[gpt2test::mapped(std::string(1, static_cast<char>(i)))] = i;
    vocab[gpt2test::mapped(" t")] = 256;
    gpt2test::writeFile(dir / "vocab.json", vocab.dump());
    gpt2test::writeFile(dir / "merges.txt", "#version: 0.2\n" + gpt2test::mapped(" ") + " t\n");
  }
  std::vector<std::vector<RawTensor>> parts(static_cast<std::size_t>(std::max(shards, 1)));
  std::size_t i = 0;
  for (const auto& [tensorName, t] : tensors) {
    parts[i++ % parts.size()].push_back(
        {tensorName, dtype, t.shape, gpt2test::encodeFloats(t.values, dtype)});
  }
  if (parts.size() == 1) {
    gpt2test::writeFile(dir / "model.safetensors",
                         gpt2test::safetensorsBytes(parts[0], json{{"format", "pt"}}));
    return dir;
  }
  json map = json::object();
  for (std::size_t s = 0; s < parts.size(); ++s) {
    char file[64];
    std::snprintf(file, sizeof file, "model-%05zu-of-%05zu.safetensors", s + 1, parts.size());
    for (const RawTensor& t : parts[s]) map[t.name] = file;
    gpt2test::writeFile(dir / file, gpt2test::safetensorsBytes(parts[s], json{{"format", "pt"}}));
  }
  gpt2test::writeFile(dir / "model.safetensors.index.json",
                       json{{"metadata", {{"total_size", 0}}}, {"weight_map", map}}.dump(2));
  return dir;
}

// A byte-level BPE tokenizer.json for a non-gpt2 folder (spec.vocab >= 259): ids 0..255 the
// bytes, 256 "Ġt" (one merge), 257 "<|endoftext|>" and 258 "<s>", both special added
// tokens; when `bos`, a TemplateProcessing post-processor puts "<s>" first, as Llama 3's.
inline void writeByteLevelTokenizerJson(const fs::path& dir, bool bos) {
  json vocab = json::object();
  for (int i = 0; i < 256; ++i) vocab[gpt2test::mapped(std::string(1, static_cast<char>(i)))] = i;
  vocab[gpt2test::mapped(" t")] = 256;
  json added = json::array();
  added.push_back({{"id", 257}, {"content", "<|endoftext|>"}, {"special", true}});
  added.push_back({{"id", 258}, {"content", "<s>"}, {"special", true}});
  json t = {{"version", "1.0"},
            {"added_tokens", added},
            {"normalizer", nullptr},
            {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}}},
            {"model",
             {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array({gpt2test::mapped(" ") + " t"})}}}};
  if (bos) {
    t["post_processor"] = {
        {"type", "TemplateProcessing"},
        {"single", json::array({{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                                {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
        {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {258}}, {"tokens", {"<s>"}}}}}}};
  } else {
    t["post_processor"] = nullptr;
  }
  gpt2test::writeFile(dir / "tokenizer.json", t.dump());
}

// =======================================================================================
// Reference forward pass: plain loops, double precision, the whole sequence at once
// =======================================================================================

struct Reference {
  std::vector<std::vector<std::vector<std::vector<double>>>> attention;  // [l][h][i][j]
  std::vector<double> logits;                                            // after the last token
};

using Rows = std::vector<std::vector<double>>;  // n x width

// y = x·Wᵀ + b for an nn.Linear weight [out, in] (conv = false) or x·W + b for a Conv1D
// [in, out] (conv = true).
inline Rows linear(const Rows& x, const NamedTensor& w, const NamedTensor* b, bool conv) {
  const std::size_t in = static_cast<std::size_t>(conv ? w.shape[0] : w.shape[1]);
  const std::size_t out = static_cast<std::size_t>(conv ? w.shape[1] : w.shape[0]);
  Rows y(x.size(), std::vector<double>(out, 0.0));
  for (std::size_t r = 0; r < x.size(); ++r)
    for (std::size_t o = 0; o < out; ++o) {
      double sum = b ? b->values[o] : 0.0;
      for (std::size_t i = 0; i < in; ++i)
        sum += x[r][i] * (conv ? w.values[i * out + o] : w.values[o * in + i]);
      y[r][o] = sum;
    }
  return y;
}

inline Rows norm(const Rows& x, const NamedTensor& w, const NamedTensor* b, double eps) {
  Rows y = x;
  for (std::size_t r = 0; r < x.size(); ++r) {
    const double n = static_cast<double>(x[r].size());
    double mean = 0, var = 0;
    if (b) {
      for (double v : x[r]) mean += v / n;
      for (double v : x[r]) var += (v - mean) * (v - mean) / n;
    } else {
      for (double v : x[r]) var += v * v / n;  // RMSNorm: no centring
    }
    for (std::size_t i = 0; i < x[r].size(); ++i)
      y[r][i] = (x[r][i] - mean) / std::sqrt(var + eps) * w.values[i] + (b ? b->values[i] : 0.0);
  }
  return y;
}

// rotate_half on the first `dims` of a head's vector at `pos` (Hugging Face's layout).
inline void rope(std::vector<double>& v, std::size_t offset, int dims, int pos, double theta,
                 double factor) {
  const int half = dims / 2;
  for (int i = 0; i < half; ++i) {
    const double angle = pos / factor * std::pow(theta, -2.0 * i / dims);
    const double a = v[offset + static_cast<std::size_t>(i)];
    const double b = v[offset + static_cast<std::size_t>(i + half)];
    v[offset + static_cast<std::size_t>(i)] = a * std::cos(angle) - b * std::sin(angle);
    v[offset + static_cast<std::size_t>(i + half)] = b * std::cos(angle) + a * std::sin(angle);
  }
}

inline Reference referenceForward(const Spec& c, const Tensors& t, const std::vector<int>& ids) {
  const bool gpt2 = c.modelType == "gpt2", neox = c.modelType == "gpt_neox";
  auto at = [&](const std::string& name) -> const NamedTensor& { return t.at(name); };
  auto opt = [&](const std::string& name) -> const NamedTensor* {
    auto it = t.find(name);
    return it == t.end() ? nullptr : &it->second;
  };
  const std::size_t n = ids.size(), E = static_cast<std::size_t>(c.hidden);
  const int H = c.heads, Hkv = c.headsKv, dh = c.headDim();
  const int rotary = gpt2 ? 0 : neox ? static_cast<int>(dh * c.rotaryPct) : dh;
  const std::string embed = gpt2 ? "wte.weight" : neox ? "gpt_neox.embed_in.weight"
                                                       : "model.embed_tokens.weight";
  Rows x(n, std::vector<double>(E));
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t e = 0; e < E; ++e) {
      x[i][e] = at(embed).values[static_cast<std::size_t>(ids[i]) * E + e];
      if (gpt2) x[i][e] += at("wpe.weight").values[i * E + e];
    }
  auto act = [&](double v) {
    if (gpt2) return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
    if (neox) return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
    return v / (1 + std::exp(-v));  // silu
  };
  Reference ref;
  for (int l = 0; l < c.layers; ++l) {
    const std::string p = gpt2 ? "h." + std::to_string(l) + "."
                          : neox ? "gpt_neox.layers." + std::to_string(l) + "."
                                 : "model.layers." + std::to_string(l) + ".";
    const std::string n1 = gpt2 ? "ln_1" : "input_layernorm";
    const std::string n2 = gpt2 ? "ln_2" : "post_attention_layernorm";
    Rows a = norm(x, at(p + n1 + ".weight"), opt(p + n1 + ".bias"), c.eps);
    // q, k, v per head: [i][h·dh + d]
    Rows q, k, v;
    if (gpt2) {
      Rows qkv = linear(a, at(p + "attn.c_attn.weight"), opt(p + "attn.c_attn.bias"), true);
      for (auto& row : qkv) {
        q.emplace_back(row.begin(), row.begin() + static_cast<long>(E));
        k.emplace_back(row.begin() + static_cast<long>(E), row.begin() + static_cast<long>(2 * E));
        v.emplace_back(row.begin() + static_cast<long>(2 * E), row.end());
      }
    } else if (neox) {  // rows of the weight are [H, 3, dh]
      Rows qkv = linear(a, at(p + "attention.query_key_value.weight"),
                        opt(p + "attention.query_key_value.bias"), false);
      q = k = v = Rows(n, std::vector<double>(E));
      for (std::size_t i = 0; i < n; ++i)
        for (int h = 0; h < H; ++h)
          for (int d = 0; d < dh; ++d) {
            const std::size_t base = static_cast<std::size_t>(h * 3 * dh + d);
            q[i][static_cast<std::size_t>(h * dh + d)] = qkv[i][base];
            k[i][static_cast<std::size_t>(h * dh + d)] = qkv[i][base + static_cast<std::size_t>(dh)];
            v[i][static_cast<std::size_t>(h * dh + d)] =
                qkv[i][base + 2 * static_cast<std::size_t>(dh)];
          }
    } else {
      q = linear(a, at(p + "self_attn.q_proj.weight"), opt(p + "self_attn.q_proj.bias"), false);
      k = linear(a, at(p + "self_attn.k_proj.weight"), opt(p + "self_attn.k_proj.bias"), false);
      v = linear(a, at(p + "self_attn.v_proj.weight"), opt(p + "self_attn.v_proj.bias"), false);
    }
    for (std::size_t i = 0; i < n && rotary > 0; ++i) {
      for (int h = 0; h < H; ++h)
        rope(q[i], static_cast<std::size_t>(h * dh), rotary, static_cast<int>(i), c.theta,
             c.linearFactor);
      for (int g = 0; g < Hkv; ++g)
        rope(k[i], static_cast<std::size_t>(g * dh), rotary, static_cast<int>(i), c.theta,
             c.linearFactor);
    }
    Rows ctx(n, std::vector<double>(static_cast<std::size_t>(H * dh), 0.0));
    ref.attention.emplace_back();
    for (int h = 0; h < H; ++h) {
      const int g = h / (H / Hkv);
      std::vector<std::vector<double>> A(n, std::vector<double>(n, 0.0));
      for (std::size_t i = 0; i < n; ++i) {
        std::vector<double> s(n, -INFINITY);
        double mx = -INFINITY;
        for (std::size_t j = 0; j <= i; ++j) {
          if (c.slidingWindow > 0 && static_cast<int>(i - j) >= c.slidingWindow) continue;
          double dot = 0;
          for (int d = 0; d < dh; ++d)
            dot += q[i][static_cast<std::size_t>(h * dh + d)] * k[j][static_cast<std::size_t>(g * dh + d)];
          s[j] = dot / std::sqrt(static_cast<double>(dh));
          mx = std::max(mx, s[j]);
        }
        double sum = 0;
        for (std::size_t j = 0; j <= i; ++j) sum += std::isinf(s[j]) ? 0 : std::exp(s[j] - mx);
        for (std::size_t j = 0; j <= i; ++j) A[i][j] = std::isinf(s[j]) ? 0 : std::exp(s[j] - mx) / sum;
        for (std::size_t j = 0; j <= i; ++j)
          for (int d = 0; d < dh; ++d)
            ctx[i][static_cast<std::size_t>(h * dh + d)] += A[i][j] * v[j][static_cast<std::size_t>(g * dh + d)];
      }
      ref.attention.back().push_back(std::move(A));
    }
    Rows o = gpt2 ? linear(ctx, at(p + "attn.c_proj.weight"), opt(p + "attn.c_proj.bias"), true)
             : neox ? linear(ctx, at(p + "attention.dense.weight"), opt(p + "attention.dense.bias"), false)
                    : linear(ctx, at(p + "self_attn.o_proj.weight"), opt(p + "self_attn.o_proj.bias"), false);
    auto mlp = [&](const Rows& in) {
      if (gpt2) {
        Rows h = linear(in, at(p + "mlp.c_fc.weight"), opt(p + "mlp.c_fc.bias"), true);
        for (auto& r : h) for (double& val : r) val = act(val);
        return linear(h, at(p + "mlp.c_proj.weight"), opt(p + "mlp.c_proj.bias"), true);
      }
      if (neox) {
        Rows h = linear(in, at(p + "mlp.dense_h_to_4h.weight"), opt(p + "mlp.dense_h_to_4h.bias"), false);
        for (auto& r : h) for (double& val : r) val = act(val);
        return linear(h, at(p + "mlp.dense_4h_to_h.weight"), opt(p + "mlp.dense_4h_to_h.bias"), false);
      }
      Rows gate = linear(in, at(p + "mlp.gate_proj.weight"), nullptr, false);
      Rows up = linear(in, at(p + "mlp.up_proj.weight"), nullptr, false);
      for (std::size_t r = 0; r < up.size(); ++r)
        for (std::size_t i = 0; i < up[r].size(); ++i) up[r][i] *= act(gate[r][i]);
      return linear(up, at(p + "mlp.down_proj.weight"), nullptr, false);
    };
    if (neox && c.parallelResidual) {
      Rows m = mlp(norm(x, at(p + n2 + ".weight"), opt(p + n2 + ".bias"), c.eps));
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t e = 0; e < E; ++e) x[i][e] += o[i][e] + m[i][e];
    } else {
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t e = 0; e < E; ++e) x[i][e] += o[i][e];
      Rows m = mlp(norm(x, at(p + n2 + ".weight"), opt(p + n2 + ".bias"), c.eps));
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t e = 0; e < E; ++e) x[i][e] += m[i][e];
    }
  }
  const std::string fn = gpt2 ? "ln_f" : neox ? "gpt_neox.final_layer_norm" : "model.norm";
  Rows last = {x.back()};
  last = norm(last, at(fn + ".weight"), opt(fn + ".bias"), c.eps);
  const std::string head = c.tied ? embed : neox ? "embed_out.weight" : "lm_head.weight";
  const NamedTensor& W = at(head);
  for (int tok = 0; tok < c.vocab; ++tok) {
    double z = 0;
    for (std::size_t e = 0; e < E; ++e) z += last[0][e] * W.values[static_cast<std::size_t>(tok) * E + e];
    ref.logits.push_back(z);
  }
  return ref;
}

}  // namespace modeltest
