// Animated GIF files through giflib: frames of RGB pixels, each quantised to its own 256
// colours (median cut, GifQuantizeBuffer), with a delay per frame, looping forever.
#pragma once

#include <string>
#include <vector>

#include "core/base/types.h"
#include "render/heatmap_render.h"

namespace attn::io {

// Writes `frames` (all the same size, 1..65535 px a side) as an animated GIF at `path`
// (atomically, formats/files.h), each shown for `delayCentiseconds` (1..65535; GIF counts
// in hundredths of a second). Errors name the file ("frames": none or of different sizes).
Status writeGif(const std::vector<Image>& frames, int delayCentiseconds, const std::string& path);

}  // namespace attn::io
