// config.json for every family (see model_config.h).
#include "formats/models/model_config.h"

#include <filesystem>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "formats/files.h"
#include "formats/models/families.h"
#include "formats/models/rope_config.h"
#include "formats/tokenizers/gpt2_tokenizer.h"

namespace attn::io {
namespace {

using nlohmann::json;

// The GPT-2-style names validate(Config) uses, as a family with Hugging Face's usual names
// (num_hidden_layers, ...) calls them in config.json.
std::string familyField(const Family& family, const model::Config& c, const std::string& field) {
  if (family.layersField == "n_layer") return field;  // GPT-2's own names
  static const std::map<std::string, std::string> kNames = {
      {"n_layer", "num_hidden_layers"},     {"n_head", "num_attention_heads"},
      {"n_embd", "hidden_size"},            {"n_inner", "intermediate_size"},
      {"n_positions", "max_position_embeddings"}};
  if (auto it = kNames.find(field); it != kNames.end()) return it->second;
  if (field == "layer_norm_epsilon")
    return c.norm == model::NormKind::LayerNorm ? "layer_norm_eps" : "rms_norm_eps";
  if (field == "rotary_dims") return c.qkvLayout == model::QkvLayout::FusedPerHead ? "rotary_pct" : "head_dim";
  return field;
}

}  // namespace

bool isSupportedModelType(std::string_view t) {
  const Family* family = findFamily(t);
  return family && family->kind == ModelKind::Decoder;
}

Expected<model::Config> parseModelConfig(std::string_view text, const std::string& fileName) {
  json config = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded()) return Error{fileName, "", "not valid JSON"};
  if (!config.is_object()) return Error{fileName, "", "not a JSON object"};

  ConfigReader reader(config, fileName);
  model::Config out;
  // A missing model_type is GPT-2 (old GPT-2 folders have none): the table's first row.
  const Family* family = families().front();
  if (const json* type = reader.find("model_type")) {
    if (!type->is_string()) return Error{fileName, "model_type", type->dump() + " is not a string"};
    if (!isSupportedModelType(type->get<std::string>())) {
      const Family* other = findFamily(type->get<std::string>());
      return Error{fileName, "model_type",
                   type->dump() + (other ? std::string(" is ") + kindName(other->kind) + ", not a decoder"
                                         : " is not supported (" + everyFamilyName() + ")")};
    }
    family = findFamily(type->get<std::string>());
  }
  out.modelType = std::string(family->modelType);
  if (Status s = family->readConfig(reader, out); !s) return s.error();
  if (Status s = reader.finish(out.modelType); !s) return s.error();
  if (Status valid = model::validate(out); !valid) {
    Error error = valid.error();
    error.file = fileName;
    error.field = ropeFieldName(reader.object(), familyField(*family, out, error.field));
    return error;
  }
  return out;
}

Expected<std::string> readFolderConfig(const std::string& folder) {
  std::error_code ec;
  if (!std::filesystem::exists(folder, ec))
    return Error{folder, "", "does not exist (give a Hugging Face model folder or a .gguf file)"};
  if (!std::filesystem::is_directory(folder, ec))
    return Error{folder, "", "not a folder (expected a Hugging Face model download, or a .gguf file)"};
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
