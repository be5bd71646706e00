// Entry point of the window (GLFW + OpenGL 3.3 + Dear ImGui). main.cpp calls runGui() when
// no CLI command is given, and the CLI's `screenshot` command calls it with a screenshot
// request. Owned by the GUI; the CLI only fills GuiLaunch.
#pragma once

#include <optional>
#include <string>

#include "app/session/launch.h"

namespace attn::app {


// Opens the window and runs until it is closed. Returns the process exit code:
// 0 ok, 2 bad input (the scenario file; the error line is printed to stderr),
// 3 no display / no OpenGL (one clear line on stderr naming the headless commands).
int runGui(const GuiLaunch& launch);

}  // namespace attn::app
