// Small helpers shared by the panel files (app/panel_*.cpp): tooltips, colours, applying an
// edit's outcome, hover bookkeeping and the per-revision cache of selected matrices.
// Internal to the panels; inline so that it needs no .cpp of its own.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include <imgui.h>

#include "app/session/app_state.h"
#include "app/session/pipeline_steps.h"
#include "app/ui/panels/panel_registry.h"
#include "app/ui/panels/ui_state.h"
#include "app/ui/shell/theme.h"
#include "app/ui/widgets/heatmap_widget.h"
#include "app/ui/widgets/tooltip.h"
#include "render/color_scale.h"
#include "render/heatmap_render.h"

namespace attn::app::panel {

// ---------------------------------------------------------------------------------------
// Text and colours
// ---------------------------------------------------------------------------------------

// The colour of a notice's text in the theme (errors and warnings in their colours).
inline ImVec4 noticeColor(Notice::Kind kind, bool light) {
  switch (kind) {
    case Notice::Kind::Error: {
      const ThemeColor c = themePalette(light).error;
      return ImVec4(c.r, c.g, c.b, 1.f);
    }
    case Notice::Kind::Warning: {
      const ThemeColor c = themePalette(light).warning;
      return ImVec4(c.r, c.g, c.b, 1.f);
    }
    case Notice::Kind::Info:
      break;
  }
  return ImGui::GetStyleColorVec4(ImGuiCol_Text);
}

// "error: ", "warning: " or "" before a notice's text.
inline const char* noticePrefix(Notice::Kind kind) {
  switch (kind) {
    case Notice::Kind::Error:
      return "error: ";
    case Notice::Kind::Warning:
      return "warning: ";
    case Notice::Kind::Info:
      break;
  }
  return "";
}

// "k3" from ("k", 3). Appends instead of `"k" + std::to_string(3)`, on which GCC 12's
// -Wrestrict misfires at -O3.
inline std::string indexed(const char* prefix, int i) {
  std::string out(prefix);
  out.append(std::to_string(i));
  return out;
}

// The current theme's palette (app/ui/shell/theme.h): every colour >= 4.5:1 on its backgrounds.
inline const ThemePalette& palette() { return currentPalette(); }
inline ImVec4 toColor(ThemeColor c) { return ImVec4(c.r, c.g, c.b, 1.0f); }
inline ImVec4 errorColor() { return toColor(palette().error); }
inline ImVec4 warningColor() { return toColor(palette().warning); }
inline ImVec4 queryColor() { return toColor(palette().query); }
inline ImVec4 keyColor() { return toColor(palette().key); }
// The theme's text colour at reduced strength (works on dark and light themes).
inline ImVec4 mutedColor() { return ImGui::GetStyle().Colors[ImGuiCol_TextDisabled]; }
// Formulas: the theme's accent (the slider grab colour) so they stand out on both themes.
inline ImVec4 formulaColor() {
  ImVec4 c = ImGui::GetStyle().Colors[ImGuiCol_PlotHistogram];
  c.w = 1.0f;
  return c;
}

// tooltip(text): the one helper of app/ui/widgets/tooltip.h, also as panel::tooltip.
using app::tooltip;

inline void coloredWrapped(const ImVec4& color, const std::string& text) {
  ImGui::PushStyleColor(ImGuiCol_Text, color);
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextUnformatted(text.c_str());
  ImGui::PopTextWrapPos();
  ImGui::PopStyleColor();
}

inline void mutedWrapped(const std::string& text) { coloredWrapped(mutedColor(), text); }

// Shows why the scenario cannot be computed, in red. Returns true when there is no result.
// Begins a panel's window. Returns false when the panel is hidden or collapsed; the window
// is then already closed (End() called), so the caller just returns. The window tiles every
// panel (app/ui/shell/workspaces.h): a panel is never moved, resized or collapsed by its
// own window, only by the splitters between the tiles.
inline bool beginPanel(const char* name, bool* open, ImGuiWindowFlags flags = 0) {
  if (!*open) return false;
  flags |= ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoCollapse;
  if (!ImGui::Begin(name, open, flags)) {
    ImGui::End();
    return false;
  }
  return true;
}

inline bool showComputeError(const AppState& state) {
  if (!state.computed->error.empty()) {
    coloredWrapped(errorColor(), "Cannot compute: " + state.computed->error);
    return true;
  }
  if (!state.computed->result || !state.computed->problem) {
    mutedWrapped("No result yet.");
    return true;
  }
  return false;
}

// beginPanel() for panels that show the result: also false (window closed) after showing
// the compute error or "no result", so the caller may use state.computed->* when true.
inline bool beginResultPanel(const char* name, bool* open, const AppState& state,
                             ImGuiWindowFlags flags = 0) {
  if (!beginPanel(name, open, flags)) return false;
  if (showComputeError(state)) {
    ImGui::End();
    return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------
// The colour bar of an image overlay (the Image panel's patches and model sources)
// ---------------------------------------------------------------------------------------

// Width the overlay's colour bar takes right of a picture: the gap, the bar and its end
// values (up to "0.000" wide).
inline float overlayColorbarWidth() {
  const float font = ImGui::GetFontSize();
  return font * 0.4f + font * 0.8f + font * 0.3f + ImGui::CalcTextSize("0.000").x;
}
// The same for a bar whose ends are `range` (pixels): wide enough for both end values as
// overlayColorbar writes them ("1.23e-4" is wider than "0.000"), so they are never cut.
inline float overlayColorbarWidth(io::ValueRange range) {
  const float font = ImGui::GetFontSize();
  const float ends = std::max(ImGui::CalcTextSize(formatNumber(range.hi, 3).c_str()).x,
                              ImGui::CalcTextSize(formatNumber(range.lo, 3).c_str()).x);
  return std::max(overlayColorbarWidth(), font * 1.5f + ends);
}
// The overlay's colour bar beside a picture drawn at [topLeft, topLeft + (width, height)]:
// a slim bar of `colormap` from range.hi (top) to range.lo (bottom), the two ends' values
// beside it, and under the picture the rule in force ("overlay colours: fixed 0–1"), as
// every heatmap's bar says it (io::rangeRuleCaption). Drawn on the window's draw list; the
// caller has left overlayColorbarWidth() to the right and one line below.
inline void overlayColorbar(ImVec2 topLeft, ImVec2 picture, ColormapKind colormap, io::ValueRange range,
                            io::RangeRule rule) {
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const float font = ImGui::GetFontSize();
  const ImVec2 a(topLeft.x + picture.x + font * 0.4f, topLeft.y);
  const float barW = font * 0.8f, h = picture.y;
  constexpr int kSteps = 64;
  for (int i = 0; i < kSteps; ++i) {  // top = hi
    const float t = 1.0f - (static_cast<float>(i) + 0.5f) / kSteps;
    const io::Rgb c = io::valueColor(colormap, range.lo + t * (range.hi - range.lo), range);
    draw->AddRectFilled(ImVec2(a.x, a.y + h * i / kSteps), ImVec2(a.x + barW, a.y + h * (i + 1) / kSteps),
                        IM_COL32(c.r, c.g, c.b, 255));
  }
  draw->AddRect(a, ImVec2(a.x + barW, a.y + h), ImGui::GetColorU32(ImGuiCol_Border));
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
  draw->AddText(ImVec2(a.x + barW + font * 0.3f, a.y), text, formatNumber(range.hi, 3).c_str());
  draw->AddText(ImVec2(a.x + barW + font * 0.3f, a.y + h - ImGui::GetTextLineHeight()), text,
                formatNumber(range.lo, 3).c_str());
  const std::string caption = "overlay colours: " + io::rangeRuleCaption(rule, range);
  draw->AddText(ImVec2(topLeft.x, topLeft.y + h + font * 0.2f), ImGui::GetColorU32(ImGuiCol_TextDisabled),
                caption.c_str());
}
// The rule an overlay's colours follow under the view's colour range (io::overlayRange):
// fixed (0..1, or the user's fixed ends, or rollout's 0..max), else min–max of the row.
inline io::RangeRule overlayRule(const ViewSettings& view, bool fixedEnds) {
  const RangeMode mode = colorRangeMode(view);
  if (fixedEnds || mode == RangeMode::Fixed || mode == RangeMode::Auto) return io::RangeRule::Fixed;
  return io::RangeRule::MinMax;
}

inline bool hasResult(const AppState& state) {
  return state.computed->error.empty() && state.computed->result && state.computed->problem;
}

// ---------------------------------------------------------------------------------------
// Edits
// ---------------------------------------------------------------------------------------

// touch() after a change; a refusal becomes a warning notice, an adjustment an info one.
inline void apply(AppState& state, const EditOutcome& outcome) {
  applyEdit(state, outcome, ImGui::GetTime());
}

// Shows `source` (attention_source.h) in the Attention panel, replacing what it showed; an
// error (nothing computed yet) becomes a warning notice.
inline void showInAttentionPanel(AppState& state, const Expected<SourcePtr>& source) {
  if (!source) {
    notify(state, Notice::Kind::Warning,
           "cannot show in the Attention panel: " + source.error().message(), ImGui::GetTime());
    return;
  }
  showSource(state.attention, *source, KeepView::Nothing);
  *panelFlag(state.view, "attention") = true;
}

// ---------------------------------------------------------------------------------------
// Heatmaps
// ---------------------------------------------------------------------------------------

// True when `of` is state.computed (the same object, still alive).
inline bool sameResult(const std::weak_ptr<const Computed>& of, const AppState& state) {
  return !of.expired() && !of.owner_before(state.computed) && !state.computed.owner_before(of);
}

// The view of (kind, head) for the current result, from the cache. nullptr if it cannot be
// selected (no result, head out of range). The pointer is valid until the next call.
inline const SelectedMatrix* cachedView(const AppState& state, PanelScratch& scratch,
                                        MatrixKind kind, int head) {
  if (!hasResult(state)) return nullptr;
  auto& cache = scratch.viewCache;
  const std::uint64_t revision = state.computed->revision;
  if (!sameResult(scratch.viewsOf, state) || (!cache.empty() && cache.front().revision != revision)) {
    cache.clear();
    scratch.viewsOf = state.computed;
  }
  // Prepared by the compute worker with the result: only point at it (and remember the key,
  // so the next edit asks for it again).
  for (const PreparedView& prepared : state.computed->views) {
    if (prepared.key.kind != kind || prepared.key.head != head) continue;
    bool listed = false;
    for (const auto& entry : cache) listed = listed || (entry.kind == kind && entry.head == head);
    if (!listed) cache.push_back({revision, kind, head, SelectedMatrix{}});
    return &prepared.view;
  }
  for (auto& entry : cache)
    if (entry.kind == kind && entry.head == head) return &entry.view;
  auto selected = selectMatrixRef(*state.computed->result, *state.computed->problem, kind, head);
  if (!selected) return nullptr;
  cache.push_back({revision, kind, head, std::move(selected).value()});
  return &cache.back().view;
}

// A content revision for the heatmap cache that changes with the document revision and
// differs between matrices / heads shown under the same widget id.
inline std::uint64_t contentRevision(std::uint64_t revision, MatrixKind kind, int head) {
  std::uint64_t x = revision * 0x9E3779B97F4A7C15ull;
  x ^= (static_cast<std::uint64_t>(kind) + 1) * 0xBF58476D1CE4E5B9ull;
  x ^= static_cast<std::uint64_t>(head + 2) * 0x94D049BB133111EBull;
  return x;
}

// Records what the mouse is over for the inspector (hover stays until another cell is
// hovered, so it can be read after moving to the inspector).
inline void setHover(const AppState& state, UiState& ui, const MatrixCell& cell) {
  ui.hover = cell;
  ui.hoverDocument = state.documentsLoaded;
}
inline void setHover(const AppState& state, UiState& ui, const HeatmapInteraction& hit,
                     MatrixKind kind, int head) {
  if (!hit.hovered || hit.row < 0 || hit.col < 0) return;
  setHover(state, ui, MatrixCell{true, kind, head, hit.row, hit.col});
}

// The cell the mouse was last over (setHover), or an inactive one when it belongs to a
// document loaded before the current one.
inline MatrixCell& hoverOf(const AppState& state, UiState& ui) {
  if (ui.hoverDocument != state.documentsLoaded) {
    ui.hover = MatrixCell{};
    ui.hoverDocument = state.documentsLoaded;
  }
  return ui.hover;
}

// The view's colours for any heatmap: colormap, cell numbers, the range mode (auto, min-max,
// per row, fixed with the view's ends). A caller whose values are probabilities sets
// `probability` (fixed 0..1 under the auto mode), one with signed values `centreZero`.
inline HeatmapOptions heatmapOptions(const AppState& state) {
  HeatmapOptions options;
  options.colormap = state.view.colormap;
  options.cellLabels = state.view.cellLabels;
  options.range = colorRangeMode(state.view);
  if (state.view.fixedRange) {
    options.vmin = state.view.rangeMin;
    options.vmax = state.view.rangeMax;
  }
  return options;
}

// The options of a heatmap of `kind`: the colour rule shared with `attnscope export`
// (io::defaultColormapFor): signed matrices on RdBu centred on 0 unless the user turned
// that off, weights on the chosen sequential map (log10 when asked), and the range mode
// (global, per row, fixed) on every matrix.
inline HeatmapOptions heatmapOptions(const AppState& state, MatrixKind kind) {
  HeatmapOptions options = heatmapOptions(state);
  // Signed matrices: symmetric about 0 under the auto range (whatever the colormap), on
  // RdBu unless the user turned that off; weights are probabilities (0..1).
  options.centreZero = isSignedMatrix(kind);
  options.probability = kind == MatrixKind::Weights;
  if (state.view.divergingSigned && isSignedMatrix(kind)) options.colormap = ColormapKind::RdBu;
  if (state.view.logWeights && kind == MatrixKind::Weights)
    options.colorScale = ColorScaleKind::Log;
  return options;
}

// Number of heads in the current result (0 when there is none).
inline int resultHeads(const AppState& state) {
  return hasResult(state) ? static_cast<int>(state.computed->result->heads.size()) : 0;
}

}  // namespace attn::app::panel
