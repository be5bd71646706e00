// Internal to the Pipeline panel (app/ui/panels/panel_pipeline.cpp): its step and zoom
// keys, the presentation toolbar (app/ui/panels/panel_pipeline_chrome.cpp) and the options
// of a presented heatmap. Not for other panels.
#pragma once

#include <string>
#include <vector>

#include "app/session/app_state.h"
#include "app/ui/panels/presentation.h"
#include "app/ui/widgets/heatmap_widget.h"

namespace attn::app::pipeline {

// Presentation's shared parts (app/ui/panels/presentation.h): the keyboard zoom, the
// tooltip that presentation drops, the chrome that hides, presented heatmaps' options.
using present::KeyZoom;
using present::leastNumberScale;
using present::presentationOptions;
using present::tip;
using present::updateChrome;

// Takes the frame's queued keys (present::takeKeys: popups, the spotlight, the zoom) and
// applies the steps to the view (applyPipelineKeys) over the `visible` stages. Returns the
// keyboard zoom asked for (presentation only).
KeyZoom handleStepKeys(AppState& state, UiState& ui,
                       const std::vector<MatrixKind>& visible);

// The page turner of presentation (the toolbar shows it).
struct PageNav {
  int page = 0, pages = 1;
  int* stored = nullptr;  // state.view.presentationPage (null: no pages, the stage alone)
};

// The toolbar: head, stepping buttons, presentation on / off, the step; in presentation also
// the pages and the newest problem (or the keys' hint), cut to the line.
void drawToolbar(AppState& state, const std::vector<MatrixKind>& visible, const PageNav& nav);

// Presentation: the toolbar in a window of its own over the top of the page while
// ui.scratch.chromeShown; the page under it keeps its place either way.
void drawChromeWindow(AppState& state, const UiState& ui, const std::vector<MatrixKind>& visible,
                      const PageNav& nav);

}  // namespace attn::app::pipeline
