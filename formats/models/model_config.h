// config.json -> model::Config for every decoder family the engine runs (docs/models.md
// lists the fields read per family). Every architecture detail comes from the file; a
// model_type or an option the engine does not implement is refused, naming the field.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/models/transformer.h"

namespace attn::io {

inline constexpr std::size_t kMaxModelConfigBytes = 1u << 20;

// A model_type of a decoder row of the family table (formats/models/families.h).
bool isSupportedModelType(std::string_view modelType);

// Parses config.json's text through the family table: the row of its model_type reads its
// fields with the one ConfigReader (formats/models/hf_config.h), then every key left that is
// neither read nor harmless is refused, naming it. A missing model_type is read as the
// table's first row (GPT-2: old GPT-2 folders have none). Errors: not JSON / not an object,
// an unknown model_type, a missing, null or out-of-range size, an unsupported activation or
// option (rope_scaling other than linear, a sliding window the engine does not have, ...),
// a key the family does not read; each names `fileName` and the field.
Expected<model::Config> parseModelConfig(std::string_view json, const std::string& fileName);
// The text of `folder`/config.json (at most kMaxModelConfigBytes), after checking that
// `folder` is a folder. Errors name the folder ("not a folder (expected a Hugging Face model
// download)") or the file. Every model folder reader starts here.
Expected<std::string> readFolderConfig(const std::string& folder);
// Reads and parses the file at `path` (at most kMaxModelConfigBytes).
Expected<model::Config> loadModelConfig(const std::string& path);

// config.json's bos_token_id (for --bos). Errors: the file's, a missing / null / non-integer
// or negative bos_token_id, naming the field.
Expected<int> loadBosTokenId(const std::string& path);

}  // namespace attn::io
