// The `model` command on an encoder folder after its one run (cli_model.cpp loads, makes the
// input [CLS] text [SEP] or takes the --ids as given, and runs it through
// app/session/model_driver.h): the size checks, OUT.npz and OUT.tokens.json, the fill-mask
// prediction of every mask token.
#include <nlohmann/json.hpp>

#include "app/cli/cli_common.h"
#include "app/cli/cli_model_detail.h"
#include "core/models/encoder.h"
#include "core/models/mechanisms.h"
#include "core/models/mechanisms_bidirectional.h"
#include "formats/models/encoder_folder.h"

namespace attn::app::model_cli {
namespace {

using cli::fail;
using cli::optionError;

std::string tokenText(const io::EncoderFolder& folder, int id) {
  return folder.tokenizer ? folder.tokenizer->tokenText(id) : "#" + std::to_string(id);
}

// {"model_type", "tokens": [texts], "mlm_head", "masked": [{"position", "next": [{"id",
// "text", "probability", "logit"}]}], "note" when nothing is predicted}.
Expected<std::string> predictionJson(const io::EncoderFolder& folder, const model::EncoderRun& run,
                                     int k) {
  const model::EncoderWeights& weights = *folder.weights;
  nlohmann::ordered_json tokens = nlohmann::ordered_json::array();
  for (int id : run.ids) tokens.push_back(tokenText(folder, id));
  nlohmann::ordered_json masked = nlohmann::ordered_json::array();
  const int maskId = folder.tokenizer ? io::maskTokenId(*folder.tokenizer) : -1;
  std::string note;
  if (!weights.hasMlmHead) {
    note = "the checkpoint has no masked-language-model head: attention only, no prediction";
  } else if (!folder.tokenizer) {
    note = "no tokenizer: the mask token's id is not known (" + folder.tokenizerProblem + ")";
  } else if (maskId < 0) {
    note = "the tokenizer has no [MASK] or <mask> token";
  } else {
    for (int i = 0; i < run.size(); ++i) {
      if (run.ids[static_cast<std::size_t>(i)] != maskId) continue;
      Expected<Vector> logits = model::mlmLogits(weights, run, i);
      if (!logits) return logits.error();
      nlohmann::ordered_json next = nlohmann::ordered_json::array();
      for (const model::TokenProbability& t : model::topProbabilities(*logits, k)) {
        next.push_back({{"id", t.id},
                        {"text", folder.tokenizer ? nlohmann::ordered_json(folder.tokenizer->tokenText(t.id))
                                                  : nlohmann::ordered_json(nullptr)},
                        {"probability", t.probability},
                        {"logit", t.logit}});
      }
      masked.push_back({{"position", i}, {"next", next}});
    }
    if (masked.empty()) note = "no " + folder.tokenizer->tokenText(maskId) + " token in the input";
  }
  nlohmann::ordered_json out = {{"model_type", weights.config.modelType},
                                {"tokens", tokens},
                                {"mlm_head", weights.hasMlmHead},
                                {"masked", masked}};
  if (!note.empty()) out["note"] = note;
  return out.dump() + "\n";
}

}  // namespace

Expected<std::vector<ExtraArray>> bidirectionalMechanisms(const ModelRequest& request,
                                                          const std::vector<float>& attention,
                                                          const std::vector<Matrix>& qkv,
                                                          const std::vector<Matrix>& resid,
                                                          const std::vector<model::EncoderLayerWeights>& blocks,
                                                          const model::BlockOptions& options, int n) {
  const int layers = static_cast<int>(blocks.size()), heads = options.heads;
  std::vector<ExtraArray> arrays;
  for (const std::string& name : request.mechanisms) {
    if (name == "norm") {
      std::vector<model::Linear> outputs;
      for (const model::EncoderLayerWeights& block : blocks) outputs.push_back(block.out);
      arrays.push_back({"norm_weighted", {layers, heads, n, n}, model::normWeightedAttention(attention, qkv, outputs, heads), {}});
    } else if (name == "valuezero") {
      Expected<std::vector<float>> zeroed = model::bidirectionalValueZeroing(resid, blocks, options);
      if (!zeroed) return zeroed.error();
      arrays.push_back({"value_zeroing", {layers, n, n}, std::move(zeroed).value(), {}});
    } else if (name == "flow") {
      Expected<Matrix> flow = model::attentionFlow(attention, layers, heads, n, request.normalizeFlow);
      if (!flow) return flow.error();
      arrays.push_back({"attention_flow", {n, n}, std::vector<float>(flow->data(), flow->data() + flow->size()), {}});
    } else if (name == "alti") {
      return optionError("--mechanisms", "alti runs on decoders only (a post-LN encoder needs ALTI's linearised "
                                         "LayerNorm, not written yet; a ViT too)");
    } else {
      return optionError("--mechanisms", cli::inQuotes(name) + " is not a mechanism");
    }
  }
  return arrays;
}

Status checkEncoderSizes(const ModelRequest& request, const model::EncoderConfig& config, std::uint64_t n) {
  if (n > static_cast<std::uint64_t>(config.maxTokens())) {
    return optionError(request.hasIds ? "--ids" : "--text",
                       std::to_string(n) + " tokens are more than the model's " + std::to_string(config.maxTokens()) +
                           " (max_position_embeddings)");
  }
  const std::uint64_t attentionBytes =
      static_cast<std::uint64_t>(config.nLayer) * static_cast<std::uint64_t>(config.nHead) * n * n * 4;
  if (!request.outPath.empty() && attentionBytes > kMaxAttentionBytes) {
    return optionError("--text", std::to_string(n) + " tokens make an attention tensor of " +
                                     std::to_string(attentionBytes >> 20) + " MiB, above the 2048 MiB an .npz may hold here");
  }
  return Ok{};
}

int writeEncoderOutputs(const ModelRequest& request, const io::EncoderFolder& folder, const model::RunOutput& run,
                        const std::vector<std::string>& tokenTexts, std::ostream& out, std::ostream& err) {
  const model::EncoderConfig& config = folder.weights->config;
  const model::EncoderRun& engine = *run.encoderRun;
  const std::int64_t n = run.tokens;
  // 1 files
  if (!request.outPath.empty()) {
    const std::int64_t shape[4] = {config.nLayer, config.nHead, n, n};
    const model::BlockOptions options{config.nHead, config.normEpsilon, config.activation, false};
    Expected<std::vector<ExtraArray>> extra = bidirectionalMechanisms(
        request, engine.attention, engine.qkv, engine.resid, folder.weights->layers, options, static_cast<int>(n));
    if (!extra) return fail(err, extra.error());
    if (Status s = writeAttentionFiles(request, shape, denseBlocks(engine.attention, shape), run.ids, tokenTexts, *extra); !s)
      return fail(err, s.error());
  }
  // 2 fill-mask
  if (request.predict > 0) {
    Expected<std::string> json = predictionJson(folder, engine, request.predict);
    if (!json) return fail(err, json.error());
    out << *json;
    out.flush();
  }
  return 0;
}

}  // namespace attn::app::model_cli
