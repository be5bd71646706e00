// `attnscope screenshot SCENARIO|IMAGE|FILE.npy|FILE.npz --out FILE.png [options]`: the
// window's launch plan (app/session/launch.h) from the command line, checked before any
// window opens; then the window renders a few frames and saves itself as PNG.
// Every option is declared once below or by the feature it sets up (the image view, the
// Attention panel, the model), and stores straight into the launch plan.
#include <ostream>
#include <span>
#include <string>

#include "app/cli/cli.h"
#include "app/cli/cli_analysis.h"
#include "app/cli/cli_attention.h"
#include "app/cli/cli_common.h"
#include "app/cli/cli_image.h"
#include "app/cli/cli_model.h"
#include "app/cli/commands.h"
#include "app/session/app_state.h"
#include "app/session/attention_source.h"
#include "app/session/attention_view.h"
#include "app/session/workspace_names.h"
#include "core/attention/selection.h"

namespace attn::app {

using namespace cli;

namespace {

// What the options fill: the launch plan, and what is checked once all are read.
struct ScreenshotArgs {
  GuiLaunch launch;
  ImageViewSettings image;
  bool pipeline = false;
  std::string picture;  // --image PICTURE (a vision transformer's input; the IMAGE positional)
};

void append(std::vector<Option>& to, std::vector<Option> from) {
  for (Option& option : from) to.push_back(std::move(option));
}

// The options of `screenshot`, declared once.
Command screenshotCommand(ScreenshotArgs& args) {
  GuiLaunch& launch = args.launch;
  Command command;
  command.name = "screenshot";
  command.column = 20;
  command.usage =
      R"(usage: attnscope screenshot SCENARIO|IMAGE|FILE.npy|FILE.npz --out FILE.png [--size WxH]
                                   [--frames N] [--training STEPS] [--theme T]
                                   [--presentation] [--stage NAME] [--dialog open|save-as|replace]
                                   [--layout-out FILE.json] [--workspace NAME]
       attnscope screenshot [SCENARIO] --model DIR --text TEXT --out FILE.png [...]
       attnscope screenshot --model VIT_DIR --image PICTURE --out FILE.png [...]

Opens the window on the scenario (without reading or writing the autosave), renders N
frames, saves the window as PNG and exits. An attention file (.npy / .npz) opens in the
Attention panel over the default scenario. A model folder (--model DIR) opens in the
Model and Attention panels and runs on --text; a vision transformer (vit, deit) runs on a
picture instead: --model VIT_DIR --image PICTURE (or the PICTURE as IMAGE), shown in the
Image panel with the model's attention over its patches. Needs a display; without one use
  xvfb-run -a -s '-screen 0 1600x1000x24' attnscope screenshot SCENARIO --out shot.png
)";
  command.options = {
      // Checked after parsing (checkOutputPath: .png, the folder, not an input).
      customOption("--out", "FILE.png", "output file (required); its folder must exist", nullptr),
      withDefault(customOption("--size", "WxH", "window size, each 64..8192",
                   [&launch](const std::string& v) -> Status {
                     auto size = parseWindowSize(v, 64, 8192);
                     if (!size) return Error{"", "", inQuotes(v) + " is not WxH with both in 64..8192"};
                     launch.width = size->width;
                     launch.height = size->height;
                     return Ok{};
                   }),
                  std::to_string(launch.width) + "x" + std::to_string(launch.height)),
      intOption("--frames", "N", 1, 10000, "frames to render before saving, 1..10000",
                launch.frames),
      customOption("--training", "STEPS",
                   "show the Training panel after STEPS steps (0..100000) of its default\n"
                   "run (reverse, L 8, V 10, encoder-decoder, dot; seed 1): reproducible",
                   [&launch](const std::string& v) -> Status {
                     auto n = parseIntegerStrict(v, 0, 100000);
                     if (!n) return Error{"", "", inQuotes(v) + " is not an integer in 0..100000"};
                     launch.trainingSteps = *n;
                     return Ok{};
                   }),
      customOption("--theme", "T", "light (projector) or dark                    (default: the file's view)",
                   [&launch](const std::string& v) -> Status {
                     if (v != "light" && v != "dark")
                       return Error{"", "", inQuotes(v) + " is not light or dark"};
                     launch.lightTheme = v == "light";
                     return Ok{};
                   },
                   {"light", "dark"}),
      withDefault(customOption("--text-size", "S",
                   "normal (15 px, 22.5 in presentation) or classroom (22 px, 33 in\n"
                   "presentation; there x height/800 in a taller window), as View > Text\n"
                   "size",
                   [&launch](const std::string& v) -> Status {
                     if (v != "normal" && v != "classroom")
                       return Error{"", "", inQuotes(v) + " is not normal or classroom"};
                     launch.classroomText = v == "classroom";
                     return Ok{};
                   },
                   {"normal", "classroom"}),
                  "normal"),  // classroomText unset: View > Text size's own default
      flagOption("--presentation",
                 "presentation mode (F5 in the window): the pipeline alone, full window,\n"
                 "large type, stages in rows and pages that fit; the Image view for an\n"
                 "image, the Training panel with --training",
                 launch.presentation),
      customOption("--stage", "NAME",
                   "make NAME the current pipeline stage ({choices});\n"
                   "with --presentation it is shown alone, full screen, with its\n"
                   "explanation under it",
                   [&launch](const std::string& v) -> Status {
                     auto kind = parseMatrixKind(v);
                     if (!kind) {
                       std::vector<std::string> names;
                       for (MatrixKind k : kAllMatrixKinds) names.emplace_back(toString(k));
                       return Error{"", "", "unknown stage " + inQuotes(v) + "; use one of " +
                                                joinWords(names, ", ")};
                     }
                     launch.stage = stageIndex(*kind);
                     return Ok{};
                   },
                   [] {
                     std::vector<std::string> names;
                     for (MatrixKind k : kAllMatrixKinds) names.emplace_back(toString(k));
                     return names;
                   }()),
      // Checked after parsing (needs a name, and not the input).
      customOption("--layout-out", "FILE.json",
                   "also write what was drawn: window [w, h], font_px, every text\n"
                   "{text, x, y, w, h, px} read back from the frame's draw data, and every\n"
                   "heatmap with its stage, title, rect [x, y, w, h], bounds, rows, cols,\n"
                   "cell [w, h], numbers_drawn, cells {visible, numbered, hatched},\n"
                   "row_labels / col_labels (as drawn, \"\" = skipped), range [lo, hi],\n"
                   "range_rule (fixed|symmetric|minmax|row), colormap; and the workspace\n"
                   "with every panel window drawn {id, name, rect [x, y, w, h]}",
                   nullptr),
      dialogOption(launch.dialog),
      customOption("--workspace", "NAME",
                   "tile the window as the workspace NAME of its toolbar\n(" + workspaceIds() +
                       "), switched to once everything is open\n"
                   "(default: the one the opened files lead to; an unknown NAME is refused\n"
                   "by the window, naming the workspaces)",
                   [&launch](const std::string& v) -> Status {
                     if (v.empty()) return Error{"", "", "needs a workspace NAME"};
                     launch.workspace = v;
                     return Ok{};
                   }),
  };
  append(command.options,
         section("when SCENARIO is an image (PNG, JPEG, ...), the Image view, as in `attnscope image`",
                 imageViewOptions(args.image)));
  append(command.options,
         section("when it is an attention file (.npy / .npz), the Attention panel",
                 attentionScreenshotOptions(launch.attention)));
  append(command.options,
         section("a model folder (SCENARIO may then be left out); a vision transformer's\n"
                 "  (vit, deit) runs on the picture: --model VIT_DIR --image PICTURE",
                 modelScreenshotOptions(launch, args.pipeline, args.picture)));
  append(command.options,
         section("with --model, the analyses (docs/analyses.md): ablation, head scores, patching",
                 modelAnalysisScreenshotOptions(launch)));
  command.notes =
      R"(An index out of the attention file's range (--select, --compare L,H, --focus) is an
error. The Attention panel's options (--select, --view, --focus, ...) apply to the model's
attention with --model.
)";
  return command;
}

}  // namespace

cli::Option dialogOption(std::string& dialog) {
  return customOption("--dialog", "D",
                      "{choices}: show attnscope's own file dialog (the built-in one, as\n"
                      "when no zenity or kdialog is found) listing the current folder;\n"
                      "replace: Save As over the scenario's own file, asking to replace it",
                      [&dialog](const std::string& v) -> Status {
                        if (v != "open" && v != "save-as" && v != "replace")
                          return Error{"", "", inQuotes(v) + " is not open, save-as or replace"};
                        dialog = v;
                        return Ok{};
                      },
                      {"open", "save-as", "replace"});
}

CommandInfo screenshotInfo() {
  ScreenshotArgs args;
  return describe(screenshotCommand(args));
}

int runScreenshot(std::span<const std::string> args, std::ostream& out, std::ostream& err,
                  const WindowRunner& window) {
  ScreenshotArgs shot;
  const Command command = screenshotCommand(shot);
  int exitCode = 0;
  std::optional<cli::ParsedArgs> parsed = cli::parseOrAnswer(command, args, out, err, exitCode);
  if (!parsed) return exitCode;
  // With --model the SCENARIO may be left out (the default one); --image PICTURE is the
  // picture given as an option (a vision transformer's input), in the positional's place.
  if (parsed->has("--image") && !parsed->positional.empty())
    return fail(err, optionError("--image", inQuotes(parsed->positional.front()) +
                                                " is given besides --image PICTURE: give the picture once, as IMAGE "
                                                "or as --image PICTURE, not both (a flag such as --pipeline takes "
                                                "no value)"));
  Expected<std::string> path = parsed->has("--image") ? Expected<std::string>(shot.picture)
                               : parsed->has("--model") && parsed->positional.empty()
                                   ? Expected<std::string>(std::string())
                                   : takeScenarioPath(*parsed);
  if (!path) return fail(err, path.error());

  GuiLaunch& launch = shot.launch;
  launch.scenarioPath = *path;
  launch.noAutosave = true;
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

  // Each feature checks its part of the plan: an image opens the image view (its file is
  // checked here), an attention file the Attention panel (its indices against the file),
  // a model folder the Model panel.
  if (Status image = checkImageScreenshot(*path, *parsed, shot.image, launch); !image)
    return fail(err, image.error());
  if (Status attention = checkAttentionScreenshot(*path, *parsed, launch); !attention)
    return fail(err, attention.error());
  if (Status model = checkModelScreenshot(*parsed, shot.pipeline, launch); !model)
    return fail(err, model.error());
  if (Status analysis = checkModelAnalysisScreenshot(*parsed, launch); !analysis)
    return fail(err, analysis.error());
  // Check the scenario here so that a bad file gives the same one line as the other
  // commands, and fails before a window is opened. An image or an attention file (.npy /
  // .npz) is checked above.
  if (launch.imagePath.empty() && classifyPath(*path) != PathKind::AttentionFile &&
      !path->empty()) {
    Expected<cli::ScenarioRun> computed = loadAndCompute(*path);
    if (!computed) return fail(err, computed.error());
  }
  out.flush();
  return openWindow(window, launch, "'screenshot'", err);
}

}  // namespace attn::app
