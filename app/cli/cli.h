// The headless command line: `attnscope compute|export|screenshot|bench|--help|--version`.
//
// Every command is a pure function of its arguments that writes to the streams it is given
// and returns the process exit code, so tests can run it in-process as well as through the
// real binary. Exit codes:
//   0  ok (warnings from the computation, if any, are printed to `err` and do not change it)
//   1  internal error (an exception escaped; should never happen)
//   2  bad input or usage: exactly ONE line on `err`,
//      "attnscope: FILE: field 'FIELD': PROBLEM" (attn::Error::message()) or
//      "attnscope: option '--NAME': PROBLEM" for a bad command-line option
//   3  no display / no OpenGL (screenshot only; from app::runGui)
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace attn::app {

// Kept in step with project(attnscope VERSION ...) in CMakeLists.txt.
inline constexpr std::string_view kVersion = "0.1.0";

// True when `arg` (argv[1]) selects the CLI rather than the window: a command name
// ("compute", "export", "screenshot", "image", "train", "model", "bench", "help") or anything
// starting with '-'.
bool isCliArgument(std::string_view arg);

// argv[0] is the program name, argv[1] the command. Never throws.
int runCli(int argc, char** argv, std::ostream& out, std::ostream& err);
// Same, with the arguments after the program name (args[0] is the command).
int runCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

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
