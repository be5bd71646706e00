// `attnscope image`: self-attention over the patches of an image, headless (see
// docs/images.md). Same contract as the other commands (app/cli.h): exit 0 ok, 2 bad input
// with one line on `err`.
#pragma once

#include <functional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>

#include "app/session/launch.h"
#include "core/base/types.h"

namespace attn::app {

extern const std::string_view kImageHelp;

// args: everything after "image".
int runImageCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err);

// `attnscope screenshot IMAGE ...`: when `path` is an image, sets launch.imagePath and the
// view settings from the options --patch, --query, --temperature and --pos (read through
// `get`, which returns the value or null). For other paths it checks that none of them is
// given. Errors name the option.
Status applyImageScreenshotOptions(const std::string& path,
                                   const std::function<const std::string*(std::string_view)>& get,
                                   GuiLaunch& launch);

}  // namespace attn::app
