// `attnscope train`: trains a small attention model without a window (see kTrainHelp).
#pragma once

#include <ostream>
#include <span>
#include <string>
#include <string_view>

namespace attn::app {

// The --help text of the command.
std::string_view trainHelp();

// args: everything after "train". Returns the exit code (0 ok, 2 bad option with one line
// on `err`). Prints a one-line summary on `out`.
int runTrain(std::span<const std::string> args, std::ostream& out, std::ostream& err);

}  // namespace attn::app
