// Loading a Hugging Face GPT-2 folder: config.json, model.safetensors, vocab.json and
// merges.txt (see docs/models.md). Every size comes from config.json, so the same code loads
// gpt2, distilgpt2, gpt2-medium, -large and -xl. Errors name the file and the field/tensor.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "core/models/gpt2/model.h"
#include "formats/tokenizers/gpt2_tokenizer.h"
#include "formats/safetensors.h"

namespace attn::io {

inline constexpr std::size_t kMaxModelConfigBytes = 1u << 20;

// config.json -> Config. Reads n_layer, n_head, n_embd, n_positions (n_ctx when
// n_positions is absent), vocab_size, layer_norm_epsilon (default 1e-5) and n_inner (null
// or absent: 4 * n_embd). Refuses what this forward pass does not implement: a model_type
// other than "gpt2", an activation other than the tanh GELU ("gelu_new"),
// scale_attn_weights = false, scale_attn_by_inverse_layer_idx = true.
Expected<gpt2::Config> parseGpt2Config(std::string_view json, const std::string& fileName);
Expected<gpt2::Config> loadGpt2Config(const std::string& path);

// The weights named in `file`, with or without the "transformer." prefix, converted to
// float32 once. Tensors the forward pass does not use (h.N.attn.bias, h.N.attn.masked_bias,
// lm_head.weight, ...) are ignored. Each tensor is checked against `config` (shape, dtype,
// finite values) before use; errors name the file and the tensor.
Expected<gpt2::Weights> loadGpt2Weights(const SafetensorsFile& file, const gpt2::Config& config);

// A loaded model folder.
struct Gpt2Model {
  std::string folder;
  std::shared_ptr<const gpt2::Weights> weights;
  Gpt2Tokenizer tokenizer;
};

// Loads FOLDER/config.json, vocab.json, merges.txt and model.safetensors (in that order, the
// cheap checks first). Also checks that every vocabulary id is below vocab_size.
Expected<Gpt2Model> loadGpt2Folder(const std::string& folder);

}  // namespace attn::io
