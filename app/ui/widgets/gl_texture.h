// The OpenGL side of the heatmap widget: R32F value textures with max-pooled mip levels,
// one RGBA8 LUT texture per colormap, and assets/shaders/heatmap.{vert,frag}. Needs a current GL
// context for init(), upload() and release(); drawing happens later inside ImGui's OpenGL3
// backend through a draw callback.
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "app/ui/widgets/heatmap_textures.h"

namespace attn::app {

class GlHeatmapTextures final : public HeatmapTextures {
 public:
  GlHeatmapTextures() = default;
  ~GlHeatmapTextures() override;
  GlHeatmapTextures(const GlHeatmapTextures&) = delete;
  GlHeatmapTextures& operator=(const GlHeatmapTextures&) = delete;

  std::string init() override;
  bool ready() const override { return ready_; }
  TextureId upload(TextureId texture, const std::vector<MatrixRef>& levels) override;
  void release(TextureId texture) override;
  void drawQuad(ImDrawList* list, const HeatmapQuad& quad) override;
  void drawColorbar(ImDrawList* list, ColormapKind colormap, ImVec2 min, ImVec2 max) override;
  TextureId uploadRgb(TextureId texture, const io::Image& image) override;
  void drawRgb(ImDrawList* list, TextureId texture, ImVec2 min, ImVec2 max) override;

  // Uniforms of one draw callback; a deque so that addresses stay valid until Render().
  struct DrawParams {
    const GlHeatmapTextures* owner = nullptr;
    unsigned lut = 0;
    io::ValueRange range;
    int level = 0;
    float hatch = 8;
  };

 private:
  struct TextureShape {
    TextureId texture = 0;
    std::vector<std::pair<int, int>> sizes;  // (cols, rows) per level as allocated
  };
  unsigned lutOf(ColormapKind kind) const;
  static void drawCallback(const ImDrawList* list, const ImDrawCmd* command);

  bool ready_ = false;
  unsigned program_ = 0;
  int locProj_ = -1, locValues_ = -1, locLut_ = -1, locRange_ = -1, locLevel_ = -1, locMasked_ = -1,
      locNan_ = -1, locHatch_ = -1;
  std::vector<unsigned> lutTextures_;  // one per kAllColormaps entry
  std::vector<TextureShape> shapes_;   // allocated size of each live value texture
  std::deque<DrawParams> drawParams_;
  int drawParamsFrame_ = -1;
};

}  // namespace attn::app
