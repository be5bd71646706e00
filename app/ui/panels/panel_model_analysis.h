// The Model panel's analysis parts (issue 21), apart from panel_model.cpp so that the model
// families and the analyses each keep their own file: the Heads tab of every kind (click a head to ablate
// it, colour and sort the heads by a score; panel_model_heads.cpp) and the prediction of an
// ablated run beside the clean one (panel_model_prediction.cpp). They edit
// state.model.analysis through app/session/model_analysis.h and never compute.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>

#include "app/session/app_state.h"
#include "app/ui/widgets/heatmap_widget.h"

namespace attn::app {

// "Open this head in the pipeline" for the head the Attention panel shows of `run` (a
// decoder's or an encoder's; app/session/head_scenario.h): disabled until one head is
// picked; the scenario goes to ModelView::pipelineRequest.
void drawHeadButton(AppState& state, const ModelRun& run);

// What the Heads tab of one model shows and edits, for every kind (decoder, encoder, ViT).
struct HeadsTab {
  HeadsTab(ModelAnalysisState& analysis, const RunAnalysis* result, int layers, int heads, int tokens)
      : analysis(analysis), result(result), layers(layers), heads(heads), tokens(tokens) {}
  ModelAnalysisState& analysis;  // the panel's request (ablation, score, order)
  const RunAnalysis* result;     // the shown run's answer (null: none yet)
  int layers = 0, heads = 0;
  int tokens = 0;         // of the run: the entropy's colour range is 0..ln tokens
  bool tokenIds = true;   // false (ViT patches): duplicate token and induction are not offered
  bool copying = true;    // the copying score (a decoder's W_E·W_OV·W_U)
  std::optional<model::HeadId> shown;     // the head on screen elsewhere (a yellow frame)
  std::function<void(int, int)> show;     // a right-click on head (layer, head); empty: none
  std::string showWhat = "show it in the Attention panel";  // the right-click's tooltip
};

// The Heads tab: ablation mode and list, the score controls, `card` (when set), the L x H
// grid of heads (a click toggles the head's ablation; coloured by the picked score,
// optionally ordered by it within each layer) and the heads listed by that score.
void drawHeadsTab(const HeadsTab& tab, const std::function<void()>& card = {});
// The tab of a decoder's run (with the circuits card of the head the Attention panel shows),
// of an encoder's run (state.model.encoder) and of the Image panel's vision transformer.
void drawModelHeads(AppState& state, const ModelRun& run);
void drawEncoderHeads(AppState& state, const ModelRun& run);
void drawVitHeads(ImageModelState& image);

// A table of an ablated run's top-K (`what`: "token" or "label"; p, Δp, Δlogit against the
// clean run).
void drawPredictionChanges(const char* id, std::span<const PredictionChange> changes, const char* what = "token");
// An encoder's fill-mask with heads ablated: per mask token, drawPredictionChanges. A ViT's
// labels with heads ablated, the same. Return false (nothing drawn) when nothing is
// ablated, so the caller draws the plain prediction.
bool drawAblatedFillMask(const ModelRun& run);
bool drawAblatedLabels(const ImageModelRun& run);

// When the run on screen has heads ablated: its top-K with the change in probability and
// logit against the clean run, and the loss clean → ablated. Returns false (nothing drawn)
// otherwise, so the caller draws the plain prediction.
bool drawAblatedPrediction(const ModelRun& run);

// True once to bring the Heads tab to the front (a score picked elsewhere, a screenshot
// with --ablate / --head-score); clears the request.
bool takeHeadsTabRequest(AppState& state);

}  // namespace attn::app
