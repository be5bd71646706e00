// Helpers shared by the CLI commands (one file per command in app/cli/): the one-line
// error output, input and output checks, the heatmap style options, load-and-compute.
#pragma once

#include <initializer_list>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "app/cli/options.h"
#include "core/attention/attention.h"
#include "core/base/types.h"
#include "core/scenario/scenario.h"
#include "formats/files.h"
#include "render/heatmap_render.h"

namespace attn::app::cli {

// Prints "attnscope: MESSAGE" as ONE line on `err` and returns exit code 2.
int fail(std::ostream& err, const Error& error);

// The start every command shares: parses `args` against `command` (options.h). Returns the
// parsed arguments, or nullopt with `exitCode` set when the command is already answered:
// 2 after printing the error (fail()), 0 after printing its --help on `out`.
std::optional<ParsedArgs> parseOrAnswer(const Command& command, std::span<const std::string> args,
                                        std::ostream& out, std::ostream& err, int& exitCode);

// "option '--NAME': PROBLEM", optionally prefixed by the file it was checked against.
Error optionError(std::string_view name, const std::string& problem, std::string file = {});

// Exactly one positional argument (the input file); errors name parsed.command.
Expected<std::string> takeScenarioPath(const ParsedArgs& parsed);

// Lower-case extension with the dot (".png"), or "": the one rule, formats/files.h.
using io::lowerExtension;

// --out must not name one of the command's inputs (the same file, also through a symlink
// or a hard link). Exit-2 error naming --out otherwise.
Status checkNotAnInput(const std::string& outPath, const std::string& inputPath);

// Writes `text` to `path` atomically; the error names the file.
Status writeText(const std::string& path, const std::string& text);

// An output file named by `option`: not empty, its folder exists, not a folder itself.
Status checkOutputFile(std::string_view option, const std::string& path);

// --out FILE: present (when required), not empty, its folder exists and it is not itself a
// folder. `extensions` lists the accepted lower-case extensions (empty = any).
Expected<std::string> checkOutputPath(const ParsedArgs& parsed,
                                      std::initializer_list<std::string_view> extensions,
                                      bool required);

// The help of a --colormap option: "{choices}" (enumOption's list of the names), then one
// line per map of the colormap table (core/scenario/view_options.h): its name and
// description, then `after` when given.
std::string colormapHelp(std::string_view after = {});

// The heatmap options every export shares, declared once, storing into `style`:
// --colormap, --labels, --axis-labels, --no-colorbar, --no-title, --scale, --vmin, --vmax,
// --range, --color-scale, --decimals, --digits. After parsing, finishHeatmapStyle().
std::vector<Option> heatmapStyleOptions(io::HeatmapStyle& style);
// A --vmin or --vmax makes the range fixed.
void finishHeatmapStyle(io::HeatmapStyle& style);

// A scenario's problem and its result.
struct ScenarioRun {
  Problem problem;
  AttentionResult result;
};
// Loads the scenario at `path`, builds its problem and attends (every core). Errors name
// the file.
Expected<ScenarioRun> loadAndCompute(const std::string& path);
// "attnscope: warning: PATH: MESSAGE (CODE)", one line per warning of the result.
void printWarnings(std::ostream& err, const std::string& path, const AttentionResult& result);

}  // namespace attn::app::cli
