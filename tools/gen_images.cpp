// Writes the sample images of assets/images/ (see tools/sample_images.h):
//   build/gen_images assets/images
#include <cstdio>
#include <string>

#include "formats/files.h"
#include "formats/image.h"
#include "tools/sample_images.h"

namespace {

// Every file goes through the one atomic writer (formats/files.h).
bool writePng(const std::string& path, const attn::io::Image& image) {
  attn::Expected<std::string> png = attn::io::encodePng(image);
  attn::Status written = png ? attn::io::writeFileAtomic(path, *png) : attn::Status(png.error());
  if (!written) {
    std::fprintf(stderr, "gen_images: %s: %s\n", path.c_str(), written.error().message().c_str());
    return false;
  }
  std::printf("gen_images: wrote %s (%dx%d, %zu bytes)\n", path.c_str(), image.width, image.height,
              png->size());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: gen_images FOLDER   (writes shapes.png and stripes.png)\n");
    return 2;
  }
  const std::string folder = argv[1];
  const bool ok = writePng(folder + "/shapes.png", attn::samples::makeShapesImage()) &&
                  writePng(folder + "/stripes.png", attn::samples::makeStripesImage());
  return ok ? 0 : 2;
}
