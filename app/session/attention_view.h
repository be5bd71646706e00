// The opened attention file (.npy / .npz, formats/attention_file.h) and what the Attention panel
// shows of it. Kept in AppState::attention, apart from the scenario document: opening an
// attention file never touches the scenario, its undo history or its dirty flag.
// Plain data (no threads, no GL); app/session/attention_service.h fills the derived parts.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/session/attention_source.h"
#include "render/heatmap_render.h"
#include "formats/attention_file.h"

namespace attn::app {

// The selection computed for the big heatmap, head and text views: io::selectAttention's
// result for one (file generation, selection revision). Immutable once published.
struct AttentionShown {
  std::uint64_t generation = 0;         // AttentionView::generation it belongs to
  std::uint64_t selectionRevision = 0;  // AttentionView::selectionRevision it belongs to
  io::AttentionSelection selection;
  io::SelectedAttention selected;  // values (n_q x n_k), labels, title, non-finite count
  std::string error;               // non-empty: the selection cannot be computed (why)
};

// How the model-view grid orders the heads of each layer.
enum class HeadSort { Index, EntropyAscending, Top1Descending };

struct FilteredView;  // app/session/attention_analysis.h

// The special-token filter of the heatmap, focus and text views (core/attention/aggregate.h): when
// `enabled`, the keys it marks are dropped and each row is renormalised over the rest.
// `cache` holds the filtered matrix of one (shown, settings revision); rebuilt on change.
struct AttentionFilter {
  bool enabled = false;
  SpecialTokenOptions tokens;  // first token, the default list, the user's list
  std::string extraText;       // the user's list as typed (parseTokenList)
  std::uint64_t revision = 0;  // bumped when a setting changes
  // Cache: the filtered `shown` (null when off or not built yet).
  std::shared_ptr<const AttentionShown> cacheFor;
  std::uint64_t cacheRevision = ~0ull;
  std::shared_ptr<const FilteredView> cache;
  std::string error;  // why the filter cannot apply to the shown matrix ("" = it can)
};

// The focus view: one row (a query's attention over the keys) or one column (how much each
// query attends to a key) of the shown matrix as bars.
struct AttentionFocus {
  bool column = false;
  int index = 0;
};

// The compare view: the shown selection (A) beside a second one (B) of the same file or of
// a second file, with linked hover and their difference A - B on RdBu centred on 0.
struct AttentionCompare {
  std::shared_ptr<const io::AttentionFile> file;  // B's file; null = the open file
  std::string pathText;                           // the path field of the panel
  io::AttentionSelection selection;               // B
  std::uint64_t revision = 0;                     // bumped when file or selection changes
  // B and the difference for (A's shown, revision), computed on the UI thread.
  std::shared_ptr<const AttentionShown> cacheFor;
  std::uint64_t cacheRevision = ~0ull;
  std::shared_ptr<const io::SelectedAttention> shownB;
  std::shared_ptr<const MatrixView> difference;
  std::optional<io::ValueRange> sharedRange;  // finite min..max over A and B together
  std::string error;                          // why B or the difference cannot be shown ("" = fine)
  int hoverRow = -1, hoverCol = -1;           // the cell hovered last frame in either heatmap
};

struct AttentionView {
  SourcePtr source;              // what the panel shows (attention_source.h); null: nothing
  std::uint64_t generation = 0;  // bumped whenever `source` changes (showSource)
  io::AttentionSelection selection;               // what the big heatmap shows
  std::uint64_t selectionRevision = 0;            // bumped when `selection` changes

  // Derived (app/session/attention_service.h). `overview` belongs to `generation` (null while the
  // thumbnails are being made); `shown` is the newest finished selection, which may be
  // older than selectionRevision while the worker computes.
  std::shared_ptr<const io::HeadOverview> overview;
  std::shared_ptr<const AttentionShown> shown;
  float overviewProgress = 0;  // 0..1 while the thumbnails are being made
  std::uint64_t submittedGeneration = ~0ull, submittedSelection = ~0ull;

  // An .npz with several arrays (and no per-layer set): the panel lists them, and picking
  // one opens it. Empty when there is nothing to choose.
  std::string choosePath;
  std::vector<io::ArraySummary> chooseArrays;

  // Panel scratch (not saved).
  int requestTab = -1;  // 0 heatmap, 1 head view, 2 text view, 3 focus, 4 compare:
                        // selected next frame
  HeadSort sort = HeadSort::Index;
  int topK = 8;              // head view: lines per token when n is large
  int pinnedToken = -1;      // text / head view: clicked token (key index), -1 = none
  bool attendedBy = false;   // text view: colour by how much others attend TO the token
  // Head view cache: top-k key indices per query row of `shown`.
  const AttentionShown* topFor = nullptr;
  int topKFor = 0;
  std::vector<int> topIndex;  // rows x topKFor (-1 padded)
  // Head view overlay: every head of one layer, and their top-k per row (small n only).
  bool overlay = false;
  std::uint64_t overlayGeneration = ~0ull;
  int overlayLayer = -1, overlayK = 0;
  std::vector<Matrix> overlayHeads;
  std::vector<std::vector<int>> overlayTop;
  // Model view: the thumbnails' axis labels (token ranges), made once per generation.
  std::uint64_t thumbnailLabelsGeneration = ~0ull;
  std::vector<std::string> thumbnailRowLabels, thumbnailColLabels;
  // Focus, special-token filter and compare (app/session/attention_analysis.h).
  AttentionFilter filter;
  AttentionFocus focus;
  AttentionCompare compare;

  // The source's tensor [layers, heads, n_q, n_k] with its labels, or null.
  std::shared_ptr<const io::AttentionFile> tensor() const {
    return source ? source->tensor : nullptr;
  }
};

// True for a path that names an attention file (.npy or .npz, any case): classifyPath.
bool isAttentionPath(const std::string& path);

// Changes what the big heatmap shows (bumps selectionRevision when it differs).
void selectAttentionView(AttentionView& view, const io::AttentionSelection& selection);

// What showing a new source keeps of the view: nothing (another file or kind), or the
// selection (clamped), the pinned token (when still in range), the thumbnails until new
// ones are made and the compare settings (the same model's next run, as the user types).
enum class KeepView { Nothing, Selection };

// THE reset of the view for a new source (or none: `source` null empties the panel):
// bumps generation and selectionRevision, drops every cache derived from the old source
// (shown matrix, head-view top-k and overlay, filter and compare caches, the array choice)
// and, with KeepView::Nothing, the selection, thumbnails, pinned token and compare B.
void showSource(AttentionView& view, SourcePtr source, KeepView keep);

}  // namespace attn::app
