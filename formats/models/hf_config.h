// The one config.json field reader of every model kind (decoders, encoders, the vision
// transformer) and the one activation table. A ConfigReader remembers every key it was asked
// for, so that after a family has read its fields, finish() can refuse any key that is
// neither read nor known to be harmless: an option attnscope does not implement never runs
// silently as another model (docs/models.md).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/models/transformer.h"

namespace attn::io {

// The activation named as config.json spells it (hidden_act, activation_function,
// hidden_activation, activation): gelu_new, gelu_pytorch_tanh, gelu_fast -> the tanh GELU;
// gelu -> the erf GELU; silu, swish -> SiLU; relu -> ReLU. nullopt for any other name.
std::optional<model::Activation> activationByName(std::string_view name);
// "gelu, gelu_new, gelu_pytorch_tanh, gelu_fast, silu, swish, relu" (for messages).
const char* activationNames();
// The config.json name of `activation` that activationByName reads back as it (the config
// writers of tools/gen_checkpoint): gelu_new, gelu, silu, relu.
const char* activationName(model::Activation activation);

// Keys that never change a forward pass in eval mode: metadata (architectures,
// torch_dtype, transformers_version, ...), token ids, dropout and initialisation, the
// generation defaults, use_cache. Every other key must be read by the family.
bool isHarmlessConfigKey(std::string_view key);

class ConfigReader {
 public:
  // `config` must be a JSON object and outlive the reader; `fileName` goes into errors.
  ConfigReader(const nlohmann::json& config, std::string fileName);

  const std::string& fileName() const { return fileName_; }
  // The config object itself (for a reader of several keys, such as readRopeConfig).
  const nlohmann::json& object() const { return config_; }
  // The key is present and not null (marks it read).
  bool has(const char* key);
  // The raw value, or nullptr when absent (marks it read).
  const nlohmann::json* find(const char* key);
  // Marks keys read that the family knows and that change nothing for it (a qwen2
  // max_window_layers without use_sliding_window, ...).
  void ignore(std::initializer_list<const char*> keys);

  // An integer in [lo, hi]. Required: missing or null is an error. With a fallback: absent
  // gives the fallback, null is refused unless `nullIsFallback` (keys Hugging Face reads as
  // "not set", such as n_inner or sliding_window).
  Expected<int> integer(const char* key, int lo = 1, int hi = 1 << 30);
  Expected<int> integer(const char* key, int fallback, bool nullIsFallback, int lo = 1,
                        int hi = 1 << 30);
  // A finite number > 0 (or >= 0 with `zeroAllowed`); absent gives the fallback, null is
  // refused unless `nullIsFallback`.
  Expected<double> number(const char* key, double fallback, bool nullIsFallback = false,
                          bool zeroAllowed = false);
  // true / false; absent or null gives the fallback.
  Expected<bool> flag(const char* key, bool fallback);
  // A string; absent gives the fallback, null is refused.
  Expected<std::string> text(const char* key, const std::string& fallback);
  // An activation name (activationByName); absent or null gives `fallback`.
  Expected<model::Activation> activation(const char* key, const char* fallback);
  // A key that may only have one value (absent and null are fine): anything else is
  // refused as "not supported (`why`)".
  Status require(const char* key, const nlohmann::json& wanted, const std::string& why);

  // After the family read its fields: the first key that was neither read nor harmless is
  // refused, naming it ("is not a setting attnscope reads for `modelType`").
  Status finish(const std::string& modelType) const;

 private:
  const nlohmann::json& config_;
  std::string fileName_;
  std::set<std::string, std::less<>> read_;
};

}  // namespace attn::io
