// `attnscope export` on .npy/.npz attention files, and `attnscope info` (see cli_attention.h).
//
// Steps, as in cli.cpp: 1 parse the options (syntax only), 2 open the file (shape rules,
// labels; io::AttentionFile names the file and the problem), 3 compute the selection (one
// head, mean/max over a layer's heads, or rollout), 4 write, 5 warn about NaN/inf.
#include "app/session/attention_source.h"
#include "app/cli/cli_attention.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <optional>
#include <tuple>
#include <nlohmann/json.hpp>

#include "app/cli/cli.h"
#include "core/base/format.h"
#include "formats/attention_file.h"
#include "render/attention_grid.h"
#include "render/heatmap_render.h"

namespace attn::app {

using namespace cli;

namespace {

// The options of `info`, declared once.
Command infoCommand(io::AttentionOpenOptions& open, bool& scan) {
  Command command;
  command.name = "info";
  command.column = 20;
  command.usage = R"(usage: attnscope info FILE.npy|FILE.npz [--array NAME] [--batch B] [--layout DIMS]
                      [--tokens FILE] [--scan]

Prints, as JSON, the arrays of an attention file (name, dtype, shape, order) and how
attnscope reads it: [layers, heads, n_q, n_k], the arrays used, the batch item, whether
heads are used in place from the file mapping, and where the token labels come from.
Integer arrays (the token_ids, summary_params and topk_idx attnscope writes, a saved
input_ids) are listed with "integer": true and never read as attention; token_ids and
input_ids are read (each id must fit an int) and their range given.
Shape rules and limits: docs/import.md.
)";
  command.options = attentionOpenOptions(open);
  command.options.push_back(
      flagOption("--scan",
                 "read every head once: count NaN / +inf / -inf values, and give each\n"
                 "head's entropy (nats, mean over rows) and top-1 mass ([layer][head])",
                 scan));
  return command;
}

// An error from AttentionFile / selectAttention about an option becomes an option error.
Error asOptionError(Error error) {
  for (std::string_view field : {"layer", "head", "array", "batch", "layout"}) {
    if (error.field == field) {
      return optionError("--" + std::string(field), error.problem, error.file);
    }
  }
  return error;
}

struct AttentionExportRequest {
  std::string path, outPath;
  io::AttentionOpenOptions open;
  io::AttentionSelection selection;
  bool lastLayer = false;  // --layer rollout
  io::HeatmapStyle style;
};

Expected<AttentionExportRequest> parseAttentionExport(const ParsedArgs& parsed,
                                                      const ExportOptions& options) {
  AttentionExportRequest request;
  request.path = parsed.positional.at(0);
  if (parsed.has("--matrix")) {
    return optionError("--matrix", "is for scenario files; an attention file holds the weights");
  }
  using Kind = io::AttentionSelection::Kind;
  const bool rollout = options.rollout;
  request.lastLayer = options.lastLayer;
  request.selection.layer = options.layer;
  request.selection.kind = rollout ? Kind::Rollout : Kind::Head;
  if (const std::string* v = parsed.get("--head")) {
    if (rollout && *v != "mean") {
      return optionError("--head",
                         "rollout uses the mean over heads; give --head mean or leave it out");
    }
    if (*v == "mean") {
      if (!rollout) request.selection.kind = Kind::Mean;
    } else if (*v == "max") {
      request.selection.kind = Kind::Max;
    } else if (auto n = parseIntStrict(*v, 0, std::numeric_limits<int>::max())) {
      request.selection.head = *n;
    } else {
      return optionError("--head",
                         inQuotes(*v) + " is not a head index (0, 1, ...), 'mean' or 'max'");
    }
  }
  request.open = options.open;
  request.style = options.style;
  request.style.probability = true;  // attention weights: 0..1 when they lie in it (io::rangeRule)
  finishHeatmapStyle(request.style);
  Expected<std::string> out = checkOutputPath(parsed, {".png", ".svg", ".csv"}, true);
  if (!out) return out.error();
  if (Status distinct = checkNotAnInput(*out, request.path); !distinct) return distinct.error();
  if (!request.open.tokensPath.empty()) {
    if (Status distinct = checkNotAnInput(*out, request.open.tokensPath); !distinct)
      return distinct.error();
  }
  request.outPath = *out;
  return request;
}

}  // namespace

bool isAttentionFilePath(std::string_view path) {
  return classifyPath(std::string(path)) == PathKind::AttentionFile;
}

std::vector<Option> attentionOpenOptions(io::AttentionOpenOptions& open) {
  return {
      customOption("--array", "NAME",
                   "the array of an .npz (default: its only array, or the per-layer\n"
                   "set layer_0, layer_1, ... / attentions_0, ...)",
                   [&open](const std::string& v) -> Status {
                     if (v.empty()) return Error{"", "", "needs an array name"};
                     open.arrayName = v;
                     return Ok{};
                   }),
      withDefault(customOption("--batch", "B", "item of a batch dimension",
                   [&open](const std::string& v) -> Status {
                     auto n = parseIntStrict(v, 0, std::numeric_limits<int>::max());
                     if (!n) return Error{"", "", inQuotes(v) + " is not a batch index (0, 1, ...)"};
                     open.batch = *n;
                     return Ok{};
                   }),
                  std::to_string(open.batch)),
      textOption("--layout", "DIMS",
                 "how to read the dimensions, letters b l h q k ending in qk\n"
                 "(default by ndim: qk, hqk, lhqk; an .npz's saved layout; per-layer\n"
                 "arrays qk, hqk, bhqk; 5 dimensions are never guessed: give lbhqk or\n"
                 "blhqk)",
                 open.layout),
      customOption("--tokens", "FILE",
                   "token labels (.json list or .txt lines); default: the side file\n"
                   "FILE.tokens.json / FILE.tokens.txt, else the indices",
                   [&open](const std::string& v) -> Status {
                     if (v.empty()) return Error{"", "", "needs a file name"};
                     open.tokensPath = v;
                     return Ok{};
                   }),
  };
}

std::vector<Option> attentionExportOptions(ExportOptions& options) {
  std::vector<Option> list = {
      withDefault(customOption("--layer", "L|rollout",
                   "0-based layer; 'rollout' = rollout of all layers",
                   [&options](const std::string& v) -> Status {
                     if (v == "rollout") {
                       options.rollout = true;
                       options.lastLayer = true;
                     } else if (auto n = parseIntStrict(v, 0, std::numeric_limits<int>::max())) {
                       options.layer = *n;
                     } else {
                       return Error{"", "", inQuotes(v) + " is not a layer index (0, 1, ...) or 'rollout'"};
                     }
                     return Ok{};
                   }),
                  std::to_string(options.layer)),
      customOption("--aggregate", "rollout",
                   "attention rollout (Abnar & Zuidema) of layers 0..L, from the\n"
                   "mean over heads (--head mean only)",
                   [&options](const std::string& v) -> Status {
                     if (v != "rollout") return Error{"", "", inQuotes(v) + " is not 'rollout'"};
                     options.rollout = true;
                     return Ok{};
                   }),
  };
  for (Option& option : attentionOpenOptions(options.open)) list.push_back(option);
  list.push_back(flagOption("--grid",
                            "the whole layer x head grid as one labelled PNG (thumbnails\n"
                            "max-pooled to 64 x 64, at least 96 px each, a colour bar;\n"
                            "--colormap, --vmin, --vmax, --scale apply)",
                            options.grid));
  return list;
}

// =======================================================================================
// export
// =======================================================================================

// `export FILE --grid --out grid.png`: every head in one image.
int runGridExport(const ParsedArgs& parsed, const ExportOptions& options, std::ostream& err) {
  for (std::string_view name : {"--layer", "--head", "--aggregate", "--matrix"}) {
    if (parsed.has(name)) return fail(err, optionError(name, "--grid shows every layer and head"));
  }
  const io::AttentionOpenOptions* open = &options.open;
  io::HeatmapStyle heatmap = options.style;
  heatmap.probability = true;
  finishHeatmapStyle(heatmap);
  Expected<std::string> out = checkOutputPath(parsed, {".png"}, true);
  if (!out) return fail(err, out.error());
  const std::string& path = parsed.positional.at(0);
  Expected<io::AttentionFile> file = io::AttentionFile::open(path, *open);
  if (!file) return fail(err, asOptionError(file.error()));
  io::GridStyle grid;
  grid.colormap = heatmap.colormap;
  grid.vmin = heatmap.vmin;
  grid.vmax = heatmap.vmax;
  grid.resolution = heatmap.resolution;
  Status written = io::exportAttentionGrid(*file, grid, *out);
  if (!written) return fail(err, written.error());
  return 0;
}

int runAttentionExport(const ParsedArgs& parsed, const ExportOptions& options,
                       std::ostream& /*out*/, std::ostream& err) {
  if (options.grid) return runGridExport(parsed, options, err);
  // 1 options
  Expected<AttentionExportRequest> request = parseAttentionExport(parsed, options);
  if (!request) return fail(err, request.error());

  // 2 open
  Expected<io::AttentionFile> file = io::AttentionFile::open(request->path, request->open);
  if (!file) return fail(err, asOptionError(file.error()));
  if (request->lastLayer) request->selection.layer = file->layers() - 1;

  // 3 compute the selection
  Expected<io::SelectedAttention> selected = io::selectAttention(*file, request->selection);
  if (!selected) return fail(err, asOptionError(selected.error()));

  // 4 write
  Status written = io::exportMatrix(selected->view, request->style, request->outPath);
  if (!written) {
    Error error = written.error();
    if (error.file.empty()) error.file = request->outPath;
    return fail(err, error);
  }
  // 5 warnings
  if (selected->nonFinite.total() > 0) {
    err << "attnscope: warning: " << request->path << ": "
        << io::describeNonFinite(selected->nonFinite) << " in " << selected->view.title
        << " (drawn as NaN/inf cells, written as nan/inf in CSV)\n";
  }
  return 0;
}

// =======================================================================================
// info
// =======================================================================================

CommandInfo infoInfo() {
  io::AttentionOpenOptions open;
  bool scan = false;
  return describe(infoCommand(open, scan));
}

int runInfo(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  io::AttentionOpenOptions openOptions;
  bool scan = false;
  const Command command = infoCommand(openOptions, scan);
  int exitCode = 0;
  std::optional<cli::ParsedArgs> parsed = cli::parseOrAnswer(command, args, out, err, exitCode);
  if (!parsed) return exitCode;
  if (parsed->positional.size() != 1) {
    return fail(err, Error{"", "",
                           parsed->positional.empty()
                               ? "'info' needs an .npy or .npz FILE (see attnscope info --help)"
                               : "unexpected argument " + inQuotes(parsed->positional[1]) +
                                     " for 'info' (only one FILE)"});
  }
  const std::string& path = parsed->positional[0];
  const io::AttentionOpenOptions* options = &openOptions;

  // 1 the arrays, from their headers
  Expected<std::vector<io::ArraySummary>> arrays = io::listArrays(path, options->limits);
  if (!arrays) return fail(err, arrays.error());
  nlohmann::ordered_json json;
  json["file"] = path;
  json["arrays"] = nlohmann::ordered_json::array();
  std::optional<std::size_t> tokenIds;  // how many token_ids the file holds
  for (const io::ArraySummary& array : *arrays) {
    nlohmann::ordered_json item;
    item["name"] = array.name;
    if (!array.unsupported.empty()) {
      item["unsupported"] = array.unsupported;
    } else {
      item["dtype"] = array.descr;
      item["shape"] = array.shape;
      item["fortran_order"] = array.fortranOrder;
    }
    if (array.integer) {
      // ids or indices (attnscope's token_ids, summary_params, topk_idx; a saved
      // input_ids): described, never attention. Token ids are read, each checked to fit an
      // int: their count and range.
      item["integer"] = true;
      if (array.name == "token_ids" || array.name == "input_ids") {
        Expected<std::vector<int>> ids = io::readIdArray(path, array.name, options->limits);
        if (!ids) return fail(err, ids.error());
        if (!ids->empty()) {
          const auto [low, high] = std::minmax_element(ids->begin(), ids->end());
          item["id_range"] = {*low, *high};
        }
        if (array.name == "token_ids") tokenIds = ids->size();
      }
    }
    json["arrays"].push_back(std::move(item));
  }

  // 2 the normalised attention
  Expected<io::AttentionFileOrChoice> opened = io::AttentionFile::openOrChoose(path, *options);
  if (!opened) return fail(err, asOptionError(opened.error()));
  if (!opened->file) {
    // An archive of several arrays is a fine file: list them and say how to pick one.
    std::string names;
    for (const io::ArraySummary& a : opened->choices) names += (names.empty() ? "" : ", ") + a.name;
    json["attention"] = nullptr;
    json["attention_error"] =
        "the archive holds several arrays (" + names + "); pick one with --array NAME";
    out << json.dump(2) << '\n';
    return 0;
  }
  const io::AttentionFile* file = &*opened->file;
  const io::AttentionShape& shape = file->shape();
  nlohmann::ordered_json attention;
  attention["shape"] = {shape.layers, shape.heads, shape.queries, shape.keys};
  attention["layers"] = shape.layers;
  attention["heads"] = shape.heads;
  attention["n_q"] = shape.queries;
  attention["n_k"] = shape.keys;
  attention["layout"] = file->layoutDescription();
  attention["arrays_used"] = file->arraysUsed();
  attention["batch"] = file->batch();
  attention["batch_size"] = file->batchSize();
  bool inPlace = true;
  for (int l = 0; l < shape.layers; ++l) inPlace = inPlace && file->inPlace(l);
  attention["in_place"] = inPlace;
  attention["tokens"] = file->labelsSource().empty() ? nlohmann::ordered_json(nullptr)
                                                     : nlohmann::ordered_json(file->labelsSource());
  if (tokenIds) attention["token_ids"] = *tokenIds;  // one per key of a model's own run
  if (scan) {
    // One pass over every head (io::overviewHeads, as the model view does).
    const io::HeadOverview overview = io::overviewHeads(*file);
    const io::NonFiniteCount& count = overview.totalNonFinite;
    attention["non_finite"] = {
        {"nan", count.nan}, {"pos_inf", count.posInf}, {"neg_inf", count.negInf}};
    nlohmann::ordered_json entropy = nlohmann::ordered_json::array();
    nlohmann::ordered_json top1 = nlohmann::ordered_json::array();
    for (int l = 0; l < shape.layers; ++l) {
      nlohmann::ordered_json entropyRow = nlohmann::ordered_json::array();
      nlohmann::ordered_json top1Row = nlohmann::ordered_json::array();
      for (int h = 0; h < shape.heads; ++h) {
        const HeadStats& stats = overview.stats[static_cast<std::size_t>(l * shape.heads + h)];
        // NaN is not JSON: a head with no finite row gets null.
        entropyRow.push_back(std::isfinite(stats.entropy) ? nlohmann::ordered_json(stats.entropy)
                                                          : nlohmann::ordered_json(nullptr));
        top1Row.push_back(std::isfinite(stats.top1Mass) ? nlohmann::ordered_json(stats.top1Mass)
                                                        : nlohmann::ordered_json(nullptr));
      }
      entropy.push_back(std::move(entropyRow));
      top1.push_back(std::move(top1Row));
    }
    attention["entropy"] = std::move(entropy);
    attention["top1_mass"] = std::move(top1);
  }
  json["attention"] = std::move(attention);
  out << json.dump(2) << '\n';
  return 0;
}

// =======================================================================================
// screenshot FILE.npy|FILE.npz
// =======================================================================================

namespace {

// "L,H" -> (L, H), both >= 0.
std::optional<std::pair<int, int>> parseLayerHead(const std::string& text) {
  const auto comma = text.find(',');
  if (comma == std::string::npos) return std::nullopt;
  const auto layer = parseIntStrict(std::string_view(text).substr(0, comma), 0, 1 << 20);
  const auto head = parseIntStrict(std::string_view(text).substr(comma + 1), 0, 1 << 20);
  if (!layer || !head) return std::nullopt;
  return std::pair{*layer, *head};
}

}  // namespace

std::vector<Option> attentionScreenshotOptions(GuiLaunch::AttentionStart& start) {
  std::vector<Option> list = {
      wordOption("--view", "{choices}", "view", {"heatmap", "head", "text", "focus", "compare"},
                 "the tab shown", start.tab),
      withDefault(customOption("--select", "L,H", "the head shown (A)",
                   [&start](const std::string& v) -> Status {
                     const auto lh = parseLayerHead(v);
                     if (!lh) return Error{"", "", inQuotes(v) + " is not LAYER,HEAD"};
                     start.layer = lh->first;
                     start.head = lh->second;
                     return Ok{};
                   }),
                  std::to_string(start.layer) + "," + std::to_string(start.head)),
      customOption("--compare", "FILE|L,H",
                   "compare with head L,H of the same file, or with A's head of FILE",
                   [&start](const std::string& v) -> Status {
                     if (const auto lh = parseLayerHead(v)) {
                       start.compareLayer = lh->first;
                       start.compareHead = lh->second;
                     } else if (isAttentionFilePath(v)) {
                       start.compareFile = v;
                     } else {
                       return Error{"", "", inQuotes(v) + " is neither LAYER,HEAD nor a .npy / .npz file"};
                     }
                     if (start.tab < 0) start.tab = 4;
                     return Ok{};
                   }),
      flagOption("--drop-special", "drop the special tokens' keys and renormalise the rows",
                 start.dropSpecial),
      customOption("--focus", "q:N|k:N",
                   "focus query row N or key column N (opens the Focus tab)",
                   [&start](const std::string& v) -> Status {
                     const bool key = v.rfind("k:", 0) == 0, query = v.rfind("q:", 0) == 0;
                     const auto index = (key || query)
                                            ? parseIntStrict(std::string_view(v).substr(2), 0, 1 << 20)
                                            : std::nullopt;
                     if (!index) return Error{"", "", inQuotes(v) + " is not q:N or k:N"};
                     start.focusColumn = key;
                     start.focusIndex = *index;
                     if (start.tab < 0) start.tab = 3;
                     return Ok{};
                   }),
  };
  for (Option& option : attentionOpenOptions(start.open)) list.push_back(option);
  return list;
}

Status checkAttentionScreenshot(const std::string& path, const ParsedArgs& parsed,
                                GuiLaunch& launch) {
  if (!isAttentionFilePath(path) && !parsed.has("--model")) {
    GuiLaunch::AttentionStart unused;
    for (const Option& option : attentionScreenshotOptions(unused))
      if (parsed.has(option.name))
        return cli::optionError(option.name, "only applies to a .npy or .npz file, or with --model DIR");
    return Ok{};
  }
  GuiLaunch::AttentionStart& start = launch.attention;

  // A model's run is checked by the window once it has run (its shape is not known yet).
  if (!isAttentionFilePath(path)) return Ok{};
  // Open the file as the window will, to check the indices against its shape.
  Expected<io::AttentionFileOrChoice> opened = io::AttentionFile::openOrChoose(path, start.open);
  if (!opened) return asOptionError(opened.error());
  // Several arrays and no --array: the window offers them (see openAttentionFile).
  if (!opened->file) return Ok{};
  const io::AttentionFile* file = &*opened->file;
  const io::AttentionShape& shape = file->shape();
  // "layer 5 is out of range: the file has 2 layers (valid: 0..1)"
  const auto outOfRange = [&](std::string_view option, std::string_view what, int index, int count,
                              std::string_view plural) {
    return cli::optionError(option, std::string(what) + " " + std::to_string(index) +
                                        " is out of range: the file has " +
                                        countOf(count, what, plural) + " (valid: 0.." +
                                        std::to_string(count - 1) + ")");
  };
  for (const auto& [option, layer, head] :
       {std::tuple{"--select", start.layer, start.head},
        std::tuple{"--compare", start.compareLayer, start.compareHead}}) {
    if (!start.compareFile.empty() && std::string_view(option) == "--compare") continue;
    if (layer >= shape.layers) return outOfRange(option, "layer", layer, shape.layers, "layers");
    if (head >= shape.heads) return outOfRange(option, "head", head, shape.heads, "heads");
  }
  if (start.focusIndex >= 0) {
    const int count = start.focusColumn ? shape.keys : shape.queries;
    if (start.focusIndex >= count) {
      return start.focusColumn
                 ? outOfRange("--focus", "key", start.focusIndex, count, "keys")
                 : outOfRange("--focus", "query", start.focusIndex, count, "queries");
    }
  }
  return Ok{};
}

}  // namespace attn::app
