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
  int resolution = 1;    // 1..8: the output is (width·resolution) x (height·resolution), pixels repeated (CLI --scale)
  std::optional<float> vmin, vmax;  // fixed colour range (wins over `range`)
  // The range rule (io::rangeRule, the weights being probabilities): Auto = 0..1, MinMax /
  // Row = the weights' own min..max (one query: its row).
  RangeMode range = RangeMode::Auto;
  bool outlineQuery = true;         // frame the query patch (white inside black)
};

// The weights of one query over all patches, blended over the image: every pixel of patch
// i is mix(image, colormap((w_i - lo) / (hi - lo)), opacity) over overlayRange(). Pixels outside the grid (the
// dropped edge strips) are shown dimmed (half grey). `weights` has grid.count() entries
// (index r·cols + c); `queryIndex` in 0..count-1 is outlined, -1 for none. `image` must be
// the image the grid was made for. Errors (field): "opacity" outside 0..1, "scale" outside
// 1..8 or an output above 100 megapixels, "weights" of the wrong length, "query" out of
// range, "vmin" when vmin > vmax.
// The colour range of one query's weights under `style` (vmin / vmax, else the range rule).
ValueRange overlayRange(const Vector& weights, const OverlayStyle& style);

Expected<Image> renderPatchOverlay(const Image& image, const PatchGrid& grid, const Vector& weights,
                                   int queryIndex, const OverlayStyle& style);

// A model's patch grid (rows x cols patches of its resized input) stretched over the
// whole picture at its own size: output pixel (x, y) takes the colour of patch
// (y·rows / height, x·cols / width), blended as renderPatchOverlay does, with style's
// colour range (overlayRange) and opacity; `queryIndex` (-1: none) is outlined. A vision
// transformer's [CLS] row shown on the user's picture. Errors (field): "opacity", "weights"
// of a length other than rows·cols, "query", "vmin" > "vmax", a grid larger than the image.
Expected<Image> renderStretchedOverlay(const Image& image, int rows, int cols, const Vector& weights,
                                       int queryIndex, const OverlayStyle& style);

}  // namespace attn::io
