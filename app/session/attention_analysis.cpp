// Focus, filter and compare computations of the Attention panel (see attention_analysis.h).
#include "app/session/attention_analysis.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <filesystem>

#include "core/base/format.h"
#include "formats/files.h"

namespace attn::app {

// =======================================================================================
// Special-token filter
// =======================================================================================

std::vector<std::string> parseTokenList(const std::string& text) {
  std::vector<std::string> tokens;
  std::string current;
  for (char ch : text) {
    if (ch == ' ' || ch == '\t' || ch == ',' || ch == '\n' || ch == '\r') {
      if (!current.empty()) tokens.push_back(std::move(current));
      current.clear();
    } else {
      current += ch;
    }
  }
  if (!current.empty()) tokens.push_back(std::move(current));
  return tokens;
}

Expected<FilteredView> filterSpecialTokens(const MatrixView& shown,
                                           const SpecialTokenOptions& options) {
  const Eigen::Index keys = shown.values.cols();
  std::vector<std::string> labels = shown.colLabels;
  if (labels.empty()) {
    // No labels: only the first-token rule can match; the indices never equal a special.
    for (Eigen::Index k = 0; k < keys; ++k) labels.push_back(std::to_string(k));
  }
  if (static_cast<Eigen::Index>(labels.size()) != keys) {
    return Error{
        "", "tokens",
        std::to_string(labels.size()) + " key labels for " + std::to_string(keys) + " keys"};
  }
  FilteredView out;
  out.dropped = specialTokenMask(labels, options);
  Expected<FilteredAttention> filtered =
      dropKeysAndRenormalise(matrixRef(shown.values), out.dropped);
  if (!filtered) return filtered.error();
  out.view.values = std::move(filtered->values);
  out.emptyRows = std::move(filtered->emptyRows);
  out.view.rowLabels = shown.rowLabels;
  out.view.colLabels = shown.colLabels;
  out.view.title = shown.title + " \xC2\xB7 special tokens dropped";
  return out;
}

// =======================================================================================
// Focus
// =======================================================================================

FocusBars focusBars(const MatrixView& view, bool column, int index,
                    const std::vector<bool>& dropped) {
  FocusBars bars;
  const int rows = static_cast<int>(view.values.rows()),
            cols = static_cast<int>(view.values.cols());
  const int count = column ? rows : cols;   // bars
  const int extent = column ? cols : rows;  // range of `index`
  if (count == 0 || extent == 0) return bars;
  bars.index = std::clamp(index, 0, extent - 1);
  const std::vector<std::string>& barLabels = column ? view.rowLabels : view.colLabels;
  const std::vector<std::string>& indexLabels = column ? view.colLabels : view.rowLabels;
  bars.values.resize(static_cast<std::size_t>(count));
  bars.labels.resize(static_cast<std::size_t>(count));
  bars.dropped.assign(static_cast<std::size_t>(count), false);
  for (int i = 0; i < count; ++i) {
    const std::size_t at = static_cast<std::size_t>(i);
    bars.values[at] = column ? view.values(i, bars.index) : view.values(bars.index, i);
    bars.labels[at] = at < barLabels.size() ? barLabels[at] : std::to_string(i);
    if (!column && at < dropped.size()) bars.dropped[at] = dropped[at];
  }
  const std::size_t focused = static_cast<std::size_t>(bars.index);
  const std::string label =
      focused < indexLabels.size() ? indexLabels[focused] : std::to_string(bars.index);
  if (column) {
    bars.title = "attention to key ";
    bars.title += std::to_string(bars.index);
    bars.title += " '" + label + "' from each query";
  } else {
    bars.title = "query ";
    bars.title += std::to_string(bars.index);
    bars.title += " '" + label + "' attends to";
  }
  return bars;
}

// =======================================================================================
// Model-view thumbnails
// =======================================================================================

std::vector<std::string> pooledAxisLabels(const std::vector<std::string>& labels, int n,
                                          int pooled) {
  std::vector<std::string> out;
  if (n <= 0 || pooled <= 0) return out;
  const int block = (n + pooled - 1) / pooled;  // as attn::maxPool
  const auto label = [&](int i) {
    return i < static_cast<int>(labels.size()) ? labels[static_cast<std::size_t>(i)]
                                               : std::to_string(i);
  };
  out.reserve(static_cast<std::size_t>(pooled));
  for (int cell = 0; cell < pooled; ++cell) {
    const int first = cell * block, last = std::min(n, first + block) - 1;
    if (first > last) break;
    if (first == last) {
      out.push_back(label(first));
      continue;
    }
    std::string text = "tokens ";
    text += std::to_string(first);
    text += "\xE2\x80\x93";
    text += std::to_string(last);
    text += " ('" + label(first) + "' \xE2\x80\xA6 '" + label(last) + "')";
    out.push_back(std::move(text));
  }
  return out;
}

// =======================================================================================
// Compare
// =======================================================================================

Expected<MatrixView> differenceView(const MatrixView& a, const MatrixView& b) {
  if (a.values.rows() != b.values.rows() || a.values.cols() != b.values.cols()) {
    auto shape = [](const Matrix& m) {
      std::string text = std::to_string(m.rows());
      text += " \xC3\x97 ";
      text += std::to_string(m.cols());
      return text;
    };
    return Error{
        "", "shape",
        "cannot subtract a " + shape(b.values) + " matrix from a " + shape(a.values) + " one"};
  }
  MatrixView out;
  out.values = a.values - b.values;
  out.rowLabels = a.rowLabels;
  out.colLabels = a.colLabels;
  out.title = a.title + " \xE2\x88\x92 " + b.title;
  return out;
}

// =======================================================================================
// The panel's state
// =======================================================================================

const MatrixView& displayedMatrix(AttentionView& view,
                                      const std::shared_ptr<const AttentionShown>& shown,
                                      const std::vector<bool>** dropped) {
  static const std::vector<bool> kNothingDropped;  // constant, not state
  if (dropped) *dropped = &kNothingDropped;
  AttentionFilter& filter = view.filter;
  if (!filter.enabled) {
    filter.error.clear();
    return shown->selected.view;
  }
  if (filter.cacheFor != shown || filter.cacheRevision != filter.revision) {
    filter.cacheFor = shown;
    filter.cacheRevision = filter.revision;
    Expected<FilteredView> filtered = filterSpecialTokens(shown->selected.view, filter.tokens);
    if (filtered) {
      filter.cache = std::make_shared<const FilteredView>(std::move(filtered).value());
      filter.error.clear();
    } else {
      filter.cache.reset();
      filter.error = filtered.error().problem;
    }
  }
  if (!filter.cache) return shown->selected.view;
  if (dropped) *dropped = &filter.cache->dropped;
  return filter.cache->view;
}

void updateCompare(AttentionView& view, const std::shared_ptr<const AttentionShown>& shown) {
  AttentionCompare& compare = view.compare;
  if (!view.source || !shown) return;
  if (compare.cacheFor == shown && compare.cacheRevision == compare.revision) return;
  compare.cacheFor = shown;
  compare.cacheRevision = compare.revision;
  compare.shownB.reset();
  compare.difference.reset();
  compare.sharedRange.reset();
  compare.error.clear();
  const io::AttentionFile& file = compare.file ? *compare.file : *view.source->tensor;
  io::AttentionSelection& sel = compare.selection;
  sel.layer = std::clamp(sel.layer, 0, file.layers() - 1);
  sel.head = std::clamp(sel.head, 0, file.heads() - 1);
  Expected<io::SelectedAttention> b = io::selectAttention(file, sel);
  if (!b) {
    compare.error = "B: " + b.error().message();
    return;
  }
  if (compare.file) {  // name the other file in B's title
    b->view.title = std::filesystem::path(file.path()).filename().string() + ": " + b->view.title;
  }
  compare.shownB = std::make_shared<const io::SelectedAttention>(std::move(b).value());
  const MatrixView& a = shown->selected.view;
  std::optional<io::ValueRange> rangeA = io::finiteRange(matrixRef(a.values));
  std::optional<io::ValueRange> rangeB = io::finiteRange(matrixRef(compare.shownB->view.values));
  if (rangeA && rangeB)
    compare.sharedRange =
        io::ValueRange{std::min(rangeA->lo, rangeB->lo), std::max(rangeA->hi, rangeB->hi)};
  else
    compare.sharedRange = rangeA ? rangeA : rangeB;
  Expected<MatrixView> difference = differenceView(a, compare.shownB->view);
  if (!difference) {
    compare.error = "A \xE2\x88\x92 B: " + difference.error().problem;
    return;
  }
  compare.difference = std::make_shared<const MatrixView>(std::move(difference).value());
}

bool openCompareFile(AppState& state, const std::string& path, double now) {
  Expected<io::AttentionFile> opened = io::AttentionFile::open(path);
  if (!opened) {
    notify(state, Notice::Kind::Error,
           "cannot compare with " + io::withFile(opened.error(), path).message(), now);
    return false;
  }
  AttentionCompare& compare = state.attention.compare;
  compare.file = std::make_shared<const io::AttentionFile>(std::move(opened).value());
  compare.pathText = path;
  ++compare.revision;
  notify(state, Notice::Kind::Info,
         "comparing with " + std::filesystem::path(path).filename().string(), now);
  return true;
}

void applyAttentionStart(AppState& state, const GuiLaunch::AttentionStart& start, double now) {
  AttentionView& view = state.attention;
  if (!view.source) return;
  if (start.tab >= 0) view.requestTab = start.tab;
  if (start.layer >= 0) {
    io::AttentionSelection sel;
    sel.layer = std::clamp(start.layer, 0, view.source->tensor->layers() - 1);
    sel.head = std::clamp(start.head, 0, view.source->tensor->heads() - 1);
    selectAttentionView(view, sel);
  }
  view.compare.selection = view.selection;
  if (start.compareLayer >= 0) {
    view.compare.selection.layer = start.compareLayer;
    view.compare.selection.head = start.compareHead;
  }
  ++view.compare.revision;
  if (!start.compareFile.empty()) openCompareFile(state, start.compareFile, now);
  if (start.dropSpecial) {
    view.filter.enabled = true;
    ++view.filter.revision;
  }
  if (start.focusIndex >= 0) {
    view.focus.column = start.focusColumn;
    view.focus.index = start.focusIndex;
  }
}

// =======================================================================================
// Status bar
// =======================================================================================

std::string attentionStatusText(const AttentionView& view) {
  if (!view.source || !view.overview || view.overview->totalNonFinite.total() == 0) return {};
  int heads = 0;
  for (const io::NonFiniteCount& count : view.overview->nonFinite)
    if (count.total() > 0) ++heads;
  return "attention: " + io::describeNonFinite(view.overview->totalNonFinite) + " in " +
         countOf(heads, "head", "heads");
}

}  // namespace attn::app
