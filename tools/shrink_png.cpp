// Shrinks a PNG to a given width (the height follows the aspect ratio) by area averaging:
// every output pixel is the mean of the source pixels it covers, with fractional weights
// at its edges, so thin text strokes fade instead of vanishing. For the small screenshots
// committed in docs/screenshots/ (scripts/screenshots.sh), at 4 bits per channel:
//   build/shrink_png IN.png OUT.png WIDTH
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "formats/files.h"
#include "formats/image.h"

namespace {

// Area-average resampling of `n` samples (stride `step` apart, `channels` interleaved) from
// `in` to `m` samples in `out`; the same weights for every channel.
void resampleLine(const float* in, int n, float* out, int m, int step, int channels) {
  const double scale = static_cast<double>(n) / m;  // source samples per output sample
  for (int o = 0; o < m; ++o) {
    const double from = o * scale, to = (o + 1) * scale;
    for (int c = 0; c < channels; ++c) {
      double sum = 0;
      for (int i = static_cast<int>(from); i < n && i < to; ++i) {
        const double weight = std::min<double>(i + 1, to) - std::max<double>(i, from);
        sum += weight * in[static_cast<std::size_t>(i) * step + c];
      }
      out[static_cast<std::size_t>(o) * step + c] = static_cast<float>(sum / scale);
    }
  }
}

// `image` shrunk to width x height (both at most the source's).
attn::io::Image shrink(const attn::io::Image& image, int width, int height) {
  const int w = image.width, h = image.height;
  // 1 rows: w -> width.
  std::vector<float> source(image.rgb.begin(), image.rgb.end());
  std::vector<float> rows(static_cast<std::size_t>(width) * h * 3);
  for (int y = 0; y < h; ++y)
    resampleLine(&source[static_cast<std::size_t>(y) * w * 3], w,
                 &rows[static_cast<std::size_t>(y) * width * 3], width, 3, 3);
  // 2 columns: h -> height (a column's samples are a row apart).
  std::vector<float> both(static_cast<std::size_t>(width) * height * 3);
  for (int x = 0; x < width; ++x)
    resampleLine(&rows[static_cast<std::size_t>(x) * 3], h, &both[static_cast<std::size_t>(x) * 3],
                 height, width * 3, 3);
  attn::io::Image out;
  out.width = width;
  out.height = height;
  out.rgb.resize(both.size());
  // 4 bits per channel (16 levels, each the middle of its step): the averaged edges of text
  // and cells make many near-equal colours, which deflate poorly; UI colours barely change.
  for (std::size_t i = 0; i < both.size(); ++i) {
    const int v = static_cast<int>(std::clamp(both[i] + 0.5f, 0.0f, 255.0f));
    out.rgb[i] = static_cast<std::uint8_t>(std::min(255, (v & ~15) + 8));
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: shrink_png IN.png OUT.png WIDTH\n");
    return 2;
  }
  const int width = std::atoi(argv[3]);
  attn::Expected<attn::io::Image> image = attn::io::loadImage(argv[1]);
  if (!image) {
    std::fprintf(stderr, "shrink_png: %s\n", image.error().message().c_str());
    return 2;
  }
  if (width < 1 || width > image->width) {
    std::fprintf(stderr, "shrink_png: WIDTH must be 1..%d (the image's width)\n", image->width);
    return 2;
  }
  const int height = std::max(1, static_cast<int>(static_cast<long long>(image->height) * width /
                                                  image->width));
  attn::Expected<std::string> png = attn::io::encodePng(shrink(*image, width, height));
  attn::Status written = png ? attn::io::writeFileAtomic(argv[2], *png) : attn::Status(png.error());
  if (!written) {
    std::fprintf(stderr, "shrink_png: %s: %s\n", argv[2], written.error().message().c_str());
    return 2;
  }
  std::printf("shrink_png: wrote %s (%dx%d, %zu bytes)\n", argv[2], width, height, png->size());
  return 0;
}
