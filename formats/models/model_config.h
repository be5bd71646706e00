// config.json -> model::Config for every decoder family the engine runs (docs/models.md
// lists the fields read per family). Every architecture detail comes from the file; a
// model_type or an option the engine does not implement is refused, naming the field.
#pragma once

#include <cstddef>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "core/models/transformer.h"

namespace attn::io {

// An optional boolean field of config.json (also read by vit_folder.cpp): `fallback` when
// absent or null, an error naming `fileName` and `key` when not true or false.
Expected<bool> boolField(const nlohmann::json& config, const char* key, bool fallback,
                         const std::string& fileName);

inline constexpr std::size_t kMaxModelConfigBytes = 1u << 20;

// The model_type values the engine runs: gpt2, llama, mistral, qwen2, gpt_neox.
bool isSupportedModelType(std::string_view modelType);

// Parses config.json's text. A missing model_type is read as gpt2 (old GPT-2 folders have
// none). Errors: not JSON / not an object, an unknown model_type, a missing or out-of-range
// size, an unsupported activation, a rope key formats/models/rope_config.h refuses (an
// unknown rope type or key, a null rope_theta, keys that disagree), Qwen2's
// use_sliding_window, a head_dim that is not hidden_size / num_attention_heads, GPT-2's
// scale_attn_weights = false or scale_attn_by_inverse_layer_idx = true; each names `fileName`
// and the field.
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
