// The headless command line: `attnscope COMMAND ...`, `--help`, `--version` (the commands are
// listed once, in cli.cpp's command table).
//
// Every command is a pure function of its arguments that writes to the streams it is given
// and returns the process exit code, so tests can run it in-process as well as through the
// real binary. Exit codes:
//   0  ok (warnings from the computation, if any, are printed to `err` and do not change it)
//   1  internal error (an exception escaped; should never happen)
//   2  bad input or usage: exactly ONE line on `err`,
//      "attnscope: FILE: field 'FIELD': PROBLEM" (attn::Error::message()) or
//      "attnscope: option '--NAME': PROBLEM" for a bad command-line option
//   3  no display / no OpenGL (screenshot only; from the window)
//
// The CLI links no ImGui, GLFW or GL. What opens a window (`screenshot`, `--model DIR`, no
// command) goes through the WindowRunner that main() passes in: app/ui's runGui in the GUI
// build, none in the headless build (-DATTNSCOPE_BUILD_GUI=OFF), where those say so and
// exit 2 after checking their options as usual.
#pragma once

#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "app/cli/options.h"
#include "app/session/launch.h"
#include "app/session/version.h"

namespace attn::app {

// Opens the window on a launch plan and returns the process exit code (runGui's contract).
using WindowRunner = std::function<int(const GuiLaunch&)>;

// Every command's declared options (name, value placeholder, help, accepted words), for a
// man page or a completion script, in the order of the command table (cli.cpp), which also
// holds "--model" (the window with a model).
std::vector<cli::CommandInfo> commandDeclarations();

// True when `arg` (argv[1]) selects the CLI rather than the window: a command name of the
// command table (cli.cpp), "help", or anything starting with '-'.
bool isCliArgument(std::string_view arg);

// One request of `attnscope serve` (cli_serve.cpp): args = a command's name and arguments, run
// as runCli would, with the same exit code and output; the window's commands, serve and
// bench are refused by name (exit 2).
int runServedCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// argv[0] is the program name, argv[1] the command. Never throws. `window` opens the
// window (screenshot, --model DIR); empty in the headless build.
int runCli(int argc, char** argv, std::ostream& out, std::ostream& err,
           const WindowRunner& window = {});
// Same, with the arguments after the program name (args[0] is the command).
int runCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
           const WindowRunner& window = {});

// Runs `window` on `launch`. Without one (the headless build) prints one line on `err`
// saying that `what` ("'screenshot'", "the window") needs the GUI build, and returns 2.
int openWindow(const WindowRunner& window, const GuiLaunch& launch, std::string_view what,
               std::ostream& err);

// ---------------------------------------------------------------------------------------
// Strict number parsing (std::from_chars on the whole text; no spaces, no '+', no
// trailing characters). Public for tests.
// ---------------------------------------------------------------------------------------

// A decimal integer in [lo, hi], else nullopt ("3x", "", "1.0", "0x10", out of range).
std::optional<int> parseIntStrict(std::string_view text, int lo, int hi);
// A finite decimal float ("1", "-0.5", "1e-3"), else nullopt ("nan", "inf", "1,5", "").
std::optional<float> parseFloatStrict(std::string_view text);

struct WindowSize {
  int width = 0, height = 0;
};
// "WxH" with both in [lo, hi] (e.g. "1280x800"), else nullopt.
std::optional<WindowSize> parseWindowSize(std::string_view text, int lo, int hi);

}  // namespace attn::app
