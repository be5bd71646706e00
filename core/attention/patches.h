// An image as a set of vectors: P x P patches, each flattened to one row, optionally
// projected and given a positional encoding, as the input of self-attention (the patch
// embedding of a vision transformer, without training). Eigen only; loading the file is in
// formats/image.h.
//
// Conventions (see docs/images.md):
//   * sizes are written WIDTH x HEIGHT (pixels) and COLS x ROWS (patches), as image tools do;
//   * patch (r, c) is row r, column c of the patch grid, counted from 0 at the top left; its
//     index (its row in every n x d matrix and its row/column in the weights) is r·cols + c;
//   * a patch's pixel vector lists its pixels row by row, left to right, and each pixel as
//     R, G, B: entry (y·P + x)·3 + channel, with x, y the pixel inside the patch. Values in
//     [0, 1] (8-bit value / 255).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/attention/attention.h"

namespace attn {

// An RGB image of floats in [0, 1]. rgb is rows x (3·cols): pixel (y, x), channel c
// (0 = R, 1 = G, 2 = B) is rgb(y, 3·x + c).
struct RgbImage {
  int rows = 0;  // height in pixels
  int cols = 0;  // width in pixels
  Matrix rgb;    // rows x (3·cols)
};

// Documented limits of the patch embedding (on top of attn::Limits).
struct PatchLimits {
  static constexpr int kMinPatch = 4;
  static constexpr int kMaxPatch = 64;
  // Every patch is a token: at most attn::Limits::kMaxTokens (4096) patches.
  static constexpr int kMaxPatches = Limits::kMaxTokens;
  // Vector width (3·P² for raw pixels, D for a projection): at most attn::Limits::kMaxWidth
  // (4096). Raw pixels therefore allow P <= 36; larger patches need a random projection.
  static constexpr int kMaxDim = Limits::kMaxWidth;
};

// How the image is cut. Partial patches at the right and bottom edges are dropped.
struct PatchGrid {
  int patch = 0;          // P, the patch edge in pixels
  int imageCols = 0;      // image width in pixels
  int imageRows = 0;      // image height in pixels
  int cols = 0;           // patches per row = imageCols / P
  int rows = 0;           // patches per column = imageRows / P
  int droppedRight = 0;   // imageCols - cols·P pixels not covered at the right
  int droppedBottom = 0;  // imageRows - rows·P pixels not covered at the bottom

  int count() const { return rows * cols; }
  int index(int row, int col) const { return row * cols + col; }
  // The rule in one line, e.g. "a 100x70 image with P=16 gives 6x4 patches (24), dropping
  // 4 px right and 6 px bottom" (or "dropping nothing").
  std::string rule() const;
};

// The grid for an image of imageCols x imageRows pixels. Errors (field "patch"): P outside
// 4..64, an image smaller than one patch, more than kMaxPatches patches (the message names
// the smallest P that fits).
Expected<PatchGrid> makePatchGrid(int imageCols, int imageRows, int patch);

// Step 1: the raw pixel vectors, (count x 3·P²), in the order documented above. `image` must
// be at least grid.imageRows x grid.imageCols (grid from makePatchGrid on its size).
Matrix extractPatches(const RgbImage& image, const PatchGrid& grid);

enum class PatchProjection {
  None,    // the raw pixel vector, 3·P² numbers in [0, 1]
  Random,  // x·R, R (3·P² x D) seeded with entries of variance 1/D, so |x·R| ≈ |x|
};
enum class PatchPositional {
  None,
  Sin2d,   // 2-D sinusoidal: first ⌊d/2⌋ dims encode the patch row, the rest its column,
           // each as sinusoidalPositionalEncoding (Vaswani et al.) over the grid positions
  Random,  // "learned-like": one seeded U(-1, 1) vector per patch position
};
std::string_view toString(PatchProjection kind);  // "none", "random"
std::string_view toString(PatchPositional kind);  // "none", "sin2d", "random"
std::optional<PatchPositional> parsePatchPositional(std::string_view name);

struct PatchOptions {
  int patch = 16;  // P, 4..64
  PatchProjection projection = PatchProjection::None;
  int projectionDim = 64;  // D for Random, 1..kMaxDim
  PatchPositional positional = PatchPositional::None;
  Scalar positionalStrength = 1;  // X = vectors + strength · PE; finite, 0..100
  std::uint64_t seed = 0;         // for the random projection and the random PE
};

// The patch embedding of one image, ready for attend().
struct PatchEmbedding {
  PatchGrid grid;
  Matrix pixels;      // count x 3·P², step 1 (extractPatches)
  Matrix projected;   // count x d, step 2 (= pixels when projection is None)
  Matrix positional;  // count x d, step 3, unscaled PE (empty when None)
  Inputs inputs;      // step 4: queries = keys = values = projected + strength · positional
};

// Steps 1-4 above. Errors name the field: "patch" (see makePatchGrid), "projection" (raw
// width 3·P² above kMaxDim, or D outside 1..kMaxDim), "positional_strength", "image" (empty
// or smaller than its stated size). The result's inputs go to attend() unchanged, so every
// score function, mask, normaliser and head count of the core applies.
Expected<PatchEmbedding> embedPatches(const RgbImage& image, const PatchOptions& options);

// Patch embedding + self-attention in one call (what the CLI and the image view run).
struct PatchAttention {
  PatchEmbedding embedding;
  AttentionResult result;
  Matrix weights;  // count x count: the weights of the one head, or the mean over heads
};
// embedPatches, then attend(embedding.inputs, options). Errors name the field (see both).
Expected<PatchAttention> attendPatches(const RgbImage& image, const PatchOptions& patchOptions,
                                       const Options& options);

// 2-D positional encoding for a rows x cols grid, (rows·cols x d), row index r·cols + c.
Matrix sinusoidal2dPositionalEncoding(int rows, int cols, int d);
// Seeded U(-1, 1) positional vectors, (count x d).
Matrix randomPositionalEncoding(int count, int d, std::uint64_t seed);
// The random projection matrix R (in x out), entries U(-a, a) with a = √(3/out).
Matrix randomProjectionMatrix(int in, int out, std::uint64_t seed);

}  // namespace attn
