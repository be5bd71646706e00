// Helpers shared by the CLI commands (app/cli.cpp and app/cli_<command>.cpp): option
// parsing, the one-line error output, output-path and heatmap-style options.
#pragma once

#include <initializer_list>
#include <map>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/types.h"
#include "render/heatmap_render.h"

namespace attn::app::cli {

// Prints "attnscope: MESSAGE" as ONE line on `err` and returns exit code 2.
int fail(std::ostream& err, const Error& error);

// "option '--NAME': PROBLEM", optionally prefixed by the file it was checked against.
Error optionError(std::string_view name, const std::string& problem, std::string file = {});

std::string inQuotes(std::string_view text);

struct OptionSpec {
  std::string_view name;  // "--out"
  bool takesValue;
};

struct ParsedArgs {
  std::vector<std::string> positional;
  std::map<std::string, std::string, std::less<>> values;  // last one wins
  bool help = false;

  bool has(std::string_view name) const { return values.find(name) != values.end(); }
  const std::string* get(std::string_view name) const {
    auto it = values.find(name);
    return it == values.end() ? nullptr : &it->second;
  }
};

// Accepts "--name value", "--name=value", flags, "-h"/"--help" and "--" (end of options).
// A value may start with '-' (e.g. "--vmin -1") but not with "--", which is taken as a
// forgotten value. Unknown options are errors naming `command`.
Expected<ParsedArgs> parseArgs(std::string_view command, std::span<const std::string> args,
                               std::span<const OptionSpec> specs);

// Exactly one positional argument (the input file).
Expected<std::string> takeScenarioPath(std::string_view command, const ParsedArgs& parsed);

// The value of an on|off option.
Expected<bool> parseOnOff(std::string_view name, std::string_view value);

// Lower-case extension with the dot (".png"), or "".
std::string lowerExtension(const std::string& path);

// --out FILE: present (when required), not empty, its folder exists and it is not itself a
// folder. `extensions` lists the accepted lower-case extensions (empty = any).
// --out must not name one of the command's inputs (the same file, also through a symlink
// or a hard link). Exit-2 error naming --out otherwise.
Status checkNotAnInput(const std::string& outPath, const std::string& inputPath);

// An output file named by `option`: not empty, its folder exists, not a folder itself.
Status checkOutputFile(std::string_view option, const std::string& path);

Expected<std::string> checkOutputPath(const ParsedArgs& parsed,
                                      std::initializer_list<std::string_view> extensions,
                                      bool required);

// The heatmap options every export shares: --colormap, --labels, --axis-labels,
// --no-colorbar, --no-title, --scale, --decimals, --vmin, --vmax (see kExportHelp).
Status parseHeatmapStyle(const ParsedArgs& parsed, io::HeatmapStyle& style);

}  // namespace attn::app::cli
