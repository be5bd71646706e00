// Writes a random-weight Hugging Face model folder of a real model's shape, for benchmarks
// (`attnscope bench --model`, scripts/bench-model-vs-pytorch.sh) and for the large-model
// checks that do not belong in ctest (a 1.1B BF16 Llama is 2.2 GB):
//
//   build/gen_checkpoint --preset gpt2-small --dtype f32 --out /tmp/gpt2s
//   build/gen_checkpoint --preset llama-1.1b --dtype bf16 --out /tmp/tinyllama
//
//   build/gen_checkpoint --preset bert-base --layers 2 --set vocab_size=1000 --out /tmp/bert
//   build/gen_checkpoint --list      (every preset's config.json, as one JSON object)
//
// Every family of the table has presets: decoders, encoders (bert, distilbert, roberta) and
// vision transformers (vit, deit). The presets are config.json texts (--set KEY=JSON changes
// one key first, --layers and --positions the layer count and positions); the one config
// reader and the family table (formats/models/families.h) turn them into the tensor names and
// shapes written, and the family's config writer (writeConfig, writeBidirectionalConfig)
// writes config.json back. The folder holds config.json, model.safetensors and, for gpt2, a
// byte-level vocab.json + merges.txt (the 256 byte tokens and one merge; the gpt2 checkpoint
// carries the attn.bias mask buffers as the published files do, so gpt2-small is 548 MB in
// F32); an encoder's checkpoint has its family prefix and MLM head (tied to the word
// embedding), a vision model's its classifier (num_labels rows, id2label "label 0", ...;
// DeiT's with its distillation head) and a preprocessor_config.json for its image_size. No
// tokenizer is written for encoders and vision models: run them from --ids or a picture. Tensors are written one at a time, each
// generated from its own seed (deriveSeed(seed, name)), so a 1.1B checkpoint never needs more
// than one tensor in memory. Values: weights uniform with std 0.02 (as Hugging Face's
// initializer_range), norm weights 1 ± 0.1, biases std 0.02; BF16 / F16 values are the F32
// values rounded to nearest even, so every dtype of one seed holds the same weights up to
// that rounding.
#include <algorithm>
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
#include "formats/models/encoder_folder.h"
#include "formats/models/families.h"
#include "formats/models/families/bidirectional.h"
#include "formats/models/model_config.h"
#include "formats/models/vit_folder.h"

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
    // encoders (bert-base-uncased, prajjwal1/bert-tiny, distilbert-base-uncased, roberta-base)
    auto bert = [](const char* type, int layers, int hidden, int heads, int inner, int positions, int vocab) {
      return nlohmann::json{{"model_type", type},        {"num_hidden_layers", layers},
                            {"hidden_size", hidden},     {"num_attention_heads", heads},
                            {"intermediate_size", inner}, {"max_position_embeddings", positions},
                            {"vocab_size", vocab},       {"hidden_act", "gelu"}};
    };
    t["bert-base"] = bert("bert", 12, 768, 12, 3072, 512, 30522);
    t["bert-tiny"] = bert("bert", 2, 128, 2, 512, 512, 30522);
    t["roberta-base"] = bert("roberta", 12, 768, 12, 3072, 514, 50265);
    t["roberta-base"].update({{"type_vocab_size", 1}, {"layer_norm_eps", 1e-5}, {"pad_token_id", 1}});
    t["distilbert-base"] = {{"model_type", "distilbert"}, {"n_layers", 6},    {"dim", 768},
                            {"n_heads", 12},              {"hidden_dim", 3072}, {"max_position_embeddings", 512},
                            {"vocab_size", 30522},        {"activation", "gelu"}};
    // vision transformers (google/vit-base-patch16-224, facebook/deit-tiny-distilled-patch16-224)
    auto vit = [](const char* type, int layers, int hidden, int heads, int inner) {
      return nlohmann::json{{"model_type", type},        {"num_hidden_layers", layers},
                            {"hidden_size", hidden},     {"num_attention_heads", heads},
                            {"intermediate_size", inner}, {"image_size", 224},
                            {"patch_size", 16},          {"num_channels", 3},
                            {"hidden_act", "gelu"},      {"num_labels", 1000}};
    };
    t["vit-base"] = vit("vit", 12, 768, 12, 3072);
    t["deit-tiny-distilled"] = vit("deit", 12, 192, 3, 768);
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

// The tensors an encoder's or a vision row's plan reads (those with a target; the unused
// ones a published file may carry, a pooler or a tied decoder's copy, are left out): norm
// weights 1 ± 0.1, everything else std 0.02.
std::vector<TensorPlan> slotTensors(const attn::io::SlotPlan& plan, const std::vector<const attn::model::Tensor*>& norms) {
  std::vector<TensorPlan> out;
  for (const attn::io::TensorSlot& slot : plan.slots) {
    if (!slot.target) continue;
    const bool norm = std::find(norms.begin(), norms.end(), slot.target) != norms.end();
    out.push_back({slot.name, slot.shape, norm ? 0.1f : 0.02f, norm ? 1.0f : 0.0f});
  }
  return out;
}

// An encoder's tensors, as a published checkpoint names them (the family prefix and the MLM
// head: the plan of a checkpoint that holds every name).
std::vector<TensorPlan> planTensors(const attn::model::EncoderConfig& config) {
  const attn::io::Family& family = *attn::io::findFamily(config.modelType);
  const attn::io::Checkpoint all = attn::io::Checkpoint::everything({config.nEmbd});
  attn::model::EncoderWeights w;
  attn::io::EncoderPlan plan(all, config, /*tiedDecoder=*/true, w);
  family.planEncoderTensors(plan);
  std::vector<const attn::model::Tensor*> norms = {&w.embedNorm.weight, &w.mlm.norm.weight};
  for (const auto& layer : w.layers) norms.insert(norms.end(), {&layer.norm1.weight, &layer.norm2.weight});
  return slotTensors(plan, norms);
}

// A vision model's tensors with a classifier of `labels.size()` rows (DeiT's teacher heads
// too); `configJson` holds their id2label.
attn::Expected<std::vector<TensorPlan>> planTensors(const attn::model::VitConfig& config, const nlohmann::json& configJson,
                                                    int labels) {
  const attn::io::Family& family = *attn::io::findFamily(config.modelType);
  const attn::io::Checkpoint all = attn::io::Checkpoint::everything({labels, config.nEmbd});
  attn::model::VitWeights w;
  attn::io::VisionPlan plan(all, config, configJson, "config.json", w);
  if (attn::Status s = family.planVisionTensors(plan); !s) return s.error();
  std::vector<const attn::model::Tensor*> norms = {&w.finalNorm.weight};
  for (const auto& layer : w.layers) norms.insert(norms.end(), {&layer.norm1.weight, &layer.norm2.weight});
  return slotTensors(plan, norms);
}

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
               "                      [--positions P] [--seed S] [--set KEY=JSON ...]\n"
               "       gen_checkpoint --list\n"
               "presets:");
  for (const auto& [name, config] : presets()) std::fprintf(stderr, " %s", name.c_str());
  std::fprintf(stderr, "\n");
  return 2;
}

// What one preset writes: the tensors, config.json and any other file (name -> text).
struct Written {
  std::vector<TensorPlan> tensors;
  nlohmann::ordered_json config;
  std::map<std::string, std::string> files;
  bool byteLevelVocab = false;
  int layers = 0;
};

// Reads `configText` through the family table's reader of its kind and plans what to write.
attn::Expected<Written> planPreset(const nlohmann::json& configText, const std::string& preset) {
  const std::string where = "preset " + preset;
  const attn::io::Family* family =
      configText.contains("model_type") && configText["model_type"].is_string()
          ? attn::io::findFamily(configText["model_type"].get<std::string>())
          : nullptr;
  if (!family) return attn::Error{where, "model_type", "not a family of the table"};
  Written out;
  switch (family->kind) {
    case attn::io::ModelKind::Decoder: {
      attn::Expected<attn::model::Config> config = attn::io::parseModelConfig(configText.dump(), where);
      if (!config) return config.error();
      out.tensors = planTensors(*config);
      out.config = family->writeConfig(*config);
      out.byteLevelVocab = family->byteLevelVocab;
      out.layers = config->nLayer;
      return out;
    }
    case attn::io::ModelKind::Encoder: {
      attn::Expected<attn::model::EncoderConfig> config = attn::io::parseEncoderConfig(configText.dump(), where);
      if (!config) return config.error();
      out.tensors = planTensors(*config);
      out.config = family->writeBidirectionalConfig(*config);
      out.layers = config->nLayer;
      return out;
    }
    case attn::io::ModelKind::Vision: {
      nlohmann::json text = configText;
      const int labels = text.value("num_labels", 1000);
      text.erase("num_labels");
      nlohmann::ordered_json id2label = nlohmann::ordered_json::object();
      for (int k = 0; k < labels; ++k) id2label[std::to_string(k)] = "label " + std::to_string(k);
      attn::Expected<attn::model::VitConfig> config = attn::io::parseVitConfig(text.dump(), where);
      if (!config) return config.error();
      const nlohmann::json withLabels = {{"id2label", id2label}};
      attn::Expected<std::vector<TensorPlan>> tensors = planTensors(*config, withLabels, labels);
      if (!tensors) return tensors.error();
      out.tensors = std::move(tensors).value();
      out.config = family->writeBidirectionalConfig(*config);
      out.config["id2label"] = id2label;
      out.layers = config->nLayer;
      // the preprocessing the picture needs: resized to image_size, normalised to [-1, 1]
      const nlohmann::ordered_json preprocessor = {
          {"do_resize", true},     {"size", {{"height", config->imageSize}, {"width", config->imageSize}}},
          {"resample", 2},         {"do_rescale", true},
          {"rescale_factor", 1.0 / 255.0}, {"do_normalize", true},
          {"image_mean", {0.5, 0.5, 0.5}}, {"image_std", {0.5, 0.5, 0.5}}};
      out.files["preprocessor_config.json"] = preprocessor.dump(2) + "\n";
      return out;
    }
  }
  return attn::Error{where, "model_type", "unknown kind"};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--list") {  // every preset's config.json
    nlohmann::ordered_json all = nlohmann::ordered_json::object();
    for (const auto& [name, config] : presets()) all[name] = config;
    std::printf("%s\n", all.dump(2).c_str());
    return 0;
  }
  std::string preset, outDir, dtype = "f32";
  int layers = 0, positions = 0;  // 0: the preset's (--positions: a long-context run, issue 29)
  std::uint64_t seed = 42;
  std::vector<std::pair<std::string, nlohmann::json>> sets;  // --set KEY=JSON, in order
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i], value = argv[i + 1];
    if (key == "--preset") preset = value;
    else if (key == "--out") outDir = value;
    else if (key == "--dtype") dtype = value;
    else if (key == "--layers") layers = std::atoi(value.c_str());
    else if (key == "--positions") positions = std::atoi(value.c_str());
    else if (key == "--seed") seed = std::strtoull(value.c_str(), nullptr, 10);
    else if (key == "--set") {
      const std::size_t eq = value.find('=');
      nlohmann::json parsed = eq == std::string::npos ? nlohmann::json()
                                                      : nlohmann::json::parse(value.substr(eq + 1), nullptr, false);
      if (eq == std::string::npos || eq == 0 || parsed.is_discarded()) {
        std::fprintf(stderr, "gen_checkpoint: --set '%s' is not KEY=JSON (e.g. vocab_size=1000)\n", value.c_str());
        return 2;
      }
      sets.emplace_back(value.substr(0, eq), std::move(parsed));
    } else return usage();
  }
  if (argc % 2 != 1 || preset.empty() || outDir.empty() || !presets().count(preset) ||
      (dtype != "f32" && dtype != "bf16" && dtype != "f16") || layers < 0 || positions < 0) {
    return usage();
  }
  nlohmann::json configText = presets().at(preset);
  for (const char* key : {"n_layer", "num_hidden_layers", "n_layers"})
    if (layers > 0 && configText.contains(key)) configText[key] = layers;
  for (const char* key : {"n_positions", "max_position_embeddings"})
    if (positions > 0 && configText.contains(key)) configText[key] = positions;
  for (const auto& [key, value] : sets) configText[key] = value;
  attn::Expected<Written> written = planPreset(configText, preset);
  if (!written) {
    std::fprintf(stderr, "gen_checkpoint: %s\n", written.error().message().c_str());
    return 2;
  }
  const std::vector<TensorPlan>& plan = written->tensors;
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

  // 3 config.json, a vision model's preprocessor_config.json and, for gpt2, a byte-level
  //   tokenizer
  std::ofstream(dir / "config.json") << written->config.dump(2) << '\n';
  for (const auto& [name, text] : written->files) std::ofstream(dir / name) << text;
  if (written->byteLevelVocab) {  // a byte-level vocab.json + merges.txt (gpt2)
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
              preset.c_str(), dtypeName, written->layers,
              static_cast<double>(fs::file_size(dir / "model.safetensors")) / 1e6);
  return 0;
}
