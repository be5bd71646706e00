// `attnscope image`: self-attention over the patches of an image, headless (see
// docs/images.md). Same contract as the other commands (app/cli.h): exit 0 ok, 2 bad input
// with one line on `err`.
#pragma once

#include <ostream>
#include <span>
#include <string>
#include <string_view>

namespace attn::app {

extern const std::string_view kImageHelp;

// args: everything after "image".
int runImageCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err);

}  // namespace attn::app
