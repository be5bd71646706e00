// One function per panel, one file per panel (app/panel_*.cpp). A panel draws its window,
// edits AppState (calling touch() after document edits) and never computes: everything it
// shows comes from state.computed or from core/ helpers that explain a value.
#pragma once

#include <functional>
#include "app/session/app_state.h"
#include "app/ui/panels/ui_state.h"
#include "app/ui/widgets/heatmap_widget.h"
#include "core/attention/explain.h"

namespace attn::app {

// Each draws one ImGui window (Begin/End inside) from the session's `state` and the panels'
// own `ui` (heatmaps, scratch, hover: app/ui/panels/ui_state.h).
void drawInputsPanel(AppState& state, UiState& ui);     // vectors, labels, sentence
void drawSettingsPanel(AppState& state, UiState& ui);   // mode, score, heads, mask...
void drawPipelinePanel(AppState& state, UiState& ui);   // Q,K,V → ... → output
void drawHeadsPanel(AppState& state, UiState& ui);      // per-head thumbnails + mean
void drawInspectorPanel(AppState& state, UiState& ui);  // explains the hovered cell
void drawGeometryPanel(AppState& state, UiState& ui);   // 2-D arrows of q and k
void drawImagePanel(AppState& state, UiState& ui);      // attention over image patches
void drawTrainingPanel(AppState& state, UiState& ui);   // train a model, watch it
void drawAttentionPanel(AppState& state, UiState& ui);  // .npy/.npz: model, head, text
void drawModelPanel(AppState& state, UiState& ui);      // a decoder model: text, prediction, norms
// The Model panel's body for an encoder folder (bert, distilbert, roberta): the text, its
// tokens and the fill-mask prediction of every mask token beside it (panel_model_encoder.cpp).
void drawEncoderModel(AppState& state, UiState& ui);
// A model run's tokens as chips (panel_model.cpp): special tokens on the key colour, and the
// tokens `masked` says are masks (an encoder's [MASK]) on the query colour.
void drawTokens(const ModelRun& run, const std::function<bool(std::size_t)>& masked = {});
// The rows of a residual-stream norm heatmap ((L+1) rows, panel_model.cpp), one naming for
// every kind: "emb" (the embeddings), "L1" ... "L{L-1}" (the stream entering block l, which
// is what block l-1 wrote: TransformerLens's resid_pre), "out" (after the last block).
std::vector<std::string> residualRowLabels(int rows);
// The Image panel's "model" source once a ViT folder is loaded (panel_image_model.cpp): draws
// the patches | model switch; true when it drew the model source (the panel ends there).
bool drawImageModelSource(AppState& state, UiState& ui);
// The open picture's texture (panel_image.cpp): uploaded through the heatmap textures (GL in
// the window, the mock in tests) once per picture; 0 when nothing can be drawn. The patch
// view and the ViT source share it (one picture, one texture).
unsigned imageTexture(HeatmapCache& heatmaps, const ImageViewState& view);
void drawPatchingPanel(AppState& state, UiState& ui);   // activation patching

// The matrices the panels showed for the current result (the keys of their view cache),
// for the compute worker to prepare with the next result: updateAsync()'s `views`. The
// panels say what is on screen; the compute service never reads their scratch.
std::vector<ViewKey> viewsOnScreen(const UiState& ui);

// The inspector's explanation of one cell (core/attention/explain.h) and how the Inspector draws it;
// the Pipeline's single-stage presentation shows the same under its heatmap.
Expected<Explanation> explainHover(const AppState& state, const MatrixCell& cell);
void drawExplanation(const Explanation& explanation);

}  // namespace attn::app
