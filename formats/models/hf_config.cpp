// The one config.json field reader and activation table (see hf_config.h).
#include "formats/models/hf_config.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace attn::io {

using nlohmann::json;

std::optional<model::Activation> activationByName(std::string_view name) {
  if (name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "gelu_fast")
    return model::Activation::GeluTanh;
  if (name == "gelu") return model::Activation::GeluErf;
  if (name == "silu" || name == "swish") return model::Activation::Silu;
  if (name == "relu") return model::Activation::Relu;
  return std::nullopt;
}

const char* activationName(model::Activation activation) {
  switch (activation) {
    case model::Activation::GeluTanh: return "gelu_new";
    case model::Activation::GeluErf: return "gelu";
    case model::Activation::Silu: return "silu";
    case model::Activation::Relu: return "relu";
  }
  return "gelu";
}

const char* activationNames() {
  return "gelu, gelu_new, gelu_pytorch_tanh, gelu_fast, silu, swish, relu";
}

bool isHarmlessConfigKey(std::string_view key) {
  // Sorted (binary search). Each is metadata, a token id, a training-only setting (dropout,
  // initialisation, gradient checkpointing), a generation default or an output switch.
  static constexpr std::string_view kKeys[] = {
      "_attn_implementation",
      "_name_or_path",
      "_num_labels",
      "architectures",
      "attention_dropout",
      "attention_probs_dropout_prob",
      "attn_implementation",
      "attn_pdrop",
      "auto_map",
      "bad_words_ids",
      "bos_token_id",
      "cache_implementation",
      "chunk_size_feed_forward",
      "classifier_dropout",
      "decoder_start_token_id",
      "do_sample",
      "dropout",
      "dtype",
      "early_stopping",
      "embd_pdrop",
      "eos_token_id",
      "finetuning_task",
      "gradient_checkpointing",
      "hidden_dropout",
      "hidden_dropout_prob",
      "initializer_factor",
      "initializer_range",
      "is_llama_config",
      "keys_to_ignore_at_inference",
      "length_penalty",
      "max_length",
      "min_length",
      "no_repeat_ngram_size",
      "num_beams",
      "num_return_sequences",
      "output_attentions",
      "output_hidden_states",
      "output_past",
      "pad_token_id",
      "pretraining_tp",
      "qa_dropout",
      "repetition_penalty",
      "resid_pdrop",
      "return_dict",
      "sep_token_id",
      "seq_classif_dropout",
      "summary_activation",
      "summary_first_dropout",
      "summary_proj_to_labels",
      "summary_type",
      "summary_use_proj",
      "task_specific_params",
      "temperature",
      "tokenizer_class",
      "top_k",
      "top_p",
      "torch_dtype",
      "torchscript",
      "transformers.js_config",
      "transformers_version",
      "use_bfloat16",
      "use_cache",
      "use_return_dict",
  };
  return std::binary_search(std::begin(kKeys), std::end(kKeys), key);
}

ConfigReader::ConfigReader(const json& config, std::string fileName)
    : config_(config), fileName_(std::move(fileName)) {}

const json* ConfigReader::find(const char* key) {
  read_.insert(key);
  auto it = config_.find(key);
  return it == config_.end() ? nullptr : &*it;
}

bool ConfigReader::has(const char* key) {
  const json* value = find(key);
  return value && !value->is_null();
}

void ConfigReader::ignore(std::initializer_list<const char*> keys) {
  for (const char* key : keys) read_.insert(key);
}

Expected<int> ConfigReader::integer(const char* key, int lo, int hi) {
  const json* value = find(key);
  if (!value || value->is_null()) return Error{fileName_, key, "missing"};
  return integer(key, 0, false, lo, hi);
}

Expected<int> ConfigReader::integer(const char* key, int fallback, bool nullIsFallback, int lo,
                                    int hi) {
  const json* value = find(key);
  if (!value) return fallback;
  if (value->is_null()) {
    if (nullIsFallback) return fallback;
    return Error{fileName_, key, "is null, but a number is needed"};
  }
  if (!value->is_number_integer()) return Error{fileName_, key, "must be an integer"};
  const auto v = value->get<std::int64_t>();
  if (v < lo || v > hi) {
    return Error{fileName_, key,
                 std::to_string(v) + " is out of range (" + std::to_string(lo) + ".." +
                     std::to_string(hi) + ")"};
  }
  return static_cast<int>(v);
}

Expected<double> ConfigReader::number(const char* key, double fallback, bool nullIsFallback,
                                      bool zeroAllowed) {
  const json* value = find(key);
  if (!value) return fallback;
  if (value->is_null()) {
    if (nullIsFallback) return fallback;
    return Error{fileName_, key, "is null, but a number is needed"};
  }
  if (!value->is_number()) return Error{fileName_, key, "must be a number"};
  const double v = value->get<double>();
  if (!std::isfinite(v) || v < 0 || (!zeroAllowed && v == 0)) {
    return Error{fileName_, key,
                 zeroAllowed ? "must be a finite number >= 0" : "must be a finite number > 0"};
  }
  return v;
}

Expected<bool> ConfigReader::flag(const char* key, bool fallback) {
  const json* value = find(key);
  if (!value || value->is_null()) return fallback;
  if (!value->is_boolean()) return Error{fileName_, key, "must be true or false"};
  return value->get<bool>();
}

Expected<std::string> ConfigReader::text(const char* key, const std::string& fallback) {
  const json* value = find(key);
  if (!value) return fallback;
  if (!value->is_string()) return Error{fileName_, key, "must be a string"};
  return value->get<std::string>();
}

Expected<model::Activation> ConfigReader::activation(const char* key, const char* fallback) {
  std::string name = fallback;
  if (const json* value = find(key); value && !value->is_null())
    name = value->is_string() ? value->get<std::string>() : value->dump();
  if (std::optional<model::Activation> a = activationByName(name)) return *a;
  return Error{fileName_, key,
               "'" + name + "' is not supported (" + std::string(activationNames()) + ")"};
}

Status ConfigReader::require(const char* key, const json& wanted, const std::string& why) {
  const json* value = find(key);
  if (!value || value->is_null() || *value == wanted) return Ok{};
  return Error{fileName_, key, value->dump() + " is not supported (" + why + ")"};
}

Status ConfigReader::finish(const std::string& modelType) const {
  for (const auto& [key, value] : config_.items()) {
    if (read_.count(key) || isHarmlessConfigKey(key)) continue;
    return Error{fileName_, key,
                 "is not a setting attnscope reads for " + modelType +
                     " (it may change the model's numbers; docs/models.md lists the fields "
                     "read per family)"};
  }
  return Ok{};
}

}  // namespace attn::io
