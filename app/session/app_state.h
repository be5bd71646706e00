// The plain state that panels edit. Panels never compute: they change `doc` (the scenario,
// undoable) or `view` (how things are shown), call touch() after a document edit, and read
// the derived `computed` section, which update() refreshes when the revision changes.
// Nothing here owns GL resources, so the whole state can be driven by tests with no window.
#pragma once

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

struct TrainingPanelState;  // app/ui/panels/panel_training.h (owns the training worker thread)

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
  // The workspace the window tiles (app/ui/shell/workspaces.h: "teach", "model", "attention",
  // "image", "training") and each workspace's tile weights as its splitters were dragged
  // (its groups', then its panels'; a missing or malformed entry = its defaults).
  std::string workspace = "teach";
  std::map<std::string, std::vector<float>, std::less<>> workspaceWeights;
};

// Shows panel `id` (a service that opened something for it: a file, a model).
inline void showPanel(ViewSettings& view, std::string_view id) {
  view.panels.insert_or_assign(std::string(id), true);
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

// What the mouse is over (set by heatmap widgets each frame, read by the inspector).
struct Hover {
  bool active = false;
  MatrixKind matrix = MatrixKind::Weights;
  int head = 0;  // -1 = mean
  int row = -1, col = -1;
};

// Scratch of the editing panels that must survive from one frame to the next (text being
// typed, a drag in progress, views picked out of the current result). Not part of the
// document, not undoable, not saved.
// Presentation: the toolbar hides after this long without pointer movement (seconds).
inline constexpr double kChromeSeconds = 2.0;

struct PanelScratch {
  std::string sentence;                  // sentence box text before Enter / Apply
  std::uint64_t sentenceSyncedHash = 0;  // hash of doc.sentence + docPath last copied into the box
  int embeddingDim = 16;                 // embedding width for the next Apply
  bool askSentenceTarget = false;        // cross mode: open the "queries or keys?" modal
  std::uint64_t randomiseClicks = 0;     // mixed into the seed so each Randomise differs
  int focusedQuery = 0;                  // geometry: the query whose scores are shown
  // Pipeline step keys (Space, arrows, PageUp/PageDown, Esc) from the window's key queue,
  // applied in order by the Pipeline panel and cleared every frame.
  std::vector<StepKey> stepKeys;
  // Presentation chrome (the toolbar over the page): when the pointer last moved (ImGui's
  // clock) and where; the toolbar shows until kChromeSeconds after that
  // (app/ui/panels/panel_pipeline.cpp). A screenshot starts it long hidden.
  double pointerMovedAt = 0;
  float pointerX = -1e30f, pointerY = -1e30f;
  bool chromeShown = true;
  int dragArrow = -1;                    // geometry: arrow being dragged (-1 = none)
  bool dragArrowIsQuery = false;
  float geometryScale = 0;               // geometry: pixels per unit, frozen while dragging
  Matrix geometryPoints;                 // geometry: 2-D projection of the shown q and k rows
  std::uint64_t geometryRevision = ~0ull;  // computed.revision / head the points belong to
  int geometryHead = -2;
  std::vector<std::string> geometryLabels;  // geometry: the labels drawn last frame (tests)
  // selectMatrixRef results for computed.revision: views INTO the result (no copy of
  // its matrices), with the label vectors and titles built once per revision rather than
  // per frame, and the few matrices that must be computed (a mean of scores over heads,
  // the allowed-cells mask as floats). Cleared when the revision changes.
  struct CachedView {
    std::uint64_t revision = 0;
    MatrixKind kind = MatrixKind::Weights;
    int head = 0;
    SelectedMatrix view;
  };
  std::deque<CachedView> viewCache;  // deque: pointers returned by cachedView() stay valid while more are added
  // The Settings panel's mask heatmap: the allowed cells (1 / 0) of computed.revision.
  struct AllowedView {
    std::uint64_t revision = ~0ull;
    SelectedMatrix view;
  };
  AllowedView allowedView;
};

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
  Scenario preset;                 // what "reset to preset" returns to

  History history;
  ViewSettings view;
  Hover hover;
  // The newest result available (never null; revision ~0 = nothing computed yet). It may be
  // older than `revision` while the worker computes: computing() says so.
  std::shared_ptr<const Computed> computed = std::make_shared<const Computed>();
  std::uint64_t submittedRevision = ~0ull;  // last revision handed to the ComputeService
  std::vector<Notice> notices;     // newest at the back; the UI shows and expires them
  PanelScratch panels;             // editing panels' between-frame scratch (not saved)
  ImageViewState image;            // the image view: its image, settings and result
  // The Training panel's settings and trainer, created when the panel is first drawn.
  std::shared_ptr<TrainingPanelState> training;
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
