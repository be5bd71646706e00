// `attnscope export SCENARIO|FILE.npy|FILE.npz --out FILE.png|svg|csv [options]`: one
// matrix as a heatmap. Steps: 1 options, 2-3 load and compute, 4 the head range, 5 write,
// 6 warnings. An attention file goes on in cli_attention.cpp (runAttentionExport).
#include <limits>
#include <ostream>
#include <span>
#include <string>

#include "app/cli/cli.h"
#include "app/cli/cli_attention.h"
#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "app/session/attention_view.h"
#include "core/attention/selection.h"
#include "render/heatmap_render.h"

namespace attn::app {

using namespace cli;

namespace {

// The options of `export`, declared once: the scenario's (--out, --matrix, --head), the
// heatmap style, and those of attention files (cli_attention.h).
Command exportCommand(ExportOptions& options) {
  Command command;
  command.name = "export";
  command.column = 29;
  command.usage = R"(usage: attnscope export SCENARIO --out FILE.png|FILE.svg|FILE.csv [options]
       attnscope export FILE.npy|FILE.npz --out OUT [--layer L] [--head H|mean|max]
                        [--aggregate rollout] [--array NAME] [--batch B] [--layout DIMS]
                        [--tokens FILE] [style options]

Writes one matrix of the result as a heatmap. The format follows the extension: .png
(raster, for slides), .svg (vector, same layout), .csv (labels and values, full float
precision). The window's export menu writes byte-identical files.
)";
  command.options = {
      // Checked once the input is known (checkOutputPath: the extensions, the folder).
      customOption("--out", "FILE", "output file (required); its folder must exist", nullptr),
      enumOption<MatrixKind>("--matrix", "NAME", "matrix", kAllMatrixKinds,
                             "{choices}", options.matrix),
      textOption("--head", "N|mean",
                 "0-based head, or the mean over heads (scores and weights\n"
                 "only); concat and output ignore it       (default: 0)\n"
                 "attention files: H|mean|max, the mean / max over the layer's heads",
                 options.head),
  };
  for (Option& option : heatmapStyleOptions(options.style)) command.options.push_back(option);
  for (Option& option : section("attention files (a model's saved attention, see docs/import.md)",
                                attentionExportOptions(options)))
    command.options.push_back(option);
  command.notes = R"(The default head is 0 rather than "mean" so that the same command works for every matrix
and every head count; pass --head mean for PyTorch's averaged weights.
NaN or inf values in the exported matrix are reported on stderr as a warning.
)";
  return command;
}

struct ExportRequest {
  std::string scenarioPath;
  std::string outPath;
  MatrixKind matrix = MatrixKind::Weights;
  int head = 0;  // -1 = mean
  io::HeatmapStyle style;
};

Expected<ExportRequest> parseExportRequest(const ParsedArgs& parsed, const ExportOptions& options) {
  ExportRequest request;
  Expected<std::string> path = takeScenarioPath(parsed);
  if (!path) return path.error();
  request.scenarioPath = *path;
  request.matrix = options.matrix;
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
  request.style = options.style;
  // As in the window: signed matrices symmetric about 0 (on the diverging map unless
  // --colormap is given), weights on a fixed 0..1 (io::rangeRule; --range picks another).
  request.style.centreZero = isSignedMatrix(request.matrix);
  request.style.probability = request.matrix == MatrixKind::Weights;
  if (isSignedMatrix(request.matrix) && !parsed.has("--colormap"))
    request.style.colormap = ColormapKind::RdBu;
  finishHeatmapStyle(request.style);
  Expected<std::string> out = checkOutputPath(parsed, {".png", ".svg", ".csv"}, true);
  if (!out) return out.error();
  if (Status distinct = checkNotAnInput(*out, request.scenarioPath); !distinct)
    return distinct.error();
  request.outPath = *out;
  return request;
}

}  // namespace

CommandInfo exportInfo() {
  ExportOptions options;
  return describe(exportCommand(options));
}

int runExport(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  // 1 options
  ExportOptions options;
  const Command command = exportCommand(options);
  int exitCode = 0;
  std::optional<cli::ParsedArgs> parsed = cli::parseOrAnswer(command, args, out, err, exitCode);
  if (!parsed) return exitCode;
  if (parsed->positional.size() == 1 && isAttentionFilePath(parsed->positional[0])) {
    return runAttentionExport(*parsed, options, out, err);
  }
  for (const Option& option : attentionExportOptions(options)) {
    if (parsed->has(option.name))
      return fail(err, optionError(option.name, "is for .npy/.npz attention files"));
  }
  Expected<ExportRequest> request = parseExportRequest(*parsed, options);
  if (!request) return fail(err, request.error());

  // 2-3 load and compute
  Expected<cli::ScenarioRun> computed = loadAndCompute(request->scenarioPath);
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

}  // namespace attn::app
