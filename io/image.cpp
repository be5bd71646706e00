// Image loading (stb_image, limits first), the patch overlay, CSV of weights.
// libstb provides the stb implementations; nothing here defines STB_*_IMPLEMENTATION.
#include "io/image.h"

#include <stb_image.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <system_error>

namespace attn::io {

namespace {

Error imageError(const std::string& fileName, std::string problem) {
  return Error{fileName, "", std::move(problem)};
}

std::string sizeText(long long width, long long height) {
  std::string text = std::to_string(width);
  text += 'x';
  text += std::to_string(height);
  return text;
}

// stb_image's reason for the last failure on this thread (it keeps it thread-local). Some
// reasons embed bytes of the file ("XXXX PNG chunk not known" carries the chunk type), so
// anything but printable ASCII becomes '?': an error stays one clean line.
std::string stbReason() {
  const char* reason = stbi_failure_reason();
  std::string text = reason ? reason : "unknown reason";
  for (char& c : text) {
    if (c < 0x20 || c > 0x7E) c = '?';
  }
  return text;
}

std::uint32_t bigEndian32(const unsigned char* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         std::uint32_t{p[3]};
}

// stb_image's info probe reports "unknown image type" for any PNG it rejects, so a PNG whose
// header says 0 pixels would get a vague message. Read the IHDR size ourselves for that case.
std::optional<std::string> explainBadPngHeader(std::string_view bytes) {
  static constexpr unsigned char kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  if (bytes.size() < 8 || std::memcmp(bytes.data(), kSignature, 8) != 0) return std::nullopt;
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  if (bytes.size() < 8 + 8 + 13 || std::memcmp(p + 12, "IHDR", 4) != 0) {
    return "corrupt PNG: the header (IHDR) is missing or cut short";
  }
  const std::uint32_t width = bigEndian32(p + 16), height = bigEndian32(p + 20);
  if (width == 0 || height == 0) {
    return "the image has zero size (" + sizeText(width, height) + " pixels)";
  }
  return "corrupt PNG header (" + sizeText(width, height) +
         " pixels claimed; stb_image: " + stbReason() + ")";
}

}  // namespace

// =======================================================================================
// Loading
// =======================================================================================

Expected<Image> decodeImage(std::string_view bytes, const std::string& fileName) {
  // 1 size of the buffer
  if (bytes.empty()) return imageError(fileName, "the file is empty (0 bytes), not an image");
  if (bytes.size() > kMaxImageFileBytes || bytes.size() > static_cast<std::size_t>(INT_MAX)) {
    return imageError(fileName, "the file has " + std::to_string(bytes.size()) +
                                    " bytes, above the limit of " +
                                    std::to_string(kMaxImageFileBytes) + " bytes");
  }
  const auto* data = reinterpret_cast<const stbi_uc*>(bytes.data());
  const int length = static_cast<int>(bytes.size());

  // 2 the header only: nothing is allocated for the pixels yet
  int width = 0, height = 0, channels = 0;
  if (!stbi_info_from_memory(data, length, &width, &height, &channels)) {
    if (auto png = explainBadPngHeader(bytes)) return imageError(fileName, *png);
    return imageError(fileName, "not a readable image (stb_image: " + stbReason() +
                                    "); use PNG, JPEG, BMP, GIF, TGA, PSD, HDR, PIC or PNM");
  }
  if (width <= 0 || height <= 0) {
    return imageError(fileName, "the image has zero size (" + sizeText(width, height) + " pixels)");
  }
  const long long pixels = static_cast<long long>(width) * height;
  if (pixels > kMaxImagePixels || width > kMaxImageSide || height > kMaxImageSide) {
    return imageError(fileName, "the image is " + sizeText(width, height) + " pixels (" +
                                    std::to_string(pixels) + "), above the limit of " +
                                    std::to_string(kMaxImagePixels) + " pixels (4096x4096) and " +
                                    std::to_string(kMaxImageSide) +
                                    " per side; scale it down first");
  }

  // 3 decode as RGBA
  int decodedWidth = 0, decodedHeight = 0, fileChannels = 0;
  std::unique_ptr<stbi_uc, void (*)(void*)> rgba(
      stbi_load_from_memory(data, length, &decodedWidth, &decodedHeight, &fileChannels, 4),
      stbi_image_free);
  if (!rgba) {
    return imageError(fileName, "the image data is truncated or corrupt (" +
                                    sizeText(width, height) +
                                    " pixels claimed; stb_image: " + stbReason() + ")");
  }
  if (decodedWidth != width || decodedHeight != height) {
    return imageError(fileName, "the header says " + sizeText(width, height) +
                                    " pixels but the data decodes to " +
                                    sizeText(decodedWidth, decodedHeight));
  }

  // 4 composite over white: out = (c·a + 255·(255 - a)) / 255, rounded
  Image image;
  image.width = width;
  image.height = height;
  image.rgb.resize(static_cast<std::size_t>(pixels) * 3);
  const stbi_uc* in = rgba.get();
  for (long long i = 0; i < pixels; ++i) {
    const unsigned alpha = in[4 * i + 3];
    for (int c = 0; c < 3; ++c) {
      const unsigned value = in[4 * i + c] * alpha + 255u * (255u - alpha);
      image.rgb[static_cast<std::size_t>(3 * i + c)] =
          static_cast<std::uint8_t>((value + 127) / 255);
    }
  }
  return image;
}

Expected<Image> loadImage(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) return imageError(path, "is a folder, not an image file");
  const auto size = fs::file_size(path, ec);
  if (ec) return imageError(path, "cannot be read (" + ec.message() + ")");
  if (size > kMaxImageFileBytes) {
    return imageError(path, "the file has " + std::to_string(size) + " bytes, above the limit of " +
                                std::to_string(kMaxImageFileBytes) + " bytes");
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) return imageError(path, "cannot be opened for reading");
  std::string bytes(static_cast<std::size_t>(size), '\0');
  file.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (file.gcount() != static_cast<std::streamsize>(bytes.size())) {
    return imageError(path, "could not be read completely");
  }
  return decodeImage(bytes, path);
}

RgbImage toRgbImage(const Image& image) {
  RgbImage out;
  out.rows = image.height;
  out.cols = image.width;
  out.rgb.resize(image.height, 3 * static_cast<Eigen::Index>(image.width));
  Scalar* data = out.rgb.data();  // row-major: the same order as the 8-bit buffer
  for (std::size_t i = 0; i < image.rgb.size(); ++i) {
    data[i] = static_cast<Scalar>(image.rgb[i]) / Scalar(255);
  }
  return out;
}

// =======================================================================================
// Overlay
// =======================================================================================

Expected<Image> renderPatchOverlay(const Image& image, const PatchGrid& grid, const Vector& weights,
                                   int queryIndex, const OverlayStyle& style) {
  // 1 checks
  if (!(style.opacity >= 0 && style.opacity <= 1)) {
    return Error{"", "opacity", "must be in 0..1"};
  }
  if (style.scale < 1 || style.scale > 8) return Error{"", "scale", "must be an integer in 1..8"};
  if (image.width != grid.imageCols || image.height != grid.imageRows ||
      image.rgb.size() != static_cast<std::size_t>(image.width) * image.height * 3) {
    return Error{"", "image",
                 "does not match the patch grid (" + sizeText(image.width, image.height) + " vs " +
                     sizeText(grid.imageCols, grid.imageRows) + ")"};
  }
  const long long outWidth = static_cast<long long>(image.width) * style.scale;
  const long long outHeight = static_cast<long long>(image.height) * style.scale;
  if (outWidth * outHeight > 100'000'000LL) {
    return Error{"", "scale",
                 "the overlay would be " + sizeText(outWidth, outHeight) +
                     " pixels, above 100 megapixels; use a smaller scale"};
  }
  if (weights.size() != grid.count()) {
    return Error{"", "weights",
                 "has " + std::to_string(weights.size()) + " entries, expected " +
                     std::to_string(grid.count()) + " (one per patch)"};
  }
  if (queryIndex < -1 || queryIndex >= grid.count()) {
    return Error{"", "query", "patch " + std::to_string(queryIndex) + " is out of range"};
  }
  if (style.vmin && style.vmax && *style.vmin > *style.vmax) {
    return Error{"", "vmin", "must not be above vmax"};
  }

  // 2 one colour per patch
  const Matrix row = weights.transpose();
  const ValueRange range = valueRange(matrixRef(row), style.vmin, style.vmax);
  std::vector<Rgb> colors(static_cast<std::size_t>(grid.count()));
  for (int i = 0; i < grid.count(); ++i) colors[i] = valueColor(style.colormap, weights[i], range);

  // 3 blend, pixel by pixel of the output
  Image out;
  out.width = static_cast<int>(outWidth);
  out.height = static_cast<int>(outHeight);
  out.rgb.resize(static_cast<std::size_t>(outWidth * outHeight) * 3);
  const float a = style.opacity;
  const int s = style.scale, p = grid.patch;
  for (int y = 0; y < out.height; ++y) {
    const int sy = y / s;
    const int patchRow = sy / p;
    for (int x = 0; x < out.width; ++x) {
      const int sx = x / s;
      const int patchCol = sx / p;
      const std::uint8_t* in = &image.rgb[(static_cast<std::size_t>(sy) * image.width + sx) * 3];
      std::uint8_t* o = &out.rgb[(static_cast<std::size_t>(y) * out.width + x) * 3];
      if (patchRow >= grid.rows || patchCol >= grid.cols) {
        for (int c = 0; c < 3; ++c) o[c] = static_cast<std::uint8_t>((in[c] + 128 + 1) / 2);
        continue;
      }
      const Rgb color = colors[static_cast<std::size_t>(grid.index(patchRow, patchCol))];
      const float target[3] = {float(color.r), float(color.g), float(color.b)};
      for (int c = 0; c < 3; ++c) {
        o[c] = static_cast<std::uint8_t>(std::lround((1 - a) * in[c] + a * target[c]));
      }
    }
  }

  // 4 the query's frame: black at the patch edge, then white, inside the patch
  if (style.outlineQuery && queryIndex >= 0) {
    const int x0 = (queryIndex % grid.cols) * p * s, y0 = (queryIndex / grid.cols) * p * s;
    const int edge = p * s;
    const int black = std::max(1, s), white = std::max(1, edge / 10);
    for (int y = 0; y < edge; ++y) {
      for (int x = 0; x < edge; ++x) {
        const int distance = std::min({x, y, edge - 1 - x, edge - 1 - y});
        if (distance >= black + white) continue;
        const std::uint8_t v = distance < black ? 0 : 255;
        std::uint8_t* o = &out.rgb[(static_cast<std::size_t>(y0 + y) * out.width + x0 + x) * 3];
        o[0] = o[1] = o[2] = v;
      }
    }
  }
  return out;
}

// =======================================================================================
// Encoding
// =======================================================================================

std::string matrixToCsv(const Matrix& values) {
  std::string out;
  char buffer[32];
  for (Eigen::Index r = 0; r < values.rows(); ++r) {
    for (Eigen::Index c = 0; c < values.cols(); ++c) {
      if (c > 0) out += ',';
      std::snprintf(buffer, sizeof buffer, "%.9g", static_cast<double>(values(r, c)));
      out += buffer;
    }
    out += '\n';
  }
  return out;
}

}  // namespace attn::io
