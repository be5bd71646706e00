// config.json for every family (see model_config.h).
#include "formats/models/model_config.h"

#include <filesystem>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "formats/files.h"
#include "formats/models/rope_config.h"
#include "formats/tokenizers/gpt2_tokenizer.h"

namespace attn::io {

Expected<bool> boolField(const nlohmann::json& config, const char* key, bool fallback,
                         const std::string& fileName) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) return Error{fileName, key, "must be true or false"};
  return it->get<bool>();
}

namespace {

using nlohmann::json;

// An integer field >= 1; `fallback` names an alternative key (n_ctx for n_positions).
Expected<int> intField(const json& config, const char* key, const std::string& fileName,
                       const char* fallback = nullptr) {
  auto it = config.find(key);
  if (it == config.end() && fallback) it = config.find(fallback);
  if (it == config.end() || it->is_null()) return Error{fileName, key, "missing"};
  if (!it->is_number_integer()) return Error{fileName, key, "must be an integer"};
  const auto value = it->get<std::int64_t>();
  if (value < 1 || value > (std::int64_t{1} << 30)) {
    return Error{fileName, key, std::to_string(value) + " is out of range"};
  }
  return static_cast<int>(value);
}

// An optional number field: `fallback` when absent or null.
Expected<double> numberField(const json& config, const char* key, double fallback,
                             const std::string& fileName) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return fallback;
  if (!it->is_number()) return Error{fileName, key, "must be a number"};
  const double value = it->get<double>();
  if (!std::isfinite(value) || !(value > 0)) {
    return Error{fileName, key, "must be a finite number > 0"};
  }
  return value;
}

Expected<model::Activation> activationField(const json& config, const char* key,
                                            const char* fallback, const std::string& fileName) {
  std::string name = fallback;
  if (auto it = config.find(key); it != config.end() && !it->is_null()) {
    name = it->is_string() ? it->get<std::string>() : it->dump();
  }
  if (name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "gelu_fast")
    return model::Activation::GeluTanh;
  if (name == "gelu") return model::Activation::GeluErf;
  if (name == "silu" || name == "swish") return model::Activation::Silu;
  if (name == "relu") return model::Activation::Relu;
  return Error{fileName, key,
               "'" + name +
                   "' is not supported (gelu, gelu_new, gelu_pytorch_tanh, gelu_fast, silu, "
                   "relu)"};
}

// The GPT-2-style names validate(Config) uses, as each family calls them in config.json.
std::string familyField(const std::string& modelType, const std::string& field) {
  if (modelType == "gpt2") return field;
  static const std::map<std::string, std::string> kNames = {
      {"n_layer", "num_hidden_layers"},     {"n_head", "num_attention_heads"},
      {"n_embd", "hidden_size"},            {"n_inner", "intermediate_size"},
      {"n_positions", "max_position_embeddings"}};
  if (auto it = kNames.find(field); it != kNames.end()) return it->second;
  if (field == "layer_norm_epsilon")
    return modelType == "gpt_neox" ? "layer_norm_eps" : "rms_norm_eps";
  if (field == "rotary_dims") return modelType == "gpt_neox" ? "rotary_pct" : "head_dim";
  return field;
}

Status parseGpt2(const json& config, const std::string& fileName, model::Config& out) {
  Expected<model::Activation> activation =
      activationField(config, "activation_function", "gelu_new", fileName);
  if (!activation) return activation.error();
  if (auto it = config.find("scale_attn_weights");
      it != config.end() && it->is_boolean() && !it->get<bool>()) {
    return Error{fileName, "scale_attn_weights", "false is not supported"};
  }
  if (auto it = config.find("scale_attn_by_inverse_layer_idx");
      it != config.end() && it->is_boolean() && it->get<bool>()) {
    return Error{fileName, "scale_attn_by_inverse_layer_idx", "true is not supported"};
  }
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
  out.nHead = out.nHeadKv = *heads;
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
    out.normEpsilon = it->get<float>();
  }
  Expected<bool> tied = boolField(config, "tie_word_embeddings", true, fileName);
  if (!tied) return tied.error();
  out.tiedEmbeddings = *tied;
  out.norm = model::NormKind::LayerNorm;
  out.activation = *activation;
  out.qkvLayout = model::QkvLayout::FusedBlocks;
  out.learnedPositions = true;
  return Ok{};
}

// The sizes llama, mistral, qwen2 and gpt_neox share.
Status parseHfSizes(const json& config, const std::string& fileName, model::Config& out) {
  struct Field {
    const char* key;
    int* target;
  };
  for (Field f : {Field{"num_hidden_layers", &out.nLayer},
                  Field{"num_attention_heads", &out.nHead}, Field{"hidden_size", &out.nEmbd},
                  Field{"intermediate_size", &out.nInner},
                  Field{"max_position_embeddings", &out.nPositions},
                  Field{"vocab_size", &out.vocabSize}}) {
    Expected<int> value = intField(config, f.key, fileName);
    if (!value) return value.error();
    *f.target = *value;
  }
  out.nHeadKv = out.nHead;
  out.learnedPositions = false;
  return Ok{};
}

// The rope keys (formats/models/rope_config.h) into `out`; the fraction of each head rotated
// is returned for the family to turn into rotaryDims.
Expected<RopeConfig> readRope(const json& config, const std::string& fileName, model::Config& out) {
  const bool neox = out.modelType == "gpt_neox";
  Expected<RopeConfig> rope =
      readRopeConfig(config, fileName, {neox, neox ? 0.25 : 1.0, out.nPositions});
  if (!rope) return rope.error();
  out.ropeTheta = rope->theta;
  out.ropeScaling = rope->scaling;
  out.nPositions = model::ropeContextLength(rope->scaling, out.nPositions);  // dynamic: longer
  return rope;
}

Status parseLlamaFamily(const json& config, const std::string& fileName, model::Config& out) {
  if (Status s = parseHfSizes(config, fileName, out); !s) return s;
  const std::string& type = out.modelType;
  if (auto it = config.find("num_key_value_heads"); it != config.end() && !it->is_null()) {
    Expected<int> kv = intField(config, "num_key_value_heads", fileName);
    if (!kv) return kv.error();
    out.nHeadKv = *kv;
  }
  if (auto it = config.find("head_dim"); it != config.end() && !it->is_null()) {
    if (!it->is_number_integer() || out.nEmbd % out.nHead != 0 ||
        it->get<std::int64_t>() != out.nEmbd / out.nHead) {
      return Error{fileName, "head_dim",
                   it->dump() + " is not hidden_size / num_attention_heads (not supported)"};
    }
  }
  Expected<double> eps = numberField(config, "rms_norm_eps", 1e-6, fileName);
  if (!eps) return eps.error();
  Expected<RopeConfig> rope = readRope(config, fileName, out);
  if (!rope) return rope.error();
  Expected<model::Activation> activation = activationField(config, "hidden_act", "silu", fileName);
  if (!activation) return activation.error();
  Expected<bool> tied = boolField(config, "tie_word_embeddings", false, fileName);
  if (!tied) return tied.error();
  Expected<bool> attentionBias = boolField(config, "attention_bias", false, fileName);
  if (!attentionBias) return attentionBias.error();
  Expected<bool> mlpBias = boolField(config, "mlp_bias", false, fileName);
  if (!mlpBias) return mlpBias.error();
  if (rope->partialRotaryFactor != 1.0) {  // Hugging Face's llama family rotates whole heads
    return Error{fileName, rope->partialField,
                 json(rope->partialRotaryFactor).dump() + " is not supported (only 1)"};
  }
  out.normEpsilon = static_cast<float>(*eps);
  out.activation = *activation;
  out.tiedEmbeddings = *tied;
  out.norm = model::NormKind::RmsNorm;
  out.qkvLayout = model::QkvLayout::Separate;
  out.gatedMlp = true;
  out.rotaryDims = out.nEmbd % out.nHead == 0 ? out.nEmbd / out.nHead : 0;
  // q/k/v biases: qwen2 always; llama with attention_bias (which also biases o_proj).
  out.qkvBias = type == "qwen2" || (type == "llama" && *attentionBias);
  out.outBias = type == "llama" && *attentionBias;
  out.mlpBias = type == "llama" && *mlpBias;
  if (type == "mistral") {
    if (auto it = config.find("sliding_window"); it != config.end() && !it->is_null()) {
      Expected<int> window = intField(config, "sliding_window", fileName);
      if (!window) return window.error();
      out.slidingWindow = *window;
    }
  }
  if (type == "qwen2") {
    Expected<bool> sliding = boolField(config, "use_sliding_window", false, fileName);
    if (!sliding) return sliding.error();
    if (*sliding) {
      return Error{fileName, "use_sliding_window",
                   "true is not supported for qwen2 (its per-layer windows, max_window_layers)"};
    }
  }
  return Ok{};
}

Status parseGptNeox(const json& config, const std::string& fileName, model::Config& out) {
  if (Status s = parseHfSizes(config, fileName, out); !s) return s;
  Expected<double> eps = numberField(config, "layer_norm_eps", 1e-5, fileName);
  if (!eps) return eps.error();
  // rotary_emb_base / rope_theta and rotary_pct / partial_rotary_factor (default 0.25)
  Expected<RopeConfig> rope = readRope(config, fileName, out);
  if (!rope) return rope.error();
  const double pct = rope->partialRotaryFactor;
  Expected<model::Activation> activation = activationField(config, "hidden_act", "gelu", fileName);
  if (!activation) return activation.error();
  Expected<bool> parallel = boolField(config, "use_parallel_residual", true, fileName);
  if (!parallel) return parallel.error();
  Expected<bool> tied = boolField(config, "tie_word_embeddings", false, fileName);
  if (!tied) return tied.error();
  Expected<bool> bias = boolField(config, "attention_bias", true, fileName);
  if (!bias) return bias.error();
  out.normEpsilon = static_cast<float>(*eps);
  out.activation = *activation;
  out.parallelResidual = *parallel;
  out.tiedEmbeddings = *tied;
  out.norm = model::NormKind::LayerNorm;
  out.qkvLayout = model::QkvLayout::FusedPerHead;
  out.qkvBias = out.outBias = *bias;
  out.mlpBias = true;
  // Hugging Face: rotary_ndims = int(head_size * rotary_pct)
  if (out.nEmbd % out.nHead == 0) {
    out.rotaryDims = static_cast<int>(static_cast<double>(out.nEmbd / out.nHead) * pct);
    if (out.rotaryDims % 2 != 0) {
      return Error{fileName, rope->partialField.empty() ? "rotary_pct" : rope->partialField,
                   "gives " + std::to_string(out.rotaryDims) +
                       " rotary dimensions per head, which is odd (not supported)"};
    }
  }
  return Ok{};
}

}  // namespace

bool isSupportedModelType(std::string_view t) {
  return t == "gpt2" || t == "llama" || t == "mistral" || t == "qwen2" || t == "gpt_neox";
}

Expected<model::Config> parseModelConfig(std::string_view text, const std::string& fileName) {
  json config = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded()) return Error{fileName, "", "not valid JSON"};
  if (!config.is_object()) return Error{fileName, "", "not a JSON object"};

  model::Config out;
  out.modelType = "gpt2";
  if (auto it = config.find("model_type"); it != config.end()) {
    if (!it->is_string() || !isSupportedModelType(it->get<std::string>())) {
      return Error{fileName, "model_type",
                   it->dump() + " is not supported (gpt2, llama, mistral, qwen2, gpt_neox)"};
    }
    out.modelType = it->get<std::string>();
  }
  Status parsed = out.modelType == "gpt2"       ? parseGpt2(config, fileName, out)
                  : out.modelType == "gpt_neox" ? parseGptNeox(config, fileName, out)
                                                : parseLlamaFamily(config, fileName, out);
  if (!parsed) return parsed.error();
  if (Status valid = model::validate(out); !valid) {
    Error error = valid.error();
    error.file = fileName;
    error.field = ropeFieldName(config, familyField(out.modelType, error.field));
    return error;
  }
  return out;
}

Expected<std::string> readFolderConfig(const std::string& folder) {
  std::error_code ec;
  if (!std::filesystem::is_directory(folder, ec))
    return Error{folder, "", "not a folder (expected a Hugging Face model download)"};
  return readCapped((std::filesystem::path(folder) / "config.json").string(), kMaxModelConfigBytes);
}

Expected<model::Config> loadModelConfig(const std::string& path) {
  Expected<std::string> text = readCapped(path, kMaxModelConfigBytes);
  if (!text) return text.error();
  return parseModelConfig(*text, path);
}

Expected<int> loadBosTokenId(const std::string& path) {
  Expected<std::string> text = readCapped(path, kMaxModelConfigBytes);
  if (!text) return text.error();
  json config = json::parse(text->begin(), text->end(), nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded() || !config.is_object()) return Error{path, "", "not a JSON object"};
  auto it = config.find("bos_token_id");
  if (it == config.end() || it->is_null()) {
    return Error{path, "bos_token_id", "missing, so --bos has no token to add"};
  }
  if (!it->is_number_integer() || it->get<std::int64_t>() < 0 ||
      it->get<std::int64_t>() > model::kMaxVocab) {
    return Error{path, "bos_token_id", "must be a token id (an integer >= 0)"};
  }
  return static_cast<int>(it->get<std::int64_t>());
}

}  // namespace attn::io
