// `attnscope model DIR --text TEXT --out OUT.npz [--predict K]`: run a GPT-2-family model
// headless and save every layer's and head's attention (see kModelHelp and docs/models.md).
#pragma once

#include <ostream>
#include <span>
#include <string>
#include <string_view>

namespace attn::app {

extern const std::string_view kModelHelp;

// The `model` command (args after "model"). Exit codes as in cli.h.
int runModelCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err);

}  // namespace attn::app
