// The model state of the undo history (see model_snapshot.h).
#include "app/session/model_snapshot.h"

#include "app/session/attention_view.h"  // selectAttentionView

namespace attn::app {

namespace {

bool sameSelection(const io::AttentionSelection& a, const io::AttentionSelection& b) {
  return a.kind == b.kind && a.layer == b.layer && a.head == b.head;
}

// Sets the ablation of a Heads tab's analysis state (the decoder's or encoder's, or the
// ViT's); the bumped revision makes the next update step run the model with it.
void restoreAblation(ModelAnalysisState& analysis, const AblationRequest& ablation) {
  analysis.request.ablation = ablation;
  ++analysis.request.revision;
  analysis.ablateError.clear();
}

}  // namespace

ModelSnapshot takeModelSnapshot(const ModelView& model, const AttentionView& attention, const ImageModelState& image) {
  ModelSnapshot snapshot;
  if (image.vit) {
    snapshot.imageGeneration = image.generation;
    snapshot.imageAblation = image.analysis.request.ablation;
  }
  if (!model.model && !model.encoder) return snapshot;
  snapshot.generation = model.generation;
  snapshot.ablation = model.analysis.request.ablation;
  snapshot.showsRun = model.run && model.run->attention && attention.tensor() == model.run->attention;
  if (snapshot.showsRun) snapshot.selection = attention.selection;
  return snapshot;
}

bool isModelEdit(const ModelSnapshot& before, const ModelSnapshot& now) {
  if (before.imageGeneration == now.imageGeneration && now.imageGeneration != 0 &&
      !(before.imageAblation == now.imageAblation))
    return true;
  if (before.generation != now.generation || now.generation == 0) return false;
  if (!(before.ablation == now.ablation)) return true;
  return before.showsRun && now.showsRun && !sameSelection(before.selection, now.selection);
}

bool belongsToLoaded(const ModelSnapshot& step, const ModelSnapshot& now) {
  return (step.generation != 0 && step.generation == now.generation) ||
         (step.imageGeneration != 0 && step.imageGeneration == now.imageGeneration);
}

bool restoreModelSnapshot(const ModelSnapshot& snapshot, ModelView& model, AttentionView& attention,
                          ImageModelState& image) {
  const ModelSnapshot now = takeModelSnapshot(model, attention, image);
  bool changed = false;
  if (snapshot.imageGeneration != 0 && snapshot.imageGeneration == now.imageGeneration &&
      !(snapshot.imageAblation == now.imageAblation)) {
    restoreAblation(image.analysis, snapshot.imageAblation);
    changed = true;
  }
  if (snapshot.generation == 0 || snapshot.generation != now.generation) return changed;
  if (!(snapshot.ablation == now.ablation)) {
    restoreAblation(model.analysis, snapshot.ablation);
    changed = true;
  }
  if (snapshot.showsRun && now.showsRun && !sameSelection(snapshot.selection, now.selection)) {
    selectAttentionView(attention, snapshot.selection);
    changed = true;
  }
  return changed;
}

}  // namespace attn::app
