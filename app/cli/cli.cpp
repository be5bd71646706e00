// The headless command line (see cli.h for the contract and exit codes): the main help and
// the dispatch to the commands, one file each (commands.h).
//
// Each command runs the same steps:
//   1 parse the options (declared once, options.h: unknown options, bad numbers, bad names),
//   2 load the input (io::loadScenario and the other readers name the file, field, problem),
//   3 compute, 4 check what needs the result (the head range), 5 write, 6 print warnings.
// Cheap checks come first so a typo in an option never waits for a large scenario.
#include "app/cli/cli.h"

#include <charconv>
#include <cmath>
#include <exception>
#include <span>
#include <system_error>

#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "core/isa/isa.h"

namespace attn::app {
namespace {

using namespace cli;

// =======================================================================================
// The command table: the one list of commands. The main help (usage lines and the
// commands' summaries), the dispatch, isCliArgument, the unknown-command error, the
// headless build's list, commandDeclarations (the man page and bash completion,
// tools/gen_cli_docs.cpp) are all generated from it.
// =======================================================================================

using Run = int (*)(std::span<const std::string>, std::ostream&, std::ostream&,
                    const WindowRunner&);

struct CommandEntry {
  std::string_view name;  // "compute"; "--model" is the window with a model
  // Its lines of the main help's "usage:" block, each after "attnscope ".
  std::vector<std::string_view> usage;
  // Its description in the "commands:" block, lines separated by '\n'; empty: not listed
  // there (the window's --model, described by its usage line).
  std::string_view summary;
  bool headless;  // runs without the window (listed by the headless build's refusal)
  Run run;
  cli::CommandInfo (*info)();
};

// Adapts a command that never opens the window to Run.
template <int (*F)(std::span<const std::string>, std::ostream&, std::ostream&)>
int headlessRun(std::span<const std::string> args, std::ostream& out, std::ostream& err,
                const WindowRunner&) {
  return F(args, out, err);
}

const std::vector<CommandEntry>& commandTable() {
  static const std::vector<CommandEntry> table = {
      {"open",
       {"open FILE [--select L,H] [--view V] [--batch B]"},
       "open the window on a file (.json, .npy, .npz, image) with the Attention\n"
       "panel's head and tab chosen (--select, --view, ...)",
       false, runOpen, openInfo},
      {"--model",
       {"--model DIR|FILE.gguf [--text T]  open the window with a model (live attention)"},
       "", false, runModelWindow, modelWindowInfo},
      {"compute",
       {"compute SCENARIO [--out FILE.json]"},
       "run the attention mechanism, print every intermediate as JSON",
       true, headlessRun<runCompute>, computeInfo},
      {"export",
       {"export SCENARIO --out FILE.png|FILE.svg|FILE.csv [options]",
        "export FILE.npy|FILE.npz --layer L --head H|mean|max --out FILE.png|svg|csv",
        "export FILE.npy|FILE.npz --grid --out FILE.png"},
       "write one heatmap (scores, weights, context, ...) as PNG, SVG or CSV",
       true, headlessRun<runExport>, exportInfo},
      {"screenshot",
       {"screenshot SCENARIO --out FILE.png [--size WxH] [--frames N] [--training STEPS] "
        "[--theme T]",
        "screenshot [SCENARIO] --model DIR|FILE.gguf --text T [--select L,H [--pipeline]] "
        "--out FILE.png"},
       "open the window, render a few frames, save it as PNG and exit",
       false, runScreenshot, screenshotInfo},
      {"lesson",
       {"lesson SCENARIO --out DECK.pdf|STEPS.gif [--size WxH] [--theme light|dark]"},
       "the pipeline's step-through, one stage a page with its caption and\n"
       "explanation: a PDF deck (headless) or a GIF of the presentation view",
       false, runLesson, lessonInfo},
      {"info",
       {"info FILE.npy|FILE.npz [--array NAME] [--batch B] [--layout DIMS] [--scan]"},
       "list the arrays of an .npy/.npz attention file and its [layers, heads,\n"
       "n_q, n_k] as JSON (docs/import.md)",
       true, headlessRun<runInfo>, infoInfo},
      {"image",
       {"image IMAGE --patch P --query R,C --out OUT.png [options]"},
       "self-attention over the P x P patches of an image, overlay as PNG",
       true, headlessRun<runImageCommand>, imageInfo},
      {"train",
       {"train --out RUN.json [--task reverse --length 8 --model encdec ...]"},
       "train a small attention model on a toy task, write accuracy and alignment",
       true, headlessRun<runTrain>, trainInfo},
      {"model",
       {"model DIR|FILE.gguf --text TEXT | --ids I,J,... [--out OUT.npz] [--predict K]",
        "model DIR|FILE.gguf --text T|@FILE | --ids ...|@FILE --summary S.npz [--tile L,H,Q0:Q1,K0:K1 --out T.npy]",
        "model VIT_DIR --image IMG [--out OUT.npz] [--predict K] [--overlay OUT.png]"},
       "run a model (a Hugging Face folder of any family, or a GGUF file) on a\n"
       "text: attention of every layer and head as .npz, the next-token\n"
       "prediction as JSON; long texts (8k-32k tokens): per-head summaries\n"
       "and exact tiles without n x n memory (docs/long-context.md)",
       true, headlessRun<runModelCommand>, modelInfo},
      {"analyze",
       {"analyze MODEL --text T --ablate L.H[,L.H...] [--mode zero|mean] [--predict K]",
        "analyze MODEL --text T --answer A --wrong W --attribution OUT.csv"},
       "ablate heads (zero or mean) and compare the prediction; direct logit\n"
       "attribution per head (docs/analyses.md)",
       true, headlessRun<runAnalyze>, analyzeInfo},
      {"patch",
       {"patch MODEL --clean T --corrupt T --answer A --wrong W [--what heads|resid|"
        "heads-by-position] --out P.csv [--png P.png]",
        "patch VIT_DIR --clean-image IMG --corrupt-image IMG --out P.csv"},
       "activation patching from a clean into a corrupted prompt, per head or per\n"
       "layer and position, as CSV and a heatmap",
       true, headlessRun<runPatch>, patchInfo},
      {"lens",
       {"lens MODEL --text T --top K --out LENS.json"},
       "the logit lens: top tokens of every layer's residual stream at every position",
       true, headlessRun<runLens>, lensInfo},
      {"heads",
       {"heads MODEL --text T | --repeat-random N --seed S | --prompts P.jsonl [--shard K/N] "
        "--out F"},
       "previous-token, duplicate-token, induction, sink and entropy scores per head,\n"
       "on a text, a repeated random sequence or a prompts file (shards)",
       true, headlessRun<runHeads>, headsInfo},
      {"merge",
       {"merge PART.json... --out HEADS.csv"},
       "merge the shards of heads --prompts into one table",
       true, headlessRun<runMerge>, mergeInfo},
      {"bench",
       {"bench [--n N] [--d D] [--heads H] [--threads T] [--repeat R]",
        "bench --model DIR|FILE.gguf [--tokens N] [--decode M] [--threads T] [--repeat R]"},
       "time the multi-head self-attention forward pass (or a model's: --model),\n"
       "print JSON",
       true, headlessRun<runBench>, benchInfo},
      {"serve",
       {"serve  (one JSON request a line on stdin, one answer a line on stdout)"},
       "run commands with the models kept loaded between them: the Python\n"
       "session (python/attnscope's Model; docs/python.md)",
       true, headlessRun<runServe>, serveInfo},
  };
  return table;
}

// "a, b, c and d" (or "a, b, c, d" with `last` = ", ") over the listed commands that pass
// `keep`.
template <class Keep>
std::string commandList(Keep keep, std::string_view last) {
  std::vector<std::string_view> names;
  for (const CommandEntry& entry : commandTable()) {
    if (!entry.summary.empty() && keep(entry)) names.push_back(entry.name);
  }
  std::string list;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) list += i + 1 == names.size() ? last : std::string_view(", ");
    list += names[i];
  }
  return list;
}

// `attnscope --help`: the usage lines and the commands' summaries from the table.
std::string mainHelp() {
  std::string help =
      "attnscope - see how attention works\n\n"
      "usage:\n"
      "  attnscope                        open the window (restores the last session)\n"
      "  attnscope SCENARIO.json          open the window on a scenario file\n";
  for (const CommandEntry& entry : commandTable()) {
    for (std::string_view line : entry.usage) help += "  attnscope " + std::string(line) + "\n";
  }
  help += "  attnscope help [COMMAND] | COMMAND --help\n  attnscope --version\n\ncommands:\n";
  constexpr std::size_t kColumn = 12;  // where the summaries start
  for (const CommandEntry& entry : commandTable()) {
    if (entry.summary.empty()) continue;
    std::string_view rest = entry.summary;
    bool first = true;
    while (!rest.empty()) {
      const std::size_t end = std::min(rest.find('\n'), rest.size());
      std::string lead = first ? "  " + std::string(entry.name) : std::string();
      lead.resize(kColumn + 2, ' ');
      help += lead + std::string(rest.substr(0, end)) + "\n";
      rest.remove_prefix(std::min(end + 1, rest.size()));
      first = false;
    }
  }
  help +=
      "\nexit codes: 0 ok, 2 bad input or usage (one line on stderr naming the file, field and\n"
      "problem), 3 no display / no OpenGL (screenshot, lesson --out FILE.gif), 1 internal "
      "error.\n";
  return help;
}

int dispatch(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
             const WindowRunner& window) {
  if (args.empty()) {
    return fail(err, Error{"", "", "no command given (see attnscope --help)"});
  }
  const std::string& command = args[0];
  std::span<const std::string> rest(args.data() + 1, args.size() - 1);
  for (const CommandEntry& entry : commandTable()) {
    if (command == entry.name) return entry.run(rest, out, err, window);
  }
  if (command == "--version") {
    out << "attnscope " << kVersion << "\nkernels: " << kernels::activeIsaDescription()
        << "\nmatrix products: OpenBLAS, " << kernels::openblasCoreName() << " kernels\n";
    return 0;
  }
  if (command == "-h" || command == "--help" || command == "help") {
    const std::string topic = args.size() > 1 ? args[1] : "";
    if (topic.empty()) {
      out << mainHelp();
      return 0;
    }
    for (const CommandEntry& entry : commandTable()) {
      // The command's own --help (generated from its declarations).
      if (entry.name == topic) return entry.run(std::vector<std::string>{"--help"}, out, err, window);
    }
    return fail(err, Error{"", "", "no help for unknown command " + inQuotes(topic)});
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
                         "unknown command " + inQuotes(command) + " (commands: " +
                             commandList([](const CommandEntry&) { return true; }, ", ") +
                             "; see attnscope --help)"});
}

}  // namespace

// =======================================================================================
// Public
// =======================================================================================

std::vector<cli::CommandInfo> commandDeclarations() {
  std::vector<cli::CommandInfo> infos;
  for (const CommandEntry& entry : commandTable()) infos.push_back(entry.info());
  return infos;
}

int runServedCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (args.empty()) return fail(err, Error{"", "args", "is empty: give a command and its arguments"});
  for (const CommandEntry& entry : commandTable()) {
    if (args[0] != entry.name) continue;
    if (!entry.headless || entry.name == "serve" || entry.name == "bench")
      return fail(err, Error{"", "args", inQuotes(args[0]) +
                                             " does not run inside serve (it opens the window, is serve "
                                             "itself, or times a fresh load: bench); run it on its own"});
    return runCli(args, out, err, WindowRunner{});
  }
  return runCli(args, out, err, WindowRunner{});  // help, --version and the unknown-command error
}

bool isCliArgument(std::string_view arg) {
  if (arg == "help" || arg.starts_with("-")) return true;
  for (const CommandEntry& entry : commandTable()) {
    if (arg == entry.name) return true;
  }
  return false;
}

int openWindow(const WindowRunner& window, const GuiLaunch& launch, std::string_view what,
               std::ostream& err) {
  if (window) return window(launch);
  return cli::fail(err, Error{"", "",
                         std::string(what) +
                             " needs the GUI build: this attnscope was built without the window "
                             "(-DATTNSCOPE_BUILD_GUI=OFF); the headless commands are " +
                             commandList([](const CommandEntry& e) { return e.headless; },
                                         " and ")});
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
  const std::optional<long long> value = cli::parseIntegerStrict(text, lo, hi);
  if (!value) return std::nullopt;
  return static_cast<int>(*value);
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
