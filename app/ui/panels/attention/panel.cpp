// The Attention panel (see attention_panel.h): the source's header, the model view (left),
// the selection and the tabs (right). The tabs a source offers come from its SourceViews:
// the panel never asks which kind of source it shows.
#include <imgui.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "app/session/attention_analysis.h"
#include "app/session/attention_service.h"
#include "app/ui/panels/attention/attention_panel.h"
#include "app/ui/panels/panel_mechanism.h"
#include "app/ui/panels/panel_common.h"
#include "app/ui/panels/panel_registry.h"
#include "app/ui/panels/panels.h"

namespace attn::app {

namespace attention_panel {

using panel::tooltip;

std::string fmt(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

// Kind, layer and head of a selection of `file` (one line). Returns true when it changed.
bool selectionControls(const io::AttentionFile& file, io::AttentionSelection& sel, bool offerRollout) {
  const io::AttentionSelection before = sel;
  const char* kinds[] = {"One head", "Mean over heads", "Max over heads", "Rollout"};
  const bool rollout = sel.kind == io::AttentionSelection::Kind::Rollout;
  int kind = static_cast<int>(sel.kind);
  const float font = ImGui::GetFontSize();
  // One head per layer (value zeroing, flow): nothing to pick but the layer.
  if (offerRollout || (!rollout && file.heads() > 1)) {
    ImGui::SetNextItemWidth(font * 10.f);
    if (ImGui::Combo("##kind", &kind, kinds, offerRollout ? 4 : 3))
      sel.kind = static_cast<io::AttentionSelection::Kind>(kind);
    tooltip(offerRollout ? "One head; the mean or max over the heads of a layer; or attention rollout "
                           "(Abnar & Zuidema 2020): layers 0..L multiplied, each 0.5\xC2\xB7mean + 0.5\xC2\xB7I with "
                           "rows renormalised."
                         : "One head, or the mean or max over the heads of a layer (rollout is a choice of "
                           "\"show\").");
    ImGui::SameLine();
  }
  ImGui::SetNextItemWidth(font * 8.f);
  int layer = sel.layer;
  if (file.layers() > 1 || offerRollout) {
    if (ImGui::SliderInt(rollout ? "up to layer" : "layer", &layer, 0, std::max(0, file.layers() - 1))) sel.layer = layer;
  }
  if (sel.kind == io::AttentionSelection::Kind::Head && (file.heads() > 1 || offerRollout)) {
    ImGui::SameLine();
    ImGui::SetNextItemWidth(font * 8.f);
    int head = sel.head;
    if (ImGui::SliderInt("head", &head, 0, std::max(0, file.heads() - 1))) sel.head = head;
  }
  sel.layer = std::clamp(sel.layer, 0, file.layers() - 1);
  sel.head = std::clamp(sel.head, 0, file.heads() - 1);
  return sel.kind != before.kind || sel.layer != before.layer || sel.head != before.head;
}

// The "show" selector (weights, the mechanisms of a model run, rollout), then the kind,
// layer and head of the selection.
void drawSelector(AppState& state) {
  drawMechanismSelector(state, "attention");
  AttentionView& view = state.attention;
  if (!view.source) return;  // the selector emptied the view (an emptied text)
  io::AttentionSelection sel = view.selection;
  selectionControls(*view.source->tensor, sel, /*offerRollout=*/false);
  selectAttentionView(view, sel);
}

}  // namespace attention_panel

namespace {

using namespace attention_panel;

// An .npz with several arrays: one button per readable array.
void drawArrayChoice(AppState& state) {
  AttentionView& view = state.attention;
  const std::string path = view.choosePath;
  ImGui::TextColored(panel::warningColor(), "%s holds several arrays; open one:",
                     std::filesystem::path(path).filename().string().c_str());
  std::string picked;
  for (const io::ArraySummary& a : view.chooseArrays) {
    std::string shape;
    for (std::int64_t d : a.shape) {
      shape += shape.empty() ? "[" : ", ";
      shape += std::to_string(d);
    }
    shape += "]";
    ImGui::SameLine();
    if (ImGui::SmallButton((a.name + " " + shape).c_str())) picked = a.name;
  }
  ImGui::SameLine();
  if (ImGui::SmallButton("cancel")) {
    view.choosePath.clear();
    view.chooseArrays.clear();
  }
  if (!picked.empty()) {
    io::AttentionOpenOptions options;
    options.arrayName = picked;
    if (!openAttentionFile(state, path, ImGui::GetTime(), options)) {
      view.choosePath.clear();  // the error is in the notices
      view.chooseArrays.clear();
    }
  }
}

}  // namespace

// =======================================================================================
// The panel
// =======================================================================================

void drawAttentionPanel(AppState& state, UiState& ui) {
  HeatmapCache& heatmaps = ui.heatmaps;
  if (!panel::beginPanel("Attention", panelFlag(state.view, "attention"))) return;
  AttentionView& view = state.attention;
  if (!view.choosePath.empty()) drawArrayChoice(state);
  if (!view.source) {
    panel::mutedWrapped("No attention file open. File \xE2\x96\xB8 Open (or drop on the window) a "
                        ".npy or .npz attention tensor; see docs/import.md. The Heads, Image "
                        "and Training panels can show their attention here too.");
    ImGui::End();
    return;
  }
  // Held for the frame: the "show" selector may replace view.source below.
  const SourcePtr held = view.source;
  const AttentionSource& source = *held;
  const io::AttentionShape& shape = source.shape();
  const SourceViews& views = source.views;
  ImGui::TextUnformatted(source.name.c_str());
  ImGui::SameLine();
  ImGui::TextDisabled("%s \xC3\x97 %s, %d \xC3\x97 %d tokens; labels: %s",
                      countOf(shape.layers, "layer", "layers").c_str(),
                      countOf(shape.heads, "head", "heads").c_str(), shape.queries, shape.keys,
                      source.labelsFrom().c_str());
  tooltip(source.detail);
  if (view.overview && view.overview->totalNonFinite.total() > 0) {
    ImGui::SameLine();
    ImGui::TextColored(panel::warningColor(),
                       "non-finite: %s (NaN and +inf magenta, -inf grey; hatched)",
                       io::describeNonFinite(view.overview->totalNonFinite).c_str());
  }

  if (views.grid) {
    const float leftW = ImGui::GetContentRegionAvail().x * 0.45f;
    ImGui::BeginChild("##model", ImVec2(leftW, 0), true);
    drawGrid(state, heatmaps);
    ImGui::EndChild();
    ImGui::SameLine();
  }
  ImGui::BeginChild("##detail", ImVec2(0, 0), true);
  drawSelector(state);
  const std::shared_ptr<const AttentionShown> shown = view.shown;
  if (!shown) {
    panel::mutedWrapped("computing\xE2\x80\xA6");
  } else if (!shown->error.empty()) {
    panel::coloredWrapped(panel::errorColor(), shown->error);
  } else {
    const bool stale = shown->selectionRevision != view.selectionRevision;
    ImGui::TextDisabled("%s%s", shownTitle(source, *shown, shown->selected.view.title).c_str(),
                        stale ? "  (computing\xE2\x80\xA6)" : "");
    if (shown->selected.nonFinite.total() > 0) {
      ImGui::SameLine();
      ImGui::TextColored(panel::warningColor(), "%s",
                         io::describeNonFinite(shown->selected.nonFinite).c_str());
    }
    drawFilterBar(view);
    const std::vector<bool>* dropped = nullptr;
    const MatrixView& displayed = displayedMatrix(view, shown, &dropped);
    drawFilterSummary(view, *dropped);
    const auto tabFlags = [&](int tab) {
      return view.requestTab == tab ? ImGuiTabItemFlags_SetSelected : 0;
    };
    if (ImGui::BeginTabBar("##views")) {
      if (ImGui::BeginTabItem("Heatmap", nullptr, tabFlags(0))) {
        drawHeatmapTab(state, heatmaps, *shown, displayed);
        ImGui::EndTabItem();
      }
      if (views.headView && ImGui::BeginTabItem("Head view", nullptr, tabFlags(1))) {
        drawHeadView(view, *shown);
        ImGui::EndTabItem();
      }
      if (views.text && ImGui::BeginTabItem("Text view", nullptr, tabFlags(2))) {
        drawTextView(view, displayed);
        ImGui::EndTabItem();
      }
      if (ImGui::BeginTabItem("Focus", nullptr, tabFlags(3))) {
        drawFocusView(view, displayed, *dropped);
        ImGui::EndTabItem();
      }
      if (views.compare && ImGui::BeginTabItem("Compare", nullptr, tabFlags(4))) {
        drawCompareView(state, heatmaps, shown);
        ImGui::EndTabItem();
      }
      ImGui::EndTabBar();
    }
    view.requestTab = -1;
  }
  ImGui::EndChild();
  ImGui::End();
}

}  // namespace attn::app
