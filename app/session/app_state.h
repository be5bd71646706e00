// The plain state that panels edit. Panels never compute: they change `doc` (the scenario,
// undoable) or `view` (how things are shown), call touch() after a document edit, and read
// the derived `computed` section, which update() refreshes when the revision changes.
// Nothing here owns GL resources, so the whole state can be driven by tests with no window.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/session/image_view.h"
#include "app/session/attention_view.h"
#include "app/session/frame_pacing.h"
#include "app/session/model_snapshot.h"
#include "app/session/model_view.h"
#include "core/attention/attention.h"
#include "core/scenario/scenario.h"
#include "core/scenario/scenario_edits.h"
#include "render/heatmap_render.h"

namespace attn::app {

class BackgroundTrainer;  // app/session/training_service.h (owns the training worker thread)

// What a service opened and asks the window to show: a model folder (decoder or encoder),
// an attention file (or its array choice), an image (or a vision model for it), a patching
// run. The window maps each to its panels and workspace (app/ui/panels/panel_registry.cpp);
// the session never names a panel.
enum class ShowRequest { Model, AttentionFile, Image, Patching };

// ---------------------------------------------------------------------------------------
// View settings (not part of undo; saved in the autosave)
// ---------------------------------------------------------------------------------------
struct ViewSettings {
  ColormapKind colormap = ColormapKind::Viridis;
  bool cellLabels = true;        // numbers in heatmap cells (only when cells are big enough)
  bool fixedRange = false;       // same colour range for every heatmap (to compare heads)
  float rangeMin = 0, rangeMax = 1;  // the fixed range
  // Each row spans the whole colour map from its own finite min to its max (when fixedRange is
  // off): which key a query prefers, whatever the row's scale. See colorRangeMode().
  bool rowRange = false;
  // Every matrix from its own finite min to its max (when neither fixedRange nor rowRange);
  // off: the default rule by meaning (RangeMode::Auto: weights 0..1, signed symmetric).
  bool minMaxRange = false;
  bool logWeights = false;  // weights on a log10 colour scale (render/color_scale.h)
  // Signed matrices (Q, K, V, scores, context, concat, output) on the diverging RdBu map
  // centred on 0; weights keep `colormap`. Off: every heatmap uses `colormap`.
  bool divergingSigned = true;
  int focusedHead = 0;           // head shown in detail views; -1 = mean over heads
  int pipelineStage = -1;        // teaching step-through: -1 = all stages, else the index
                                 // of the stage in kPipelineOrder (0..kStages-1)
  float fontScale = 1.0f;        // presentation mode: Ctrl+= / Ctrl+-
  // View ▸ Text size: Normal (15 px, 22.5 px in presentation mode) or Classroom (22 px, 33
  // px), for the back of a room; times fontScale, and in presentation times the window's
  // height / 800 when taller (app/ui/shell/theme.h, uiFontPixels()).
  bool classroomText = false;
  // Presentation mode (F5, not saved): the Pipeline alone, full window, large type, its
  // stages in rows and pages that fit (app/session/pipeline_layout.h). `stageFullScreen`: the current
  // stage alone with its explanation as a caption (Enter / double-click a card).
  bool presentation = false;
  bool stageFullScreen = false;
  int presentationPage = 0;      // page of stages shown while no stage is current
  bool lightTheme = false;       // projector-friendly theme
  // Panel visibility by panel id (app/ui/panels/panel_registry.h); a panel not listed here has its
  // default. Use panelShown() / panelFlag() rather than this map directly.
  std::map<std::string, bool, std::less<>> panels;
  // The workspace the window tiles (an id of kWorkspaceNames, app/session/workspace_names.h;
  // tiled by app/ui/shell/workspaces.h) and each workspace's tile weights as its splitters were dragged
  // (its groups', then its panels'; a missing or malformed entry = its defaults).
  std::string workspace = "teach";
  std::map<std::string, std::vector<float>, std::less<>> workspaceWeights;
  // What services opened since the window last looked, oldest first (not saved): the window
  // shows their panels and drains the list each frame.
  std::vector<ShowRequest> showRequests;
};

// Asks the window to show what a service opened (ShowRequest).
inline void requestShow(ViewSettings& view, ShowRequest what) { view.showRequests.push_back(what); }
// True when `what` has been asked for and the window has not yet taken the request.
inline bool showRequested(const ViewSettings& view, ShowRequest what) {
  return std::find(view.showRequests.begin(), view.showRequests.end(), what) !=
         view.showRequests.end();
}

// The colour range mode the view asks for: fixed, per row, min-max or auto (the JSON's
// "color_range"), and setting it.
inline RangeMode colorRangeMode(const ViewSettings& view) {
  return view.fixedRange    ? RangeMode::Fixed
         : view.rowRange    ? RangeMode::Row
         : view.minMaxRange ? RangeMode::MinMax
                            : RangeMode::Auto;
}
inline void setColorRangeMode(ViewSettings& view, RangeMode mode) {
  view.fixedRange = mode == RangeMode::Fixed;
  view.rowRange = mode == RangeMode::Row;
  view.minMaxRange = mode == RangeMode::MinMax;
}

// The stages of the pipeline view are the matrices of MatrixKind, in teaching order.
// ViewSettings::pipelineStage (and the autosave) stores a position in this list.
inline constexpr MatrixKind kPipelineOrder[] = {MatrixKind::Input,
                                                    MatrixKind::Wq,
                                                    MatrixKind::Wk,
                                                    MatrixKind::Wv,
                                                    MatrixKind::Q,
                                                    MatrixKind::K,
                                                    MatrixKind::V,
                                                    MatrixKind::Scores,
                                                    MatrixKind::MaskedScores,
                                                    MatrixKind::Weights,
                                                    MatrixKind::Context,
                                                    MatrixKind::Concat,
                                                    MatrixKind::Output};
inline constexpr int kStages = static_cast<int>(std::size(kPipelineOrder));
// The position of `kind` in kPipelineOrder (every MatrixKind is a stage).
constexpr int stageIndex(MatrixKind kind) {
  for (int i = 0; i < kStages; ++i)
    if (kPipelineOrder[i] == kind) return i;
  return -1;
}

// ---------------------------------------------------------------------------------------
// Undo / redo: whole-scenario snapshots. Edits made while an ImGui item stays active (a drag)
// are coalesced into one step at endFrame().
// ---------------------------------------------------------------------------------------
// A document kept for undo. Its matrices (inputs, projections, masks, ...) are shared,
// immutable copies: a snapshot shares every matrix that did not change with the snapshot
// before it, so 200 undo steps of cell edits on a 2048-token scenario hold one copy of the
// unchanged inputs, not 200. The rest of the scenario (names, options) is small and kept
// as a plain Scenario whose matrices are empty.
class SharedScenario {
 public:
  SharedScenario() = default;
  // Snapshot of `doc`, sharing each matrix that equals the one at the same place in
  // `previous` (may be null). `doc` is left as it was (its matrices are moved out and back).
  static SharedScenario share(Scenario& doc, const SharedScenario* previous);
  // The full document again (copies the shared matrices).
  Scenario restore() const;
  // Pointer identity of matrix `i` (tests: two snapshots share it iff equal).
  const void* matrixIdentity(std::size_t i) const;
  // Small fields the app edits outside undo (the `view` object after a save).
  Scenario& skeleton() { return skeleton_; }

 private:
  Scenario skeleton_;  // the document with every shared matrix emptied
  std::vector<std::shared_ptr<const Matrix>> matrices_;
  std::vector<std::shared_ptr<const Vector>> vectors_;
  std::vector<std::shared_ptr<const BoolMatrix>> masks_;
};

// One undo step: the document and the content id it had (see AppState::contentId), and the
// model state (ablated heads, the head shown; app/session/model_snapshot.h). A step that
// changed only the model state keeps the content id: it never makes the document dirty.
struct Snapshot {
  SharedScenario doc;
  std::uint64_t contentId = 0;
  ModelSnapshot model;
};

struct History {
  std::deque<Snapshot> undo;  // states before each step, newest at the back
  std::deque<Snapshot> redo;
  SharedScenario committed;   // the state after the last finished step
  std::uint64_t committedId = 0;  // its content id
  ModelSnapshot committedModel;   // the model state after the last finished step
  bool pending = false;       // an edit began and has not been closed by endFrame()
  std::size_t maxSteps = 200;
};

// ---------------------------------------------------------------------------------------
// Derived data: computed from one document revision (update(), or the ComputeService worker
// in the window) and then never changed: panels read it through a shared_ptr<const>.
// ---------------------------------------------------------------------------------------
// Which matrix a heatmap shows: (kind, head) as selectMatrixRef takes them.
struct ViewKey {
  MatrixKind kind = MatrixKind::Weights;
  int head = 0;
};
// A view the compute worker selected with the result (see ComputeService::submit), so that
// the frame receiving the result does not compute the stages a result no longer stores (a
// head's scores, the mean of scores) nor build the labels on the UI thread.
struct PreparedView {
  ViewKey key;
  SelectedMatrix view;  // may point into this Computed's result
};

struct Computed {
  std::uint64_t revision = ~0ull;       // doc revision these results belong to
  std::optional<Problem> problem;       // inputs/options/labels actually used
  std::optional<AttentionResult> result;
  std::string error;                    // non-empty: the scenario cannot be computed (why)
  double computeMs = 0;                 // time of the last compute (attend() + views)
  std::vector<PreparedView> views;      // selected on the worker; panel::cachedView() looks here first
};

// A message for the user: errors from files and edits, warnings from the result.
struct Notice {
  enum class Kind { Info, Warning, Error } kind = Kind::Info;
  std::string text;
  double time = 0;  // seconds (glfwGetTime or test clock) when it was posted
};
// How long a warning or error stays on screen (a toast; in presentation mode, the
// Pipeline's header line) before only the Log has it.
inline constexpr double kNoticeSeconds = 8.0;

struct AppState {
  Scenario doc;                    // the document: everything the user edits
  std::uint64_t revision = 0;      // bumped on every change of doc (edit, undo, open): caches
                                   // compare against it, so it only ever grows
  // Identifies the document's content: every edit step gets a new id, and undo/redo bring
  // back the id the restored state had, so undoing to the saved state is clean again.
  std::uint64_t contentId = 0;
  std::uint64_t savedContentId = 0;  // content id at the last save or open
  std::uint64_t lastContentId = 0;   // the last id handed out
  std::string docPath;             // file it was opened from / saved to ("" = untitled)
  // Bumped by loadDocument(): a cell the window pointed at (the hover) belongs to an older
  // document when its count differs.
  std::uint64_t documentsLoaded = 0;
  Scenario preset;                 // what "reset to preset" returns to

  History history;
  ViewSettings view;
  // The newest result available (never null; revision ~0 = nothing computed yet). It may be
  // older than `revision` while the worker computes: computing() says so.
  std::shared_ptr<const Computed> computed = std::make_shared<const Computed>();
  std::uint64_t submittedRevision = ~0ull;  // last revision handed to the ComputeService
  std::vector<Notice> notices;     // newest at the back; the UI shows and expires them
  ImageViewState image;            // the image view: its image, settings and result
  // The trainer of the Training panel (training_service.h), created when it is first needed
  // (ensureTrainer); its settings being edited are the panel's own.
  std::shared_ptr<BackgroundTrainer> trainer;
  // The opened .npy / .npz attention file and what the Attention panel shows of it. Apart
  // from `doc`: opening one leaves the scenario, its undo history and dirty flag alone.
  AttentionView attention;
  // The model folder, the text typed into the Model panel and the newest run (its
  // attention is shown through `attention`). Apart from `doc` as well.
  ModelView model;

  bool dirty() const { return contentId != savedContentId; }
  // True while the result on screen belongs to an older revision than the document.
  bool computing() const { return computed->revision != revision; }
  // Marks the current content as saved (after a save or an open).
  void markSaved() { savedContentId = contentId; }
  // Marks the document as unsaved whatever undo does (e.g. restored from an unsaved autosave).
  void markNeverSaved() { savedContentId = ~0ull; }
};

// Marks the document as edited: bumps the revision and opens an undo step (if none is
// open). Called by applyEdit(); the panels never change state.doc without an edit function.
void touch(AppState& state);

// The one way a front end commits an edit of state.doc made by a core/scenario/scenario_edits.h
// function: touch() when it changed something, and a notice with its note (a warning when
// the edit was refused).
void applyEdit(AppState& state, const EditOutcome& outcome, double now);

// Closes the open undo step unless an edit is still in progress (anyItemActive: an ImGui
// widget is being dragged or typed into). Call once per frame, after the panels. A change
// of the model state since the last step (a head ablated, another head shown) becomes a
// step of its own; a new model or another attention source only moves the baseline.
void endFrame(AppState& state, bool anyItemActive);

// Undo / redo one step: the document, and the model state when the step belongs to the
// model loaded now (its run is then recomputed by the next update step, on the worker in
// the window). Return false when there is nothing to undo / redo.
bool undo(AppState& state);
bool redo(AppState& state);

// Replaces the document (open, preset, drop): clears history, sets docPath and the preset.
void loadDocument(AppState& state, Scenario scenario, std::string path);

// Recomputes `computed` synchronously if the revision changed (tests, screenshots). Returns
// true if it recomputed. The window uses updateAsync() (app/session/compute_service.h) instead.
bool update(AppState& state);

// Makes `computed` the result on screen, and keeps the focused head inside its head count.
void publishComputed(AppState& state, std::shared_ptr<const Computed> computed);

// Posts a notice (errors also go to stderr).
void notify(AppState& state, Notice::Kind kind, std::string text, double now);

}  // namespace attn::app
