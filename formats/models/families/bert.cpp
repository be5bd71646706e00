// BERT (BertForMaskedLM, transformers' modeling_bert): post-LN encoder blocks, learned
// positions and token types, the MLM head cls.predictions (transform with hidden_act, its
// LayerNorm, the decoder tied to the word embedding), the pooler and next-sentence head
// checked and not run.
#include "formats/models/families/bidirectional.h"

namespace attn::io::bert_family {
namespace {

Status readConfig(ConfigReader& r, model::EncoderConfig& out) { return family::readBertStyle(r, out); }

void planTensors(EncoderPlan& plan) {
  const std::int64_t E = plan.config.nEmbd;
  const std::string p = family::checkpointPrefix(plan, "bert.", "embeddings.word_embeddings.weight");
  family::planEmbeddings(plan, p);
  family::planBertLayers(plan, p);
  plan.unused(p + "pooler.dense.weight", {E, E});
  plan.unused(p + "pooler.dense.bias", {E});
  plan.unused("cls.seq_relationship.weight", {2, E});
  plan.unused("cls.seq_relationship.bias", {2});
  family::planMlmHead(plan, "cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm",
                      "cls.predictions.decoder.weight", "cls.predictions.bias", "cls.predictions.decoder.bias");
}

nlohmann::ordered_json writeConfig(const BidirectionalConfig& c) {
  return family::writeBertStyle(std::get<model::EncoderConfig>(c));
}

}  // namespace

// This family's row of the table (formats/models/families.cpp).
extern const Family kFamily = {.modelType = "bert",
                               .kind = ModelKind::Encoder,
                               .layersField = "num_hidden_layers",
                               .isBuffer = family::isEncoderBuffer,
                               .readEncoderConfig = readConfig,
                               .planEncoderTensors = planTensors,
                               .writeBidirectionalConfig = writeConfig};

}  // namespace attn::io::bert_family
