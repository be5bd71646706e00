// The `model` command on an encoder folder (bert, distilbert, roberta):
//   1 load the folder (config, tokenizer, weights), 2 the input: [CLS] text [SEP] (or the
//   --ids as given), 3 check the sizes, 4 run the encoder, 5 write OUT.npz and
//   OUT.tokens.json, 6 print the fill-mask prediction of every mask token.
#include <nlohmann/json.hpp>

#include "app/cli/model_cache.h"
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

int runEncoderModel(const ModelRequest& request, std::ostream& out, std::ostream& err) {
  if (request.bosChoice != -1) {
    return fail(err, optionError(request.bosChoice == 1 ? "--bos" : "--no-bos",
                                 "only applies to decoders (an encoder's text gets its tokenizer's "
                                 "[CLS] ... [SEP])"));
  }
  // 1 the folder
  Expected<io::EncoderFolder> folder = cli::loadEncoderFolderKept(request.folder);
  if (!folder) return fail(err, folder.error());
  const model::EncoderConfig& config = folder->weights->config;

  // 2 the input
  io::Tokenizer::Encoding encoding;
  if (request.hasIds) {
    encoding.ids = request.ids;
  } else if (!folder->tokenizer) {
    return fail(err, optionError("--text",
                                 "needs a tokenizer, and this " + config.modelType + " folder has none attnscope reads (" +
                                     folder->tokenizerProblem + "); give --ids I,J,...",
                                 request.folder));
  } else {
    encoding = io::encoderInput(*folder->tokenizer, request.text);
  }
  if (!encoding.invalidOffsets.empty()) {
    err << "attnscope: warning: option '--text': " << encoding.invalidOffsets.size()
        << (encoding.invalidOffsets.size() == 1 ? " invalid UTF-8 sequence" : " invalid UTF-8 sequences")
        << " replaced by U+FFFD (first at byte " << encoding.invalidOffsets.front() << ")\n";
  }
  const auto n = static_cast<std::uint64_t>(encoding.ids.size());
  if (n == 0) return fail(err, optionError("--text", "is empty (no tokens to run)"));

  // 3 sizes, before any work
  if (n > static_cast<std::uint64_t>(config.maxTokens())) {
    return fail(err, optionError(request.hasIds ? "--ids" : "--text",
                                 std::to_string(n) + " tokens are more than the model's " +
                                     std::to_string(config.maxTokens()) + " (max_position_embeddings)"));
  }
  const std::uint64_t attentionBytes =
      static_cast<std::uint64_t>(config.nLayer) * static_cast<std::uint64_t>(config.nHead) * n * n * 4;
  if (!request.outPath.empty() && attentionBytes > kMaxAttentionBytes) {
    return fail(err, optionError("--text", std::to_string(n) + " tokens make an attention tensor of " +
                                               std::to_string(attentionBytes >> 20) +
                                               " MiB, above the 2048 MiB an .npz may hold here"));
  }

  // 4 forward
  Expected<model::EncoderRun> run = model::runEncoder(*folder->weights, encoding.ids);
  if (!run) {
    Error error = run.error();
    if (error.file.empty()) error.file = request.folder;
    return fail(err, error);
  }

  // 5 files
  if (!request.outPath.empty()) {
    const std::int64_t shape[4] = {config.nLayer, config.nHead, static_cast<std::int64_t>(n),
                                   static_cast<std::int64_t>(n)};
    std::vector<std::string> texts;
    for (int id : encoding.ids) texts.push_back(tokenText(*folder, id));
    const model::BlockOptions options{config.nHead, config.normEpsilon, config.activation, false};
    Expected<std::vector<ExtraArray>> extra = bidirectionalMechanisms(
        request, run->attention, run->qkv, run->resid, folder->weights->layers, options, static_cast<int>(n));
    if (!extra) return fail(err, extra.error());
    if (Status s = writeAttentionFiles(request, shape, denseBlocks(run->attention, shape), encoding.ids, texts, *extra); !s)
      return fail(err, s.error());
  }

  // 6 fill-mask
  if (request.predict > 0) {
    Expected<std::string> json = predictionJson(*folder, *run, request.predict);
    if (!json) return fail(err, json.error());
    out << *json;
    out.flush();
  }
  return 0;
}

}  // namespace attn::app::model_cli
