// Images: loading (PNG, JPEG, BMP, GIF, TGA, PSD, HDR, PIC, PNM through stb_image), the
// conversion to the core's RgbImage, the attention overlay of one query patch, and CSV of
// weights (PNG encoding is io::encodePng in io/files.h). No GL, no UI. See docs/images.md.
//
// Limits come first: the header is read with stbi_info_from_memory before anything is
// decoded, so an image above the pixel limit (a "decompression bomb": a few kB of PNG that
// claims 18000 x 18000 pixels) is refused without allocating its pixels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/patches.h"
#include "io/files.h"
#include "io/heatmap_render.h"

namespace attn::io {

// Largest image we decode: 16,777,216 pixels (4096 x 4096, or any shape with as many
// pixels), each side at most 16384. The decoded RGBA buffer is then at most 64 MB.
inline constexpr long long kMaxImagePixels = 4096LL * 4096LL;
inline constexpr int kMaxImageSide = 16384;
// Largest image file we read, in bytes.
inline constexpr std::size_t kMaxImageFileBytes = 128u << 20;

// Decodes an image held in memory. `fileName` is only used in error messages: every error
// names it (field empty) and says what is wrong, on one line: an empty buffer, an unknown
// or corrupt header, a zero-size image, an image above the limits (with its size), or data
// that ends early / does not decode. Transparent pixels are composited over white; 16-bit
// and HDR images are reduced to 8 bits per channel by stb_image.
Expected<Image> decodeImage(std::string_view bytes, const std::string& fileName);

// Reads a file (its size is checked before reading) and decodes it.
Expected<Image> loadImage(const std::string& path);

// 8-bit RGB -> RgbImage (value / 255), (height x 3·width).
RgbImage toRgbImage(const Image& image);

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

// Numbers as CSV with no labels: one line per row, values as %.9g separated by commas,
// LF line ends (the CLI's --weights-out and --matrix-out).
std::string matrixToCsv(const Matrix& values);

}  // namespace attn::io
