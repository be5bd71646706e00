// The headless command line (see cli.h for the contract and exit codes).
//
// Each command runs the same steps:
//   1 parse the options (syntax only: unknown options, bad numbers, bad names, missing --out),
//   2 load the scenario (io::loadScenario names the file, field and problem),
//   3 compute (buildProblem + attend, so the labels of the Problem are at hand),
//   4 check what needs the result (the head range), 5 write, 6 print warnings.
// Cheap checks come first so a typo in an option never waits for a large scenario.
#include "app/cli/cli.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <exception>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <map>
#include <span>
#include <sstream>
#include <system_error>

#include "app/session/app_state.h"
#include "app/session/attention_view.h"
#include "app/cli/cli_attention.h"
#include "app/cli/cli_bench.h"
#include "app/cli/cli_common.h"
#include "app/cli/cli_image.h"
#include "app/cli/cli_model.h"
#include "app/cli/cli_open.h"
#include "app/cli/cli_train.h"
#include "core/isa/isa.h"
#include "core/scenario/scenario.h"
#include "render/color_scale.h"
#include "formats/files.h"
#include "render/heatmap_render.h"
#include "formats/scenario_json.h"

namespace attn::app {
namespace {

namespace fs = std::filesystem;

// =======================================================================================
// Help texts
// =======================================================================================

constexpr std::string_view kMainHelp =
    R"(attnscope - see how attention works

usage:
  attnscope                        open the window (restores the last session)
  attnscope SCENARIO.json          open the window on a scenario file
  attnscope open FILE [--select L,H] [--view V] [--batch B]
  attnscope --model DIR [--text T] open the window with a GPT-2 model folder (live attention)
  attnscope compute SCENARIO [--out FILE.json]
  attnscope export SCENARIO --out FILE.png|FILE.svg|FILE.csv [options]
  attnscope screenshot SCENARIO --out FILE.png [--size WxH] [--frames N] [--training STEPS] [--theme T]
  attnscope screenshot [SCENARIO] --model DIR --text T [--select L,H [--pipeline]] --out FILE.png
  attnscope export FILE.npy|FILE.npz --layer L --head H|mean|max --out FILE.png|svg|csv
  attnscope export FILE.npy|FILE.npz --grid --out FILE.png
  attnscope info FILE.npy|FILE.npz [--array NAME] [--batch B] [--layout DIMS] [--scan]
  attnscope image IMAGE --patch P --query R,C --out OUT.png [options]
  attnscope train --out RUN.json [--task reverse --length 8 --model encdec ...]
  attnscope model DIR --text TEXT [--out OUT.npz] [--predict K]
  attnscope bench [--n N] [--d D] [--heads H] [--threads T] [--repeat R]
  attnscope help [COMMAND] | COMMAND --help
  attnscope --version

commands:
  open        open the window on a file (.json, .npy, .npz, image) with the Attention
              panel's head and tab chosen (--select, --view, ...)
  compute     run the attention mechanism, print every intermediate as JSON
  export      write one heatmap (scores, weights, context, ...) as PNG, SVG or CSV
  screenshot  open the window, render a few frames, save it as PNG and exit
  bench       time the multi-head self-attention forward pass, print JSON
  info        list the arrays of an .npy/.npz attention file and its [layers, heads,
              n_q, n_k] as JSON (docs/import.md)
  image       self-attention over the P x P patches of an image, overlay as PNG
  train       train a small attention model on a toy task, write accuracy and alignment
  model       run a GPT-2 model folder on a text: attention of every layer and head
              as .npz, the next-token prediction as JSON

exit codes: 0 ok, 2 bad input or usage (one line on stderr naming the file, field and
problem), 3 no display / no OpenGL (screenshot), 1 internal error.
)";

constexpr std::string_view kComputeHelp =
    R"(usage: attnscope compute SCENARIO [--out FILE.json]

Loads the scenario, runs attention and writes the result as JSON: per head q, k, v,
scores, weights and context, then concat, output, weights_mean, the query and key labels
and the warnings. Matrices are lists of rows.

options:
  --out FILE.json   write to FILE instead of stdout, atomically (a temporary file,
                    fsync, then moved into place). An existing file keeps its mode, a
                    symlink stays a symlink, a pipe or device (/dev/stdout) is written
                    into; a read-only file, a folder or the SCENARIO itself is refused
  -h, --help        show this help

Warnings (a fully masked query row, a zero vector under cosine, ...) go to stderr as
"attnscope: warning: ..." lines; the exit code stays 0.
)";

constexpr std::string_view kExportHelp =
    R"(usage: attnscope export SCENARIO --out FILE.png|FILE.svg|FILE.csv [options]

Writes one matrix of the result as a heatmap. The format follows the extension: .png
(raster, for slides), .svg (vector, same layout), .csv (labels and values, full float
precision). The window's export menu writes byte-identical files.

options:
  --out FILE                 output file (required); its folder must exist
  --matrix NAME              scores | masked_scores | weights | q | k | v | context |
                             concat | output                         (default: weights)
  --head N|mean              0-based head, or the mean over heads (scores and weights
                             only); concat and output ignore it       (default: 0)
  --colormap NAME            viridis | magma | cividis | greys | purples | oranges |
                             blues | rdbu (diverging)   (default: viridis for weights;
                             rdbu centred on 0 for the signed matrices)
  --labels on|off            numbers in the cells                     (default: on)
  --axis-labels on|off       token labels on the axes                 (default: on)
  --no-colorbar              leave out the colour bar
  --no-title                 leave out the title
  --scale N                  1..8, multiplies every size (resolution) (default: 1)
  --vmin X, --vmax Y         fixed colour range (default: by --range)
  --range auto|minmax|row|fixed
                             colour range: auto = by meaning (weights 0..1, signed matrices
                             symmetric about 0, others their finite min..max); minmax = the
                             matrix's own finite min..max; row = each row's own min..max
                             (the colour bar reads "row min" .. "row max"); fixed =
                             --vmin/--vmax (given alone they mean fixed). The title names the
                             rule ("fixed 0-1"). 'global' reads as auto.  (default: auto)
  --color-scale linear|log   log: log10 colours from max(smallest positive value, largest
                             x 1e-4) to the largest, colour bar ticks at decades; zeros at
                             the bottom, masked cells hatched. Also '--scale log'.
                                                                      (default: linear)
  --digits N                 1..9 significant digits in cells and ticks; labels
                             that do not fit drop digits               (default: 3)
  --decimals N               older spelling: --digits N+1 (at most 9)
  -h, --help                 show this help

The default head is 0 rather than "mean" so that the same command works for every matrix
and every head count; pass --head mean for PyTorch's averaged weights.

attention files (a model's saved attention, see docs/import.md):
  attnscope export FILE.npy|FILE.npz --out OUT [--layer L] [--head H|mean|max]
                   [--aggregate rollout] [--array NAME] [--batch B] [--layout DIMS]
                   [--tokens FILE] [style options above]
  --layer L|rollout          0-based layer (default: 0); 'rollout' = rollout of all layers
  --head H|mean|max          0-based head, or the mean / max over the layer's heads
  --aggregate rollout        attention rollout (Abnar & Zuidema) of layers 0..L, from the
                             mean over heads (--head mean only)
  --array NAME               the array of an .npz (default: its only array, or the per-layer
                             set layer_0, layer_1, ... / attentions_0, ...)
  --batch B                  item of a batch dimension                (default: 0)
  --layout DIMS              how to read the dimensions, letters b l h q k ending in qk
                             (default by ndim: qk, hqk, lhqk, blhqk)
  --tokens FILE              token labels (.json list or .txt lines); default: the side file
                             FILE.tokens.json / FILE.tokens.txt, else the indices
  --grid                     the whole layer x head grid as one labelled PNG (thumbnails
                             max-pooled to 64 x 64, at least 96 px each, a colour bar;
                             --colormap, --vmin, --vmax, --scale apply)
NaN or inf values in the exported matrix are reported on stderr as a warning.
)";

constexpr std::string_view kScreenshotHelp =
    R"(usage: attnscope screenshot SCENARIO|IMAGE|FILE.npy|FILE.npz --out FILE.png [--size WxH]
                                   [--frames N] [--training STEPS] [--theme T]
                                   [--presentation] [--stage NAME] [--dialog open|save-as]

Opens the window on the scenario (without reading or writing the autosave), renders N
frames, saves the window as PNG and exits. An attention file (.npy / .npz) opens in the
Attention panel over the default scenario. Needs a display; without one use
  xvfb-run -a -s '-screen 0 1600x1000x24' attnscope screenshot SCENARIO --out shot.png

options:
  --out FILE.png    output file (required); its folder must exist
  --size WxH        window size, each 64..8192                    (default: 1600x1000)
  --frames N        frames to render before saving, 1..10000     (default: 5)
  --training STEPS  show the Training panel after STEPS steps (0..100000) of its default
                    run (reverse, L 8, V 10, encoder-decoder, dot; seed 1): reproducible
  --theme T         light (projector) or dark                    (default: the file's view)
  --presentation    presentation mode (F5 in the window): the pipeline alone, full window,
                    large type, stages in rows and pages that fit
  --stage NAME      make NAME the current pipeline stage (q, k, v, scores, masked_scores,
                    weights, context, concat, output); with --presentation it is shown
                    alone, full screen, with its explanation under it
  --layout-out FILE.json
                    also write what was drawn: window [w, h], font_px, and every heatmap
                    with its stage, title, rect [x, y, w, h], rows, cols, cell [w, h],
                    numbers_drawn, row_labels / col_labels (as drawn, "" = skipped),
                    range [lo, hi], range_rule (fixed|symmetric|minmax|row), colormap
  --dialog D        open|save-as: show attnscope's own file dialog (the built-in one, as
                    when no zenity or kdialog is found) listing the current folder
  -h, --help        show this help

When SCENARIO is an image (PNG, JPEG, ...), the window shows it in the Image view, and
  --patch P  --query R,C  --temperature T  --pos none|sin2d|random
set the view as in `attnscope image`.

When it is an attention file (.npy / .npz), these set up the Attention panel:
  --view heatmap|head|text|focus|compare   the tab shown                 (default: heatmap)
  --select L,H        the head shown (A)                                (default: 0,0)
  --compare FILE|L,H  compare with head L,H of the same file, or with A's head of FILE
  --drop-special      drop the special tokens' keys and renormalise the rows
  --focus q:N|k:N     focus query row N or key column N (opens the Focus tab)
  --array NAME  --batch B  --layout DIMS  --tokens FILE   open the file as `export` does
An index out of the file's range (--select, --compare L,H, --focus) is an error.

A GPT-2 model folder (SCENARIO may then be left out):
  --model DIR       load the folder and show the Model and Attention panels
  --text TEXT       the text typed into the Model panel
  --pipeline        open the selected head (--select L,H) in the pipeline: a new
                    scenario of its real q, k and v
The Attention panel's options above (--select, --view, --focus, ...) apply to the
model's attention.
)";

}  // namespace

// The helpers below are shared with the other command files (declared in cli_common.h).
namespace cli {

// =======================================================================================
// Errors
// =======================================================================================

// Errors travel as values; this is the one place where they become text.
int fail(std::ostream& err, const Error& error) {
  std::string line = error.message();
  // The contract is ONE line; a multi-line message from a library must not break it.
  std::replace(line.begin(), line.end(), '\n', ' ');
  std::replace(line.begin(), line.end(), '\r', ' ');
  err << "attnscope: " << line << '\n';
  return 2;
}

// "option '--NAME': PROBLEM", optionally prefixed by the scenario file it was checked against.
Error optionError(std::string_view name, const std::string& problem, std::string file) {
  return Error{std::move(file), "", "option '" + std::string(name) + "': " + problem};
}

std::string inQuotes(std::string_view text) {
  return "'" + std::string(text) + "'";
}

// =======================================================================================
// Option parsing
// =======================================================================================

// Accepts "--name value", "--name=value", flags, "-h"/"--help" and "--" (end of options).
// A value may start with '-' (e.g. "--vmin -1") but not with "--", which is taken as a
// forgotten value.
Expected<ParsedArgs> parseArgs(std::string_view command, std::span<const std::string> args,
                               std::span<const OptionSpec> specs) {
  ParsedArgs parsed;
  bool optionsEnded = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (optionsEnded || arg.empty() || arg[0] != '-' || arg == "-") {
      parsed.positional.push_back(arg);
      continue;
    }
    if (arg == "--") {
      optionsEnded = true;
      continue;
    }
    if (arg == "-h" || arg == "--help") {
      parsed.help = true;
      continue;
    }
    std::string_view name = arg;
    std::optional<std::string> inlineValue;
    if (auto eq = name.find('='); eq != std::string_view::npos) {
      inlineValue = std::string(name.substr(eq + 1));
      name = name.substr(0, eq);
    }
    auto spec = std::find_if(specs.begin(), specs.end(),
                             [&](const OptionSpec& s) { return s.name == name; });
    if (spec == specs.end()) {
      return Error{"", "",
                   "unknown option " + inQuotes(name) + " for '" + std::string(command) +
                       "' (see attnscope " + std::string(command) + " --help)"};
    }
    if (!spec->takesValue) {
      if (inlineValue) return optionError(name, "takes no value");
      parsed.values[std::string(name)] = "";
      continue;
    }
    if (inlineValue) {
      parsed.values[std::string(name)] = *inlineValue;
      continue;
    }
    if (i + 1 >= args.size() || args[i + 1].starts_with("--")) {
      return optionError(name, "needs a value");
    }
    parsed.values[std::string(name)] = args[++i];
  }
  return parsed;
}

// Exactly one positional argument: the scenario file.
Expected<std::string> takeScenarioPath(std::string_view command, const ParsedArgs& parsed) {
  if (parsed.positional.empty()) {
    return Error{"", "",
                 "'" + std::string(command) + "' needs a SCENARIO file (see attnscope " +
                     std::string(command) + " --help)"};
  }
  if (parsed.positional.size() > 1) {
    return Error{"", "",
                 "unexpected argument " + inQuotes(parsed.positional[1]) + " for '" +
                     std::string(command) + "' (only one SCENARIO file)"};
  }
  return parsed.positional[0];
}

// The value of an on|off option.
Expected<bool> parseOnOff(std::string_view name, std::string_view value) {
  if (value == "on") return true;
  if (value == "off") return false;
  return optionError(name, inQuotes(value) + " is not 'on' or 'off'");
}

std::string lowerExtension(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext;
}

Status checkOutputFile(std::string_view option, const std::string& path) {
  if (path.empty()) return optionError(option, "needs a file name");
  std::error_code ec;
  fs::path parent = fs::path(path).parent_path();
  if (parent.empty()) parent = ".";
  if (!fs::is_directory(parent, ec)) {
    return Error{path, "", "the folder " + inQuotes(parent.string()) + " does not exist"};
  }
  if (fs::is_directory(path, ec)) return Error{path, "", "is a folder, not a file"};
  return Ok{};
}

// --out FILE: present, not empty, its folder exists and it is not itself a folder.
// `extensions` lists the accepted lower-case extensions (empty = any).
Expected<std::string> checkOutputPath(const ParsedArgs& parsed,
                                      std::initializer_list<std::string_view> extensions,
                                      bool required) {
  const std::string* out = parsed.get("--out");
  if (!out) {
    if (required) return optionError("--out", "missing (the file to write is required)");
    return std::string();
  }
  if (out->empty()) return optionError("--out", "needs a file name");
  if (extensions.size() > 0) {
    const std::string ext = lowerExtension(*out);
    if (std::find(extensions.begin(), extensions.end(), ext) == extensions.end()) {
      std::string list;
      for (std::string_view e : extensions) list += (list.empty() ? "" : ", ") + std::string(e);
      return Error{*out, "",
                   ext.empty() ? "no file extension; use one of " + list
                               : "unsupported extension " + inQuotes(ext) + "; use one of " + list};
    }
  }
  if (Status file = checkOutputFile("--out", *out); !file) return file.error();
  return *out;
}

std::string allColormapNames() {
  std::string names;
  for (ColormapKind kind : kAllColormaps) {
    names += (names.empty() ? "" : ", ") + std::string(toString(kind));
  }
  return names;
}

Status parseHeatmapStyle(const ParsedArgs& parsed, io::HeatmapStyle& style) {
  if (const std::string* v = parsed.get("--colormap")) {
    auto kind = parseColormapKind(*v);
    if (!kind)
      return optionError("--colormap",
                         "unknown colormap " + inQuotes(*v) + "; use one of " + allColormapNames());
    style.colormap = *kind;
  }
  if (const std::string* v = parsed.get("--labels")) {
    Expected<bool> on = parseOnOff("--labels", *v);
    if (!on) return on.error();
    style.cellLabels = *on;
  }
  if (const std::string* v = parsed.get("--axis-labels")) {
    Expected<bool> on = parseOnOff("--axis-labels", *v);
    if (!on) return on.error();
    style.axisLabels = *on;
  }
  if (parsed.has("--no-colorbar")) style.colorbar = false;
  if (parsed.has("--no-title")) style.title = false;
  if (const std::string* v = parsed.get("--scale")) {
    // "--scale log" / "--scale linear" name the colour scale (as --color-scale does);
    // a number is the resolution.
    if (auto colorScale = parseColorScaleKind(*v)) {
      style.colorScale = *colorScale;
    } else {
      auto n = parseIntStrict(*v, 1, 8);
      if (!n)
        return optionError("--scale", inQuotes(*v) +
                                          " is not an integer in 1..8 (the resolution) nor "
                                          "'linear' or 'log' (the colour scale)");
      style.scale = *n;
    }
  }
  if (const std::string* v = parsed.get("--color-scale")) {
    auto colorScale = parseColorScaleKind(*v);
    if (!colorScale)
      return optionError("--color-scale", "unknown colour scale " + inQuotes(*v) +
                                              "; use linear or log");
    style.colorScale = *colorScale;
  }
  if (const std::string* v = parsed.get("--decimals")) {
    auto n = parseIntStrict(*v, 0, 9);
    if (!n) return optionError("--decimals", inQuotes(*v) + " is not an integer in 0..9");
    style.digits = std::min(*n + 1, 9);
  }
  if (const std::string* v = parsed.get("--digits")) {
    auto n = parseIntStrict(*v, 1, 9);
    if (!n) return optionError("--digits", inQuotes(*v) + " is not an integer in 1..9");
    style.digits = *n;
  }
  for (std::string_view name : {"--vmin", "--vmax"}) {
    if (const std::string* v = parsed.get(name)) {
      auto x = parseFloatStrict(*v);
      if (!x) return optionError(name, inQuotes(*v) + " is not a finite number");
      (name == "--vmin" ? style.vmin : style.vmax) = *x;
    }
  }
  if (style.vmin && style.vmax && !(*style.vmin < *style.vmax)) {
    return optionError("--vmin", "must be less than --vmax (" + *parsed.get("--vmin") +
                                     " >= " + *parsed.get("--vmax") + ")");
  }
  if (const std::string* v = parsed.get("--range")) {
    auto mode = parseRangeMode(*v);
    if (!mode)
      return optionError("--range",
                         "unknown range " + inQuotes(*v) + "; use auto, minmax, row or fixed");
    const bool fixedEnds = style.vmin || style.vmax;
    if (*mode == RangeMode::Fixed && !fixedEnds)
      return optionError("--range", "'fixed' needs --vmin and/or --vmax");
    if (*mode != RangeMode::Fixed && fixedEnds)
      return optionError("--range", inQuotes(*v) + " contradicts --vmin/--vmax (a fixed range)");
    style.range = *mode;
  }
  if (style.vmin || style.vmax) style.range = RangeMode::Fixed;
  return Ok{};
}

// --out must not name one of the command's inputs (the same file, also through a symlink
// or a hard link): `compute X.json --out X.json` would replace the scenario by its result.
Status checkNotAnInput(const std::string& outPath, const std::string& inputPath) {
  if (outPath.empty() || !io::sameFile(outPath, inputPath)) return Ok{};
  return optionError("--out", inQuotes(outPath) + " is the input file " + inQuotes(inputPath) +
                                  "; writing it would destroy the input (choose another file)");
}

}  // namespace cli

namespace {

using namespace cli;

// =======================================================================================
// Shared steps: load, compute, warnings
// =======================================================================================

struct Computed {
  Problem problem;
  AttentionResult result;
};

Expected<Computed> loadAndCompute(const std::string& path) {
  Expected<Scenario> scenario = io::loadScenario(path);
  if (!scenario) {
    Error error = scenario.error();
    if (error.file.empty()) error.file = path;
    return error;
  }
  Expected<Problem> problem = buildProblem(*scenario);
  if (!problem) {
    Error error = problem.error();
    if (error.file.empty()) error.file = path;
    return error;
  }
  AttentionResult result;
  RunOptions run;
  run.threads = 0;  // every core
  if (Status status = attend(problem->inputs, problem->options, result, run); !status) {
    Error error = toScenarioError(status.error(), *scenario);
    if (error.file.empty()) error.file = path;
    return error;
  }
  return Computed{std::move(problem).value(), std::move(result)};
}

void printWarnings(std::ostream& err, const std::string& path, const AttentionResult& result) {
  for (const Warning& warning : result.warnings) {
    std::string line = warning.message.empty() ? warning.code : warning.message;
    std::replace(line.begin(), line.end(), '\n', ' ');
    err << "attnscope: warning: " << path << ": " << line;
    if (!warning.code.empty() && !warning.message.empty()) err << " (" << warning.code << ")";
    err << '\n';
  }
}

// =======================================================================================
// compute
// =======================================================================================

constexpr OptionSpec kComputeOptions[] = {{"--out", true}};

int runCompute(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  // 1 options
  Expected<ParsedArgs> parsed = parseArgs("compute", args, kComputeOptions);
  if (!parsed) return fail(err, parsed.error());
  if (parsed->help) {
    out << kComputeHelp;
    return 0;
  }
  Expected<std::string> path = takeScenarioPath("compute", *parsed);
  if (!path) return fail(err, path.error());
  Expected<std::string> outPath = checkOutputPath(*parsed, {}, /*required=*/false);
  if (!outPath) return fail(err, outPath.error());
  if (Status distinct = checkNotAnInput(*outPath, *path); !distinct)
    return fail(err, distinct.error());

  // 2-3 load and compute
  Expected<Computed> computed = loadAndCompute(*path);
  if (!computed) return fail(err, computed.error());

  // 5 write: to stdout streamed (the text of a large result, about 1 GB at 2048 tokens x 8
  // heads, is never held whole; each head's scores are computed only while written).
  const auto produce = [&computed](const io::TextSink& sink) {
    io::writeResultJson(computed->result, computed->problem, sink);
  };
  if (outPath->empty()) {
    produce([&out](std::string_view chunk) { out << chunk; });
    out.flush();
  } else {
    // A file goes through the one atomic writer (io/files.h) in its streamed form: the same
    // chunks go to the temporary file, which replaces the target only once all are written.
    // After a failed write the remaining chunks are dropped, and the first error returned.
    Status written = io::writeFileStreamed(*outPath, [&](const io::ChunkWriter& write) {
      Status first = Ok{};
      produce([&](std::string_view chunk) {
        if (first) first = write(chunk);
      });
      return first;
    });
    if (!written) {
      Error error = written.error();
      if (error.file.empty()) error.file = *outPath;
      return fail(err, error);
    }
  }
  // 6 warnings
  printWarnings(err, *path, computed->result);
  return 0;
}

// =======================================================================================
// export
// =======================================================================================

constexpr OptionSpec kExportOptions[] = {
    {"--out", true},    {"--matrix", true},      {"--head", true},         {"--colormap", true},
    {"--labels", true}, {"--axis-labels", true}, {"--scale", true},        {"--vmin", true},
    {"--vmax", true},   {"--decimals", true},    {"--no-colorbar", false}, {"--no-title", false},
    {"--range", true},  {"--color-scale", true},
    // .npy/.npz attention files only (app/cli_attention.cpp)
    {"--layer", true},  {"--aggregate", true},   {"--array", true},        {"--batch", true},
    {"--layout", true}, {"--tokens", true},       {"--digits", true}, {"--grid", false}};

struct ExportRequest {
  std::string scenarioPath;
  std::string outPath;
  MatrixKind matrix = MatrixKind::Weights;
  int head = 0;  // -1 = mean
  io::HeatmapStyle style;
};

std::string allMatrixNames() {
  std::string names;
  for (auto kind : {MatrixKind::Scores, MatrixKind::MaskedScores, MatrixKind::Weights,
                    MatrixKind::Q, MatrixKind::K, MatrixKind::V,
                    MatrixKind::Context, MatrixKind::Concat, MatrixKind::Output}) {
    names += (names.empty() ? "" : ", ") + std::string(toString(kind));
  }
  return names;
}

Expected<ExportRequest> parseExportRequest(const ParsedArgs& parsed) {
  ExportRequest request;
  Expected<std::string> path = takeScenarioPath("export", parsed);
  if (!path) return path.error();
  request.scenarioPath = *path;

  if (const std::string* v = parsed.get("--matrix")) {
    auto kind = parseMatrixKind(*v);
    if (!kind)
      return optionError("--matrix",
                         "unknown matrix " + inQuotes(*v) + "; use one of " + allMatrixNames());
    request.matrix = *kind;
  }
  if (const std::string* v = parsed.get("--head")) {
    if (*v == "mean") {
      request.head = -1;
    } else if (auto n = parseIntStrict(*v, std::numeric_limits<int>::min(),
                                       std::numeric_limits<int>::max())) {
      if (*n < 0) {
        return optionError("--head",
                           inQuotes(*v) + " is negative; use a head index >= 0 or 'mean'");
      }
      request.head = *n;
    } else {
      return optionError("--head", inQuotes(*v) + " is not a head index (0, 1, ...) or 'mean'");
    }
  }
  // As in the window: signed matrices symmetric about 0 (on the diverging map unless
  // --colormap is given), weights on a fixed 0..1 (io::rangeRule; --range picks another).
  request.style.centreZero = isSignedMatrix(request.matrix);
  request.style.probability = request.matrix == MatrixKind::Weights;
  if (isSignedMatrix(request.matrix) && !parsed.get("--colormap"))
    request.style.colormap = ColormapKind::RdBu;
  Status style = parseHeatmapStyle(parsed, request.style);
  if (!style) return style.error();
  Expected<std::string> out = checkOutputPath(parsed, {".png", ".svg", ".csv"}, true);
  if (!out) return out.error();
  if (Status distinct = checkNotAnInput(*out, request.scenarioPath); !distinct)
    return distinct.error();
  request.outPath = *out;
  return request;
}

int runExport(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  // 1 options
  Expected<ParsedArgs> parsed = parseArgs("export", args, kExportOptions);
  if (!parsed) return fail(err, parsed.error());
  if (parsed->help) {
    out << kExportHelp;
    return 0;
  }
  if (parsed->positional.size() == 1 && isAttentionFilePath(parsed->positional[0])) {
    return runAttentionExport(*parsed, out, err);
  }
  for (std::string_view name : kAttentionOnlyOptions) {
    if (parsed->has(name)) return fail(err, optionError(name, "is for .npy/.npz attention files"));
  }
  Expected<ExportRequest> request = parseExportRequest(*parsed);
  if (!request) return fail(err, request.error());

  // 2-3 load and compute
  Expected<Computed> computed = loadAndCompute(request->scenarioPath);
  if (!computed) return fail(err, computed.error());

  // 4 the head range is only known now
  const int heads = static_cast<int>(computed->result.heads.size());
  if (request->head >= heads) {
    return fail(err, optionError("--head",
                                 "head " + std::to_string(request->head) +
                                     " is out of range: the scenario has " + std::to_string(heads) +
                                     (heads == 1 ? " head" : " heads") + " (valid: 0.." +
                                     std::to_string(heads - 1) + " or mean)",
                                 request->scenarioPath));
  }
  Expected<MatrixView> view =
      selectMatrix(computed->result, computed->problem, request->matrix, request->head);
  if (!view) {
    Error error = view.error();
    if (error.field == "head" || error.field == "matrix") {
      error = optionError("--" + error.field, error.problem, request->scenarioPath);
    } else if (error.file.empty()) {
      error.file = request->scenarioPath;
    }
    return fail(err, error);
  }

  // 5 write
  Status written = io::exportMatrix(*view, request->style, request->outPath);
  if (!written) {
    Error error = written.error();
    if (error.file.empty()) error.file = request->outPath;
    return fail(err, error);
  }
  // 6 warnings
  printWarnings(err, request->scenarioPath, computed->result);
  return 0;
}

// =======================================================================================
// screenshot
// =======================================================================================

constexpr OptionSpec kScreenshotOptions[] = {
    {"--out", true},   {"--size", true},        {"--frames", true}, {"--patch", true},
    {"--query", true}, {"--temperature", true}, {"--pos", true},    {"--training", true},
    {"--theme", true},
    {"--view", true},  {"--select", true},      {"--compare", true}, {"--drop-special", false},
    {"--focus", true}, {"--model", true},       {"--text", true},    {"--pipeline", false},
    {"--presentation", false}, {"--stage", true}, {"--layout-out", true},
    {"--dialog", true},
    {"--array", true},  {"--batch", true},       {"--layout", true},  {"--tokens", true}};

int runScreenshot(std::span<const std::string> args, std::ostream& out, std::ostream& err,
                  const WindowRunner& window) {
  Expected<ParsedArgs> parsed = parseArgs("screenshot", args, kScreenshotOptions);
  if (!parsed) return fail(err, parsed.error());
  if (parsed->help) {
    out << kScreenshotHelp;
    return 0;
  }
  // With --model the SCENARIO may be left out (the default one).
  Expected<std::string> path = parsed->has("--model") && parsed->positional.empty()
                                   ? Expected<std::string>(std::string())
                                   : takeScenarioPath("screenshot", *parsed);
  if (!path) return fail(err, path.error());

  GuiLaunch launch;
  launch.scenarioPath = *path;
  launch.noAutosave = true;
  if (const std::string* v = parsed->get("--size")) {
    auto size = parseWindowSize(*v, 64, 8192);
    if (!size) {
      return fail(err, optionError("--size", inQuotes(*v) + " is not WxH with both in 64..8192"));
    }
    launch.width = size->width;
    launch.height = size->height;
  }
  if (const std::string* v = parsed->get("--frames")) {
    auto n = parseIntStrict(*v, 1, 10000);
    if (!n)
      return fail(err, optionError("--frames", inQuotes(*v) + " is not an integer in 1..10000"));
    launch.frames = *n;
  }
  if (const std::string* v = parsed->get("--training")) {
    auto n = parseIntStrict(*v, 0, 100000);
    if (!n)
      return fail(err, optionError("--training", inQuotes(*v) + " is not an integer in 0..100000"));
    launch.trainingSteps = *n;
  }
  if (const std::string* v = parsed->get("--theme")) {
    if (*v != "light" && *v != "dark")
      return fail(err, optionError("--theme", inQuotes(*v) + " is not light or dark"));
    launch.lightTheme = *v == "light";
  }
  launch.presentation = parsed->has("--presentation");
  if (const std::string* v = parsed->get("--stage")) {
    auto kind = parseMatrixKind(*v);
    if (!kind)
      return fail(err, optionError("--stage", "unknown stage " + inQuotes(*v) + "; use one of " +
                                                  allMatrixNames()));
    launch.stage = stageIndex(*kind);
  }
  if (const std::string* v = parsed->get("--dialog")) {
    if (*v != "open" && *v != "save-as")
      return fail(err, optionError("--dialog", inQuotes(*v) + " is not open or save-as"));
    launch.dialog = *v;
  }
  Expected<std::string> outPath = checkOutputPath(*parsed, {".png"}, true);
  if (!outPath) return fail(err, outPath.error());
  for (const std::string& written : {*outPath, *outPath + ".json"}) {  // the PNG and its sidecar
    if (Status distinct = path->empty() ? Status(Ok{}) : checkNotAnInput(written, *path); !distinct)
      return fail(err, distinct.error());
  }
  launch.screenshotPath = *outPath;
  if (const std::string* v = parsed->get("--layout-out")) {
    if (v->empty()) return fail(err, optionError("--layout-out", "needs a FILE.json"));
    if (Status distinct = path->empty() ? Status(Ok{}) : checkNotAnInput(*v, *path); !distinct)
      return fail(err, distinct.error());
    launch.layoutOutPath = *v;
  }

  // An image opens the image view (the window checks the file before it opens).
  if (Status image = applyImageScreenshotOptions(
          *path, [&](std::string_view name) { return parsed->get(name); }, launch);
      !image) {
    return fail(err, image.error());
  }
  if (Status attention = applyAttentionScreenshotOptions(
          *path, [&](std::string_view name) { return parsed->get(name); }, launch);
      !attention) {
    return fail(err, attention.error());
  }
  // Check the scenario here so that a bad file gives the same one line as the other
  // commands, and fails before a window is opened.
  // An image or an attention file (.npy / .npz) is checked by the window itself.
  if (Status model = applyModelScreenshotOptions(
          [&](std::string_view name) { return parsed->get(name); }, parsed->has("--pipeline"),
          launch);
      !model) {
    return fail(err, model.error());
  }
  if (launch.imagePath.empty() && classifyPath(*path) != PathKind::AttentionFile && !path->empty()) {
    Expected<Computed> computed = loadAndCompute(*path);
    if (!computed) return fail(err, computed.error());
  }
  out.flush();
  return openWindow(window, launch, "'screenshot'", err);
}

// =======================================================================================
// Dispatch
// =======================================================================================

int dispatch(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
             const WindowRunner& window) {
  if (args.empty()) {
    return fail(err, Error{"", "", "no command given (see attnscope --help)"});
  }
  const std::string& command = args[0];
  std::span<const std::string> rest(args.data() + 1, args.size() - 1);
  if (command == "open") return runOpen(rest, out, err, window);
  if (command == "compute") return runCompute(rest, out, err);
  if (command == "export") return runExport(rest, out, err);
  if (command == "screenshot") return runScreenshot(rest, out, err, window);
  if (command == "bench") return runBench(rest, out, err);
  if (command == "info") return runInfo(rest, out, err);
  if (command == "image") return runImageCommand(rest, out, err);
  if (command == "train") return runTrain(rest, out, err);
  if (command == "model") return runModelCommand(rest, out, err);
  if (command == "--model") return runModelWindow(rest, out, err, window);
  if (command == "--version") {
    out << "attnscope " << kVersion << "\nkernels: " << kernels::activeIsaDescription()
        << "\nmatrix products: OpenBLAS, " << kernels::openblasCoreName() << " kernels\n";
    return 0;
  }
  if (command == "-h" || command == "--help" || command == "help") {
    const std::string topic = args.size() > 1 ? args[1] : "";
    if (topic.empty())
      out << kMainHelp;
    else if (topic == "open")
      out << kOpenHelp;
    else if (topic == "compute")
      out << kComputeHelp;
    else if (topic == "export")
      out << kExportHelp;
    else if (topic == "screenshot")
      out << kScreenshotHelp;
    else if (topic == "bench")
      out << kBenchHelp;
    else if (topic == "info")
      out << kInfoHelp;
    else if (topic == "image")
      out << kImageHelp;
    else if (topic == "train")
      out << trainHelp();
    else if (topic == "model")
      out << kModelHelp;
    else
      return fail(err, Error{"", "", "no help for unknown command " + inQuotes(topic)});
    return 0;
  }
  if (command.ends_with(".json") || command.ends_with(".JSON")) {
    return fail(err, Error{"", "",
                           "unexpected argument " + inQuotes(args.size() > 1 ? args[1] : "") +
                               ": the window takes one SCENARIO file (see attnscope --help)"});
  }
  if (command.starts_with("-")) {
    return fail(err,
                Error{"", "", "unknown option " + inQuotes(command) + " (see attnscope --help)"});
  }
  return fail(err, Error{"", "",
                         "unknown command " + inQuotes(command) +
                             " (commands: open, compute, export, screenshot, info, image, train, "
                             "model, bench; see attnscope --help)"});
}

}  // namespace

// =======================================================================================
// Public
// =======================================================================================

bool isCliArgument(std::string_view arg) {
  return arg == "open" || arg == "compute" || arg == "export" || arg == "screenshot" ||
         arg == "help" ||
         arg == "info" || arg == "image" || arg == "train" || arg == "model" || arg == "bench" ||
         arg.starts_with("-");
}

int openWindow(const WindowRunner& window, const GuiLaunch& launch, std::string_view what,
               std::ostream& err) {
  if (window) return window(launch);
  return cli::fail(err, Error{"", "",
                         std::string(what) +
                             " needs the GUI build: this attnscope was built without the window "
                             "(-DATTNSCOPE_BUILD_GUI=OFF); the headless commands are compute, "
                             "export, info, image, train, model and bench"});
}

int runCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
           const WindowRunner& window) {
  try {
    return dispatch(args, out, err, window);
  } catch (const std::exception& e) {
    err << "attnscope: internal error: " << e.what() << '\n';
    return 1;
  } catch (...) {
    err << "attnscope: internal error\n";
    return 1;
  }
}

int runCli(int argc, char** argv, std::ostream& out, std::ostream& err,
           const WindowRunner& window) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  return runCli(args, out, err, window);
}

std::optional<int> parseIntStrict(std::string_view text, int lo, int hi) {
  int value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value < lo || value > hi) {
    return std::nullopt;
  }
  return value;
}

std::optional<float> parseFloatStrict(std::string_view text) {
  float value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value, std::chars_format::general);
  if (text.empty() || ec != std::errc() || ptr != end || !std::isfinite(value)) {
    return std::nullopt;
  }
  return value;
}

std::optional<WindowSize> parseWindowSize(std::string_view text, int lo, int hi) {
  const auto x = text.find('x');
  if (x == std::string_view::npos) return std::nullopt;
  auto width = parseIntStrict(text.substr(0, x), lo, hi);
  auto height = parseIntStrict(text.substr(x + 1), lo, hi);
  if (!width || !height) return std::nullopt;
  return WindowSize{*width, *height};
}

}  // namespace attn::app
