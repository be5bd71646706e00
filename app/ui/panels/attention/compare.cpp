// The Attention panel's compare view: A (the selection) | B (another selection of this
// source or of another file) | A - B on RdBu centred on 0, with linked hover.
#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "app/session/attention_analysis.h"
#include "app/ui/panels/attention/attention_panel.h"
#include "app/ui/panels/panel_common.h"

namespace attn::app::attention_panel {

using panel::tooltip;

namespace {

// Where B comes from: another file (path field) or the open one, and B's selection.
void drawCompareControls(AppState& state) {
  AttentionView& view = state.attention;
  AttentionCompare& compare = view.compare;
  const float font = ImGui::GetFontSize();
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("B:");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(font * 14.f);
  const bool entered =
      ImGui::InputTextWithHint("##comparePath", "another .npy / .npz file", &compare.pathText,
                               ImGuiInputTextFlags_EnterReturnsTrue);
  tooltip(
      "The same head of another file (another checkpoint, prompt or model) as B. An "
      "error keeps the current comparison.");
  ImGui::SameLine();
  if ((ImGui::Button("open") || entered) && !compare.pathText.empty())
    openCompareFile(state, compare.pathText, ImGui::GetTime());
  ImGui::SameLine();
  if (ImGui::Button("this file") && compare.file) {
    compare.file.reset();
    ++compare.revision;
  }
  tooltip("Compare two selections of the open file.");
  ImGui::SameLine();
  const io::AttentionFile& file = compare.file ? *compare.file : *view.source->tensor;
  ImGui::TextDisabled("%s", std::filesystem::path(file.path()).filename().string().c_str());
  ImGui::PushID("compareB");
  if (selectionControls(file, compare.selection)) ++compare.revision;
  ImGui::PopID();
}

}  // namespace

void drawCompareView(AppState& state, HeatmapCache& heatmaps,
                     const std::shared_ptr<const AttentionShown>& shown) {
  AttentionView& view = state.attention;
  AttentionCompare& compare = view.compare;
  drawCompareControls(state);
  updateCompare(view, shown);
  if (!compare.error.empty()) panel::coloredWrapped(panel::errorColor(), compare.error);
  const float font = ImGui::GetFontSize();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float gap = ImGui::GetStyle().ItemSpacing.x;
  const float w = std::max(font * 6.f, (avail.x - 2.f * gap) / 3.f);
  const float h = std::max(font * 6.f, std::min(avail.y - font * 3.f, w + font * 2.f));
  // A and B share one colour range (the fixed range of the View menu wins).
  HeatmapOptions same = panel::heatmapOptions(state);
  same.probability = true;
  same.size = ImVec2(w, h);
  if (state.view.fixedRange) {
    same.vmin = state.view.rangeMin;
    same.vmax = state.view.rangeMax;
  } else if (compare.sharedRange && colorRangeMode(state.view) == RangeMode::MinMax) {
    same.vmin = compare.sharedRange->lo;
    same.vmax = compare.sharedRange->hi;
  }
  same.markRow = compare.hoverRow;
  same.markCol = compare.hoverCol;
  int hoverRow = -1, hoverCol = -1;
  const std::uint64_t revisionA = (view.generation << 32) ^ shown->selectionRevision;
  const std::uint64_t revisionB = revisionA ^ ((compare.revision + 1) << 44);
  const auto panelOf = [&](const char* id, const char* name, const MatrixView* m,
                           std::uint64_t revision, const HeatmapOptions& options) {
    ImGui::BeginGroup();
    ImGui::TextDisabled("%s", name);
    if (m) {
      const HeatmapInteraction hit =
          heatmapWidget(id, heatmaps, HeatmapView(*m), revision, options);
      if (hit.hovered) hoverRow = hit.row, hoverCol = hit.col;
    } else {
      ImGui::Dummy(ImVec2(w, h));
    }
    ImGui::EndGroup();
  };
  panelOf("##compareA", "A (the selection above)", &shown->selected.view, revisionA, same);
  ImGui::SameLine();
  // B and A - B without axis labels, so that all three grids have the same cells (A has
  // the labels; the hover readout names the tokens in each).
  same.axisLabels = false;
  panelOf("##compareB", "B", compare.shownB ? &compare.shownB->view : nullptr, revisionB, same);
  ImGui::SameLine();
  HeatmapOptions difference = same;
  difference.colormap = ColormapKind::RdBu;  // diverging, centred on 0
  difference.centreZero = true;
  difference.probability = false;
  difference.range = RangeMode::Auto;  // symmetric about 0
  difference.vmin.reset();
  difference.vmax.reset();
  panelOf("##compareDiff", "A \xE2\x88\x92 B (blue: B larger, red: A larger)",
          compare.difference.get(), revisionB, difference);
  compare.hoverRow = hoverRow;
  compare.hoverCol = hoverCol;
  // The linked cell's three numbers.
  if (hoverRow >= 0 && compare.shownB && compare.difference) {
    const MatrixView& a = shown->selected.view;
    const auto label = [](const std::vector<std::string>& labels, int i) {
      return i < static_cast<int>(labels.size()) ? labels[static_cast<std::size_t>(i)]
                                                 : std::to_string(i);
    };
    ImGui::Text("query %d '%s' \xE2\x86\x92 key %d '%s':  A %s   B %s   A \xE2\x88\x92 B %s",
                hoverRow, label(a.rowLabels, hoverRow).c_str(), hoverCol,
                label(a.colLabels, hoverCol).c_str(),
                formatNumber(a.values(hoverRow, hoverCol), 4).c_str(),
                formatNumber(compare.shownB->view.values(hoverRow, hoverCol), 4).c_str(),
                formatNumber(compare.difference->values(hoverRow, hoverCol), 4).c_str());
  } else {
    ImGui::TextDisabled("hover a cell: the same cell is outlined in the other two");
  }
}

}  // namespace attn::app::attention_panel
