// A picture into a vision model's input, as Hugging Face's image processors (ViTImageProcessor,
// DeiTImageProcessor) do it with PIL: resize (PIL's Image.resize, 8-bit), optional centre
// crop, rescale, normalise. Eigen-free pure functions over 8-bit RGB; reading
// preprocessor_config.json is formats/models/vit_folder.h.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/base/types.h"

namespace attn::model {

// PIL's resampling filters (PIL.Image.Resampling values in brackets).
enum class ResampleFilter { Nearest /*0*/, Bilinear /*2*/, Bicubic /*3*/ };

// 8-bit RGB pixels, row 0 at the top: width x height x 3 bytes.
struct Rgb8 {
  int width = 0, height = 0;
  std::vector<std::uint8_t> rgb;
};

// PIL's Image.resize(size, filter) of an RGB image, bit for bit as Pillow's
// libImaging/Resample.c computes it (and reducing_gap None, as the processors call it):
//   for each output column x (then each row), the input centre c = (x + 0.5)·scale with
//   scale = in / out; the filter's support grows with the scale when shrinking
//   (support·max(scale, 1): downscaling averages over the source pixels, antialiased);
//   weights filter((i - c + 0.5) / max(scale, 1)) over the inputs i in range, normalised to
//   sum 1, then rounded to 22-bit fixed point; each pass rounds to 8 bits. The horizontal
//   pass runs first, then the vertical one; a pass whose size does not change is skipped.
// Nearest takes the source pixel at floor((x + 0.5)·scale). Sizes must be >= 1.
Rgb8 resizeLikePil(const Rgb8& image, int width, int height, ResampleFilter filter);

// The centre crop of Hugging Face's center_crop: top = (H - h) / 2, left = (W - w) / 2
// (integer division); a crop larger than the image is padded with zeros around it.
Rgb8 centerCrop(const Rgb8& image, int width, int height);

struct PreprocessOptions {
  bool resize = true;
  int resizeWidth = 224, resizeHeight = 224;
  ResampleFilter filter = ResampleFilter::Bilinear;
  bool crop = false;
  int cropWidth = 224, cropHeight = 224;
  bool rescale = true;
  double rescaleFactor = 1.0 / 255.0;
  bool normalize = true;
  std::array<float, 3> mean{0.5f, 0.5f, 0.5f};
  std::array<float, 3> std{0.5f, 0.5f, 0.5f};
};

// resize -> crop -> (value · rescaleFactor - mean) / std per channel, as float32:
// C x h x w floats, channel planes (R, G, B), row 0 at the top (PyTorch's pixel_values
// without the batch). `outWidth` / `outHeight` receive the final size.
std::vector<float> preprocessImage(const Rgb8& image, const PreprocessOptions& options, int& outWidth,
                                   int& outHeight);

}  // namespace attn::model
