// The encoder and vision rows' shared readers and tensor tables (see bidirectional.h).
#include "formats/models/families/bidirectional.h"

#include <algorithm>

namespace attn::io {

void SlotPlan::add(const std::string& name, std::vector<std::int64_t> shape, model::Tensor* target,
                   std::int64_t rows, std::int64_t cols) {
  slots.push_back({name, std::move(shape), target, rows, cols});
}

void SlotPlan::linear(const std::string& name, std::int64_t in, std::int64_t out, model::Linear& lin) {
  lin.outByIn = true;
  add(name + ".weight", {out, in}, &lin.weight);
  add(name + ".bias", {out}, &lin.bias);
}

void SlotPlan::norm(const std::string& name, std::int64_t E, model::NormWeights& n) {
  const bool old = oldNormNames && !has(name + ".weight") && has(name + ".gamma");
  add(name + (old ? ".gamma" : ".weight"), {E}, &n.weight);
  add(name + (old ? ".beta" : ".bias"), {E}, &n.bias);
}

void SlotPlan::unused(const std::string& name, std::vector<std::int64_t> shape) {
  if (has(name)) add(name, std::move(shape), nullptr);
}

namespace family {

Status readBertStyle(ConfigReader& r, model::EncoderConfig& out) {
  for (auto [key, target] : {std::pair<const char*, int*>{"num_hidden_layers", &out.nLayer},
                             {"num_attention_heads", &out.nHead},
                             {"hidden_size", &out.nEmbd},
                             {"intermediate_size", &out.nInner},
                             {"max_position_embeddings", &out.nPositions},
                             {"vocab_size", &out.vocabSize}}) {
    Expected<int> value = r.integer(key, 0);
    if (!value) return value.error();
    *target = *value;
  }
  Expected<model::Activation> activation = r.activation("hidden_act", "gelu");
  if (!activation) return activation.error();
  out.activation = *activation;
  Expected<int> types = r.integer("type_vocab_size", 2, /*nullIsFallback=*/true, 0);
  if (!types) return types.error();
  out.typeVocabSize = *types;
  Expected<double> eps = r.number("layer_norm_eps", out.normEpsilon, /*nullIsFallback=*/true);
  if (!eps) return eps.error();
  out.normEpsilon = static_cast<float>(*eps);
  for (Status s : {r.require("position_embedding_type", "absolute", "only absolute position embeddings"),
                   r.require("is_decoder", false, "an encoder is run bidirectionally"),
                   r.require("add_cross_attention", false, "cross-attention needs a second input")}) {
    if (!s) return s.error();
  }
  out.headActivation = out.activation;  // BERT's transform uses hidden_act
  return Ok{};
}

std::string checkpointPrefix(const SlotPlan& plan, const std::string& prefix, const std::string& probe) {
  return plan.has(prefix + probe) ? prefix : "";
}

void planEmbeddings(EncoderPlan& plan, const std::string& p) {
  const model::EncoderConfig& c = plan.config;
  model::EncoderWeights& w = plan.weights;
  const std::int64_t E = c.nEmbd, V = c.vocabSize;
  w.layers.resize(static_cast<std::size_t>(c.nLayer));
  plan.add(p + "embeddings.word_embeddings.weight", {V, E}, &w.wordEmbed);
  plan.add(p + "embeddings.position_embeddings.weight", {c.nPositions, E}, &w.positions);
  if (c.typeVocabSize > 0)
    plan.add(p + "embeddings.token_type_embeddings.weight", {c.typeVocabSize, E}, &w.tokenTypes);
  plan.norm(p + "embeddings.LayerNorm", E, w.embedNorm);
}

void planBertLayers(EncoderPlan& plan, const std::string& p) {
  const model::EncoderConfig& c = plan.config;
  const std::int64_t E = c.nEmbd, F = c.nInner;
  for (int l = 0; l < c.nLayer; ++l) {
    model::EncoderLayerWeights& layer = plan.weights.layers[static_cast<std::size_t>(l)];
    const std::string h = p + "encoder.layer." + std::to_string(l) + ".";
    plan.linear(h + "attention.self.query", E, E, layer.q);
    plan.linear(h + "attention.self.key", E, E, layer.k);
    plan.linear(h + "attention.self.value", E, E, layer.v);
    plan.linear(h + "attention.output.dense", E, E, layer.out);
    plan.norm(h + "attention.output.LayerNorm", E, layer.norm1);
    plan.linear(h + "intermediate.dense", E, F, layer.up);
    plan.linear(h + "output.dense", F, E, layer.down);
    plan.norm(h + "output.LayerNorm", E, layer.norm2);
  }
}

void planMlmHead(EncoderPlan& plan, const std::string& transform, const std::string& norm,
                 const std::string& decoder, const std::string& bias, const std::string& decoderBias) {
  if (!plan.has(transform + ".weight")) return;
  const std::int64_t E = plan.config.nEmbd, V = plan.config.vocabSize;
  model::EncoderWeights& w = plan.weights;
  w.hasMlmHead = true;
  plan.linear(transform, E, E, w.mlm.transform);
  plan.norm(norm, E, w.mlm.norm);
  plan.add(bias, {V}, &w.mlm.bias);
  if (plan.tiedDecoder) {
    plan.unused(decoder, {V, E});
    plan.decoderWeight = decoder;
  } else {
    plan.add(decoder, {V, E}, &w.mlm.decoder);
  }
  if (!decoderBias.empty()) {
    plan.unused(decoderBias, {V});
    plan.extraBias = decoderBias;
  }
}

nlohmann::ordered_json writeBertStyle(const model::EncoderConfig& c) {
  return {{"model_type", c.modelType},
          {"num_hidden_layers", c.nLayer},
          {"num_attention_heads", c.nHead},
          {"hidden_size", c.nEmbd},
          {"intermediate_size", c.nInner},
          {"max_position_embeddings", c.nPositions},
          {"vocab_size", c.vocabSize},
          {"type_vocab_size", c.typeVocabSize},
          {"layer_norm_eps", c.normEpsilon},
          {"hidden_act", activationName(c.activation)},
          {"position_embedding_type", "absolute"}};
}

nlohmann::ordered_json writeVitStyle(const model::VitConfig& c) {
  return {{"model_type", c.modelType},
          {"num_hidden_layers", c.nLayer},
          {"num_attention_heads", c.nHead},
          {"hidden_size", c.nEmbd},
          {"intermediate_size", c.nInner},
          {"image_size", c.imageSize},
          {"patch_size", c.patchSize},
          {"num_channels", c.channels},
          {"hidden_act", activationName(c.activation)},
          {"layer_norm_eps", c.normEpsilon},
          {"qkv_bias", true}};
}

bool isEncoderBuffer(std::string_view name) {
  for (std::string_view suffix : {"embeddings.position_ids", "embeddings.token_type_ids"}) {
    if (name.size() >= suffix.size() && name.substr(name.size() - suffix.size()) == suffix) return true;
  }
  return false;
}

Status readVitStyle(ConfigReader& r, model::VitConfig& out) {
  struct Field {
    const char* key;
    int* target;
    int fallback;
  };
  for (Field f : {Field{"num_hidden_layers", &out.nLayer, -1}, Field{"num_attention_heads", &out.nHead, -1},
                  Field{"hidden_size", &out.nEmbd, -1}, Field{"intermediate_size", &out.nInner, -1},
                  Field{"image_size", &out.imageSize, 224}, Field{"patch_size", &out.patchSize, 16},
                  Field{"num_channels", &out.channels, 3}}) {
    Expected<int> v = f.fallback < 0 ? r.integer(f.key) : r.integer(f.key, f.fallback, /*nullIsFallback=*/true);
    if (!v) return v.error();
    *f.target = *v;
  }
  Expected<model::Activation> activation = r.activation("hidden_act", "gelu");
  if (!activation) return activation.error();
  out.activation = *activation;
  Expected<double> eps = r.number("layer_norm_eps", out.normEpsilon, /*nullIsFallback=*/true);
  if (!eps) return eps.error();
  out.normEpsilon = static_cast<float>(*eps);
  Expected<bool> qkvBias = r.flag("qkv_bias", true);
  if (!qkvBias) return qkvBias.error();
  if (!*qkvBias) return Error{r.fileName(), "qkv_bias", "false is not supported"};
  // Every other key is read elsewhere (id2label: planVitStyle), harmless, or refused by
  // name: the pooler and masked-image-modelling decoder (encoder_stride) are not run.
  r.ignore({"id2label", "label2id", "num_labels", "problem_type", "encoder_stride", "pooler_act",
            "pooler_output_size"});
  return Ok{};
}

Status planVitStyle(VisionPlan& plan, const std::string& family) {
  const model::VitConfig& c = plan.config;
  model::VitWeights& w = plan.weights;
  const std::int64_t E = c.nEmbd, F = c.nInner, T = c.tokens(), p = c.patchSize;
  const std::string pre = checkpointPrefix(plan, family, "embeddings.cls_token");
  w.patch.outByIn = true;
  plan.add(pre + "embeddings.patch_embeddings.projection.weight", {E, c.channels, p, p}, &w.patch.weight, E,
           c.channels * p * p);
  plan.add(pre + "embeddings.patch_embeddings.projection.bias", {E}, &w.patch.bias);
  plan.add(pre + "embeddings.cls_token", {1, 1, E}, &w.cls, 1, E);
  if (c.distillationToken) plan.add(pre + "embeddings.distillation_token", {1, 1, E}, &w.distillation, 1, E);
  plan.add(pre + "embeddings.position_embeddings", {1, T, E}, &w.positions, T, E);
  plan.unused(pre + "embeddings.mask_token", {1, 1, E});
  w.layers.resize(static_cast<std::size_t>(c.nLayer));
  for (int l = 0; l < c.nLayer; ++l) {
    model::EncoderLayerWeights& layer = w.layers[static_cast<std::size_t>(l)];
    const std::string h = pre + "encoder.layer." + std::to_string(l) + ".";
    plan.linear(h + "attention.attention.query", E, E, layer.q);
    plan.linear(h + "attention.attention.key", E, E, layer.k);
    plan.linear(h + "attention.attention.value", E, E, layer.v);
    plan.linear(h + "attention.output.dense", E, E, layer.out);
    plan.norm(h + "layernorm_before", E, layer.norm1);
    plan.linear(h + "intermediate.dense", E, F, layer.up);
    plan.linear(h + "output.dense", F, E, layer.down);
    plan.norm(h + "layernorm_after", E, layer.norm2);
  }
  plan.norm(pre + "layernorm", E, w.finalNorm);
  plan.unused(pre + "pooler.dense.weight", {E, E});
  plan.unused(pre + "pooler.dense.bias", {E});
  // The classifier and its labels
  const bool teacher = c.distillationToken && plan.has("cls_classifier.weight");
  const std::string head = teacher ? "cls_classifier" : "classifier";
  const Checkpoint::Entry* entry = plan.checkpoint.find(head + ".weight");
  if (!entry) return Ok{};
  const std::int64_t K = entry->info->shape.empty() ? 0 : entry->info->shape[0];
  auto labels = plan.configJson.find("id2label");
  if (labels == plan.configJson.end() || !labels->is_object() || labels->empty()) {
    return Error{plan.configPath, "id2label",
                 "missing, but the checkpoint has a classifier of " + std::to_string(K) +
                     " labels (its names come from id2label)"};
  }
  w.labels.assign(static_cast<std::size_t>(std::max<std::int64_t>(K, 0)), std::string());
  for (std::int64_t k = 0; k < K; ++k) {
    auto it = labels->find(std::to_string(k));
    if (it == labels->end() || !it->is_string()) {
      return Error{plan.configPath, "id2label",
                   "has no label for class " + std::to_string(k) + " of the classifier's " + std::to_string(K)};
    }
    w.labels[static_cast<std::size_t>(k)] = it->get<std::string>();
  }
  if (static_cast<std::int64_t>(labels->size()) != K) {
    return Error{plan.configPath, "id2label",
                 std::to_string(labels->size()) + " labels, but the classifier has " + std::to_string(K) + " rows"};
  }
  plan.linear(head, E, K, w.classifier);
  if (teacher) plan.linear("distillation_classifier", E, K, w.distillationClassifier);
  return Ok{};
}

}  // namespace family
}  // namespace attn::io
