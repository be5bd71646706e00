// `analyze`, `patch` and `lens` (cli_analysis.h): 1 parse the options (declared once each),
// 2 load the folder, 3 tokenize, 4 run the analysis of core/models/analysis.h, 5 write the
// files atomically, 6 print a JSON summary on stdout.
#include "app/cli/cli_analysis.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "app/cli/cli.h"
#include "app/cli/cli_common.h"
#include "app/cli/model_cache.h"
#include "app/session/model_analysis.h"
#include "app/session/model_driver.h"
#include "core/models/analysis.h"
#include "core/models/analysis_conventions.h"
#include "core/models/run_analyses.h"
#include "formats/analysis/analysis_files.h"
#include "formats/files.h"
#include "formats/models/encoder_folder.h"
#include "formats/models/vit_folder.h"
#include "formats/models/model_config.h"
#include "render/heatmap_render.h"

namespace attn::app {

using cli::fail;
using cli::optionError;
using json = nlohmann::ordered_json;

// =======================================================================================
// Shared by the analysis commands
// =======================================================================================

namespace analysis_cli {

Expected<io::ModelFolder> loadFolder(const std::string& folder) {
  // An encoder or a vision transformer is refused by its kind (the analyses' hooks exist in
  // the decoder engine only), not as an unknown decoder.
  if (const io::ModelKind kind = io::modelKindOf(folder); kind != io::ModelKind::Decoder) {
    const std::string config = (std::filesystem::path(folder) / "config.json").string();
    Expected<std::string> type = io::loadModelType(config);
    return Error{config, "model_type",
                 "'" + (type ? *type : std::string()) + "' is " + io::kindName(kind) +
                     ": this runs on decoder models only (analyze --ablate, heads, lens and patch "
                     "take encoders, and all but lens vision transformers)"};
  }
  Expected<io::LoadedModel> model = cli::openModelKept(folder, io::ModelKind::Decoder);
  if (!model) {
    Error e = model.error();
    if (e.file.empty()) e.file = folder;
    return e;
  }
  return *model->decoder;
}

std::vector<cli::Option> bosOptions() {
  return {
      cli::customOption("--bos", "",
                        "put the BOS token first: the tokenizer's, else config.json's\n"
                        "bos_token_id (default for a text: as the tokenizer's post-processor\n"
                        "does, <s> for Llama, none for GPT-2, and its EOS last for a\n"
                        "\"<s> $A </s>\" template; for --ids: none)",
                        nullptr),
      cli::customOption("--no-bos", "", "do not put it first (nor the template's EOS last)", nullptr),
  };
}

Expected<int> bosChoice(const cli::ParsedArgs& parsed) {
  if (parsed.has("--bos") && parsed.has("--no-bos"))
    return optionError("--bos", "give either --bos or --no-bos, not both");
  return parsed.has("--bos") ? 1 : parsed.has("--no-bos") ? 0 : -1;
}

Expected<int> bosToken(const io::ModelFolder& model, int choice) { return app::decoderBos(model, choice); }

Expected<std::vector<int>> tokenize(const io::ModelFolder& model, const std::string& text,
                                    std::string_view option, std::ostream& err, int choice) {
  const model::Config& c = model.weights->config;
  if (!model.tokenizer) {
    return optionError(option, "needs a tokenizer, and this " + c.modelType +
                                   " folder has none attnscope reads (" +
                                   (model.tokenizerProblem.empty() ? std::string("no tokenizer.json")
                                                                   : model.tokenizerProblem) +
                                   ")");
  }
  app::DriveRequest request;
  request.text = text;
  request.bos = choice;
  Expected<app::PreparedInput> prepared = app::prepareDecoderInput(model, request);
  if (!prepared) return prepared.error();
  if (!prepared->invalidOffsets.empty()) {
    err << "attnscope: warning: option '" << option << "': " << prepared->invalidOffsets.size()
        << " invalid UTF-8 sequence(s) replaced by U+FFFD (first at byte "
        << prepared->invalidOffsets.front() << ")\n";
  }
  std::vector<int>& ids = prepared->input.ids;
  if (prepared->textTokens() == 0) return optionError(option, "is empty (no tokens to run)");
  if (ids.size() > static_cast<std::size_t>(c.nPositions)) {
    const char* with = prepared->bos && prepared->eos ? " (with the BOS and EOS)"
                       : prepared->bos                ? " (with the BOS)"
                       : prepared->eos                ? " (with the EOS)"
                                                      : "";
    return optionError(option, std::to_string(ids.size()) + " tokens" + with +
                                   " are more than the model's context of " +
                                   std::to_string(c.nPositions) + " (n_positions)");
  }
  return std::move(ids);
}

Expected<int> singleToken(const io::ModelFolder& model, const std::string& text,
                          std::string_view option) {
  if (!model.tokenizer) return optionError(option, "needs the folder's tokenizer");
  const std::vector<int> ids = model.tokenizer->encode(text).ids;
  if (ids.size() != 1) {
    return optionError(option, cli::inQuotes(text) + " is " + std::to_string(ids.size()) +
                                   " tokens; give one token (GPT-2: mind the leading space, \" Mary\")");
  }
  return ids[0];
}

std::string tokenLabel(const io::ModelFolder& model, int id) {
  return model.tokenizer ? model.tokenizer->tokenText(id) : "#" + std::to_string(id);
}

}  // namespace analysis_cli

namespace {

using analysis_cli::bosChoice;
using analysis_cli::bosOptions;
using analysis_cli::bosToken;
using analysis_cli::loadFolder;
using analysis_cli::singleToken;
using analysis_cli::tokenize;
using analysis_cli::tokenLabel;
using analysis_cli::analyzeBidirectional;

constexpr int kMaxTop = 1000;

json nextJson(const io::ModelFolder& model, const std::vector<model::TokenProbability>& next) {
  json list = json::array();
  for (const model::TokenProbability& t : next) {
    list.push_back({{"id", t.id},
                    {"text", model.tokenizer ? json(model.tokenizer->tokenText(t.id)) : json(nullptr)},
                    {"probability", t.probability},
                    {"logit", t.logit}});
  }
  return list;
}

std::vector<std::string> numbered(const std::string& prefix, Eigen::Index count) {
  std::vector<std::string> out;
  for (Eigen::Index i = 0; i < count; ++i) out.push_back(prefix + std::to_string(i));
  return out;
}

// "3.1,0.7" -> heads; every item "L.H" with integers.
Expected<std::vector<model::HeadId>> parseHeads(const std::string& text) {
  std::vector<model::HeadId> heads;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    const std::size_t dot = item.find('.');
    auto layer = dot == std::string::npos ? std::nullopt : parseIntStrict(item.substr(0, dot), 0, model::kMaxLayers);
    auto head = dot == std::string::npos ? std::nullopt : parseIntStrict(item.substr(dot + 1), 0, model::kMaxHeads);
    if (!layer || !head) {
      return Error{"", "", "item " + std::to_string(heads.size() + 1) + " " + cli::inQuotes(item) +
                               " is not LAYER.HEAD (e.g. 9.6, comma-separated)"};
    }
    heads.push_back({*layer, *head});
    start = comma + 1;
  }
  return heads;
}

// An error of the core (no file) gets the model folder's name.
Error inFolder(Error e, const std::string& folder) {
  if (e.file.empty()) e.file = folder;
  return e;
}

// =======================================================================================
// analyze
// =======================================================================================

struct AnalyzeRequest {
  std::string folder, text, image, answer, wrong, attributionPath, meanFrom;
  std::vector<model::HeadId> heads;
  int mode = 0;  // zero, mean
  int predict = 10;
  int bos = -1;  // bosChoice()
};

cli::Command analyzeCommand(AnalyzeRequest& r) {
  cli::Command command;
  command.name = "analyze";
  command.column = 22;
  command.usage = R"(usage: attnscope analyze DIR --text TEXT --ablate L.H[,L.H...] [--mode zero|mean]
                          [--mean-from P.jsonl] [--predict K] [--bos | --no-bos]
       attnscope analyze DIR --text TEXT --answer A --wrong W --attribution OUT.csv
       attnscope analyze ENCODER_DIR --text "... [MASK] ..." --ablate L.H,... [--mode M] [--predict K]
       attnscope analyze VIT_DIR --image IMG --ablate L.H,... [--mode M] [--predict K]

Ablates heads, or attributes a logit difference to heads, on the model folder DIR (see
attnscope model --help). With --ablate it prints
  {"tokens", "bos", "mode", "ablated_heads": ["L.H", ...],
   "clean":   {"next": [{"id", "text", "probability", "logit"}, ...], "loss"},
   "ablated": {"next": [...], "loss"},
   "delta_logits": {"<id>": ablated - clean, ...} for every token in either top-K}
(loss: mean next-token cross-entropy over the text, nats). On an encoder folder (bert,
distilbert, roberta) "clean" and "ablated" hold {"masked": [{"position", "next"}]}, the
fill-mask top-K at every mask token; on a vision transformer (vit, deit) {"labels": [...]},
the image's top-K labels. Formulas: docs/analyses.md.
)";
  command.options = {
      cli::textOption("--text", "TEXT", "the prompt (tokenized with the folder's tokenizer)", r.text),
      cli::textOption("--image", "IMG", "a vision transformer's input image (PNG, JPEG, ...)", r.image),
      cli::customOption("--ablate", "L.H,...", "heads to ablate together (0-based layer.head)",
                        [&r](const std::string& v) -> Status {
                          auto heads = parseHeads(v);
                          if (!heads) return heads.error();
                          r.heads = std::move(heads).value();
                          return Ok{};
                        }),
      cli::wordOption("--mode", "MODE", "mode", {"zero", "mean"},
                      "zero: z = 0; mean: z = its mean over the prompt's positions, or\n"
                      "over a dataset's with --mean-from ({choices})",
                      r.mode),
      cli::textOption("--mean-from", "P.jsonl",
                      "with --mode mean: z = its mean over every position of every prompt\n"
                      "of P.jsonl (one {\"text\": ...} per line, clean runs, the same BOS rule)",
                      r.meanFrom),
      cli::intOption("--predict", "K", 1, kMaxTop, "top-K next tokens to print (1..1000)",
                     r.predict),
      cli::textOption("--answer", "A", "the answer token's text (one token, e.g. \" Mary\")", r.answer),
      cli::textOption("--wrong", "W", "the wrong token's text (one token)", r.wrong),
      cli::textOption("--attribution", "OUT.csv",
                      "write each head's direct contribution to logit(A) - logit(W) at the\n"
                      "last position: layers as rows, heads as columns",
                      r.attributionPath),
  };
  for (cli::Option& o : bosOptions()) command.options.push_back(std::move(o));
  command.notes = "Errors (exit 2) name the option, the file and the problem.\n";
  return command;
}

Expected<AnalyzeRequest> parseAnalyze(std::span<const std::string> args, bool& help) {
  AnalyzeRequest r;
  Expected<cli::ParsedArgs> parsed = cli::parseCommand(analyzeCommand(r), args);
  if (!parsed) return parsed.error();
  help = parsed->help;
  if (help) return r;
  if (parsed->positional.size() != 1)
    return Error{"", "", "'analyze' needs one model folder DIR (see attnscope analyze --help)"};
  r.folder = parsed->positional[0];
  if (!parsed->has("--text") && !parsed->has("--image")) return optionError("--text", "missing");
  if (parsed->has("--text") && parsed->has("--image"))
    return optionError("--image", "give either --text or --image, not both");
  Expected<int> bos = bosChoice(*parsed);
  if (!bos) return bos.error();
  r.bos = *bos;
  const bool ablate = parsed->has("--ablate"), attribution = parsed->has("--attribution");
  if (!ablate && !attribution)
    return optionError("--ablate", "missing (give --ablate L.H,... or --attribution OUT.csv)");
  if (!ablate && (parsed->has("--mode") || parsed->has("--predict")))
    return optionError(parsed->has("--mode") ? "--mode" : "--predict", "only applies with --ablate");
  if (parsed->has("--mean-from") && r.mode != 1)
    return optionError("--mean-from", "only applies with --ablate ... --mode mean");
  if (attribution) {
    if (!parsed->has("--answer") || !parsed->has("--wrong"))
      return optionError(parsed->has("--answer") ? "--wrong" : "--answer", "missing (--attribution needs both)");
    if (Status s = cli::checkOutputFile("--attribution", r.attributionPath); !s) return s.error();
  } else if (parsed->has("--answer") || parsed->has("--wrong")) {
    return optionError(parsed->has("--answer") ? "--answer" : "--wrong", "only applies with --attribution");
  }
  return r;
}

}  // namespace

cli::CommandInfo analyzeInfo() {
  AnalyzeRequest r;
  return cli::describe(analyzeCommand(r));
}

int runAnalyze(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  bool help = false;
  Expected<AnalyzeRequest> r = parseAnalyze(args, help);
  if (!r) return fail(err, r.error());
  if (help) {
    AnalyzeRequest defaults;
    out << cli::helpText(analyzeCommand(defaults));
    return 0;
  }
  if (const io::ModelKind kind = io::modelKindOf(r->folder); kind != io::ModelKind::Decoder) {
    // encoders and vision transformers: ablation only (no next token to attribute)
    if (!r->attributionPath.empty())
      return fail(err, optionError("--attribution", "needs a decoder's next-token logits", r->folder));
    if (!r->meanFrom.empty())
      return fail(err, optionError("--mean-from", "runs on decoders only (use --mode mean)", r->folder));
    if (r->bos != -1)
      return fail(err, optionError(r->bos == 1 ? "--bos" : "--no-bos",
                                   "only applies to decoders (an encoder's text gets its tokenizer's specials)",
                                   r->folder));
    return analyzeBidirectional({r->folder, r->text, r->image, r->heads, r->mode == 1, r->predict}, kind, out,
                                err);
  }
  if (!r->image.empty())
    return fail(err, optionError("--image", "applies to vision transformers; this folder is a decoder", r->folder));
  Expected<io::ModelFolder> model = loadFolder(r->folder);
  if (!model) return fail(err, model.error());
  Expected<int> bos = bosToken(*model, r->bos);
  if (!bos) return fail(err, bos.error());
  Expected<std::vector<int>> ids = tokenize(*model, r->text, "--text", err, r->bos);
  if (!ids) return fail(err, ids.error());
  json summary = json::object();
  summary["tokens"] = ids->size();
  summary["bos"] = *bos >= 0;

  if (!r->heads.empty()) {
    const auto mode = r->mode == 0 ? model::AblationMode::Zero : model::AblationMode::Mean;
    Expected<model::Ablation> ablation = Error{};
    if (r->meanFrom.empty()) {
      ablation = model::ablateHeads(model->weights, *ids, r->heads, mode, r->predict);
    } else {  // the dataset's mean z
      auto lines = io::readPrompts(r->meanFrom, true);
      if (!lines) return fail(err, lines.error());
      std::vector<std::vector<int>> prompts;
      for (const io::PromptLine& line : *lines) {
        auto promptIds = tokenize(*model, line.text, "--mean-from", err, r->bos);
        if (!promptIds)
          return fail(err, Error{r->meanFrom, "line " + std::to_string(line.line) + ": text", promptIds.error().problem});
        prompts.push_back(std::move(promptIds).value());
      }
      auto means = model::meanHeadOutputs(model->weights, prompts);
      if (!means) return fail(err, inFolder(means.error(), r->folder));
      ablation = model::ablateHeadsToMeans(model->weights, *ids, r->heads, *means, r->predict);
      std::size_t positions = 0;
      for (const auto& p : prompts) positions += p.size();
      summary["mean_from"] = {{"file", r->meanFrom}, {"prompts", prompts.size()}, {"positions", positions}};
    }
    if (!ablation) {
      Error e = ablation.error();
      if (e.field == "heads") return fail(err, optionError("--ablate", e.problem, r->folder));
      return fail(err, inFolder(e, r->folder));
    }
    json heads = json::array();
    for (const model::HeadId& h : r->heads) heads.push_back(std::to_string(h.layer) + "." + std::to_string(h.head));
    summary["mode"] = r->mode == 0 ? "zero" : "mean";
    summary["ablated_heads"] = heads;
    summary["clean"] = {{"next", nextJson(*model, ablation->clean.next)}, {"loss", ablation->clean.loss}};
    summary["ablated"] = {{"next", nextJson(*model, ablation->ablated.next)},
                          {"loss", ablation->ablated.loss}};
    json delta = json::object();
    for (const auto* list : {&ablation->clean.next, &ablation->ablated.next}) {
      for (const model::TokenProbability& t : *list) {
        delta[std::to_string(t.id)] = ablation->ablated.logits[t.id] - ablation->clean.logits[t.id];
      }
    }
    summary["delta_logits"] = delta;
  }

  if (!r->attributionPath.empty()) {
    Expected<int> answer = singleToken(*model, r->answer, "--answer");
    if (!answer) return fail(err, answer.error());
    Expected<int> wrong = singleToken(*model, r->wrong, "--wrong");
    if (!wrong) return fail(err, wrong.error());
    auto dla = model::directLogitAttribution(model->weights, *ids, *answer, *wrong);
    if (!dla) return fail(err, inFolder(dla.error(), r->folder));
    const std::string csv = io::matrixCsv(dla->heads, "layer\\head", numbered("L", dla->heads.rows()),
                                          numbered("H", dla->heads.cols()));
    if (Status s = cli::writeText(r->attributionPath, csv); !s) return fail(err, s.error());
    summary["attribution"] = {{"out", r->attributionPath},
                              {"logit_difference", dla->metric},
                              {"sum_over_heads", dla->heads.cast<double>().sum()}};
  }
  out << summary.dump() << "\n";
  return 0;
}

// =======================================================================================
// patch
// =======================================================================================

namespace {

struct PatchRequest {
  std::string folder, clean, corrupt, answer, wrong, outPath, pngPath, cleanImage, corruptImage;
  int what = 0;  // an index into kPatchTargets
  int position = -1;
};

// --what's choices, in its order: the name, the target, the heatmap's title part and axes,
// the CSV's corner cell.
struct PatchTargetInfo {
  const char* name;
  model::PatchTarget target;
  const char* title;
  const char* rowAxis;
  const char* colAxis;
  const char* corner;
};
constexpr PatchTargetInfo kPatchTargets[] = {
    {"heads", model::PatchTarget::Heads, "heads (z)", "layer", "head", "layer\\head"},
    {"resid", model::PatchTarget::Resid, "resid", "residual stream", "position", "layer\\position"},
    {"heads-by-position", model::PatchTarget::HeadsByPosition, "heads (z) by position", "head (layer.head)",
     "position", "head\\position"},
};

cli::Command patchCommand(PatchRequest& r) {
  cli::Command command;
  command.name = "patch";
  command.column = 24;
  command.usage = R"(usage: attnscope patch DIR --clean TEXT --corrupt TEXT --answer A --wrong W
                        [--what heads|resid|heads-by-position] --out P.csv [--png P.png]
                        [--bos | --no-bos]
       attnscope patch ENCODER_DIR --clean TEXT --corrupt TEXT [--position P]
                        [--answer A] [--wrong W] [--what ...] --out P.csv [--png P.png]
       attnscope patch VIT_DIR --clean-image IMG --corrupt-image IMG [--answer LABEL]
                        [--wrong LABEL] [--what ...] --out P.csv [--png P.png]

Activation patching from the clean run into the corrupt run, one site at a time, on the
model folder DIR. Each cell is the normalised metric
  (m_patched - m_corrupt) / (m_clean - m_corrupt),  m = logit(A) - logit(W) at the last position.
heads: one head's z (its attention-weighted values, all positions): L rows x H columns.
resid: the residual stream of one layer at one position: L+1 rows (the embeddings, then
after each block) x n columns (the tokens).
heads-by-position: one head's z at one position: L·H rows (L0.H0, L0.H1, ...) x n columns.
Each site re-runs the corrupt pass from the patched block (and position) on: what comes
before it is the corrupt run's already. The two texts must have equal token lengths.
Prints {"what", "tokens", "bos", "clean_metric", "corrupt_metric", "out", "png"}.
On an encoder folder (bert, distilbert, roberta; the fill-mask metric) m is read from the
masked-LM logits at the clean text's mask token (or --position P, 0-based with [CLS] at 0);
on a vision transformer (vit, deit; the label metric) from the label logits of the two
images. There --answer defaults to the clean input's top prediction and without --wrong
m = logit(A) alone; a label is its name in id2label or its index. The summary adds
"model_type", "position" (encoders) and "answer"/"wrong" ({"id", "text" or "label"}).
Each site of an encoder or ViT re-runs every position from the patched block on (every
token sees every other). docs/analyses.md.
)";
  command.options = {
      cli::textOption("--clean", "TEXT", "the clean prompt", r.clean),
      cli::textOption("--corrupt", "TEXT", "the corrupted prompt (same number of tokens)", r.corrupt),
      cli::textOption("--answer", "A", "the answer token's text (one token, e.g. \" Mary\")", r.answer),
      cli::textOption("--wrong", "W", "the wrong token's text (one token)", r.wrong),
      cli::wordOption("--what", "WHAT", "patch target", {"heads", "resid", "heads-by-position"},
                      "what to patch: {choices}", r.what),
      cli::textOption("--out", "P.csv", "the matrix as CSV (row and column labels first)", r.outPath),
      cli::textOption("--png", "P.png", "also a labelled heatmap on a diverging map centred on 0",
                      r.pngPath),
      cli::textOption("--clean-image", "IMG", "a vision transformer's clean image (PNG, JPEG, ...)",
                      r.cleanImage),
      cli::textOption("--corrupt-image", "IMG", "its corrupted image", r.corruptImage),
      cli::intOption("--position", "P", 0, model::kMaxPositions,
                     "an encoder's metric position (default: the clean text's mask token)", r.position),
  };
  for (cli::Option& o : bosOptions()) command.options.push_back(std::move(o));
  command.notes = "Errors (exit 2) name the option, the file and the problem.\n";
  return command;
}

}  // namespace

namespace analysis_cli {

model::PatchTarget patchTarget(int what) { return kPatchTargets[what].target; }
const char* patchTargetName(int what) { return kPatchTargets[what].name; }

Status writePatching(const Matrix& effect, int what, int heads, const std::vector<std::string>& positions,
                     const std::string& outPath, const std::string& pngPath) {
  const PatchTargetInfo& info = kPatchTargets[what];
  std::vector<std::string> rows, cols = positions;
  if (info.target == model::PatchTarget::Heads) {
    rows = numbered("L", effect.rows());
    cols = numbered("H", effect.cols());
  } else if (info.target == model::PatchTarget::Resid) {
    rows.push_back("embed");
    for (Eigen::Index l = 1; l < effect.rows(); ++l) rows.push_back("after L" + std::to_string(l - 1));
  } else {
    for (Eigen::Index r = 0; r < effect.rows(); ++r) {
      std::string name = "L";  // (appended apart: GCC 12's -Wrestrict misfires on "L" + string here)
      name += std::to_string(r / heads);
      name += ".H";
      name += std::to_string(r % heads);
      rows.push_back(std::move(name));
    }
  }
  if (Status s = cli::writeText(outPath, io::matrixCsv(effect, info.corner, rows, cols)); !s) return s;
  if (pngPath.empty()) return Ok{};
  const std::string title = std::string("patching ") + info.title + ": (m_patched - m_corrupt) / (m_clean - m_corrupt)";
  HeatmapView view(matrixRef(effect), rows, cols, title);
  view.rowAxis = info.rowAxis;
  view.colAxis = info.colAxis;
  view.valueTitle = "normalised metric";
  io::HeatmapStyle style;
  style.colormap = ColormapKind::RdBu;
  style.centreZero = true;
  return io::exportMatrix(view, style, pngPath);
}

}  // namespace analysis_cli

cli::CommandInfo patchInfo() {
  PatchRequest r;
  return cli::describe(patchCommand(r));
}

int runPatch(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  PatchRequest r;
  const cli::Command command = patchCommand(r);
  int exitCode = 0;
  std::optional<cli::ParsedArgs> parsed = cli::parseOrAnswer(command, args, out, err, exitCode);
  if (!parsed) return exitCode;
  if (parsed->positional.size() != 1)
    return fail(err, Error{"", "", "'patch' needs one model folder DIR (see attnscope patch --help)"});
  r.folder = parsed->positional[0];
  const io::ModelKind kind = io::modelKindOf(r.folder);
  // the inputs and the metric each kind needs; what it cannot use is refused by name
  std::vector<const char*> needed = {"--clean", "--corrupt", "--answer", "--wrong", "--out"};
  std::vector<const char*> refused = {"--clean-image", "--corrupt-image", "--position"};
  if (kind == io::ModelKind::Encoder) {
    needed = {"--clean", "--corrupt", "--out"};
    refused = {"--clean-image", "--corrupt-image", "--bos", "--no-bos"};
  } else if (kind == io::ModelKind::Vision) {
    needed = {"--clean-image", "--corrupt-image", "--out"};
    refused = {"--clean", "--corrupt", "--position", "--bos", "--no-bos"};
  }
  for (const char* name : needed)
    if (!parsed->has(name)) return fail(err, optionError(name, "missing"));
  for (const char* name : refused) {
    if (!parsed->has(name)) continue;
    return fail(err, optionError(name, std::string("does not apply: this folder is ") + io::kindName(kind) +
                                           " (see attnscope patch --help)", r.folder));
  }
  Expected<int> choice = bosChoice(*parsed);
  if (!choice) return fail(err, choice.error());
  if (Status s = cli::checkOutputFile("--out", r.outPath); !s) return fail(err, s.error());
  if (!r.pngPath.empty()) {
    if (Status s = cli::checkOutputFile("--png", r.pngPath); !s) return fail(err, s.error());
    if (cli::lowerExtension(r.pngPath) != ".png")
      return fail(err, optionError("--png", cli::inQuotes(r.pngPath) + " does not end in .png"));
  }
  if (kind != io::ModelKind::Decoder) {
    analysis_cli::BidirectionalPatch request;
    request.folder = r.folder;
    request.clean = r.clean;
    request.corrupt = r.corrupt;
    request.cleanImage = r.cleanImage;
    request.corruptImage = r.corruptImage;
    request.answer = r.answer;
    request.wrong = r.wrong;
    request.hasAnswer = parsed->has("--answer");
    request.hasWrong = parsed->has("--wrong");
    request.outPath = r.outPath;
    request.pngPath = r.pngPath;
    request.what = r.what;
    request.position = r.position;
    return analysis_cli::patchBidirectional(request, kind, out, err);
  }
  Expected<io::ModelFolder> model = loadFolder(r.folder);
  if (!model) return fail(err, model.error());
  Expected<int> bos = bosToken(*model, *choice);
  if (!bos) return fail(err, bos.error());
  Expected<std::vector<int>> clean = tokenize(*model, r.clean, "--clean", err, *choice);
  if (!clean) return fail(err, clean.error());
  Expected<std::vector<int>> corrupt = tokenize(*model, r.corrupt, "--corrupt", err, *choice);
  if (!corrupt) return fail(err, corrupt.error());
  if (clean->size() != corrupt->size()) {
    return fail(err, optionError("--corrupt", "is " + std::to_string(corrupt->size()) +
                                                  " tokens and --clean " + std::to_string(clean->size()) +
                                                  ": patching needs equal token lengths"));
  }
  Expected<int> answer = singleToken(*model, r.answer, "--answer");
  if (!answer) return fail(err, answer.error());
  Expected<int> wrong = singleToken(*model, r.wrong, "--wrong");
  if (!wrong) return fail(err, wrong.error());

  const PatchTargetInfo& what = kPatchTargets[r.what];
  const model::PatchTarget target = what.target;
  auto patching = model::modelPatching(model::AnyWeights::of(model->weights), {*clean, {}}, {*corrupt, {}},
                                       {0, *answer, *wrong}, target);
  if (!patching) {
    Error e = patching.error();
    if (e.field == "corrupt") return fail(err, optionError("--corrupt", e.problem));
    return fail(err, inFolder(e, r.folder));
  }
  std::vector<std::string> positions;
  for (std::size_t i = 0; i < clean->size(); ++i)
    positions.push_back(std::to_string(i) + ":" + tokenLabel(*model, (*clean)[i]));
  if (Status s = analysis_cli::writePatching(patching->effect, r.what, model->weights->config.nHead, positions,
                                             r.outPath, r.pngPath);
      !s)
    return fail(err, s.error());
  json summary = {{"what", what.name},
                  {"tokens", clean->size()},
                  {"bos", *bos >= 0},
                  {"clean_metric", patching->cleanMetric},
                  {"corrupt_metric", patching->corruptMetric},
                  {"out", r.outPath},
                  {"png", r.pngPath.empty() ? json(nullptr) : json(r.pngPath)}};
  out << summary.dump() << "\n";
  return 0;
}

// =======================================================================================
// lens
// =======================================================================================

namespace {

struct LensRequest {
  std::string folder, text, outPath;
  int top = 5;
  int scale = 0;  // own, final
};

cli::Command lensCommand(LensRequest& r) {
  cli::Command command;
  command.name = "lens";
  command.column = 20;
  command.usage = R"(usage: attnscope lens DIR --text TEXT [--top K] [--scale own|final] [--bos | --no-bos]
                      --out LENS.json

The logit lens: for the residual stream after the embeddings and after each block, at every
position, the K most probable tokens of NormF(resid)·W_Uᵀ (the model's own final norm and
unembedding; --scale final: TransformerLens's convention). LENS.json: {"bos", "scale",
"tokens": [{"id", "text"}, ...], "layers": ["embed", "after L0", ...],
"top": [layer][position][{"id", "text", "probability", "logit"}, ...]}.
On an encoder with a masked-LM head (bert, distilbert, roberta) each hidden state goes
through the whole MLM head (transform, activation, its LayerNorm, the decoder tied to the
word embeddings, the bias) and no other norm: the stream is post-LN, so the last layer is
the model's own fill-mask prediction. LENS.json then has "model_type" and "head": "mlm"
instead of "bos" and "scale". A vision transformer (classifier only) or an encoder without
an MLM head has no unembedding and is refused.
)";
  command.options = {
      cli::textOption("--text", "TEXT", "the prompt", r.text),
      cli::intOption("--top", "K", 1, kMaxTop, "tokens per layer and position (1..1000)", r.top),
      cli::wordOption("--scale", "S", "scale", {"own", "final"},
                      "the final norm's scale at layer l: own = the stream's own (NormF(x_l));\n"
                      "final = the last stream's at each position, as TransformerLens's\n"
                      "accumulated_resid(apply_ln=True) ({choices})",
                      r.scale),
      cli::textOption("--out", "LENS.json", "the JSON file to write", r.outPath),
  };
  for (cli::Option& o : bosOptions()) command.options.push_back(std::move(o));
  return command;
}

}  // namespace

cli::CommandInfo lensInfo() {
  LensRequest r;
  return cli::describe(lensCommand(r));
}

int runLens(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  LensRequest r;
  const cli::Command command = lensCommand(r);
  int exitCode = 0;
  std::optional<cli::ParsedArgs> parsed = cli::parseOrAnswer(command, args, out, err, exitCode);
  if (!parsed) return exitCode;
  if (parsed->positional.size() != 1)
    return fail(err, Error{"", "", "'lens' needs one model folder DIR (see attnscope lens --help)"});
  r.folder = parsed->positional[0];
  if (!parsed->has("--text")) return fail(err, optionError("--text", "missing"));
  if (!parsed->has("--out")) return fail(err, optionError("--out", "missing"));
  if (Status s = cli::checkOutputFile("--out", r.outPath); !s) return fail(err, s.error());
  Expected<int> choice = bosChoice(*parsed);
  if (!choice) return fail(err, choice.error());
  if (const io::ModelKind kind = io::modelKindOf(r.folder); kind != io::ModelKind::Decoder) {
    // an encoder's MLM head on every hidden state; a vision transformer has no unembedding
    for (const char* name : {"--scale", "--bos", "--no-bos"}) {
      const bool given = parsed->has(name) && (std::string_view(name) != "--scale" || r.scale != 0);  // own: as is
      if (kind == io::ModelKind::Encoder && given)
        return fail(err, optionError(name, "applies to decoders only (an encoder's stream is post-LN and its text "
                                           "gets its tokenizer's specials)", r.folder));
    }
    return analysis_cli::lensBidirectional({r.folder, r.text, r.outPath, r.top}, kind, out, err);
  }
  Expected<io::ModelFolder> model = loadFolder(r.folder);
  if (!model) return fail(err, model.error());
  Expected<int> bos = bosToken(*model, *choice);
  if (!bos) return fail(err, bos.error());
  Expected<std::vector<int>> ids = tokenize(*model, r.text, "--text", err, *choice);
  if (!ids) return fail(err, ids.error());
  auto lens = model::modelLens(model::AnyWeights::of(model->weights), {*ids, {}}, r.top,
                               r.scale == 0 ? model::LensScale::Own : model::LensScale::Final);
  if (!lens) return fail(err, inFolder(lens.error(), r.folder));
  json tokens = json::array(), layers = json::array(), top = json::array();
  for (int id : *ids) tokens.push_back({{"id", id}, {"text", tokenLabel(*model, id)}});
  for (std::size_t l = 0; l < lens->top.size(); ++l) {
    layers.push_back(l == 0 ? std::string("embed") : "after L" + std::to_string(l - 1));
    json positions = json::array();
    for (const auto& list : lens->top[l]) positions.push_back(nextJson(*model, list));
    top.push_back(std::move(positions));
  }
  const json file = {{"bos", *bos >= 0}, {"scale", r.scale == 0 ? "own" : "final"}, {"tokens", tokens},
                     {"layers", layers}, {"top", top}};
  if (Status s = cli::writeText(r.outPath, file.dump() + "\n"); !s) return fail(err, s.error());
  out << json{{"out", r.outPath}, {"layers", layers.size()}, {"tokens", ids->size()}, {"bos", *bos >= 0}}.dump()
      << "\n";
  return 0;
}

}  // namespace attn::app

// =======================================================================================
// screenshot --model DIR: the analyses in the window (the model view's ablation and head
// scores, the Patching panel)
// =======================================================================================

namespace attn::app {

std::vector<cli::Option> modelAnalysisScreenshotOptions(GuiLaunch& launch) {
  GuiLaunch::ModelAnalysisStart& a = launch.modelAnalysis;
  std::vector<std::string> scores;
  for (model::HeadScoreKind kind : model::kAllHeadScores) scores.emplace_back(model::toString(kind));
  scores.emplace_back("copying");  // kCopyingScore: the copying score of the head circuits
  return {
      cli::customOption("--ablate", "L.H,...",
                        "ablate these heads in the Model panel's Heads tab (0-based\n"
                        "layer.head, comma-separated), as a click on each would",
                        [&a](const std::string& v) -> Status {
                          Expected<std::vector<model::HeadId>> heads = parseHeadList(v);
                          if (!heads) return Error{"", "", heads.error().problem};
                          a.ablate = v;
                          return Ok{};
                        }),
      cli::wordOption("--ablate-mode", "M", "ablation mode", {"zero", "mean"},
                      "{choices}", a.ablateMode),
      cli::wordOption("--head-score", "S", "head score", scores,
                      "colour the heads by S ({choices})", a.headScore),
      cli::wordOption("--head-order", "O", "head order", {"index", "high", "low"},
                      "list the heads by {choices}", a.headOrder),
      cli::flagOption("--sort-grid", "order each layer's heads in the grid by the score", a.sortGrid),
      cli::textOption("--patch-clean", "T",
                      "the Patching panel's clean prompt: the panel runs and is shown\n"
                      "in the Attention panel's place",
                      a.patchClean),
      cli::textOption("--patch-corrupt", "T", "its corrupted prompt", a.patchCorrupt),
      cli::textOption("--patch-answer", "A", "its answer token's text", a.patchAnswer),
      cli::textOption("--patch-wrong", "W", "its wrong token's text", a.patchWrong),
      cli::wordOption("--patch-what", "P", "patch target", {"heads", "resid"},
                      "what to patch: {choices}", a.patchWhat),
      cli::wordOption("--show", "M", "show", {"weights", "norm", "valuezero", "flow", "rollout"},
                      "what the Attention panel shows of the run ({choices}; docs/analyses.md)", a.show),
      cli::flagOption("--normalize", "with --show flow: each row of the flow divided by its sum", a.normalizeFlow),
  };
}

Status checkModelAnalysisScreenshot(const cli::ParsedArgs& parsed, GuiLaunch& launch) {
  static const char* const kNames[] = {"--ablate", "--ablate-mode", "--head-score",
                                       "--head-order", "--sort-grid", "--patch-clean",
                                       "--patch-corrupt", "--patch-answer", "--patch-wrong",
                                       "--patch-what", "--show", "--normalize"};
  if (!parsed.has("--model")) {
    for (const char* name : kNames)
      if (parsed.has(name)) return optionError(name, "only applies with --model DIR");
    return Ok{};
  }
  const char* const patch[] = {"--patch-clean", "--patch-corrupt", "--patch-answer", "--patch-wrong"};
  int given = 0;
  for (const char* name : patch) given += parsed.has(name);
  if (given > 0 && given < 4) {
    for (const char* name : patch)
      if (!parsed.has(name)) return optionError(name, "missing (the patching needs all four texts)");
  }
  if (given == 0 && parsed.has("--patch-what"))
    return optionError("--patch-what", "only applies with --patch-clean and the other texts");
  if (parsed.has("--normalize") && launch.modelAnalysis.show != 3)
    return optionError("--normalize", "only applies with --show flow");
  launch.modelAnalysis.patch = given == 4;
  return Ok{};
}

}  // namespace attn::app
