// libFuzzer target for image loading through the project's loader (io::decodeImage, the
// same function loadImage and the window use). Build with clang and -DATTNSCOPE_FUZZ=ON:
//   mkdir -p corpus-image && cp assets/images/*.png corpus-image/
//   nice -n 10 ./fuzz_image corpus-image -max_len=16384 -rss_limit_mb=2048 -runs=1000000
//
// Properties checked for every input:
//   1 decodeImage never crashes, and an error is one line starting with the file name;
//   2 an accepted image is within the limits and its buffer has width·height·3 bytes;
//   3 an accepted image survives the patch embedding and the overlay of patch 0 (with the
//     smallest P that fits, on images of at most 64 x 64 pixels, so executions stay fast).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/attention/patches.h"
#include "formats/image.h"
#include "render/image_overlay.h"

namespace {

[[noreturn]] void die(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_image: %s\n%s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);

  // 1 decode
  const auto image = attn::io::decodeImage(bytes, "fuzz.img");
  if (!image) {
    const std::string message = image.error().message();
    if (message.find('\n') != std::string::npos || message.rfind("fuzz.img: ", 0) != 0) {
      die("error message is not one line starting with the file name", message);
    }
    return 0;
  }

  // 2 limits and shape
  const long long pixels = static_cast<long long>(image->width) * image->height;
  if (image->width <= 0 || image->height <= 0 || pixels > attn::io::kMaxImagePixels ||
      image->width > attn::io::kMaxImageSide || image->height > attn::io::kMaxImageSide) {
    die("accepted an image outside the limits",
        std::to_string(image->width) + "x" + std::to_string(image->height));
  }
  if (image->rgb.size() != static_cast<std::size_t>(pixels) * 3) die("wrong buffer size", "");

  // 3 patches and overlay (small images only: the fuzzer hunts crashes, not big matrices)
  if (pixels > 64 * 64 || image->width < 4 || image->height < 4) return 0;
  int patch = 4;
  while (patch < 64 && (image->width / patch) * (image->height / patch) > 4096) ++patch;
  attn::PatchOptions options;
  options.patch = patch;
  options.projection = attn::PatchProjection::Random;
  options.projectionDim = 8;
  options.positional = attn::PatchPositional::Sin2d;
  const auto embedding = attn::embedPatches(attn::io::toRgbImage(*image), options);
  if (!embedding) {
    // Only a too-small image may fail here (P grows to fit the patch limit).
    if (embedding.error().field != "patch") die("embedding failed", embedding.error().message());
    return 0;
  }
  if (!embedding->inputs.queries.allFinite()) die("non-finite patch vectors", "");
  const attn::Vector weights =
      attn::Vector::Constant(embedding->grid.count(), 1.0f / embedding->grid.count());
  const auto overlay =
      attn::io::renderPatchOverlay(*image, embedding->grid, weights, 0, attn::io::OverlayStyle{});
  if (!overlay) die("overlay failed", overlay.error().message());
  return 0;
}
