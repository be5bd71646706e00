// Internal to the Pipeline panel (app/ui/panels/panel_pipeline.cpp): its step and zoom
// keys, the presentation toolbar (app/ui/panels/panel_pipeline_chrome.cpp) and the options
// of a presented heatmap. Not for other panels.
#pragma once

#include <string>
#include <vector>

#include "app/session/app_state.h"
#include "app/ui/widgets/heatmap_widget.h"

namespace attn::app::pipeline {

// The keyboard zoom asked for this frame (presentation: + / - / 0).
struct KeyZoom {
  int steps = 0;
  bool reset = false;
};

// Takes the frame's queued keys (state.panels.stepKeys) and applies the steps to the view
// (applyPipelineKeys) over the `visible` stages; Escape ends a spotlight before it goes back
// a level (presentation). Returns the keyboard zoom asked for (presentation only).
KeyZoom handleStepKeys(AppState& state, HeatmapCache& heatmaps,
                       const std::vector<MatrixKind>& visible);

// A tooltip, but none in presentation (nothing floats over a projected page).
void tip(bool presenting, const std::string& text);

// Presentation: sets state.panels.chromeShown, true while the pointer moves, for
// kChromeSeconds after it stops, while a menu of the toolbar is open or a warning of the last
// kNoticeSeconds stands in it; always true outside presentation.
void updateChrome(AppState& state, bool presenting);

// The page turner of presentation (the toolbar shows it).
struct PageNav {
  int page = 0, pages = 1;
  int* stored = nullptr;  // state.view.presentationPage (null: no pages, the stage alone)
};

// The toolbar: head, stepping buttons, presentation on / off, the step; in presentation also
// the pages and the newest problem (or the keys' hint), cut to the line.
void drawToolbar(AppState& state, const std::vector<MatrixKind>& visible, const PageNav& nav);

// Presentation: the toolbar in a window of its own over the top of the page while
// state.panels.chromeShown; the page under it keeps its place either way.
void drawChromeWindow(AppState& state, const std::vector<MatrixKind>& visible,
                      const PageNav& nav);

// The smallest cell numbers in presentation, in font heights: io::kLabelFloor, and with the
// Classroom text size the same pixels as the Normal size's floor.
float leastNumberScale(const AppState& state);

// A presented heatmap's options: no hover tooltip (a click inspects), the spotlight, numbers
// that grow with their cells (down to leastNumberScale), and `zoom` when `zoomed`.
void presentationOptions(HeatmapOptions& options, const AppState& state, const KeyZoom& zoom,
                         bool zoomed);

}  // namespace attn::app::pipeline
