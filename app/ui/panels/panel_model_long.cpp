// The Model panel's summary view of a long input (see panel_model_long.h). Everything drawn
// comes from the session's LongContextState: the summary (per-head means, the strips, the
// column-sum track, all made by app/session/long_context_service.cpp) and the newest exact
// tile. The panel edits the selection, the colouring, the visible block and the two
// options; the update step recomputes the block on its worker.
#include "app/ui/panels/panel_model_long.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "app/session/long_context_service.h"
#include "app/ui/panels/panel_common.h"
#include "app/ui/widgets/heatmap_prepared.h"
#include "core/base/format.h"

namespace attn::app {

namespace {

using panel::tooltip;

// What each colouring means, with the formulas of docs/long-context.md.
const char* metricName(SummaryMetric m) {
  switch (m) {
    case SummaryMetric::Sink: return "sink mass";
    case SummaryMetric::Local: return "local mass";
    case SummaryMetric::Distant: return "distant mass";
    case SummaryMetric::Entropy: break;
  }
  return "entropy";
}

std::string metricHelp(SummaryMetric m, const model::SummaryOptions& o) {
  const std::string sink = std::to_string(o.sink), local = std::to_string(o.local);
  switch (m) {
    case SummaryMetric::Sink:
      return "Sink mass: \xCE\xA3_{j < " + sink + "} a_ij, the weight query i puts on the first " + sink +
             " keys (attention sinks), averaged over the queries i.";
    case SummaryMetric::Local:
      return "Local mass: \xCE\xA3_{0 \xE2\x89\xA4 i \xE2\x88\x92 j < " + local +
             "} a_ij, the weight on the query itself and the " + std::to_string(o.local - 1) +
             " keys before it, averaged over the queries.";
    case SummaryMetric::Distant:
      return "Distant mass: \xCE\xA3_{j \xE2\x89\xA5 " + sink + ", i \xE2\x88\x92 j \xE2\x89\xA5 " + local +
             "} a_ij, the weight on keys neither sink nor local (1 \xE2\x88\x92 the mass of their union): "
             "large for retrieval heads, small for streaming heads (DuoAttention), averaged over the queries.";
    case SummaryMetric::Entropy: break;
  }
  return "Entropy: \xE2\x88\x92\xCE\xA3_j a_ij ln a_ij in nats, 0 for a row on one key, ln(i + 1) for a uniform "
         "row over its i + 1 keys; averaged over the queries.";
}

// ---------------------------------------------------------------------------------------
// Strips and the track
// ---------------------------------------------------------------------------------------

// One strip: `values` (one per bin of `step` tokens) as a line on [lo, hi], `label` at its
// left. Hover names the bin's tokens and its value (`what`). Returns the clicked bin or -1.
int drawStrip(const char* id, std::span<const float> values, float lo, float hi, int step, int n,
              const char* label, const char* what, bool bars) {
  const float font = ImGui::GetFontSize();
  const float labelW = font * 6.5f;
  ImGui::TextUnformatted(label);
  ImGui::SameLine(labelW);
  const ImVec2 p = ImGui::GetCursorScreenPos();
  const float w = std::max(font * 4.f, ImGui::GetContentRegionAvail().x), h = font * (bars ? 2.6f : 1.9f);
  ImGui::InvisibleButton(id, ImVec2(w, h));
  ImDrawList* draw = ImGui::GetWindowDrawList();
  draw->AddRectFilled(p, ImVec2(p.x + w, p.y + h), ImGui::GetColorU32(ImGuiCol_FrameBg));
  const int bins = static_cast<int>(values.size());
  if (bins == 0) return -1;
  const float span = hi > lo ? hi - lo : 1.f;
  auto yOf = [&](float v) { return p.y + h - std::clamp((v - lo) / span, 0.f, 1.f) * (h - 2.f) - 1.f; };
  if (bars) {
    const ImU32 colour = ImGui::GetColorU32(ImGuiCol_PlotHistogram);
    for (int b = 0; b < bins; ++b) {
      const float x0 = p.x + w * static_cast<float>(b) / static_cast<float>(bins);
      const float x1 = std::max(x0 + 1.f, p.x + w * static_cast<float>(b + 1) / static_cast<float>(bins));
      if (values[static_cast<std::size_t>(b)] > lo) draw->AddRectFilled(ImVec2(x0, yOf(values[static_cast<std::size_t>(b)])), ImVec2(x1, p.y + h), colour);
    }
  } else {
    std::vector<ImVec2> points(static_cast<std::size_t>(bins));
    for (int b = 0; b < bins; ++b)
      points[static_cast<std::size_t>(b)] = ImVec2(p.x + w * (static_cast<float>(b) + 0.5f) / static_cast<float>(bins),
                                                   yOf(values[static_cast<std::size_t>(b)]));
    draw->AddPolyline(points.data(), bins, ImGui::GetColorU32(ImGuiCol_PlotLines), 0, std::max(1.f, font * 0.08f));
  }
  // the scale's ends, inside the strip's right edge
  const std::string top = formatNumber(hi, 3);
  draw->AddText(ImVec2(p.x + w - ImGui::CalcTextSize(top.c_str()).x - 2.f, p.y), ImGui::GetColorU32(ImGuiCol_TextDisabled), top.c_str());
  if (!ImGui::IsItemHovered()) return -1;
  const int b = std::clamp(static_cast<int>((ImGui::GetIO().MousePos.x - p.x) / w * static_cast<float>(bins)), 0, bins - 1);
  const int first = b * step, last = std::min(n, (b + 1) * step) - 1;
  std::string tip = (first == last ? "token " + std::to_string(first)
                                   : "tokens " + std::to_string(first) + "\xE2\x80\x93" + std::to_string(last)) +
                    ": " + what + " " + formatNumber(values[static_cast<std::size_t>(b)], 3);
  tooltip(tip.c_str());
  draw->AddLine(ImVec2(p.x + w * (static_cast<float>(b) + 0.5f) / static_cast<float>(bins), p.y),
                ImVec2(p.x + w * (static_cast<float>(b) + 0.5f) / static_cast<float>(bins), p.y + h),
                ImGui::GetColorU32(ImGuiCol_Text));
  return ImGui::IsItemClicked() ? b : -1;
}

float maxOf(std::span<const float> v) {
  float m = 0;
  for (float x : v) m = std::max(m, x);
  return m;
}

// ---------------------------------------------------------------------------------------
// The visible block
// ---------------------------------------------------------------------------------------

// The block of `side` x `side`-ish tokens centred on (row, col), kept inside [0, n).
TileView centredOn(const TileView& t, int row, int col, int rows, int cols, int n) {
  rows = std::clamp(rows, 1, n);
  cols = std::clamp(cols, 1, n);
  TileView out = t;
  out.q0 = std::clamp(row - rows / 2, 0, n - rows);
  out.q1 = out.q0 + rows;
  out.k0 = std::clamp(col - cols / 2, 0, n - cols);
  out.k1 = out.k0 + cols;
  return out;
}

void drawTileControls(AppState& state, LongContextState& lc, int n) {
  const float font = ImGui::GetFontSize();
  TileView& t = lc.tile;
  const int rows = t.q1 - t.q0, cols = t.k1 - t.k0;
  const int midRow = (t.q0 + t.q1) / 2, midCol = (t.k0 + t.k1) / 2;
  if (ImGui::Button("Whole")) t = TileView{t.layer, t.head, 0, n, 0, n};
  tooltip("Show every query and key (max-pooled to 512 cells a side).");
  ImGui::SameLine();
  if (ImGui::Button("Zoom in")) t = centredOn(t, midRow, midCol, std::max(8, rows / 2), std::max(8, cols / 2), n);
  tooltip("Half the queries and keys, about the middle. A click on a cell zooms in on it too.");
  ImGui::SameLine();
  if (ImGui::Button("Zoom out")) t = centredOn(t, midRow, midCol, rows * 2, cols * 2, n);
  ImGui::SameLine();
  if (ImGui::ArrowButton("##left", ImGuiDir_Left)) t = centredOn(t, midRow, midCol - cols / 2, rows, cols, n);
  tooltip("Earlier keys (half a view)");
  ImGui::SameLine();
  if (ImGui::ArrowButton("##right", ImGuiDir_Right)) t = centredOn(t, midRow, midCol + cols / 2, rows, cols, n);
  tooltip("Later keys (half a view)");
  ImGui::SameLine();
  if (ImGui::ArrowButton("##up", ImGuiDir_Up)) t = centredOn(t, midRow - rows / 2, midCol, rows, cols, n);
  tooltip("Earlier queries (half a view)");
  ImGui::SameLine();
  if (ImGui::ArrowButton("##down", ImGuiDir_Down)) t = centredOn(t, midRow + rows / 2, midCol, rows, cols, n);
  tooltip("Later queries (half a view)");
  ImGui::Checkbox("Log colour scale", &state.view.logWeights);
  tooltip("log10 of the weights (a floor for 0), so that small weights far from the peaks get colours; "
          "off: probabilities on a fixed 0\xE2\x80\x93" "1 scale. The same setting as View \xE2\x96\xB8 Log "
          "scale for weights (and a scenario file's \"color_scale\": \"log\").");
  ImGui::SameLine();
  ImGui::Checkbox("Hide the sink columns", &lc.hideSinks);
  tooltip(("Leave keys 0\xE2\x80\x93" + std::to_string(lc.options.sink - 1) +
           " (the attention sinks) out of the heatmap and the column-sum track's scale, so that "
           "they do not flatten the colours of the other keys.")
              .c_str());
  // [first, last) of the rows or the keys as a drag field of the first and last index shown
  auto rangeField = [&](const char* label, int& first, int& last, int span, const char* help) {
    ImGui::SetNextItemWidth(font * 11.f);
    int lo = first, hi = last - 1;
    if (ImGui::DragIntRange2(label, &lo, &hi, std::max(1.f, span / 200.f), 0, n - 1)) {
      first = std::clamp(lo, 0, n - 1);
      last = std::clamp(hi, first, n - 1) + 1;
    }
    tooltip(help);
  };
  rangeField("queries", t.q0, t.q1, rows, "The first and last query row shown (drag, or double-click to type).");
  ImGui::SameLine();
  rangeField("keys", t.k0, t.k1, cols, "The first and last key column shown.");
}

void drawTile(AppState& state, UiState& ui, LongContextState& lc, int n) {
  const LongTile* tile = lc.shown.get();
  std::string line;
  if (tile && tile->error.empty()) {
    line = "layer " + std::to_string(tile->view.layer) + ", head " + std::to_string(tile->view.head) +
           ": queries " + std::to_string(tile->view.q0) + "\xE2\x80\x93" + std::to_string(tile->view.q1 - 1) + ", keys " +
           std::to_string(tile->view.k0) + "\xE2\x80\x93" + std::to_string(tile->view.k1 - 1) + " \xC2\xB7 ";
    line += tile->rowStep == 1 && tile->colStep == 1
                ? std::string("exact weights, cell for cell")
                : "each cell the largest exact weight of " + std::to_string(tile->rowStep) + " \xC3\x97 " +
                      std::to_string(tile->colStep) + " (queries \xC3\x97 keys)";
    line += " \xC2\xB7 " + formatNumber(tile->ms, 3) + " ms";
  }
  if (lc.tileRunning) line += line.empty() ? "recomputing the block\xE2\x80\xA6" : "  (recomputing\xE2\x80\xA6)";
  panel::mutedWrapped(line);  // wraps: the block, the pooling and the time are long
  tooltip("a_ij = exp(s_ij \xE2\x88\x92 lse_i) from the layer's kept q and k and the pass's log-sum-exp of "
          "each row: the exact weights, recomputed on a worker for the block in view (the frames never wait).");
  if (!tile) return;
  if (!tile->error.empty()) {
    panel::coloredWrapped(panel::warningColor(), tile->error);
    return;
  }
  if (tile->weights.size() == 0) return;
  HeatmapOptions options = panel::heatmapOptions(state);
  // Probabilities on a fixed 0..1 (log10 when asked): the rule the worker made the tile's
  // colour positions with, so that the widget takes them instead of computing them here.
  static_cast<io::ColorNormalization&>(options) = tileNormalization(state.view.logWeights);
  PreparedColors prepared;
  prepared.normalization = io::normalizationOf(options);
  prepared.finite = tile->finite;
  if (state.view.logWeights) {
    prepared.positions = matrixRef(tile->logPositions);
    prepared.range = tile->logRange;
  }
  options.tooltip = tile->rowStep == 1 && tile->colStep == 1
                        ? "exact attention weight a_ij (row: query, column: key)"
                        : "the largest exact weight of this block of queries x keys (max-pooled: a peak stays visible)";
  // the colour bar's end labels are centred on its ends: leave half a line under the bottom
  // one (as the Image panel does), or the panel's edge cuts the "0"
  options.size = ImVec2(ImGui::GetContentRegionAvail().x,
                        std::max(ImGui::GetFontSize() * 12.f,
                                 ImGui::GetContentRegionAvail().y - ImGui::GetTextLineHeight() * 0.6f));
  const std::string title = "layer " + std::to_string(tile->view.layer) + ", head " + std::to_string(tile->view.head);
  HeatmapView view(matrixRef(tile->weights), tile->rowLabels, tile->colLabels, title);
  view.rowAxis = "query";
  view.colAxis = "key";
  view.valueTitle = "weight";
  const auto revision = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(tile)) ^ (state.view.logWeights ? 1u : 0u);
  const HeatmapInteraction hit = heatmapWidget("##longTile", ui.heatmaps, view, revision, options, prepared);
  if (hit.clicked && hit.row >= 0 && hit.col >= 0 && (tile->rowStep > 1 || tile->colStep > 1 || tile->view.q1 - tile->view.q0 > 16)) {
    // Zoom in on the clicked cell: a quarter of the rows and keys, centred there.
    const int row = tile->view.q0 + hit.row * tile->rowStep + tile->rowStep / 2;
    const int col = tile->view.k0 + hit.col * tile->colStep + tile->colStep / 2;
    const TileView& t = tile->view;
    lc.tile = centredOn(lc.tile, row, col, std::max(16, (t.q1 - t.q0) / 4), std::max(16, (t.k1 - t.k0) / 4), n);
  }
}

}  // namespace

// =======================================================================================
// The view
// =======================================================================================

void drawLongContextView(AppState& state, UiState& ui, const ModelRun& run) {
  const float font = ImGui::GetFontSize();
  const int tokens = static_cast<int>(run.ids.size());
  ImGui::TextDisabled("%s \xC2\xB7 a long input: the summary of every head instead of the whole attention",
                      countOf(tokens, "token", "tokens").c_str());
  tooltip(("More than " + std::to_string(kLongInputTokens) +
           " tokens (or an attention tensor above the live views' budget): the tiled pass keeps each row's "
           "log-sum-exp and summaries, never the n \xC3\x97 n weights, and any block is recomputed exactly "
           "as you pan (docs/long-context.md).")
              .c_str());
  if (!state.model.longContext) {
    panel::mutedWrapped("starting the summary\xE2\x80\xA6");
    return;
  }
  LongContextState& lc = *state.model.longContext;
  // 1 the pass: progress and Cancel, or what happened to it
  if (lc.running) {
    const float fraction = lc.total > 0 ? static_cast<float>(lc.done) / static_cast<float>(lc.total) : 0.f;
    const double elapsed = ImGui::GetTime() - lc.startedAt;
    std::string label = std::to_string(lc.done) + " / " + std::to_string(lc.total) + " heads \xC2\xB7 " +
                        formatNumber(elapsed, 3) + " s";
    if (lc.done > 0) label += ", about " + formatNumber(elapsed * (lc.total - lc.done) / lc.done, 2) + " s left";
    ImGui::ProgressBar(fraction, ImVec2(-font * 6.f, 0), label.c_str());
    tooltip("The tiled pass over every layer and head runs on a worker; the window stays responsive.");
    ImGui::SameLine();
    if (ImGui::Button("Cancel")) lc.cancelRequested = true;
    tooltip("Stop the pass; the summary on screen (if any) stays.");
  }
  if (!lc.status.empty()) panel::coloredWrapped(lc.status.starts_with("cancelled") ? panel::warningColor() : panel::errorColor(), lc.status);
  if (!lc.result) {
    if (!lc.running && lc.status.empty()) panel::mutedWrapped("The summary appears here when the pass ends.");
    return;
  }
  const LongSummaryResult& r = *lc.result;
  const model::LongSummary& s = r.summary;
  if (r.textRevision != run.textRevision)
    panel::mutedWrapped("Showing the summary of the previous text (" + countOf(s.n, "token", "tokens") + ").");
  // 2 left: the colouring, the grid, the selected head's strips and its column-sum track;
  //   right: the zoomable exact heatmap
  const float leftW = std::max(font * 24.f, ImGui::GetContentRegionAvail().x * 0.45f);
  ImGui::BeginChild("##longLeft", ImVec2(leftW, 0), false);
  ImGui::SetNextItemWidth(font * 10.f);
  if (ImGui::BeginCombo("colour the heads by", metricName(lc.metric))) {
    for (SummaryMetric m : {SummaryMetric::Sink, SummaryMetric::Local, SummaryMetric::Distant, SummaryMetric::Entropy}) {
      if (ImGui::Selectable(metricName(m), lc.metric == m)) lc.metric = m;
      tooltip(metricHelp(m, r.options).c_str());
    }
    ImGui::EndCombo();
  }
  tooltip(metricHelp(lc.metric, r.options).c_str());
  ImGui::TextDisabled("sink: the first %d keys \xC2\xB7 local: %d keys \xC2\xB7 the pass took %s s", r.options.sink,
                      r.options.local, formatNumber(s.seconds, 3).c_str());
  std::vector<std::string> layerLabels, headLabels;
  for (int l = 0; l < s.layers; ++l) layerLabels.push_back(panel::indexed("L", l));
  for (int h = 0; h < s.heads; ++h) headLabels.push_back(panel::indexed("H", h));
  ImGui::BeginChild("##longGrid", ImVec2(0, font * (4.5f + 1.6f * static_cast<float>(s.layers))), false);
  HeatmapOptions grid = panel::heatmapOptions(state);
  const bool entropy = lc.metric == SummaryMetric::Entropy;
  grid.probability = !entropy;
  grid.range = entropy ? RangeMode::MinMax : RangeMode::Fixed;
  if (!entropy) {
    grid.vmin = 0.0f;
    grid.vmax = 1.0f;
  } else {
    grid.vmin.reset();
    grid.vmax.reset();
  }
  grid.markRow = lc.layer;
  grid.markCol = lc.head;
  grid.slimColorbar = true;
  grid.tooltip = "click: select this head (its strips, track and heatmap)";
  grid.size = ImGui::GetContentRegionAvail();
  HeatmapView gridView(matrixRef(metricGrid(r, lc.metric)), layerLabels, headLabels, metricName(lc.metric));
  gridView.rowAxis = "layer";
  gridView.colAxis = "head";
  gridView.valueTitle = entropy ? "nats" : "mass";
  const auto gridRevision = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(&r)) + static_cast<std::uint64_t>(lc.metric);
  const HeatmapInteraction hit = heatmapWidget("##longHeads", ui.heatmaps, gridView, gridRevision, grid);
  if (hit.clicked && hit.row >= 0 && hit.col >= 0) {
    lc.layer = hit.row;
    lc.head = hit.col;
  }
  ImGui::EndChild();
  ImGui::Text("layer %d, head %d along the sequence", lc.layer, lc.head);
  tooltip(("Per query position (bins of " + std::to_string(r.stripStep) +
           " tokens: each point the mean of its queries' values); below, per key, the column sums.")
              .c_str());
  const int step = r.stripStep;
  drawStrip("##sink", headStrip(r, SummaryMetric::Sink, lc.layer, lc.head), 0.f, 1.f, step, s.n, "sink", "mean sink mass", false);
  drawStrip("##local", headStrip(r, SummaryMetric::Local, lc.layer, lc.head), 0.f, 1.f, step, s.n, "local", "mean local mass", false);
  drawStrip("##distant", headStrip(r, SummaryMetric::Distant, lc.layer, lc.head), 0.f, 1.f, step, s.n, "distant", "mean distant mass", false);
  const std::span<const float> ent = headStrip(r, SummaryMetric::Entropy, lc.layer, lc.head);
  drawStrip("##entropy", ent, 0.f, std::max(1e-6f, maxOf(ent)), step, s.n, "entropy", "mean entropy (nats)", false);
  const std::span<const float> track = headColumnTrack(r, lc.layer, lc.head, lc.hideSinks);
  const int key = drawStrip("##colsum", track, 0.f, std::max(1e-6f, maxOf(track)), step, s.n, "col sum",
                            lc.hideSinks ? "largest column sum \xCE\xA3_i a_ij (the attention a key receives; sinks hidden)"
                                         : "largest column sum \xCE\xA3_i a_ij (the attention a key receives)",
                            true);
  if (key >= 0) {  // centre the heatmap's keys on the clicked tokens
    const TileView& t = lc.tile;
    lc.tile = centredOn(t, (t.q0 + t.q1) / 2, key * step + step / 2, t.q1 - t.q0, t.k1 - t.k0, s.n);
  }
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("##longRight", ImVec2(0, 0), false);
  drawTileControls(state, lc, s.n);
  drawTile(state, ui, lc, s.n);
  ImGui::EndChild();
}

}  // namespace attn::app
