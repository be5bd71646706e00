// CLI commands for real attention tensors (.npy / .npz, formats/attention_file.h):
// `attnscope export FILE.npy|FILE.npz ...` and `attnscope info FILE.npy|FILE.npz`.
#pragma once

#include <functional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>

#include "app/cli/cli_common.h"
#include "app/cli/options.h"
#include "core/attention/selection.h"
#include "formats/attention_file.h"
#include "render/heatmap_render.h"
#include "app/session/launch.h"

namespace attn::app {

// True when `path` ends in .npy or .npz (any case): `export` then reads it as attention.
bool isAttentionFilePath(std::string_view path);

// What `export` reads from its options (declared once in export.cpp and below).
struct ExportOptions {
  MatrixKind matrix = MatrixKind::Weights;  // --matrix (scenarios)
  std::string head;  // --head: N|mean for a scenario, H|mean|max for an attention file
  io::HeatmapStyle style;
  // Attention files only:
  io::AttentionOpenOptions open;  // --array --batch --layout --tokens
  int layer = 0;                  // --layer L
  bool lastLayer = false;         // --layer rollout: up to the last layer
  bool rollout = false;           // --layer rollout or --aggregate rollout
  bool grid = false;              // --grid
};

// --array, --batch, --layout, --tokens (export, info, screenshot), storing into `open`.
std::vector<cli::Option> attentionOpenOptions(io::AttentionOpenOptions& open);
// The export options that only make sense for attention files (a scenario export refuses
// them): --layer, --aggregate, the open options, --grid.
std::vector<cli::Option> attentionExportOptions(ExportOptions& options);

// `export` on an attention file; `parsed` and `options` hold the parsed export options
// (one positional FILE).
int runAttentionExport(const cli::ParsedArgs& parsed, const ExportOptions& options,
                       std::ostream& out, std::ostream& err);

// `screenshot FILE.npy|FILE.npz` options that set up the Attention panel (storing into
// `start`): --view heatmap|head|text|focus|compare, --select L,H, --compare FILE|L,H,
// --drop-special, --focus q:N|k:N and the open options.
std::vector<cli::Option> attentionScreenshotOptions(GuiLaunch::AttentionStart& start);
// After parsing: refuses those options for a path that is not an attention file (unless
// --model is given), then opens the file as the window will, so that a bad file or an
// out-of-range --select / --compare L,H / --focus fails with one line naming the valid
// range (an .npz of several arrays with no --array is left to the window's chooser).
Status checkAttentionScreenshot(const std::string& path, const cli::ParsedArgs& parsed,
                                GuiLaunch& launch);


}  // namespace attn::app
