// Image loading (stb_image, limits first), the patch overlay, CSV of weights.
// libstb provides the stb implementations; nothing here defines STB_*_IMPLEMENTATION.
#include "formats/image.h"

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
    return "the image has zero size (" + imageSizeText(width, height) + " pixels)";
  }
  return "corrupt PNG header (" + imageSizeText(width, height) +
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
    return imageError(fileName, "the image has zero size (" + imageSizeText(width, height) + " pixels)");
  }
  const long long pixels = static_cast<long long>(width) * height;
  if (pixels > kMaxImagePixels || width > kMaxImageSide || height > kMaxImageSide) {
    return imageError(fileName, "the image is " + imageSizeText(width, height) + " pixels (" +
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
                                    imageSizeText(width, height) +
                                    " pixels claimed; stb_image: " + stbReason() + ")");
  }
  if (decodedWidth != width || decodedHeight != height) {
    return imageError(fileName, "the header says " + imageSizeText(width, height) +
                                    " pixels but the data decodes to " +
                                    imageSizeText(decodedWidth, decodedHeight));
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

std::string imageSizeText(long long width, long long height) {
  std::string text = std::to_string(width);
  text += 'x';
  text += std::to_string(height);
  return text;
}

}  // namespace attn::io
