// GPT-NeoX / Pythia (GPTNeoXForCausalLM): LayerNorm, a parallel residual
// x + attn(ln1 x) + mlp(ln2 x), query_key_value interleaved per head as [H, 3, d_h] (split
// by the engine, QkvLayout::FusedPerHead), rotary on the first rotary_pct of each head.
#include "formats/models/families/common.h"

namespace attn::io::gpt_neox_family {
namespace {

Status readConfig(ConfigReader& r, model::Config& out) {
  if (Status s = family::readHfSizes(r, out); !s) return s;
  if (out.nHeadKv != out.nHead || out.headDimension != 0) {
    return Error{r.fileName(), out.nHeadKv != out.nHead ? "num_key_value_heads" : "head_dim",
                 "is not supported for gpt_neox (one fused query_key_value per head)"};
  }
  Expected<double> eps = r.number("layer_norm_eps", 1e-5);
  if (!eps) return eps.error();
  Expected<model::Activation> activation = r.activation("hidden_act", "gelu");
  if (!activation) return activation.error();
  Expected<bool> parallel = r.flag("use_parallel_residual", true);
  if (!parallel) return parallel.error();
  Expected<bool> tied = r.flag("tie_word_embeddings", false);
  if (!tied) return tied.error();
  Expected<bool> bias = r.flag("attention_bias", true);
  if (!bias) return bias.error();
  out.normEpsilon = static_cast<float>(*eps);
  out.activation = *activation;
  out.parallelResidual = *parallel;
  out.tiedEmbeddings = *tied;
  out.norm = model::NormKind::LayerNorm;
  out.qkvLayout = model::QkvLayout::FusedPerHead;
  out.qkvBias = out.outBias = *bias;
  out.mlpBias = true;
  return family::readRope(r, out, {"rope_theta", "rotary_emb_base", 10000.0, "rotary_pct", 0.25});
}

void planTensors(const model::Config& c, const TensorSource&, model::Weights& w, TensorPlan& plan) {
  const std::int64_t E = c.nEmbd, F = c.nInner;
  plan.layerPrefix = "gpt_neox.layers.";
  plan.embedName = "gpt_neox.embed_in.weight";
  plan.lmHeadName = "embed_out.weight";
  plan.matrix(plan.embedName, c.vocabSize, E, w.embed);
  w.layers.resize(static_cast<std::size_t>(c.nLayer));
  for (int l = 0; l < c.nLayer; ++l) {
    model::LayerWeights& layer = w.layers[static_cast<std::size_t>(l)];
    const std::string h = "gpt_neox.layers." + std::to_string(l) + ".";
    plan.norm(h + "input_layernorm", E, c.norm, layer.norm1);
    plan.linear(h + "attention.query_key_value", E, 3 * E, c.qkvBias, layer.qkv);
    plan.linear(h + "attention.dense", E, E, c.outBias, layer.out);
    plan.norm(h + "post_attention_layernorm", E, c.norm, layer.norm2);
    plan.linear(h + "mlp.dense_h_to_4h", E, F, c.mlpBias, layer.up);
    plan.linear(h + "mlp.dense_4h_to_h", F, E, c.mlpBias, layer.down);
  }
  plan.norm("gpt_neox.final_layer_norm", E, c.norm, w.finalNorm);
  if (!c.tiedEmbeddings) plan.matrix(plan.lmHeadName, c.vocabSize, E, w.lmHead);
}

nlohmann::ordered_json writeConfig(const model::Config& c) {
  nlohmann::ordered_json out = {{"model_type", c.modelType},
                                {"num_hidden_layers", c.nLayer},
                                {"num_attention_heads", c.nHead},
                                {"hidden_size", c.nEmbd},
                                {"intermediate_size", c.nInner},
                                {"max_position_embeddings", c.nPositions},
                                {"vocab_size", c.vocabSize},
                                {"layer_norm_eps", c.normEpsilon},
                                {"rotary_emb_base", c.ropeTheta},
                                {"rotary_pct", static_cast<double>(c.rotaryDims) / c.headDim()},
                                {"hidden_act", "gelu"},
                                {"use_parallel_residual", c.parallelResidual},
                                {"tie_word_embeddings", c.tiedEmbeddings}};
  return out;
}

// Causal masks and rotary tables of older Pythia files.
bool isBuffer(std::string_view name) {
  for (std::string_view suffix : {".attention.bias", ".attention.masked_bias"}) {
    if (name.size() >= suffix.size() && name.substr(name.size() - suffix.size()) == suffix)
      return true;
  }
  return family::isRotaryBuffer(name);
}

// llama.cpp's "gptneox": query_key_value regrouped by the converter as [q; k; v].
constexpr GgufName kGgufKeys[] = {{"attention.layer_norm_epsilon", "layer_norm_eps"},
                                  {"use_parallel_residual", "use_parallel_residual"}};
constexpr GgufName kGgufGlobals[] = {{"token_embd", "gpt_neox.embed_in"},
                                     {"output_norm", "gpt_neox.final_layer_norm"},
                                     {"output", "embed_out"}};
constexpr GgufName kGgufLayer[] = {{"attn_norm", "input_layernorm"},      {"attn_qkv", "attention.query_key_value"},
                                   {"attn_output", "attention.dense"},    {"ffn_norm", "post_attention_layernorm"},
                                   {"ffn_up", "mlp.dense_h_to_4h"},       {"ffn_down", "mlp.dense_4h_to_h"}};

constexpr GgufArchitecture kGguf = {.name = "gptneox",
                                    .sizes = kGgufHfSizes,
                                    .keys = kGgufKeys,
                                    .globals = kGgufGlobals,
                                    .layer = kGgufLayer,
                                    .rotaryKey = "rotary_pct",
                                    .attentionBias = "attention_bias",
                                    .qkvRegrouped = true};

}  // namespace

// This family's row of the table (formats/models/families.cpp).
extern const Family kFamily = {.modelType = "gpt_neox",
                               .kind = ModelKind::Decoder,
                               .layersField = "num_hidden_layers",
                               .readConfig = readConfig,
                               .planTensors = planTensors,
                               .writeConfig = writeConfig,
                               .isBuffer = isBuffer,
                               .gguf = &kGguf};

}  // namespace attn::io::gpt_neox_family
