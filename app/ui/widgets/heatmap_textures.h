// The textures behind the heatmap widget, as an interface: GlHeatmapTextures
// (app/ui/widgets/gl_texture.cpp) draws through OpenGL in the window; MockHeatmapTextures stands in for
// it in headless tests and counts what would have been uploaded and drawn. The widget never
// calls OpenGL itself.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <imgui.h>

#include "core/base/tensor_view.h"
#include "render/heatmap_render.h"

namespace attn::app {

using TextureId = unsigned;  // 0 = no texture

// One heatmap quad: a value texture read at one level of detail, coloured through a colormap
// LUT and a colour range (assets/shaders/heatmap.frag), over a screen rectangle.
struct HeatmapQuad {
  TextureId texture = 0;
  ColormapKind colormap = ColormapKind::Viridis;
  io::ValueRange range;
  int level = 0;    // level of detail to read (0 = one texel per cell)
  float hatch = 8;  // framebuffer pixels between the hatch lines of masked cells
  ImVec2 min, max;  // screen rectangle
  ImVec2 uv0, uv1;  // the visible part of the matrix
};

class HeatmapTextures {
 public:
  virtual ~HeatmapTextures() = default;
  // Loads what drawing needs (shaders, one LUT per colormap). Returns an error message,
  // empty on success.
  virtual std::string init() = 0;
  // True once init() succeeded: quads and colorbars are drawn.
  virtual bool ready() const = 0;
  // Uploads a matrix's levels of detail into `texture` (a new one when 0) and returns it:
  // levels[0] is the matrix (rows x cols), each next level a max-pooled halving (attn::maxPoolBlocks).
  // May return 0 when nothing can be uploaded (not ready).
  virtual TextureId upload(TextureId texture, const std::vector<MatrixRef>& levels) = 0;
  virtual void release(TextureId texture) = 0;
  // Adds the draw commands of a quad / of a vertical colorbar (high values at the top).
  virtual void drawQuad(ImDrawList* list, const HeatmapQuad& quad) = 0;
  virtual void drawColorbar(ImDrawList* list, ColormapKind colormap, ImVec2 min,
                            ImVec2 max) = 0;
  // An 8-bit RGB picture (the image view's): uploads it into `texture` (a new one when 0)
  // and returns it (0 when not ready); release() frees it like a value texture.
  virtual TextureId uploadRgb(TextureId texture, const io::Image& image) = 0;
  // Adds the draw command of an uploaded picture over a screen rectangle (nearest texels
  // when magnified).
  virtual void drawRgb(ImDrawList* list, TextureId texture, ImVec2 min, ImVec2 max) = 0;
};

// No GPU: records uploads and draws. Not ready until init() is called, like the GL textures
// before their context exists, so a headless widget draws no quad unless a test asks for it.
class MockHeatmapTextures final : public HeatmapTextures {
 public:
  struct Upload {
    TextureId texture = 0;
    std::vector<std::pair<int, int>> sizes;  // (rows, cols) of each level
    std::vector<float> top;                  // the last level's values, row-major
  };

  std::string init() override {
    initialised = true;
    return {};
  }
  bool ready() const override { return initialised; }
  TextureId upload(TextureId texture, const std::vector<MatrixRef>& levels) override {
    Upload record;
    record.texture = texture != 0 ? texture : ++lastId;
    for (const MatrixRef& level : levels) record.sizes.emplace_back(level.rows, level.cols);
    if (!levels.empty()) {
      const MatrixRef& last = levels.back();
      for (int r = 0; r < last.rows; ++r)
        record.top.insert(record.top.end(), last.row(r), last.row(r) + last.cols);
    }
    uploads.push_back(std::move(record));
    return uploads.back().texture;
  }
  void release(TextureId texture) override {
    if (texture != 0) ++releases;
  }
  void drawQuad(ImDrawList* /*list*/, const HeatmapQuad& quad) override { quads.push_back(quad); }
  void drawColorbar(ImDrawList* /*list*/, ColormapKind /*colormap*/, ImVec2 /*min*/,
                    ImVec2 /*max*/) override {
    ++colorbars;
  }

  TextureId uploadRgb(TextureId texture, const io::Image& image) override {
    if (!initialised) return 0;
    rgbUploads.emplace_back(image.width, image.height);
    return texture != 0 ? texture : ++lastId;
  }
  void drawRgb(ImDrawList* /*list*/, TextureId texture, ImVec2 /*min*/, ImVec2 /*max*/) override {
    rgbDraws.push_back(texture);
  }
  bool initialised = false;
  std::vector<std::pair<int, int>> rgbUploads;  // (width, height) of every picture upload
  std::vector<TextureId> rgbDraws;              // every picture drawn
  TextureId lastId = 0;
  std::vector<Upload> uploads;     // every upload, oldest first
  std::vector<HeatmapQuad> quads;  // every quad drawn
  int releases = 0, colorbars = 0;
};

}  // namespace attn::app
