// Mistral (MistralForCausalLM): the llama block without biases, with a sliding window on
// every layer (sliding_window; null = none): query i sees keys j with i - window < j <= i.
#include "formats/models/families/common.h"

namespace attn::io::mistral_family {
namespace {

Status readConfig(ConfigReader& r, model::Config& out) {
  if (Status s = family::readLlamaStyle(r, out, {}); !s) return s;
  Expected<int> window = r.integer("sliding_window", 0, /*nullIsFallback=*/true);
  if (!window) return window.error();
  out.slidingWindow = *window;
  return Ok{};
}

void planTensors(const model::Config& c, const TensorSource&, model::Weights& w, TensorPlan& plan) {
  family::planLlamaStyle(c, w, plan);
}

nlohmann::ordered_json writeConfig(const model::Config& c) {
  nlohmann::ordered_json out = family::writeLlamaStyle(c);
  out["hidden_act"] = "silu";
  out["sliding_window"] = c.slidingWindow > 0 ? nlohmann::ordered_json(c.slidingWindow) : nullptr;
  return out;
}

}  // namespace

// No GGUF row: llama.cpp's converter writes Mistral models as general.architecture llama
// (the llama row reads them).
// This family's row of the table (formats/models/families.cpp).
extern const Family kFamily = {.modelType = "mistral",
                               .kind = ModelKind::Decoder,
                               .layersField = "num_hidden_layers",
                               .readConfig = readConfig,
                               .planTensors = planTensors,
                               .writeConfig = writeConfig,
                               .isBuffer = family::isRotaryBuffer};

}  // namespace attn::io::mistral_family
