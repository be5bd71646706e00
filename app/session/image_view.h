// The image view's state and logic (no GL, no ImGui): the open image, the patch and
// attention settings, the query, and the derived patch attention. The panel
// (app/ui/panels/panel_image.cpp) edits the settings and calls bump(); updateImageView() recomputes
// when the revision changed. See docs/images.md.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "app/session/image_model.h"
#include "app/session/latest_worker.h"
#include "core/attention/patches.h"
#include "render/heatmap_render.h"
#include "formats/image.h"

namespace attn::app {

// One computation of the view, self-contained so that it can run on a worker thread: the
// request holds shared, immutable inputs; the result is what the panel shows.
struct ImageJob {
  struct Request {
    std::shared_ptr<const io::Image> image;
    PatchOptions patch;
    Options options;
    std::uint64_t revision = 0;
  };
  struct Result {
    std::uint64_t revision = 0;
    std::shared_ptr<const io::Image> image;          // the image it was computed for
    std::shared_ptr<const PatchAttention> computed;  // null when it cannot compute
    std::string error;
    MatrixView matrix;
    double computeMs = 0;
  };
};

// The image view's worker: the services' one latest-wins worker (latest_worker.h) and the
// newest result it finished. Submitting replaces a request that has not started; a result
// is taken once.
class ImageService {
 public:
  void submit(ImageJob::Request request);
  // The newest finished result not taken yet, if any.
  std::optional<ImageJob::Result> take();
  // True while a request is queued or running.
  bool busy() const { return worker_.busy(); }
  // Blocks until nothing is queued or running (tests).
  void waitIdle() { worker_.waitIdle(); }

 private:
  std::mutex mutex_;
  std::optional<ImageJob::Result> finished_;
  LatestWorker worker_;  // last: joined first, before the members its jobs use
};

// Embeds the patches and runs attend() (thread-safe: touches nothing but `request`).
ImageJob::Result computeImageJob(const ImageJob::Request& request);

struct ImageViewState {
  // The image (null = none open). Shared so that a compute can hold it while a new one opens.
  std::shared_ptr<const io::Image> image;
  std::string path;
  std::uint64_t imageId = 0;  // bumped per successful open (the texture is re-uploaded)

  // Settings (the panel edits them, then calls bump()).
  PatchOptions patch;  // P = 16, raw pixels, no PE
  ScoreKind score = ScoreKind::Cosine;
  NormalizerKind normalizer = NormalizerKind::Softmax;
  float temperature = 1.0f;
  int heads = 1;
  int queryRow = 0, queryCol = 0;  // the query patch (clamped to the grid after a recompute)
  float opacity = 0.6f;
  int exportScale = 1;
  std::string exportPath;
  bool async = false;  // compute on a worker thread (the window; not screenshots or tests)
  bool showOpenDialog = false;  // asks the window for its "Open image" dialog (files.h)
  std::uint64_t revision = 0;  // of image + settings that change the computation

  // Derived (updateImageView).
  std::uint64_t computedRevision = ~0ull;
  std::shared_ptr<const PatchAttention> computed;  // null when it cannot compute
  std::string error;                               // why not (one line), else empty
  double computeMs = 0;
  MatrixView matrix;  // computed->weights with "r,c" labels, for the heatmap

  // Linked hover, set by the panel every frame: the patch under the mouse on the image
  // (-1 none), or the query/key patches of the heatmap cell under the mouse.
  int hoverPatch = -1;
  int hoverQuery = -1, hoverKey = -1;
  // Where the panel drew the image in the last frame (screen position of its top-left
  // pixel and screen pixels per image pixel; zoom 0 = not drawn), for hit tests and tests.
  float drawnX = 0, drawnY = 0, drawnZoom = 0;

  // Asynchronous computing (updateImageViewAsync): the worker (made on first use; shared by
  // copies of the state) and the newest revision submitted to it.
  std::shared_ptr<ImageService> service;
  std::uint64_t submittedRevision = ~0ull;

  // The "model" source: the picture through a vision transformer (image_model.h).
  ImageModelState model;

  void bump() { ++revision; }
  // The request for the current image and settings.
  ImageJob::Request request() const;
  // True while the worker has a request queued or running (the result on screen may be
  // older than the settings).
  bool computing() const;
  bool open() const { return image != nullptr; }
  // The query's patch index in the current grid (-1 when nothing is computed).
  int queryIndex() const;
};

// True for file names stb_image reads (.png .jpg .jpeg .bmp .gif .tga .psd .hdr .pic .pnm
// .ppm .pgm), case-insensitive: classifyPath (attention_source.h) says PathKind::Image.
bool isImagePath(const std::string& path);

// Loads an image into the view (the query goes to the centre patch). On error the view is
// unchanged and the error names the file.
Status openImage(ImageViewState& view, const std::string& path);

// Recomputes the patch attention if the revision changed, on this thread (tests,
// screenshots). Returns true if it recomputed.
bool updateImageView(ImageViewState& view);
// The window's version: never blocks. Shows the worker's newest finished result, and
// submits the newest settings when they changed (latest wins: a request that has not
// started is replaced). Until it finishes the previous result stays on screen. Returns
// true when the result on screen changed.
bool updateImageViewAsync(ImageViewState& view);

// Writes the overlay of the current query (with view.opacity, `colormap`, view.exportScale)
// as PNG to `path`, atomically. Errors name the file.
Status exportOverlay(const ImageViewState& view, ColormapKind colormap,
                     const std::string& path);

// "row,col" of a patch index, e.g. "2,5".
std::string patchLabel(const PatchGrid& grid, int index);

}  // namespace attn::app
