// The image view's state and logic (no GL, no ImGui): the open image, the patch and
// attention settings, the query, and the derived patch attention. The panel
// (app/panel_image.cpp) edits the settings and calls bump(); updateImageView() recomputes
// when the revision changed. See docs/images.md.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/patches.h"
#include "io/heatmap_render.h"
#include "io/image.h"

namespace attn::app {

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
  std::string exportPath;      // the export dialog's file field ("" = a name from the image)
  std::uint64_t revision = 0;  // of image + settings that change the computation

  // Derived (updateImageView).
  std::uint64_t computedRevision = ~0ull;
  std::shared_ptr<const PatchAttention> computed;  // null when it cannot compute
  std::string error;                               // why not (one line), else empty
  double computeMs = 0;
  io::MatrixView matrix;  // computed->weights with "r,c" labels, for the heatmap

  // Linked hover, set by the panel every frame: the patch under the mouse on the image
  // (-1 none), or the query/key patches of the heatmap cell under the mouse.
  int hoverPatch = -1;
  int hoverQuery = -1, hoverKey = -1;
  // Where the panel drew the image in the last frame (screen position of its top-left
  // pixel and screen pixels per image pixel; zoom 0 = not drawn), for hit tests and tests.
  float drawnX = 0, drawnY = 0, drawnZoom = 0;

  void bump() { ++revision; }
  bool open() const { return image != nullptr; }
  // The query's patch index in the current grid (-1 when nothing is computed).
  int queryIndex() const;
};

// True for file names stb_image reads (.png .jpg .jpeg .bmp .gif .tga .psd .hdr .pic .pnm
// .ppm .pgm), case-insensitive.
bool isImagePath(const std::string& path);

// Loads an image into the view (the query goes to the centre patch). On error the view is
// unchanged and the error names the file.
Status openImage(ImageViewState& view, const std::string& path);

// Recomputes the patch attention if the revision changed. Returns true if it recomputed.
bool updateImageView(ImageViewState& view);

// Writes the overlay of the current query (with view.opacity, `colormap`, view.exportScale)
// as PNG to `path`, atomically. Errors name the file.
Status exportOverlay(const ImageViewState& view, io::ColormapKind colormap,
                     const std::string& path);

// "row,col" of a patch index, e.g. "2,5".
std::string patchLabel(const PatchGrid& grid, int index);

}  // namespace attn::app
