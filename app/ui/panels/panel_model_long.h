// The Model panel's summary view of a long input (issue 29, point 4; panel_model_long.cpp):
// the pass's progress bar and Cancel, the layer x head grid coloured by a summary (a click
// selects the head), the selected head's row strips and column-sum track, and the zoomable
// heatmap of its exact weights. It edits state.model.longContext
// (app/session/long_context_service.h) and never computes.
#pragma once

#include "app/session/app_state.h"
#include "app/ui/panels/ui_state.h"

namespace attn::app {

// Draws the summary view of `run` (a ModelRun::longInput) into the current window.
void drawLongContextView(AppState& state, UiState& ui, const ModelRun& run);

}  // namespace attn::app
