// Writes a random-weight Hugging Face model folder of a real model's shape, for benchmarks
// (`attnscope bench --model`, scripts/bench-model-vs-pytorch.sh) and for the large-model
// checks that do not belong in ctest (a 1.1B BF16 Llama is 2.2 GB):
//
//   build/gen_checkpoint --preset gpt2-small --dtype f32 --out /tmp/gpt2s
//   build/gen_checkpoint --preset llama-1.1b --dtype bf16 --out /tmp/tinyllama
//
// The presets are config.json texts; the one config reader and the family table
// (formats/models/families.h) turn them into the tensor names and shapes written, and the
// family's writeConfig writes config.json back. The folder holds config.json,
// model.safetensors and, for gpt2, a byte-level vocab.json +
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
#include "formats/models/families.h"
#include "formats/models/model_config.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::ordered_json;

// Real models' shapes (the names say which), as the config.json each writes: read back
// through the one config reader and the family table (formats/models/families.h), which
// also names every tensor. model_type picks the family.
const std::map<std::string, nlohmann::json>& presets() {
  auto llamaStyle = [](const char* type, int layers, int hidden, int heads, int kv, int inner,
                       int vocab, int positions, bool tied) {
    return nlohmann::json{{"model_type", type},          {"num_hidden_layers", layers},
                          {"hidden_size", hidden},       {"num_attention_heads", heads},
                          {"num_key_value_heads", kv},   {"intermediate_size", inner},
                          {"vocab_size", vocab},         {"max_position_embeddings", positions},
                          {"tie_word_embeddings", tied}, {"rms_norm_eps", 1e-5}};
  };
  static const std::map<std::string, nlohmann::json> table = [&] {
    std::map<std::string, nlohmann::json> t;
    auto gpt2 = [](int layers, int hidden, int heads) {
      return nlohmann::json{{"model_type", "gpt2"}, {"n_layer", layers},     {"n_embd", hidden},
                            {"n_head", heads},      {"n_inner", 4 * hidden}, {"n_positions", 1024},
                            {"vocab_size", 50257}};
    };
    t["gpt2-small"] = gpt2(12, 768, 12);
    t["gpt2-medium"] = gpt2(24, 1024, 16);
    t["llama-1.1b"] = llamaStyle("llama", 22, 2048, 32, 4, 5632, 32000, 2048, false);  // TinyLlama
    t["smollm-135m"] = llamaStyle("llama", 30, 576, 9, 3, 1536, 49152, 2048, true);
    t["qwen2-0.5b"] = llamaStyle("qwen2", 24, 896, 14, 2, 4864, 151936, 32768, true);
    t["qwen2-0.5b"]["rope_theta"] = 1000000.0;
    t["mistral-tiny"] = llamaStyle("mistral", 4, 512, 8, 2, 1408, 32000, 4096, false);
    t["mistral-tiny"]["sliding_window"] = 4096;
    t["qwen3-0.6b"] = llamaStyle("qwen3", 28, 1024, 16, 8, 3072, 151936, 40960, true);
    t["qwen3-0.6b"].update({{"head_dim", 128}, {"rope_theta", 1000000.0}});
    t["gemma2-2b"] = llamaStyle("gemma2", 26, 2304, 8, 4, 9216, 256000, 8192, true);
    t["gemma2-2b"].update({{"head_dim", 256}, {"query_pre_attn_scalar", 256}, {"sliding_window", 4096}});
    t["phi3-mini"] = llamaStyle("phi3", 32, 3072, 32, 32, 8192, 32064, 4096, false);
    t["phi3-mini"]["sliding_window"] = 2047;
    t["pythia-160m"] = {{"model_type", "gpt_neox"},     {"num_hidden_layers", 12},
                        {"hidden_size", 768},           {"num_attention_heads", 12},
                        {"intermediate_size", 3072},    {"vocab_size", 50304},
                        {"max_position_embeddings", 2048}, {"rotary_pct", 0.25},
                        {"tie_word_embeddings", false}};
    return t;
  }();
  return table;
}

// A source with no tensors: the plan then uses each family's plain names.
class NoTensors final : public attn::io::TensorSource {
 public:
  const std::string& path() const override { return path_; }
  std::string fileOf(std::string_view) const override { return path_; }
  std::vector<std::string> names() const override { return {}; }
  const Info* info(std::string_view) const override { return nullptr; }
  attn::Expected<const float*> floats(std::string_view,
                                      std::vector<std::shared_ptr<const void>>&) const override {
    return attn::Error{path_, "", "no tensors"};
  }
  const std::uint16_t* bf16InPlace(std::string_view) const override { return nullptr; }
  std::uint64_t keepAlive(std::vector<std::shared_ptr<const void>>&) const override { return 0; }

 private:
  std::string path_ = "(none)";
};

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

// Every tensor of `config`, in the family table's order: weights std 0.02, norm weights
// (1 - the norm's offset) ± 0.1 (so that the factor the norm multiplies by is 1 ± 0.1 for
// Gemma's (1 + w) too), biases std 0.02, position tables std 0.01; for gpt2 the attn.bias
// causal-mask buffers the published files carry (50 MB of GPT-2 small's 548 MB; attnscope
// skips them, as it must skip the real ones).
std::vector<TensorPlan> planTensors(const attn::model::Config& config) {
  const attn::io::Family& family = *attn::io::findFamily(config.modelType);
  attn::model::Weights weights;
  attn::io::TensorPlan plan;
  family.planTensors(config, NoTensors(), weights, plan);
  std::vector<TensorPlan> out;
  for (const attn::io::TensorWant& want : plan.wants) {
    const bool positions = want.name.find("wpe.") != std::string::npos;
    if (want.norm) out.push_back({want.name, want.shape, 0.1f, 1.0f - config.normWeightOffset});
    else out.push_back({want.name, want.shape, positions ? 0.01f : 0.02f, 0.0f});
  }
  if (family.isBuffer && family.isBuffer("h.0.attn.bias")) {  // gpt2's mask buffers
    for (int l = 0; l < config.nLayer; ++l) {
      out.push_back({"h." + std::to_string(l) + ".attn.bias",
                     {1, 1, config.nPositions, config.nPositions}, 0.0f, 0.0f, true});
    }
  }
  return out;
}

int usage() {
  std::fprintf(stderr,
               "usage: gen_checkpoint --preset NAME --out DIR [--dtype f32|bf16|f16] [--layers N]\n"
               "                      [--positions P] [--seed S]\n"
               "presets:");
  for (const auto& [name, config] : presets()) std::fprintf(stderr, " %s", name.c_str());
  std::fprintf(stderr, "\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string preset, outDir, dtype = "f32";
  int layers = 0, positions = 0;  // 0: the preset's (--positions: a long-context run, issue 29)
  std::uint64_t seed = 42;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i], value = argv[i + 1];
    if (key == "--preset") preset = value;
    else if (key == "--out") outDir = value;
    else if (key == "--dtype") dtype = value;
    else if (key == "--layers") layers = std::atoi(value.c_str());
    else if (key == "--positions") positions = std::atoi(value.c_str());
    else if (key == "--seed") seed = std::strtoull(value.c_str(), nullptr, 10);
    else return usage();
  }
  if (argc % 2 != 1 || preset.empty() || outDir.empty() || !presets().count(preset) ||
      (dtype != "f32" && dtype != "bf16" && dtype != "f16") || layers < 0 || positions < 0) {
    return usage();
  }
  nlohmann::json configText = presets().at(preset);
  if (layers > 0) configText[configText.contains("n_layer") ? "n_layer" : "num_hidden_layers"] = layers;
  if (positions > 0) configText[configText.contains("n_positions") ? "n_positions" : "max_position_embeddings"] = positions;
  const attn::Expected<attn::model::Config> config =
      attn::io::parseModelConfig(configText.dump(), "preset " + preset);
  if (!config) {
    std::fprintf(stderr, "gen_checkpoint: %s\n", config.error().message().c_str());
    return 2;
  }
  const std::vector<TensorPlan> plan = planTensors(*config);
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
  const attn::io::Family& family = *attn::io::findFamily(config->modelType);
  std::ofstream(dir / "config.json") << family.writeConfig(*config).dump(2) << '\n';
  if (family.byteLevelVocab) {  // a byte-level vocab.json + merges.txt (gpt2)
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
              preset.c_str(), dtypeName, config->nLayer,
              static_cast<double>(fs::file_size(dir / "model.safetensors")) / 1e6);
  return 0;
}
