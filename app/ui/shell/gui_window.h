// The window as an object, for runGui() and the frame-time harness (bench/bench_frame.cpp):
// open() sets up GLFW, OpenGL and ImGui and loads the document, frame() runs one iteration
// of the canonical loop, close() tears everything down.
#pragma once

#include <memory>
#include <string>

#include "app/session/app_state.h"
#include "app/ui/shell/gui.h"
#include "app/ui/widgets/heatmap_widget.h"

namespace attn::app {

class GuiWindow {
 public:
  struct Options {
    bool vsync = true;  // forced off in screenshot mode
    // Block in glfwWaitEventsTimeout while nothing changes (the interactive app); off for
    // the frame benchmark, which times back-to-back frames. Never in screenshot mode.
    bool waitWhenIdle = false;
  };

  GuiWindow();
  ~GuiWindow();
  GuiWindow(const GuiWindow&) = delete;
  GuiWindow& operator=(const GuiWindow&) = delete;

  // Returns 0 when the window is open, else the exit code (2 bad scenario, 3 no display /
  // no OpenGL) after printing one line to stderr.
  int open(const GuiLaunch& launch, const Options& options);
  // One frame: events, shortcuts, menu, panels, notices, undo step, recompute, render,
  // screenshot, swap. Returns false when the loop should end (window closed and confirmed,
  // or the screenshot was taken).
  bool frame();
  // Where the last frame's time went: building the UI on the CPU (events, panels, update,
  // uploads) and rendering (draw data to GL, screenshot, swap; on llvmpipe this is the
  // software rasteriser). uiCpuMs and renderCpuMs are the same two parts in the window
  // thread's own CPU time (CLOCK_THREAD_CPUTIME_ID: not the wait for a core on a loaded
  // machine, not llvmpipe's rasteriser threads).
  struct FrameTiming {
    double uiMs = 0, renderMs = 0;
    double uiCpuMs = 0, renderCpuMs = 0;
  };
  FrameTiming lastFrameTiming() const;
  // Exit code of the loop (0, or 2 when the screenshot could not be written).
  int exitCode() const;
  void close();

  AppState& state();
  HeatmapCache& heatmaps();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace attn::app
