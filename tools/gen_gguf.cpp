// Writes a random-weight llama-architecture GGUF file of a real model's shape, for the speed
// comparison with llama.cpp (scripts/bench-gguf-vs-llamacpp.sh) and `attnscope bench --model`:
//
//   build/gen_gguf --preset smollm-135m --type q8_0 --out /tmp/smollm-q8_0.gguf
//
// Matrices (token_embd, attn_*, ffn_*) are random valid blocks of the type (random bytes
// with small finite f16 scales, tests/support/gguf_writer.h), norms F32 near 1, the output
// layer tied to the embedding (as SmolLM). The vocabulary is a SentencePiece-style one:
// <unk>, <s>, </s>, the 256 byte tokens, then "<t12345>" pieces, so that llama.cpp loads the
// file; the benchmark runs token ids, never text.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "tests/support/gguf_writer.h"

namespace {

struct Preset {
  const char* name;
  int layers, hidden, inner, heads, headsKv, vocab, context;
  double theta;
};

constexpr Preset kPresets[] = {
    {"smollm-135m", 30, 576, 1536, 9, 3, 49152, 2048, 10000.0},
    {"tiny", 2, 256, 512, 4, 2, 512, 256, 10000.0},
    // the fuzz seeds (scripts/fuzz.sh): a few kB (micro) and one K-quant super-block wide
    // (micro-k), small enough for fuzz_gguf to run their forward pass
    {"micro", 1, 32, 64, 2, 1, 259, 16, 10000.0},
    {"micro-k", 1, 256, 256, 2, 1, 259, 16, 10000.0},
};

int usage() {
  std::fprintf(stderr, "usage: gen_gguf --preset smollm-135m|tiny|micro|micro-k --type f32|f16|bf16|q8_0|q4_0|q4_1|q5_0|q5_1|q2_k|q3_k|q4_k|q5_k|q6_k --out FILE [--seed S]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string presetName = "smollm-135m", typeName = "q8_0", out;
  unsigned seed = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i], value = argv[i + 1];
    if (key == "--preset") presetName = value;
    else if (key == "--type") typeName = value;
    else if (key == "--out") out = value;
    else if (key == "--seed") seed = static_cast<unsigned>(std::stoul(value));
    else return usage();
  }
  const Preset* preset = nullptr;
  for (const Preset& p : kPresets)
    if (presetName == p.name) preset = &p;
  const std::pair<const char*, std::uint32_t> types[] = {
      {"f32", 0},  {"f16", 1},  {"bf16", 30}, {"q8_0", 8},  {"q4_0", 2},  {"q4_1", 3},  {"q5_0", 6},
      {"q5_1", 7}, {"q2_k", 10}, {"q3_k", 11}, {"q4_k", 12}, {"q5_k", 13}, {"q6_k", 14}};
  int type = -1;
  for (const auto& [name, number] : types)
    if (typeName == name) type = static_cast<int>(number);
  if (!preset || type < 0 || out.empty()) return usage();
  const Preset& p = *preset;
  if (type >= 10 && type <= 14 && (p.hidden % 256 || p.inner % 256)) {  // Q2_K ... Q6_K
    std::fprintf(stderr, "gen_gguf: %s's widths are not multiples of 256 (a K-quant super-block)\n", p.name);
    return 2;
  }
  std::mt19937 rng(seed);
  attn::testing::GgufWriter w;
  w.string("general.architecture", "llama");
  w.string("general.name", std::string("random ") + p.name);
  w.u32("llama.block_count", static_cast<std::uint32_t>(p.layers));
  w.u32("llama.context_length", static_cast<std::uint32_t>(p.context));
  w.u32("llama.embedding_length", static_cast<std::uint32_t>(p.hidden));
  w.u32("llama.feed_forward_length", static_cast<std::uint32_t>(p.inner));
  w.u32("llama.attention.head_count", static_cast<std::uint32_t>(p.heads));
  w.u32("llama.attention.head_count_kv", static_cast<std::uint32_t>(p.headsKv));
  w.f32("llama.rope.freq_base", static_cast<float>(p.theta));
  w.u32("llama.rope.dimension_count", static_cast<std::uint32_t>(p.hidden / p.heads));
  w.f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<float> scores = {0, 0, 0};
  std::vector<std::int32_t> kinds = {2, 3, 3};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    tokens.push_back(name);
    scores.push_back(0);
    kinds.push_back(6);
  }
  while (static_cast<int>(tokens.size()) < p.vocab) {
    tokens.push_back("<t" + std::to_string(tokens.size()) + ">");
    scores.push_back(-static_cast<float>(tokens.size()));
    kinds.push_back(1);
  }
  w.string("tokenizer.ggml.model", "llama");
  w.strings("tokenizer.ggml.tokens", tokens);
  w.array<float>("tokenizer.ggml.scores", attn::testing::kF32, scores);
  w.array<std::int32_t>("tokenizer.ggml.token_type", attn::testing::kI32, kinds);
  w.u32("tokenizer.ggml.bos_token_id", 1);
  w.u32("tokenizer.ggml.eos_token_id", 2);
  const std::uint64_t E = static_cast<std::uint64_t>(p.hidden), F = static_cast<std::uint64_t>(p.inner);
  const std::uint64_t dh = E / static_cast<std::uint64_t>(p.heads), KV = dh * static_cast<std::uint64_t>(p.headsKv);
  const auto t = static_cast<std::uint32_t>(type);
  auto matrix = [&](const std::string& name, std::uint64_t in, std::uint64_t rows) {
    w.tensor(name, {in, rows}, t, attn::testing::randomTensorBytes(t, static_cast<std::size_t>(in * rows), rng, 0.02));
  };
  auto norm = [&](const std::string& name) {
    std::vector<float> v(static_cast<std::size_t>(E));
    std::normal_distribution<float> normal(1.0f, 0.05f);
    for (float& x : v) x = normal(rng);
    w.tensor(name, {E}, 0, std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4));
  };
  matrix("token_embd.weight", E, static_cast<std::uint64_t>(p.vocab));
  for (int l = 0; l < p.layers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    norm(b + "attn_norm.weight");
    matrix(b + "attn_q.weight", E, E);
    matrix(b + "attn_k.weight", E, KV);
    matrix(b + "attn_v.weight", E, KV);
    matrix(b + "attn_output.weight", E, E);
    norm(b + "ffn_norm.weight");
    matrix(b + "ffn_gate.weight", E, F);
    matrix(b + "ffn_up.weight", E, F);
    matrix(b + "ffn_down.weight", F, E);
  }
  norm("output_norm.weight");
  const std::string bytes = w.finish();
  std::ofstream file(out, std::ios::binary);
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!file) {
    std::fprintf(stderr, "gen_gguf: cannot write %s\n", out.c_str());
    return 2;
  }
  std::printf("%s: %s, %s, %.1f MB\n", out.c_str(), p.name, typeName.c_str(), static_cast<double>(bytes.size()) / 1e6);
  return 0;
}
