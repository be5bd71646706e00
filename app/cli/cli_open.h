// `attnscope open FILE [options]`: the window on a file, with the Attention panel's start
// options of `screenshot` (--select L,H, --view, --batch, ...), without a screenshot. This
// is how the Python bridge's show() opens a head (python/attnscope).
#pragma once

#include <ostream>
#include <span>
#include <string>
#include <string_view>

#include "app/cli/cli.h"
#include "app/cli/options.h"

namespace attn::app {

// Checks the options (a bad file or an index out of range: one line, exit 2, no window),
// then runs `window` until it is closed and returns its exit code (the headless build has
// none: exit 2 saying so).
int runOpen(std::span<const std::string> args, std::ostream& out, std::ostream& err,
            const WindowRunner& window);
// Its declared options (the Attention panel's, as for `screenshot FILE.npz`).
cli::CommandInfo openInfo();

}  // namespace attn::app
