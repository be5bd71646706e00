// The model state of the undo history (see model_snapshot.h).
#include "app/session/model_snapshot.h"

#include "app/session/attention_view.h"  // selectAttentionView

namespace attn::app {

namespace {

bool sameSelection(const io::AttentionSelection& a, const io::AttentionSelection& b) {
  return a.kind == b.kind && a.layer == b.layer && a.head == b.head;
}

}  // namespace

ModelSnapshot takeModelSnapshot(const ModelView& model, const AttentionView& attention) {
  ModelSnapshot snapshot;
  if (!model.model && !model.encoder) return snapshot;
  snapshot.generation = model.generation;
  snapshot.ablation = model.analysis.request.ablation;
  snapshot.showsRun = model.run && model.run->attention && attention.tensor() == model.run->attention;
  if (snapshot.showsRun) snapshot.selection = attention.selection;
  return snapshot;
}

bool isModelEdit(const ModelSnapshot& before, const ModelSnapshot& now) {
  if (before.generation != now.generation || now.generation == 0) return false;
  if (!(before.ablation == now.ablation)) return true;
  return before.showsRun && now.showsRun && !sameSelection(before.selection, now.selection);
}

bool restoreModelSnapshot(const ModelSnapshot& snapshot, ModelView& model, AttentionView& attention) {
  const ModelSnapshot now = takeModelSnapshot(model, attention);
  if (snapshot.generation == 0 || snapshot.generation != now.generation) return false;
  bool changed = false;
  if (!(snapshot.ablation == now.ablation)) {
    ModelAnalysisState& analysis = model.analysis;
    analysis.request.ablation = snapshot.ablation;
    ++analysis.request.revision;  // the next update step runs the model with it
    analysis.ablateError.clear();
    changed = true;
  }
  if (snapshot.showsRun && now.showsRun && !sameSelection(snapshot.selection, now.selection)) {
    selectAttentionView(attention, snapshot.selection);
    changed = true;
  }
  return changed;
}

}  // namespace attn::app
