// The Attention panel: an opened .npy / .npz file (app/attention_view.h). Left, the model
// view: a layer x head grid of the pooled thumbnails (made once per file on a worker), each
// with its entropy and top-1 mass as two small bars, sortable by them. Right, the selected
// head (or mean / max over heads, or rollout) in three tabs: the full heatmap (zoom, pan,
// hover readout with the token labels), the head view (BertViz style: two token columns
// joined by lines whose opacity is the weight), the text view (CircuitsVis style: the
// tokens as text, coloured by how much the selected token attends to them), the focus view
// (one row or column as labelled bars) and the compare view (A | B | A - B with linked
// hover). A special-token filter (drop the keys, renormalise the rows) applies to the
// heatmap, text and focus views; off, they show the raw values.
#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "app/session/attention_analysis.h"
#include "app/session/attention_service.h"
#include "app/ui/panels/panel_common.h"
#include "app/ui/panels/panel_registry.h"
#include "app/ui/panels/panels.h"

namespace attn::app {

namespace {

using panel::tooltip;

std::string fmt(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

// ---------------------------------------------------------------------------------------
// Controls: what the right side shows
// ---------------------------------------------------------------------------------------

// Kind, layer and head of a selection of `file` (one line). Returns true when it changed.
bool selectionControls(const io::AttentionFile& file, io::AttentionSelection& sel) {
  const io::AttentionSelection before = sel;
  const char* kinds[] = {"One head", "Mean over heads", "Max over heads", "Rollout"};
  int kind = static_cast<int>(sel.kind);
  const float font = ImGui::GetFontSize();
  ImGui::SetNextItemWidth(font * 10.f);
  if (ImGui::Combo("##kind", &kind, kinds, 4)) sel.kind = static_cast<io::AttentionSelection::Kind>(kind);
  tooltip("One head; the mean or max over the heads of a layer; or attention rollout "
          "(Abnar & Zuidema 2020): layers 0..L multiplied, each 0.5\xC2\xB7mean + 0.5\xC2\xB7I with "
          "rows renormalised.");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(font * 8.f);
  int layer = sel.layer;
  if (ImGui::SliderInt("layer", &layer, 0, std::max(0, file.layers() - 1))) sel.layer = layer;
  if (sel.kind == io::AttentionSelection::Kind::Head) {
    ImGui::SameLine();
    ImGui::SetNextItemWidth(font * 8.f);
    int head = sel.head;
    if (ImGui::SliderInt("head", &head, 0, std::max(0, file.heads() - 1))) sel.head = head;
  }
  sel.layer = std::clamp(sel.layer, 0, file.layers() - 1);
  sel.head = std::clamp(sel.head, 0, file.heads() - 1);
  return sel.kind != before.kind || sel.layer != before.layer || sel.head != before.head;
}

void drawSelector(AttentionView& view) {
  io::AttentionSelection sel = view.selection;
  selectionControls(*view.file, sel);
  selectAttentionView(view, sel);
}

// ---------------------------------------------------------------------------------------
// Model view: the grid
// ---------------------------------------------------------------------------------------

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
  const io::AttentionShape& shape = view.file->shape();
  view.thumbnailRowLabels =
      pooledAxisLabels(view.file->queryLabels(), shape.queries, static_cast<int>(thumb.rows()));
  view.thumbnailColLabels =
      pooledAxisLabels(view.file->keyLabels(), shape.keys, static_cast<int>(thumb.cols()));
  view.thumbnailLabelsGeneration = view.generation;
}

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
  const double lnKeys = std::log(std::max(2, view.file->shape().keys));
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
      tip += "\nentropy " + fmt("%.3f", stats.entropy) + " nats";
      tip += ", top-1 mass " + fmt("%.3f", stats.top1Mass);
      if (overview.nonFinite[index].total() > 0)
        tip += "\nnon-finite: " + io::describeNonFinite(overview.nonFinite[index]);
      tip += "\nclick: show this head";
      HeatmapOptions options = panel::heatmapOptions(state);
      options.probability = true;  // attention weights (io::rangeRule checks they are)
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
      const HeatmapInteraction hit =
          heatmapWidget("##t", heatmaps, thumbView, view.generation, options);
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

// ---------------------------------------------------------------------------------------
// Head view (BertViz style)
// ---------------------------------------------------------------------------------------

// The k largest finite entries of each row of `a`, as column indices (rows x k, -1 padded).
std::vector<int> topKPerRow(const Matrix& a, int k) {
  const int rows = static_cast<int>(a.rows()), cols = static_cast<int>(a.cols());
  std::vector<int> out(static_cast<std::size_t>(rows) * k, -1);
  std::vector<int> idx(static_cast<std::size_t>(cols));
  const int take = std::min(k, cols);
  for (int r = 0; r < rows; ++r) {
    std::iota(idx.begin(), idx.end(), 0);
    const auto value = [&](int c) {
      const float v = a(r, c);
      return std::isfinite(v) ? v : -1.f;
    };
    std::partial_sort(idx.begin(), idx.begin() + take, idx.end(),
                      [&](int x, int y) { return value(x) > value(y); });
    std::copy(idx.begin(), idx.begin() + take, out.begin() + static_cast<std::ptrdiff_t>(r) * k);
  }
  return out;
}

// Heads overlaid in the head view: every head of the shown layer, read from the file once
// per (file, layer, k) on the UI thread, hence only for small n (kMaxOverlayTokens).
constexpr int kMaxOverlayTokens = 256;

void ensureOverlay(AttentionView& view, int layer, int k) {
  if (view.overlayGeneration == view.generation && view.overlayLayer == layer &&
      view.overlayK == k)
    return;
  view.overlayHeads.clear();
  view.overlayTop.clear();
  for (int h = 0; h < view.file->heads(); ++h) {
    view.overlayHeads.push_back(view.file->copyHead(layer, h));
    view.overlayTop.push_back(topKPerRow(view.overlayHeads.back(), k));
  }
  view.overlayGeneration = view.generation;
  view.overlayLayer = layer;
  view.overlayK = k;
}

// A distinct colour for head h of `heads` (overlay).
ImVec4 headColor(int h, int heads) {
  return ImColor::HSV(static_cast<float>(h) / static_cast<float>(std::max(1, heads)), 0.75f, 1.f);
}

void drawHeadView(AttentionView& view, const AttentionShown& shown) {
  const Matrix& a = shown.selected.view.values;
  const int rows = static_cast<int>(a.rows()), cols = static_cast<int>(a.cols());
  const float font = ImGui::GetFontSize();
  const bool large = cols > 32;
  if (large) {
    ImGui::SetNextItemWidth(font * 8.f);
    ImGui::SliderInt("lines per token", &view.topK, 1, 32);
    tooltip("With many tokens only each query's k strongest keys get a line.");
    ImGui::SameLine();
  }
  const int k = large ? view.topK : cols;
  const bool canOverlay = view.file->heads() > 1 && std::max(rows, cols) <= kMaxOverlayTokens;
  if (canOverlay) {
    ImGui::Checkbox("all heads of the layer", &view.overlay);
    tooltip("Overlay every head of this layer, one colour per head.");
  } else {
    ImGui::TextDisabled("(overlay of heads: up to %d tokens)", kMaxOverlayTokens);
  }
  const bool overlay = canOverlay && view.overlay;
  if (view.topFor != &shown || view.topKFor != k) {
    view.topIndex = topKPerRow(a, k);
    view.topFor = &shown;
    view.topKFor = k;
  }
  if (overlay) {
    ensureOverlay(view, shown.selection.layer, k);
    const int heads = static_cast<int>(view.overlayHeads.size());
    for (int h = 0; h < heads; ++h) {  // the legend: one colour per head
      ImGui::SameLine();
      ImGui::TextColored(headColor(h, heads), "h%d", h);
    }
  }
  ImGui::TextDisabled("queries (left) attend to keys (right); hover a token for its lines only");
  const std::vector<std::string>& qLabels = shown.selected.view.rowLabels;
  const std::vector<std::string>& kLabels = shown.selected.view.colLabels;
  const float rowH = font * 1.25f;
  const int n = std::max(rows, cols);
  ImGui::BeginChild("##headview", ImVec2(0, 0), false);
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const float width = ImGui::GetContentRegionAvail().x;
  const float colW = std::min(font * 10.f, width * 0.3f);
  const float leftX = origin.x + colW, rightX = origin.x + width - colW;
  ImGui::Dummy(ImVec2(width, rowH * static_cast<float>(n)));
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  int hoverQ = -1, hoverK = -1;
  if (ImGui::IsWindowHovered()) {
    const int r = static_cast<int>(std::floor((mouse.y - origin.y) / rowH));
    if (mouse.x < leftX && r >= 0 && r < rows) hoverQ = r;
    if (mouse.x > rightX && r >= 0 && r < cols) hoverK = r;
  }
  const ImVec4 text = ImGui::GetStyle().Colors[ImGuiCol_Text];
  const float clipTop = ImGui::GetWindowPos().y, clipBottom = clipTop + ImGui::GetWindowHeight();
  for (int r = 0; r < rows; ++r) {
    const float y = origin.y + rowH * (static_cast<float>(r) + 0.5f);
    if (y > clipTop - rowH && y < clipBottom + rowH && r < static_cast<int>(qLabels.size())) {
      const std::string& label = qLabels[static_cast<std::size_t>(r)];
      const float w = ImGui::CalcTextSize(label.c_str()).x;
      draw->AddText(ImVec2(leftX - w - font * 0.3f, y - font * 0.5f),
                    ImGui::ColorConvertFloat4ToU32(r == hoverQ ? panel::queryColor() : text),
                    label.c_str());
    }
  }
  for (int c = 0; c < cols; ++c) {
    const float y = origin.y + rowH * (static_cast<float>(c) + 0.5f);
    if (y > clipTop - rowH && y < clipBottom + rowH && c < static_cast<int>(kLabels.size())) {
      draw->AddText(ImVec2(rightX + font * 0.3f, y - font * 0.5f),
                    ImGui::ColorConvertFloat4ToU32(c == hoverK ? panel::keyColor() : text),
                    kLabels[static_cast<std::size_t>(c)].c_str());
    }
  }
  // One set of lines per matrix: the shown one, or every head in its own colour.
  const int sets = overlay ? static_cast<int>(view.overlayHeads.size()) : 1;
  for (int set = 0; set < sets; ++set) {
    const Matrix& m = overlay ? view.overlayHeads[static_cast<std::size_t>(set)] : a;
    const std::vector<int>& top = overlay ? view.overlayTop[static_cast<std::size_t>(set)]
                                          : view.topIndex;
    const ImVec4 rgb = overlay ? headColor(set, sets) : ImVec4(0.98f, 0.55f, 0.16f, 1.f);
    for (int r = 0; r < rows; ++r) {
      if (hoverQ >= 0 && r != hoverQ) continue;
      const float y0 = origin.y + rowH * (static_cast<float>(r) + 0.5f);
      for (int i = 0; i < k; ++i) {
        const int c = top[static_cast<std::size_t>(r) * k + i];
        if (c < 0) break;
        if (hoverK >= 0 && c != hoverK) continue;
        const float v = m(r, c);
        if (!std::isfinite(v) || v <= 0.005f) continue;
        const float y1 = origin.y + rowH * (static_cast<float>(c) + 0.5f);
        draw->AddLine(ImVec2(leftX, y0), ImVec2(rightX, y1),
                      ImGui::ColorConvertFloat4ToU32(
                          ImVec4(rgb.x, rgb.y, rgb.z, std::clamp(v, 0.f, 1.f))),
                      std::max(1.f, font * 0.12f));
      }
    }
  }
  if (hoverQ >= 0 || hoverK >= 0) {
    ImGui::BeginTooltip();
    if (hoverQ >= 0)
      ImGui::Text("query %d: its %d strongest keys", hoverQ, k);
    else
      ImGui::Text("key %d: the queries that attend to it", hoverK);
    ImGui::EndTooltip();
  }
  ImGui::EndChild();
}

// ---------------------------------------------------------------------------------------
// Text view (CircuitsVis style)
// ---------------------------------------------------------------------------------------

void drawTextView(AttentionView& view, const MatrixView& displayed) {
  const Matrix& a = displayed.values;
  const int rows = static_cast<int>(a.rows()), cols = static_cast<int>(a.cols());
  const std::vector<std::string>& labels = displayed.colLabels;
  const int offset = cols - rows;  // query row of key token t is t - offset (KV cache)
  ImGui::Checkbox("attended by", &view.attendedBy);
  tooltip("Off: colour each token by how much the selected token attends to it (its row). "
          "On: by how much each token attends to the selected one (its column).");
  ImGui::SameLine();
  ImGui::TextDisabled("hover a token; click to pin it");
  const float font = ImGui::GetFontSize();
  ImGui::BeginChild("##textview", ImVec2(0, 0), false);
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const float width = ImGui::GetContentRegionAvail().x;
  const float lineH = font * 1.5f, pad = font * 0.2f;
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  const bool hoveredWindow = ImGui::IsWindowHovered();
  // Layout, hit test.
  std::vector<ImVec2> pos(static_cast<std::size_t>(cols));
  std::vector<float> widths(static_cast<std::size_t>(cols));
  float x = 0, y = 0;
  int hovered = -1;
  for (int t = 0; t < cols && t < static_cast<int>(labels.size()); ++t) {
    const float w = ImGui::CalcTextSize(labels[static_cast<std::size_t>(t)].c_str()).x + 2 * pad;
    if (x > 0 && x + w > width) {
      x = 0;
      y += lineH;
    }
    pos[static_cast<std::size_t>(t)] = ImVec2(origin.x + x, origin.y + y);
    widths[static_cast<std::size_t>(t)] = w;
    if (hoveredWindow && mouse.x >= origin.x + x && mouse.x < origin.x + x + w &&
        mouse.y >= origin.y + y && mouse.y < origin.y + y + lineH)
      hovered = t;
    x += w + pad;
  }
  ImGui::Dummy(ImVec2(width, y + lineH));
  if (hovered >= 0 && ImGui::IsMouseClicked(0))
    view.pinnedToken = view.pinnedToken == hovered ? -1 : hovered;
  const int selected = hovered >= 0 ? hovered : view.pinnedToken;
  // Weights of every token with respect to the selected one, scaled by their max.
  std::vector<float> weight(static_cast<std::size_t>(cols), 0.f);
  if (selected >= 0 && selected < cols) {
    float top = 0;
    for (int t = 0; t < cols; ++t) {
      float v = 0;
      if (!view.attendedBy) {
        const int r = selected - offset;
        v = r >= 0 && r < rows ? a(r, t) : 0.f;
      } else {
        const int r = t - offset;
        v = r >= 0 && r < rows ? a(r, selected) : 0.f;
      }
      weight[static_cast<std::size_t>(t)] = std::isfinite(v) ? v : 0.f;
      top = std::max(top, weight[static_cast<std::size_t>(t)]);
    }
    if (top > 0)
      for (float& w : weight) w /= top;
  }
  const ImU32 textColor = ImGui::GetColorU32(ImGuiCol_Text);
  for (int t = 0; t < cols && t < static_cast<int>(labels.size()); ++t) {
    const ImVec2 p = pos[static_cast<std::size_t>(t)];
    const ImVec2 q(p.x + widths[static_cast<std::size_t>(t)], p.y + lineH - pad);
    const float w = weight[static_cast<std::size_t>(t)];
    if (w > 0) draw->AddRectFilled(p, q, IM_COL32(250, 140, 40, static_cast<int>(w * 230.f)));
    if (t == selected) draw->AddRect(p, q, IM_COL32(66, 158, 245, 255), 0, 0, 2.f);
    draw->AddText(ImVec2(p.x + pad, p.y + pad), textColor, labels[static_cast<std::size_t>(t)].c_str());
  }
  if (hovered >= 0) {
    const int r = view.attendedBy ? -1 : hovered - offset;
    ImGui::BeginTooltip();
    ImGui::Text("%s (token %d)", labels[static_cast<std::size_t>(hovered)].c_str(), hovered);
    if (!view.attendedBy && (r < 0 || r >= rows)) ImGui::TextDisabled("not a query of this tensor");
    ImGui::EndTooltip();
  }
  ImGui::EndChild();
}

// ---------------------------------------------------------------------------------------
// Special-token filter (heatmap, focus and text views)
// ---------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------
// Heatmap tab
// ---------------------------------------------------------------------------------------

void drawHeatmapTab(AppState& state, HeatmapCache& heatmaps, const AttentionShown& shown,
                    const MatrixView& displayed) {
  AttentionView& view = state.attention;
  HeatmapOptions options = panel::heatmapOptions(state);
  options.probability = true;  // attention weights (io::rangeRule checks they are)
  options.tooltip = "attention weights (rows: queries, columns: keys); click: focus this query";
  // The texture changes with the file, the selection and the filter (its settings).
  const std::uint64_t revision =
      (view.generation << 32) ^ shown.selectionRevision ^
      (view.filter.enabled && view.filter.cache ? (view.filter.revision + 1) << 44 : 0);
  const HeatmapInteraction hit =
      heatmapWidget("##attention", heatmaps, HeatmapView(displayed), revision, options);
  if (hit.clicked) {
    view.focus.column = false;
    view.focus.index = hit.row;
  }
}

// ---------------------------------------------------------------------------------------
// Focus: one row or column as bars
// ---------------------------------------------------------------------------------------

void drawFocusView(AttentionView& view, const MatrixView& displayed,
                   const std::vector<bool>& dropped) {
  AttentionFocus& focus = view.focus;
  const float font = ImGui::GetFontSize();
  const int rows = static_cast<int>(displayed.values.rows());
  const int cols = static_cast<int>(displayed.values.cols());
  int mode = focus.column ? 1 : 0;
  ImGui::RadioButton("row: a query", &mode, 0);
  tooltip("How the chosen query spreads its attention over the keys (a row of the heatmap).");
  ImGui::SameLine();
  ImGui::RadioButton("column: a key", &mode, 1);
  tooltip("How much each query attends to the chosen key (a column of the heatmap).");
  focus.column = mode == 1;
  const int extent = focus.column ? cols : rows;
  ImGui::SameLine();
  ImGui::SetNextItemWidth(font * 12.f);
  ImGui::SliderInt(focus.column ? "key" : "query", &focus.index, 0, std::max(0, extent - 1));
  tooltip("Click a cell of the heatmap to focus its query.");
  const FocusBars bars = focusBars(displayed, focus.column, focus.index, dropped);
  focus.index = std::max(0, bars.index);
  ImGui::TextUnformatted(bars.title.c_str());
  ImGui::SameLine();
  ImGui::TextDisabled(view.filter.enabled && view.filter.cache
                          ? "(special tokens dropped, rows renormalised)"
                          : "(raw values)");
  if (bars.values.empty()) return;
  // Bars scaled to the largest finite value, with the value written after each bar.
  float top = 0;
  for (float v : bars.values)
    if (std::isfinite(v)) top = std::max(top, v);
  ImGui::BeginChild("##focusbars", ImVec2(0, 0), false);
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const float width = ImGui::GetContentRegionAvail().x;
  const float labelW = std::min(font * 9.f, width * 0.3f), valueW = font * 4.5f;
  const float barW = std::max(font, width - labelW - valueW - font);
  const float rowH = font * 1.3f;
  const ImVec4 barColor = focus.column ? panel::queryColor() : panel::keyColor();
  const ImU32 textColor = ImGui::GetColorU32(ImGuiCol_Text);
  const ImU32 mutedColor = ImGui::GetColorU32(ImGuiCol_TextDisabled);
  const ImU32 nanColor = IM_COL32(io::kNanColor.r, io::kNanColor.g, io::kNanColor.b, 255);
  ImGui::PushStyleVar(ImGuiStyleVar_ItemSpacing, ImVec2(ImGui::GetStyle().ItemSpacing.x, 0));
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(bars.values.size()), rowH);
  while (clipper.Step()) {
    for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
      const std::size_t at = static_cast<std::size_t>(i);
      const float v = bars.values[at];
      const bool isDropped = bars.dropped[at];
      const ImVec2 p = ImGui::GetCursorScreenPos();
      const std::string& label = bars.labels[at];
      const float labelWidth = ImGui::CalcTextSize(label.c_str()).x;
      draw->PushClipRect(p, ImVec2(p.x + labelW - font * 0.3f, p.y + rowH), true);
      draw->AddText(ImVec2(std::max(p.x, p.x + labelW - font * 0.3f - labelWidth),
                           p.y + (rowH - font) * 0.5f),
                    isDropped ? mutedColor : textColor, label.c_str());
      draw->PopClipRect();
      const ImVec2 b0(p.x + labelW, p.y + rowH * 0.15f);
      std::string valueText;
      if (!std::isfinite(v)) {
        // Never a bar length: a hatched magenta box and the value's name.
        const ImVec2 b1(b0.x + font * 2.f, p.y + rowH * 0.85f);
        draw->AddRectFilled(b0, b1, nanColor);
        for (float x = b0.x; x < b1.x; x += font * 0.4f)
          draw->AddLine(ImVec2(x, b1.y), ImVec2(std::min(b1.x, x + (b1.y - b0.y)), b0.y),
                        IM_COL32(110, 0, 110, 255));
        valueText = formatNumber(v, 3);
      } else if (isDropped) {
        valueText = "dropped";
      } else {
        const float length = top > 0 ? barW * std::clamp(v / top, 0.f, 1.f) : 0.f;
        draw->AddRectFilled(b0, ImVec2(b0.x + std::max(length, 1.f), p.y + rowH * 0.85f),
                            ImGui::ColorConvertFloat4ToU32(barColor));
        valueText = formatNumber(v, 3);
      }
      draw->AddText(ImVec2(p.x + labelW + barW + font * 0.4f, p.y + (rowH - font) * 0.5f),
                    isDropped ? mutedColor : textColor, valueText.c_str());
      ImGui::Dummy(ImVec2(width, rowH));
      if (ImGui::IsItemHovered()) {
        ImGui::BeginTooltip();
        ImGui::Text("%s %d '%s': %s", focus.column ? "query" : "key", i, label.c_str(),
                    formatNumber(v, kTooltipDigits).c_str());
        if (isDropped)
          ImGui::TextDisabled("a special token: dropped, its weight moved to the rest");
        ImGui::EndTooltip();
      }
    }
  }
  clipper.End();
  ImGui::PopStyleVar();
  ImGui::EndChild();
}

// ---------------------------------------------------------------------------------------
// Compare: A (the selection) | B | A - B, with linked hover
// ---------------------------------------------------------------------------------------

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
  const io::AttentionFile& file = compare.file ? *compare.file : *view.file;
  ImGui::TextDisabled("%s", std::filesystem::path(file.path()).filename().string().c_str());
  ImGui::PushID("compareB");
  if (selectionControls(file, compare.selection)) ++compare.revision;
  ImGui::PopID();
}

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
  } else if (compare.sharedRange) {
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

void drawAttentionPanel(AppState& state, HeatmapCache& heatmaps) {
  if (!panel::beginPanel("Attention", panelFlag(state.view, "attention"))) return;
  AttentionView& view = state.attention;
  if (!view.choosePath.empty()) drawArrayChoice(state);
  if (!view.file) {
    panel::mutedWrapped("No attention file open. File \xE2\x96\xB8 Open (or drop on the window) a "
                        ".npy or .npz attention tensor; see docs/import.md.");
    ImGui::End();
    return;
  }
  const io::AttentionFile& file = *view.file;
  const io::AttentionShape& shape = file.shape();
  ImGui::TextUnformatted(std::filesystem::path(file.path()).filename().string().c_str());
  ImGui::SameLine();
  ImGui::TextDisabled("%s \xC3\x97 %s, %d \xC3\x97 %d tokens; labels: %s",
                      countOf(shape.layers, "layer", "layers").c_str(),
                      countOf(shape.heads, "head", "heads").c_str(), shape.queries, shape.keys,
                      file.labelsSource().empty()
                          ? "indices"
                          : std::filesystem::path(file.labelsSource()).filename().string().c_str());
  tooltip(file.layoutDescription());
  if (view.overview && view.overview->totalNonFinite.total() > 0) {
    ImGui::SameLine();
    ImGui::TextColored(panel::warningColor(),
                       "non-finite: %s (NaN and +inf magenta, -inf grey; hatched)",
                       io::describeNonFinite(view.overview->totalNonFinite).c_str());
  }

  const float leftW = ImGui::GetContentRegionAvail().x * 0.45f;
  ImGui::BeginChild("##model", ImVec2(leftW, 0), true);
  drawGrid(state, heatmaps);
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("##detail", ImVec2(0, 0), true);
  drawSelector(view);
  const std::shared_ptr<const AttentionShown> shown = view.shown;
  if (!shown) {
    panel::mutedWrapped("computing\xE2\x80\xA6");
  } else if (!shown->error.empty()) {
    panel::coloredWrapped(panel::errorColor(), shown->error);
  } else {
    const bool stale = shown->selectionRevision != view.selectionRevision;
    ImGui::TextDisabled("%s%s", shown->selected.view.title.c_str(), stale ? "  (computing\xE2\x80\xA6)" : "");
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
      if (ImGui::BeginTabItem("Head view", nullptr, tabFlags(1))) {
        drawHeadView(view, *shown);
        ImGui::EndTabItem();
      }
      if (ImGui::BeginTabItem("Text view", nullptr, tabFlags(2))) {
        drawTextView(view, displayed);
        ImGui::EndTabItem();
      }
      if (ImGui::BeginTabItem("Focus", nullptr, tabFlags(3))) {
        drawFocusView(view, displayed, *dropped);
        ImGui::EndTabItem();
      }
      if (ImGui::BeginTabItem("Compare", nullptr, tabFlags(4))) {
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
