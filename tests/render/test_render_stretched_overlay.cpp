// render/image_overlay: renderStretchedOverlay, a model's patch grid stretched over the whole
// picture (the ViT overlay of `attnscope model --image --overlay` and the Image panel).
#include <gtest/gtest.h>

#include "render/heatmap_render.h"
#include "render/image_overlay.h"

namespace test_render_stretched_overlay {
namespace {

using attn::io::Image;

Image grey(int w, int h) {
  Image image;
  image.width = w;
  image.height = h;
  image.rgb.assign(static_cast<std::size_t>(w) * h * 3, 100);
  return image;
}

const std::uint8_t* pixel(const Image& image, int x, int y) {
  return &image.rgb[(static_cast<std::size_t>(y) * image.width + x) * 3];
}

TEST(StretchedOverlay, EveryPixelTakesItsPatchColourAtThePicturesOwnSize) {
  // 2 x 2 patches over 5 x 3 pixels: column x·2/5 (x = 0, 1, 2 -> 0; 3, 4 -> 1), row y·2/3
  // (y = 0, 1 -> 0; 2 -> 1). Weight 1 at patch (0, 1), 0 elsewhere; colours 0..1, opaque.
  attn::io::OverlayStyle style;
  style.opacity = 1;
  style.vmin = 0;
  style.vmax = 1;
  style.outlineQuery = false;
  attn::Vector w(4);
  w << 0, 1, 0, 0;
  auto out = attn::io::renderStretchedOverlay(grey(5, 3), 2, 2, w, -1, style);
  ASSERT_TRUE(out.ok()) << out.error().message();
  EXPECT_EQ(out->width, 5);
  EXPECT_EQ(out->height, 3);
  const attn::io::Rgb hi = attn::io::colormapColor(style.colormap, 1.0f);
  const attn::io::Rgb lo = attn::io::colormapColor(style.colormap, 0.0f);
  for (int y = 0; y < 3; ++y)
    for (int x = 0; x < 5; ++x) {
      const bool hot = y <= 1 && x >= 3;
      const attn::io::Rgb want = hot ? hi : lo;
      EXPECT_EQ(pixel(*out, x, y)[0], want.r) << x << "," << y;
      EXPECT_EQ(pixel(*out, x, y)[1], want.g) << x << "," << y;
      EXPECT_EQ(pixel(*out, x, y)[2], want.b) << x << "," << y;
    }
  // Half opacity mixes with the picture: round(0.5·100 + 0.5·colour).
  style.opacity = 0.5f;
  out = attn::io::renderStretchedOverlay(grey(5, 3), 2, 2, w, -1, style);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(pixel(*out, 4, 0)[0], static_cast<std::uint8_t>(std::lround(50 + 0.5 * hi.r)));
}

TEST(StretchedOverlay, Errors) {
  attn::io::OverlayStyle style;
  attn::Vector w(3);
  w << 0.2f, 0.3f, 0.5f;
  auto out = attn::io::renderStretchedOverlay(grey(5, 3), 2, 2, w, -1, style);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().message(), "field 'weights': has 3 entries, expected 4 (one per patch)");
  attn::Vector w4(4);
  w4.setConstant(0.25f);
  out = attn::io::renderStretchedOverlay(grey(3, 3), 4, 4, attn::Vector::Constant(16, 0.1f), -1, style);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().message(), "field 'image': 3x3 is smaller than the 4x4 patch grid");
  out = attn::io::renderStretchedOverlay(grey(5, 3), 2, 2, w4, 4, style);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().message(), "field 'query': patch 4 is out of range");
}

}  // namespace
}  // namespace test_render_stretched_overlay
