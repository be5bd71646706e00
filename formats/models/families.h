// The family table, after llama.cpp's architecture table (LLM_ARCH_NAMES, LLM_TENSOR_NAMES):
// one row per config.json model_type, each defined in its own file under
// formats/models/families/ (the config fields it reads, the tensor names of its
// checkpoints and, for a decoder llama.cpp runs, its GGUF names) and listed in families.cpp. Every kind has rows:
// decoders, encoders and vision transformers. The loaders (model_config.cpp,
// model_folder.cpp, encoder_folder.cpp, vit_folder.cpp), the one opener
// (formats/models/open_model.h) and tools/gen_checkpoint go through this table only;
// docs/models.md ("How to add a family") walks through adding a row.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/models/encoder.h"
#include "core/models/model_run.h"
#include "core/models/transformer.h"
#include "core/models/vit.h"
#include "formats/models/hf_config.h"
#include "formats/models/tensor_source.h"

namespace attn::io {

// What a model_type is: a decoder the transformer engine runs, an encoder
// (core/models/encoder.h) or a vision transformer (core/models/vit.h); the one enum of
// core/models/model_run.h, whose runModel runs every kind.
using ModelKind = model::ModelKind;

// One part of a checkpoint tensor: rows [firstRow, firstRow + rows) of a [R, C] tensor (a
// vector's elements when C = 1). A fused tensor (phi3's qkv_proj, gate_up_proj) has several
// parts; they are views into the one tensor, never copies.
struct TensorPart {
  model::Tensor* target = nullptr;
  std::int64_t firstRow = 0, rows = 0;  // rows = 0: the whole tensor
};

// One tensor a model needs, by its checkpoint name.
struct TensorWant {
  std::string name;
  std::vector<std::int64_t> shape;  // [rows, cols] or [size], exactly as stored
  std::vector<TensorPart> parts;
  bool matrix = false;  // a weight matrix the engine reads as BF16 in place
  bool norm = false;    // a norm weight (Config::normWeightOffset is added to it on loading)
  // A Conv1D weight ([in, out]): its Linear, for a source that stores it transposed (a GGUF
  // file of gpt2 holds [out, in]; formats/models/gguf_model.cpp turns the want around).
  model::Linear* conv1d = nullptr;
};

// The tensor-name table of one decoder configuration, with helpers that fill it.
struct TensorPlan {
  std::string layerPrefix;  // "h." / "model.layers." / ... (tensors of layer l start with it + l)
  std::string embedName;    // the token embedding
  std::string lmHeadName;   // the output head (read when untied; compared when tied)
  std::vector<TensorWant> wants;
  // For messages: what describes the model and its layer-count key (set by the loader:
  // "config.json" and the row's layersField, or a GGUF file's metadata and key).
  std::string describedBy = "config.json", layersKey;

  // nn.Linear: weight [out, in], bias [out] when `bias`.
  void linear(const std::string& name, std::int64_t in, std::int64_t out, bool bias,
              model::Linear& lin);
  // GPT-2's Conv1D: weight [in, out], bias [out].
  void conv1d(const std::string& name, std::int64_t in, std::int64_t out, model::Linear& lin);
  // A norm of width E: weight [E], and bias [E] for LayerNorm.
  void norm(const std::string& name, std::int64_t E, model::NormKind kind, model::NormWeights& n);
  // A weight matrix [rows, cols] (embedding, lm_head) or any tensor.
  void matrix(const std::string& name, std::int64_t rows, std::int64_t cols, model::Tensor& t);
  void tensor(const std::string& name, std::vector<std::int64_t> shape, model::Tensor& t);
  // A fused nn.Linear weight [Σ part rows, in] (no bias) split by rows into `parts`' Linears
  // (in order: phi3's qkv_proj = q | k | v, gate_up_proj = gate | up).
  void fusedLinear(const std::string& name, std::int64_t in,
                   std::initializer_list<std::pair<model::Linear*, std::int64_t>> parts);
};

// The tensor tables of the encoder and vision rows (formats/models/families/bidirectional.h).
struct EncoderPlan;
struct VisionPlan;
struct GgufArchitecture;
// The configuration of an encoder or a vision row.
using BidirectionalConfig = std::variant<model::EncoderConfig, model::VitConfig>;

struct Family {
  std::string_view modelType;  // config.json's model_type
  ModelKind kind = ModelKind::Decoder;
  // The config.json name of the layer count, for messages ("n_layer", "num_hidden_layers").
  std::string_view layersField;
  // Decoders: reads the family's fields into `out` (out.modelType is set). Every key it
  // uses goes through `config`; ConfigReader::finish refuses the rest afterwards.
  Status (*readConfig)(ConfigReader& config, model::Config& out) = nullptr;
  // Decoders: the tensor names, shapes and targets of configuration `c` (`source` tells
  // prefixes apart, e.g. GPT2Model against GPT2LMHeadModel; it may hold no tensors, as for
  // tools/gen_checkpoint). Sizes w.layers.
  void (*planTensors)(const model::Config& c, const TensorSource& source, model::Weights& w,
                      TensorPlan& plan) = nullptr;
  // Decoders: config.json for configuration `c` (tools/gen_checkpoint): read back by
  // readConfig, it gives `c`.
  nlohmann::ordered_json (*writeConfig)(const model::Config& c) = nullptr;
  // Non-parameter buffers some checkpoints carry (causal masks, rotary tables): skipped.
  bool (*isBuffer)(std::string_view name) = nullptr;
  // Its checkpoints ship a byte-level vocab.json + merges.txt (gpt2), which
  // tools/gen_checkpoint writes too. No family requires a tokenizer: a folder without one
  // runs from --ids, and --text names what is missing.
  bool byteLevelVocab = false;
  // Decoders that llama.cpp runs too: the family's GGUF row (general.architecture, keys,
  // tensor names; formats/models/families/gguf_architecture.h). nullptr: no GGUF files.
  const GgufArchitecture* gguf = nullptr;

  // Encoders (kind Encoder): reads the family's fields into `out` (out.modelType is set);
  // the keys every encoder shares (tie_word_embeddings, the heads attnscope does not run)
  // and ConfigReader::finish are the encoder loader's (encoder_folder.cpp).
  Status (*readEncoderConfig)(ConfigReader& config, model::EncoderConfig& out) = nullptr;
  // Encoders: the tensor names, shapes and targets of plan.config (and the MLM head when the
  // checkpoint has one); sizes plan.weights.layers.
  void (*planEncoderTensors)(EncoderPlan& plan) = nullptr;
  // Vision transformers (kind Vision): reads the family's fields into `out` (out.modelType
  // is set); finish is the vision loader's (vit_folder.cpp).
  Status (*readVisionConfig)(ConfigReader& config, model::VitConfig& out) = nullptr;
  // Vision transformers: the tensor names, shapes and targets of plan.config, the classifier
  // and its labels (config.json's id2label). Errors name config.json's field.
  Status (*planVisionTensors)(VisionPlan& plan) = nullptr;
  // The config.json name of a field the engine's validate() names ("num_attention_heads" ->
  // DistilBERT's "n_heads"); nullptr: the same name.
  std::string (*configField)(const std::string& field) = nullptr;
  // Encoders and vision transformers: config.json for configuration `c` (of the row's kind:
  // an EncoderConfig or a VitConfig; tools/gen_checkpoint): read back by readEncoderConfig /
  // readVisionConfig, it gives `c`. (Decoders: writeConfig.)
  nlohmann::ordered_json (*writeBidirectionalConfig)(const BidirectionalConfig& c) = nullptr;
};

// Every row, decoders first, in the order docs/models.md lists them.
std::span<const Family* const> families();
// The row of `modelType`, or nullptr.
const Family* findFamily(std::string_view modelType);
// The row whose GGUF general.architecture is `architecture` (e.g. gptneox), or nullptr.
const Family* findGgufFamily(std::string_view architecture);
// "gpt2, llama, ..." : every GGUF general.architecture a row runs (for messages).
std::string ggufArchitectureNames();
// The row of `modelType` when it is of kind `kind`, or nullptr.
const Family* findFamily(std::string_view modelType, ModelKind kind);
// "gpt2, llama, ..." of one kind (for messages).
std::string familyNames(ModelKind kind);
// Every row by kind, for messages and help: "decoders gpt2, llama, ...; encoders bert, ...;
// vision transformers vit, deit".
std::string everyFamilyName();
// What a kind is in messages: "a decoder", "an encoder", "a vision transformer".
const char* kindName(ModelKind kind);

}  // namespace attn::io
