// OpenGL textures and the heatmap shader (see gl_texture.h and docs/heatmaps.md).
#include "app/ui/widgets/gl_texture.h"

#include <GL/gl.h>
#include <GL/glext.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "app/session/data_dir.h"

namespace attn::app {

namespace {

namespace fs = std::filesystem;

std::string readTextFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The info log of a shader or program whose `status` (GL_COMPILE_STATUS, GL_LINK_STATUS)
// is false, or "" when it is true. getIv / getLog: glGetShaderiv / glGetShaderInfoLog or
// the program ones.
template <class GetIv, class GetLog>
std::string failureLog(GLuint object, GLenum status, GetIv getIv, GetLog getLog) {
  GLint ok = 0;
  getIv(object, status, &ok);
  if (ok) return {};
  char log[2048] = {};
  getLog(object, sizeof log, nullptr, log);
  return log[0] != '\0' ? std::string(log) : std::string("(no log)");
}

std::string compileShader(GLenum type, const std::string& source, const std::string& name,
                          GLuint* out) {
  GLuint shader = glCreateShader(type);
  const char* text = source.c_str();
  glShaderSource(shader, 1, &text, nullptr);
  glCompileShader(shader);
  if (std::string log = failureLog(shader, GL_COMPILE_STATUS, glGetShaderiv, glGetShaderInfoLog);
      !log.empty()) {
    glDeleteShader(shader);
    return name + ": " + log;
  }
  *out = shader;
  return {};
}

}  // namespace

GlHeatmapTextures::~GlHeatmapTextures() {
  for (const TextureShape& shape : shapes_) glDeleteTextures(1, &shape.texture);
  if (!lutTextures_.empty()) {
    glDeleteTextures(static_cast<GLsizei>(lutTextures_.size()), lutTextures_.data());
  }
  if (program_ != 0) glDeleteProgram(program_);
}

std::string GlHeatmapTextures::init() {
  if (ready_) return {};
  // 1 shaders
  const fs::path dir = shaderDir();
  std::error_code ec;
  if (dir.empty() || !fs::exists(dir / "heatmap.vert", ec) ||
      !fs::exists(dir / "heatmap.frag", ec)) {
    return "cannot find shaders/heatmap.vert and heatmap.frag in attnscope's data folder '" +
           dataDir() + "' (set ATTNSCOPE_DATA_DIR)";
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
  if (std::string log = failureLog(program, GL_LINK_STATUS, glGetProgramiv, glGetProgramInfoLog);
      !log.empty()) {
    glDeleteProgram(program);
    return "linking the heatmap shader: " + log;
  }
  program_ = program;
  locProj_ = glGetUniformLocation(program, "ProjMtx");
  locValues_ = glGetUniformLocation(program, "Values");
  locLut_ = glGetUniformLocation(program, "Lut");
  locRange_ = glGetUniformLocation(program, "Range");
  locLevel_ = glGetUniformLocation(program, "Level");
  locMasked_ = glGetUniformLocation(program, "MaskedColor");
  locNan_ = glGetUniformLocation(program, "NanColor");
  locHatch_ = glGetUniformLocation(program, "HatchPeriod");

  // 2 one LUT texture per colormap: the same table the file export uses
  GLint previousTexture = 0;
  glGetIntegerv(GL_TEXTURE_BINDING_2D, &previousTexture);
  lutTextures_.assign(std::size(kAllColormaps), 0);
  glGenTextures(static_cast<GLsizei>(lutTextures_.size()), lutTextures_.data());
  for (std::size_t i = 0; i < lutTextures_.size(); ++i) {
    const auto& lut = io::colormapLut(kAllColormaps[i]);
    std::uint8_t rgba[256 * 4];
    for (int j = 0; j < 256; ++j) {
      rgba[j * 4 + 0] = lut[j].r;
      rgba[j * 4 + 1] = lut[j].g;
      rgba[j * 4 + 2] = lut[j].b;
      rgba[j * 4 + 3] = 255;
    }
    glBindTexture(GL_TEXTURE_2D, lutTextures_[i]);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
    glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
    glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, 256, 1, 0, GL_RGBA, GL_UNSIGNED_BYTE, rgba);
  }
  glBindTexture(GL_TEXTURE_2D, static_cast<GLuint>(previousTexture));
  ready_ = true;
  return {};
}

TextureId GlHeatmapTextures::upload(TextureId texture, const std::vector<MatrixRef>& levels) {
  if (!ready_ || levels.empty() || levels[0].empty()) return texture;
  if (texture == 0) {
    glGenTextures(1, &texture);
    shapes_.push_back({texture, {}});
  }
  auto shape = std::find_if(shapes_.begin(), shapes_.end(),
                            [&](const TextureShape& s) { return s.texture == texture; });
  std::vector<std::pair<int, int>> sizes;
  for (const MatrixRef& level : levels) sizes.emplace_back(level.cols, level.rows);
  // Re-allocated on a change of shape, else updated in place.
  const bool allocate = shape->sizes != sizes;
  shape->sizes = sizes;
  glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
  glBindTexture(GL_TEXTURE_2D, texture);
  // The levels and filters first, then the images: Mesa sizes a texture's storage from them
  // when level 0 is specified, so set afterwards its first upload allocated level 0 alone and
  // then again with the chain (under llvmpipe, level 1 of a new 491 x 491 block cost 5 ms of
  // the UI thread's CPU; the frame that shows one went from 11.7 to 8.2 ms with this order).
  const int count = static_cast<int>(levels.size());
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_BASE_LEVEL, 0);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAX_LEVEL, count - 1);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER,
                  count > 1 ? GL_NEAREST_MIPMAP_NEAREST : GL_NEAREST);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
  for (int level = 0; level < static_cast<int>(levels.size()); ++level) {
    const MatrixRef& values = levels[static_cast<std::size_t>(level)];
    // A strided view (a slice of a bigger tensor) is read in place: rows `stride` apart.
    glPixelStorei(GL_UNPACK_ROW_LENGTH,
                  values.contiguous() ? 0 : static_cast<GLint>(values.stride));
    if (allocate) {
      glTexImage2D(GL_TEXTURE_2D, level, GL_R32F, values.cols, values.rows, 0, GL_RED, GL_FLOAT,
                   values.data);
    } else {
      glTexSubImage2D(GL_TEXTURE_2D, level, 0, 0, values.cols, values.rows, GL_RED, GL_FLOAT,
                      values.data);
    }
  }
  glPixelStorei(GL_UNPACK_ROW_LENGTH, 0);
  return texture;
}

TextureId GlHeatmapTextures::uploadRgb(TextureId texture, const io::Image& image) {
  if (!ready_ || image.width <= 0 || image.height <= 0) return texture;
  if (texture == 0) glGenTextures(1, &texture);
  GLint previous = 0;
  glGetIntegerv(GL_TEXTURE_BINDING_2D, &previous);
  glBindTexture(GL_TEXTURE_2D, texture);
  glPixelStorei(GL_UNPACK_ROW_LENGTH, 0);
  glPixelStorei(GL_UNPACK_ALIGNMENT, 1);  // rows of width·3 bytes
  glTexImage2D(GL_TEXTURE_2D, 0, GL_RGB8, image.width, image.height, 0, GL_RGB, GL_UNSIGNED_BYTE,
               image.rgb.data());
  glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
  // Nearest when magnified (pixels and patches stay crisp), linear when shrunk.
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_LINEAR);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
  glBindTexture(GL_TEXTURE_2D, static_cast<GLuint>(previous));
  return texture;
}

void GlHeatmapTextures::drawRgb(ImDrawList* list, TextureId texture, ImVec2 min, ImVec2 max) {
  if (texture == 0) return;
  // ImGui's own shader: a plain textured quad.
  list->AddImage(reinterpret_cast<ImTextureID>(static_cast<std::intptr_t>(texture)), min, max);
}

void GlHeatmapTextures::release(TextureId texture) {
  if (texture == 0) return;
  glDeleteTextures(1, &texture);
  std::erase_if(shapes_, [&](const TextureShape& s) { return s.texture == texture; });
}

unsigned GlHeatmapTextures::lutOf(ColormapKind kind) const {
  for (std::size_t i = 0; i < std::size(kAllColormaps); ++i) {
    if (kAllColormaps[i] == kind) return lutTextures_[i];
  }
  return lutTextures_.front();
}

// Sets the draw state for one heatmap quad. Runs inside ImGui_ImplOpenGL3_RenderDrawData:
// ImGui's VAO, vertex and index buffers are bound; the following AddImage command binds the
// value texture on unit 0 and draws with whatever program is current, i.e. ours. The
// ImDrawCallback_ResetRenderState after the quad gives the backend its state back.
void GlHeatmapTextures::drawCallback(const ImDrawList* /*list*/, const ImDrawCmd* command) {
  const auto* params = static_cast<const DrawParams*>(command->UserCallbackData);
  const GlHeatmapTextures& self = *params->owner;
  const ImDrawData* drawData = ImGui::GetDrawData();
  const float left = drawData->DisplayPos.x, right = left + drawData->DisplaySize.x;
  const float top = drawData->DisplayPos.y, bottom = top + drawData->DisplaySize.y;
  const float projection[4][4] = {
      {2.0f / (right - left), 0.0f, 0.0f, 0.0f},
      {0.0f, 2.0f / (top - bottom), 0.0f, 0.0f},
      {0.0f, 0.0f, -1.0f, 0.0f},
      {(right + left) / (left - right), (top + bottom) / (bottom - top), 0.0f, 1.0f},
  };
  glUseProgram(self.program_);
  glUniformMatrix4fv(self.locProj_, 1, GL_FALSE, &projection[0][0]);
  glUniform1i(self.locValues_, 0);
  glUniform1i(self.locLut_, 1);
  glUniform2f(self.locRange_, params->range.lo, params->range.hi);
  glUniform1i(self.locLevel_, params->level);
  glUniform3f(self.locMasked_, io::kMaskedColor.r / 255.f, io::kMaskedColor.g / 255.f,
              io::kMaskedColor.b / 255.f);
  glUniform3f(self.locNan_, io::kNanColor.r / 255.f, io::kNanColor.g / 255.f,
              io::kNanColor.b / 255.f);
  glUniform1f(self.locHatch_, params->hatch);
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

void GlHeatmapTextures::drawQuad(ImDrawList* list, const HeatmapQuad& quad) {
  if (!ready_ || quad.texture == 0) return;
  const int frame = ImGui::GetFrameCount();
  if (drawParamsFrame_ != frame) {  // last frame's commands have been rendered
    drawParams_.clear();
    drawParamsFrame_ = frame;
  }
  drawParams_.push_back(DrawParams{this, lutOf(quad.colormap), quad.range, quad.level, quad.hatch});
  list->AddCallback(drawCallback, &drawParams_.back());
  list->AddImage(reinterpret_cast<ImTextureID>(static_cast<std::intptr_t>(quad.texture)), quad.min,
                 quad.max, quad.uv0, quad.uv1);
  list->AddCallback(ImDrawCallback_ResetRenderState, nullptr);
}

void GlHeatmapTextures::drawColorbar(ImDrawList* list, ColormapKind colormap, ImVec2 min,
                                     ImVec2 max) {
  if (!ready_) return;
  const auto lut = static_cast<std::intptr_t>(lutOf(colormap));
  list->AddImageQuad(reinterpret_cast<ImTextureID>(lut), min, ImVec2(max.x, min.y), max,
                     ImVec2(min.x, max.y), ImVec2(1, 0.5f), ImVec2(1, 0.5f), ImVec2(0, 0.5f),
                     ImVec2(0, 0.5f));
}

}  // namespace attn::app
