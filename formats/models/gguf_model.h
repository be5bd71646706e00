// A GGUF file (llama.cpp's format, formats/gguf.h) as a model for the transformer engine: the
// `{arch}.*` metadata -> model::Config, the `token_embd` / `blk.N.*` / `output*` tensors ->
// model::Weights used in place from the mapping (F32, and F16 / BF16 / Q4_0 ... Q6_K
// matrices as stored, dequantized as they are multiplied), and the file's own tokenizer
// (tokenizer.ggml.*, formats/tokenizers/gguf_tokenizer.h). The GGUF names of each family are
// in its family file (Family::gguf); this is the one loader that applies them (docs/models.md,
// "GGUF files").
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/models/transformer.h"
#include "formats/gguf.h"
#include "formats/models/model_folder.h"

namespace attn::io {

// True when `path` is a regular file named *.gguf or whose first four bytes are "GGUF".
bool isGgufFile(const std::string& path);

// The Config `file`'s metadata describes: general.architecture is one a family row has as its
// GGUF row (gpt2, llama — mistral-style files say llama too —, qwen2, qwen3, gemma2, phi3,
// gptneox; io::ggufArchitectureNames()); any other is refused by name. Errors name the file
// and the key.
Expected<model::Config> ggufConfig(const GgufFile& file);

// The weights of `config` from `file` (in place; the Weights keep `file` open). Every tensor
// is checked before any is used: present, its ggml dims [in, out] as the config implies, a
// type the engine reads (F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K ... Q6_K for
// matrices; F32 / F16 / BF16 for norms and biases), every f16 scale and float finite, and no
// tensor of the file left unused. Errors name the file and the tensor.
Expected<model::Weights> ggufWeights(const std::shared_ptr<const GgufFile>& file,
                                     const model::Config& config);

// `file`'s tensors grouped by kind and ggml type (ModelFolder::tensorTypes): the kind is the
// name without a "blk.N." prefix and a ".weight" suffix; rows in the order the file first
// lists each (kind, type).
std::vector<TensorKindType> ggufTensorTypes(const GgufFile& file);

// Opens `path` and loads config, weights and the file's tokenizer (a file whose tokenizer
// cannot be read still loads, runs from ids and says why in tokenizerProblem).
Expected<ModelFolder> loadGgufModel(const std::string& path);

}  // namespace attn::io
