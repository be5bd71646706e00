// Heatmap export (PNG, SVG, CSV files). The pieces live by concern:
//   io/heatmap_select.cpp  which matrix to show (MatrixKind, selectMatrix)
//   io/font.cpp            UTF-8 and TrueType text (stb_truetype)
//   io/heatmap_layout.cpp  the one layout of PNG, SVG and cellRect()
//   io/heatmap_raster.cpp  the PNG raster (renderHeatmap)
//   io/heatmap_svg.cpp     the SVG
//   io/heatmap_csv.cpp     the CSV
//   io/colormap.cpp        colormaps, colour range, label colour, max-pooling
// This file: writing the files (exportMatrix).
#include "io/heatmap_render.h"

#include <stb_image_write.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <unistd.h>

#include "io/heatmap_layout.h"

namespace attn::io {

using namespace detail;

namespace {

// Writes `bytes` to a temporary file in the same directory, then renames it over `path`
// (atomic on POSIX), so readers never see a half-written file.
Status writeAtomically(const std::string& path, std::string_view bytes) {
  static std::atomic<unsigned> counter{0};
  const std::string temporary =
      path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
  std::FILE* file = std::fopen(temporary.c_str(), "wbx");
  if (!file) return Error{path, "", std::string("cannot create the file: ") + std::strerror(errno)};
  const bool written = std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size();
  const int writeErrno = errno;
  if (std::fclose(file) != 0 || !written) {
    const int error = written ? errno : writeErrno;
    std::remove(temporary.c_str());
    return Error{path, "", std::string("cannot write the file: ") + std::strerror(error)};
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const int error = errno;
    std::remove(temporary.c_str());
    return Error{path, "", std::string("cannot replace the file: ") + std::strerror(error)};
  }
  return Ok{};
}

void appendBytes(void* context, void* data, int size) {
  static_cast<std::string*>(context)->append(static_cast<const char*>(data),
                                             static_cast<size_t>(size));
}

Error withFile(Error error, const std::string& path) {
  if (error.file.empty()) error.file = path;
  return error;
}

}  // namespace

// =======================================================================================
// Public entry point
// =======================================================================================

Status exportMatrix(const HeatmapView& view, const HeatmapStyle& style, const std::string& path) {
  // 1 the format, from the extension
  std::string extension = std::filesystem::path(path).extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  if (extension != ".png" && extension != ".svg" && extension != ".csv") {
    return Error{path, "out",
                 extension.empty()
                     ? std::string("the file name has no extension (use .png, .svg or .csv)")
                     : "unsupported extension '" + extension + "' (use .png, .svg or .csv)"};
  }

  // 2 the content
  Status valid = checkStyle(view, style);
  if (!valid) return withFile(valid.error(), path);
  std::string bytes;
  if (extension == ".csv") {
    bytes = renderCsv(view);
  } else {
    Expected<const Font*> font = loadFont(fontPathOf(style));
    if (!font) return Error{path, "", font.error().message()};
    const Layout layout = computeLayout(view, style, *font);
    if (extension == ".svg") {
      bytes = renderSvg(view, style, layout, **font);
    } else {
      Status size = checkRasterSize(layout);
      if (!size) return withFile(size.error(), path);
      Image image;
      drawRaster(image, view, style, layout, **font);
      if (!stbi_write_png_to_func(appendBytes, &bytes, image.width, image.height, 3,
                                  image.rgb.data(), image.width * 3)) {
        return Error{path, "", "the PNG encoder failed"};
      }
    }
  }

  // 3 the file, atomically
  return writeAtomically(path, bytes);
}

}  // namespace attn::io
