// `analyze --ablate`, `heads`, `lens` and `patch` on an encoder folder (fill-mask at the
// text's mask tokens) or a vision transformer folder (labels of an image): cli_analysis.h. The decoder paths
// are in cli_analysis.cpp and cli_heads.cpp; these share their option parsing and output
// shapes, and differ in the input (a text with [MASK] / <mask>, or --image) and the metric.
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>

#include "app/cli/model_cache.h"
#include "app/cli/cli.h"
#include "app/cli/cli_analysis.h"
#include "app/cli/cli_common.h"
#include "core/models/analysis_bidirectional.h"
#include "core/models/run_analyses.h"
#include "formats/analysis/analysis_files.h"
#include "formats/files.h"
#include "formats/image.h"
#include "formats/models/encoder_folder.h"
#include "formats/models/vit_folder.h"

namespace attn::app::analysis_cli {

using cli::fail;
using cli::optionError;
using json = nlohmann::ordered_json;

namespace {

Error inFolder(Error e, const std::string& folder) {
  if (e.file.empty()) e.file = folder;
  return e;
}

// The input of a bidirectional run: an encoder's ids (the tokenizer's [CLS] text [SEP]) or a
// ViT's preprocessed pixels. Errors name textOption / imageOption (--text / --image).
struct Input {
  std::shared_ptr<const model::EncoderWeights> encoder;
  std::shared_ptr<const io::Tokenizer> tokenizer;
  std::shared_ptr<const model::VitWeights> vit;
  std::vector<int> ids;
  std::vector<float> pixels;
};

Expected<Input> loadInput(io::ModelKind kind, const std::string& folder, const std::string& text,
                          const std::string& image, std::ostream& err, std::string_view textOption = "--text",
                          std::string_view imageOption = "--image") {
  Input in;
  if (kind == io::ModelKind::Encoder) {
    if (!image.empty()) return optionError(imageOption, "applies to vision transformers; this folder is an encoder");
    if (text.empty()) return optionError(textOption, "missing (an encoder's input is a text)");
    Expected<io::LoadedModel> model = cli::openModelKept(folder, io::ModelKind::Encoder);
    if (!model) return model.error();
    const io::EncoderFolder* loaded = model->encoder.get();
    if (!loaded->tokenizer)
      return optionError(textOption, "needs a tokenizer, and this folder has none attnscope reads (" +
                                       loaded->tokenizerProblem + ")", folder);
    io::Tokenizer::Encoding encoding = io::encoderInput(*loaded->tokenizer, text);
    if (!encoding.invalidOffsets.empty())
      err << "attnscope: warning: option '" << textOption << "': " << encoding.invalidOffsets.size()
          << " invalid UTF-8 sequence(s) replaced by U+FFFD\n";
    if (encoding.ids.size() > static_cast<std::size_t>(loaded->weights->config.maxTokens()))
      return optionError(textOption, std::to_string(encoding.ids.size()) + " tokens are more than the model's " +
                                       std::to_string(loaded->weights->config.maxTokens()) +
                                       " (max_position_embeddings)");
    in.encoder = loaded->weights;
    in.tokenizer = loaded->tokenizer;
    in.ids = std::move(encoding.ids);
    return in;
  }
  if (!text.empty()) return optionError(textOption, "applies to text models; this folder is a vision transformer (give --image)");
  if (image.empty()) return optionError(imageOption, "missing (a vision transformer's input is an image)");
  Expected<io::LoadedModel> model = cli::openModelKept(folder, io::ModelKind::Vision);
  if (!model) return model.error();
  const io::VitFolder* loaded = model->vision.get();
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

int analyzeBidirectional(const BidirectionalAblation& r, io::ModelKind kind, std::ostream& out, std::ostream& err) {
  Expected<Input> in = loadInput(kind, r.folder, r.text, r.image, err);
  if (!in) return fail(err, inFolder(in.error(), r.folder));
  const auto mode = r.mean ? model::AblationMode::Mean : model::AblationMode::Zero;
  json summary = json::object();
  json heads = json::array();
  for (const model::HeadId& h : r.heads) heads.push_back(std::to_string(h.layer) + "." + std::to_string(h.head));
  if (kind == io::ModelKind::Encoder) {
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

int headsBidirectional(const BidirectionalScores& r, io::ModelKind kind, std::ostream& out, std::ostream& err) {
  if (kind == io::ModelKind::Vision) {
    for (const model::HeadScoreKind k : r.kinds)
      if (model::needsTokenIds(k))
        return fail(err, optionError("--scores", std::string(model::toString(k)) +
                                                     " compares token ids, and a vision transformer's "
                                                     "patches have none (use prev, sink, entropy)"));
  }
  Expected<Input> in = loadInput(kind, r.folder, r.text, r.image, err);
  if (!in) return fail(err, inFolder(in.error(), r.folder));
  // one pass through the run interface (core/models/model_run.h): the attention [L, H, n, n]
  const bool encoder = kind == io::ModelKind::Encoder;
  const model::AnyWeights weights = encoder ? model::AnyWeights::of(in->encoder) : model::AnyWeights::of(in->vit);
  Expected<model::RunOutput> run = model::runModel(weights, {in->ids, in->pixels});
  if (!run) return fail(err, inFolder(run.error(), r.folder));
  model::ScoreTotals totals = model::emptyTotals(run->layers, run->heads, r.kinds);
  model::accumulate(totals, model::attentionStack(run->attention, run->layers, run->heads, run->tokens), run->ids,
                    r.options);
  if (Status s = io::writeFileAtomic(r.outPath, io::scoreTotalsCsv(totals, false)); !s)
    return fail(err, io::withFile(s.error(), r.outPath));
  out << json{{"out", r.outPath}, {"tokens", run->tokens}}.dump() << "\n";
  return 0;
}

// =======================================================================================
// lens and patch
// =======================================================================================

namespace {

// Refuses a vision transformer for the lens: it has no unembedding.
Error noUnembedding(const std::string& folder) {
  const std::string config = (std::filesystem::path(folder) / "config.json").string();
  Expected<std::string> type = io::loadModelType(config);
  std::string problem = "'";  // (appended apart: GCC 12's -Wrestrict misfires on "'" + string)
  problem += type ? *type : std::string();
  problem += "' is a vision transformer: it has no unembedding (its classifier reads [CLS] only), "
             "so there is no logit lens; the lens needs a decoder or an encoder with a masked-LM head";
  return Error{config, "model_type", problem};
}

// One token's id from its text (no specials): errors name `option` and the count.
Expected<int> oneToken(const io::Tokenizer& tokenizer, const std::string& text, std::string_view option) {
  const std::vector<int> ids = tokenizer.encode(text).ids;
  if (ids.size() != 1)
    return optionError(option, cli::inQuotes(text) + " is " + std::to_string(ids.size()) + " tokens; give one token");
  return ids[0];
}

// A label by its name in id2label, else by its index.
Expected<int> labelIndex(const model::VitWeights& weights, const std::string& text, std::string_view option) {
  for (std::size_t k = 0; k < weights.labels.size(); ++k)
    if (weights.labels[k] == text) return static_cast<int>(k);
  const int count = static_cast<int>(weights.labels.size());
  if (std::optional<int> index = parseIntStrict(text, 0, count - 1)) return *index;
  return optionError(option, cli::inQuotes(text) + " is neither a label of id2label nor an index 0.." +
                                 std::to_string(count - 1));
}

// The labels of a ViT's tokens for the CSV's columns: [CLS], [DIST], then each patch's row
// and column.
std::vector<std::string> vitTokenLabels(const model::VitConfig& c) {
  std::vector<std::string> out = {"0:[CLS]"};
  if (c.distillationToken) out.push_back("1:[DIST]");
  for (int p = 0; p < c.patches(); ++p)
    out.push_back(std::to_string(c.prefixTokens() + p) + ":r" + std::to_string(p / c.grid()) + "c" +
                  std::to_string(p % c.grid()));
  return out;
}

// The core's field as the option that gave it.
Error patchError(Error e, const std::string& folder) {
  for (const auto& [field, option] : {std::pair{"corrupt", "--corrupt"}, std::pair{"position", "--position"},
                                      std::pair{"answer", "--answer"}, std::pair{"wrong", "--wrong"}}) {
    if (e.field == field) return optionError(option, e.problem, folder);
  }
  return inFolder(e, folder);
}

}  // namespace

int lensBidirectional(const BidirectionalLens& r, io::ModelKind kind, std::ostream& out, std::ostream& err) {
  if (kind == io::ModelKind::Vision) return fail(err, noUnembedding(r.folder));
  Expected<Input> in = loadInput(kind, r.folder, r.text, "", err);
  if (!in) return fail(err, inFolder(in.error(), r.folder));
  auto lens = model::modelLens(model::AnyWeights::of(in->encoder), {in->ids, {}}, r.top);
  if (!lens) return fail(err, inFolder(lens.error(), r.folder));
  json tokens = json::array(), layers = json::array(), top = json::array();
  for (int id : in->ids) tokens.push_back({{"id", id}, {"text", in->tokenizer->tokenText(id)}});
  for (std::size_t l = 0; l < lens->top.size(); ++l) {
    layers.push_back(l == 0 ? std::string("embed") : "after L" + std::to_string(l - 1));
    json positions = json::array();
    for (const auto& list : lens->top[l]) positions.push_back(tokensJson(*in, list, false));
    top.push_back(std::move(positions));
  }
  const json file = {{"model_type", in->encoder->config.modelType},
                     {"head", "mlm"},
                     {"tokens", tokens},
                     {"layers", layers},
                     {"top", top}};
  if (Status s = cli::writeText(r.outPath, file.dump() + "\n"); !s) return fail(err, s.error());
  out << json{{"out", r.outPath}, {"layers", layers.size()}, {"tokens", in->ids.size()}}.dump() << "\n";
  return 0;
}

int patchBidirectional(const BidirectionalPatch& r, io::ModelKind kind, std::ostream& out, std::ostream& err) {
  model::PatchMetric metric;
  Expected<model::Patching> patching = Error{};
  std::vector<std::string> positions;
  json summary = json::object();
  int heads = 0;
  std::size_t tokens = 0;
  std::function<json(int)> describe;  // an id of the metric as JSON
  Input clean, corrupt;
  if (kind == io::ModelKind::Encoder) {
    // 1 the two texts, of equal token length; 2 the metric's position and tokens
    Expected<Input> a = loadInput(kind, r.folder, r.clean, "", err, "--clean");
    if (!a) return fail(err, inFolder(a.error(), r.folder));
    Expected<Input> b = loadInput(kind, r.folder, r.corrupt, "", err, "--corrupt");
    if (!b) return fail(err, inFolder(b.error(), r.folder));
    clean = std::move(a).value();
    corrupt = std::move(b).value();
    if (clean.ids.size() != corrupt.ids.size()) {
      return fail(err, optionError("--corrupt", "is " + std::to_string(corrupt.ids.size()) + " tokens and --clean " +
                                                    std::to_string(clean.ids.size()) +
                                                    " (with the tokenizer's specials): patching needs equal token lengths",
                                   r.folder));
    }
    metric.position = r.position;
    if (metric.position < 0) {
      const int maskId = io::maskTokenId(*clean.tokenizer);
      std::vector<int> masks;
      for (std::size_t i = 0; i < clean.ids.size(); ++i)
        if (maskId >= 0 && clean.ids[i] == maskId) masks.push_back(static_cast<int>(i));
      if (masks.empty())
        return fail(err, optionError("--clean", "has no mask token: give --position P for the metric", r.folder));
      if (masks.size() > 1)
        return fail(err, optionError("--position", "missing: the clean text has " + std::to_string(masks.size()) +
                                                       " mask tokens; give the metric's position",
                                     r.folder));
      metric.position = masks[0];
    }
    if (r.hasAnswer) {
      Expected<int> id = oneToken(*clean.tokenizer, r.answer, "--answer");
      if (!id) return fail(err, id.error());
      metric.answer = *id;
    }
    if (r.hasWrong) {
      Expected<int> id = oneToken(*clean.tokenizer, r.wrong, "--wrong");
      if (!id) return fail(err, id.error());
      metric.wrong = *id;
    }
    // 3 every site
    patching = model::modelPatching(model::AnyWeights::of(clean.encoder), {clean.ids, {}}, {corrupt.ids, {}}, metric,
                                    patchTarget(r.what));
    heads = clean.encoder->config.nHead;
    tokens = clean.ids.size();
    for (std::size_t i = 0; i < clean.ids.size(); ++i)
      positions.push_back(std::to_string(i) + ":" + clean.tokenizer->tokenText(clean.ids[i]));
    summary["model_type"] = clean.encoder->config.modelType;
    summary["position"] = metric.position;
    describe = [&clean](int id) { return json{{"id", id}, {"text", clean.tokenizer->tokenText(id)}}; };
  } else {
    // 1 the two images, preprocessed alike (equal sizes by construction); 2 the labels
    Expected<Input> a = loadInput(kind, r.folder, "", r.cleanImage, err, "--clean", "--clean-image");
    if (!a) return fail(err, inFolder(a.error(), r.folder));
    Expected<Input> b = loadInput(kind, r.folder, "", r.corruptImage, err, "--corrupt", "--corrupt-image");
    if (!b) return fail(err, inFolder(b.error(), r.folder));
    clean = std::move(a).value();
    corrupt = std::move(b).value();
    if (!clean.vit->hasClassifier())
      return fail(err, inFolder(Error{"", "classifier", "the checkpoint has no classifier: the label metric needs one"},
                                r.folder));
    if (r.hasAnswer) {
      Expected<int> id = labelIndex(*clean.vit, r.answer, "--answer");
      if (!id) return fail(err, inFolder(id.error(), r.folder));
      metric.answer = *id;
    }
    if (r.hasWrong) {
      Expected<int> id = labelIndex(*clean.vit, r.wrong, "--wrong");
      if (!id) return fail(err, inFolder(id.error(), r.folder));
      metric.wrong = *id;
    }
    // 3 every site
    patching = model::modelPatching(model::AnyWeights::of(clean.vit), {{}, clean.pixels}, {{}, corrupt.pixels}, metric,
                                    patchTarget(r.what));
    heads = clean.vit->config.nHead;
    tokens = static_cast<std::size_t>(clean.vit->config.tokens());
    positions = vitTokenLabels(clean.vit->config);
    summary["model_type"] = clean.vit->config.modelType;
    describe = [&clean](int id) {
      return json{{"id", id}, {"label", clean.vit->labels[static_cast<std::size_t>(id)]}};
    };
  }
  if (!patching) return fail(err, patchError(patching.error(), r.folder));
  // 4 the files, 5 the summary
  if (Status s = writePatching(patching->effect, r.what, heads, positions, r.outPath, r.pngPath); !s)
    return fail(err, s.error());
  summary["what"] = patchTargetName(r.what);
  summary["tokens"] = tokens;
  summary["answer"] = describe(patching->answer);
  summary["wrong"] = metric.wrong >= 0 ? describe(metric.wrong) : json(nullptr);
  summary["clean_metric"] = patching->cleanMetric;
  summary["corrupt_metric"] = patching->corruptMetric;
  summary["out"] = r.outPath;
  summary["png"] = r.pngPath.empty() ? json(nullptr) : json(r.pngPath);
  out << summary.dump() << "\n";
  return 0;
}

}  // namespace attn::app::analysis_cli
