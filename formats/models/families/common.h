// What several family files share (formats/models/families/*.cpp): the sizes every Hugging
// Face decoder but gpt2 names alike, today's rotary fields, and the llama-style block
// (RMSNorm, q/k/v/o projections, gated MLP) with its tensor names. Not a family itself.
#pragma once

#include <string_view>

#include "formats/models/families.h"
#include "formats/models/families/gguf_architecture.h"

namespace attn::io::family {

// The rotary fields as read today: the base from olderThetaKey, else thetaKey
// (`theta` when none; a null is refused), the rotated fraction of each head from
// `fractionKey` (nullptr: all of it; `fraction` when absent), and rope_scaling: null,
// absent or type "default" = 1, "linear" = its factor, any other type refused. One
// function, so that a rope reader covering every scaling type replaces it in one place.
struct RopeFields {
  const char* thetaKey = "rope_theta";
  const char* olderThetaKey = nullptr;  // read first when present (gpt_neox: rotary_emb_base)
  double theta = 10000.0;
  const char* fractionKey = nullptr;
  double fraction = 1.0;
};
Status readRope(ConfigReader& r, model::Config& out, const RopeFields& fields);

// num_hidden_layers, num_attention_heads, hidden_size, intermediate_size,
// max_position_embeddings, vocab_size (required); num_key_value_heads (absent or null: H);
// head_dim (absent or null: hidden_size / num_attention_heads).
Status readHfSizes(ConfigReader& r, model::Config& out);

// A llama-style decoder: readHfSizes, rms_norm_eps, readRope, the activation, the tie,
// optional attention_bias (q, k, v and o) and mlp_bias; RMSNorm, separate q/k/v, gated MLP,
// rotary over the whole head unless readRope said otherwise.
struct LlamaStyle {
  const char* activationKey = "hidden_act";
  const char* activation = "silu";
  bool tied = false;
  double eps = 1e-6;
  RopeFields rope;
  bool attentionBiasKey = false;  // reads attention_bias (llama, qwen3, gemma2)
  bool mlpBiasKey = false;        // reads mlp_bias (llama)
};
Status readLlamaStyle(ConfigReader& r, model::Config& out, const LlamaStyle& style);

// use_sliding_window must be false (qwen2, qwen3: per-layer windows from max_window_layers
// are not implemented); sliding_window, max_window_layers and layer_types then change
// nothing and are read as such.
Status refuseQwenSlidingWindow(ConfigReader& r);

// The llama-style tensor names under "model.": embed_tokens, layers.l.{input_layernorm,
// self_attn.{q,k,v,o}_proj, [self_attn.{q,k}_norm], post_attention_layernorm,
// [pre_feedforward_layernorm, post_feedforward_layernorm], mlp.{gate,up,down}_proj}, norm,
// lm_head (untied). With Config::sandwichNorms, post_attention_layernorm is the norm on the
// attention's output and pre_feedforward_layernorm the MLP's input norm (gemma2).
// The llama layout's names (model.layers., model.embed_tokens, lm_head), the embedding
// [V, E] and c.nLayer empty layers: the start of every llama-style plan (phi3 too).
void planLlamaNames(const model::Config& c, model::Weights& w, TensorPlan& plan);
void planLlamaStyle(const model::Config& c, model::Weights& w, TensorPlan& plan);

// config.json of a llama-style configuration: the keys readLlamaStyle reads (Hugging Face
// names), with model_type. The family adds its own keys.
nlohmann::ordered_json writeLlamaStyle(const model::Config& c);

// A rotary table some checkpoints carry ("...rotary_emb.inv_freq").
bool isRotaryBuffer(std::string_view name);

}  // namespace attn::io::family
