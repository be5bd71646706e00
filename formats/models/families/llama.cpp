// Llama (LlamaForCausalLM): RMSNorm, RoPE (half-split), GQA, SwiGLU; q/k/v/o biases with
// attention_bias, MLP biases with mlp_bias.
#include "formats/models/families/common.h"

namespace attn::io::llama_family {
namespace {

Status readConfig(ConfigReader& r, model::Config& out) {
  family::LlamaStyle style;
  style.attentionBiasKey = style.mlpBiasKey = true;
  // SmolLM's config says "rope_interleaved": false; LlamaForCausalLM never reads it (its
  // rotary is half-split whatever it says), so neither does attnscope.
  r.ignore({"rope_interleaved"});
  return family::readLlamaStyle(r, out, style);
}

void planTensors(const model::Config& c, const TensorSource&, model::Weights& w, TensorPlan& plan) {
  family::planLlamaStyle(c, w, plan);
}

nlohmann::ordered_json writeConfig(const model::Config& c) {
  nlohmann::ordered_json out = family::writeLlamaStyle(c);
  out["hidden_act"] = "silu";
  out["attention_bias"] = c.qkvBias;
  out["mlp_bias"] = c.mlpBias;
  return out;
}

// llama.cpp's llama rows (mistral-style files say "llama" too): Q and K rows permuted by
// the converter for ggml's adjacent-pair RoPE.
constexpr GgufArchitecture kGguf = {.name = "llama",
                                    .sizes = kGgufHfSizes,
                                    .globals = kGgufLlamaGlobals,
                                    .layer = kGgufLlamaLayer,
                                    .rotaryKey = "partial_rotary_factor",
                                    .attentionBias = "attention_bias",
                                    .mlpBias = "mlp_bias",
                                    .qkPairsInterleaved = true};

}  // namespace

// This family's row of the table (formats/models/families.cpp).
extern const Family kFamily = {.modelType = "llama",
                               .kind = ModelKind::Decoder,
                               .layersField = "num_hidden_layers",
                               .readConfig = readConfig,
                               .planTensors = planTensors,
                               .writeConfig = writeConfig,
                               .isBuffer = family::isRotaryBuffer,
                               .gguf = &kGguf};

}  // namespace attn::io::llama_family
