// `attnscope model DIR --text TEXT --out OUT.npz [--predict K]`: run a GPT-2-family model
// headless and save every layer's and head's attention (see kModelHelp and docs/models.md).
#pragma once

#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <functional>

#include "app/cli/cli.h"
#include "app/session/launch.h"
#include "core/base/types.h"

namespace attn::app {

extern const std::string_view kModelHelp;

// The `model` command (args after "model"). Exit codes as in cli.h.
int runModelCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err);

extern const std::string_view kModelWindowHelp;

// `attnscope --model DIR [--text TEXT]` (args after "--model"): the window with the model
// loaded (on its worker) and TEXT in the Model panel.
int runModelWindow(std::span<const std::string> args, std::ostream& out, std::ostream& err,
                   const WindowRunner& window);

// `attnscope screenshot --model DIR ...`: sets launch.modelFolder and the model options
// --text, --head L,H and --pipeline (read through `get`; `has` for the flag). Without
// --model none of them may be given. Errors name the option.
Status applyModelScreenshotOptions(const std::function<const std::string*(std::string_view)>& get,
                                   bool pipeline, GuiLaunch& launch);

}  // namespace attn::app
