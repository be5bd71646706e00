// Loading a Hugging Face model folder for the transformer engine (core/models/transformer.h):
// config.json (formats/models/model_config.h), the safetensors checkpoint (single or sharded,
// F32 / F16 / BF16) and, for gpt2, vocab.json + merges.txt. docs/models.md lists the tensors
// expected per family.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/models/transformer.h"
#include "formats/models/checkpoint.h"
#include "formats/models/model_config.h"
#include "formats/models/tensor_source.h"
#include "formats/tokenizers/gpt2_tokenizer.h"

namespace attn::io {

// The weights `config` implies, from `checkpoint`. Every tensor's name, shape and dtype is
// checked before any is used:
//   - a missing tensor, a wrong shape or a dtype other than F32 / F16 / BF16;
//   - a tensor of a layer >= the config's layer count (config.json says fewer layers than
//     the file holds);
//   - a tensor the model as configured would not use (an unexpected bias, an lm_head that
//     differs from the tied embedding), so that nothing in the file is silently ignored;
//     the family's known buffers (attn.bias, masked_bias, rotary_emb.inv_freq) are skipped.
// Then F32 tensors with 4-byte-aligned data are used in place from the mapping (no copy;
// the Weights keep the files open); F16 / BF16 / unaligned tensors are converted once. Every
// value must be finite. Errors name the file and the tensor.
// How BF16 checkpoints are kept.
struct LoadOptions {
  // true: BF16 weight matrices (every Linear, the embedding, lm_head) are used in place from
  // the mapping, multiplied by core/isa's BF16 kernels (peak memory = the file + the
  // activations); norms, biases and position tables are converted. false: every tensor is
  // converted to float32 (the reference the BF16 path is tested against).
  bool bf16InPlace = true;
};

Expected<model::Weights> loadModelWeights(const Checkpoint& checkpoint,
                                          const model::Config& config,
                                          const LoadOptions& options = {});
// The same from any TensorSource (a safetensors checkpoint through SafetensorsSource, a GGUF
// file): the family table's row of config.modelType names every tensor
// (formats/models/families.h); fused tensors are split into row views; norm weights get
// config.normWeightOffset added (into owned copies).
Expected<model::Weights> loadModelWeights(const TensorSource& source, const model::Config& config,
                                          const LoadOptions& options = {});

struct Family;
struct TensorPlan;
// The checks and binding of loadModelWeights for a plan already made: `w` holds the config
// and the targets `plan` points into (family.planTensors filled both); on success every
// target is bound. A source that stores a family's tensors under other names (a GGUF file,
// formats/models/gguf_model.cpp) renames the plan's wants first and calls this.
Status loadPlannedWeights(const TensorSource& source, const Family& family, const TensorPlan& plan,
                          const LoadOptions& options, model::Weights& w);

// The tokenizer a model folder ships, in this order: tokenizer.json (byte-level BPE, or BPE
// with byte_fallback and Metaspace), else tokenizer.model (SentencePiece), else vocab.json +
// merges.txt. Null with no error when the folder has none of them. Every id must be below
// `vocabSize` (config.json's vocab_size). Errors name the file and the field.
Expected<std::shared_ptr<const Tokenizer>> loadFolderTokenizer(const std::string& folder,
                                                               int vocabSize);

// How a model file stores one kind of tensor: `count` tensors of kind `kind` (a GGUF name
// without "blk.N." and ".weight": "attn_q", "ffn_down", "token_embd", "attn_q.bias") in
// ggml type `type` ("Q4_K", "F32"), `bytes` in all. A kind stored in two types (a Q4_K_M
// mix: attn_v Q4_K on some layers, Q6_K on others) has one row per type.
struct TensorKindType {
  std::string kind;
  std::string type;
  int count = 0;
  std::uint64_t bytes = 0;
};

// A loaded model folder. `tokenizer` is loadFolderTokenizer's. A non-gpt2 folder whose
// tokenizer cannot be read still loads (it runs from token ids) and says why in
// `tokenizerProblem` (the error's message, naming the file and field).
struct ModelFolder {
  std::string folder;
  std::shared_ptr<const model::Weights> weights;
  std::shared_ptr<const Tokenizer> tokenizer;  // null: none (see tokenizerProblem)
  std::string tokenizerProblem;
  // A GGUF file's tensors by kind and ggml type, in the order the file first lists each
  // (ggufTensorTypes, formats/models/gguf_model.h); empty for a safetensors folder.
  std::vector<TensorKindType> tensorTypes;
};

// Loads FOLDER/config.json, the tokenizer (loadFolderTokenizer) and the checkpoint, the
// cheap checks first. Without a readable tokenizer the model still loads (it runs from
// token ids), with `tokenizer` null and `tokenizerProblem` saying what is missing or wrong
// (a missing vocab.json, a merges.txt line, an id beyond vocab_size). FOLDER may instead be a GGUF file (its first bytes
// "GGUF"): loadGgufModel (formats/models/gguf_model.h) loads it, with its own tokenizer and
// its weights through the same family table.
Expected<ModelFolder> loadModelFolder(const std::string& folder, const LoadOptions& options = {});

}  // namespace attn::io
