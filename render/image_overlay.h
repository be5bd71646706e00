// The attention of one query patch over an image, blended on the picture. See docs/images.md.
#pragma once

#include <optional>

#include "core/attention/patches.h"
#include "formats/image.h"
#include "render/heatmap_render.h"

namespace attn::io {

// ---------------------------------------------------------------------------------------
// Overlay
// ---------------------------------------------------------------------------------------

struct OverlayStyle {
  ColormapKind colormap = ColormapKind::Viridis;
  float opacity = 0.6f;  // 0 = the image only, 1 = the colours only
  int scale = 1;         // 1..8: the output is (width·scale) x (height·scale), pixels repeated
  std::optional<float> vmin, vmax;  // colour range; default: the weights' min and max
  bool outlineQuery = true;         // frame the query patch (white inside black)
};

// The weights of one query over all patches, blended over the image: every pixel of patch
// i is mix(image, colormap((w_i - lo) / (hi - lo)), opacity). Pixels outside the grid (the
// dropped edge strips) are shown dimmed (half grey). `weights` has grid.count() entries
// (index r·cols + c); `queryIndex` in 0..count-1 is outlined, -1 for none. `image` must be
// the image the grid was made for. Errors (field): "opacity" outside 0..1, "scale" outside
// 1..8 or an output above 100 megapixels, "weights" of the wrong length, "query" out of
// range, "vmin" when vmin > vmax.
Expected<Image> renderPatchOverlay(const Image& image, const PatchGrid& grid, const Vector& weights,
                                   int queryIndex, const OverlayStyle& style);

}  // namespace attn::io
