// The Attention panel's heatmap tab (zoom, pan, hover readout with the token labels; a click
// focuses the query), and the special-token filter bar above the tabs.
#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "app/session/attention_analysis.h"
#include "app/ui/panels/attention/attention_panel.h"
#include "app/ui/panels/panel_common.h"

namespace attn::app::attention_panel {

using panel::tooltip;

// The filter's switch and, when on, what counts as special. Off shows the raw values.
void drawFilterBar(AttentionView& view) {
  AttentionFilter& filter = view.filter;
  const float font = ImGui::GetFontSize();
  bool changed = ImGui::Checkbox("drop special tokens", &filter.enabled);
  tooltip(
      "Drop the keys of special tokens (attention sinks such as the first token, [CLS], "
      "[SEP], <|endoftext|>) and renormalise every row over the keys left, in the "
      "heatmap, focus and text views. Off: the raw values from the file.");
  if (filter.enabled) {
    ImGui::SameLine();
    changed |= ImGui::Checkbox("first token", &filter.tokens.firstToken);
    tooltip("The first key, whatever its label.");
    ImGui::SameLine();
    changed |=
        ImGui::Checkbox("[CLS] [SEP] <|endoftext|> \xE2\x80\xA6", &filter.tokens.defaultList);
    std::string list = "Labels equal to one of:";
    for (const std::string& token : defaultSpecialTokens()) list += " " + token;
    tooltip(list);
    ImGui::SameLine();
    ImGui::SetNextItemWidth(font * 9.f);
    if (ImGui::InputTextWithHint("##extra", "more tokens", &filter.extraText)) {
      filter.tokens.extra = parseTokenList(filter.extraText);
      changed = true;
    }
    tooltip(
        "Your own special tokens, separated by spaces or commas (labels match exactly, "
        "ignoring spaces at their ends).");
  }
  if (changed) ++filter.revision;
}

// One line under the filter bar: what it dropped, or why it cannot apply.
void drawFilterSummary(const AttentionView& view, const std::vector<bool>& dropped) {
  const AttentionFilter& filter = view.filter;
  if (!filter.enabled) return;
  if (!filter.error.empty()) {
    panel::coloredWrapped(panel::errorColor(), "special-token filter: " + filter.error);
    return;
  }
  if (!filter.cache) return;
  const long long count = std::count(dropped.begin(), dropped.end(), true);
  std::string text = "dropped " + countOf(count, "key", "keys");
  const std::vector<std::string>& labels = filter.cache->view.colLabels;
  int listed = 0;
  for (std::size_t k = 0; k < dropped.size() && listed < 6; ++k) {
    if (!dropped[k]) continue;
    text += listed++ == 0 ? ": " : ", ";
    text += k < labels.size() ? labels[k] : std::to_string(k);
  }
  if (count > listed) text += ", \xE2\x80\xA6";
  text += "; rows renormalised";
  if (!filter.cache->emptyRows.empty())
    text += "; " + countOf(static_cast<long long>(filter.cache->emptyRows.size()), "row", "rows") +
            " had no mass left (shown as 0)";
  ImGui::TextDisabled("%s", text.c_str());
}

std::string shownTitle(const AttentionSource& source, const AttentionShown& shown, const std::string& selectionTitle) {
  const SourceQuantity& quantity = source.quantity;
  if (quantity.name.empty()) return selectionTitle;
  const io::AttentionShape& shape = source.shape();
  std::string title = quantity.name;
  if (shape.heads > 1) title += " \xC2\xB7 " + selectionTitle;
  else if (shape.layers > 1) title += " \xC2\xB7 layer " + std::to_string(shown.selection.layer);
  return title;
}

void drawHeatmapTab(AppState& state, HeatmapCache& heatmaps, const AttentionShown& shown,
                    const MatrixView& displayed) {
  AttentionView& view = state.attention;
  HeatmapOptions options = panel::heatmapOptions(state);
  options.probability = true;  // attention weights (io::rangeRule checks they are)
  options.tooltip = "attention weights (rows: queries, columns: keys); click: focus this query";
  HeatmapView heatmap(displayed);
  // A mechanism of the model run (issue 30's "show"): its own name on the title and the
  // colour bar, and its own range (0..1 shares, or 0..the matrix's largest finite value).
  const SourceQuantity& quantity = view.source->quantity;
  std::string title, tip;
  if (!quantity.name.empty()) {
    title = shownTitle(*view.source, shown, displayed.title);
    heatmap.title = title;
    heatmap.valueTitle = quantity.name;
    tip = quantity.meaning + "; click: focus this query";
    options.tooltip = tip.c_str();
    if (!quantity.probability && options.range == RangeMode::Auto && !options.vmin && !options.vmax) {
      float top = 0;
      for (Eigen::Index i = 0; i < displayed.values.size(); ++i) {
        const float v = displayed.values.data()[i];
        if (std::isfinite(v)) top = std::max(top, v);
      }
      options.vmin = 0.f;
      options.vmax = top > 0 ? top : 1.f;
      options.probability = false;
    }
  }
  // The texture changes with the file, the selection and the filter (its settings).
  const std::uint64_t revision =
      (view.generation << 32) ^ shown.selectionRevision ^
      (view.filter.enabled && view.filter.cache ? (view.filter.revision + 1) << 44 : 0);
  const HeatmapInteraction hit = heatmapWidget("##attention", heatmaps, heatmap, revision, options);
  if (hit.clicked) {
    view.focus.column = false;
    view.focus.index = hit.row;
  }
}

}  // namespace attn::app::attention_panel
