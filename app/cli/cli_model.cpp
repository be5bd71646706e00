// The `model` command (see cli_model.h):
//   1 parse the options (syntax only), 2 load the model folder (config, tokenizer, weights),
//   3 tokenize (invalid UTF-8 is replaced and reported), 4 check the sizes, 5 run the
//   forward pass, 6 write OUT.npz and OUT.tokens.json atomically, 7 print the prediction.
#include "app/cli/cli_model.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <vector>

#include "app/cli/cli.h"
#include "app/cli/cli_analysis.h"
#include "app/cli/cli_common.h"
#include "app/cli/cli_model_detail.h"
#include "app/cli/options.h"
#include "app/cli/progress_line.h"
#include "app/cli/model_cache.h"
#include "app/session/model_driver.h"
#include "core/models/alti.h"
#include "core/models/analysis.h"
#include "core/models/mechanisms.h"
#include "core/models/transformer.h"
#include "formats/files.h"
#include "formats/models/encoder_folder.h"
#include "formats/models/families.h"
#include "formats/models/model_folder.h"
#include "formats/models/open_model.h"
#include "formats/models/vit_folder.h"
#include "formats/image.h"
#include "formats/npy.h"
#include "formats/npz.h"

namespace attn::app {
namespace {

namespace fs = std::filesystem;
using cli::fail;
using cli::optionError;

using model_cli::ModelRequest;
using model_cli::kMaxAttentionBytes;
using model_cli::kMaxPredict;

// "15496,995" -> ids (each 0..2^31-1; the model checks them against vocab_size).
// "@FILE": the ids written in FILE, separated by commas and/or whitespace (a long input does
// not fit in the argument list).
Expected<std::vector<int>> parseIds(const std::string& text) {
  if (text.starts_with("@")) {
    const std::string path = text.substr(1);
    Expected<std::string> content = io::readCapped(path, std::size_t{64} << 20);
    if (!content) return content.error();
    std::vector<int> ids;
    std::size_t at = 0;
    const std::string& body = *content;
    auto separator = [](char c) { return c == ',' || c == ' ' || c == '\n' || c == '\t' || c == '\r'; };
    while (at < body.size()) {
      while (at < body.size() && separator(body[at])) ++at;
      if (at >= body.size()) break;
      std::size_t end = at;
      while (end < body.size() && !separator(body[end])) ++end;
      const std::string item = body.substr(at, end - at);
      auto id = parseIntStrict(item, 0, std::numeric_limits<int>::max());
      if (!id) {
        return Error{path, "", "item " + std::to_string(ids.size() + 1) + " " + cli::inQuotes(item) +
                                   " is not a token id (integers >= 0 separated by commas or whitespace)"};
      }
      ids.push_back(*id);
      at = end;
    }
    if (ids.empty()) return Error{path, "", "holds no token ids"};
    return ids;
  }
  std::vector<int> ids;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    auto id = parseIntStrict(item, 0, std::numeric_limits<int>::max());
    if (!id) {
      return Error{"", "", "item " + std::to_string(ids.size() + 1) + " " + cli::inQuotes(item) +
                               " is not a token id (comma-separated integers 0.." + std::to_string(std::numeric_limits<int>::max()) + ")"};
    }
    ids.push_back(*id);
    start = comma + 1;
  }
  return ids;
}

// The --mechanisms names, in the order of the help.
constexpr const char* kMechanisms[] = {"norm", "valuezero", "flow", "alti"};

// "norm,flow" -> the names, each known and listed once.
// --text's "@FILE" (the UTF-8 text of FILE, up to 64 MiB: a long input exceeds the
// argument-length limit) and "@@TEXT" (the literal text "@TEXT"), replaced in place. The error
// names the file.
Status expandTextArgument(std::string& text) {
  if (text.starts_with("@@")) {
    text.erase(0, 1);
  } else if (text.starts_with("@")) {
    Expected<std::string> content = io::readCapped(text.substr(1), std::size_t{64} << 20);
    if (!content) return optionError("--text", content.error().problem, text.substr(1));
    text = std::move(content).value();
  }
  return Ok{};
}

Status parseMechanisms(const std::string& text, std::vector<std::string>& names) {
  names.clear();
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    if (std::find(std::begin(kMechanisms), std::end(kMechanisms), item) == std::end(kMechanisms))
      return Error{"", "", "unknown mechanism " + cli::inQuotes(item) + "; use norm, valuezero, flow, alti (comma-separated)"};
    if (std::find(names.begin(), names.end(), item) != names.end())
      return Error{"", "", "mechanism " + cli::inQuotes(item) + " is listed twice"};
    names.push_back(item);
    start = comma + 1;
  }
  return Ok{};
}

// The options of `model`, declared once.
cli::Command modelCommand(ModelRequest& request) {
  cli::Command command;
  command.name = "model";
  command.column = 21;
  command.usage = std::string(R"(usage: attnscope model DIR|FILE.gguf (--text TEXT|@FILE | --ids I,J,...|@FILE) [--bos | --no-bos]
                         [--out OUT.npz [--mechanisms LIST [--normalize]]] [--predict K]
       attnscope model DIR|FILE.gguf (--text ... | --ids ...) [--summary S.npz [--sink K]
                         [--local W] [--topk K]] [--tile L,H,Q0:Q1,K0:K1 --out T.npy]
       attnscope model DIR --image IMG [--out OUT.npz] [--predict K]
                         [--overlay OUT.png [--layer L|rollout] [--head H|mean] [--vmax V|max]]

Runs a model on the CPU, offline. DIR is a Hugging Face folder: config.json (model_type
)" + io::familyNames(io::ModelKind::Decoder) + R"(: a decoder;
)" + io::familyNames(io::ModelKind::Encoder) + R"(: an encoder, whose [MASK] / <mask> tokens get
the fill-mask prediction; )" + io::familyNames(io::ModelKind::Vision) + R"(: a vision transformer run on --image;
every size and option is read from it), model.safetensors or
model.safetensors.index.json with its shards (F32, F16 or BF16), and its tokenizer:
tokenizer.json, else tokenizer.model (SentencePiece), else vocab.txt (WordPiece) or
vocab.json + merges.txt; a vision model's preprocessor_config.json (see docs/models.md).
A Hugging Face cache folder works: models--ORG--NAME/snapshots/HASH/. A GGUF file (llama.cpp's
format: architecture llama, qwen2, gpt2 or gptneox; F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1,
Q8_0, Q2_K to Q6_K tensors used in place; its own tokenizer.ggml) works in place of DIR.
)");
  command.options = {
      cli::textOption("--text", "TEXT",
                      "the input text (any UTF-8; invalid bytes become U+FFFD, with a warning;\n"
                      "a TEXT that starts with \"--\" is given as --text=TEXT); needs the\n"
                      "folder's tokenizer; special tokens typed in it (<|endoftext|>, <s>) are\n"
                      "one token each; @FILE reads the text from FILE (UTF-8), @@TEXT is the\n"
                      "text @TEXT",
                      request.text),
      cli::customOption("--ids", "I,J,...", "run these token ids instead of a text (any family);\n"
                        "@FILE reads them from FILE (commas or whitespace between them)",
                        [&request](const std::string& v) -> Status {
                          Expected<std::vector<int>> list = parseIds(v);
                          if (!list) return list.error();
                          request.ids = std::move(list).value();
                          request.hasIds = true;
                          return Ok{};
                        }),
      // Checked after parsing (checkOutputPath: .npz, the folder).
      cli::customOption("--out", "OUT.npz",
                        "write the arrays\n"
                        "  attention  float32 [layers, heads, n, n]  (row = query; zeros above the\n"
                        "             diagonal for a decoder, full rows for an encoder)\n"
                        "  token_ids  int64 [n]\n"
                        "and the side file OUT.tokens.json: each token's decoded text, a JSON\n"
                        "list (\" world\", \"\\n\"; a token holding part of a UTF-8 character is \"�\")",
                        nullptr),
      cli::customOption("--mechanisms", "LIST",
                        "with --out: add to OUT.npz, comma-separated (docs/analyses.md; every\n"
                        "family: decoders, encoders, vision transformers)\n"
                        "  norm       norm_weighted  float32 [layers, heads, n, n]: a·‖f_h(x_j)‖,\n"
                        "             f_h(x_j) = (LN(x_j)·W_V + b_V)·W_O of the head (Kobayashi 2020)\n"
                        "  valuezero  value_zeroing  float32 [layers, n, n]: 1 − cos of token i's\n"
                        "             block output with token j's values zeroed, rows summing\n"
                        "             to 1 (Mohebbi 2023; layers·n re-runs of one block,\n"
                        "             with progress and an ETA on stderr)\n"
                        "  flow       attention_flow float32 [n, n]: the maximum flow from input\n"
                        "             token j to top token i through rollout's 0.5·A + 0.5·I\n"
                        "             graph (Abnar & Zuidema 2020), exact\n"
                        "  alti       alti           float32 [layers, n, n]: token j's share of\n"
                        "             token i's attention output with its residual, by the L1\n"
                        "             distance (Ferrando et al. 2022; decoders)",
                        [&request](const std::string& v) { return parseMechanisms(v, request.mechanisms); }),
      cli::flagOption("--logits", "with --out (a decoder): add logits float32 [n, V], every\n"
                      "position's next-token logits (the last row is --predict's)",
                      request.logits),
      cli::flagOption("--residuals", "with --out (a decoder): add residuals float32 [layers + 1, n, E],\n"
                      "the stream entering each block, then after the last (TransformerLens's\n"
                      "hook_resid_pre, and hook_resid_post of the last block)",
                      request.residuals),
      cli::flagOption("--normalize", "with --mechanisms flow: divide each row of attention_flow by\n"
                      "its sum (default: the raw flow values)",
                      request.normalizeFlow),
      cli::intOption("--predict", "K", 1, kMaxPredict,
                     "print the K most probable next tokens as JSON on stdout (1..1000):\n"
                     "{\"model_type\", \"heads_kv\", \"tokens\": n, \"bos\",\n"
                     " \"next\": [{\"id\", \"text\", \"probability\", \"logit\"}, ...]}\n"
                     "(\"text\" is null without a tokenizer); an encoder: the K most\n"
                     "probable tokens at every mask token, {\"model_type\", \"tokens\":\n"
                     "[texts], \"mlm_head\", \"masked\": [{\"position\", \"next\": [...]}]};\n"
                     "a vision model: its K most probable labels, {\"model_type\",\n"
                     " \"labels\": [{\"id\", \"label\", \"probability\", \"logit\"}, ...]}",
                     request.predict),
      cli::textOption("--summary", "S.npz",
                      "a decoder: run with a tiled attention that never holds an n x n\n"
                      "matrix (8k-32k tokens; docs/long-context.md) and write per head\n"
                      "  lse         float32 [layers, heads, n]  log-sum-exp of the row's\n"
                      "              scaled, soft-capped, masked scores (weight = exp(s - lse))\n"
                      "  entropy     float32 [layers, heads, n]  of the row's weights, in nats\n"
                      "  topk_idx    int32 [layers, heads, n, K] the K most attended keys\n"
                      "  topk_w      float32 [layers, heads, n, K] their weights, descending\n"
                      "              (a row with fewer than K keys pads with -1 and 0)\n"
                      "  sink_mass   float32 [layers, heads, n]  weight on keys 0..--sink-1\n"
                      "  local_mass  float32 [layers, heads, n]  weight on keys j with\n"
                      "              0 <= i - j < --local (the query and the keys before it)\n"
                      "  distant_mass float32 [layers, heads, n] weight on the other keys:\n"
                      "              j >= --sink and i - j >= --local\n"
                      "  col_sum     float32 [layers, heads, n]  weight key j receives, summed\n"
                      "              over the queries\n"
                      "  token_ids   int64 [n];  summary_params int64 [3] = sink, local, topk\n"
                      "and the side file S.tokens.json as --out",
                      request.summaryPath),
      cli::intOption("--sink", "K", 1, 1 << 30, "with --summary: the sink keys (first K)", request.sink),
      cli::intOption("--local", "W", 1, 1 << 30, "with --summary: the local window in keys", request.local),
      cli::intOption("--topk", "K", 1, 1 << 20, "with --summary: keys kept per row (<= the tokens)", request.topK),
      cli::customOption("--tile", "L,H,Q0:Q1,K0:K1",
                        "a decoder: write to --out T.npy the exact weights float32\n"
                        "[Q1 - Q0, K1 - K0] of layer L, head H, query rows Q0..Q1-1, key\n"
                        "columns K0..K1-1 (0-based; masked keys 0), from the same tiled pass\n"
                        "(with or without --summary)",
                        [&request](const std::string& v) -> Status {
                          Expected<model::TileRequest> tile = model_cli::parseTile(v);
                          if (!tile) return tile.error();
                          request.tile = *tile;
                          request.hasTile = true;
                          return Ok{};
                        }),
      cli::textOption("--image", "IMG",
                      "a vit / deit folder: run the model on this picture (PNG, JPEG, ...),\n"
                      "resized and normalised as its preprocessor_config.json says; the\n"
                      "attention is [layers, heads, T, T], T = [CLS] (+ distillation token)\n"
                      "+ the patches row by row",
                      request.imagePath),
      cli::textOption("--overlay", "OUT.png",
                      "with --image: draw the [CLS] token's attention over the patches on the\n"
                      "picture, at the picture's own size (colours 0..1, see --vmax)",
                      request.overlayPath),
      cli::textOption("--layer", "L|rollout",
                      "the overlay's layer, 0-based (default: the last), or 'rollout' of all\n"
                      "layers (Abnar & Zuidema, from the mean over heads)",
                      request.layer),
      cli::textOption("--head", "H|mean", "the overlay's head, 0-based, or 'mean' (default)",
                      request.head),
      cli::textOption("--vmax", "V|max",
                      "the overlay's colour for V and above (default: 1, so that pictures\n"
                      "compare; rollout: its maximum); 'max' = the row's own maximum",
                      request.vmax),
  };
  // --bos and --no-bos after --ids: declared once for every command that runs a decoder's text
  const std::vector<cli::Option> bos = analysis_cli::bosOptions();
  const auto ids = std::find_if(command.options.begin(), command.options.end(),
                                [](const cli::Option& o) { return o.name == "--ids"; });
  command.options.insert(ids == command.options.end() ? ids : ids + 1, bos.begin(), bos.end());
  command.notes = R"(At least one of --out, --predict, --summary and --tile (or --overlay with --image) is needed. The text
may have at most n_positions tokens (1024 for GPT-2; 512 for BERT). Errors (exit 2) name the file and the tensor or field: a missing
tensor, a wrong shape, an unsupported dtype, offsets outside the file, a header too big.
)";
  return command;
}

// Options through the declarations, then the positional DIR and the checks across options.
Expected<ModelRequest> parseModelArgs(std::span<const std::string> args) {
  ModelRequest request;
  Expected<cli::ParsedArgs> parsed = cli::parseCommand(modelCommand(request), args);
  if (!parsed) return parsed.error();
  request.help = parsed->help;
  if (request.help) return request;
  if (parsed->positional.empty()) {
    return Error{"", "", "'model' needs a model folder DIR (see attnscope model --help)"};
  }
  if (parsed->positional.size() > 1) {
    return Error{"", "",
                 "unexpected argument " + cli::inQuotes(parsed->positional[1]) +
                     " for 'model' (only one DIR)"};
  }
  request.folder = parsed->positional[0];
  const bool text = parsed->has("--text"), ids = parsed->has("--ids");
  const bool image = parsed->has("--image");
  request.hasText = text;
  if (image && (text || ids)) {
    return optionError("--image", "give either --image or --text / --ids, not both");
  }
  if (text && ids) return optionError("--ids", "give either --text or --ids, not both");
  if (!text && !ids && !image) {
    return optionError("--text", "missing (give --text TEXT, --ids I,J,... or --image IMG)");
  }
  for (const char* name : {"--overlay", "--layer", "--head", "--vmax"}) {
    if (parsed->has(name) && !image) return optionError(name, "only applies with --image IMG");
  }
  for (const char* name : {"--layer", "--head", "--vmax"}) {
    if (parsed->has(name) && !parsed->has("--overlay")) return optionError(name, "only applies with --overlay OUT.png");
  }
  if (parsed->has("--overlay")) {
    if (cli::lowerExtension(request.overlayPath) != ".png") {
      return optionError("--overlay", cli::inQuotes(request.overlayPath) + " must end in .png");
    }
    if (Status s = cli::checkOutputFile("--overlay", request.overlayPath); !s) return s.error();
  }
  Expected<int> bos = analysis_cli::bosChoice(*parsed);
  if (!bos) return bos.error();
  request.bosChoice = *bos;
  if (text)  // --text @FILE, @@TEXT
    if (Status s = expandTextArgument(request.text); !s) return s.error();
  if (parsed->has("--summary") || request.hasTile) {  // the long-context pass (app/cli/cli_model_summary.cpp)
    for (const char* name : {"--mechanisms", "--logits", "--residuals", "--predict", "--image"})
      if (parsed->has(name))
        return optionError(name, "does not combine with --summary / --tile (the tiled pass keeps no n x n attention)");
    if (parsed->has("--summary")) {
      if (cli::lowerExtension(request.summaryPath) != ".npz")
        return optionError("--summary", cli::inQuotes(request.summaryPath) + " must end in .npz");
      if (Status s = cli::checkOutputFile("--summary", request.summaryPath); !s) return s.error();
      fs::path p(request.summaryPath);
      request.summaryTokensPath = (p.parent_path() / p.stem()).string() + ".tokens.json";
    }
    if (request.hasTile) {
      Expected<std::string> tilePath = cli::checkOutputPath(*parsed, {".npy"}, /*required=*/true);
      if (!tilePath) return tilePath.error();
      request.outPath = *tilePath;
    } else if (parsed->has("--out")) {
      return optionError("--out", "with --summary only applies to --tile (T.npy); the summary goes to --summary S.npz");
    }
    return request;
  }
  for (const char* name : {"--sink", "--local", "--topk"})
    if (parsed->has(name)) return optionError(name, "only applies with --summary S.npz");
  Expected<std::string> outPath = cli::checkOutputPath(*parsed, {".npz"}, /*required=*/false);
  if (!outPath) return outPath.error();
  request.outPath = *outPath;
  if (!request.outPath.empty()) {
    // OUT.npz -> OUT.tokens.json in the same folder (the attention views' side-file rule).
    fs::path p(request.outPath);
    request.tokensPath = (p.parent_path() / p.stem()).string() + ".tokens.json";
  }
  const auto& mechanisms = request.mechanisms;
  if (parsed->has("--mechanisms") && request.outPath.empty())
    return optionError("--mechanisms", "needs --out OUT.npz (the arrays are written there)");
  if (request.normalizeFlow && std::find(mechanisms.begin(), mechanisms.end(), "flow") == mechanisms.end())
    return optionError("--normalize", "only applies with --mechanisms ...flow");
  for (const char* name : {"--logits", "--residuals"}) {
    if (parsed->has(name) && request.outPath.empty())
      return optionError(name, "needs --out OUT.npz (the array is written there)");
  }
  if (request.outPath.empty() && request.predict == 0 && request.overlayPath.empty()) {
    return optionError("--out", image ? "missing (give --out FILE.npz, --predict K or --overlay OUT.png)"
                                      : "missing (give --out FILE.npz, --predict K, or both)");
  }
  return request;
}

// A token's text for the files: the tokenizer's decoding, or null without a tokenizer.
nlohmann::json tokenJson(const io::ModelFolder& model, int id) {
  if (!model.tokenizer) return nullptr;
  return model.tokenizer->tokenText(id);
}

// The JSON of --predict: {"model_type", "heads_kv", "tokens": n, "bos": whether a BOS was put
// first, "next": [{"id", "text", "probability", "logit"}...]}.
std::string predictionJson(const model::DecoderRun& decoder, const io::ModelFolder& model, int k, bool bos) {
  nlohmann::ordered_json next = nlohmann::ordered_json::array();
  for (const model::TokenProbability& t : decoder.topK(k)) {
    next.push_back({{"id", t.id},
                    {"text", tokenJson(model, t.id)},
                    {"probability", t.probability},
                    {"logit", t.logit}});
  }
  nlohmann::ordered_json out = {{"model_type", decoder.config().modelType},
                                {"heads_kv", decoder.config().nHeadKv},
                                {"tokens", decoder.size()},
                                {"bos", bos},
                                {"next", next}};
  return out.dump() + "\n";
}

// The --mechanisms arrays of a decoder run, in the order listed (core/models/mechanisms.h).
Expected<std::vector<model_cli::ExtraArray>> mechanismArrays(const ModelRequest& request,
                                                             std::shared_ptr<const model::Weights> weights,
                                                             const model::DecoderRun& run,
                                                             const std::vector<int>& ids, std::ostream& err) {
  const model::Config& c = run.config();
  const std::int64_t L = c.nLayer, H = c.nHead, n = run.size();
  std::vector<model_cli::ExtraArray> arrays;
  for (const std::string& name : request.mechanisms) {
    if (name == "norm") {
      // one layer's H x n x n at a time: N = a·‖f_h(x_j)‖ (model::normWeightedAttention's
      // numbers, without the [L, H, n, n] copy in memory)
      model_cli::ExtraArray array{"norm_weighted", {L, H, n, n}, {}, {}};
      array.blocks = [&run, H, n](std::int64_t layer, std::span<float> block) {
        const Matrix norms = model::transformedValueNorms(run, static_cast<int>(layer));
        std::fill(block.begin(), block.end(), 0.0f);
        for (std::int64_t h = 0; h < H; ++h)
          for (std::int64_t i = 0; i < n; ++i) {
            const std::span<const float> row = run.attentionRow(static_cast<int>(layer), static_cast<int>(h), static_cast<int>(i));
            for (std::size_t j = 0; j < row.size(); ++j)
              block[static_cast<std::size_t>((h * n + i) * n) + j] = row[j] * norms(h, static_cast<Eigen::Index>(j));
          }
      };
      arrays.push_back(std::move(array));
    } else if (name == "valuezero") {
      // "attnscope model: value zeroing 37/384 re-runs, 1.2 s, ETA 5.3 s" on stderr (a large
      // model on a long text takes minutes)
      cli::ProgressLine line(err, "attnscope model: value zeroing", "re-runs");
      auto progress = [&](int done, int total) { line.update(done, total); };
      Expected<std::vector<float>> zeroed = model::valueZeroing(weights, ids, 0, progress);
      if (!zeroed) return zeroed.error();
      arrays.push_back({"value_zeroing", {L, n, n}, std::move(zeroed).value(), {}});
    } else if (name == "flow") {
      Expected<Matrix> flow = model::attentionFlow(run, request.normalizeFlow);
      if (!flow) return flow.error();
      arrays.push_back({"attention_flow", {n, n}, std::vector<float>(flow->data(), flow->data() + flow->size()), {}});
    } else if (name == "alti") {
      Expected<std::vector<float>> alti = model::altiContributions(weights, ids);
      if (!alti) return optionError("--mechanisms", "alti: " + alti.error().message());
      arrays.push_back({"alti", {L, n, n}, std::move(alti).value(), {}});
    }
  }
  return arrays;
}

}  // namespace

model_cli::HeadBlock model_cli::denseBlocks(const std::vector<float>& attention,
                                            const std::int64_t (&shape)[4]) {
  const std::size_t heads = static_cast<std::size_t>(shape[1]);
  const std::size_t cells = static_cast<std::size_t>(shape[2] * shape[3]);
  return [&attention, heads, cells](int layer, int head, std::span<float> block) {
    const std::size_t at = (static_cast<std::size_t>(layer) * heads + static_cast<std::size_t>(head)) * cells;
    std::copy_n(attention.begin() + static_cast<std::ptrdiff_t>(at), cells, block.begin());
  };
}

Status model_cli::writeAttentionFiles(const ModelRequest& request, const std::int64_t (&shape)[4],
                                      const HeadBlock& block, const std::vector<int>& ids,
                                      const std::vector<std::string>& tokenTexts,
                                      std::span<const ExtraArray> extra) {
  // 1 the archive's entries: the attention streams one head's block at a time (no
  // [L, H, n, n] copy in memory), then the token ids.
  Expected<std::string> attentionHeader = io::npyHeaderFloat32(shape);
  if (!attentionHeader) return attentionHeader.error();
  const std::size_t cells = static_cast<std::size_t>(shape[2] * shape[3]);
  std::vector<io::NpzStreamEntry> entries(1);
  entries[0].name = "attention";
  entries[0].npyHeader = *attentionHeader;
  entries[0].dataBytes = static_cast<std::uint64_t>(shape[0] * shape[1]) * cells * 4;
  entries[0].produce = [&block, &shape, cells](const io::ChunkWriter& write) -> Status {
    std::vector<float> buffer(cells);
    for (int l = 0; l < shape[0]; ++l) {
      for (int h = 0; h < shape[1]; ++h) {
        block(l, h, buffer);
        if (Status s = write({reinterpret_cast<const char*>(buffer.data()), buffer.size() * 4}); !s) return s;
      }
    }
    return Ok{};
  };
  for (const ExtraArray& array : extra) {
    Expected<std::string> header = io::npyHeaderFloat32(array.shape);
    if (!header) return header.error();
    io::NpzStreamEntry& entry = entries.emplace_back();
    entry.name = array.name;
    entry.npyHeader = *header;
    std::int64_t count = 1;
    for (std::int64_t d : array.shape) count *= d;
    entry.dataBytes = static_cast<std::uint64_t>(count) * 4;
    entry.produce = [&array, count](const io::ChunkWriter& write) -> Status {
      if (!array.blocks)
        return write({reinterpret_cast<const char*>(array.values.data()), array.values.size() * 4});
      const std::int64_t leading = array.shape.empty() ? 1 : array.shape[0];
      std::vector<float> slice(static_cast<std::size_t>(leading > 0 ? count / leading : 0));
      for (std::int64_t index = 0; index < leading; ++index) {
        array.blocks(index, slice);
        if (Status s = write({reinterpret_cast<const char*>(slice.data()), slice.size() * 4}); !s) return s;
      }
      return Ok{};
    };
  }
  std::string idsBytes;
  std::size_t idsHeader = 0;
  if (!ids.empty()) {
    const std::vector<std::int64_t> ids64(ids.begin(), ids.end());
    const std::int64_t idShape[1] = {static_cast<std::int64_t>(ids.size())};
    Expected<std::string> idsNpy = io::writeNpyInt64(ids64, idShape);
    if (!idsNpy) return idsNpy.error();
    idsBytes = std::move(idsNpy).value();
    idsHeader = idsBytes.size() - ids.size() * 8;
    io::NpzStreamEntry& entry = entries.emplace_back();
    entry.name = "token_ids";
    entry.npyHeader = idsBytes.substr(0, idsHeader);
    entry.dataBytes = ids.size() * 8;
    entry.produce = [&idsBytes, idsHeader](const io::ChunkWriter& write) {
      return write(std::string_view(idsBytes).substr(idsHeader));
    };
  }
  // 2 tokens first: the views read OUT.tokens.json next to OUT.npz, and a new .npz must
  // never sit beside an old tokens file of another text.
  nlohmann::json tokens = nlohmann::json::array();
  for (const std::string& text : tokenTexts) tokens.push_back(text);
  if (Status s = io::writeFileAtomic(request.tokensPath, tokens.dump(1) + "\n"); !s)
    return io::withFile(s.error(), request.tokensPath);
  if (Status s = io::writeNpzStreamed(request.outPath, entries); !s) return io::withFile(s.error(), request.outPath);
  return Ok{};
}

cli::CommandInfo modelInfo() {
  ModelRequest request;
  return cli::describe(modelCommand(request));
}

int runModelCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  // 1 options
  Expected<ModelRequest> request = parseModelArgs(args);
  if (!request) return fail(err, request.error());
  if (request->help) {
    ModelRequest defaults;
    out << cli::helpText(modelCommand(defaults));
    return 0;
  }

  // 2 the model's kind (the family table's): what applies to decoders only is refused
  //   before anything is loaded
  const io::ModelKind kind = io::modelKindOf(request->folder);
  {
    std::error_code ec;
    const fs::path config = fs::path(request->folder) / "config.json";
    Expected<std::string> type = fs::is_regular_file(config, ec) ? io::loadModelType(config.string())
                                                                  : Expected<std::string>(std::string());
    // --logits and --residuals read the decoder engine's recorded streams
    const bool bidirectional = kind != io::ModelKind::Decoder;
    for (const auto& [asked, name] : {std::pair{request->logits, "--logits"}, std::pair{request->residuals, "--residuals"}}) {
      if (bidirectional && asked)
        return fail(err, optionError(name, std::string("runs on decoders only; this folder's model_type ") +
                                               cli::inQuotes(*type) + " is " + io::kindName(kind),
                                           request->folder));
    }
    if (bidirectional && request->summaryMode())
      return fail(err, optionError(request->hasTile && request->summaryPath.empty() ? "--tile" : "--summary",
                                   "runs on decoders only (the tiled pass is the decoder engine's); this folder's "
                                   "model_type " + cli::inQuotes(*type) + " is bidirectional",
                                   request->folder));
    if (kind == io::ModelKind::Vision && request->imagePath.empty()) {
      return fail(err, optionError(request->hasIds ? "--ids" : "--text",
                                   "a vision model (" + io::familyNames(io::ModelKind::Vision) +
                                       ") runs on a picture: give --image IMG",
                                   request->folder));
    }
    if (kind != io::ModelKind::Vision && !request->imagePath.empty()) {
      std::string vision = io::familyNames(io::ModelKind::Vision);
      if (const std::size_t comma = vision.rfind(", "); comma != std::string::npos) vision.replace(comma, 2, " or ");
      return fail(err, optionError("--image",
                                   "needs a vision model (model_type " + vision + "); this folder's is " +
                                       (type && !type->empty() ? cli::inQuotes(*type) : std::string("unknown")),
                                   request->folder));
    }
    if (kind == io::ModelKind::Vision && request->bosChoice != -1)
      return fail(err, optionError("--bos", "only applies to decoders"));
  }

  // 3 load (app/session/model_driver.h: the one driver of the window and the CLI), and
  //   what the kind's output needs before the input
  Expected<io::LoadedModel> loaded = cli::openModelKept(request->folder, kind);
  if (!loaded) return fail(err, loaded.error());
  DriveRequest drive;
  drive.text = request->text;
  drive.ids = request->ids;
  drive.hasIds = request->hasIds;
  drive.bos = request->bosChoice;
  if (kind == io::ModelKind::Vision) {
    if (Status s = model_cli::checkVisionRequest(*request, *loaded->vision); !s) return fail(err, s.error());
    Expected<io::Image> image = io::loadImage(request->imagePath);
    if (!image) return fail(err, image.error());
    drive.image = std::make_shared<const io::Image>(std::move(image).value());
  }

  // 4 the input: tokens (invalid UTF-8 replaced, with a warning) or the picture's pixels
  Expected<PreparedInput> prepared = prepareInput(*loaded, drive);
  if (!prepared) return fail(err, prepared.error());
  if (!prepared->invalidOffsets.empty()) {
    err << "attnscope: warning: option '--text': " << prepared->invalidOffsets.size()
        << (prepared->invalidOffsets.size() == 1 ? " invalid UTF-8 sequence"
                                                 : " invalid UTF-8 sequences")
        << " replaced by U+FFFD (first at byte " << prepared->invalidOffsets.front() << ")\n";
  }
  const std::vector<int>& ids = prepared->input.ids;
  const auto n = static_cast<std::uint64_t>(ids.size());
  if (kind != io::ModelKind::Vision && n == 0) return fail(err, optionError("--text", "is empty (no tokens to run)"));

  // 5 sizes, before any work (and a decoder's tiled pass, which keeps no n x n attention)
  if (kind == io::ModelKind::Encoder) {
    if (Status s = model_cli::checkEncoderSizes(*request, loaded->encoder->weights->config, n); !s)
      return fail(err, s.error());
  }
  if (kind == io::ModelKind::Decoder) {
    const model::Config& config = loaded->decoder->weights->config;
    if (n > static_cast<std::uint64_t>(config.nPositions)) {
      return fail(
          err,
          optionError("--text", std::to_string(n) + " tokens are more than the model's context of " +
                                    std::to_string(config.nPositions) + " (n_positions)"));
    }
    if (request->summaryMode())
      return model_cli::runSummary(*request, loaded->decoder->weights, ids, prepared->tokenTexts, out, err);
    const std::uint64_t attentionBytes = static_cast<std::uint64_t>(config.nLayer) *
                                         static_cast<std::uint64_t>(config.nHead) * n * n * 4;
    if (!request->outPath.empty() && attentionBytes > kMaxAttentionBytes) {
      return fail(
          err, optionError("--text",
                           std::to_string(n) + " tokens make an attention tensor of " +
                               std::to_string(attentionBytes >> 20) +
                               " MiB, above the 2048 MiB an .npz may hold here; use a shorter text"));
    }
  }

  // 6 the run: one pass through model::runModel (a decoder's --logits / --residuals from
  //   the same recorded pass; its attention streams from the DecoderRun's packed triangles)
  model::RunOptions options;
  options.logits = request->logits && !request->outPath.empty();
  options.residuals = request->residuals && !request->outPath.empty();
  options.attention = false;  // the files read the engine's own run
  Expected<model::RunOutput> run = runLoaded(*loaded, prepared->input, options);
  if (!run) {
    Error error = run.error();
    if (kind == io::ModelKind::Vision) error.file = request->imagePath;
    return fail(err, error);
  }

  // 7 files and the prediction of the kind
  switch (kind) {
    case io::ModelKind::Encoder:
      return model_cli::writeEncoderOutputs(*request, *loaded->encoder, *run, prepared->tokenTexts, out, err);
    case io::ModelKind::Vision:
      return model_cli::writeVisionOutputs(*request, *loaded->vision, *drive.image, *run, prepared->tokenTexts, out,
                                           err);
    case io::ModelKind::Decoder: break;
  }
  const io::ModelFolder& model = *loaded->decoder;
  const model::Config& config = model.weights->config;
  const model::DecoderRun& decoder = *run->decoder;
  if (!request->outPath.empty()) {
    const std::int64_t shape[4] = {config.nLayer, config.nHead, static_cast<std::int64_t>(n),
                                   static_cast<std::int64_t>(n)};
    // the attention streams from the decoder's packed triangles into the archive, one
    // head's n x n block at a time (no [L, H, n, n] tensor in memory)
    const model_cli::HeadBlock fromTriangles = [&decoder](int layer, int head, std::span<float> block) {
      const std::size_t width = static_cast<std::size_t>(decoder.size());
      std::fill(block.begin(), block.end(), 0.0f);
      for (std::size_t i = 0; i < width; ++i) {
        const std::span<const float> row = decoder.attentionRow(layer, head, static_cast<int>(i));
        std::copy(row.begin(), row.end(), block.begin() + static_cast<std::ptrdiff_t>(i * width));
      }
    };
    Expected<std::vector<model_cli::ExtraArray>> extra = mechanismArrays(*request, model.weights, decoder, ids, err);
    if (!extra) {
      Error error = extra.error();
      if (error.file.empty()) error.file = request->folder;
      return fail(err, error);
    }
    const auto E = static_cast<std::int64_t>(config.nEmbd), count = static_cast<std::int64_t>(n);
    if (options.logits) {
      const Matrix& logits = run->logits;
      extra->push_back({"logits", {count, logits.cols()}, std::vector<float>(logits.data(), logits.data() + logits.size()), {}});
    }
    if (options.residuals)
      extra->push_back({"residuals", {config.nLayer + 1, count, E}, std::move(run->residuals), {}});
    if (Status s = model_cli::writeAttentionFiles(*request, shape, fromTriangles, ids, prepared->tokenTexts, *extra); !s) {
      return fail(err, s.error());
    }
  }
  if (request->predict > 0) {
    out << predictionJson(decoder, model, request->predict, prepared->bos);
    out.flush();
  }
  return 0;
}

// =======================================================================================
// The window with a model
// =======================================================================================

namespace {

// The options of `--model DIR`, declared once.
cli::Command modelWindowCommand(GuiLaunch& launch) {
  cli::Command command;
  command.name = "--model";
  command.column = 20;
  command.usage = R"(usage: attnscope --model DIR [--text TEXT]

Opens the window with the model folder DIR loaded (on a worker thread; see
attnscope model --help for the folder) and TEXT typed into the Model panel. The Attention
panel shows every layer's and head's attention as you type, the Model panel the next-token
prediction and the residual-stream norms. A bad folder gives an error notice and the window
opens without a model.
)";
  command.options = {
      cli::textOption("--text", "TEXT",
                      "the text typed into the Model panel; @FILE reads it from FILE (UTF-8;\n"
                      "a long input shows the summary view), @@TEXT is the literal text @TEXT",
                      launch.modelText)};
  return command;
}

}  // namespace

cli::CommandInfo modelWindowInfo() {
  GuiLaunch launch;
  return cli::describe(modelWindowCommand(launch));
}

int runModelWindow(std::span<const std::string> args, std::ostream& out, std::ostream& err,
                   const WindowRunner& window) {
  GuiLaunch launch;
  const cli::Command command = modelWindowCommand(launch);
  int exitCode = 0;
  std::optional<cli::ParsedArgs> parsed = cli::parseOrAnswer(command, args, out, err, exitCode);
  if (!parsed) return exitCode;
  if (parsed->positional.size() != 1) {
    return fail(err, Error{"", "", "'--model' needs one model folder DIR (see attnscope --model --help)"});
  }
  launch.modelFolder = parsed->positional[0];
  if (Status s = expandTextArgument(launch.modelText); !s) return fail(err, s.error());
  out.flush();
  return openWindow(window, launch, "'--model'", err);
}

std::vector<cli::Option> modelScreenshotOptions(GuiLaunch& launch, bool& pipeline, std::string& picture) {
  return {
      cli::textOption("--model", "DIR", "load the folder and show the Model and Attention panels",
                      launch.modelFolder),
      cli::textOption("--text", "TEXT",
                      "the text typed into the Model panel; @FILE reads it from FILE (UTF-8;\n"
                      "a long input shows the summary view), @@TEXT is the literal text @TEXT",
                      launch.modelText),
      cli::textOption("--image", "PICTURE",
                      "a vision transformer's input (PNG, JPEG, ...), shown in the Image\n"
                      "panel; the same as giving PICTURE as IMAGE",
                      picture),
      cli::flagOption("--pipeline",
                      "open the selected head (--select L,H) in the pipeline: a new\n"
                      "scenario of its real q, k and v",
                      pipeline),
  };
}

Status checkModelScreenshot(const cli::ParsedArgs& parsed, bool pipeline, GuiLaunch& launch) {
  if (!parsed.has("--model")) {
    if (parsed.has("--text")) return optionError("--text", "only applies with --model DIR");
    if (parsed.has("--image")) return optionError("--image", "only applies with --model VIT_DIR (a picture alone is the IMAGE positional)");
    if (pipeline) return optionError("--pipeline", "only applies with --model DIR");
    return Ok{};
  }
  if (Status s = expandTextArgument(launch.modelText); !s) return s;
  // a vision transformer runs on the picture (the positional IMG), never on a text
  if (io::modelKindOf(launch.modelFolder) == io::ModelKind::Vision) {
    if (parsed.has("--text"))
      return optionError("--text", "the model is a vision transformer: it runs on a picture (screenshot IMG --model DIR)");
    if (parsed.positional.empty() && !parsed.has("--image"))
      return optionError("--model", "a vision transformer needs a picture: screenshot IMG --model DIR, or --model DIR --image IMG");
  } else if (parsed.has("--image")) {
    return optionError("--image", "is a vision transformer's input; " + launch.modelFolder +
                                      " is a text model: give it --text");
  }
  if (pipeline) {
    if (launch.attention.layer < 0) return optionError("--pipeline", "needs --select LAYER,HEAD");
    launch.modelPipeline = true;
  }
  return Ok{};
}

}  // namespace attn::app
