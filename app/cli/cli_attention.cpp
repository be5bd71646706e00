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
#include <tuple>
#include <nlohmann/json.hpp>

#include "app/cli/cli.h"
#include "core/base/format.h"
#include "formats/attention_file.h"
#include "render/attention_grid.h"
#include "render/heatmap_render.h"

namespace attn::app {

using namespace cli;

const std::string_view kInfoHelp =
    R"(usage: attnscope info FILE.npy|FILE.npz [--array NAME] [--batch B] [--layout DIMS]
                      [--tokens FILE] [--scan]

Prints, as JSON, the arrays of an attention file (name, dtype, shape, order) and how
attnscope reads it: [layers, heads, n_q, n_k], the arrays used, the batch item, whether
heads are used in place from the file mapping, and where the token labels come from.
Shape rules and limits: docs/import.md.

options:
  --array NAME      the array of an .npz (default: the only one, or layer_0, layer_1, ...)
  --batch B         item of a batch dimension                              (default: 0)
  --layout DIMS     letters b l h q k ending in qk (default by ndim: qk, hqk, lhqk, blhqk)
  --tokens FILE     token labels (.json list or .txt lines) instead of the side file
  --scan            read every head once: count NaN / +inf / -inf values, and give each
                    head's entropy (nats, mean over rows) and top-1 mass ([layer][head])
  -h, --help        show this help
)";

namespace {

constexpr OptionSpec kInfoOptions[] = {{"--array", true},
                                       {"--batch", true},
                                       {"--layout", true},
                                       {"--tokens", true},
                                       {"--scan", false}};

using OptionGetter = std::function<const std::string*(std::string_view)>;

// --array, --batch, --layout, --tokens into open options; `get` returns an option's value
// or null when it is absent.
Expected<io::AttentionOpenOptions> parseOpenOptions(const OptionGetter& get) {
  io::AttentionOpenOptions options;
  if (const std::string* v = get("--array")) {
    if (v->empty()) return optionError("--array", "needs an array name");
    options.arrayName = *v;
  }
  if (const std::string* v = get("--batch")) {
    auto n = parseIntStrict(*v, 0, std::numeric_limits<int>::max());
    if (!n) return optionError("--batch", inQuotes(*v) + " is not a batch index (0, 1, ...)");
    options.batch = *n;
  }
  if (const std::string* v = get("--layout")) options.layout = *v;
  if (const std::string* v = get("--tokens")) {
    if (v->empty()) return optionError("--tokens", "needs a file name");
    options.tokensPath = *v;
  }
  return options;
}

Expected<io::AttentionOpenOptions> parseOpenOptions(const ParsedArgs& parsed) {
  return parseOpenOptions([&](std::string_view name) { return parsed.get(name); });
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

Expected<AttentionExportRequest> parseAttentionExport(const ParsedArgs& parsed) {
  AttentionExportRequest request;
  request.path = parsed.positional.at(0);
  if (parsed.has("--matrix")) {
    return optionError("--matrix", "is for scenario files; an attention file holds the weights");
  }
  using Kind = io::AttentionSelection::Kind;
  bool rollout = false;
  if (const std::string* v = parsed.get("--layer")) {
    if (*v == "rollout") {
      rollout = true;
      request.lastLayer = true;
    } else if (auto n = parseIntStrict(*v, 0, std::numeric_limits<int>::max())) {
      request.selection.layer = *n;
    } else {
      return optionError("--layer",
                         inQuotes(*v) + " is not a layer index (0, 1, ...) or 'rollout'");
    }
  }
  if (const std::string* v = parsed.get("--aggregate")) {
    if (*v != "rollout") return optionError("--aggregate", inQuotes(*v) + " is not 'rollout'");
    rollout = true;
  }
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
  Expected<io::AttentionOpenOptions> open = parseOpenOptions(parsed);
  if (!open) return open.error();
  request.open = std::move(open).value();
  Status style = parseHeatmapStyle(parsed, request.style);
  if (!style) return style.error();
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

// =======================================================================================
// export
// =======================================================================================

// `export FILE --grid --out grid.png`: every head in one image.
int runGridExport(const ParsedArgs& parsed, std::ostream& err) {
  for (std::string_view name : {"--layer", "--head", "--aggregate", "--matrix"}) {
    if (parsed.has(name)) return fail(err, optionError(name, "--grid shows every layer and head"));
  }
  Expected<io::AttentionOpenOptions> open = parseOpenOptions(parsed);
  if (!open) return fail(err, open.error());
  io::HeatmapStyle heatmap;
  Status style = parseHeatmapStyle(parsed, heatmap);
  if (!style) return fail(err, style.error());
  Expected<std::string> out = checkOutputPath(parsed, {".png"}, true);
  if (!out) return fail(err, out.error());
  const std::string& path = parsed.positional.at(0);
  Expected<io::AttentionFile> file = io::AttentionFile::open(path, *open);
  if (!file) return fail(err, asOptionError(file.error()));
  io::GridStyle grid;
  grid.colormap = heatmap.colormap;
  grid.vmin = heatmap.vmin;
  grid.vmax = heatmap.vmax;
  grid.scale = heatmap.scale;
  Status written = io::exportAttentionGrid(*file, grid, *out);
  if (!written) return fail(err, written.error());
  return 0;
}

int runAttentionExport(const ParsedArgs& parsed, std::ostream& /*out*/, std::ostream& err) {
  if (parsed.has("--grid")) return runGridExport(parsed, err);
  // 1 options
  Expected<AttentionExportRequest> request = parseAttentionExport(parsed);
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

int runInfo(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  Expected<ParsedArgs> parsed = parseArgs("info", args, kInfoOptions);
  if (!parsed) return fail(err, parsed.error());
  if (parsed->help) {
    out << kInfoHelp;
    return 0;
  }
  if (parsed->positional.size() != 1) {
    return fail(err, Error{"", "",
                           parsed->positional.empty()
                               ? "'info' needs an .npy or .npz FILE (see attnscope info --help)"
                               : "unexpected argument " + inQuotes(parsed->positional[1]) +
                                     " for 'info' (only one FILE)"});
  }
  const std::string& path = parsed->positional[0];
  Expected<io::AttentionOpenOptions> options = parseOpenOptions(*parsed);
  if (!options) return fail(err, options.error());

  // 1 the arrays, from their headers
  Expected<std::vector<io::ArraySummary>> arrays = io::listArrays(path, options->limits);
  if (!arrays) return fail(err, arrays.error());
  nlohmann::ordered_json json;
  json["file"] = path;
  json["arrays"] = nlohmann::ordered_json::array();
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
    json["arrays"].push_back(std::move(item));
  }

  // 2 the normalised attention
  Expected<io::AttentionFile> file = io::AttentionFile::open(path, *options);
  if (!file) {
    // An archive of several arrays is a fine file: list them and say how to pick one.
    if (file.error().field == "array" && options->arrayName.empty()) {
      json["attention"] = nullptr;
      json["attention_error"] = file.error().problem;
      out << json.dump(2) << '\n';
      return 0;
    }
    return fail(err, asOptionError(file.error()));
  }
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
  if (parsed->has("--scan")) {
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

Status applyAttentionScreenshotOptions(
    const std::string& path, const std::function<const std::string*(std::string_view)>& get,
    GuiLaunch& launch) {
  if (!isAttentionFilePath(path) && !get("--model")) {
    for (std::string_view name : kAttentionScreenshotOptions)
      if (get(name))
        return cli::optionError(name, "only applies to a .npy or .npz file, or with --model DIR");
    return Ok{};
  }
  GuiLaunch::AttentionStart& start = launch.attention;
  if (const std::string* v = get("--view")) {
    constexpr std::string_view kTabs[] = {"heatmap", "head", "text", "focus", "compare"};
    const auto it = std::find(std::begin(kTabs), std::end(kTabs), *v);
    if (it == std::end(kTabs))
      return cli::optionError("--view",
                              cli::inQuotes(*v) + " is not heatmap, head, text, focus or compare");
    start.tab = static_cast<int>(it - std::begin(kTabs));
  }
  if (const std::string* v = get("--select")) {
    const auto lh = parseLayerHead(*v);
    if (!lh) return cli::optionError("--select", cli::inQuotes(*v) + " is not LAYER,HEAD");
    start.layer = lh->first;
    start.head = lh->second;
  }
  if (const std::string* v = get("--compare")) {
    if (const auto lh = parseLayerHead(*v)) {
      start.compareLayer = lh->first;
      start.compareHead = lh->second;
    } else if (isAttentionFilePath(*v)) {
      start.compareFile = *v;
    } else {
      return cli::optionError("--compare",
                              cli::inQuotes(*v) + " is neither LAYER,HEAD nor a .npy / .npz file");
    }
    if (start.tab < 0) start.tab = 4;
  }
  if (get("--drop-special")) start.dropSpecial = true;
  if (const std::string* v = get("--focus")) {
    const bool key = v->rfind("k:", 0) == 0, query = v->rfind("q:", 0) == 0;
    const auto index =
        (key || query) ? parseIntStrict(std::string_view(*v).substr(2), 0, 1 << 20) : std::nullopt;
    if (!index) return cli::optionError("--focus", cli::inQuotes(*v) + " is not q:N or k:N");
    start.focusColumn = key;
    start.focusIndex = *index;
    if (start.tab < 0) start.tab = 3;
  }
  Expected<io::AttentionOpenOptions> open = parseOpenOptions(get);
  if (!open) return open.error();
  start.open = std::move(open).value();

  // A model's run is checked by the window once it has run (its shape is not known yet).
  if (!isAttentionFilePath(path)) return Ok{};
  // Open the file as the window will, to check the indices against its shape.
  Expected<io::AttentionFile> file = io::AttentionFile::open(path, start.open);
  if (!file) {
    // Several arrays and no --array: the window offers them (see openAttentionFile).
    if (file.error().field == "array" && start.open.arrayName.empty()) return Ok{};
    return asOptionError(file.error());
  }
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
