#include "app/cli/cli_open.h"

#include "app/cli/cli_attention.h"
#include "app/cli/cli_common.h"

namespace attn::app {

using cli::fail;

const std::string_view kOpenHelp =
    R"(usage: attnscope open FILE [--select L,H] [--view V] [--batch B] [options]

Opens the window on FILE, as `attnscope FILE` does, with the Attention panel set up by the
options below when FILE is an attention file (.npy / .npz). A bad file or an index out of
the file's range fails before the window opens (one line, exit 2).

options:
  --select L,H        the head shown (A)                                (default: 0,0)
  --view V            heatmap | head | text | focus | compare: the tab shown
  --compare FILE|L,H  compare with head L,H of the same file, or with A's head of FILE
  --drop-special      drop the special tokens' keys and renormalise the rows
  --focus q:N|k:N     focus query row N or key column N (opens the Focus tab)
  --array NAME        the array of an .npz
  --batch B           item of a batch dimension                        (default: 0)
  --layout DIMS       letters b l h q k ending in qk (default by ndim: qk, hqk, lhqk, blhqk)
  --tokens FILE       token labels (.json list or .txt lines) instead of the side file
  -h, --help          show this help
)";

namespace {

constexpr cli::OptionSpec kOpenOptions[] = {
    {"--view", true},  {"--select", true}, {"--compare", true}, {"--drop-special", false},
    {"--focus", true}, {"--array", true},  {"--batch", true},   {"--layout", true},
    {"--tokens", true}};

}  // namespace

int runOpen(std::span<const std::string> args, std::ostream& out, std::ostream& err,
            const WindowRunner& window) {
  // 1 options
  Expected<cli::ParsedArgs> parsed = cli::parseArgs("open", args, kOpenOptions);
  if (!parsed) return fail(err, parsed.error());
  if (parsed->help) {
    out << kOpenHelp;
    return 0;
  }
  Expected<std::string> path = cli::takeScenarioPath("open", *parsed);
  if (!path) return fail(err, path.error());
  // 2 the launch plan, checked against the file
  GuiLaunch launch;
  launch.scenarioPath = *path;
  if (Status attention = applyAttentionScreenshotOptions(
          *path, [&](std::string_view name) { return parsed->get(name); }, launch);
      !attention) {
    return fail(err, attention.error());
  }
  // 3 the window
  out.flush();
  return openWindow(window, launch, "'open'", err);
}

}  // namespace attn::app
