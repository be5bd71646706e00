// What the encoder rows (bert, distilbert, roberta) and the vision rows (vit, deit) of the
// family table share (formats/models/families/*.cpp): the tensor tables they fill
// (TensorSlot lists for bindTensors, formats/models/tensor_binding.h), the BERT-style config
// fields and block names, the MLM heads and the ViT layout. Not a family itself.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "formats/models/checkpoint.h"
#include "formats/models/families.h"
#include "formats/models/tensor_binding.h"

namespace attn::io {

// The tensors one encoder or vision configuration needs, by checkpoint name.
struct SlotPlan {
  explicit SlotPlan(const Checkpoint& checkpoint) : checkpoint(checkpoint) {}
  const Checkpoint& checkpoint;
  std::vector<TensorSlot> slots;
  // Encoders: a norm stored under the old gamma / beta names (TF-converted checkpoints) is
  // read under them when the .weight name is absent.
  bool oldNormNames = false;

  // One tensor of exactly `shape`; the model sees it as rows x cols (0: TensorSlot's rule).
  void add(const std::string& name, std::vector<std::int64_t> shape, model::Tensor* target,
           std::int64_t rows = 0, std::int64_t cols = 0);
  // nn.Linear: weight [out, in], bias [out].
  void linear(const std::string& name, std::int64_t in, std::int64_t out, model::Linear& lin);
  // nn.LayerNorm of width E: weight [E], bias [E].
  void norm(const std::string& name, std::int64_t E, model::NormWeights& n);
  // A tensor the model knows and does not use (a pooler): checked when present.
  void unused(const std::string& name, std::vector<std::int64_t> shape);
  bool has(const std::string& name) const { return checkpoint.find(name) != nullptr; }
};

// An encoder row's table: `weights` is sized and pointed into; the MLM head is planned when
// the checkpoint has its transform.
struct EncoderPlan : SlotPlan {
  EncoderPlan(const Checkpoint& checkpoint, const model::EncoderConfig& config, bool tiedDecoder,
              model::EncoderWeights& weights)
      : SlotPlan(checkpoint), config(config), tiedDecoder(tiedDecoder), weights(weights) {
    oldNormNames = true;
  }
  const model::EncoderConfig& config;
  bool tiedDecoder;  // config.json's tie_word_embeddings (default true)
  model::EncoderWeights& weights;
  // Set by the plan: the decoder tensor compared with the word embedding when tied, and a
  // second copy of the head's bias (…decoder.bias) compared with it; empty: none.
  std::string decoderWeight, extraBias;
};

// A vision row's table, with config.json (the classifier's labels come from id2label).
struct VisionPlan : SlotPlan {
  VisionPlan(const Checkpoint& checkpoint, const model::VitConfig& config, const nlohmann::json& configJson,
             std::string configPath, model::VitWeights& weights)
      : SlotPlan(checkpoint), config(config), configJson(configJson), configPath(std::move(configPath)),
        weights(weights) {}
  const model::VitConfig& config;
  const nlohmann::json& configJson;
  std::string configPath;
  model::VitWeights& weights;
};

namespace family {

// BERT's config names: num_hidden_layers, num_attention_heads, hidden_size,
// intermediate_size, max_position_embeddings, vocab_size (required); hidden_act (gelu),
// type_vocab_size (2), layer_norm_eps (1e-12); position_embedding_type must be "absolute",
// is_decoder and add_cross_attention false. The MLM transform's activation is hidden_act.
Status readBertStyle(ConfigReader& r, model::EncoderConfig& out);

// The word, position (and token-type) embeddings and their LayerNorm under `prefix`
// ("bert.", "roberta.", "distilbert."; "" when the checkpoint has them bare).
void planEmbeddings(EncoderPlan& plan, const std::string& prefix);
// BERT's and RoBERTa's blocks: prefix + encoder.layer.l.{attention.self.{query,key,value},
// attention.output.{dense,LayerNorm}, intermediate.dense, output.{dense,LayerNorm}}.
void planBertLayers(EncoderPlan& plan, const std::string& prefix);
// The MLM head when the checkpoint has `transform`.weight: transform (Linear E -> E), its
// norm, the bias [V] and the decoder [V, E] (the word embedding when tied: the file's copy
// is checked against it), and `decoderBias` (a second copy of the bias) when not empty.
void planMlmHead(EncoderPlan& plan, const std::string& transform, const std::string& norm,
                 const std::string& decoder, const std::string& bias, const std::string& decoderBias);
// The family prefix of a checkpoint: `prefix` when it holds prefix + `probe`, else "".
std::string checkpointPrefix(const SlotPlan& plan, const std::string& prefix, const std::string& probe);

// ViT's config names: hidden_size, num_hidden_layers, num_attention_heads,
// intermediate_size (required), image_size (224), patch_size (16), num_channels (3),
// hidden_act (gelu), layer_norm_eps (1e-12), qkv_bias (must be true); id2label and the
// heads attnscope does not run are known keys.
Status readVitStyle(ConfigReader& r, model::VitConfig& out);
// ViT's tensors under `prefix` ("vit.", "deit.", or "" when bare): the patch convolution,
// [CLS] (and the distillation token when config.distillationToken), the positions, the
// blocks (attention.attention.{query,key,value}, attention.output.dense,
// layernorm_before / _after, intermediate.dense, output.dense), the final layernorm, the
// pooler (checked, unused) and the classifier (with distillationToken and a teacher:
// cls_classifier and distillation_classifier) with config.json's id2label.
Status planVitStyle(VisionPlan& plan, const std::string& prefix);

// config.json of a BERT-style encoder (the names readBertStyle reads; model_type, the sizes,
// hidden_act, type_vocab_size, layer_norm_eps, position_embedding_type "absolute").
nlohmann::ordered_json writeBertStyle(const model::EncoderConfig& c);
// config.json of a ViT-style model (the names readVitStyle reads; qkv_bias true).
nlohmann::ordered_json writeVitStyle(const model::VitConfig& c);

// Checkpoint buffers of the BERT family (embeddings.position_ids, .token_type_ids).
bool isEncoderBuffer(std::string_view name);

}  // namespace family
}  // namespace attn::io
