// AppState operations: undo/redo snapshots, document loading, the recompute step and
// notices. No ImGui, no GL, no GLFW: tests drive all of this without a window.
#include "app/session/app_state.h"

#include "app/session/compute_service.h"

#include <cstdio>
#include <type_traits>
#include <utility>

namespace attn::app {

namespace {

// Keeps the notice list bounded; the UI shows only the recent ones and a scrolling log.
constexpr std::size_t kMaxNotices = 500;

void trimUndo(History& history) {
  while (history.undo.size() > history.maxSteps) history.undo.pop_front();
}

// Records the model state as the baseline (model_snapshot.h): a change since the last one
// that the user made (an ablation, another head shown) first becomes an undo step of its
// own, unless a document edit is open (then it is part of that step). A new model or
// another attention source only moves the baseline.
void closeModelStep(AppState& state) {
  History& history = state.history;
  ModelSnapshot now = takeModelSnapshot(state.model, state.attention, state.image.model);
  if (!history.pending && isModelEdit(history.committedModel, now)) {
    history.undo.push_back({history.committed, history.committedId, history.committedModel});
    trimUndo(history);
    history.redo.clear();
  }
  history.committedModel = std::move(now);
}

// Closes an open document edit (it becomes the step to undo) and any model edit.
void closeSteps(AppState& state) {
  History& history = state.history;
  closeModelStep(state);
  if (!history.pending) return;
  history.committed = SharedScenario::share(state.doc, &history.committed);
  history.committedId = state.contentId;
  history.pending = false;
}

// Moves from the current state to `step` (undo: the newest undo step; redo: the newest
// redo step); the current state goes onto `other`. The document is restored only when the
// step's content differs (a model-only step leaves it and its revision alone).
void restoreStep(AppState& state, std::deque<Snapshot>& from, std::deque<Snapshot>& other) {
  History& history = state.history;
  Snapshot step = std::move(from.back());
  from.pop_back();
  other.push_back({std::move(history.committed), state.contentId, history.committedModel});
  history.committed = std::move(step.doc);
  if (step.contentId != state.contentId) {
    state.doc = history.committed.restore();
    ++state.revision;
  }
  state.contentId = step.contentId;
  history.committedId = state.contentId;
  restoreModelSnapshot(step.model, state.model, state.attention, state.image.model);
  history.committedModel = takeModelSnapshot(state.model, state.attention, state.image.model);
}

}  // namespace

// =======================================================================================
// Shared snapshots
// =======================================================================================

namespace {

// Calls f on every matrix-like field of a scenario, in a fixed order. A field missing here
// is simply copied with the skeleton (correct, only not shared).
template <class F>
void forEachArray(Scenario& s, F&& f) {
  f(s.inputs);
  f(s.queries);
  f(s.keys);
  f(s.values);
  Projections& p = s.options.projections;
  f(p.wq), f(p.bq), f(p.wk), f(p.bk), f(p.wv), f(p.bv), f(p.wo), f(p.bo);
  f(s.inProjWeight), f(s.inProjBias), f(s.outProjWeight), f(s.outProjBias);
  for (ScoreParams& sp : s.options.scoreParams) {
    f(sp.generalW), f(sp.additiveWq), f(sp.additiveWk), f(sp.additiveBias), f(sp.additiveV);
    f(sp.mlpHiddenW), f(sp.mlpHiddenBias), f(sp.mlpOutW);
  }
  f(s.options.mask.custom);
  f(s.options.decoderOutput.wc);
}

template <class M>
bool sameArray(const M& a, const M& b) {
  return a.rows() == b.rows() && a.cols() == b.cols() && (a.size() == 0 || a == b);
}

}  // namespace

SharedScenario SharedScenario::share(Scenario& doc, const SharedScenario* previous) {
  SharedScenario out;
  std::size_t mi = 0, vi = 0, bi = 0;
  // 1 one shared pointer per array: the previous snapshot's when equal, else a new copy,
  //   moved out of `doc` so that copying the skeleton below copies no matrix
  std::vector<Matrix> takenM;
  std::vector<Vector> takenV;
  std::vector<BoolMatrix> takenB;
  auto take = [&](auto& array, auto& list, const auto* previousList, std::size_t& index,
                  auto& taken) {
    using Array = std::decay_t<decltype(array)>;
    if (previousList && index < previousList->size() && sameArray(*(*previousList)[index], array)) {
      list.push_back((*previousList)[index]);
    } else {
      list.push_back(std::make_shared<const Array>(array));
    }
    ++index;
    taken.push_back(std::move(array));
    array = Array();
  };
  forEachArray(doc, [&](auto& array) {
    using Array = std::decay_t<decltype(array)>;
    if constexpr (std::is_same_v<Array, Matrix>)
      take(array, out.matrices_, previous ? &previous->matrices_ : nullptr, mi, takenM);
    else if constexpr (std::is_same_v<Array, Vector>)
      take(array, out.vectors_, previous ? &previous->vectors_ : nullptr, vi, takenV);
    else
      take(array, out.masks_, previous ? &previous->masks_ : nullptr, bi, takenB);
  });
  // 2 the small rest, then the arrays back into `doc`
  out.skeleton_ = doc;
  mi = vi = bi = 0;
  forEachArray(doc, [&](auto& array) {
    using Array = std::decay_t<decltype(array)>;
    if constexpr (std::is_same_v<Array, Matrix>)
      array = std::move(takenM[mi++]);
    else if constexpr (std::is_same_v<Array, Vector>)
      array = std::move(takenV[vi++]);
    else
      array = std::move(takenB[bi++]);
  });
  return out;
}

Scenario SharedScenario::restore() const {
  Scenario doc = skeleton_;
  std::size_t mi = 0, vi = 0, bi = 0;
  forEachArray(doc, [&](auto& array) {
    using Array = std::decay_t<decltype(array)>;
    if constexpr (std::is_same_v<Array, Matrix>)
      array = *matrices_[mi++];
    else if constexpr (std::is_same_v<Array, Vector>)
      array = *vectors_[vi++];
    else
      array = *masks_[bi++];
  });
  return doc;
}

const void* SharedScenario::matrixIdentity(std::size_t i) const {
  if (i < matrices_.size()) return matrices_[i].get();
  i -= matrices_.size();
  if (i < vectors_.size()) return vectors_[i].get();
  i -= vectors_.size();
  return i < masks_.size() ? masks_[i].get() : nullptr;
}

// =======================================================================================
// Undo / redo
// =======================================================================================

void touch(AppState& state) {
  ++state.revision;
  History& history = state.history;
  if (!history.pending) {
    // `committed` is the document as it was before this edit began (panels change `doc`
    // first and call touch() after), so it is the state to return to.
    history.undo.push_back({history.committed, history.committedId, history.committedModel});
    trimUndo(history);
    history.redo.clear();
    history.pending = true;
    state.contentId = ++state.lastContentId;  // a drag coalesced into this step keeps it
  }
}

void applyEdit(AppState& state, const EditOutcome& outcome, double now) {
  if (outcome.changed) touch(state);
  if (!outcome.note.empty()) {
    notify(state, outcome.refused() ? Notice::Kind::Warning : Notice::Kind::Info, outcome.note,
           now);
  }
}

void endFrame(AppState& state, bool anyItemActive) {
  if (anyItemActive) return;  // a drag or text edit is still going on
  closeSteps(state);
}

namespace {

// Drops the steps at the back of `steps` that changed only the model state of a model no
// longer loaded: undoing them would change nothing.
void dropStaleModelSteps(const AppState& state, std::deque<Snapshot>& steps) {
  const ModelSnapshot now = takeModelSnapshot(state.model, state.attention, state.image.model);
  while (!steps.empty() && steps.back().contentId == state.contentId && !belongsToLoaded(steps.back().model, now))
    steps.pop_back();
}

}  // namespace

bool undo(AppState& state) {
  closeSteps(state);  // an edit in progress becomes the step undone
  dropStaleModelSteps(state, state.history.undo);
  if (state.history.undo.empty()) return false;
  restoreStep(state, state.history.undo, state.history.redo);
  return true;
}

bool redo(AppState& state) {
  // A new edit in progress already cleared the redo stack when it began.
  closeSteps(state);
  dropStaleModelSteps(state, state.history.redo);
  if (state.history.redo.empty()) return false;
  restoreStep(state, state.history.redo, state.history.undo);
  trimUndo(state.history);
  return true;
}

// =======================================================================================
// Documents
// =======================================================================================

void loadDocument(AppState& state, Scenario scenario, std::string path) {
  state.preset = scenario;
  state.doc = std::move(scenario);
  state.docPath = std::move(path);
  state.history.undo.clear();
  state.history.redo.clear();
  state.history.pending = false;
  ++state.revision;  // a new revision, so update() recomputes even if the text is the same
  state.contentId = ++state.lastContentId;
  state.history.committed = SharedScenario::share(state.doc, nullptr);
  state.history.committedId = state.contentId;
  state.history.committedModel = takeModelSnapshot(state.model, state.attention, state.image.model);
  state.markSaved();
  ++state.documentsLoaded;  // the window lets go of what it pointed at in the old one (hover)
  // Keep the focused head valid for the new document.
  if (state.view.focusedHead >= state.doc.options.heads) state.view.focusedHead = 0;
}

// =======================================================================================
// Recompute
// =======================================================================================

bool update(AppState& state) {
  if (state.computed->revision == state.revision) return false;
  // Reuse the previous result's buffers when nothing else (a panel's copy, the worker)
  // still holds it.
  std::shared_ptr<Computed> recycle;
  if (state.computed.use_count() == 1 && state.computed->revision != ~0ull) {
    recycle = std::const_pointer_cast<Computed>(std::move(state.computed));
  }
  publishComputed(state, computeDocument(state.doc, state.revision, std::move(recycle)));
  return true;
}

void publishComputed(AppState& state, std::shared_ptr<const Computed> computed) {
  state.computed = std::move(computed);
  const auto& result = state.computed->result;
  if (result && state.view.focusedHead >= static_cast<int>(result->heads.size())) {
    state.view.focusedHead = 0;
  }
}

// =======================================================================================
// Notices
// =======================================================================================

void notify(AppState& state, Notice::Kind kind, std::string text, double now) {
  if (kind == Notice::Kind::Error) std::fprintf(stderr, "attnscope: %s\n", text.c_str());
  state.notices.push_back(Notice{kind, std::move(text), now});
  if (state.notices.size() > kMaxNotices) {
    state.notices.erase(state.notices.begin(),
                        state.notices.begin() + (state.notices.size() - kMaxNotices));
  }
}

}  // namespace attn::app
