// DistilBERT (DistilBertForMaskedLM, transformers' modeling_distilbert): BERT's post-LN block
// under its own names (n_layers, n_heads, dim, hidden_dim, activation; transformer.layer.l.
// {attention.{q,k,v,out}_lin, sa_layer_norm, ffn.lin1/lin2, output_layer_norm}), no token
// types, every LayerNorm at eps 1e-12, the MLM head vocab_transform / vocab_layer_norm /
// vocab_projector (activation as the MLP's).
#include <map>

#include "formats/models/families/bidirectional.h"

namespace attn::io::distilbert_family {
namespace {

Status readConfig(ConfigReader& r, model::EncoderConfig& out) {
  for (auto [key, target] : {std::pair<const char*, int*>{"n_layers", &out.nLayer},
                             {"n_heads", &out.nHead},
                             {"dim", &out.nEmbd},
                             {"hidden_dim", &out.nInner},
                             {"max_position_embeddings", &out.nPositions},
                             {"vocab_size", &out.vocabSize}}) {
    Expected<int> value = r.integer(key, 0);
    if (!value) return value.error();
    *target = *value;
  }
  Expected<model::Activation> activation = r.activation("activation", "gelu");
  if (!activation) return activation.error();
  out.activation = *activation;
  out.typeVocabSize = 0;
  out.normEpsilon = 1e-12f;  // DistilBERT's LayerNorms are built with eps = 1e-12
  out.headActivation = out.activation;
  return Ok{};
}

// validate(EncoderConfig)'s BERT field names as DistilBERT's config.json calls them.
std::string configField(const std::string& field) {
  static const std::map<std::string, std::string> kNames = {
      {"num_hidden_layers", "n_layers"}, {"num_attention_heads", "n_heads"},
      {"hidden_size", "dim"},            {"intermediate_size", "hidden_dim"}};
  auto it = kNames.find(field);
  return it == kNames.end() ? field : it->second;
}

void planTensors(EncoderPlan& plan) {
  const model::EncoderConfig& c = plan.config;
  const std::int64_t E = c.nEmbd, F = c.nInner;
  const std::string p = family::checkpointPrefix(plan, "distilbert.", "embeddings.word_embeddings.weight");
  family::planEmbeddings(plan, p);
  for (int l = 0; l < c.nLayer; ++l) {
    model::EncoderLayerWeights& layer = plan.weights.layers[static_cast<std::size_t>(l)];
    const std::string h = p + "transformer.layer." + std::to_string(l) + ".";
    plan.linear(h + "attention.q_lin", E, E, layer.q);
    plan.linear(h + "attention.k_lin", E, E, layer.k);
    plan.linear(h + "attention.v_lin", E, E, layer.v);
    plan.linear(h + "attention.out_lin", E, E, layer.out);
    plan.norm(h + "sa_layer_norm", E, layer.norm1);
    plan.linear(h + "ffn.lin1", E, F, layer.up);
    plan.linear(h + "ffn.lin2", F, E, layer.down);
    plan.norm(h + "output_layer_norm", E, layer.norm2);
  }
  family::planMlmHead(plan, "vocab_transform", "vocab_layer_norm", "vocab_projector.weight", "vocab_projector.bias",
                      "");
}

nlohmann::ordered_json writeConfig(const BidirectionalConfig& c) {
  const model::EncoderConfig& e = std::get<model::EncoderConfig>(c);
  return {{"model_type", e.modelType},       {"n_layers", e.nLayer},
          {"n_heads", e.nHead},              {"dim", e.nEmbd},
          {"hidden_dim", e.nInner},          {"max_position_embeddings", e.nPositions},
          {"vocab_size", e.vocabSize},       {"activation", activationName(e.activation)}};
}

}  // namespace

// This family's row of the table (formats/models/families.cpp).
extern const Family kFamily = {.modelType = "distilbert",
                               .kind = ModelKind::Encoder,
                               .layersField = "n_layers",
                               .isBuffer = family::isEncoderBuffer,
                               .readEncoderConfig = readConfig,
                               .planEncoderTensors = planTensors,
                               .configField = configField,
                               .writeBidirectionalConfig = writeConfig};

}  // namespace attn::io::distilbert_family
