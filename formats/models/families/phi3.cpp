// Phi-3 (Phi3ForCausalLM, transformers' modeling_phi3): RMSNorm, one fused qkv_proj whose
// rows are q (H·d_h) | k (H_kv·d_h) | v (H_kv·d_h) and one fused gate_up_proj whose rows
// are gate (F) | up (F), both split into views on loading; rotary (half-split) on the first
// partial_rotary_factor of each head; SiLU; a sliding window on every layer (sliding_window;
// null = none); untied lm_head.
#include "formats/models/families/common.h"

namespace attn::io::phi3_family {
namespace {

Status readConfig(ConfigReader& r, model::Config& out) {
  family::LlamaStyle style;
  style.eps = 1e-5;
  style.rope.fractionKey = "partial_rotary_factor";
  // Only longrope scaling reads it, and readRope refuses that type.
  r.ignore({"original_max_position_embeddings"});
  if (Status s = family::readLlamaStyle(r, out, style); !s) return s;
  Expected<int> window = r.integer("sliding_window", 0, /*nullIsFallback=*/true);
  if (!window) return window.error();
  out.slidingWindow = *window;
  return Ok{};
}

void planTensors(const model::Config& c, const TensorSource&, model::Weights& w, TensorPlan& plan) {
  const std::int64_t E = c.nEmbd, F = c.nInner, V = c.vocabSize, dh = c.headDim();
  family::planLlamaNames(c, w, plan);
  for (int l = 0; l < c.nLayer; ++l) {
    model::LayerWeights& layer = w.layers[static_cast<std::size_t>(l)];
    const std::string h = "model.layers." + std::to_string(l) + ".";
    plan.norm(h + "input_layernorm", E, c.norm, layer.norm1);
    plan.fusedLinear(h + "self_attn.qkv_proj", E,
                     {{&layer.q, c.nHead * dh}, {&layer.k, c.nHeadKv * dh}, {&layer.v, c.nHeadKv * dh}});
    plan.linear(h + "self_attn.o_proj", c.nHead * dh, E, false, layer.out);
    plan.norm(h + "post_attention_layernorm", E, c.norm, layer.norm2);
    plan.fusedLinear(h + "mlp.gate_up_proj", E, {{&layer.gate, F}, {&layer.up, F}});
    plan.linear(h + "mlp.down_proj", F, E, false, layer.down);
  }
  plan.norm("model.norm", E, c.norm, w.finalNorm);
  if (!c.tiedEmbeddings) plan.matrix(plan.lmHeadName, V, E, w.lmHead);
}

nlohmann::ordered_json writeConfig(const model::Config& c) {
  nlohmann::ordered_json out = family::writeLlamaStyle(c);
  out["hidden_act"] = "silu";
  out["partial_rotary_factor"] = static_cast<double>(c.rotaryDims) / c.headDim();
  out["sliding_window"] = c.slidingWindow > 0 ? nlohmann::ordered_json(c.slidingWindow) : nullptr;
  return out;
}

// (attention.sliding_window is not mapped: llama.cpp runs Phi-3 without it)
constexpr GgufName kGgufLayer[] = {{"attn_norm", "input_layernorm"},      {"attn_qkv", "self_attn.qkv_proj"},
                                   {"attn_output", "self_attn.o_proj"},   {"ffn_norm", "post_attention_layernorm"},
                                   {"ffn_up", "mlp.gate_up_proj"},        {"ffn_down", "mlp.down_proj"}};

constexpr GgufArchitecture kGguf = {.name = "phi3",
                                    .sizes = kGgufHfSizes,
                                    .globals = kGgufLlamaGlobals,
                                    .layer = kGgufLayer,
                                    .rotaryKey = "partial_rotary_factor"};

}  // namespace

// This family's row of the table (formats/models/families.cpp).
extern const Family kFamily = {.modelType = "phi3",
                               .kind = ModelKind::Decoder,
                               .layersField = "num_hidden_layers",
                               .readConfig = readConfig,
                               .planTensors = planTensors,
                               .writeConfig = writeConfig,
                               .isBuffer = family::isRotaryBuffer,
                               .gguf = &kGguf};

}  // namespace attn::io::phi3_family
