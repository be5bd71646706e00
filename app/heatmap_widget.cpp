// The heatmap widget (see heatmap_widget.h and DESIGN.md §3).
//
// Per frame the cost does not depend on the number of cells: the values live in an R32F
// texture that is re-uploaded only when the content revision or the shape changes, the
// colormap is applied by shaders/heatmap.frag through a 256-entry LUT, zoom and pan only
// move the UV rectangle, and text labels are drawn only for visible cells that are large
// enough. When cells are smaller than a pixel the shader reads a max-pooled level of detail
// (computed on the CPU at upload time), so that sharp peaks stay visible.
#include "app/heatmap_widget.h"

#include <GL/gl.h>
#include <GL/glext.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include <imgui.h>
#include <imgui_internal.h>  // SetItemUsingMouseWheel
#include <imgui_stdlib.h>

#include "app/heatmap_widget_impl.h"

namespace attn::app {

namespace {

namespace fs = std::filesystem;

// Levels of detail stop when both sides are at most this many texels.
constexpr int kMinPooledSide = 16;

// =======================================================================================
// Small helpers
// =======================================================================================

float maxWithNan(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<float>::quiet_NaN();
  return a > b ? a : b;
}

// Halves a (h x w) row-major level by max-pooling 2x2 blocks; the last row/column of the
// smaller level also takes the odd leftover cell, so no cell is dropped. Sizes follow GL's
// mip chain: max(1, floor(side / 2)).
std::vector<float> poolLevel(const float* src, int h, int w, int* outH, int* outW) {
  const int dh = std::max(1, h / 2), dw = std::max(1, w / 2);
  std::vector<float> dst(static_cast<std::size_t>(dh) * dw,
                         -std::numeric_limits<float>::infinity());
  for (int y = 0; y < h; ++y) {
    const int ty = std::min(y / 2, dh - 1);
    const float* row = src + static_cast<std::size_t>(y) * w;
    float* out = dst.data() + static_cast<std::size_t>(ty) * dw;
    for (int x = 0; x < w; ++x) {
      const int tx = std::min(x / 2, dw - 1);
      out[tx] = maxWithNan(out[tx], row[x]);
    }
  }
  *outH = dh;
  *outW = dw;
  return dst;
}

// The colour range actually used: fixed if both ends are given, else the finite min / max.
// A degenerate range (all values equal, or none finite) is widened by 0.5 on each side so
// that the single value maps to the middle of the colormap.
void effectiveRange(const HeatmapOptions& options, const HeatmapCache::Impl::Entry& entry,
                    float* vmin, float* vmax) {
  float lo = entry.hasFinite ? entry.dataMin : 0.f;
  float hi = entry.hasFinite ? entry.dataMax : 1.f;
  if (options.vmin) lo = *options.vmin;
  if (options.vmax) hi = *options.vmax;
  if (!(hi > lo)) {
    const float mid = lo;
    lo = mid - 0.5f;
    hi = mid + 0.5f;
  }
  *vmin = lo;
  *vmax = hi;
}

float colorT(float value, float vmin, float vmax) {
  return std::clamp((value - vmin) / (vmax - vmin), 0.f, 1.f);
}

// The colour a cell is drawn in (as the shader does), for picking a readable text colour.
io::Rgb cellColor(float value, io::ColormapKind colormap, float vmin, float vmax) {
  if (std::isnan(value)) return io::kNanColor;
  if (std::isinf(value) && value < 0) return io::kMaskedColor;
  return io::colormapColor(colormap, colorT(value, vmin, vmax));
}

ImU32 textColorOn(io::Rgb background) {
  const float luminance = 0.2126f * background.r + 0.7152f * background.g + 0.0722f * background.b;
  return luminance > 140.f ? IM_COL32(0, 0, 0, 255) : IM_COL32(255, 255, 255, 255);
}

// A value as a cell label: fixed decimals for ordinary magnitudes, scientific otherwise.
std::string formatValue(float value, int decimals) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value < 0 ? "\xE2\x88\x92\xE2\x88\x9E" : "+\xE2\x88\x9E";  // −∞
  char text[48];
  const float magnitude = std::fabs(value);
  if (magnitude != 0 && (magnitude >= 1e5f || magnitude < 0.5f * std::pow(10.f, -decimals))) {
    std::snprintf(text, sizeof text, "%.*e", std::max(0, decimals - 1), value);
  } else {
    std::snprintf(text, sizeof text, "%.*f", decimals, value);
  }
  return text;
}

// Text cut to `maxWidth` with an ellipsis.
std::string fitText(const std::string& text, float maxWidth) {
  if (ImGui::CalcTextSize(text.c_str()).x <= maxWidth) return text;
  std::string cut = text;
  while (!cut.empty()) {
    // Drop one UTF-8 code point.
    do cut.pop_back();
    while (!cut.empty() && (static_cast<unsigned char>(cut.back()) & 0xC0) == 0x80);
    if (!cut.empty() && (static_cast<unsigned char>(cut.back()) & 0x80)) cut.pop_back();
    const std::string candidate = cut + "\xE2\x80\xA6";  // …
    if (ImGui::CalcTextSize(candidate.c_str()).x <= maxWidth) return candidate;
  }
  return {};
}

std::string readTextFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Where the shaders are: $ATTNSCOPE_SHADER_DIR, the source tree, or next to the binary.
fs::path findShaderDir() {
  std::vector<fs::path> candidates;
  if (const char* env = std::getenv("ATTNSCOPE_SHADER_DIR")) candidates.emplace_back(env);
#ifdef ATTNSCOPE_SHADER_DIR
  candidates.emplace_back(ATTNSCOPE_SHADER_DIR);
#endif
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    candidates.push_back(exe.parent_path() / "shaders");
    candidates.push_back(exe.parent_path().parent_path() / "shaders");
    candidates.push_back(exe.parent_path().parent_path() / "share" / "attnscope" / "shaders");
  }
  for (const fs::path& dir : candidates) {
    if (fs::exists(dir / "heatmap.frag", ec) && fs::exists(dir / "heatmap.vert", ec)) return dir;
  }
  return {};
}

// =======================================================================================
// GL helpers
// =======================================================================================

std::string compileShader(GLenum type, const std::string& source, const std::string& name,
                          GLuint* out) {
  GLuint shader = glCreateShader(type);
  const char* text = source.c_str();
  glShaderSource(shader, 1, &text, nullptr);
  glCompileShader(shader);
  GLint ok = 0;
  glGetShaderiv(shader, GL_COMPILE_STATUS, &ok);
  if (!ok) {
    char log[2048] = {};
    glGetShaderInfoLog(shader, sizeof log, nullptr, log);
    glDeleteShader(shader);
    return name + ": " + log;
  }
  *out = shader;
  return {};
}

// Sets the draw state for one heatmap quad. Runs inside ImGui_ImplOpenGL3_RenderDrawData:
// ImGui's VAO, vertex and index buffers are bound; the following AddImage command binds the
// value texture on unit 0 and draws with whatever program is current, i.e. ours. The
// ImDrawCallback_ResetRenderState after the quad gives the backend its state back.
void heatmapDrawCallback(const ImDrawList* /*list*/, const ImDrawCmd* command) {
  const auto* params =
      static_cast<const HeatmapCache::Impl::DrawParams*>(command->UserCallbackData);
  const HeatmapCache::Impl& impl = *params->impl;
  const ImDrawData* drawData = ImGui::GetDrawData();
  const float left = drawData->DisplayPos.x, right = left + drawData->DisplaySize.x;
  const float top = drawData->DisplayPos.y, bottom = top + drawData->DisplaySize.y;
  const float projection[4][4] = {
      {2.0f / (right - left), 0.0f, 0.0f, 0.0f},
      {0.0f, 2.0f / (top - bottom), 0.0f, 0.0f},
      {0.0f, 0.0f, -1.0f, 0.0f},
      {(right + left) / (left - right), (top + bottom) / (bottom - top), 0.0f, 1.0f},
  };
  glUseProgram(impl.program);
  glUniformMatrix4fv(impl.locProj, 1, GL_FALSE, &projection[0][0]);
  glUniform1i(impl.locValues, 0);
  glUniform1i(impl.locLut, 1);
  glUniform2f(impl.locRange, params->vmin, params->vmax);
  glUniform1i(impl.locLevel, params->level);
  glUniform3f(impl.locMasked, io::kMaskedColor.r / 255.f, io::kMaskedColor.g / 255.f,
              io::kMaskedColor.b / 255.f);
  glUniform3f(impl.locNan, io::kNanColor.r / 255.f, io::kNanColor.g / 255.f,
              io::kNanColor.b / 255.f);
  glUniform1f(impl.locHatch, params->hatch);
  glActiveTexture(GL_TEXTURE1);
  glBindTexture(GL_TEXTURE_2D, params->lut);
  glBindSampler(1, 0);
  glActiveTexture(GL_TEXTURE0);
  // Our attribute locations (bound before linking) on ImGui's vertex layout.
  glEnableVertexAttribArray(0);
  glEnableVertexAttribArray(1);
  glEnableVertexAttribArray(2);
  glVertexAttribPointer(0, 2, GL_FLOAT, GL_FALSE, sizeof(ImDrawVert),
                        reinterpret_cast<void*>(offsetof(ImDrawVert, pos)));
  glVertexAttribPointer(1, 2, GL_FLOAT, GL_FALSE, sizeof(ImDrawVert),
                        reinterpret_cast<void*>(offsetof(ImDrawVert, uv)));
  glVertexAttribPointer(2, 4, GL_UNSIGNED_BYTE, GL_TRUE, sizeof(ImDrawVert),
                        reinterpret_cast<void*>(offsetof(ImDrawVert, col)));
}

// Uploads `view.values` (and its pooled levels) into entry.texture.
void uploadValues(HeatmapCache::Impl::Entry& entry, const Matrix& values, bool gpu) {
  const int rows = static_cast<int>(values.rows()), cols = static_cast<int>(values.cols());
  // 1 finite range, for the auto colour range (once per upload, not per frame)
  entry.hasFinite = false;
  float lo = std::numeric_limits<float>::infinity(), hi = -lo;
  const float* data = values.data();
  for (Eigen::Index i = 0; i < values.size(); ++i) {
    if (std::isfinite(data[i])) {
      lo = std::min(lo, data[i]);
      hi = std::max(hi, data[i]);
      entry.hasFinite = true;
    }
  }
  entry.dataMin = entry.hasFinite ? lo : 0.f;
  entry.dataMax = entry.hasFinite ? hi : 1.f;

  const bool reshaped = rows != entry.rows || cols != entry.cols;
  entry.rows = rows;
  entry.cols = cols;
  if (reshaped) entry.u0 = entry.v0 = 0, entry.u1 = entry.v1 = 1;
  if (!gpu || rows == 0 || cols == 0) return;

  // 2 levels of detail: max-pooled halvings until both sides are small. Level 0 is the
  // matrix itself (row-major, uploaded straight from values.data()).
  std::vector<std::vector<float>> pooled;
  std::vector<const float*> levels{data};
  std::vector<std::pair<int, int>> sizes{{cols, rows}};  // (w, h)
  int h = rows, w = cols;
  while ((h > kMinPooledSide || w > kMinPooledSide) && (h > 1 || w > 1)) {
    int nh = 0, nw = 0;
    pooled.push_back(poolLevel(levels.back(), h, w, &nh, &nw));
    levels.push_back(pooled.back().data());
    h = nh;
    w = nw;
    sizes.emplace_back(w, h);
  }

  // 3 texture: re-allocated on shape change, else updated in place
  glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
  glPixelStorei(GL_UNPACK_ROW_LENGTH, 0);
  if (entry.texture == 0) glGenTextures(1, &entry.texture);
  glBindTexture(GL_TEXTURE_2D, entry.texture);
  const bool allocate = reshaped || entry.levels != static_cast<int>(levels.size());
  entry.levels = static_cast<int>(levels.size());
  for (int level = 0; level < entry.levels; ++level) {
    const auto [lw, lh] = sizes[level];
    if (allocate) {
      glTexImage2D(GL_TEXTURE_2D, level, GL_R32F, lw, lh, 0, GL_RED, GL_FLOAT, levels[level]);
    } else {
      glTexSubImage2D(GL_TEXTURE_2D, level, 0, 0, lw, lh, GL_RED, GL_FLOAT, levels[level]);
    }
  }
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_BASE_LEVEL, 0);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAX_LEVEL, entry.levels - 1);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER,
                  entry.levels > 1 ? GL_NEAREST_MIPMAP_NEAREST : GL_NEAREST);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
}

// Keeps the zoom rectangle inside [0, 1] and at least one cell wide.
void clampUv(HeatmapCache::Impl::Entry& entry) {
  auto clampAxis = [](float& a, float& b, int cells) {
    const float minSpan = std::min(1.f, 1.f / std::max(1, cells));
    float span = std::clamp(b - a, minSpan, 1.f);
    a = std::clamp(a, 0.f, 1.f - span);
    b = a + span;
  };
  clampAxis(entry.u0, entry.u1, entry.cols);
  clampAxis(entry.v0, entry.v1, entry.rows);
}

}  // namespace

// =======================================================================================
// HeatmapCache
// =======================================================================================

std::string fileStem(const std::string& text) {
  std::string out;
  bool underscore = false;
  for (unsigned char ch : text) {
    if (std::isalnum(ch)) {
      out += static_cast<char>(std::tolower(ch));
      underscore = false;
    } else if (!out.empty() && !underscore) {
      out += '_';
      underscore = true;
    }
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out.empty() ? "heatmap" : out;
}

void HeatmapCache::Impl::releaseEntry(Entry& entry) {
  if (gpu && entry.texture != 0) glDeleteTextures(1, &entry.texture);
  entry.texture = 0;
}

void HeatmapCache::Impl::releaseAll() {
  for (auto& [id, entry] : entries) releaseEntry(entry);
  entries.clear();
  if (gpu) {
    if (!lutTextures.empty()) {
      glDeleteTextures(static_cast<GLsizei>(lutTextures.size()), lutTextures.data());
    }
    if (program != 0) glDeleteProgram(program);
    if (imageTexture != 0) glDeleteTextures(1, &imageTexture);
  }
  imageTexture = 0;
  lutTextures.clear();
  program = 0;
  gpuReady = false;
}

HeatmapCache::HeatmapCache(bool gpu) : impl_(std::make_unique<Impl>(gpu)) {}

HeatmapCache::~HeatmapCache() {
  impl_->releaseAll();
}

bool HeatmapCache::gpu() const {
  return impl_->gpu;
}

HeatmapCache::Impl& HeatmapCache::impl() {
  return *impl_;
}

std::string HeatmapCache::initGpu() {
  Impl& impl = *impl_;
  if (!impl.gpu) return "heatmap cache was created without GPU";
  if (impl.gpuReady) return {};
  // 1 shaders
  const fs::path dir = findShaderDir();
  if (dir.empty()) {
    return "cannot find shaders/heatmap.vert and heatmap.frag (set ATTNSCOPE_SHADER_DIR)";
  }
  const std::string vertSource = readTextFile(dir / "heatmap.vert");
  const std::string fragSource = readTextFile(dir / "heatmap.frag");
  GLuint vert = 0, frag = 0;
  if (std::string error =
          compileShader(GL_VERTEX_SHADER, vertSource, (dir / "heatmap.vert").string(), &vert);
      !error.empty()) {
    return error;
  }
  if (std::string error =
          compileShader(GL_FRAGMENT_SHADER, fragSource, (dir / "heatmap.frag").string(), &frag);
      !error.empty()) {
    glDeleteShader(vert);
    return error;
  }
  GLuint program = glCreateProgram();
  glAttachShader(program, vert);
  glAttachShader(program, frag);
  glBindAttribLocation(program, 0, "Position");
  glBindAttribLocation(program, 1, "UV");
  glBindAttribLocation(program, 2, "Color");
  glLinkProgram(program);
  glDeleteShader(vert);
  glDeleteShader(frag);
  GLint ok = 0;
  glGetProgramiv(program, GL_LINK_STATUS, &ok);
  if (!ok) {
    char log[2048] = {};
    glGetProgramInfoLog(program, sizeof log, nullptr, log);
    glDeleteProgram(program);
    return std::string("linking the heatmap shader: ") + log;
  }
  impl.program = program;
  impl.locProj = glGetUniformLocation(program, "ProjMtx");
  impl.locValues = glGetUniformLocation(program, "Values");
  impl.locLut = glGetUniformLocation(program, "Lut");
  impl.locRange = glGetUniformLocation(program, "Range");
  impl.locLevel = glGetUniformLocation(program, "Level");
  impl.locMasked = glGetUniformLocation(program, "MaskedColor");
  impl.locNan = glGetUniformLocation(program, "NanColor");
  impl.locHatch = glGetUniformLocation(program, "HatchPeriod");

  // 2 one LUT texture per colormap: the same table the file export uses
  GLint previousTexture = 0;
  glGetIntegerv(GL_TEXTURE_BINDING_2D, &previousTexture);
  impl.lutTextures.assign(std::size(io::kAllColormaps), 0);
  glGenTextures(static_cast<GLsizei>(impl.lutTextures.size()), impl.lutTextures.data());
  for (std::size_t i = 0; i < impl.lutTextures.size(); ++i) {
    const auto& lut = io::colormapLut(io::kAllColormaps[i]);
    std::uint8_t rgba[256 * 4];
    for (int j = 0; j < 256; ++j) {
      rgba[j * 4 + 0] = lut[j].r;
      rgba[j * 4 + 1] = lut[j].g;
      rgba[j * 4 + 2] = lut[j].b;
      rgba[j * 4 + 3] = 255;
    }
    glBindTexture(GL_TEXTURE_2D, impl.lutTextures[i]);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
    glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
    glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, 256, 1, 0, GL_RGBA, GL_UNSIGNED_BYTE, rgba);
  }
  glBindTexture(GL_TEXTURE_2D, static_cast<GLuint>(previousTexture));
  impl.gpuReady = true;
  return {};
}

// =======================================================================================
// The widget
// =======================================================================================

namespace {

std::size_t colormapIndex(io::ColormapKind kind) {
  for (std::size_t i = 0; i < std::size(io::kAllColormaps); ++i) {
    if (io::kAllColormaps[i] == kind) return i;
  }
  return 0;
}

// The export dialog: path prefilled, written through io::exportMatrix like the CLI.
bool drawExportModal(HeatmapCache::Impl& impl, HeatmapCache::Impl::Entry& entry,
                     const io::MatrixView& view, const HeatmapOptions& options) {
  bool exported = false;
  const float font = ImGui::GetFontSize();
  ImGui::SetNextWindowSize(ImVec2(font * 34, 0), ImGuiCond_Appearing);
  if (!ImGui::BeginPopupModal("Export heatmap", nullptr, ImGuiWindowFlags_AlwaysAutoResize)) {
    return false;
  }
  ImGui::TextUnformatted(view.title.c_str());
  ImGui::SetNextItemWidth(font * 30);
  if (ImGui::IsWindowAppearing()) ImGui::SetKeyboardFocusHere();
  ImGui::InputText("File", &entry.exportPath);
  if (ImGui::IsItemHovered()) {
    ImGui::SetTooltip(
        "Where to write. The extension picks the format: .png, .svg or .csv.\n"
        "Folders are created as needed.");
  }
  const std::string extension = fs::path(entry.exportPath).extension().string();
  if (extension == ".png") {
    ImGui::SetNextItemWidth(font * 8);
    ImGui::SliderInt("Scale", &entry.exportScale, 1, 8, "%dx");
    if (ImGui::IsItemHovered()) {
      ImGui::SetTooltip("Resolution multiplier for slides and papers (1x = 40 px cells).");
    }
  }
  if (!entry.exportStatus.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, entry.exportFailed
                                             ? ImVec4(1.f, 0.35f, 0.3f, 1.f)
                                             : ImGui::GetStyleColorVec4(ImGuiCol_Text));
    ImGui::TextWrapped("%s", entry.exportStatus.c_str());
    ImGui::PopStyleColor();
  }
  if (ImGui::Button("Export", ImVec2(font * 6, 0)) ||
      (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Enter)) && !entry.exportPath.empty())) {
    io::HeatmapStyle style;
    style.colormap = options.colormap;
    // A file stands alone: always with axis labels and a colour bar (the on-screen widget
    // may drop them to save space), so the output is `attnscope export` with its defaults
    // plus the colormap, cell labels, scale and fixed range shown here.
    style.cellLabels = options.cellLabels;
    style.axisLabels = true;
    style.colorbar = true;
    style.scale = std::clamp(entry.exportScale, 1, 8);
    style.vmin = options.vmin;
    style.vmax = options.vmax;
    std::error_code ec;
    const fs::path parent = fs::path(entry.exportPath).parent_path();
    if (!parent.empty()) fs::create_directories(parent, ec);
    Status status = io::exportMatrix(view, style, entry.exportPath);
    if (status) {
      impl.messages.push_back("exported " + view.title + " to " + entry.exportPath);
      entry.exportStatus.clear();
      entry.exportFailed = false;
      exported = true;
      ImGui::CloseCurrentPopup();
    } else {
      entry.exportStatus = status.error().message();
      entry.exportFailed = true;
    }
  }
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("Write the file (same output as `attnscope export`).");
  ImGui::SameLine();
  if (ImGui::Button("Cancel", ImVec2(font * 6, 0)) ||
      ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape))) {
    entry.exportStatus.clear();
    ImGui::CloseCurrentPopup();
  }
  ImGui::EndPopup();
  return exported;
}

}  // namespace

HeatmapInteraction heatmapWidget(const char* id, HeatmapCache& cache, const io::MatrixView& view,
                                 std::uint64_t contentRevision, const HeatmapOptions& options) {
  HeatmapInteraction interaction;
  HeatmapCache::Impl& impl = cache.impl();
  const int frame = ImGui::GetFrameCount();
  // 1 per-frame bookkeeping: forget heatmaps that have not been drawn for a while
  if (impl.recordsFrame != frame) {
    impl.records.clear();
    impl.recordsFrame = frame;
    for (auto it = impl.entries.begin(); it != impl.entries.end();) {
      if (frame - it->second.lastFrame > 600) {
        impl.releaseEntry(it->second);
        it = impl.entries.erase(it);
      } else {
        ++it;
      }
    }
  }
  if (impl.drawParamsFrame != frame) {
    impl.drawParams.clear();
    impl.drawParamsFrame = frame;
  }

  ImGui::PushID(id);
  const ImGuiID key = ImGui::GetID("##heatmap");
  HeatmapCache::Impl::Entry& entry = impl.entries[key];
  entry.lastFrame = frame;
  const int rows = static_cast<int>(view.values.rows());
  const int cols = static_cast<int>(view.values.cols());
  if (rows == 0 || cols == 0) {
    ImGui::TextDisabled("(empty matrix)");
    ImGui::PopID();
    return interaction;
  }
  // 2 upload only when the content or its shape changed
  if (entry.revision != contentRevision || entry.rows != rows || entry.cols != cols) {
    uploadValues(entry, view.values, impl.gpu && impl.gpuReady);
    entry.revision = contentRevision;
    entry.labelFont = 0;  // labels may have changed too
    ++impl.uploads;
  }
  float vmin = 0, vmax = 1;
  effectiveRange(options, entry, &vmin, &vmax);

  // 3 layout: row labels | grid | colorbar, column labels above the grid
  const ImGuiIO& io = ImGui::GetIO();
  const float font = ImGui::GetFontSize();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  ImVec2 area = options.size;
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  if (area.x <= 0) area.x = std::max(avail.x, font * 6);
  if (area.y <= 0) area.y = avail.y >= font * 6 ? avail.y : std::min(area.x, font * 24);

  float rowLabelWidth = 0, colLabelHeight = 0;
  const float maxLabelWidth = font * 7;
  if (entry.labelFont != font) {
    auto widest = [&](const std::vector<std::string>& labels) {
      float width = 0;
      for (const std::string& label : labels) {
        width = std::max(width, ImGui::CalcTextSize(label.c_str()).x);
        if (width >= maxLabelWidth) break;
      }
      return std::min(width, maxLabelWidth);
    };
    entry.rowLabelWidth = widest(view.rowLabels);
    entry.colLabelWidth = widest(view.colLabels);
    entry.labelFont = font;
  }
  if (options.axisLabels) {
    rowLabelWidth = entry.rowLabelWidth + font * 0.4f;
    colLabelHeight = font * 1.3f;
  }
  char vminText[48], vmaxText[48];
  std::snprintf(vminText, sizeof vminText, "%.3g", vmin);
  std::snprintf(vmaxText, sizeof vmaxText, "%.3g", vmax);
  const float colorbarWidth = options.colorbar ? font * 1.4f +
                                                     std::max(ImGui::CalcTextSize(vminText).x,
                                                              ImGui::CalcTextSize(vmaxText).x) +
                                                     font * 0.4f
                                               : 0.f;
  const float gridAreaW = std::max(font, area.x - rowLabelWidth - colorbarWidth);
  const float gridAreaH = std::max(font, area.y - colLabelHeight);
  // Square cells, as large as the space allows, but allow up to 4:1 so that a long thin
  // matrix (one query over many keys) is still visible; cap huge cells on tiny matrices.
  float cellW = gridAreaW / cols, cellH = gridAreaH / rows;
  const float square = std::min(cellW, cellH);
  cellW = std::min({cellW, square * 4, font * 8});
  cellH = std::min({cellH, square * 4, font * 8});
  // A very long thin matrix (1024 x 8) must still be wide enough to see: at least a few
  // font sizes along each side when the space allows.
  const float minSide = font * 5;
  if (cellW * cols < std::min(gridAreaW, minSide)) cellW = std::min(gridAreaW, minSide) / cols;
  if (cellH * rows < std::min(gridAreaH, minSide)) cellH = std::min(gridAreaH, minSide) / rows;
  const ImVec2 gridSize(cellW * cols, cellH * rows);
  const ImVec2 gridMin(std::floor(origin.x + rowLabelWidth), std::floor(origin.y + colLabelHeight));
  const ImVec2 gridMax(gridMin.x + std::round(gridSize.x), gridMin.y + std::round(gridSize.y));
  const float gridW = gridMax.x - gridMin.x, gridH = gridMax.y - gridMin.y;

  // 4 interaction: zoom with the wheel around the cursor, pan by dragging, double-click
  // resets, hover gives (row, col), click reports a cell
  ImGui::SetCursorScreenPos(gridMin);
  const bool released =
      ImGui::InvisibleButton("##grid", ImVec2(std::max(gridW, 1.f), std::max(gridH, 1.f)),
                             ImGuiButtonFlags_MouseButtonLeft | ImGuiButtonFlags_MouseButtonMiddle);
  const bool hovered = ImGui::IsItemHovered();
  ImGui::SetItemUsingMouseWheel();
  ImGui::OpenPopupOnItemClick("##context", ImGuiPopupFlags_MouseButtonRight);
  if (ImGui::IsItemActivated()) entry.panned = false;
  auto uvAt = [&](ImVec2 p) {
    return ImVec2(entry.u0 + (p.x - gridMin.x) / gridW * (entry.u1 - entry.u0),
                  entry.v0 + (p.y - gridMin.y) / gridH * (entry.v1 - entry.v0));
  };
  if (hovered && io.MouseWheel != 0) {
    const ImVec2 anchor = uvAt(io.MousePos);
    const float factor = std::pow(1.25f, -io.MouseWheel);
    const float fx = (io.MousePos.x - gridMin.x) / gridW, fy = (io.MousePos.y - gridMin.y) / gridH;
    const float spanU = std::clamp((entry.u1 - entry.u0) * factor, 1.f / cols, 1.f);
    const float spanV = std::clamp((entry.v1 - entry.v0) * factor, 1.f / rows, 1.f);
    entry.u0 = anchor.x - fx * spanU;
    entry.u1 = entry.u0 + spanU;
    entry.v0 = anchor.y - fy * spanV;
    entry.v1 = entry.v0 + spanV;
    clampUv(entry);
  }
  if (ImGui::IsItemActive() && (ImGui::IsMouseDragging(ImGuiMouseButton_Left) ||
                                ImGui::IsMouseDragging(ImGuiMouseButton_Middle))) {
    entry.panned = true;
    const ImVec2 delta = io.MouseDelta;
    const float du = -delta.x / gridW * (entry.u1 - entry.u0);
    const float dv = -delta.y / gridH * (entry.v1 - entry.v0);
    entry.u0 += du, entry.u1 += du, entry.v0 += dv, entry.v1 += dv;
    clampUv(entry);
  }
  if (hovered && ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) {
    entry.u0 = entry.v0 = 0, entry.u1 = entry.v1 = 1;
  }
  const float u0 = entry.u0, v0 = entry.v0, u1 = entry.u1, v1 = entry.v1;
  const float visibleCols = (u1 - u0) * cols, visibleRows = (v1 - v0) * rows;
  const float cellPxW = gridW / visibleCols, cellPxH = gridH / visibleRows;
  auto cellScreenMin = [&](int r, int c) {
    return ImVec2(gridMin.x + (c - u0 * cols) * cellPxW, gridMin.y + (r - v0 * rows) * cellPxH);
  };
  if (hovered) {
    const ImVec2 uv = uvAt(io.MousePos);
    interaction.hovered = true;
    interaction.col = std::clamp(static_cast<int>(std::floor(uv.x * cols)), 0, cols - 1);
    interaction.row = std::clamp(static_cast<int>(std::floor(uv.y * rows)), 0, rows - 1);
    interaction.clicked =
        released && !entry.panned && ImGui::IsMouseReleased(ImGuiMouseButton_Left);
  }
  if (!ImGui::IsItemActive()) entry.panned = false;  // the drag (if any) is over
  if (hovered && ImGui::IsMouseClicked(ImGuiMouseButton_Right)) {
    entry.contextRow = interaction.row;
    entry.contextCol = interaction.col;
  }

  // 5 the textured quad, through our shader
  ImDrawList* drawList = ImGui::GetWindowDrawList();
  const float framebufferScale = std::max(io.DisplayFramebufferScale.x, 1.f);
  int level = 0;
  {
    const float cellsPerPixel = std::max(visibleCols / (gridW * framebufferScale),
                                         visibleRows / (gridH * framebufferScale));
    if (cellsPerPixel > 1.f) level = static_cast<int>(std::ceil(std::log2(cellsPerPixel) - 1e-3f));
    level = std::clamp(level, 0, std::max(0, entry.levels - 1));
  }
  const bool drawQuad = impl.gpu && impl.gpuReady && entry.texture != 0;
  if (drawQuad) {
    impl.drawParams.push_back(HeatmapCache::Impl::DrawParams{
        &impl, impl.lutTextures[colormapIndex(options.colormap)], vmin, vmax, level,
        std::max(6.f, std::round(font * 0.5f)) * framebufferScale});
    drawList->AddCallback(heatmapDrawCallback, &impl.drawParams.back());
    drawList->AddImage(reinterpret_cast<ImTextureID>(static_cast<std::intptr_t>(entry.texture)),
                       gridMin, gridMax, ImVec2(u0, v0), ImVec2(u1, v1));
    drawList->AddCallback(ImDrawCallback_ResetRenderState, nullptr);
  }
  if (options.highlight) {
    drawList->AddRect(ImVec2(gridMin.x - 3, gridMin.y - 3), ImVec2(gridMax.x + 3, gridMax.y + 3),
                      ImGui::GetColorU32(ImGuiCol_PlotHistogram), 0.f, 0, 3.f);
  }

  // 6 cell labels: only visible cells that are at least ~2.5 font heights tall
  const int firstCol = std::clamp(static_cast<int>(std::floor(u0 * cols)), 0, cols - 1);
  const int lastCol = std::clamp(static_cast<int>(std::ceil(u1 * cols)) - 1, 0, cols - 1);
  const int firstRow = std::clamp(static_cast<int>(std::floor(v0 * rows)), 0, rows - 1);
  const int lastRow = std::clamp(static_cast<int>(std::ceil(v1 * rows)) - 1, 0, rows - 1);
  drawList->PushClipRect(gridMin, gridMax, true);
  if (options.cellLabels && cellPxH >= font * 2.5f && level == 0) {
    for (int r = firstRow; r <= lastRow; ++r) {
      for (int c = firstCol; c <= lastCol; ++c) {
        const float value = view.values(r, c);
        std::string text = formatValue(value, 2);
        ImVec2 size = ImGui::CalcTextSize(text.c_str());
        if (size.x > cellPxW - font * 0.3f) {
          text = formatValue(value, 1);
          size = ImGui::CalcTextSize(text.c_str());
          if (size.x > cellPxW - font * 0.3f) {
            text = formatValue(value, 0);
            size = ImGui::CalcTextSize(text.c_str());
            if (size.x > cellPxW - font * 0.3f) continue;
          }
        }
        const ImVec2 cellMin = cellScreenMin(r, c);
        const ImVec2 at(std::round(cellMin.x + (cellPxW - size.x) * 0.5f),
                        std::round(cellMin.y + (cellPxH - size.y) * 0.5f));
        drawList->AddText(at, textColorOn(cellColor(value, options.colormap, vmin, vmax)),
                          text.c_str());
      }
    }
  }
  drawList->PopClipRect();

  // 7 axis labels: columns above, rows to the left; skipped evenly when too dense
  const ImU32 textColor = ImGui::GetColorU32(ImGuiCol_Text);
  if (options.axisLabels) {
    if (!view.colLabels.empty()) {
      const float widest = entry.colLabelWidth;
      const int step = std::max(1, static_cast<int>(std::ceil((widest + font * 0.5f) / cellPxW)));
      drawList->PushClipRect(ImVec2(gridMin.x - font, origin.y),
                             ImVec2(gridMax.x + font, gridMin.y), true);
      for (int c = firstCol; c <= lastCol && c < static_cast<int>(view.colLabels.size()); ++c) {
        if (c % step != 0) continue;
        const std::string text =
            fitText(view.colLabels[c], std::max(cellPxW * step - font * 0.3f, font));
        const float width = ImGui::CalcTextSize(text.c_str()).x;
        const float centre = cellScreenMin(0, c).x + cellPxW * 0.5f;
        drawList->AddText(ImVec2(std::round(centre - width * 0.5f), gridMin.y - font * 1.15f),
                          textColor, text.c_str());
      }
      drawList->PopClipRect();
    }
    if (!view.rowLabels.empty()) {
      const int step = std::max(1, static_cast<int>(std::ceil(font * 1.05f / cellPxH)));
      drawList->PushClipRect(ImVec2(origin.x, gridMin.y - font * 0.5f),
                             ImVec2(gridMin.x, gridMax.y + font * 0.5f), true);
      for (int r = firstRow; r <= lastRow && r < static_cast<int>(view.rowLabels.size()); ++r) {
        if (r % step != 0) continue;
        const std::string text = fitText(view.rowLabels[r], rowLabelWidth - font * 0.4f);
        const ImVec2 size = ImGui::CalcTextSize(text.c_str());
        const float centre = cellScreenMin(r, 0).y + cellPxH * 0.5f;
        drawList->AddText(
            ImVec2(gridMin.x - font * 0.3f - size.x, std::round(centre - size.y * 0.5f)), textColor,
            text.c_str());
      }
      drawList->PopClipRect();
    }
  }

  // 8 colorbar with min / max (the LUT texture, high values at the top)
  if (options.colorbar) {
    const ImVec2 barMin(gridMax.x + font * 0.5f, gridMin.y);
    const ImVec2 barMax(barMin.x + font * 0.8f, gridMin.y + std::max(gridH, font * 3));
    if (impl.gpu && impl.gpuReady) {
      const auto lut =
          static_cast<std::intptr_t>(impl.lutTextures[colormapIndex(options.colormap)]);
      drawList->AddImageQuad(reinterpret_cast<ImTextureID>(lut), barMin, ImVec2(barMax.x, barMin.y),
                             barMax, ImVec2(barMin.x, barMax.y), ImVec2(1, 0.5f), ImVec2(1, 0.5f),
                             ImVec2(0, 0.5f), ImVec2(0, 0.5f));
    }
    drawList->AddRect(barMin, barMax, ImGui::GetColorU32(ImGuiCol_Border));
    drawList->AddText(ImVec2(barMax.x + font * 0.3f, barMin.y - font * 0.1f), textColor, vmaxText);
    drawList->AddText(ImVec2(barMax.x + font * 0.3f, barMax.y - font * 0.95f), textColor, vminText);
  }

  // 9 hover readout
  if (interaction.hovered && !entry.panned) {
    const int r = interaction.row, c = interaction.col;
    const ImVec2 cellMin = cellScreenMin(r, c);
    drawList->PushClipRect(gridMin, gridMax, true);
    drawList->AddRect(cellMin, ImVec2(cellMin.x + cellPxW, cellMin.y + cellPxH),
                      IM_COL32(255, 255, 255, 220), 0.f, 0, std::max(1.f, font * 0.12f));
    drawList->PopClipRect();
    ImGui::BeginTooltip();
    ImGui::TextUnformatted(view.title.c_str());
    const std::string rowLabel =
        r < static_cast<int>(view.rowLabels.size()) ? view.rowLabels[r] : "";
    const std::string colLabel =
        c < static_cast<int>(view.colLabels.size()) ? view.colLabels[c] : "";
    ImGui::Text("row %d %s \xE2\x86\x92 column %d %s", r, rowLabel.c_str(), c, colLabel.c_str());
    const float value = view.values(r, c);
    if (std::isinf(value) && value < 0) {
      ImGui::Text("value: \xE2\x88\x92\xE2\x88\x9E (masked)");
    } else {
      ImGui::Text("value: %.6g", value);
    }
    if (options.tooltip) ImGui::TextDisabled("%s", options.tooltip);
    if (level > 0)
      ImGui::TextDisabled("cells are smaller than a pixel: showing the max of each block");
    ImGui::TextDisabled("wheel: zoom  drag: pan  double-click: reset  right-click: export");
    ImGui::EndTooltip();
  }

  // 10 context menu and export dialog
  if (ImGui::BeginPopup("##context")) {
    auto openExport = [&](const char* extension, int scale) {
      entry.exportPath = "./exports/" + impl.exportPrefix + "_" + fileStem(view.title) + extension;
      entry.exportScale = scale;
      entry.exportStatus.clear();
      entry.openExport = true;
    };
    if (ImGui::BeginMenu("Export PNG")) {
      for (int scale : {1, 2, 4, 8}) {
        const std::string label = std::to_string(scale) + "x\xE2\x80\xA6";
        if (ImGui::MenuItem(label.c_str())) openExport(".png", scale);
      }
      ImGui::EndMenu();
    }
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("Raster image, identical to `attnscope export`.");
    if (ImGui::MenuItem("Export SVG\xE2\x80\xA6")) openExport(".svg", 1);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("Vector image with the same layout.");
    if (ImGui::MenuItem("Export CSV\xE2\x80\xA6")) openExport(".csv", 1);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("Labels and values at full float precision.");
    ImGui::Separator();
    if (ImGui::MenuItem("Reset zoom")) entry.u0 = entry.v0 = 0, entry.u1 = entry.v1 = 1;
    const bool haveCell = entry.contextRow >= 0 && entry.contextRow < rows &&
                          entry.contextCol >= 0 && entry.contextCol < cols;
    if (ImGui::MenuItem("Copy value", nullptr, false, haveCell)) {
      char text[48];
      std::snprintf(text, sizeof text, "%.9g", view.values(entry.contextRow, entry.contextCol));
      ImGui::SetClipboardText(text);
    }
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("Copy the value of the cell you right-clicked.");
    ImGui::EndPopup();
  }
  if (entry.openExport) {
    ImGui::OpenPopup("Export heatmap");
    entry.openExport = false;
  }
  interaction.exportRequested = drawExportModal(impl, entry, view, options);

  // 11 record where it was drawn (screenshot sidecar) and reserve the space
  HeatmapRecord record;
  record.id = id;
  record.title = view.title;
  record.colormap = options.colormap;
  record.vmin = vmin;
  record.vmax = vmax;
  record.rows = rows;
  record.cols = cols;
  record.gridMin = gridMin;
  record.gridMax = gridMax;
  record.u0 = u0, record.v0 = v0, record.u1 = u1, record.v1 = v1;
  record.level = level;
  record.drawn = drawQuad;
  {
    // The sample: among (at most 32 x 32, strided) visible cells, the finite value closest
    // to the middle of the colour range, so a check of its pixel tells colours apart.
    int r = std::clamp(static_cast<int>((v0 + v1) * 0.5f * rows), firstRow, lastRow);
    int c = std::clamp(static_cast<int>((u0 + u1) * 0.5f * cols), firstCol, lastCol);
    const int rowStep = std::max(1, (lastRow - firstRow + 1) / 32);
    const int colStep = std::max(1, (lastCol - firstCol + 1) / 32);
    float best = std::numeric_limits<float>::infinity();
    for (int rr = firstRow; rr <= lastRow; rr += rowStep) {
      for (int cc = firstCol; cc <= lastCol; cc += colStep) {
        const float value = view.values(rr, cc);
        if (!std::isfinite(value)) continue;
        const float distance = std::fabs(colorT(value, vmin, vmax) - 0.5f);
        if (distance < best) best = distance, r = rr, c = cc;
      }
    }
    const ImVec2 cellMin = cellScreenMin(r, c);
    record.sampleRow = r;
    record.sampleCol = c;
    record.sampleValue = view.values(r, c);
    record.cellMin = ImVec2(std::max(cellMin.x, gridMin.x), std::max(cellMin.y, gridMin.y));
    record.cellMax =
        ImVec2(std::min(cellMin.x + cellPxW, gridMax.x), std::min(cellMin.y + cellPxH, gridMax.y));
    // Above the centred label: labels are one font height tall and centred, so the top
    // fifth of a labelled cell (>= 2.5 font heights) is free of text.
    record.samplePoint = ImVec2((record.cellMin.x + record.cellMax.x) * 0.5f,
                                record.cellMin.y + (record.cellMax.y - record.cellMin.y) * 0.15f);
    const ImVec2 clipMin = drawList->GetClipRectMin(), clipMax = drawList->GetClipRectMax();
    const ImVec2 p = record.samplePoint;
    record.sampleVisible =
        p.x >= clipMin.x && p.y >= clipMin.y && p.x < clipMax.x && p.y < clipMax.y;
  }
  impl.records.push_back(std::move(record));

  const ImVec2 used(
      options.size.x > 0 ? options.size.x : rowLabelWidth + gridW + colorbarWidth,
      options.size.y > 0 ? options.size.y : colLabelHeight + std::max(gridH, font * 3));
  ImGui::SetCursorScreenPos(origin);
  ImGui::Dummy(used);
  ImGui::PopID();
  return interaction;
}

}  // namespace attn::app
