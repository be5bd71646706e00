// Qwen2 / Qwen2.5 (Qwen2ForCausalLM): the llama block with q/k/v biases (always; o_proj has
// none). use_sliding_window must be false.
#include "formats/models/families/common.h"

namespace attn::io::qwen2_family {
namespace {

Status readConfig(ConfigReader& r, model::Config& out) {
  if (Status s = family::readLlamaStyle(r, out, {}); !s) return s;
  out.qkvBias = true;
  out.outBias = false;
  return family::refuseQwenSlidingWindow(r);
}

void planTensors(const model::Config& c, const TensorSource&, model::Weights& w, TensorPlan& plan) {
  family::planLlamaStyle(c, w, plan);
}

nlohmann::ordered_json writeConfig(const model::Config& c) {
  nlohmann::ordered_json out = family::writeLlamaStyle(c);
  out["hidden_act"] = "silu";
  out["use_sliding_window"] = false;
  return out;
}

// No GGUF key says use_sliding_window: llama.cpp runs qwen2 files without a window.
void deriveFromGguf(nlohmann::json& config) { config["use_sliding_window"] = false; }

constexpr GgufArchitecture kGguf = {.name = "qwen2",
                                    .sizes = kGgufHfSizes,
                                    .globals = kGgufLlamaGlobals,
                                    .layer = kGgufLlamaLayer,
                                    .rotaryKey = "partial_rotary_factor",
                                    .derive = deriveFromGguf};

}  // namespace

// This family's row of the table (formats/models/families.cpp).
extern const Family kFamily = {.modelType = "qwen2",
                               .kind = ModelKind::Decoder,
                               .layersField = "num_hidden_layers",
                               .readConfig = readConfig,
                               .planTensors = planTensors,
                               .writeConfig = writeConfig,
                               .isBuffer = family::isRotaryBuffer,
                               .gguf = &kGguf};

}  // namespace attn::io::qwen2_family
