// The model state that the window's undo history keeps beside the scenario (issue 32, point
// 7): the heads ablated in the Model panel (and the ablation mode), the head the Attention
// panel shows of the model's run, and the heads ablated in the Image panel's Heads tab of a
// vision transformer. One history, not a second stack: each undo step
// (app/session/app_state.h, Snapshot) carries the model state it had, so Ctrl+Z after an
// ablation brings back the un-ablated run, and an interleaved scenario edit and ablation
// undo in the order they were made.
//
// A snapshot belongs to one loaded model (`generation`; `imageGeneration` for the ViT): a
// step taken on another model is left alone by undo (its heads may not exist in this one), and loading a model or showing
// another attention source moves the baseline without making a step. Plain data, no ImGui.
#pragma once

#include <cstdint>

#include "app/session/attention_view.h"
#include "app/session/image_model.h"
#include "app/session/model_view.h"

namespace attn::app {

struct ModelSnapshot {
  std::uint64_t generation = 0;      // ModelView::generation when taken; 0 = no model loaded
  AblationRequest ablation;          // the ablated heads and the mode
  bool showsRun = false;             // the Attention panel showed the model's run
  io::AttentionSelection selection;  // the head (or mean, max, rollout) it showed of it
  std::uint64_t imageGeneration = 0;  // ImageModelState::generation; 0 = no ViT loaded
  AblationRequest imageAblation;      // the ViT's ablated heads and the mode
};

// The model state now. `generation` is 0 when neither a decoder nor an encoder is loaded;
// `selection` is the Attention panel's only while it shows `model`'s newest run;
// `imageGeneration` is 0 when no ViT is loaded.
ModelSnapshot takeModelSnapshot(const ModelView& model, const AttentionView& attention, const ImageModelState& image);

// True when going from `before` to `now` is an edit the user can undo: the same model, and
// the ablation differs, or both show the model's run and the selection differs; or the same
// ViT and its ablation differs. A new model (another generation) or a change of what the
// Attention panel shows is not.
bool isModelEdit(const ModelSnapshot& before, const ModelSnapshot& now);

// True when undoing `step` could change something of `now`: it was taken on the decoder or
// encoder loaded now, or on the ViT loaded now.
bool belongsToLoaded(const ModelSnapshot& step, const ModelSnapshot& now);

// Brings `snapshot` back where it belongs to the models loaded now (same generation): the
// ablation (bumping the analysis request's revision, so the next update step runs the model
// again: synchronously in tests and screenshots, on the worker in the window), the
// selection when the Attention panel shows the run now and showed it then, and the ViT's
// ablation. Returns true when something changed.
bool restoreModelSnapshot(const ModelSnapshot& snapshot, ModelView& model, AttentionView& attention,
                          ImageModelState& image);

}  // namespace attn::app
