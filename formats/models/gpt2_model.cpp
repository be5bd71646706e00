// Loading GPT-2 folders (see gpt2_model.h).
#include "formats/models/gpt2_model.h"

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "formats/files.h"

namespace attn::io {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// An integer field; `fallback` names an alternative key (n_ctx for n_positions).
Expected<int> intField(const json& config, const char* key, const std::string& fileName,
                       const char* fallback = nullptr) {
  auto it = config.find(key);
  if (it == config.end() && fallback) it = config.find(fallback);
  if (it == config.end()) return Error{fileName, key, "missing"};
  if (!it->is_number_integer()) return Error{fileName, key, "must be an integer"};
  const auto value = it->get<std::int64_t>();
  if (value < 1 || value > (std::int64_t{1} << 30)) {
    return Error{fileName, key, std::to_string(value) + " is out of range"};
  }
  return static_cast<int>(value);
}

std::string layerName(const std::string& prefix, int layer, const char* suffix) {
  std::string name = prefix;
  name += "h.";
  name += std::to_string(layer);
  name += '.';
  name += suffix;
  return name;
}

}  // namespace

Expected<gpt2::Config> parseGpt2Config(std::string_view text, const std::string& fileName) {
  json config = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded()) return Error{fileName, "", "not valid JSON"};
  if (!config.is_object()) return Error{fileName, "", "not a JSON object"};

  if (auto it = config.find("model_type"); it != config.end()) {
    if (!it->is_string() || it->get<std::string>() != "gpt2") {
      return Error{fileName, "model_type", it->dump() + " is not \"gpt2\""};
    }
  }
  if (auto it = config.find("activation_function"); it != config.end() && !it->is_null()) {
    const std::string name = it->is_string() ? it->get<std::string>() : it->dump();
    if (name != "gelu_new" && name != "gelu_pytorch_tanh") {
      return Error{fileName, "activation_function",
                   "'" + name + "' is not supported (only GPT-2's tanh GELU, \"gelu_new\")"};
    }
  }
  if (auto it = config.find("scale_attn_weights");
      it != config.end() && it->is_boolean() && !it->get<bool>()) {
    return Error{fileName, "scale_attn_weights", "false is not supported"};
  }
  if (auto it = config.find("scale_attn_by_inverse_layer_idx");
      it != config.end() && it->is_boolean() && it->get<bool>()) {
    return Error{fileName, "scale_attn_by_inverse_layer_idx", "true is not supported"};
  }

  gpt2::Config out;
  Expected<int> layers = intField(config, "n_layer", fileName);
  if (!layers) return layers.error();
  Expected<int> heads = intField(config, "n_head", fileName);
  if (!heads) return heads.error();
  Expected<int> embd = intField(config, "n_embd", fileName);
  if (!embd) return embd.error();
  Expected<int> positions = intField(config, "n_positions", fileName, "n_ctx");
  if (!positions) return positions.error();
  Expected<int> vocab = intField(config, "vocab_size", fileName);
  if (!vocab) return vocab.error();
  out.nLayer = *layers;
  out.nHead = *heads;
  out.nEmbd = *embd;
  out.nPositions = *positions;
  out.vocabSize = *vocab;
  out.nInner = 4 * out.nEmbd;
  if (auto it = config.find("n_inner"); it != config.end() && !it->is_null()) {
    Expected<int> inner = intField(config, "n_inner", fileName);
    if (!inner) return inner.error();
    out.nInner = *inner;
  }
  if (auto it = config.find("layer_norm_epsilon"); it != config.end()) {
    if (!it->is_number()) return Error{fileName, "layer_norm_epsilon", "must be a number"};
    out.layerNormEpsilon = it->get<float>();
  }
  if (Status valid = gpt2::validate(out); !valid) {
    Error error = valid.error();
    error.file = fileName;
    return error;
  }
  return out;
}

Expected<gpt2::Config> loadGpt2Config(const std::string& path) {
  Expected<std::string> text = readCapped(path, kMaxModelConfigBytes);
  if (!text) return text.error();
  return parseGpt2Config(*text, path);
}

Expected<gpt2::Weights> loadGpt2Weights(const SafetensorsFile& file, const gpt2::Config& config) {
  // 1 the prefix: "wte.weight" (GPT2Model) or "transformer.wte.weight" (GPT2LMHeadModel)
  std::string prefix;
  if (!file.find("wte.weight")) {
    if (file.find("transformer.wte.weight")) {
      prefix = "transformer.";
    } else {
      return Error{file.path(), "", "tensor 'wte.weight': missing (nor 'transformer.wte.weight')"};
    }
  }
  const std::int64_t E = config.nEmbd;
  const std::int64_t F = config.nInner;

  // 2 every tensor: read (checked, converted), then let the kernel drop the file's pages
  std::optional<Error> failure;
  auto matrix = [&](const std::string& name, std::int64_t rows, std::int64_t cols) {
    Matrix out;
    if (failure) return out;
    Expected<Matrix> read = file.readMatrix(name, rows, cols);
    if (!read) {
      failure = read.error();
      return out;
    }
    file.releasePages(*file.find(name));
    return std::move(read).value();
  };
  auto vector = [&](const std::string& name, std::int64_t size) {
    Vector out;
    if (failure) return out;
    Expected<Vector> read = file.readVector(name, size);
    if (!read) {
      failure = read.error();
      return out;
    }
    file.releasePages(*file.find(name));
    return std::move(read).value();
  };

  gpt2::Weights w;
  w.config = config;
  w.wte = matrix(prefix + "wte.weight", config.vocabSize, E);
  w.wpe = matrix(prefix + "wpe.weight", config.nPositions, E);
  for (int l = 0; l < config.nLayer && !failure; ++l) {
    gpt2::LayerWeights layer;
    layer.ln1Weight = vector(layerName(prefix, l, "ln_1.weight"), E);
    layer.ln1Bias = vector(layerName(prefix, l, "ln_1.bias"), E);
    layer.attnWeight = matrix(layerName(prefix, l, "attn.c_attn.weight"), E, 3 * E);
    layer.attnBias = vector(layerName(prefix, l, "attn.c_attn.bias"), 3 * E);
    layer.attnProjWeight = matrix(layerName(prefix, l, "attn.c_proj.weight"), E, E);
    layer.attnProjBias = vector(layerName(prefix, l, "attn.c_proj.bias"), E);
    layer.ln2Weight = vector(layerName(prefix, l, "ln_2.weight"), E);
    layer.ln2Bias = vector(layerName(prefix, l, "ln_2.bias"), E);
    layer.fcWeight = matrix(layerName(prefix, l, "mlp.c_fc.weight"), E, F);
    layer.fcBias = vector(layerName(prefix, l, "mlp.c_fc.bias"), F);
    layer.fcProjWeight = matrix(layerName(prefix, l, "mlp.c_proj.weight"), F, E);
    layer.fcProjBias = vector(layerName(prefix, l, "mlp.c_proj.bias"), E);
    w.layers.push_back(std::move(layer));
  }
  w.lnFWeight = vector(prefix + "ln_f.weight", E);
  w.lnFBias = vector(prefix + "ln_f.bias", E);
  if (failure) return *failure;
  if (Status valid = gpt2::validate(w); !valid) {  // cannot fail after the checks above
    Error error = valid.error();
    error.file = file.path();
    return error;
  }
  return w;
}

Expected<Gpt2Model> loadGpt2Folder(const std::string& folder) {
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) {
    return Error{folder, "", "not a folder (expected a Hugging Face GPT-2 download)"};
  }
  const fs::path dir(folder);
  // 1 config
  Expected<gpt2::Config> config = loadGpt2Config((dir / "config.json").string());
  if (!config) return config.error();
  // 2 tokenizer, and its ids against the model's vocabulary
  Expected<Gpt2Tokenizer> tokenizer =
      Gpt2Tokenizer::load((dir / "vocab.json").string(), (dir / "merges.txt").string());
  if (!tokenizer) return tokenizer.error();
  if (tokenizer->bpe().idLimit() > config->vocabSize) {
    return Error{(dir / "vocab.json").string(), "",
                 "has token id " + std::to_string(tokenizer->bpe().idLimit() - 1) +
                     " but config.json's vocab_size is " + std::to_string(config->vocabSize)};
  }
  // 3 weights
  const std::string weightsPath = (dir / "model.safetensors").string();
  if (!fs::exists(weightsPath, ec)) {
    std::string problem = "missing";
    if (fs::exists(dir / "pytorch_model.bin", ec)) {
      problem +=
          " (the folder has only pytorch_model.bin; download the .safetensors file, see "
          "docs/models.md)";
    }
    return Error{weightsPath, "", problem};
  }
  Expected<SafetensorsFile> file = SafetensorsFile::open(weightsPath);
  if (!file) return file.error();
  Expected<gpt2::Weights> weights = loadGpt2Weights(*file, *config);
  if (!weights) return weights.error();
  return Gpt2Model{folder, std::make_shared<const gpt2::Weights>(std::move(weights).value()),
                   std::move(tokenizer).value()};
}

}  // namespace attn::io
