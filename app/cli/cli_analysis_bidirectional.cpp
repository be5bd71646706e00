// `analyze --ablate` and `heads` on an encoder folder (fill-mask at the text's mask tokens)
// or a vision transformer folder (labels of an image): cli_analysis.h. The decoder paths
// are in cli_analysis.cpp and cli_heads.cpp; these share their option parsing and output
// shapes, and differ in the input (a text with [MASK] / <mask>, or --image) and the metric.
#include <filesystem>
#include <nlohmann/json.hpp>

#include "app/cli/model_cache.h"
#include "app/cli/cli.h"
#include "app/cli/cli_analysis.h"
#include "app/cli/cli_common.h"
#include "core/models/analysis_bidirectional.h"
#include "formats/analysis/analysis_files.h"
#include "formats/files.h"
#include "formats/image.h"
#include "formats/models/encoder_folder.h"
#include "formats/models/vit_folder.h"

namespace attn::app::analysis_cli {

using cli::fail;
using cli::optionError;
using json = nlohmann::ordered_json;

FolderKind folderKind(const std::string& folder) {
  std::error_code ec;
  const std::filesystem::path config = std::filesystem::path(folder) / "config.json";
  if (!std::filesystem::is_regular_file(config, ec)) return FolderKind::Decoder;  // its loader names the problem
  Expected<std::string> type = io::loadModelType(config.string());
  if (!type) return FolderKind::Decoder;
  if (io::isEncoderModelType(*type)) return FolderKind::Encoder;
  if (io::isVisionModelType(*type)) return FolderKind::Vision;
  return FolderKind::Decoder;
}

namespace {

Error inFolder(Error e, const std::string& folder) {
  if (e.file.empty()) e.file = folder;
  return e;
}

// The input of a bidirectional run: an encoder's ids (the tokenizer's [CLS] text [SEP]) or a
// ViT's preprocessed pixels. Errors name --text / --image.
struct Input {
  std::shared_ptr<const model::EncoderWeights> encoder;
  std::shared_ptr<const io::Tokenizer> tokenizer;
  std::shared_ptr<const model::VitWeights> vit;
  std::vector<int> ids;
  std::vector<float> pixels;
};

Expected<Input> loadInput(FolderKind kind, const std::string& folder, const std::string& text,
                          const std::string& image, std::ostream& err) {
  Input in;
  if (kind == FolderKind::Encoder) {
    if (!image.empty()) return optionError("--image", "applies to vision transformers; this folder is an encoder");
    if (text.empty()) return optionError("--text", "missing (an encoder's input is a text)");
    Expected<io::EncoderFolder> loaded = cli::loadEncoderFolderKept(folder);
    if (!loaded) return loaded.error();
    if (!loaded->tokenizer)
      return optionError("--text", "needs a tokenizer, and this folder has none attnscope reads (" +
                                       loaded->tokenizerProblem + ")", folder);
    io::Tokenizer::Encoding encoding = io::encoderInput(*loaded->tokenizer, text);
    if (!encoding.invalidOffsets.empty())
      err << "attnscope: warning: option '--text': " << encoding.invalidOffsets.size()
          << " invalid UTF-8 sequence(s) replaced by U+FFFD\n";
    if (encoding.ids.size() > static_cast<std::size_t>(loaded->weights->config.maxTokens()))
      return optionError("--text", std::to_string(encoding.ids.size()) + " tokens are more than the model's " +
                                       std::to_string(loaded->weights->config.maxTokens()) +
                                       " (max_position_embeddings)");
    in.encoder = loaded->weights;
    in.tokenizer = loaded->tokenizer;
    in.ids = std::move(encoding.ids);
    return in;
  }
  if (!text.empty()) return optionError("--text", "applies to text models; this folder is a vision transformer (give --image)");
  if (image.empty()) return optionError("--image", "missing (a vision transformer's input is an image)");
  Expected<io::VitFolder> loaded = cli::loadVitFolderKept(folder);
  if (!loaded) return loaded.error();
  Expected<io::Image> picture = io::loadImage(image);
  if (!picture) return picture.error();
  in.vit = loaded->weights;
  in.pixels = io::vitPixels(*loaded, *picture);
  return in;
}

json tokensJson(const Input& in, const std::vector<model::TokenProbability>& top, bool labels) {
  json list = json::array();
  for (const model::TokenProbability& t : top) {
    json item = {{"id", t.id}};
    if (labels) item["label"] = in.vit->labels[static_cast<std::size_t>(t.id)];
    else item["text"] = in.tokenizer->tokenText(t.id);
    item["probability"] = t.probability;
    item["logit"] = t.logit;
    list.push_back(std::move(item));
  }
  return list;
}

json maskedJson(const Input& in, const std::vector<model::MaskedPrediction>& predictions) {
  json list = json::array();
  for (const model::MaskedPrediction& p : predictions)
    list.push_back({{"position", p.position}, {"next", tokensJson(in, p.next, false)}});
  return list;
}

}  // namespace

int analyzeBidirectional(const BidirectionalAblation& r, FolderKind kind, std::ostream& out, std::ostream& err) {
  Expected<Input> in = loadInput(kind, r.folder, r.text, r.image, err);
  if (!in) return fail(err, inFolder(in.error(), r.folder));
  const auto mode = r.mean ? model::AblationMode::Mean : model::AblationMode::Zero;
  json summary = json::object();
  json heads = json::array();
  for (const model::HeadId& h : r.heads) heads.push_back(std::to_string(h.layer) + "." + std::to_string(h.head));
  if (kind == FolderKind::Encoder) {
    const int maskId = io::maskTokenId(*in->tokenizer);
    if (maskId < 0) return fail(err, optionError("--text", "the tokenizer has no [MASK] or <mask> token to predict", r.folder));
    auto ablation = model::ablateEncoderHeads(*in->encoder, in->ids, maskId, r.heads, mode, r.predict);
    if (!ablation) {
      Error e = ablation.error();
      if (e.field == "heads") return fail(err, optionError("--ablate", e.problem, r.folder));
      if (e.field == "text")
        return fail(err, optionError("--text", "has no " + in->tokenizer->tokenText(maskId) +
                                                   " token: the fill-mask metric predicts at the mask tokens",
                                     r.folder));
      return fail(err, inFolder(e, r.folder));
    }
    summary["model_type"] = in->encoder->config.modelType;
    summary["tokens"] = in->ids.size();
    summary["mode"] = r.mean ? "mean" : "zero";
    summary["ablated_heads"] = heads;
    summary["clean"] = {{"masked", maskedJson(*in, ablation->clean)}};
    summary["ablated"] = {{"masked", maskedJson(*in, ablation->ablated)}};
  } else {
    auto ablation = model::ablateVitHeads(*in->vit, in->pixels, r.heads, mode, r.predict);
    if (!ablation) {
      Error e = ablation.error();
      if (e.field == "heads") return fail(err, optionError("--ablate", e.problem, r.folder));
      return fail(err, inFolder(e, r.folder));
    }
    summary["model_type"] = in->vit->config.modelType;
    summary["tokens"] = in->vit->config.tokens();
    summary["mode"] = r.mean ? "mean" : "zero";
    summary["ablated_heads"] = heads;
    summary["clean"] = {{"labels", tokensJson(*in, ablation->clean, true)}};
    summary["ablated"] = {{"labels", tokensJson(*in, ablation->ablated, true)}};
  }
  out << summary.dump() << "\n";
  return 0;
}

int headsBidirectional(const BidirectionalScores& r, FolderKind kind, std::ostream& out, std::ostream& err) {
  if (kind == FolderKind::Vision) {
    for (const model::HeadScoreKind k : r.kinds)
      if (model::needsTokenIds(k))
        return fail(err, optionError("--scores", std::string(model::toString(k)) +
                                                     " compares token ids, and a vision transformer's "
                                                     "patches have none (use prev, sink, entropy)"));
  }
  Expected<Input> in = loadInput(kind, r.folder, r.text, r.image, err);
  if (!in) return fail(err, inFolder(in.error(), r.folder));
  model::ScoreTotals totals;
  if (kind == FolderKind::Encoder) {
    auto run = model::runEncoder(*in->encoder, in->ids);
    if (!run) return fail(err, inFolder(run.error(), r.folder));
    totals = model::emptyTotals(run->layers, run->heads, r.kinds);
    model::accumulate(totals, model::attentionStack(run->attention, run->layers, run->heads, run->size()), in->ids,
                      r.options);
  } else {
    auto run = model::runVit(*in->vit, in->pixels);
    if (!run) return fail(err, inFolder(run.error(), r.folder));
    totals = model::emptyTotals(run->layers, run->heads, r.kinds);
    model::accumulate(totals, model::attentionStack(run->attention, run->layers, run->heads, run->tokens), {},
                      r.options);
  }
  if (Status s = io::writeFileAtomic(r.outPath, io::scoreTotalsCsv(totals, false)); !s)
    return fail(err, io::withFile(s.error(), r.outPath));
  out << json{{"out", r.outPath}, {"tokens", totals.count ? (kind == FolderKind::Encoder ? in->ids.size()
                                                                : static_cast<std::size_t>(in->vit->config.tokens()))
                                                          : 0}}
             .dump()
      << "\n";
  return 0;
}

}  // namespace attn::app::analysis_cli
