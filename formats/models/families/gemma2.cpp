// Gemma 2 (Gemma2ForCausalLM, transformers' modeling_gemma2): embeddings × √hidden_size (as a
// float), RMSNorm × (1 + w), the norm after attention (post_attention_layernorm) and around
// the MLP (pre_ / post_feedforward_layernorm), a GELU-tanh gated MLP (hidden_activation),
// scores × query_pre_attn_scalar^-½ soft-capped by attn_logit_softcapping before the mask,
// final logits soft-capped by final_logit_softcapping, a sliding window on the even layers
// (0, 2, ...; or as layer_types says), an explicit head_dim, tied embeddings.
#include <algorithm>
#include <cmath>

#include "formats/models/families/common.h"

namespace attn::io::gemma2_family {
namespace {

Status readConfig(ConfigReader& r, model::Config& out) {
  family::LlamaStyle style;
  style.activationKey = "hidden_activation";  // Gemma2MLP reads it, not hidden_act
  style.activation = "gelu_pytorch_tanh";
  style.tied = true;
  style.attentionBiasKey = true;
  r.ignore({"hidden_act"});
  if (Status s = family::readLlamaStyle(r, out, style); !s) return s;
  Expected<double> scalar = r.number("query_pre_attn_scalar", 256.0);
  if (!scalar) return scalar.error();
  Expected<double> attnCap = r.number("attn_logit_softcapping", 50.0, true, true);
  if (!attnCap) return attnCap.error();
  Expected<double> finalCap = r.number("final_logit_softcapping", 30.0, true, true);
  if (!finalCap) return finalCap.error();
  // null soft-caps mean none (Hugging Face: `if softcapping is not None`)
  for (auto [key, value] : {std::pair<const char*, double*>{"attn_logit_softcapping", &*attnCap},
                            {"final_logit_softcapping", &*finalCap}}) {
    if (const nlohmann::json* v = r.find(key); v && v->is_null()) *value = 0;
  }
  // null: no window on any layer (Gemma2Attention: sliding_window None)
  const nlohmann::json* slidingWindow = r.find("sliding_window");
  Expected<int> window = slidingWindow && slidingWindow->is_null()
                             ? Expected<int>(0)
                             : r.integer("sliding_window", 4096, false);
  if (!window) return window.error();
  if (const nlohmann::json* v = r.find("sliding_window_size"); v && !v->is_null() && *v != *window) {
    return Error{r.fileName(), "sliding_window_size",
                 v->dump() + " differs from sliding_window (" + std::to_string(*window) + ")"};
  }
  out.normWeightOffset = 1.0f;
  out.sandwichNorms = true;
  out.embedScale = static_cast<float>(std::sqrt(static_cast<double>(out.nEmbd)));
  out.queryScale = static_cast<float>(1.0 / std::sqrt(*scalar));
  out.attnSoftcap = static_cast<float>(*attnCap);
  out.finalSoftcap = static_cast<float>(*finalCap);
  out.layerWindows.assign(static_cast<std::size_t>(out.nLayer), 0);
  const nlohmann::json* types = r.find("layer_types");
  if (types && !types->is_null() &&
      (!types->is_array() || types->size() != static_cast<std::size_t>(out.nLayer))) {
    return Error{r.fileName(), "layer_types", "must list one type per layer"};
  }
  for (int l = 0; l < out.nLayer; ++l) {
    bool sliding = l % 2 == 0;  // Gemma2DecoderLayer: is_sliding = not bool(layer_idx % 2)
    if (types && !types->is_null()) {
      const nlohmann::json& t = (*types)[static_cast<std::size_t>(l)];
      if (t != "sliding_attention" && t != "full_attention") {
        return Error{r.fileName(), "layer_types",
                     t.dump() + " is not supported (sliding_attention, full_attention)"};
      }
      sliding = t == "sliding_attention";
    }
    out.layerWindows[static_cast<std::size_t>(l)] = sliding ? *window : 0;
  }
  return Ok{};
}

void planTensors(const model::Config& c, const TensorSource&, model::Weights& w, TensorPlan& plan) {
  family::planLlamaStyle(c, w, plan);
}

nlohmann::ordered_json writeConfig(const model::Config& c) {
  nlohmann::ordered_json out = family::writeLlamaStyle(c);
  out["head_dim"] = c.headDim();
  out["hidden_activation"] = "gelu_pytorch_tanh";
  out["query_pre_attn_scalar"] = std::lround(1.0 / (static_cast<double>(c.queryScale) * c.queryScale));
  out["attn_logit_softcapping"] = c.attnSoftcap;
  out["final_logit_softcapping"] = c.finalSoftcap;
  int window = 0;
  for (int w : c.layerWindows) window = std::max(window, w);
  out["sliding_window"] = window > 0 ? window : 4096;
  return out;
}

constexpr GgufName kGgufKeys[] = {{"attn_logit_softcapping", "attn_logit_softcapping"},
                                  {"final_logit_softcapping", "final_logit_softcapping"},
                                  {"attention.sliding_window", "sliding_window"}};
constexpr GgufName kGgufLayer[] = {
    {"attn_norm", "input_layernorm"},           {"attn_q", "self_attn.q_proj"},
    {"attn_k", "self_attn.k_proj"},             {"attn_v", "self_attn.v_proj"},
    {"attn_output", "self_attn.o_proj"},        {"post_attention_norm", "post_attention_layernorm"},
    {"ffn_norm", "pre_feedforward_layernorm"},  {"post_ffw_norm", "post_feedforward_layernorm"},
    {"ffn_gate", "mlp.gate_proj"},              {"ffn_up", "mlp.up_proj"},
    {"ffn_down", "mlp.down_proj"}};

// No key carries query_pre_attn_scalar; llama.cpp's rule: the 46-layer 27B model scales by
// (E / H)^-1/2, the others by d_h^-1/2 (attention.key_length, else E / H).
void deriveFromGguf(nlohmann::json& config) {
  const std::int64_t width = config.value("hidden_size", std::int64_t{0});
  const std::int64_t heads = std::max<std::int64_t>(1, config.value("num_attention_heads", std::int64_t{1}));
  const std::int64_t headDim = config.value("head_dim", width / heads);
  const bool is27b = config.value("num_hidden_layers", std::int64_t{0}) == 46;
  config["query_pre_attn_scalar"] = static_cast<double>(is27b ? width / heads : headDim);
}

constexpr GgufArchitecture kGguf = {.name = "gemma2",
                                    .sizes = kGgufHfSizes,
                                    .keys = kGgufKeys,
                                    .globals = kGgufLlamaGlobals,
                                    .layer = kGgufLayer,
                                    .rotaryKey = "partial_rotary_factor",
                                    .attentionBias = "attention_bias",
                                    .normsPlusOne = true,
                                    .derive = deriveFromGguf};

}  // namespace

// This family's row of the table (formats/models/families.cpp).
extern const Family kFamily = {.modelType = "gemma2",
                               .kind = ModelKind::Decoder,
                               .layersField = "num_hidden_layers",
                               .readConfig = readConfig,
                               .planTensors = planTensors,
                               .writeConfig = writeConfig,
                               .isBuffer = family::isRotaryBuffer,
                               .gguf = &kGguf};

}  // namespace attn::io::gemma2_family
