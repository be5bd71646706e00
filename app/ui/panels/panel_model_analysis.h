// The Model panel's analysis parts (issue 21), apart from panel_model.cpp so that the model
// families and the analyses each keep their own file: the Heads tab (click a head to ablate
// it, colour and sort the heads by a score; panel_model_heads.cpp) and the prediction of an
// ablated run beside the clean one (panel_model_prediction.cpp). They edit
// state.model.analysis through app/session/model_analysis.h and never compute.
#pragma once

#include "app/session/app_state.h"
#include "app/ui/widgets/heatmap_widget.h"

namespace attn::app {

// The Heads tab: ablation mode and list, the L x H grid of heads (a click toggles the head's
// ablation; coloured by the picked score, optionally ordered by it within each layer) and
// the heads listed by that score.
void drawModelHeads(AppState& state, const ModelRun& run);

// When the run on screen has heads ablated: its top-K with the change in probability and
// logit against the clean run, and the loss clean → ablated. Returns false (nothing drawn)
// otherwise, so the caller draws the plain prediction.
bool drawAblatedPrediction(const ModelRun& run);

// True once to bring the Heads tab to the front (a score picked elsewhere, a screenshot
// with --ablate / --head-score); clears the request.
bool takeHeadsTabRequest(AppState& state);

}  // namespace attn::app
