// The Attention panel's model view: a layer x head grid of the pooled thumbnails (made once
// per source on a worker), each with its entropy and top-1 mass as two small bars, sortable
// by them; a click shows that head.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "app/session/attention_analysis.h"
#include "app/ui/panels/attention/attention_panel.h"
#include "app/ui/panels/panel_common.h"

namespace attn::app::attention_panel {

using panel::tooltip;

namespace {

// The order of the heads of `layer` in the grid.
std::vector<int> headOrder(const io::HeadOverview& overview, int layer, HeadSort sort) {
  std::vector<int> order(static_cast<std::size_t>(overview.heads));
  std::iota(order.begin(), order.end(), 0);
  if (sort == HeadSort::Index) return order;
  const auto stat = [&](int h) -> const HeadStats& {
    return overview.stats[static_cast<std::size_t>(layer * overview.heads + h)];
  };
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return sort == HeadSort::EntropyAscending ? stat(a).entropy < stat(b).entropy
                                              : stat(a).top1Mass > stat(b).top1Mass;
  });
  return order;
}

// The thumbnails' axis labels: token ranges of the pooled cells (one set per file: every
// head of a file has the same shape, so the same pooling).
void ensureThumbnailLabels(AttentionView& view) {
  if (view.thumbnailLabelsGeneration == view.generation || !view.overview ||
      view.overview->thumbnails.empty())
    return;
  const Matrix& thumb = view.overview->thumbnails.front();
  const io::AttentionShape& shape = view.source->tensor->shape();
  view.thumbnailRowLabels =
      pooledAxisLabels(view.source->tensor->queryLabels(), shape.queries, static_cast<int>(thumb.rows()));
  view.thumbnailColLabels =
      pooledAxisLabels(view.source->tensor->keyLabels(), shape.keys, static_cast<int>(thumb.cols()));
  view.thumbnailLabelsGeneration = view.generation;
}

}  // namespace

void drawGrid(AppState& state, HeatmapCache& heatmaps) {
  AttentionView& view = state.attention;
  const float font = ImGui::GetFontSize();
  if (!view.overview) {
    ImGui::ProgressBar(view.overviewProgress, ImVec2(-1, 0), "making thumbnails\xE2\x80\xA6");
    return;
  }
  const io::HeadOverview& overview = *view.overview;
  const char* sorts[] = {"head index", "entropy (low first)", "top-1 mass (high first)"};
  int sort = static_cast<int>(view.sort);
  ImGui::SetNextItemWidth(font * 12.f);
  if (ImGui::Combo("sort heads by", &sort, sorts, 3)) view.sort = static_cast<HeadSort>(sort);
  tooltip("Orders the heads of each layer. Under each thumbnail: entropy (blue, as a share "
          "of ln n_k, the uniform row) and top-1 mass (orange, mean of each row's max).");

  const int layers = overview.layers, heads = overview.heads;
  const ImGuiStyle& style = ImGui::GetStyle();
  const float labelW = font * 2.5f;
  const float avail = ImGui::GetContentRegionAvail().x - labelW - style.ScrollbarSize;
  const float gap = 2.f;
  const float side = std::clamp(avail / static_cast<float>(heads) - gap, font * 1.5f, font * 8.f);
  const float barH = std::max(2.f, font * 0.18f);
  const double lnKeys = std::log(std::max(2, view.source->tensor->shape().keys));
  const io::AttentionSelection& sel = view.selection;
  const bool byIndex = view.sort == HeadSort::Index;

  ensureThumbnailLabels(view);
  ImGui::BeginChild("##grid", ImVec2(0, 0), false, ImGuiWindowFlags_HorizontalScrollbar);
  ImDrawList* draw = ImGui::GetWindowDrawList();
  // Column header: head numbers (only when the columns are heads).
  if (byIndex) {
    ImGui::Dummy(ImVec2(labelW - style.ItemSpacing.x, 0));
    for (int h = 0; h < heads; ++h) {
      ImGui::SameLine(labelW + static_cast<float>(h) * (side + gap));
      ImGui::TextDisabled("h%d", h);
    }
  }
  for (int l = 0; l < layers; ++l) {
    const std::vector<int> order = headOrder(overview, l, view.sort);
    ImGui::AlignTextToFramePadding();
    ImGui::TextDisabled("L%d", l);
    for (int c = 0; c < heads; ++c) {
      const int h = order[static_cast<std::size_t>(c)];
      const std::size_t index = static_cast<std::size_t>(l * heads + h);
      if (index >= overview.thumbnails.size()) break;
      ImGui::SameLine(labelW + static_cast<float>(c) * (side + gap));
      ImGui::BeginGroup();
      ImGui::PushID(static_cast<int>(index));
      const Matrix& thumb = overview.thumbnails[index];
      const HeadStats& stats = overview.stats[index];
      std::string tip = "layer " + std::to_string(l);
      tip += ", head " + std::to_string(h);
      tip += "\nentropy " + formatNumber(stats.entropy, 3) + " nats";
      tip += ", top-1 mass " + formatNumber(stats.top1Mass, 3);
      if (overview.nonFinite[index].total() > 0)
        tip += "\nnon-finite: " + io::describeNonFinite(overview.nonFinite[index]);
      const bool intervened = view.source->isIntervened(l, h);
      if (intervened) {
        tip += "\n" + view.source->intervention +
               ": its own pattern is unchanged (z is edited after the softmax); the heads "
               "after it moved";
      }
      tip += "\nclick: show this head";
      HeatmapOptions options = panel::heatmapOptions(state);
      // Attention weights (io::rangeRule checks they are); a mechanism that is not a share
      // (norm-weighted, raw flow) spans each thumbnail's own min..max.
      options.probability = view.source->quantity.probability;
      options.size = ImVec2(side, side);
      options.slimColorbar = true;
      options.axisLabels = false;
      options.cellLabels = false;
      options.highlight = sel.kind == io::AttentionSelection::Kind::Head && sel.layer == l &&
                          sel.head == h;
      options.tooltip = tip.c_str();
      const std::string title =
          "layer " + std::to_string(l) + " \xC2\xB7 head " + std::to_string(h);
      const bool labelled = static_cast<int>(view.thumbnailRowLabels.size()) == thumb.rows() &&
                            static_cast<int>(view.thumbnailColLabels.size()) == thumb.cols();
      using Labels = std::span<const std::string>;
      const HeatmapView thumbView(matrixRef(thumb),
                                      labelled ? Labels(view.thumbnailRowLabels) : Labels(),
                                      labelled ? Labels(view.thumbnailColLabels) : Labels(), title);
      const ImVec2 thumbAt = ImGui::GetCursorScreenPos();
      const HeatmapInteraction hit =
          heatmapWidget("##t", heatmaps, thumbView, view.generation, options);
      if (intervened) {  // an ablated head: a red frame and cross over its thumbnail
        const float t = std::max(2.f, font * 0.14f);
        const ImVec2 end(thumbAt.x + side, thumbAt.y + side);
        draw->AddRect(thumbAt, end, IM_COL32(230, 60, 60, 255), 0.f, 0, t);
        draw->AddLine(thumbAt, end, IM_COL32(230, 60, 60, 160), t * 0.5f);
        draw->AddLine(ImVec2(end.x, thumbAt.y), ImVec2(thumbAt.x, end.y), IM_COL32(230, 60, 60, 160),
                      t * 0.5f);
      }
      if (hit.clicked) {
        io::AttentionSelection next;
        next.kind = io::AttentionSelection::Kind::Head;
        next.layer = l;
        next.head = h;
        selectAttentionView(view, next);
      }
      // Two bars: entropy / ln n_k (blue), top-1 mass (orange).
      const ImVec2 p = ImGui::GetCursorScreenPos();
      const float e = static_cast<float>(std::clamp(stats.entropy / lnKeys, 0.0, 1.0));
      const float t = static_cast<float>(std::clamp(stats.top1Mass, 0.0, 1.0));
      draw->AddRectFilled(p, ImVec2(p.x + side, p.y + 2 * barH + 1), IM_COL32(60, 60, 60, 255));
      draw->AddRectFilled(p, ImVec2(p.x + side * e, p.y + barH), IM_COL32(66, 158, 245, 255));
      draw->AddRectFilled(ImVec2(p.x, p.y + barH + 1), ImVec2(p.x + side * t, p.y + 2 * barH + 1),
                          IM_COL32(250, 140, 40, 255));
      ImGui::Dummy(ImVec2(side, 2 * barH + 1));
      if (!byIndex) {
        ImGui::TextDisabled("h%d", h);
      }
      ImGui::PopID();
      ImGui::EndGroup();
    }
  }
  ImGui::EndChild();
}

}  // namespace attn::app::attention_panel
