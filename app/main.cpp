// attnscope's entry point: only dispatch. No arguments or one scenario file opens the
// window (app/ui/shell/gui.h); a command or an option runs the headless CLI (app/cli/cli.h).
// The headless build (-DATTNSCOPE_BUILD_GUI=OFF) has no window: the CLI says so where one
// is asked for.
#include <iostream>

#include "app/cli/cli.h"
#if ATTNSCOPE_WITH_GUI
#include "app/ui/shell/gui.h"
#endif

int main(int argc, char** argv) {
#if ATTNSCOPE_WITH_GUI
  const attn::app::WindowRunner window = attn::app::runGui;
#else
  const attn::app::WindowRunner window;
#endif
  if (argc <= 1) return attn::app::openWindow(window, {}, "the window", std::cerr);
  if (argc == 2 && !attn::app::isCliArgument(argv[1])) {
    attn::app::GuiLaunch launch;
    launch.scenarioPath = argv[1];
    return attn::app::openWindow(window, launch, "the window", std::cerr);
  }
  return attn::app::runCli(argc, argv, std::cout, std::cerr, window);
}
