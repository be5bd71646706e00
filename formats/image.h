// Images: loading (PNG, JPEG, BMP, GIF, TGA, PSD, HDR, PIC, PNM through stb_image), the
// conversion to the core's RgbImage, the attention overlay of one query patch, and CSV of
// weights (PNG encoding is io::encodePng in formats/files.h). No GL, no UI. See docs/images.md.
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

#include "core/attention/patches.h"
#include "formats/files.h"

namespace attn::io {

// Pixels: 8-bit RGB, row 0 at the top (what the decoders give, the renderers draw and
// encodePng writes).
struct Image {
  int width = 0, height = 0;
  std::vector<std::uint8_t> rgb;  // width*height*3, row 0 at the top
};

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

// "640x480": an image size as errors spell it.
std::string imageSizeText(long long width, long long height);

// 8-bit RGB -> RgbImage (value / 255), (height x 3·width).
RgbImage toRgbImage(const Image& image);


// Numbers as CSV with no labels: one line per row, values as %.9g separated by commas,
// LF line ends (the CLI's --weights-out and --matrix-out).
std::string matrixToCsv(const Matrix& values);

}  // namespace attn::io
