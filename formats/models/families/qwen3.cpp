// Qwen3 (Qwen3ForCausalLM, transformers' modeling_qwen3): the llama block with an explicit
// head_dim, q_norm / k_norm (RMSNorm over each head's head_dim, weights [head_dim]) applied
// to q and k before the rotary, attention_bias for q/k/v/o (default none).
// use_sliding_window must be false.
#include "formats/models/families/common.h"

namespace attn::io::qwen3_family {
namespace {

Status readConfig(ConfigReader& r, model::Config& out) {
  family::LlamaStyle style;
  style.attentionBiasKey = true;
  if (Status s = family::readLlamaStyle(r, out, style); !s) return s;
  out.qkNorm = true;
  return family::refuseQwenSlidingWindow(r);
}

void planTensors(const model::Config& c, const TensorSource&, model::Weights& w, TensorPlan& plan) {
  family::planLlamaStyle(c, w, plan);
}

nlohmann::ordered_json writeConfig(const model::Config& c) {
  nlohmann::ordered_json out = family::writeLlamaStyle(c);
  out["head_dim"] = c.headDim();
  out["hidden_act"] = "silu";
  out["attention_bias"] = c.qkvBias;
  out["use_sliding_window"] = false;
  return out;
}

constexpr GgufArchitecture kGguf = {.name = "qwen3",
                                    .sizes = kGgufHfSizes,
                                    .globals = kGgufLlamaGlobals,
                                    .layer = kGgufLlamaLayer,
                                    .rotaryKey = "partial_rotary_factor",
                                    .attentionBias = "attention_bias"};

}  // namespace

// This family's row of the table (formats/models/families.cpp).
extern const Family kFamily = {.modelType = "qwen3",
                               .kind = ModelKind::Decoder,
                               .layersField = "num_hidden_layers",
                               .readConfig = readConfig,
                               .planTensors = planTensors,
                               .writeConfig = writeConfig,
                               .isBuffer = family::isRotaryBuffer,
                               .gguf = &kGguf};

}  // namespace attn::io::qwen3_family
