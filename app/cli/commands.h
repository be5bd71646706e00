// The CLI's commands, one file each in app/cli/ (cli_open.cpp, compute.cpp, export.cpp, screenshot.cpp, lesson.cpp,
// cli_attention.cpp for info, cli_image.cpp, cli_train.cpp, cli_model.cpp, cli_bench.cpp).
// Each `runX` takes the arguments after the command's name and returns the exit code of
// cli.h; each `xInfo` returns its declared options (name, value, help, choices).
#pragma once

#include <istream>
#include <ostream>
#include <span>
#include <string>

#include "app/cli/cli.h"
#include "app/cli/cli_analysis.h"
#include "app/cli/cli_image.h"
#include "app/cli/cli_model.h"
#include "app/cli/cli_open.h"
#include "app/cli/options.h"

namespace attn::app {

int runCompute(std::span<const std::string> args, std::ostream& out, std::ostream& err);
cli::CommandInfo computeInfo();

// SCENARIO or FILE.npy|FILE.npz (then cli_attention.cpp's runAttentionExport).
int runExport(std::span<const std::string> args, std::ostream& out, std::ostream& err);
cli::CommandInfo exportInfo();

// Opens the window through `window` (cli.h) once every option and the input are checked.
int runScreenshot(std::span<const std::string> args, std::ostream& out, std::ostream& err,
                  const WindowRunner& window);
cli::CommandInfo screenshotInfo();
// --dialog open|save-as|replace (screenshot, open): the built-in file dialog up at start,
// its path field focused; `dialog` = GuiLaunch::dialog.
cli::Option dialogOption(std::string& dialog);

// `lesson SCENARIO --out DECK.pdf|STEPS.gif`: the PDF headless, the GIF through `window`.
int runLesson(std::span<const std::string> args, std::ostream& out, std::ostream& err,
              const WindowRunner& window);
cli::CommandInfo lessonInfo();

// `info FILE [--array NAME] [--batch B] [--layout DIMS] [--tokens FILE] [--scan]`.
int runInfo(std::span<const std::string> args, std::ostream& out, std::ostream& err);
cli::CommandInfo infoInfo();

// `train --out RUN.json [...]`: prints a one-line summary on `out`.
int runTrain(std::span<const std::string> args, std::ostream& out, std::ostream& err);
cli::CommandInfo trainInfo();

// `serve`: answers JSON requests on stdin, one a line, with the models kept loaded
// (cli_serve.cpp; the protocol is in its help and docs/python.md). Returns at end of input.
int runServe(std::span<const std::string> args, std::ostream& out, std::ostream& err);
// serve's loop over `in` (runServe passes std::cin), answers on `out`.
int serveStream(std::istream& in, std::ostream& out);
cli::CommandInfo serveInfo();

// `bench [--n N] ...`: one line of JSON on `out`.
int runBench(std::span<const std::string> args, std::ostream& out, std::ostream& err);
cli::CommandInfo benchInfo();

}  // namespace attn::app
