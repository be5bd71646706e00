// The image view's logic (see image_view.h).
#include "render/image_overlay.h"
#include "app/session/image_view.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>

#include "formats/files.h"

namespace attn::app {

int ImageViewState::queryIndex() const {
  if (!computed) return -1;
  const PatchGrid& grid = computed->embedding.grid;
  return grid.index(std::clamp(queryRow, 0, grid.rows - 1), std::clamp(queryCol, 0, grid.cols - 1));
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
  // The previous image's result must not be drawn over this one.
  view.computed.reset();
  view.matrix = MatrixView{};
  view.error.clear();
  ++view.imageId;
  view.hoverPatch = view.hoverQuery = view.hoverKey = -1;
  view.bump();
  return Ok{};
}

ImageJob::Request ImageViewState::request() const {
  ImageJob::Request r;
  r.image = image;
  r.patch = patch;
  r.options.score = score;
  r.options.temperature = temperature;
  r.options.heads = heads;
  r.options.normalizer.kind = normalizer;
  r.options.seed = patch.seed;
  r.revision = revision;
  return r;
}

ImageJob::Result computeImageJob(const ImageJob::Request& request) {
  ImageJob::Result out;
  out.revision = request.revision;
  out.image = request.image;
  if (!request.image) return out;
  const auto start = std::chrono::steady_clock::now();
  Expected<PatchAttention> computed =
      attendPatches(io::toRgbImage(*request.image), request.patch, request.options);
  out.computeMs =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!computed) {
    const Error& error = computed.error();
    out.error = error.field.empty() ? error.problem : error.field + ": " + error.problem;
    return out;
  }
  auto shared = std::make_shared<const PatchAttention>(std::move(computed).value());
  const PatchGrid& grid = shared->embedding.grid;
  out.matrix.values = shared->weights;
  out.matrix.rowLabels.reserve(grid.count());
  for (int i = 0; i < grid.count(); ++i) out.matrix.rowLabels.push_back(patchLabel(grid, i));
  out.matrix.colLabels = out.matrix.rowLabels;
  out.matrix.title = "patch weights";
  out.matrix.rowAxis = "query patch";
  out.matrix.colAxis = "key patch";
  out.matrix.valueTitle = "weight";
  if (request.options.heads > 1) out.matrix.title += " (mean of heads)";
  out.computed = std::move(shared);
  return out;
}

namespace {

// Makes a finished job's result the one on screen.
void applyResult(ImageViewState& view, ImageJob::Result result) {
  if (result.image != view.image) return;  // computed for an image that was replaced since
  view.computedRevision = result.revision;
  view.computed = std::move(result.computed);
  view.error = std::move(result.error);
  view.matrix = std::move(result.matrix);
  view.computeMs = result.computeMs;
  if (view.computed) {
    const PatchGrid& grid = view.computed->embedding.grid;
    view.queryRow = std::clamp(view.queryRow, 0, grid.rows - 1);
    view.queryCol = std::clamp(view.queryCol, 0, grid.cols - 1);
  }
}

}  // namespace

bool updateImageView(ImageViewState& view) {
  if (view.computedRevision == view.revision) return false;
  applyResult(view, computeImageJob(view.request()));
  return true;
}

void ImageService::submit(ImageJob::Request request) {
  worker_.submit([this, request = std::move(request)](const std::atomic<bool>&) {
    ImageJob::Result result = computeImageJob(request);
    std::lock_guard lock(mutex_);
    finished_ = std::move(result);
  });
}

std::optional<ImageJob::Result> ImageService::take() {
  std::lock_guard lock(mutex_);
  std::optional<ImageJob::Result> result = std::move(finished_);
  finished_.reset();
  return result;
}

bool updateImageViewAsync(ImageViewState& view) {
  if (!view.service) view.service = std::make_shared<ImageService>();
  bool replaced = false;
  // 1 a finished result: show it (even if newer settings wait: it is the newest result)
  if (std::optional<ImageJob::Result> result = view.service->take()) {
    applyResult(view, std::move(*result));
    replaced = true;
  }
  // 2 the settings moved on: submit the newest request (latest wins)
  if (view.revision != view.computedRevision && view.revision != view.submittedRevision) {
    view.service->submit(view.request());
    view.submittedRevision = view.revision;
  }
  return replaced;
}

bool ImageViewState::computing() const {
  return service && service->busy();
}

Status exportOverlay(const ImageViewState& view, ColormapKind colormap,
                     const std::string& path) {
  if (!view.image || !view.computed) return Error{path, "", "no image attention to export"};
  const int query = view.queryIndex();
  const Vector weights = view.computed->weights.row(query).transpose();
  io::OverlayStyle style;
  style.colormap = colormap;
  style.opacity = view.opacity;
  style.resolution = view.exportScale;
  Expected<io::Image> overlay =
      io::renderPatchOverlay(*view.image, view.computed->embedding.grid, weights, query, style);
  if (!overlay) return io::withFile(overlay.error(), path);
  return io::writePng(*overlay, path);
}

}  // namespace attn::app
