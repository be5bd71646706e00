// AppState operations: undo/redo snapshots, document loading, the recompute step and
// notices. No ImGui, no GL, no GLFW: tests drive all of this without a window.
#include "app/app_state.h"

#include "app/compute_service.h"

#include <cstdio>
#include <utility>

namespace attn::app {

namespace {

// Keeps the notice list bounded; the UI shows only the recent ones and a scrolling log.
constexpr std::size_t kMaxNotices = 500;

void trimUndo(History& history) {
  while (history.undo.size() > history.maxSteps) history.undo.pop_front();
}

}  // namespace

// =======================================================================================
// Undo / redo
// =======================================================================================

void touch(AppState& state) {
  ++state.revision;
  History& history = state.history;
  if (!history.pending) {
    // `committed` is the document as it was before this edit began (panels change `doc`
    // first and call touch() after), so it is the state to return to.
    history.undo.push_back({history.committed, history.committedId});
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
  History& history = state.history;
  if (!history.pending || anyItemActive) return;  // a drag or text edit is still going on
  history.committed = state.doc;
  history.committedId = state.contentId;
  history.pending = false;
}

bool undo(AppState& state) {
  History& history = state.history;
  if (history.pending) {  // close an edit in progress so that it becomes the step undone
    history.committed = state.doc;
    history.committedId = state.contentId;
    history.pending = false;
  }
  if (history.undo.empty()) return false;
  history.redo.push_back({std::move(state.doc), state.contentId});
  state.doc = std::move(history.undo.back().doc);
  state.contentId = history.undo.back().contentId;
  history.undo.pop_back();
  history.committed = state.doc;
  history.committedId = state.contentId;
  ++state.revision;
  return true;
}

bool redo(AppState& state) {
  History& history = state.history;
  if (history.pending) {
    // A new edit is in progress: it already cleared the redo stack when it began.
    history.committed = state.doc;
    history.committedId = state.contentId;
    history.pending = false;
  }
  if (history.redo.empty()) return false;
  history.undo.push_back({std::move(state.doc), state.contentId});
  trimUndo(history);
  state.doc = std::move(history.redo.back().doc);
  state.contentId = history.redo.back().contentId;
  history.redo.pop_back();
  history.committed = state.doc;
  history.committedId = state.contentId;
  ++state.revision;
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
  state.history.committed = state.doc;
  state.history.committedId = state.contentId;
  state.markSaved();
  state.hover = Hover{};
  // Keep the focused head valid for the new document.
  if (state.view.focusedHead >= state.doc.heads) state.view.focusedHead = 0;
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
