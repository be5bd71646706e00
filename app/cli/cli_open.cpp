// `attnscope open FILE [options]`: the window on a file, with the Attention panel set up
// by the same option declarations as `screenshot` (attentionScreenshotOptions).
#include "app/cli/cli_open.h"

#include "app/cli/cli_attention.h"
#include "app/cli/cli_common.h"
#include "app/cli/commands.h"

namespace attn::app {

using namespace cli;

namespace {

Command openCommand(GuiLaunch& launch) {
  Command command;
  command.name = "open";
  command.column = 20;
  command.usage =
      R"(usage: attnscope open FILE [--select L,H] [--view V] [--batch B] [options]

Opens the window on FILE, as `attnscope FILE` does, with the Attention panel set up by the
options below when FILE is an attention file (.npy / .npz). A bad file or an index out of
the file's range fails before the window opens (one line, exit 2).
)";
  command.options = attentionScreenshotOptions(launch.attention);
  command.options.push_back(dialogOption(launch.dialog));
  return command;
}

}  // namespace

CommandInfo openInfo() {
  GuiLaunch launch;
  return describe(openCommand(launch));
}

int runOpen(std::span<const std::string> args, std::ostream& out, std::ostream& err,
            const WindowRunner& window) {
  // 1 options
  GuiLaunch launch;
  const Command command = openCommand(launch);
  int exitCode = 0;
  std::optional<cli::ParsedArgs> parsed = cli::parseOrAnswer(command, args, out, err, exitCode);
  if (!parsed) return exitCode;
  Expected<std::string> path = takeScenarioPath(*parsed);
  if (!path) return fail(err, path.error());
  // 2 the launch plan, checked against the file
  launch.scenarioPath = *path;
  if (Status attention = checkAttentionScreenshot(*path, *parsed, launch); !attention)
    return fail(err, attention.error());
  // 3 the window
  out.flush();
  return openWindow(window, launch, "'open'", err);
}

}  // namespace attn::app
