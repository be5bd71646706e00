// PIL-compatible resizing and the image processors' steps (see image_preprocess.h).
#include "core/models/image_preprocess.h"

#include <algorithm>
#include <cmath>

namespace attn::model {
namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;  // Pillow's PRECISION_BITS for 8-bit results

double bilinear(double x) {
  x = std::abs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

double bicubic(double x) {  // a = -0.5
  constexpr double a = -0.5;
  x = std::abs(x);
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

// One pass's fixed-point weights: for output i, inputs [first[i], first[i] + count[i]) with
// weights[i·size + k].
struct Coefficients {
  int size = 0;
  std::vector<int> first, count;
  std::vector<std::int32_t> weights;
};

Coefficients coefficients(int inSize, int outSize, ResampleFilter filter) {
  const double support0 = filter == ResampleFilter::Bicubic ? 2.0 : 1.0;
  const double scale = static_cast<double>(inSize) / outSize;
  const double filterScale = std::max(scale, 1.0);
  const double support = support0 * filterScale;
  Coefficients c;
  c.size = static_cast<int>(std::ceil(support)) * 2 + 1;
  c.first.resize(static_cast<std::size_t>(outSize));
  c.count.resize(static_cast<std::size_t>(outSize));
  c.weights.assign(static_cast<std::size_t>(outSize) * c.size, 0);
  std::vector<double> k(static_cast<std::size_t>(c.size));
  for (int x = 0; x < outSize; ++x) {
    const double center = (x + 0.5) * scale;
    const int lo = std::max(static_cast<int>(center - support + 0.5), 0);  // C truncation, as Pillow
    const int hi = std::min(static_cast<int>(center + support + 0.5), inSize);
    const int n = hi - lo;
    double sum = 0;
    for (int i = 0; i < n; ++i) {
      const double t = (i + lo - center + 0.5) / filterScale;
      k[static_cast<std::size_t>(i)] = filter == ResampleFilter::Bicubic ? bicubic(t) : bilinear(t);
      sum += k[static_cast<std::size_t>(i)];
    }
    for (int i = 0; i < n; ++i) {
      const double w = sum != 0.0 ? k[static_cast<std::size_t>(i)] / sum : k[static_cast<std::size_t>(i)];
      const double fixed = w * (1 << kPrecisionBits);
      c.weights[static_cast<std::size_t>(x) * c.size + i] =
          static_cast<std::int32_t>(w < 0 ? fixed - 0.5 : fixed + 0.5);
    }
    c.first[static_cast<std::size_t>(x)] = lo;
    c.count[static_cast<std::size_t>(x)] = n;
  }
  return c;
}

std::uint8_t clip8(std::int64_t sum) {
  const std::int64_t v = sum >> kPrecisionBits;  // arithmetic shift, as Pillow's lookup
  return static_cast<std::uint8_t>(std::clamp<std::int64_t>(v, 0, 255));
}

// One pass along x (horizontal) or y, rounding to 8 bits.
Rgb8 pass(const Rgb8& in, int outSize, ResampleFilter filter, bool horizontal) {
  const Coefficients c = coefficients(horizontal ? in.width : in.height, outSize, filter);
  Rgb8 out;
  out.width = horizontal ? outSize : in.width;
  out.height = horizontal ? in.height : outSize;
  out.rgb.resize(static_cast<std::size_t>(out.width) * out.height * 3);
  for (int y = 0; y < out.height; ++y)
    for (int x = 0; x < out.width; ++x) {
      const int i = horizontal ? x : y;
      const std::int32_t* w = c.weights.data() + static_cast<std::size_t>(i) * c.size;
      const int first = c.first[static_cast<std::size_t>(i)], n = c.count[static_cast<std::size_t>(i)];
      for (int ch = 0; ch < 3; ++ch) {
        std::int64_t sum = 1 << (kPrecisionBits - 1);
        for (int k = 0; k < n; ++k) {
          const int sx = horizontal ? first + k : x, sy = horizontal ? y : first + k;
          sum += static_cast<std::int64_t>(in.rgb[(static_cast<std::size_t>(sy) * in.width + sx) * 3 + ch]) * w[k];
        }
        out.rgb[(static_cast<std::size_t>(y) * out.width + x) * 3 + ch] = clip8(sum);
      }
    }
  return out;
}

}  // namespace

Rgb8 resizeLikePil(const Rgb8& image, int width, int height, ResampleFilter filter) {
  if (filter == ResampleFilter::Nearest) {
    Rgb8 out;
    out.width = width;
    out.height = height;
    out.rgb.resize(static_cast<std::size_t>(width) * height * 3);
    const double sx = static_cast<double>(image.width) / width, sy = static_cast<double>(image.height) / height;
    for (int y = 0; y < height; ++y)
      for (int x = 0; x < width; ++x) {
        const int ix = std::min(static_cast<int>((x + 0.5) * sx), image.width - 1);
        const int iy = std::min(static_cast<int>((y + 0.5) * sy), image.height - 1);
        std::copy_n(&image.rgb[(static_cast<std::size_t>(iy) * image.width + ix) * 3], 3,
                    &out.rgb[(static_cast<std::size_t>(y) * width + x) * 3]);
      }
    return out;
  }
  Rgb8 result = image;
  if (width != image.width) result = pass(result, width, filter, true);
  if (height != image.height) result = pass(result, height, filter, false);
  return result;
}

Rgb8 centerCrop(const Rgb8& image, int width, int height) {
  Rgb8 out;
  out.width = width;
  out.height = height;
  out.rgb.assign(static_cast<std::size_t>(width) * height * 3, 0);
  const int top = (image.height - height) / 2, left = (image.width - width) / 2;
  for (int y = 0; y < height; ++y) {
    const int sy = y + top;
    if (sy < 0 || sy >= image.height) continue;
    for (int x = 0; x < width; ++x) {
      const int sx = x + left;
      if (sx < 0 || sx >= image.width) continue;
      std::copy_n(&image.rgb[(static_cast<std::size_t>(sy) * image.width + sx) * 3], 3,
                  &out.rgb[(static_cast<std::size_t>(y) * width + x) * 3]);
    }
  }
  return out;
}

std::vector<float> preprocessImage(const Rgb8& image, const PreprocessOptions& o, int& outWidth,
                                   int& outHeight) {
  Rgb8 current = o.resize ? resizeLikePil(image, o.resizeWidth, o.resizeHeight, o.filter) : image;
  if (o.crop) current = centerCrop(current, o.cropWidth, o.cropHeight);
  outWidth = current.width;
  outHeight = current.height;
  const std::size_t plane = static_cast<std::size_t>(current.width) * current.height;
  std::vector<float> out(plane * 3);
  for (int ch = 0; ch < 3; ++ch)
    for (std::size_t i = 0; i < plane; ++i) {
      // rescale in double then float32, as numpy's image * scale followed by astype(float32)
      double v = current.rgb[i * 3 + static_cast<std::size_t>(ch)];
      if (o.rescale) v *= o.rescaleFactor;
      float f = static_cast<float>(v);
      if (o.normalize) f = (f - o.mean[static_cast<std::size_t>(ch)]) / o.std[static_cast<std::size_t>(ch)];
      out[static_cast<std::size_t>(ch) * plane + i] = f;
    }
  return out;
}

}  // namespace attn::model
