// config.json's rope keys (see rope_config.h). The keys each rope type reads are
// transformers' required and optional keys of that type (RotaryEmbeddingConfigMixin's
// _validate_*_rope_parameters), plus rope_type / type, rope_theta and partial_rotary_factor,
// which transformers 5 keeps in the same object.
#include "formats/models/rope_config.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

namespace attn::io {
namespace {

using nlohmann::json;
using model::RopeType;

struct Reader {
  const std::string& file;

  // A number at object[key] named `field`: nullopt when absent; an error when null (if
  // `nullIsAbsent` is false), not a number or not finite.
  Expected<std::optional<double>> number(const json& object, const std::string& key,
                                         const std::string& field, bool nullIsAbsent = false) const {
    auto it = object.find(key);
    if (it == object.end()) return std::optional<double>();
    if (it->is_null()) {
      if (nullIsAbsent) return std::optional<double>();
      return Error{file, field, "is null, but a number is needed"};
    }
    if (!it->is_number() || !std::isfinite(it->get<double>()))
      return Error{file, field, it->dump() + " is not a finite number"};
    return std::optional<double>(it->get<double>());
  }

  Expected<double> required(const json& object, const std::string& key, const std::string& where,
                            const std::string& type) const {
    Expected<std::optional<double>> v = number(object, key, where + "." + key);
    if (!v) return v.error();
    if (!*v) return Error{file, where + "." + key, "missing; rope type '" + type + "' needs it"};
    return **v;
  }

  // An integer >= 1 (a whole float such as 8192.0 is accepted).
  Expected<std::optional<int>> positions(const json& object, const std::string& key,
                                         const std::string& field) const {
    Expected<std::optional<double>> v = number(object, key, field, /*nullIsAbsent=*/true);
    if (!v) return v.error();
    if (!*v) return std::optional<int>();
    const double x = **v;
    if (x != std::floor(x) || x < 1 || x > (1 << 30)) return Error{file, field, "must be an integer >= 1"};
    return std::optional<int>(static_cast<int>(x));
  }

  // Every present candidate (field name, value) must agree; the first one's value wins.
  Expected<std::optional<double>> agree(
      const std::vector<std::pair<std::string, std::optional<double>>>& candidates) const {
    std::optional<double> value;
    std::string from;
    for (const auto& [field, v] : candidates) {
      if (!v) continue;
      if (!value) {
        value = v;
        from = field;
      } else if (*v != *value) {
        return Error{file, field,
                     json(*v).dump() + " disagrees with " + from + " = " + json(*value).dump() +
                         " (give one of them)"};
      }
    }
    return value;
  }
};

const std::map<std::string, RopeType>& ropeTypes() {
  static const std::map<std::string, RopeType> table = {
      {"default", RopeType::Default}, {"linear", RopeType::Linear},
      {"dynamic", RopeType::Dynamic}, {"yarn", RopeType::Yarn},
      {"longrope", RopeType::LongRope}, {"llama3", RopeType::Llama3}};
  return table;
}

// The keys of the scaling object each type reads (beyond rope_type / type, rope_theta and
// partial_rotary_factor). dynamic's original_max_position_embeddings is accepted and unused,
// as in transformers (its formula reads max_position_embeddings).
std::vector<std::string> typeKeys(RopeType type) {
  switch (type) {
    case RopeType::Default: return {};
    case RopeType::Linear: return {"factor"};
    case RopeType::Dynamic: return {"factor", "original_max_position_embeddings"};
    case RopeType::Yarn:
      return {"factor", "attention_factor", "beta_fast", "beta_slow", "mscale",
              "mscale_all_dim", "original_max_position_embeddings", "truncate"};
    case RopeType::LongRope:
      return {"short_factor", "long_factor", "factor", "attention_factor",
              "original_max_position_embeddings"};
    case RopeType::Llama3:
      return {"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"};
  }
  return {};
}

Expected<std::vector<double>> numberList(const json& object, const std::string& key,
                                         const std::string& field, const std::string& file) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return Error{file, field, "missing; rope type 'longrope' needs it"};
  if (!it->is_array()) return Error{file, field, "must be an array of numbers"};
  std::vector<double> out;
  for (const json& v : *it) {
    if (!v.is_number()) return Error{file, field, "must be an array of numbers"};
    out.push_back(v.get<double>());
  }
  return out;
}

}  // namespace

const std::vector<std::string>& ropeConfigKeys() {
  static const std::vector<std::string> keys = {
      "rope_theta",         "rope_scaling",      "rope_parameters",
      "partial_rotary_factor", "original_max_position_embeddings", "rotary_pct",
      "rotary_emb_base"};
  return keys;
}

Expected<RopeConfig> readRopeConfig(const json& config, const std::string& file,
                                    const RopeReadOptions& options) {
  const Reader read{file};
  RopeConfig out;
  for (const std::string& key : ropeConfigKeys()) {
    const bool neoxOnly = key == "rotary_pct" || key == "rotary_emb_base";
    if (config.contains(key) && (options.gptNeox || !neoxOnly)) out.keysRead.push_back(key);
  }

  // 1 the scaling object: rope_scaling (transformers 4) or rope_parameters (5)
  static const json kEmpty = json::object();
  const json* params = &kEmpty;
  std::string where = "rope_scaling";
  for (const char* key : {"rope_scaling", "rope_parameters"}) {
    auto it = config.find(key);
    if (it == config.end() || it->is_null()) continue;
    if (!it->is_object()) return Error{file, key, "must be null or an object"};
    if (params != &kEmpty && *params != *it) {
      return Error{file, key, "disagrees with rope_scaling (give one of them)"};
    }
    if (params == &kEmpty) {
      params = &*it;
      where = key;
    }
  }

  // 2 theta: rope_parameters' rope_theta, the top-level rope_theta, gpt_neox's rotary_emb_base
  std::vector<std::pair<std::string, std::optional<double>>> thetas;
  Expected<std::optional<double>> inner = read.number(*params, "rope_theta", where + ".rope_theta");
  if (!inner) return inner.error();
  thetas.emplace_back(where + ".rope_theta", *inner);
  for (const char* key : {"rotary_emb_base", "rope_theta"}) {
    if (std::string(key) == "rotary_emb_base" && !options.gptNeox) continue;
    Expected<std::optional<double>> v = read.number(config, key, key);
    if (!v) return v.error();
    thetas.emplace_back(key, *v);
  }
  Expected<std::optional<double>> theta = read.agree(thetas);
  if (!theta) return theta.error();
  out.theta = theta->value_or(10000.0);
  if (!(out.theta > 0)) return Error{file, "rope_theta", "must be a finite number > 0"};

  // 3 the rotated fraction of each head
  std::vector<std::pair<std::string, std::optional<double>>> partials;
  Expected<std::optional<double>> innerPartial =
      read.number(*params, "partial_rotary_factor", where + ".partial_rotary_factor", true);
  if (!innerPartial) return innerPartial.error();
  partials.emplace_back(where + ".partial_rotary_factor", *innerPartial);
  for (const char* key : {"partial_rotary_factor", "rotary_pct"}) {
    if (std::string(key) == "rotary_pct" && !options.gptNeox) continue;
    // a null partial_rotary_factor is absent (transformers skips None); rotary_pct is not
    Expected<std::optional<double>> v =
        read.number(config, key, key, std::string(key) == "partial_rotary_factor");
    if (!v) return v.error();
    partials.emplace_back(key, *v);
  }
  Expected<std::optional<double>> partial = read.agree(partials);
  if (!partial) return partial.error();
  out.partialRotaryFactor = partial->value_or(options.defaultPartial);
  for (const auto& [field, v] : partials)
    if (v) {
      out.partialField = field;
      break;
    }
  if (!(out.partialRotaryFactor > 0 && out.partialRotaryFactor <= 1)) {
    return Error{file, out.partialField.empty() ? "partial_rotary_factor" : out.partialField,
                 "must be in (0, 1]"};
  }

  // 4 the rope type
  std::string typeName = "default";
  std::string typeField = where + ".rope_type";
  bool typeSeen = false;
  for (const char* key : {"rope_type", "type"}) {
    auto it = params->find(key);
    if (it == params->end()) continue;
    if (!it->is_string()) return Error{file, where + "." + key, "must be a string"};
    if (typeSeen && it->get<std::string>() != typeName) {
      return Error{file, where + ".type", "disagrees with rope_type"};
    }
    typeName = it->get<std::string>();
    typeField = where + "." + key;
    typeSeen = true;
  }
  auto known = ropeTypes().find(typeName);
  if (known == ropeTypes().end()) {
    return Error{file, typeField,
                 "'" + typeName +
                     "' is not a rope type attnscope runs (default, linear, dynamic, yarn, "
                     "longrope, llama3)"};
  }
  model::RopeScaling& s = out.scaling;
  s.type = known->second;
  s.maxPositions = options.maxPositions;

  // 5 every key of the object belongs to the type
  std::vector<std::string> allowed = typeKeys(s.type);
  for (const char* common : {"rope_type", "type", "rope_theta", "partial_rotary_factor"})
    allowed.emplace_back(common);
  for (const auto& [key, value] : params->items()) {
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    std::string reads;
    for (const std::string& k : typeKeys(s.type)) reads += (reads.empty() ? "" : ", ") + k;
    return Error{file, where + "." + key,
                 "is not a key of rope type '" + typeName + "' (it reads " +
                     (reads.empty() ? std::string("no scaling keys") : reads) + ")"};
  }

  // 6 the type's values
  if (s.type == RopeType::Linear || s.type == RopeType::Dynamic || s.type == RopeType::Llama3) {
    Expected<double> factor = read.required(*params, "factor", where, typeName);
    if (!factor) return factor.error();
    s.factor = *factor;
  }
  if (s.type == RopeType::Dynamic) {  // read (so that a bad value is named), not used
    Expected<std::optional<int>> unused = read.positions(
        *params, "original_max_position_embeddings", where + ".original_max_position_embeddings");
    if (!unused) return unused.error();
  }
  if (s.type == RopeType::Yarn || s.type == RopeType::LongRope || s.type == RopeType::Llama3) {
    // original_max_position_embeddings: top-level (Phi-3) and inside must agree; default
    // max_position_embeddings (transformers' standardize_rope_params)
    Expected<std::optional<int>> top =
        read.positions(config, "original_max_position_embeddings", "original_max_position_embeddings");
    if (!top) return top.error();
    Expected<std::optional<int>> in = read.positions(*params, "original_max_position_embeddings",
                                                     where + ".original_max_position_embeddings");
    if (!in) return in.error();
    if (*top && *in && **top != **in) {
      return Error{file, where + ".original_max_position_embeddings",
                   std::to_string(**in) + " disagrees with the top-level original_max_position_embeddings = " +
                       std::to_string(**top) + " (give one of them)"};
    }
    s.originalMaxPositions = top->value_or(in->value_or(options.maxPositions));
  }
  if (s.type == RopeType::Yarn || s.type == RopeType::LongRope) {
    // factor: null means max_position_embeddings / original_max_position_embeddings
    if (s.type == RopeType::Yarn && !params->contains("factor")) {
      return Error{file, where + ".factor", "missing; rope type 'yarn' needs it"};
    }
    Expected<std::optional<double>> factor =
        read.number(*params, "factor", where + ".factor", /*nullIsAbsent=*/true);
    if (!factor) return factor.error();
    s.factor = factor->value_or(0.0);
    Expected<std::optional<double>> attention =
        read.number(*params, "attention_factor", where + ".attention_factor", true);
    if (!attention) return attention.error();
    s.attentionFactor = attention->value_or(0.0);
    if (*attention && !(**attention > 0)) {
      return Error{file, where + ".attention_factor", "must be a finite number > 0"};
    }
  }
  if (s.type == RopeType::Yarn) {
    struct Optional {
      const char* key;
      double* target;
      double fallback;
    };
    // beta_fast / beta_slow: `or 32` / `or 1` in transformers, so null and 0 take the default
    for (Optional o : {Optional{"beta_fast", &s.betaFast, 32.0}, Optional{"beta_slow", &s.betaSlow, 1.0},
                       Optional{"mscale", &s.mscale, 0.0}, Optional{"mscale_all_dim", &s.mscaleAllDim, 0.0}}) {
      Expected<std::optional<double>> v = read.number(*params, o.key, where + "." + o.key, true);
      if (!v) return v.error();
      *o.target = *v && **v != 0 ? **v : o.fallback;
    }
    if (auto it = params->find("truncate"); it != params->end() && !it->is_null()) {
      if (!it->is_boolean()) return Error{file, where + ".truncate", "must be true or false"};
      s.truncate = it->get<bool>();
    }
  }
  if (s.type == RopeType::LongRope) {
    Expected<std::vector<double>> shortFactor =
        numberList(*params, "short_factor", where + ".short_factor", file);
    if (!shortFactor) return shortFactor.error();
    Expected<std::vector<double>> longFactor =
        numberList(*params, "long_factor", where + ".long_factor", file);
    if (!longFactor) return longFactor.error();
    s.shortFactor = std::move(shortFactor).value();
    s.longFactor = std::move(longFactor).value();
  }
  if (s.type == RopeType::Llama3) {
    for (const char* key : {"low_freq_factor", "high_freq_factor"}) {
      Expected<double> v = read.required(*params, key, where, typeName);
      if (!v) return v.error();
      (std::string(key) == "low_freq_factor" ? s.lowFreqFactor : s.highFreqFactor) = *v;
    }
  }
  return out;
}

std::string ropeFieldName(const json& config, const std::string& field) {
  const bool usesParameters =
      !(config.contains("rope_scaling") && config["rope_scaling"].is_object()) &&
      config.contains("rope_parameters") && config["rope_parameters"].is_object();
  if (usesParameters && field.rfind("rope_scaling", 0) == 0)
    return "rope_parameters" + field.substr(std::string("rope_scaling").size());
  return field;
}

}  // namespace attn::io
