// The panels' own state, apart from the session (app/session/app_state.h): the heatmap
// textures and zoom, the scratch that must survive from one frame to the next (text being
// typed, a drag in progress, views picked out of the current result), the cell under the
// mouse and the Training panel's settings. The shell owns one UiState and passes it to every
// panel with the AppState; none of it is part of the document, undoable or saved.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "app/session/app_state.h"
#include "app/session/frame_pacing.h"
#include "app/session/pipeline_steps.h"
#include "app/ui/widgets/heatmap_widget.h"

namespace attn::app {

struct TrainingPanelState;  // app/ui/panels/panel_training.h

// Presentation: the toolbar hides after this long without pointer movement (seconds).
inline constexpr double kChromeSeconds = 2.0;

// Scratch of the editing panels (text being typed, a drag, views picked out of the current
// result).
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
  std::weak_ptr<const Computed> geometryOf;  // the result the points were made from
  std::vector<std::string> geometryLabels;  // geometry: the labels drawn last frame (tests)
  // selectMatrixRef results for computed.revision: views INTO the result (no copy of
  // its matrices), with the label vectors and titles built once per revision rather than
  // per frame, and the few matrices that must be computed (a mean of scores over heads,
  // the allowed-cells mask as floats). Cleared when the revision changes, or when the
  // result is another one altogether (`viewsOf`: the state's Computed they were made from;
  // one UiState drawn over another AppState never points into a result freed with it).
  std::weak_ptr<const Computed> viewsOf;
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
    std::weak_ptr<const Computed> of;  // the result it was made from
    SelectedMatrix view;
  };
  AllowedView allowedView;
};

struct UiState {
  // Heatmaps on `textures` (GL in the window, MockHeatmapTextures in tests).
  explicit UiState(std::unique_ptr<HeatmapTextures> textures);
  ~UiState();
  UiState(const UiState&) = delete;
  UiState& operator=(const UiState&) = delete;

  HeatmapCache heatmaps;  // textures and zoom/pan of every heatmap on screen
  PanelScratch scratch;
  // What the mouse is over (set by heatmap widgets, read by the Inspector), in the document
  // whose AppState::documentsLoaded was `hoverDocument` (panel::hoverOf lets go of it after
  // another document is loaded).
  MatrixCell hover;
  std::uint64_t hoverDocument = 0;
  // The Training panel's settings and file jobs, created when the panel is first drawn
  // (trainingState(), panel_training.h); its trainer is the session's (AppState::trainer).
  std::unique_ptr<TrainingPanelState> training;
};

}  // namespace attn::app
