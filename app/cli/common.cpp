// Helpers shared by the CLI commands (cli_common.h): the one-line errors, the input and
// output checks, the heatmap style options, load-and-compute and the warnings.
#include "app/cli/cli_common.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <memory>
#include <system_error>

#include "app/cli/cli.h"
#include "core/scenario/scenario.h"
#include "core/scenario/view_options.h"
#include "formats/files.h"
#include "formats/scenario_json.h"

namespace attn::app::cli {

namespace fs = std::filesystem;


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


// Exactly one positional argument: the scenario file.
Expected<std::string> takeScenarioPath(const ParsedArgs& parsed) {
  const std::string& command = parsed.command;
  if (parsed.positional.empty()) {
    return Error{"", "",
                 inQuotes(command) + " needs a SCENARIO file (see attnscope " +
                     std::string(command) + " --help)"};
  }
  if (parsed.positional.size() > 1) {
    return Error{"", "",
                 "unexpected argument " + inQuotes(parsed.positional[1]) + " for '" +
                     std::string(command) + "' (only one SCENARIO file)"};
  }
  return parsed.positional[0];
}

Status writeText(const std::string& path, const std::string& text) {
  if (Status s = io::writeFileAtomic(path, text); !s) return io::withFile(s.error(), path);
  return Ok{};
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

// --out must not name one of the command's inputs (the same file, also through a symlink
// or a hard link): `compute X.json --out X.json` would replace the scenario by its result.
Status checkNotAnInput(const std::string& outPath, const std::string& inputPath) {
  if (outPath.empty() || !io::sameFile(outPath, inputPath)) return Ok{};
  return optionError("--out", inQuotes(outPath) + " is the input file " + inQuotes(inputPath) +
                                  "; writing it would destroy the input (choose another file)");
}


// =======================================================================================
// The heatmap style options every export shares
// =======================================================================================

std::string colormapHelp(std::string_view after) {
  std::size_t width = 0;
  for (const ColormapInfo& map : kColormaps) width = std::max(width, map.name.size());
  std::string help = "{choices}";
  for (const ColormapInfo& map : kColormaps) {
    help += "\n  " + std::string(map.name) + std::string(width - map.name.size() + 2, ' ');
    help += map.description;
  }
  if (!after.empty()) help += "\n" + std::string(after);
  return help;
}

std::vector<Option> heatmapStyleOptions(io::HeatmapStyle& style) {
  auto onOff = [](bool& target) {
    return [&target](const std::string& v) -> Status {
      if (v == "on") target = true;
      else if (v == "off") target = false;
      else return Error{"", "", inQuotes(v) + " is not 'on' or 'off'"};
      return Ok{};
    };
  };
  // --vmin's text, for the error when it is not below --vmax.
  auto vminText = std::make_shared<std::string>();
  auto bound = [&style, vminText](bool upper) {
    return [&style, upper, vminText](const std::string& v) -> Status {
      auto x = parseFloatStrict(v);
      if (!x) return Error{"", "", inQuotes(v) + " is not a finite number"};
      (upper ? style.vmax : style.vmin) = *x;
      if (!upper) *vminText = v;
      if (upper && style.vmin && !(*style.vmin < *x)) {
        return optionError("--vmin",
                           "must be less than --vmax (" + *vminText + " >= " + v + ")");
      }
      return Ok{};
    };
  };
  std::vector<Option> options = {
      withDefault(enumOption<ColormapKind>("--colormap", "NAME", "colormap", kAllColormaps,
                                           colormapHelp("(default: viridis for weights; rdbu "
                                                        "centred on 0 for the signed\nmatrices)"),
                                           style.colormap),
                  ""),  // the default depends on the matrix, as the help says
      withDefault(customOption("--labels", "on|off", "numbers in the cells",
                               onOff(style.cellLabels)),
                  style.cellLabels ? "on" : "off"),
      withDefault(customOption("--axis-labels", "on|off", "token labels on the axes",
                               onOff(style.axisLabels)),
                  style.axisLabels ? "on" : "off"),
      customOption("--no-colorbar", "", "leave out the colour bar",
                   [&style](const std::string&) {
                     style.colorbar = false;
                     return Status(Ok{});
                   }),
      customOption("--no-title", "", "leave out the title",
                   [&style](const std::string&) {
                     style.title = false;
                     return Status(Ok{});
                   }),
      withDefault(customOption("--scale", "N",
                   "1..8, multiplies every size (resolution)",
                   [&style](const std::string& v) -> Status {
                     // "--scale log" / "--scale linear" name the colour scale (as
                     // --color-scale does); a number is the resolution.
                     if (auto colorScale = parseColorScaleKind(v)) {
                       style.colorScale = *colorScale;
                       return Ok{};
                     }
                     auto n = parseIntStrict(v, 1, 8);
                     if (!n)
                       return Error{"", "", inQuotes(v) +
                                                " is not an integer in 1..8 (the resolution) nor "
                                                "'linear' or 'log' (the colour scale)"};
                     style.resolution = *n;
                     return Ok{};
                   }),
          std::to_string(style.resolution)),
      customOption("--vmin", "X", "fixed colour range (default: by --range)",
                   bound(false)),
      customOption("--vmax", "Y", "the top of the fixed colour range", bound(true)),
      withDefault(customOption(
          "--range", "{choices}",
          "colour range: auto = by meaning (weights 0..1, signed matrices\n"
          "symmetric about 0, others their finite min..max); minmax = the\n"
          "matrix's own finite min..max; row = each row's own min..max\n"
          "(the colour bar reads \"row min\" .. \"row max\"); fixed =\n"
          "--vmin/--vmax (given alone they mean fixed). The title names the\n"
          "rule (\"fixed 0-1\"). 'global' reads as auto.",
          [&style](const std::string& v) -> Status {
            auto mode = parseRangeMode(v);
            if (!mode)
              return Error{"", "", "unknown range " + inQuotes(v) + "; use auto, minmax, row or fixed"};
            const bool fixedEnds = style.vmin || style.vmax;
            if (*mode == RangeMode::Fixed && !fixedEnds)
              return Error{"", "", "'fixed' needs --vmin and/or --vmax"};
            if (*mode != RangeMode::Fixed && fixedEnds)
              return Error{"", "", inQuotes(v) + " contradicts --vmin/--vmax (a fixed range)"};
            style.range = *mode;
            return Ok{};
          },
          {"auto", "minmax", "row", "fixed"}),
          std::string(toString(style.range))),
      withDefault(customOption(
          "--color-scale", "{choices}",
          "log: log10 colours from max(smallest positive value, largest\n"
          "x 1e-4) to the largest, colour bar ticks at decades; zeros at\n"
          "the bottom, masked cells hatched. Also '--scale log'.",
          [&style](const std::string& v) -> Status {
            auto colorScale = parseColorScaleKind(v);
            if (!colorScale)
              return Error{"", "", "unknown colour scale " + inQuotes(v) + "; use linear or log"};
            style.colorScale = *colorScale;
            return Ok{};
          },
          {"linear", "log"}),
          std::string(toString(style.colorScale))),
      customOption("--decimals", "N", "older spelling: --digits N+1 (at most 9)",
                   [&style](const std::string& v) -> Status {
                     auto n = parseIntStrict(v, 0, 9);
                     if (!n) return Error{"", "", inQuotes(v) + " is not an integer in 0..9"};
                     style.digits = std::min(*n + 1, 9);
                     return Ok{};
                   }),
      withDefault(customOption("--digits", "N",
                   "1..9 significant digits in cells and ticks; labels\n"
                   "that do not fit drop digits",
                   [&style](const std::string& v) -> Status {
                     auto n = parseIntStrict(v, 1, 9);
                     if (!n) return Error{"", "", inQuotes(v) + " is not an integer in 1..9"};
                     style.digits = *n;
                     return Ok{};
                   }),
          std::to_string(style.digits)),
  };
  return options;
}

void finishHeatmapStyle(io::HeatmapStyle& style) {
  if (style.vmin || style.vmax) style.range = RangeMode::Fixed;
}

// =======================================================================================
// Shared steps: load, compute, warnings
// =======================================================================================

Expected<ScenarioRun> loadAndCompute(const std::string& path) {
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
  return ScenarioRun{std::move(problem).value(), std::move(result)};
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

std::optional<ParsedArgs> parseOrAnswer(const Command& command, std::span<const std::string> args,
                                        std::ostream& out, std::ostream& err, int& exitCode) {
  Expected<ParsedArgs> parsed = parseCommand(command, args);
  if (!parsed) {
    exitCode = fail(err, parsed.error());
    return std::nullopt;
  }
  if (parsed->help) {
    out << helpText(command);
    exitCode = 0;
    return std::nullopt;
  }
  return std::move(parsed).value();
}

}  // namespace attn::app::cli
