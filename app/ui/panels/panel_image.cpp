// The Image panel: self-attention over the patches of an image (see docs/images.md).
// Controls for the patch size, projection, positional encoding and score on top; below, the
// image with the query's weights overlaid (click a patch to make it the query, hover for its
// weight) and, beside it, the full patch x patch weights heatmap. The two are linked:
// hovering a heatmap cell frames its query and key patches on the image, hovering a patch
// frames its cell in the heatmap. The panel only edits state.image and calls bump(); the
// computation is updateImageView()'s (on a worker thread in the window).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <imgui.h>
#include <imgui_stdlib.h>

#include "app/ui/shell/files.h"
#include "app/ui/widgets/heatmap_widget_impl.h"
#include "app/session/image_view.h"
#include "render/image_overlay.h"
#include "app/ui/panels/panel_common.h"
#include "app/ui/panels/panel_registry.h"
#include "app/ui/panels/panels.h"
#include "app/ui/panels/presentation.h"
#include "core/base/format.h"

namespace attn::app {

// The image's texture, uploaded through the heatmap textures (GL in the window, the mock in
// tests) when the image changed (image id). 0 when nothing can be drawn.
unsigned imageTexture(HeatmapCache& heatmaps, const ImageViewState& view) {
  HeatmapCache::Impl& impl = heatmaps.impl();
  if (!view.image) return 0;
  if (impl.imageTexture != 0 && impl.imageTextureId == view.imageId) return impl.imageTexture;
  impl.imageTexture = impl.textures->uploadRgb(impl.imageTexture, *view.image);
  if (impl.imageTexture != 0) {
    impl.imageTextureId = view.imageId;
    ++impl.uploads;
  }
  return impl.imageTexture;
}

namespace {

namespace fs = std::filesystem;
using panel::tooltip;

constexpr ScoreKind kScores[] = {ScoreKind::Dot,     ScoreKind::ScaledDot, ScoreKind::Cosine,
                                 ScoreKind::General, ScoreKind::Additive,  ScoreKind::Mlp};
constexpr NormalizerKind kNormalizers[] = {NormalizerKind::Softmax, NormalizerKind::Hard,
                                           NormalizerKind::TopK, NormalizerKind::Sparsemax};

ImU32 rgbColor(io::Rgb c, float alpha) {
  return IM_COL32(c.r, c.g, c.b, static_cast<int>(std::lround(alpha * 255)));
}

// A frame around a screen rectangle: `outer` px of black, then `inner` of `color`.
void frameRect(ImDrawList* draw, ImVec2 a, ImVec2 b, ImU32 color, float thickness) {
  draw->AddRect(a, b, IM_COL32(0, 0, 0, 255), 0, 0, thickness + 2);
  draw->AddRect(ImVec2(a.x + 1, a.y + 1), ImVec2(b.x - 1, b.y - 1), color, 0, 0, thickness);
}

// ---------------------------------------------------------------------------------------
// Controls
// ---------------------------------------------------------------------------------------

void drawOpenHelp(AppState& state) {
  panel::mutedWrapped(
      "An image is a set of vectors too. Open a PNG or JPEG with File \xE2\x96\xB8 Open, drop one "
      "on the window, or start with `attnscope IMAGE`: it is cut into P \xC3\x97 P patches, each "
      "patch becomes one vector of its RGB pixels, and self-attention runs over them.");
  if (ImGui::Button("Open image\xE2\x80\xA6")) state.image.showOpenDialog = true;
  tooltip("Pick a PNG, JPEG, BMP, ... with the desktop's file dialog (or attnscope's own).");
  const std::string folder = dataDir();
  if (folder.empty()) return;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(fs::path(folder) / "images", ec)) {
    if (!isImagePath(entry.path().string())) continue;
    const std::string label = "Open " + entry.path().filename().string();
    if (ImGui::Button(label.c_str())) {
      Status opened = openImage(state.image, entry.path().string());
      if (!opened) notify(state, Notice::Kind::Error, opened.error().message(), ImGui::GetTime());
    }
    ImGui::SameLine();
  }
  ImGui::NewLine();
}

void drawControls(AppState& state) {
  ImageViewState& v = state.image;
  const float font = ImGui::GetFontSize();
  bool changed = false;

  // Row 1: how the image becomes vectors.
  ImGui::SetNextItemWidth(font * 7);
  changed |= ImGui::SliderInt("Patch", &v.patch.patch, PatchLimits::kMinPatch,
                              PatchLimits::kMaxPatch, "%d px", ImGuiSliderFlags_AlwaysClamp);
  tooltip(
      "P: the image is cut into P \xC3\x97 P patches; partial patches at the right and bottom "
      "edges are dropped. Raw pixel vectors have 3\xC2\xB7P\xC2\xB2 numbers (P <= 36).");
  ImGui::SameLine();
  int projection = v.patch.projection == PatchProjection::Random ? 1 : 0;
  ImGui::SetNextItemWidth(font * 7);
  if (ImGui::Combo("Vectors", &projection, "raw pixels\0random proj.\0")) {
    v.patch.projection = projection == 1 ? PatchProjection::Random : PatchProjection::None;
    changed = true;
  }
  tooltip(
      "Raw pixels: each patch is its RGB values in [0, 1], row by row, R G B per pixel.\n"
      "Random projection: those values times a seeded random matrix (3\xC2\xB7P\xC2\xB2 "
      "\xC3\x97 D), which keeps lengths and angles roughly.");
  if (v.patch.projection == PatchProjection::Random) {
    ImGui::SameLine();
    ImGui::SetNextItemWidth(font * 5);
    if (ImGui::InputInt("D", &v.patch.projectionDim, 16, 64)) {
      v.patch.projectionDim = std::clamp(v.patch.projectionDim, 1, PatchLimits::kMaxDim);
      changed = true;
    }
    tooltip("Width of the projected vectors, 1..4096.");
  }
  ImGui::SameLine();
  int positional = static_cast<int>(v.patch.positional);
  ImGui::SetNextItemWidth(font * 6);
  if (ImGui::Combo("Position", &positional, "none\0sin 2-D\0random\0")) {
    v.patch.positional = static_cast<PatchPositional>(positional);
    changed = true;
  }
  tooltip(
      "Positional encoding added to every patch vector: none; 2-D sinusoidal (half the "
      "dimensions encode the row, half the column); or a seeded random vector per "
      "position (what a learned table looks like before training).");
  if (v.patch.positional != PatchPositional::None) {
    ImGui::SameLine();
    ImGui::SetNextItemWidth(font * 6);
    changed |= ImGui::SliderFloat("Strength", &v.patch.positionalStrength, 0.f, 4.f, "%.2f",
                                  ImGuiSliderFlags_AlwaysClamp);
    tooltip(
        "X = vectors + strength \xC2\xB7 PE. Pixels are in [0, 1], the encoding in [-1, 1] "
        "on every dimension, so small strengths already matter.");
  }
  if (v.patch.projection == PatchProjection::Random ||
      v.patch.positional == PatchPositional::Random) {
    ImGui::SameLine();
    int seed = static_cast<int>(v.patch.seed);
    ImGui::SetNextItemWidth(font * 5);
    if (ImGui::InputInt("Seed", &seed)) {
      v.patch.seed = static_cast<std::uint64_t>(std::max(seed, 0));
      changed = true;
    }
    tooltip("Seed of the random projection and the random positional encoding.");
  }

  // Row 2: attention.
  int score = 0;
  for (int i = 0; i < 6; ++i)
    if (kScores[i] == v.score) score = i;
  ImGui::SetNextItemWidth(font * 7);
  if (ImGui::Combo("Score", &score, "dot\0scaled_dot\0cosine\0general\0additive\0mlp\0")) {
    v.score = kScores[score];
    changed = true;
  }
  tooltip(
      "Similarity of a query patch and a key patch. Cosine compares colours regardless of "
      "brightness, so the patches of one shape attend to each other.");
  ImGui::SameLine();
  int normalizer = 0;
  for (int i = 0; i < 4; ++i)
    if (kNormalizers[i] == v.normalizer) normalizer = i;
  ImGui::SetNextItemWidth(font * 6);
  if (ImGui::Combo("Normaliser", &normalizer, "softmax\0hard\0top_k\0sparsemax\0")) {
    v.normalizer = kNormalizers[normalizer];
    changed = true;
  }
  ImGui::SameLine();
  ImGui::SetNextItemWidth(font * 6);
  changed |= ImGui::SliderFloat("Temperature", &v.temperature, 0.01f, 10.f, "%.3g",
                                ImGuiSliderFlags_Logarithmic | ImGuiSliderFlags_AlwaysClamp);
  tooltip(
      "Scores are divided by T before the softmax. Cosines lie in [-1, 1], so T around 0.1 "
      "gives sharp maps.");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(font * 6);
  if (ImGui::InputInt("Heads", &v.heads, 1, 1)) {
    v.heads = std::clamp(v.heads, 1, Limits::kMaxHeads);
    changed = true;
  }
  tooltip("Heads split the vector width (they must divide it); the view shows the mean.");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(font * 6);
  ImGui::SliderFloat("Opacity", &v.opacity, 0.f, 1.f, "%.2f", ImGuiSliderFlags_AlwaysClamp);
  tooltip("How strongly the weight colours cover the image (0 = the image only).");
  // The overlay's colours: the view's colour range (View > Colour range), offered here where
  // it matters most: over a hundred patches every weight is small, and fixed 0-1 shows them
  // all alike. The rule in force and its two ends are written on the overlay's colour bar.
  ImGui::SameLine();
  ImGui::SetNextItemWidth(font * 8);
  const RangeMode mode = colorRangeMode(state.view);
  int colours = mode == RangeMode::MinMax || mode == RangeMode::Row ? 1 : 0;
  if (mode != RangeMode::Fixed &&
      ImGui::Combo("Colours", &colours, "fixed 0\xE2\x80\x93" "1\0query min\xE2\x80\x93max\0"))
    setColorRangeMode(state.view, colours == 1 ? RangeMode::MinMax : RangeMode::Auto);
  tooltip("The overlay's colour range (the same as View \xE2\x96\xB8 Colour range, for every "
          "heatmap). Fixed 0\xE2\x80\x93" "1: the same colour is the same weight for every query, "
          "but over many patches every weight is small and the picture looks flat. Query "
          "min\xE2\x80\x93max: from the query's smallest to its largest weight (both written "
          "on the colour bar), so its strongest patches stand out.");
  if (changed) v.bump();
}

void drawExport(AppState& state) {
  ImageViewState& v = state.image;
  const float font = ImGui::GetFontSize();
  if (ImGui::Button("Export overlay\xE2\x80\xA6")) {
    ImGui::OpenPopup("Export overlay");
  }
  tooltip(
      "Save the overlay of the current query as PNG, at the image's own resolution or "
      "larger (the same file as `attnscope image ... --out`).");
  ImGui::SameLine();
  if (ImGui::Button("Attention panel") && v.computed) {
    panel::showInAttentionPanel(
        state, imageSource(*v.computed, v.matrix.rowLabels,
                           std::filesystem::path(v.path).filename().string()));
  }
  tooltip("Every patch's attention over the patches (each head) in the Attention panel: its "
          "thumbnails, heatmap, focus and compare views.");
  if (ImGui::BeginPopup("Export overlay")) {
    static const char* kScales[] = {"1x", "2x", "3x", "4x", "5x", "6x", "7x", "8x"};
    ImGui::SetNextItemWidth(font * 4);
    int scaleIndex = v.exportScale - 1;
    if (ImGui::Combo("Scale", &scaleIndex, kScales, 8)) v.exportScale = scaleIndex + 1;
    std::string& path = v.exportPath;
    if (path.empty()) {
      path = fs::path(v.path).stem().string() + "_overlay_" + std::to_string(v.queryRow) + "_" +
             std::to_string(v.queryCol) + ".png";
    }
    ImGui::SetNextItemWidth(font * 22);
    ImGui::InputText("File", &path);
    if (ImGui::Button("Save")) {
      Status written = exportOverlay(v, state.view.colormap, path);
      if (written)
        notify(state, Notice::Kind::Info, "saved overlay " + path, ImGui::GetTime());
      else
        notify(state, Notice::Kind::Error, written.error().message(), ImGui::GetTime());
      ImGui::CloseCurrentPopup();
    }
    ImGui::EndPopup();
  }
}

// ---------------------------------------------------------------------------------------
// The image with its overlay
// ---------------------------------------------------------------------------------------

// The colour range of the query's weights on the overlay: the exported overlay's rule (0..1
// unless the user picked min-max / per row, or fixed ends). Needs v.computed.
io::ValueRange overlayRangeOf(const AppState& state) {
  const ImageViewState& v = state.image;
  io::OverlayStyle overlayStyle;
  overlayStyle.range = colorRangeMode(state.view);
  if (state.view.fixedRange) overlayStyle.vmin = state.view.rangeMin, overlayStyle.vmax = state.view.rangeMax;
  return io::overlayRange(v.computed->weights.row(v.queryIndex()).transpose(), overlayStyle);
}

// The key patch the query gives its largest weight (the first of equal ones), -1 for none.
int strongestKey(const ImageViewState& v) {
  if (!v.computed || v.computed->weights.cols() == 0) return -1;
  Eigen::Index best = 0;
  v.computed->weights.row(v.queryIndex()).maxCoeff(&best);
  return static_cast<int>(best);
}

// Draws the image fitted into `size`, the weights of the query over it, the frames of the
// query and of the linked patches; handles hover (weight tooltip) and click (new query).
// Presenting: no tooltip and no frame that follows the pointer (a click makes the patch the
// query), the query's strongest key framed (the caption names it).
void drawOverlay(AppState& state, HeatmapCache& heatmaps, ImVec2 size, bool presenting) {
  ImageViewState& v = state.image;
  const io::Image& image = *v.image;
  // room for the colour bar at the right (its two end values whole) and its caption below
  size.x -= v.computed ? panel::overlayColorbarWidth(overlayRangeOf(state))
                       : panel::overlayColorbarWidth();
  size.y -= ImGui::GetTextLineHeightWithSpacing();
  const float fit = std::min(size.x / image.width, size.y / image.height);
  // A whole number of screen pixels per patch, so that the patch rectangles and the
  // texture's pixels (nearest sampling) share every patch edge.
  const int p = v.computed ? v.computed->embedding.grid.patch : v.patch.patch;
  const float zoom = std::max(std::floor(fit * p), 1.f) / p;
  const ImVec2 shown(image.width * zoom, image.height * zoom);
  const ImVec2 cursor = ImGui::GetCursorScreenPos();
  const ImVec2 origin(std::floor(cursor.x), std::floor(cursor.y));
  ImGui::SetCursorScreenPos(origin);
  ImGui::InvisibleButton("##image", ImVec2(std::max(shown.x, 1.f), std::max(shown.y, 1.f)));
  const bool hovered = ImGui::IsItemHovered();
  const bool clicked = ImGui::IsItemClicked(ImGuiMouseButton_Left);
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImVec2 end(origin.x + shown.x, origin.y + shown.y);
  if (unsigned texture = imageTexture(heatmaps, v); texture != 0) {
    heatmaps.impl().textures->drawRgb(draw, texture, origin, end);
  }
  v.hoverPatch = -1;
  v.drawnX = origin.x;
  v.drawnY = origin.y;
  v.drawnZoom = zoom;
  if (!v.computed) return;
  const PatchGrid& grid = v.computed->embedding.grid;
  const int query = v.queryIndex();
  const auto weights = v.computed->weights.row(query);
  const float edge = grid.patch * zoom;
  auto patchMin = [&](int index) {
    return ImVec2(origin.x + (index % grid.cols) * edge, origin.y + (index / grid.cols) * edge);
  };

  // 1 the weights: one translucent rectangle per patch, blended like the exported overlay
  const io::ValueRange range = overlayRangeOf(state);
  for (int i = 0; i < grid.count(); ++i) {
    const ImVec2 a = patchMin(i);
    draw->AddRectFilled(
        a, ImVec2(a.x + edge, a.y + edge),
        rgbColor(io::valueColor(state.view.colormap, weights(i), range), v.opacity));
  }
  panel::overlayColorbar(origin, shown, state.view.colormap, range,
                         panel::overlayRule(state.view, false));
  // The dropped strips, dimmed as in the export.
  const ImU32 dim = IM_COL32(128, 128, 128, 128);
  if (grid.droppedRight > 0) {
    draw->AddRectFilled(ImVec2(origin.x + grid.cols * edge, origin.y), end, dim);
  }
  if (grid.droppedBottom > 0) {
    draw->AddRectFilled(ImVec2(origin.x, origin.y + grid.rows * edge),
                        ImVec2(origin.x + grid.cols * edge, end.y), dim);
  }

  // 2 hover and click
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  if (hovered && presenting) {  // a click makes the patch the query; nothing else follows
    const int col = static_cast<int>((mouse.x - origin.x) / edge);
    const int rowIndex = static_cast<int>((mouse.y - origin.y) / edge);
    if (clicked && col >= 0 && col < grid.cols && rowIndex >= 0 && rowIndex < grid.rows) {
      v.queryRow = rowIndex;
      v.queryCol = col;
    }
  } else if (hovered) {
    const int col = static_cast<int>((mouse.x - origin.x) / edge);
    const int rowIndex = static_cast<int>((mouse.y - origin.y) / edge);
    if (col >= 0 && col < grid.cols && rowIndex >= 0 && rowIndex < grid.rows) {
      v.hoverPatch = grid.index(rowIndex, col);
      ImGui::BeginTooltip();
      ImGui::Text("patch %s: weight %s", patchLabel(grid, v.hoverPatch).c_str(),
                  formatNumber(weights(v.hoverPatch), kExplainDigits).c_str());
      ImGui::TextDisabled(
          "from query %s; score %s. Click: make it the query.", patchLabel(grid, query).c_str(),
          formatNumber(headScoreRows(v.computed->result, 0, query, 1)(0, v.hoverPatch), kExplainDigits)
              .c_str());
      ImGui::EndTooltip();
      if (clicked) {
        v.queryRow = rowIndex;
        v.queryCol = col;
      }
    } else {
      ImGui::SetTooltip("dropped: outside the patch grid (%s)", grid.rule().c_str());
    }
  }

  // 3 frames: the query (white), the hovered patch, and the heatmap's hovered cell
  const float thickness = std::max(1.f, ImGui::GetFontSize() * 0.12f);
  const int shownQuery = v.queryIndex();
  auto frame = [&](int index, ImVec4 color) {
    if (index < 0 || index >= grid.count()) return;
    const ImVec2 a = patchMin(index);
    frameRect(draw, a, ImVec2(a.x + edge, a.y + edge), ImGui::ColorConvertFloat4ToU32(color),
              thickness);
  };
  if (presenting) frame(strongestKey(v), panel::keyColor());
  frame(shownQuery, ImVec4(1, 1, 1, 1));
  frame(v.hoverPatch, panel::keyColor());
  frame(v.hoverQuery, panel::queryColor());
  frame(v.hoverKey, panel::keyColor());
}

// The cell (row, col) of the heatmap drawn as `id` in this frame, framed on screen.
void frameHeatmapCell(HeatmapCache& heatmaps, const char* id, int row, int col, ImU32 color) {
  const HeatmapCache::Impl& impl = heatmaps.impl();
  for (const HeatmapRecord& record : impl.records) {
    if (record.id != id || record.rows <= 0 || record.cols <= 0) continue;
    const float w = record.gridMax.x - record.gridMin.x, h = record.gridMax.y - record.gridMin.y;
    auto x = [&](float u) {
      return record.gridMin.x + (u - record.u0) / (record.u1 - record.u0) * w;
    };
    auto y = [&](float t) {
      return record.gridMin.y + (t - record.v0) / (record.v1 - record.v0) * h;
    };
    ImVec2 a(x(static_cast<float>(col) / record.cols), y(static_cast<float>(row) / record.rows));
    ImVec2 b(x(static_cast<float>(col + 1) / record.cols),
             y(static_cast<float>(row + 1) / record.rows));
    // At least a few pixels, so a one-pixel cell of a large matrix is still visible.
    const float grow = std::max(0.f, 3 - (b.x - a.x)) * 0.5f;
    a = ImVec2(std::max(a.x - grow, record.gridMin.x), std::max(a.y - grow, record.gridMin.y));
    b = ImVec2(std::min(b.x + grow, record.gridMax.x), std::min(b.y + grow, record.gridMax.y));
    if (b.x <= a.x || b.y <= a.y) return;
    ImDrawList* draw = ImGui::GetWindowDrawList();
    draw->PushClipRect(record.gridMin, record.gridMax, true);
    draw->AddRect(a, b, color, 0, 0, 2);
    draw->PopClipRect();
    return;
  }
}

// The line under the controls: the file, the patch rule, the vectors' width and the time
// (presenting: the score, normaliser, temperature and query instead, the controls being
// hidden); "computing…" or the error. False when there is no result to show (the hover
// state then cleared).
bool drawStatus(ImageViewState& v, bool presenting) {
  if (v.computing()) {
    ImGui::TextDisabled(
        "computing\xE2\x80\xA6 (the view shows the previous result until it is done)");
  } else if (!v.error.empty()) {
    panel::coloredWrapped(panel::errorColor(), "Cannot compute: " + v.error);
  } else if (v.computed) {
    const PatchGrid& grid = v.computed->embedding.grid;
    const std::string file = fs::path(v.path).filename().string();
    char line[512];
    if (presenting) {
      std::snprintf(line, sizeof line,
                    "%s \xC2\xB7 %d \xC3\x97 %d patches of %d px \xC2\xB7 %s, %s, T = %s \xC2\xB7 "
                    "query patch %s",
                    file.c_str(), grid.cols, grid.rows, grid.patch,
                    std::string(toString(v.score)).c_str(),
                    std::string(toString(v.normalizer)).c_str(),
                    formatNumber(v.temperature, 3).c_str(),
                    patchLabel(grid, v.queryIndex()).c_str());
      ImGui::PushTextWrapPos(0.0f);
      ImGui::TextUnformatted(line);
      ImGui::PopTextWrapPos();
    } else {
      std::snprintf(line, sizeof line, "%s: %s \xC2\xB7 vectors of %d numbers \xC2\xB7 %.1f ms",
                    file.c_str(), grid.rule().c_str(),
                    static_cast<int>(v.computed->embedding.inputs.queries.cols()), v.computeMs);
      panel::mutedWrapped(line);
    }
  }
  if (!v.computed) v.hoverPatch = v.hoverQuery = v.hoverKey = -1;
  return v.computed != nullptr;
}

// Presentation's caption under the picture (click to inspect): what the query does, read
// from the weights: its strongest key patch (framed on the picture) and that weight.
void drawQueryCaption(const ImageViewState& v) {
  const int key = strongestKey(v);
  if (key < 0) return;
  const PatchGrid& grid = v.computed->embedding.grid;
  const int query = v.queryIndex();
  // Patches of the same pixels get the same weight: the caption says how many share the
  // largest one rather than naming one of them as if it stood alone.
  const float largest = v.computed->weights(query, key);
  const auto row = v.computed->weights.row(query);
  const long tied = (row.array() >= largest * (1.0f - 1e-6f)).count();
  const std::string whom = tied > 1 ? std::to_string(tied) + " patches alike (the first, patch " +
                                          patchLabel(grid, key) + ", framed)"
                                    : "patch " + patchLabel(grid, key) + " (framed)";
  const std::string text = "Query patch " + patchLabel(grid, query) +
                           " (white frame) gives its largest weight, " +
                           formatNumber(largest, 2) + ", to " + whom +
                           "; the colours are its weights over all " +
                           std::to_string(grid.count()) + " patches. Click a patch to make it the query.";
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextUnformatted(text.c_str());
  ImGui::PopTextWrapPos();
}

// The image with its overlay beside the patch x patch weights heatmap, in `avail`. `zoom`:
// presenting (no hover links, the heatmap presented with this keyboard zoom), else null.
void drawPictures(AppState& state, HeatmapCache& heatmaps, ImVec2 avail,
                  const present::KeyZoom* zoom) {
  ImageViewState& v = state.image;
  const bool presenting = zoom != nullptr;
  const float gap = ImGui::GetStyle().ItemSpacing.x;
  // The heatmap is square: give it the height, the image the rest (within 40..70 %).
  const float imageWidth = std::floor(std::clamp(avail.x - gap - std::min(avail.y, avail.x * 0.45f),
                                                 avail.x * 0.4f, avail.x * 0.7f));
  ImGui::BeginChild("##imagepane", ImVec2(imageWidth, avail.y), false,
                    ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoScrollWithMouse);
  if (presenting) {  // the caption under the picture: up to four lines
    const ImVec2 room = ImGui::GetContentRegionAvail();
    drawOverlay(state, heatmaps,
                ImVec2(room.x, std::max(room.y - ImGui::GetTextLineHeightWithSpacing() * 4.2f,
                                        ImGui::GetFontSize() * 4.0f)),
                true);
    ImGui::Dummy(ImVec2(0.0f, ImGui::GetTextLineHeight()));  // (the overlay's colour rule)
    drawQueryCaption(v);
  } else {
    drawOverlay(state, heatmaps, ImGui::GetContentRegionAvail(), false);
  }
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("##matrixpane", ImVec2(0, avail.y), false,
                    ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoScrollWithMouse);
  HeatmapOptions options = panel::heatmapOptions(state);
  options.probability = true;
  options.tooltip =
      "patch x patch attention weights: row = query patch, column = key patch "
      "(labels row,col of the patch grid). Click a cell: its row becomes the query.";
  if (presenting) present::presentationOptions(options, state, *zoom, true);
  // (room for the colour bar's lowest tick, half a line under the grid: never cut)
  const ImVec2 room = ImGui::GetContentRegionAvail();
  options.size = ImVec2(room.x, room.y - ImGui::GetTextLineHeight() * 0.6f);
  const std::uint64_t content = v.computedRevision * 0x9E3779B97F4A7C15ull ^ 0x1A9E;
  const HeatmapInteraction hit =
      heatmapWidget("##imageweights", heatmaps, v.matrix, content, options);
  v.hoverQuery = hit.hovered && !presenting ? hit.row : -1;
  v.hoverKey = hit.hovered && !presenting ? hit.col : -1;
  const PatchGrid& grid = v.computed->embedding.grid;
  if (hit.clicked && hit.row >= 0) {
    v.queryRow = hit.row / grid.cols;
    v.queryCol = hit.row % grid.cols;
  }
  // The query's row, and the cell of the patch hovered on the image.
  if (v.hoverPatch >= 0) {
    frameHeatmapCell(heatmaps, "##imageweights", v.queryIndex(), v.hoverPatch,
                     ImGui::ColorConvertFloat4ToU32(panel::keyColor()));
  }
  ImGui::EndChild();
}

// The keys of the presented Image view: Space / Right / PageDown and Left / PageUp move the
// query patch in reading order (wrapping round), Enter switches the colours between fixed
// 0-1 and the query's min-max, F5 and Escape leave presentation.
void applyImageKeys(AppState& state, const std::vector<StepKey>& keys) {
  ImageViewState& v = state.image;
  const int count = v.computed ? v.computed->embedding.grid.count() : 0;
  const int cols = v.computed ? std::max(v.computed->embedding.grid.cols, 1) : 1;
  for (StepKey key : keys) {
    switch (key) {
      case StepKey::Next:
      case StepKey::Previous: {
        if (count <= 0) break;
        const int query = (v.queryIndex() + (key == StepKey::Next ? 1 : count - 1)) % count;
        v.queryRow = query / cols;
        v.queryCol = query % cols;
        break;
      }
      case StepKey::Open: {
        const RangeMode mode = colorRangeMode(state.view);
        setColorRangeMode(state.view, mode == RangeMode::MinMax || mode == RangeMode::Row
                                          ? RangeMode::Auto
                                          : RangeMode::MinMax);
        break;
      }
      case StepKey::Presentation:
      case StepKey::ShowAll:
        state.view.presentation = false;
        state.view.stageFullScreen = false;
        break;
      case StepKey::None:
      case StepKey::ZoomIn:  // the heatmap's (present::takeKeys)
      case StepKey::ZoomOut:
      case StepKey::ZoomReset:
        break;
    }
  }
}

// The presented Image view's toolbar (over the page while the pointer moves): the query
// patch and its stepping buttons, the colours, the temperature, the opacity, the way out,
// and what the keys do.
void drawImageToolbar(AppState& state) {
  ImageViewState& v = state.image;
  const float font = ImGui::GetFontSize();
  if (ImGui::ArrowButton("##prevquery", ImGuiDir_Left)) applyImageKeys(state, {StepKey::Previous});
  ImGui::SameLine();
  if (ImGui::ArrowButton("##nextquery", ImGuiDir_Right)) applyImageKeys(state, {StepKey::Next});
  if (v.computed) {
    ImGui::SameLine();
    ImGui::Text("query %s", patchLabel(v.computed->embedding.grid, v.queryIndex()).c_str());
  }
  ImGui::SameLine(0.0f, font);
  const RangeMode mode = colorRangeMode(state.view);
  int colours = mode == RangeMode::MinMax || mode == RangeMode::Row ? 1 : 0;
  if (mode != RangeMode::Fixed) {
    ImGui::SetNextItemWidth(font * 8);
    if (ImGui::Combo("Colours", &colours, "fixed 0\xE2\x80\x93" "1\0query min\xE2\x80\x93max\0"))
      setColorRangeMode(state.view, colours == 1 ? RangeMode::MinMax : RangeMode::Auto);
    ImGui::SameLine();
  }
  ImGui::SetNextItemWidth(font * 5);
  if (ImGui::SliderFloat("T", &v.temperature, 0.01f, 10.f, "%.3g",
                         ImGuiSliderFlags_Logarithmic | ImGuiSliderFlags_AlwaysClamp))
    v.bump();
  ImGui::SameLine();
  ImGui::SetNextItemWidth(font * 5);
  ImGui::SliderFloat("Opacity", &v.opacity, 0.f, 1.f, "%.2f", ImGuiSliderFlags_AlwaysClamp);
  ImGui::SameLine();
  if (ImGui::Button("Exit presentation")) applyImageKeys(state, {StepKey::Presentation});
  ImGui::SameLine(0.0f, font);
  present::problemOrHint(state, "\xE2\x86\x92 / \xE2\x86\x90: next / previous query  \xC2\xB7  "
                                "click a patch: query  \xC2\xB7  Enter: colours  \xC2\xB7  "
                                "+ / \xE2\x88\x92 / 0: zoom  \xC2\xB7  Esc: back");
}

// The Image view presented (F5 with its window in front): the status line, the image and the
// weights heatmap over the page, under the image what the query does (click to inspect: the
// caption names the query's strongest key, framed on the image), the toolbar over the top
// while the pointer moves. No tooltip anywhere.
void drawPresentedImage(AppState& state, UiState& ui, const present::PresentKeys& keys) {
  HeatmapCache& heatmaps = ui.heatmaps;
  ImageViewState& v = state.image;
  applyImageKeys(state, keys.keys);
  present::updateChrome(state, ui, true);
  if (!v.open()) {
    drawOpenHelp(state);
    return;
  }
  v.async ? updateImageViewAsync(v) : updateImageView(v);
  if (drawStatus(v, true)) {
    v.hoverPatch = -1;
    drawPictures(state, heatmaps, ImGui::GetContentRegionAvail(), &keys.zoom);
  }
  present::drawChromeWindow(ui, [&] { drawImageToolbar(state); });
}

}  // namespace

// =======================================================================================
// The panel
// =======================================================================================

void drawImagePanel(AppState& state, UiState& ui) {
  HeatmapCache& heatmaps = ui.heatmaps;
  const bool presenting = state.view.presentation;  // (drawn then only when presented)
  if (!present::beginPage("Image", panelFlag(state.view, "image"), presenting)) return;
  if (drawImageModelSource(state, ui)) {  // a ViT folder's "model" source: panel_image_model.cpp
    ImGui::End();
    return;
  }
  ImageViewState& v = state.image;
  if (presenting) {
    drawPresentedImage(state, ui, present::takeKeys(state, ui));
    ImGui::End();
    return;
  }
  if (!v.open()) {
    drawOpenHelp(state);
    ImGui::End();
    return;
  }
  auto update = [&v] { v.async ? updateImageViewAsync(v) : updateImageView(v); };
  update();  // (cheap when nothing changed)
  drawControls(state);
  update();
  ImGui::SameLine();
  drawExport(state);
  // The rule, the size, the time; or the error. Then image | heatmap, side by side.
  if (drawStatus(v, false)) drawPictures(state, heatmaps, ImGui::GetContentRegionAvail(), nullptr);
  ImGui::End();
}

}  // namespace attn::app
