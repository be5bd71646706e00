// What several family files share (see common.h).
#include "formats/models/families/common.h"

#include <cmath>

#include "formats/models/rope_config.h"

namespace attn::io::family {

using nlohmann::json;

Status readRope(ConfigReader& r, model::Config& out, const RopeFields& fields) {
  // The one reader of the rope keys (formats/models/rope_config.h): rope_theta,
  // rope_scaling, transformers 5's rope_parameters, partial_rotary_factor, and gpt_neox's
  // rotary_pct / rotary_emb_base; every key it consumed is marked read.
  const bool neox = fields.olderThetaKey != nullptr;
  Expected<RopeConfig> rope =
      readRopeConfig(r.object(), r.fileName(), {neox, fields.fraction, out.nPositions});
  if (!rope) return rope.error();
  for (const std::string& key : rope->keysRead) r.find(key.c_str());
  if (!fields.fractionKey && !neox && rope->partialRotaryFactor != 1.0) {
    // (Hugging Face's llama-style families rotate whole heads)
    return Error{r.fileName(), rope->partialField,
                 nlohmann::json(rope->partialRotaryFactor).dump() + " is not supported (only 1)"};
  }
  out.ropeTheta = rope->theta;
  out.ropeScaling = rope->scaling;
  out.nPositions = model::ropeContextLength(rope->scaling, out.nPositions);  // dynamic: longer
  // Hugging Face: rotary_ndims = int(head_size * fraction)
  const int dh = out.headDim();
  out.rotaryDims = static_cast<int>(static_cast<double>(dh) * rope->partialRotaryFactor);
  if (out.rotaryDims % 2 != 0) {
    return Error{r.fileName(), rope->partialField.empty() ? "head_dim" : rope->partialField,
                 "gives " + std::to_string(out.rotaryDims) +
                     " rotary dimensions per head, which is odd (not supported)"};
  }
  return Ok{};
}

Status readHfSizes(ConfigReader& r, model::Config& out) {
  struct Field {
    const char* key;
    int* target;
  };
  for (Field f : {Field{"num_hidden_layers", &out.nLayer},
                  Field{"num_attention_heads", &out.nHead}, Field{"hidden_size", &out.nEmbd},
                  Field{"intermediate_size", &out.nInner},
                  Field{"max_position_embeddings", &out.nPositions},
                  Field{"vocab_size", &out.vocabSize}}) {
    Expected<int> value = r.integer(f.key);
    if (!value) return value.error();
    *f.target = *value;
  }
  Expected<int> kv = r.integer("num_key_value_heads", out.nHead, /*nullIsFallback=*/true);
  if (!kv) return kv.error();
  out.nHeadKv = *kv;
  Expected<int> headDim = r.integer("head_dim", 0, /*nullIsFallback=*/true);
  if (!headDim) return headDim.error();
  // An explicit head_dim equal to E / H is the same model as none.
  out.headDimension = *headDim > 0 && *headDim * out.nHead != out.nEmbd ? *headDim : 0;
  out.learnedPositions = false;
  return Ok{};
}

Status readLlamaStyle(ConfigReader& r, model::Config& out, const LlamaStyle& style) {
  if (Status s = readHfSizes(r, out); !s) return s;
  Expected<double> eps = r.number("rms_norm_eps", style.eps);
  if (!eps) return eps.error();
  Expected<model::Activation> activation = r.activation(style.activationKey, style.activation);
  if (!activation) return activation.error();
  Expected<bool> tied = r.flag("tie_word_embeddings", style.tied);
  if (!tied) return tied.error();
  bool attentionBias = false, mlpBias = false;
  if (style.attentionBiasKey) {
    Expected<bool> v = r.flag("attention_bias", false);
    if (!v) return v.error();
    attentionBias = *v;
  }
  if (style.mlpBiasKey) {
    Expected<bool> v = r.flag("mlp_bias", false);
    if (!v) return v.error();
    mlpBias = *v;
  }
  out.normEpsilon = static_cast<float>(*eps);
  out.activation = *activation;
  out.tiedEmbeddings = *tied;
  out.norm = model::NormKind::RmsNorm;
  out.qkvLayout = model::QkvLayout::Separate;
  out.gatedMlp = true;
  out.qkvBias = out.outBias = attentionBias;
  out.mlpBias = mlpBias;
  return readRope(r, out, style.rope);
}

Status refuseQwenSlidingWindow(ConfigReader& r) {
  Expected<bool> sliding = r.flag("use_sliding_window", false);
  if (!sliding) return sliding.error();
  if (*sliding) {
    return Error{r.fileName(), "use_sliding_window",
                 "true is not supported (per-layer windows from max_window_layers)"};
  }
  r.ignore({"sliding_window", "max_window_layers", "layer_types"});
  return Ok{};
}

void planLlamaNames(const model::Config& c, model::Weights& w, TensorPlan& plan) {
  plan.layerPrefix = "model.layers.";
  plan.embedName = "model.embed_tokens.weight";
  plan.lmHeadName = "lm_head.weight";
  plan.matrix(plan.embedName, c.vocabSize, c.nEmbd, w.embed);
  w.layers.resize(static_cast<std::size_t>(c.nLayer));
}

void planLlamaStyle(const model::Config& c, model::Weights& w, TensorPlan& plan) {
  const std::int64_t E = c.nEmbd, F = c.nInner, V = c.vocabSize, dh = c.headDim();
  const std::int64_t qWidth = c.nHead * dh, kvWidth = c.nHeadKv * dh;
  planLlamaNames(c, w, plan);
  for (int l = 0; l < c.nLayer; ++l) {
    model::LayerWeights& layer = w.layers[static_cast<std::size_t>(l)];
    const std::string h = "model.layers." + std::to_string(l) + ".";
    plan.norm(h + "input_layernorm", E, c.norm, layer.norm1);
    plan.linear(h + "self_attn.q_proj", E, qWidth, c.qkvBias, layer.q);
    plan.linear(h + "self_attn.k_proj", E, kvWidth, c.qkvBias, layer.k);
    plan.linear(h + "self_attn.v_proj", E, kvWidth, c.qkvBias, layer.v);
    plan.linear(h + "self_attn.o_proj", qWidth, E, c.outBias, layer.out);
    if (c.qkNorm) {
      plan.norm(h + "self_attn.q_norm", dh, model::NormKind::RmsNorm, layer.qNorm);
      plan.norm(h + "self_attn.k_norm", dh, model::NormKind::RmsNorm, layer.kNorm);
    }
    if (c.sandwichNorms) {
      plan.norm(h + "post_attention_layernorm", E, c.norm, layer.postAttnNorm);
      plan.norm(h + "pre_feedforward_layernorm", E, c.norm, layer.norm2);
      plan.norm(h + "post_feedforward_layernorm", E, c.norm, layer.postMlpNorm);
    } else {
      plan.norm(h + "post_attention_layernorm", E, c.norm, layer.norm2);
    }
    plan.linear(h + "mlp.gate_proj", E, F, c.mlpBias, layer.gate);
    plan.linear(h + "mlp.up_proj", E, F, c.mlpBias, layer.up);
    plan.linear(h + "mlp.down_proj", F, E, c.mlpBias, layer.down);
  }
  plan.norm("model.norm", E, c.norm, w.finalNorm);
  if (!c.tiedEmbeddings) plan.matrix(plan.lmHeadName, V, E, w.lmHead);
}

nlohmann::ordered_json writeLlamaStyle(const model::Config& c) {
  nlohmann::ordered_json out = {{"model_type", c.modelType},
                                {"num_hidden_layers", c.nLayer},
                                {"num_attention_heads", c.nHead},
                                {"num_key_value_heads", c.nHeadKv},
                                {"hidden_size", c.nEmbd},
                                {"intermediate_size", c.nInner},
                                {"max_position_embeddings", c.nPositions},
                                {"vocab_size", c.vocabSize},
                                {"rms_norm_eps", c.normEpsilon},
                                {"rope_theta", c.ropeTheta},
                                {"tie_word_embeddings", c.tiedEmbeddings}};
  if (c.headDimension > 0) out["head_dim"] = c.headDimension;
  return out;
}

bool isRotaryBuffer(std::string_view name) {
  constexpr std::string_view suffix = ".rotary_emb.inv_freq";
  return name.size() >= suffix.size() && name.substr(name.size() - suffix.size()) == suffix;
}

}  // namespace attn::io::family
