// Tiny GGUF models written by the tests (tests/support/gguf_writer.h) together with the SAME
// weights, dequantized, as a Hugging Face safetensors folder (tests/support/model_fixture.h),
// so that the GGUF path can be compared with the safetensors path. A llama file's q and k
// rows are permuted as convert_hf_to_gguf.py's LlamaModel.permute does (GGUF row 2i + s of a
// head = Hugging Face row s·d/2 + i), a qwen2 file's are not. Header-only.
#pragma once

#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "tests/support/gguf_writer.h"
#include "tests/support/model_fixture.h"

namespace ggufmodel {

namespace fs = std::filesystem;

// A llama / qwen2 shape whose widths are whole K-quant super-blocks (256).
inline modeltest::Spec tinySpec(const std::string& type = "llama") {
  modeltest::Spec s;
  s.modelType = type;
  s.layers = 2;
  s.heads = 4;
  s.headsKv = 2;
  s.hidden = 256;
  s.inner = 256;
  s.positions = 64;
  s.vocab = 300;  // 256 byte tokens + specials + a few pieces
  s.tied = false;
  return s;
}

struct Built {
  std::string gguf;                // the file's bytes
  modeltest::Tensors dequantized;  // Hugging Face names, float32 values
};

// The GGUF bytes and the dequantized Hugging Face tensors of a tiny model. Matrices
// (token_embd, attn_*, ffn_*, output) are `matrixType`, except `embedType` for token_embd
// when >= 0; norms and biases F32. No output.weight when `tied`.
// A small SentencePiece-style (llama) vocabulary of `size` >= 300 tokens: <unk>, <s>, </s>,
// the 256 byte tokens <0x00>..<0xFF>, then "▁" and pieces of the letters a..z ("▁a",
// "a", ...), each with a score (longer and earlier pieces higher) and a token type
// (2 unknown, 3 control, 6 byte, 1 normal).
struct SpmVocab {
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<std::int32_t> types;
};
inline SpmVocab spmVocab(int size) {
  SpmVocab v;
  auto add = [&](const std::string& t, float score, int type) {
    v.tokens.push_back(t);
    v.scores.push_back(score);
    v.types.push_back(type);
  };
  add("<unk>", 0, 2);
  add("<s>", 0, 3);
  add("</s>", 0, 3);
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    add(name, 0, 6);
  }
  const std::string space = "\xE2\x96\x81";
  add(space, -1, 1);
  for (char c = 'a'; c <= 'z' && static_cast<int>(v.tokens.size()) < size; ++c) add(std::string(1, c), -2, 1);
  for (char c = 'a'; c <= 'z' && static_cast<int>(v.tokens.size()) < size; ++c)
    add(space + std::string(1, c), -1.5f - 0.01f * (c - 'a'), 1);
  const char* words[] = {"he", "ll", "hell", "hello", "wo", "or", "orl", "world", "th", "the"};
  for (const char* w : words)
    if (static_cast<int>(v.tokens.size()) < size) add(space + w, -0.5f, 1);
  while (static_cast<int>(v.tokens.size()) < size) add("<extra_" + std::to_string(v.tokens.size()) + ">", -10, 4);
  return v;
}

// A tokenizer to write instead of spmVocab's: tokenizer.ggml.* as llama.cpp reads them.
struct TokenizerKeys {
  std::string model = "llama";  // or "gpt2"
  std::string pre;              // gpt2 only
  std::vector<std::string> tokens, merges;
  std::vector<float> scores;    // llama only
  std::vector<std::int32_t> types;
  int bos = -1, eos = -1;
  bool addBos = false;
};

inline Built build(const modeltest::Spec& spec, std::uint32_t matrixType, std::uint64_t seed,
                   int embedType = -1, bool spmTokenizer = true, const TokenizerKeys* keys = nullptr) {
  using attn::testing::GgufWriter;
  std::mt19937 rng(static_cast<unsigned>(seed));
  Built out;
  GgufWriter w;
  const std::string arch = spec.modelType;
  w.string("general.architecture", arch);
  w.string("general.name", "tiny " + arch);
  w.u32(arch + ".block_count", static_cast<std::uint32_t>(spec.layers));
  w.u32(arch + ".context_length", static_cast<std::uint32_t>(spec.positions));
  w.u32(arch + ".embedding_length", static_cast<std::uint32_t>(spec.hidden));
  w.u32(arch + ".feed_forward_length", static_cast<std::uint32_t>(spec.inner));
  w.u32(arch + ".attention.head_count", static_cast<std::uint32_t>(spec.heads));
  w.u32(arch + ".attention.head_count_kv", static_cast<std::uint32_t>(spec.headsKv));
  w.f32(arch + ".rope.freq_base", static_cast<float>(spec.theta));
  w.u32(arch + ".rope.dimension_count", static_cast<std::uint32_t>(spec.headDim()));
  w.f32(arch + ".attention.layer_norm_rms_epsilon", static_cast<float>(spec.eps));
  w.u32("general.file_type", matrixType);
  if (keys) {
    w.string("tokenizer.ggml.model", keys->model);
    if (!keys->pre.empty()) w.string("tokenizer.ggml.pre", keys->pre);
    w.strings("tokenizer.ggml.tokens", keys->tokens);
    if (!keys->scores.empty()) w.array<float>("tokenizer.ggml.scores", attn::testing::kF32, keys->scores);
    w.array<std::int32_t>("tokenizer.ggml.token_type", attn::testing::kI32, keys->types);
    if (!keys->merges.empty()) w.strings("tokenizer.ggml.merges", keys->merges);
    if (keys->bos >= 0) w.u32("tokenizer.ggml.bos_token_id", static_cast<std::uint32_t>(keys->bos));
    if (keys->eos >= 0) w.u32("tokenizer.ggml.eos_token_id", static_cast<std::uint32_t>(keys->eos));
    w.boolean("tokenizer.ggml.add_bos_token", keys->addBos);
  } else if (spmTokenizer) {
    const SpmVocab v = spmVocab(spec.vocab);
    w.string("tokenizer.ggml.model", "llama");
    w.strings("tokenizer.ggml.tokens", v.tokens);
    w.array<float>("tokenizer.ggml.scores", attn::testing::kF32, v.scores);
    w.array<std::int32_t>("tokenizer.ggml.token_type", attn::testing::kI32, v.types);
    w.u32("tokenizer.ggml.bos_token_id", 1);
    w.u32("tokenizer.ggml.eos_token_id", 2);
    w.u32("tokenizer.ggml.unknown_token_id", 0);
    w.boolean("tokenizer.ggml.add_bos_token", true);
  }
  const std::int64_t E = spec.hidden, F = spec.inner, V = spec.vocab, dh = spec.headDim();
  const std::int64_t Q = spec.heads * dh, KV = spec.headsKv * dh;
  // One GGUF matrix ([rows, in] as ggml dims [in, rows]) and its Hugging Face tensor;
  // permuteHeads > 0: the llama q / k row permutation.
  auto matrix = [&](const std::string& ggufName, const std::string& hfName, std::int64_t rows, std::int64_t in,
                    std::uint32_t type, int permuteHeads, double scale = 0.08) {
    const std::size_t count = static_cast<std::size_t>(rows * in);
    std::string bytes = attn::testing::randomTensorBytes(type, count, rng, scale);
    const std::vector<double> values = attn::testing::dequantizeDouble(type, bytes, count);
    std::vector<float> hf(count);
    for (std::int64_t r = 0; r < rows; ++r) {
      std::int64_t hfRow = r;
      if (permuteHeads > 0) {  // GGUF row h·d + 2i + s is HF row h·d + s·d/2 + i
        const std::int64_t h = r / dh, within = r % dh, i = within / 2, s = within % 2;
        hfRow = h * dh + s * (dh / 2) + i;
      }
      for (std::int64_t k = 0; k < in; ++k)
        hf[static_cast<std::size_t>(hfRow * in + k)] = static_cast<float>(values[static_cast<std::size_t>(r * in + k)]);
    }
    out.dequantized[hfName] = modeltest::NamedTensor{{rows, in}, std::move(hf)};
    w.tensor(ggufName, {static_cast<std::uint64_t>(in), static_cast<std::uint64_t>(rows)}, type, std::move(bytes));
  };
  auto vector = [&](const std::string& ggufName, const std::string& hfName, std::int64_t n, float offset) {
    std::normal_distribution<float> normal(0.0f, 0.05f);
    std::vector<float> v(static_cast<std::size_t>(n));
    for (float& x : v) x = offset + normal(rng);
    std::string bytes(reinterpret_cast<const char*>(v.data()), v.size() * 4);
    out.dequantized[hfName] = modeltest::NamedTensor{{n}, v};
    w.tensor(ggufName, {static_cast<std::uint64_t>(n)}, 0, std::move(bytes));
  };
  const bool llama = arch == "llama";
  matrix("token_embd.weight", "model.embed_tokens.weight", V, E,
         embedType >= 0 ? static_cast<std::uint32_t>(embedType) : matrixType, 0);
  for (int l = 0; l < spec.layers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    const std::string h = "model.layers." + std::to_string(l) + ".";
    vector(b + "attn_norm.weight", h + "input_layernorm.weight", E, 1.0f);
    matrix(b + "attn_q.weight", h + "self_attn.q_proj.weight", Q, E, matrixType, llama ? spec.heads : 0);
    matrix(b + "attn_k.weight", h + "self_attn.k_proj.weight", KV, E, matrixType, llama ? spec.headsKv : 0);
    matrix(b + "attn_v.weight", h + "self_attn.v_proj.weight", KV, E, matrixType, 0);
    if (arch == "qwen2") {
      vector(b + "attn_q.bias", h + "self_attn.q_proj.bias", Q, 0.0f);
      vector(b + "attn_k.bias", h + "self_attn.k_proj.bias", KV, 0.0f);
      vector(b + "attn_v.bias", h + "self_attn.v_proj.bias", KV, 0.0f);
    }
    matrix(b + "attn_output.weight", h + "self_attn.o_proj.weight", E, Q, matrixType, 0);
    vector(b + "ffn_norm.weight", h + "post_attention_layernorm.weight", E, 1.0f);
    matrix(b + "ffn_gate.weight", h + "mlp.gate_proj.weight", F, E, matrixType, 0);
    matrix(b + "ffn_up.weight", h + "mlp.up_proj.weight", F, E, matrixType, 0);
    matrix(b + "ffn_down.weight", h + "mlp.down_proj.weight", E, F, matrixType, 0);
  }
  vector("output_norm.weight", "model.norm.weight", E, 1.0f);
  // a larger output layer: next-token distributions far from uniform
  if (!spec.tied) matrix("output.weight", "lm_head.weight", V, E, matrixType, 0, 0.5);
  out.gguf = w.finish();
  return out;
}

}  // namespace ggufmodel
