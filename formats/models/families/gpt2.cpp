// GPT-2 (GPT2LMHeadModel): LayerNorm, learned positions, a fused Conv1D c_attn [E, 3E] whose
// output columns are q | k | v, Conv1D weights stored [in, out], GELU (tanh), tied head.
#include "formats/models/families/common.h"

namespace attn::io::gpt2_family {
namespace {

Status readConfig(ConfigReader& r, model::Config& out) {
  Expected<model::Activation> activation = r.activation("activation_function", "gelu_new");
  if (!activation) return activation.error();
  if (Status s = r.require("scale_attn_weights", true, "false is not supported"); !s) return s;
  if (Status s = r.require("scale_attn_by_inverse_layer_idx", false, "true is not supported"); !s)
    return s;
  r.ignore({"reorder_and_upcast_attn"});  // float32 attention either way: same numbers here
  for (auto [key, target] : {std::pair<const char*, int*>{"n_layer", &out.nLayer},
                             {"n_head", &out.nHead}, {"n_embd", &out.nEmbd},
                             {"vocab_size", &out.vocabSize}}) {
    Expected<int> value = r.integer(key);
    if (!value) return value.error();
    *target = *value;
  }
  // n_positions, else the older n_ctx (both when both are present: they must agree)
  Expected<int> ctx = r.integer("n_ctx", 0, false);
  if (!ctx) return ctx.error();
  Expected<int> positions = r.has("n_positions") || *ctx == 0 ? r.integer("n_positions")
                                                              : Expected<int>(*ctx);
  if (!positions) return positions.error();
  out.nHeadKv = out.nHead;
  out.nPositions = *positions;
  Expected<int> inner = r.integer("n_inner", 4 * out.nEmbd, /*nullIsFallback=*/true);
  if (!inner) return inner.error();
  out.nInner = *inner;
  Expected<double> eps = r.number("layer_norm_epsilon", 1e-5);
  if (!eps) return eps.error();
  Expected<bool> tied = r.flag("tie_word_embeddings", true);
  if (!tied) return tied.error();
  out.normEpsilon = static_cast<float>(*eps);
  out.tiedEmbeddings = *tied;
  out.norm = model::NormKind::LayerNorm;
  out.activation = *activation;
  out.qkvLayout = model::QkvLayout::FusedBlocks;
  out.learnedPositions = true;
  return Ok{};
}

void planTensors(const model::Config& c, const TensorSource& source, model::Weights& w,
                 TensorPlan& plan) {
  // GPT2Model ("wte.weight") or GPT2LMHeadModel ("transformer.wte.weight")
  const std::string p =
      !source.info("wte.weight") && source.info("transformer.wte.weight") ? "transformer." : "";
  const std::int64_t E = c.nEmbd, F = c.nInner;
  plan.layerPrefix = p + "h.";
  plan.embedName = p + "wte.weight";
  plan.lmHeadName = "lm_head.weight";
  plan.matrix(plan.embedName, c.vocabSize, E, w.embed);
  plan.tensor(p + "wpe.weight", {c.nPositions, E}, w.positions);
  w.layers.resize(static_cast<std::size_t>(c.nLayer));
  for (int l = 0; l < c.nLayer; ++l) {
    model::LayerWeights& layer = w.layers[static_cast<std::size_t>(l)];
    const std::string h = p + "h." + std::to_string(l) + ".";
    plan.norm(h + "ln_1", E, c.norm, layer.norm1);
    plan.conv1d(h + "attn.c_attn", E, 3 * E, layer.qkv);
    plan.conv1d(h + "attn.c_proj", E, E, layer.out);
    plan.norm(h + "ln_2", E, c.norm, layer.norm2);
    plan.conv1d(h + "mlp.c_fc", E, F, layer.up);
    plan.conv1d(h + "mlp.c_proj", F, E, layer.down);
  }
  plan.norm(p + "ln_f", E, c.norm, w.finalNorm);
  if (!c.tiedEmbeddings) plan.matrix(plan.lmHeadName, c.vocabSize, E, w.lmHead);
}

nlohmann::ordered_json writeConfig(const model::Config& c) {
  return {{"model_type", c.modelType},  {"n_layer", c.nLayer},         {"n_head", c.nHead},
          {"n_embd", c.nEmbd},          {"n_inner", c.nInner},         {"n_positions", c.nPositions},
          {"vocab_size", c.vocabSize},  {"layer_norm_epsilon", c.normEpsilon},
          {"activation_function", "gelu_new"}, {"tie_word_embeddings", c.tiedEmbeddings}};
}

// The causal-mask buffers the published files carry.
bool isBuffer(std::string_view name) {
  for (std::string_view suffix : {".attn.bias", ".attn.masked_bias"}) {
    if (name.size() >= suffix.size() && name.substr(name.size() - suffix.size()) == suffix)
      return true;
  }
  return false;
}

// gpt2's own config.json names; its Conv1D weights, [in, out] in the checkpoint, are stored
// [out, in] by the converter (formats/models/gguf_model.cpp turns the plan's wants around).
constexpr GgufName kGgufSizes[] = {{"block_count", "n_layer"},
                                   {"embedding_length", "n_embd"},
                                   {"feed_forward_length", "n_inner"},
                                   {"attention.head_count", "n_head"},
                                   {"context_length", "n_positions"},
                                   {"attention.layer_norm_epsilon", "layer_norm_epsilon"}};
constexpr GgufName kGgufGlobals[] = {
    {"token_embd", "wte"}, {"position_embd", "wpe"}, {"output_norm", "ln_f"}, {"output", "lm_head"}};
constexpr GgufName kGgufLayer[] = {{"attn_norm", "ln_1"},        {"attn_qkv", "attn.c_attn"},
                                   {"attn_output", "attn.c_proj"}, {"ffn_norm", "ln_2"},
                                   {"ffn_up", "mlp.c_fc"},        {"ffn_down", "mlp.c_proj"}};

constexpr GgufArchitecture kGguf = {
    .name = "gpt2", .sizes = kGgufSizes, .globals = kGgufGlobals, .layer = kGgufLayer};

}  // namespace

// This family's row of the table (formats/models/families.cpp).
extern const Family kFamily = {.modelType = "gpt2",
                               .kind = ModelKind::Decoder,
                               .layersField = "n_layer",
                               .readConfig = readConfig,
                               .planTensors = planTensors,
                               .writeConfig = writeConfig,
                               .isBuffer = isBuffer,
                               .byteLevelVocab = true,
                               .gguf = &kGguf};

}  // namespace attn::io::gpt2_family
