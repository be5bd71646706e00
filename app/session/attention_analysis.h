// What the Attention panel's focus, filter and compare views compute from a shown matrix:
// the special-token filter with rows renormalised, one row or column as bars, the
// difference of two matrices, the pooled block behind a hovered pixel, and the status-bar
// count of non-finite values. Plain functions over MatrixView (no ImGui, no GL, no
// threads), so that tests check them against worked numbers.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "app/session/app_state.h"
#include "app/session/attention_view.h"
#include "app/session/launch.h"
#include "core/attention/aggregate.h"
#include "core/base/types.h"
#include "formats/attention_file.h"
#include "render/heatmap_render.h"

namespace attn::app {

// ---------------------------------------------------------------------------------------
// Special-token filter
// ---------------------------------------------------------------------------------------

// A user's list of extra special tokens, typed as text: separated by spaces, tabs, commas
// or new lines ("<bos>, [MASK]" -> {"<bos>", "[MASK]"}). Empty pieces are dropped.
std::vector<std::string> parseTokenList(const std::string& text);

struct FilteredView {
  MatrixView view;                  // n_q x n_k: dropped keys 0, rows renormalised
  std::vector<bool> dropped;            // n_k flags: the keys that were dropped
  std::vector<Eigen::Index> emptyRows;  // rows with no mass left (all zero)
};

// shown: A (n_q x n_k) with its key labels (colLabels, n_k entries, or none: then only the
// first-token rule can apply). Drops the keys that specialTokenMask() marks and
// renormalises every row over the keys left (attn::dropKeysAndRenormalise). The title
// gets " \xC2\xB7 special tokens dropped". Error (field "tokens") when the labels do not
// match n_k.
Expected<FilteredView> filterSpecialTokens(const MatrixView& shown,
                                           const SpecialTokenOptions& options);

// ---------------------------------------------------------------------------------------
// Focus: one row or one column as bars
// ---------------------------------------------------------------------------------------

struct FocusBars {
  std::vector<float> values;        // one bar per key (row focus) or query (column focus)
  std::vector<std::string> labels;  // the bars' token labels (indices when there are none)
  std::vector<bool> dropped;        // per bar: a dropped special token (row focus only)
  std::string title;                // "query 3 'cat' attends to" / "attention to key 5 'sat'"
  int index = -1;                   // the focused row / column, clamped into range
};

// view: A (n_q x n_k). Row focus (column = false): the bars are A(index, :) over the keys,
// i.e. how query `index` spreads its attention. Column focus: A(:, index) over the
// queries, i.e. how much each query attends to key `index`. `index` is clamped into range.
// `dropped` (n_k flags, may be empty) marks filtered keys so that the chart can grey them.
FocusBars focusBars(const MatrixView& view, bool column, int index,
                    const std::vector<bool>& dropped = {});

// ---------------------------------------------------------------------------------------
// Model-view thumbnails
// ---------------------------------------------------------------------------------------

// Axis labels of a thumbnail that attn::maxPool made from `n` tokens into `pooled` cells
// (blocks of ceil(n / pooled) tokens): a cell of one token gets that token's label (or its
// index when `labels` has none); a cell of several gets "tokens 8\xE2\x80\x9315 ('the' \xE2\x80\xA6
// 'mat')". So hovering a thumbnail names the tokens under the mouse.
std::vector<std::string> pooledAxisLabels(const std::vector<std::string>& labels, int n,
                                          int pooled);

// ---------------------------------------------------------------------------------------
// Compare
// ---------------------------------------------------------------------------------------

// a, b: n_q x n_k each. The element-wise difference a - b (n_q x n_k) with a's labels and
// the title "<a's title> \xE2\x88\x92 <b's title>"; non-finite inputs give non-finite
// cells (NaN - x stays NaN). Error (field "shape") naming both shapes when they differ.
Expected<MatrixView> differenceView(const MatrixView& a, const MatrixView& b);

// ---------------------------------------------------------------------------------------
// The panel's state (AttentionView::filter, ::compare), kept up to date from `shown`
// ---------------------------------------------------------------------------------------

// The matrix the heatmap, focus and text views show for `shown`: its values, or with the
// filter on, the values with the special tokens dropped and rows renormalised (made once
// per (shown, filter revision), kept in view.filter.cache). `dropped` (optional) gets the
// dropped keys' flags, empty when nothing is filtered. When the filter cannot apply,
// view.filter.error says why and the raw values are returned.
const MatrixView& displayedMatrix(AttentionView& view,
                                      const std::shared_ptr<const AttentionShown>& shown,
                                      const std::vector<bool>** dropped = nullptr);

// Brings view.compare up to date for A = `shown`: B = io::selectAttention of B's file (the
// open file when view.compare.file is null) at view.compare.selection (clamped into that
// file's range), the difference A - B and A's and B's common finite range. Runs on the UI
// thread once per (shown, compare revision). Errors go to view.compare.error (B or the
// difference stays null).
void updateCompare(AttentionView& view, const std::shared_ptr<const AttentionShown>& shown);

// Opens `path` as B's file. On error, a notice names the file and the problem and the
// compare view keeps what it had. Returns success.
bool openCompareFile(AppState& state, const std::string& path, double now);

// How the panel starts (`screenshot FILE.npy --view ... --compare ...`), applied once the
// file is open: the tab, A's head, B (its file through openCompareFile, or a head of the
// open file), the filter and the focus. Out-of-range indices are clamped.
void applyAttentionStart(AppState& state, const GuiLaunch::AttentionStart& start, double now);

// ---------------------------------------------------------------------------------------
// Status bar
// ---------------------------------------------------------------------------------------

// "attention: 3 NaN, 1 +inf in 2 heads" (non-finite values of the open file, from its
// overview) or "" when the file has none, when nothing is open, or while the overview is
// still being made.
std::string attentionStatusText(const AttentionView& view);

}  // namespace attn::app
