// The image view's logic (see image_view.h).
#include "app/image_view.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>

#include "io/scenario_json.h"

namespace attn::app {

namespace {

// TODO(files): use io::writeFileAtomic from io/files.h when it lands in main.
Status writeOutput(const std::string& path, std::string_view bytes) {
  Status written = io::writeFileAtomic(path, bytes);
  if (!written) {
    Error error = written.error();
    if (error.file.empty()) error.file = path;
    return error;
  }
  return Ok{};
}

}  // namespace

int ImageViewState::queryIndex() const {
  if (!computed) return -1;
  const PatchGrid& grid = computed->embedding.grid;
  return grid.index(std::clamp(queryRow, 0, grid.rows - 1), std::clamp(queryCol, 0, grid.cols - 1));
}

bool isImagePath(const std::string& path) {
  std::string extension = std::filesystem::path(path).extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const char* known : {".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tga", ".psd", ".hdr", ".pic",
                            ".pnm", ".ppm", ".pgm"}) {
    if (extension == known) return true;
  }
  return false;
}

std::string patchLabel(const PatchGrid& grid, int index) {
  if (grid.cols <= 0) return "";
  std::string label = std::to_string(index / grid.cols);
  label += ',';
  label += std::to_string(index % grid.cols);
  return label;
}

Status openImage(ImageViewState& view, const std::string& path) {
  Expected<io::Image> loaded = io::loadImage(path);
  if (!loaded) return loaded.error();
  const int p = view.patch.patch;
  view.queryRow = loaded->height / p / 2;
  view.queryCol = loaded->width / p / 2;
  view.image = std::make_shared<const io::Image>(std::move(loaded).value());
  view.path = path;
  ++view.imageId;
  view.hoverPatch = view.hoverQuery = view.hoverKey = -1;
  view.bump();
  return Ok{};
}

bool updateImageView(ImageViewState& view) {
  if (view.computedRevision == view.revision) return false;
  view.computedRevision = view.revision;
  view.computed.reset();
  view.error.clear();
  view.matrix = io::MatrixView{};
  if (!view.image) return true;

  const auto start = std::chrono::steady_clock::now();
  Options options;
  options.score = view.score;
  options.temperature = view.temperature;
  options.heads = view.heads;
  options.normalizer.kind = view.normalizer;
  options.seed = view.patch.seed;
  Expected<PatchAttention> computed =
      attendPatches(io::toRgbImage(*view.image), view.patch, options);
  view.computeMs =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!computed) {
    Error error = computed.error();
    view.error = error.field.empty() ? error.problem : error.field + ": " + error.problem;
    return true;
  }
  auto shared = std::make_shared<const PatchAttention>(std::move(computed).value());
  const PatchGrid& grid = shared->embedding.grid;
  view.queryRow = std::clamp(view.queryRow, 0, grid.rows - 1);
  view.queryCol = std::clamp(view.queryCol, 0, grid.cols - 1);
  view.matrix.values = shared->weights;
  view.matrix.rowLabels.reserve(grid.count());
  for (int i = 0; i < grid.count(); ++i) view.matrix.rowLabels.push_back(patchLabel(grid, i));
  view.matrix.colLabels = view.matrix.rowLabels;
  view.matrix.title = "patch weights";
  if (view.heads > 1) view.matrix.title += " (mean of heads)";
  view.computed = std::move(shared);
  return true;
}

Status exportOverlay(const ImageViewState& view, io::ColormapKind colormap,
                     const std::string& path) {
  if (!view.image || !view.computed) return Error{path, "", "no image attention to export"};
  const int query = view.queryIndex();
  const Vector weights = view.computed->weights.row(query).transpose();
  io::OverlayStyle style;
  style.colormap = colormap;
  style.opacity = view.opacity;
  style.scale = view.exportScale;
  Expected<io::Image> overlay =
      io::renderPatchOverlay(*view.image, view.computed->embedding.grid, weights, query, style);
  if (!overlay) {
    Error error = overlay.error();
    error.file = path;
    return error;
  }
  const std::string png = io::encodePng(*overlay);
  if (png.empty()) return Error{path, "", "the PNG encoder failed"};
  return writeOutput(path, png);
}

}  // namespace attn::app
