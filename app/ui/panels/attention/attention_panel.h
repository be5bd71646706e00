// The Attention panel's parts (app/ui/panels/attention/): the frame (panel.cpp: header,
// selector, array choice, the tabs), the layer x head grid (grid.cpp) and one file per tab:
// heatmap, head view, text view, focus, compare. The panel shows an AttentionSource
// (app/session/attention_source.h): it never asks which kind of source it is.
#pragma once

#include <string>
#include <vector>

#include "app/session/app_state.h"
#include "app/ui/widgets/heatmap_widget.h"

namespace attn::app::attention_panel {

// printf of one number (tooltips).
std::string fmt(const char* format, double value);

// Kind, layer and head of a selection of `tensor` (one line). Returns true when it changed.
// `offerRollout`: rollout is one of the kinds (compare's B); else it is a choice of the
// "show" selector (panel_mechanism.h), and a rollout selection shows its layer only.
bool selectionControls(const io::AttentionFile& tensor, io::AttentionSelection& sel, bool offerRollout = true);

// The title of the shown matrix: the selection's ("layer 1 of 2 · head 0 of 2", "rollout ·
// layers 0..1 of 2"), or for a mechanism of the model run (SourceQuantity::name) its name
// first, then the head or the layer when the source has several.
std::string shownTitle(const AttentionSource& source, const AttentionShown& shown, const std::string& selectionTitle);

// Left side: the layer x head thumbnails with their entropy / top-1 bars; click selects.
void drawGrid(AppState& state, HeatmapCache& heatmaps);

// The special-token filter's switch and settings, and the line saying what it dropped.
void drawFilterBar(AttentionView& view);
void drawFilterSummary(const AttentionView& view, const std::vector<bool>& dropped);

// The tabs. `displayed` is the shown selection after the special-token filter (n_q x n_k).
void drawHeatmapTab(AppState& state, HeatmapCache& heatmaps, const AttentionShown& shown,
                    const MatrixView& displayed);
void drawHeadView(AttentionView& view, const AttentionShown& shown);
void drawTextView(AttentionView& view, const MatrixView& displayed);
void drawFocusView(AttentionView& view, const MatrixView& displayed,
                   const std::vector<bool>& dropped);
void drawCompareView(AppState& state, HeatmapCache& heatmaps,
                     const std::shared_ptr<const AttentionShown>& shown);

}  // namespace attn::app::attention_panel
