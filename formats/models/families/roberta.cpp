// RoBERTa (RobertaForMaskedLM, transformers' modeling_roberta): BERT's blocks and names
// under "roberta.", positions counted from pad_token_id + 1 (default 1), the MLM head
// lm_head (dense, layer_norm, decoder tied to the word embedding) whose transform is always
// the erf GELU.
#include "formats/models/families/bidirectional.h"

namespace attn::io::roberta_family {
namespace {

Status readConfig(ConfigReader& r, model::EncoderConfig& out) {
  if (Status s = family::readBertStyle(r, out); !s) return s;
  out.headActivation = model::Activation::GeluErf;  // RobertaLMHead: gelu, whatever hidden_act says
  Expected<int> pad = r.integer("pad_token_id", 1, /*nullIsFallback=*/true, 0);
  if (!pad) return pad.error();
  out.paddingIdx = *pad;
  return Ok{};
}

void planTensors(EncoderPlan& plan) {
  const std::int64_t E = plan.config.nEmbd;
  const std::string p = family::checkpointPrefix(plan, "roberta.", "embeddings.word_embeddings.weight");
  family::planEmbeddings(plan, p);
  family::planBertLayers(plan, p);
  plan.unused(p + "pooler.dense.weight", {E, E});
  plan.unused(p + "pooler.dense.bias", {E});
  family::planMlmHead(plan, "lm_head.dense", "lm_head.layer_norm", "lm_head.decoder.weight", "lm_head.bias",
                      "lm_head.decoder.bias");
}

nlohmann::ordered_json writeConfig(const BidirectionalConfig& c) {
  const model::EncoderConfig& e = std::get<model::EncoderConfig>(c);
  nlohmann::ordered_json out = family::writeBertStyle(e);
  out["pad_token_id"] = e.paddingIdx;  // the positions count from pad_token_id + 1
  return out;
}

}  // namespace

// This family's row of the table (formats/models/families.cpp).
extern const Family kFamily = {.modelType = "roberta",
                               .kind = ModelKind::Encoder,
                               .layersField = "num_hidden_layers",
                               .isBuffer = family::isEncoderBuffer,
                               .readEncoderConfig = readConfig,
                               .planEncoderTensors = planTensors,
                               .writeBidirectionalConfig = writeConfig};

}  // namespace attn::io::roberta_family
