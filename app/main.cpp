// attnscope's entry point: only dispatch. No arguments or one scenario file opens the
// window (app/gui.h); a command or an option runs the headless CLI (app/cli.h).
#include <iostream>

#include "app/cli/cli.h"
#include "app/ui/shell/gui.h"

int main(int argc, char** argv) {
  if (argc <= 1) return attn::app::runGui({});
  if (argc == 2 && !attn::app::isCliArgument(argv[1])) {
    attn::app::GuiLaunch launch;
    launch.scenarioPath = argv[1];
    return attn::app::runGui(launch);
  }
  return attn::app::runCli(argc, argv, std::cout, std::cerr);
}
