// `attnscope lesson SCENARIO --out DECK.pdf|STEPS.gif [--size WxH] [--theme light|dark]
// [--delay SECONDS]`: the pipeline's step-through as a PDF deck (headless: app/session/lesson.h,
// render/lesson_pdf.h) or a GIF of the window's presentation view (app/ui/shell/gui_lesson.cpp,
// which needs a display).
#include <cmath>
#include <ostream>
#include <span>
#include <string>

#include <cctype>
#include <cstdlib>

#include "app/cli/cli.h"
#include "app/cli/cli_common.h"
#include "formats/files.h"
#include "app/cli/commands.h"
#include "app/session/lesson.h"
#include "formats/scenario_json.h"
#include "render/lesson_pdf.h"

namespace attn::app {

using namespace cli;

namespace {

struct LessonArgs {
  int width = 1920, height = 1080;
  bool light = true;
  double delaySeconds = 4;
};

Command lessonCommand(LessonArgs& args) {
  Command command;
  command.name = "lesson";
  command.column = 20;
  command.usage =
      R"(usage: attnscope lesson SCENARIO --out DECK.pdf|STEPS.gif [--size WxH] [--theme T]
                               [--delay SECONDS]

The step-through of the pipeline, one stage a page (PDF) or a frame (GIF), from the inputs
X (and W_q, W_k, W_v when the scenario projects) to the output, each with the stage's
caption and the explanation of one of its cells, as the window's stage-alone view shows
them. The PDF is vector (the heatmaps as in `attnscope export`, the text real text) and
needs no display. The GIF is the window's presentation view at the given size, so it
needs a display; without one use
  xvfb-run -a -s '-screen 0 1920x1080x24' attnscope lesson SCENARIO --out steps.gif
)";
  command.options = {
      customOption("--out", "FILE", "DECK.pdf or STEPS.gif (required); its folder must exist",
                   nullptr),
      withDefault(customOption("--size", "WxH",
                   "page or frame size in pixels, each 320..8192; a PDF page is\n"
                   "half that in points (960 x 540 pt for 1920x1080)",
                   [&args](const std::string& v) -> Status {
                     auto size = parseWindowSize(v, 320, 8192);
                     if (!size)
                       return Error{"", "", inQuotes(v) + " is not WxH with both in 320..8192"};
                     args.width = size->width;
                     args.height = size->height;
                     return Ok{};
                   }),
                  std::to_string(args.width) + "x" + std::to_string(args.height)),
      withDefault(customOption("--theme", "T", "light (projector) or dark",
                   [&args](const std::string& v) -> Status {
                     if (v != "light" && v != "dark")
                       return Error{"", "", inQuotes(v) + " is not light or dark"};
                     args.light = v == "light";
                     return Ok{};
                   },
                   {"light", "dark"}),
                  args.light ? "light" : "dark"),
      withDefault(customOption("--delay", "SECONDS",
                   "how long each GIF frame shows, 0.01..600",
                   [&args](const std::string& v) -> Status {
                     char* end = nullptr;
                     const double seconds = std::strtod(v.c_str(), &end);
                     if (v.empty() || end != v.c_str() + v.size() || !std::isfinite(seconds) ||
                         seconds < 0.01 || seconds > 600)
                       return Error{"", "", inQuotes(v) + " is not a number of seconds in 0.01..600"};
                     args.delaySeconds = seconds;
                     return Ok{};
                   }),
                  formatDefault(args.delaySeconds)),
  };
  return command;
}

}  // namespace

CommandInfo lessonInfo() {
  LessonArgs args;
  return describe(lessonCommand(args));
}

int runLesson(std::span<const std::string> args, std::ostream& out, std::ostream& err,
              const WindowRunner& window) {
  LessonArgs lesson;
  const Command command = lessonCommand(lesson);
  int exitCode = 0;
  std::optional<cli::ParsedArgs> parsed = cli::parseOrAnswer(command, args, out, err, exitCode);
  if (!parsed) return exitCode;
  Expected<std::string> path = takeScenarioPath(*parsed);
  if (!path) return fail(err, path.error());
  Expected<std::string> outPath = checkOutputPath(*parsed, {".pdf", ".gif"}, true);
  if (!outPath) return fail(err, outPath.error());
  if (Status distinct = checkNotAnInput(*outPath, *path); !distinct) return fail(err, distinct.error());
  Expected<Scenario> scenario = io::loadScenario(*path);
  if (!scenario) {
    Error error = scenario.error();
    if (error.file.empty()) error.file = *path;
    return fail(err, error);
  }
  Expected<std::unique_ptr<Lesson>> built = buildLesson(*scenario);
  if (!built) {
    Error error = built.error();
    if (error.file.empty()) error.file = *path;
    return fail(err, error);
  }
  if (io::lowerExtension(*outPath) == ".pdf") {
    io::LessonDeck deck;
    deck.title = scenario->name;
    deck.settings = lessonSettingsLine(*scenario);
    deck.width = lesson.width;
    deck.height = lesson.height;
    deck.light = lesson.light;
    if (Status written = io::writeLessonPdf(deck, lessonPages(**built), *outPath); !written)
      return fail(err, written.error());
    out << "wrote " << *outPath << " (" << (*built)->stages.size() << " pages)\n";
    return 0;
  }
  // The GIF: the window's presentation view, one stage at a time.
  GuiLaunch launch;
  launch.scenarioPath = *path;
  launch.noAutosave = true;
  launch.width = lesson.width;
  launch.height = lesson.height;
  launch.lightTheme = lesson.light;
  launch.presentation = true;
  launch.lessonGifPath = *outPath;
  launch.lessonDelayCs = std::max(1, static_cast<int>(std::lround(lesson.delaySeconds * 100)));
  out.flush();
  const int code = openWindow(window, launch, "'lesson --out FILE.gif'", err);
  if (code == 0) out << "wrote " << *outPath << " (" << (*built)->stages.size() << " frames)\n";
  return code;
}

}  // namespace attn::app
