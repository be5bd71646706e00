// `attnscope image`: self-attention over the patches of an image, headless (see
// docs/images.md). Same contract as the other commands (app/cli.h): exit 0 ok, 2 bad input
// with one line on `err`.
#pragma once

#include <functional>
#include <optional>
#include <vector>
#include <ostream>
#include <span>
#include <string>
#include <string_view>

#include "app/session/launch.h"
#include "app/cli/options.h"
#include "core/attention/patches.h"
#include "core/base/types.h"

namespace attn::app {

// The image view's settings that `image` and `screenshot IMAGE` share (--patch, --query,
// --temperature, --pos); 0 / -1 / "" = not given.
struct ImageViewSettings {
  int patch = 0;
  int queryRow = -1, queryCol = -1;
  float temperature = 0;
  std::optional<PatchPositional> positional;
  std::string positionalName;
};
// Those four options, declared once, storing into `view`.
std::vector<cli::Option> imageViewOptions(ImageViewSettings& view);

// The options of `image` (name, value, help), for --help, man pages and completion.
cli::CommandInfo imageInfo();

// args: everything after "image".
int runImageCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err);

// `attnscope screenshot IMAGE ...`: when `path` is an image, sets launch.imagePath and the
// view settings from `view` and checks the file; for other paths it checks that none of
// the image options was given. Errors name the option or the file.
Status checkImageScreenshot(const std::string& path, const cli::ParsedArgs& parsed,
                           const ImageViewSettings& view, GuiLaunch& launch);

}  // namespace attn::app
