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

constexpr std::string_view kMainHelp =
    R"(attnscope - see how attention works

usage:
  attnscope                        open the window (restores the last session)
  attnscope SCENARIO.json          open the window on a scenario file
  attnscope open FILE [--select L,H] [--view V] [--batch B]
  attnscope --model DIR [--text T] open the window with a model folder (live attention)
  attnscope compute SCENARIO [--out FILE.json]
  attnscope export SCENARIO --out FILE.png|FILE.svg|FILE.csv [options]
  attnscope screenshot SCENARIO --out FILE.png [--size WxH] [--frames N] [--training STEPS] [--theme T]
  attnscope screenshot [SCENARIO] --model DIR --text T [--select L,H [--pipeline]] --out FILE.png
  attnscope lesson SCENARIO --out DECK.pdf|STEPS.gif [--size WxH] [--theme light|dark]
  attnscope export FILE.npy|FILE.npz --layer L --head H|mean|max --out FILE.png|svg|csv
  attnscope export FILE.npy|FILE.npz --grid --out FILE.png
  attnscope info FILE.npy|FILE.npz [--array NAME] [--batch B] [--layout DIMS] [--scan]
  attnscope image IMAGE --patch P --query R,C --out OUT.png [options]
  attnscope train --out RUN.json [--task reverse --length 8 --model encdec ...]
  attnscope model DIR --text TEXT [--out OUT.npz] [--predict K]
  attnscope analyze DIR --text T --ablate L.H[,L.H...] [--mode zero|mean] [--predict K]
  attnscope analyze DIR --text T --answer A --wrong W --attribution OUT.csv
  attnscope patch DIR --clean T --corrupt T --answer A --wrong W --what heads|resid --out P.csv [--png P.png]
  attnscope lens DIR --text T --top K --out LENS.json
  attnscope heads DIR --text T | --repeat-random N --seed S | --prompts P.jsonl [--shard K/N] --out F
  attnscope merge PART.json... --out HEADS.csv
  attnscope bench [--n N] [--d D] [--heads H] [--threads T] [--repeat R]
  attnscope bench --model DIR [--tokens N] [--decode M] [--threads T] [--repeat R]
  attnscope help [COMMAND] | COMMAND --help
  attnscope --version

commands:
  open        open the window on a file (.json, .npy, .npz, image) with the Attention
              panel's head and tab chosen (--select, --view, ...)
  compute     run the attention mechanism, print every intermediate as JSON
  export      write one heatmap (scores, weights, context, ...) as PNG, SVG or CSV
  screenshot  open the window, render a few frames, save it as PNG and exit
  lesson      the pipeline's step-through, one stage a page with its caption and
              explanation: a PDF deck (headless) or a GIF of the presentation view
  bench       time the multi-head self-attention forward pass (or a model folder's:
              --model DIR), print JSON
  info        list the arrays of an .npy/.npz attention file and its [layers, heads,
              n_q, n_k] as JSON (docs/import.md)
  image       self-attention over the P x P patches of an image, overlay as PNG
  train       train a small attention model on a toy task, write accuracy and alignment
  model       run a model folder on a text: attention of every layer and head
              as .npz, the next-token prediction as JSON
  analyze     ablate heads (zero or mean) and compare the prediction; direct logit
              attribution per head (docs/analyses.md)
  patch       activation patching from a clean into a corrupted prompt, per head or per
              layer and position, as CSV and a heatmap
  lens        the logit lens: top tokens of every layer's residual stream at every position
  heads       previous-token, duplicate-token, induction, sink and entropy scores per head,
              on a text, a repeated random sequence or a prompts file (shards)
  merge       merge the shards of heads --prompts into one table

exit codes: 0 ok, 2 bad input or usage (one line on stderr naming the file, field and
problem), 3 no display / no OpenGL (screenshot, lesson --out FILE.gif), 1 internal error.
)";

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
  if (command == "lesson") return runLesson(rest, out, err, window);
  if (command == "bench") return runBench(rest, out, err);
  if (command == "info") return runInfo(rest, out, err);
  if (command == "image") return runImageCommand(rest, out, err);
  if (command == "train") return runTrain(rest, out, err);
  if (command == "model") return runModelCommand(rest, out, err);
  if (command == "analyze") return runAnalyze(rest, out, err);
  if (command == "patch") return runPatch(rest, out, err);
  if (command == "lens") return runLens(rest, out, err);
  if (command == "heads") return runHeads(rest, out, err);
  if (command == "merge") return runMerge(rest, out, err);
  if (command == "--model") return runModelWindow(rest, out, err, window);
  if (command == "--version") {
    out << "attnscope " << kVersion << "\nkernels: " << kernels::activeIsaDescription()
        << "\nmatrix products: OpenBLAS, " << kernels::openblasCoreName() << " kernels\n";
    return 0;
  }
  if (command == "-h" || command == "--help" || command == "help") {
    const std::string topic = args.size() > 1 ? args[1] : "";
    if (topic.empty()) {
      out << kMainHelp;
      return 0;
    }
    for (const CommandInfo& info : commandDeclarations()) {
      // The command's own --help (generated from its declarations).
      if (info.name == topic) return dispatch({topic, "--help"}, out, err, window);
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
                         "unknown command " + inQuotes(command) +
                             " (commands: open, compute, export, screenshot, lesson, info, image, train, "
                             "model, analyze, patch, lens, heads, merge, bench; see attnscope --help)"});
}

}  // namespace

// =======================================================================================
// Public
// =======================================================================================

std::vector<cli::CommandInfo> commandDeclarations() {
  return {openInfo(),    computeInfo(), exportInfo(),    screenshotInfo(), lessonInfo(),
          infoInfo(),    imageInfo(),
          trainInfo(),   modelInfo(),     analyzeInfo(),    patchInfo(),       lensInfo(),
          headsInfo(),   mergeInfo(),     benchInfo(),      modelWindowInfo()};
}

bool isCliArgument(std::string_view arg) {
  return arg == "open" || arg == "compute" || arg == "export" || arg == "screenshot" ||
         arg == "lesson" || arg == "help" ||
         arg == "info" || arg == "image" || arg == "train" || arg == "model" || arg == "bench" ||
         arg == "analyze" || arg == "patch" || arg == "lens" || arg == "heads" || arg == "merge" ||
         arg.starts_with("-");
}

int openWindow(const WindowRunner& window, const GuiLaunch& launch, std::string_view what,
               std::ostream& err) {
  if (window) return window(launch);
  return cli::fail(err, Error{"", "",
                         std::string(what) +
                             " needs the GUI build: this attnscope was built without the window "
                             "(-DATTNSCOPE_BUILD_GUI=OFF); the headless commands are compute, "
                             "export, info, image, train, model, analyze, patch, lens, heads, merge and bench"});
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
