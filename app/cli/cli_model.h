// `attnscope model DIR --text TEXT --out OUT.npz [--predict K]`: run a model
// headless and save every layer's and head's attention (see modelCommand in cli_model.cpp and docs/models.md).
#pragma once

#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <functional>
#include <vector>

#include "app/cli/cli.h"
#include "app/cli/options.h"
#include "app/session/launch.h"
#include "core/base/types.h"

namespace attn::app {

// The options of `model` and of `--model DIR` (name, value, help), for --help, man pages
// and completion.
cli::CommandInfo modelInfo();
cli::CommandInfo modelWindowInfo();

// The `model` command (args after "model"). Exit codes as in cli.h.
int runModelCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err);

// `attnscope --model DIR [--text TEXT]` (args after "--model"): the window with the model
// loaded (on its worker) and TEXT in the Model panel.
int runModelWindow(std::span<const std::string> args, std::ostream& out, std::ostream& err,
                   const WindowRunner& window);

// `attnscope screenshot --model DIR ...`: --model, --text, --image and --pipeline, declared
// once, storing into `launch`, `pipeline` and `picture` (--image PICTURE, which the caller
// takes as the IMAGE positional).
std::vector<cli::Option> modelScreenshotOptions(GuiLaunch& launch, bool& pipeline, std::string& picture);
// After parsing: without --model, --text, --image and --pipeline are refused; --image on a
// text model and --text on a vision transformer are refused; --pipeline needs --select L,H.
// Errors name the option.
Status checkModelScreenshot(const cli::ParsedArgs& parsed, bool pipeline, GuiLaunch& launch);

}  // namespace attn::app
