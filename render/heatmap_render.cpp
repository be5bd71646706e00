// Heatmap export (PNG, SVG, CSV files). The pieces live by concern:
//   core/attention/selection.cpp  which matrix to show (MatrixKind, selectMatrix)
//   render/font.cpp            UTF-8 and TrueType text (stb_truetype)
//   render/heatmap_layout.cpp  the one layout of PNG, SVG and cellRect()
//   render/heatmap_raster.cpp  the PNG raster (renderHeatmap)
//   render/heatmap_svg.cpp     the SVG
//   render/heatmap_csv.cpp     the CSV
//   render/colormap.cpp        colormaps, colour range, label colour (max-pooling: core/attention/aggregate)
// This file: writing the files (exportMatrix).
#include "render/heatmap_render.h"
#include "formats/files.h"


#include <algorithm>
#include <filesystem>

#include "render/heatmap_layout.h"

namespace attn::io {

using namespace detail;

// =======================================================================================
// Public entry point
// =======================================================================================

Status exportMatrix(const HeatmapView& view, const HeatmapStyle& style, const std::string& path) {
  // 1 the format, from the extension
  const std::string extension = lowerExtension(path);
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
      return writePng(image, path);
    }
  }

  // 3 the file, through the one atomic writer
  return writeFileAtomic(path, bytes);
}

}  // namespace attn::io
