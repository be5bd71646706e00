// Patch embedding of an image (see core/attention/patches.h and docs/images.md).
#include "core/attention/patches.h"

#include <cmath>
#include <string_view>

#include "core/base/random.h"

namespace attn {

namespace {

using Index = Eigen::Index;

// Seeds for the projection and the positional table are derived from the user's seed with a
// tag (core/base/random.h), so that changing one never changes the other.
constexpr std::string_view kProjectionTag = "patch.projection";
constexpr std::string_view kPositionalTag = "patch.positional";

Error patchError(std::string field, std::string problem) {
  return Error{"", std::move(field), std::move(problem)};
}

std::string sizeText(int cols, int rows) {
  std::string text = std::to_string(cols);
  text += 'x';
  text += std::to_string(rows);
  return text;
}

}  // namespace

// =======================================================================================
// Names
// =======================================================================================

std::string_view toString(PatchProjection kind) {
  return kind == PatchProjection::Random ? "random" : "none";
}

std::string_view toString(PatchPositional kind) {
  switch (kind) {
    case PatchPositional::Sin2d:
      return "sin2d";
    case PatchPositional::Random:
      return "random";
    case PatchPositional::None:
      break;
  }
  return "none";
}

std::optional<PatchPositional> parsePatchPositional(std::string_view name) {
  for (PatchPositional kind :
       {PatchPositional::None, PatchPositional::Sin2d, PatchPositional::Random}) {
    if (toString(kind) == name) return kind;
  }
  return std::nullopt;
}

// =======================================================================================
// The grid
// =======================================================================================

std::string PatchGrid::rule() const {
  std::string text = "a " + sizeText(imageCols, imageRows);
  text += " image with P=";
  text += std::to_string(patch);
  text += " gives " + sizeText(cols, rows);
  text += " patches (";
  text += std::to_string(count());
  text += "), ";
  if (droppedRight == 0 && droppedBottom == 0) return text + "dropping nothing";
  text += "dropping ";
  text += std::to_string(droppedRight);
  text += " px right and ";
  text += std::to_string(droppedBottom);
  text += " px bottom";
  return text;
}

Expected<PatchGrid> makePatchGrid(int imageCols, int imageRows, int patch) {
  if (patch < PatchLimits::kMinPatch || patch > PatchLimits::kMaxPatch) {
    return patchError("patch", "P = " + std::to_string(patch) + " is outside " +
                                   std::to_string(PatchLimits::kMinPatch) + ".." +
                                   std::to_string(PatchLimits::kMaxPatch));
  }
  if (imageCols < patch || imageRows < patch) {
    return patchError("patch", "the image (" + sizeText(imageCols, imageRows) +
                                   ") is smaller than one " + std::to_string(patch) + "x" +
                                   std::to_string(patch) + " patch");
  }
  PatchGrid grid;
  grid.patch = patch;
  grid.imageCols = imageCols;
  grid.imageRows = imageRows;
  grid.cols = imageCols / patch;
  grid.rows = imageRows / patch;
  grid.droppedRight = imageCols - grid.cols * patch;
  grid.droppedBottom = imageRows - grid.rows * patch;
  const long long count = static_cast<long long>(grid.rows) * grid.cols;
  if (count > PatchLimits::kMaxPatches) {
    // The smallest P whose grid fits, so the message says what to do.
    int fits = patch + 1;
    while (fits <= PatchLimits::kMaxPatch &&
           static_cast<long long>(imageCols / fits) * (imageRows / fits) >
               PatchLimits::kMaxPatches) {
      ++fits;
    }
    std::string problem = "P = " + std::to_string(patch) + " cuts the " +
                          sizeText(imageCols, imageRows) + " image into " + std::to_string(count) +
                          " patches, above the limit of " +
                          std::to_string(PatchLimits::kMaxPatches);
    if (fits <= PatchLimits::kMaxPatch) problem += "; use P >= " + std::to_string(fits);
    return patchError("patch", problem);
  }
  return grid;
}

// =======================================================================================
// Steps
// =======================================================================================

Matrix extractPatches(const RgbImage& image, const PatchGrid& grid) {
  const int p = grid.patch;
  Matrix pixels(grid.count(), 3 * p * p);
  for (int r = 0; r < grid.rows; ++r) {
    for (int c = 0; c < grid.cols; ++c) {
      Scalar* out = pixels.row(grid.index(r, c)).data();  // row-major: contiguous
      for (int y = 0; y < p; ++y) {
        // One patch row is 3·P contiguous floats of the image row: (x, channel) in order.
        const Scalar* in = image.rgb.row(r * p + y).data() + 3 * c * p;
        for (int i = 0; i < 3 * p; ++i) out[y * 3 * p + i] = in[i];
      }
    }
  }
  return pixels;
}

Matrix sinusoidal2dPositionalEncoding(int rows, int cols, int d) {
  const int rowDims = std::max(d, 0) / 2;
  const int colDims = std::max(d, 0) - rowDims;
  const Matrix rowPe = sinusoidalPositionalEncoding(rows, rowDims);
  const Matrix colPe = sinusoidalPositionalEncoding(cols, colDims);
  Matrix pe(static_cast<Index>(std::max(rows, 0)) * std::max(cols, 0), std::max(d, 0));
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      const Index i = static_cast<Index>(r) * cols + c;
      pe.row(i).head(rowDims) = rowPe.row(r);
      pe.row(i).tail(colDims) = colPe.row(c);
    }
  }
  return pe;
}

Matrix randomPositionalEncoding(int count, int d, std::uint64_t seed) {
  if (count <= 0 || d <= 0) return Matrix(std::max(count, 0), std::max(d, 0));
  // xavierUniform is U(-a, a) with a = √(6 / (count + d)); rescale to U(-1, 1).
  const Scalar bound = std::sqrt(Scalar(6) / static_cast<Scalar>(count + d));
  return xavierUniform(count, d, seed) / bound;
}

Matrix randomProjectionMatrix(int in, int out, std::uint64_t seed) {
  if (in <= 0 || out <= 0) return Matrix(std::max(in, 0), std::max(out, 0));
  // From U(-√(6/(in+out)), ·) to U(-√(3/out), ·): variance 1/out, so E|x·R|² = |x|².
  const Scalar scale = std::sqrt(static_cast<Scalar>(in + out) / (Scalar(2) * out));
  return xavierUniform(in, out, seed) * scale;
}

Expected<PatchEmbedding> embedPatches(const RgbImage& image, const PatchOptions& options) {
  // 0 checks
  if (image.rows <= 0 || image.cols <= 0 || image.rgb.rows() < image.rows ||
      image.rgb.cols() < 3 * static_cast<Index>(image.cols)) {
    return patchError(
        "image", "is empty or smaller than its stated size " + sizeText(image.cols, image.rows));
  }
  Expected<PatchGrid> grid = makePatchGrid(image.cols, image.rows, options.patch);
  if (!grid) return grid.error();
  const int rawDim = 3 * options.patch * options.patch;
  int dim = rawDim;
  if (options.projection == PatchProjection::Random) {
    if (options.projectionDim < 1 || options.projectionDim > PatchLimits::kMaxDim) {
      return patchError("projection", "D = " + std::to_string(options.projectionDim) +
                                          " is outside 1.." + std::to_string(PatchLimits::kMaxDim));
    }
    dim = options.projectionDim;
  } else if (rawDim > PatchLimits::kMaxDim) {
    return patchError("projection", "raw " + std::to_string(options.patch) + "x" +
                                        std::to_string(options.patch) +
                                        " patches have 3·P² = " + std::to_string(rawDim) +
                                        " numbers, above the width limit of " +
                                        std::to_string(PatchLimits::kMaxDim) +
                                        "; use P <= 36 or a random projection");
  }
  if (!std::isfinite(options.positionalStrength) || options.positionalStrength < 0 ||
      options.positionalStrength > 100) {
    return patchError("positional_strength", "must be a number in 0..100");
  }

  PatchEmbedding embedding;
  embedding.grid = *grid;
  // 1 pixels
  embedding.pixels = extractPatches(image, *grid);
  // 2 projection
  if (options.projection == PatchProjection::Random) {
    embedding.projected =
        embedding.pixels *
        randomProjectionMatrix(rawDim, dim, deriveSeed(options.seed, kProjectionTag));
  } else {
    embedding.projected = embedding.pixels;
  }
  // 3 positional encoding
  Matrix x = embedding.projected;
  switch (options.positional) {
    case PatchPositional::Sin2d:
      embedding.positional = sinusoidal2dPositionalEncoding(grid->rows, grid->cols, dim);
      break;
    case PatchPositional::Random:
      embedding.positional =
          randomPositionalEncoding(grid->count(), dim, deriveSeed(options.seed, kPositionalTag));
      break;
    case PatchPositional::None:
      break;
  }
  if (embedding.positional.size() != 0) x += options.positionalStrength * embedding.positional;
  // 4 self-attention: one sequence gives queries, keys and values
  embedding.inputs.queries = x;
  embedding.inputs.keys = x;
  embedding.inputs.values = std::move(x);
  return embedding;
}

Expected<PatchAttention> attendPatches(const RgbImage& image, const PatchOptions& patchOptions,
                                       const Options& options) {
  Expected<PatchEmbedding> embedding = embedPatches(image, patchOptions);
  if (!embedding) return embedding.error();
  PatchAttention out;
  out.embedding = std::move(embedding).value();
  Expected<AttentionResult> result = attend(out.embedding.inputs, options);
  if (!result) return result.error();
  out.result = std::move(result).value();
  out.weights = out.result.heads.size() == 1 ? out.result.heads[0].weights : out.result.weightsMean;
  return out;
}

}  // namespace attn
