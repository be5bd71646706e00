// Images as sets of vectors: the patch grid and its rule, patch extraction against
// hand-computed vectors, projections and positional encodings, attention over the sample
// shapes, the loader's limits and errors (a decompression bomb, truncated and zero-size
// files), and the overlay.
#include <gtest/gtest.h>
#include <stb_image.h>
#include <stb_image_write.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/attention/patches.h"
#include "formats/files.h"
#include "formats/image.h"
#include "render/image_overlay.h"
#include "tools/sample_images.h"
#include "tests/support/test_paths.h"

namespace test_render_image {
namespace {

using namespace attn;

// =======================================================================================
// Helpers
// =======================================================================================

void appendBytes(void* context, void* data, int size) {
  static_cast<std::string*>(context)->append(static_cast<const char*>(data),
                                             static_cast<std::size_t>(size));
}

std::string pngOf(const io::Image& image) {
  Expected<std::string> png = io::encodePng(image);
  EXPECT_TRUE(png.ok());
  return png.ok() ? *png : std::string();
}

void putBigEndian32(std::string& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((v >> shift) & 0xFF);
}

// One PNG chunk: length, type, data, CRC over type + data.
void putChunk(std::string& out, const char* type, const std::string& data) {
  putBigEndian32(out, static_cast<std::uint32_t>(data.size()));
  std::string typed = std::string(type, 4) + data;
  out += typed;
  putBigEndian32(out,
                 static_cast<std::uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(typed.data()),
                                                  static_cast<uInt>(typed.size()))));
}

// A valid, all-black 8-bit greyscale PNG of width x height, deflated row by row at level 9
// so that nothing of its raw size (width·height bytes) is ever held in memory.
std::string blackPng(std::uint32_t width, std::uint32_t height) {
  std::string png("\x89PNG\r\n\x1a\n", 8);
  std::string ihdr;
  putBigEndian32(ihdr, width);
  putBigEndian32(ihdr, height);
  ihdr +=
      std::string("\x08\x00\x00\x00\x00", 5);  // 8 bit, greyscale, deflate, no filter, no interlace
  putChunk(png, "IHDR", ihdr);

  z_stream stream{};
  EXPECT_EQ(deflateInit(&stream, 9), Z_OK);
  const std::vector<unsigned char> row(width + 1, 0);  // filter byte 0 + width zeros
  std::string idat;
  std::vector<unsigned char> buffer(1 << 16);
  for (std::uint32_t y = 0; y < height; ++y) {
    stream.next_in = const_cast<Bytef*>(row.data());
    stream.avail_in = static_cast<uInt>(row.size());
    const int flush = y + 1 == height ? Z_FINISH : Z_NO_FLUSH;
    do {
      stream.next_out = buffer.data();
      stream.avail_out = static_cast<uInt>(buffer.size());
      deflate(&stream, flush);
      idat.append(reinterpret_cast<const char*>(buffer.data()), buffer.size() - stream.avail_out);
    } while (stream.avail_out == 0 || (flush == Z_FINISH && stream.avail_in > 0));
  }
  deflateEnd(&stream);
  putChunk(png, "IDAT", idat);
  putChunk(png, "IEND", "");
  return png;
}

// The patch (row, col) of a grid over ShapesLayout, as an index (P = 16, 14 columns).
int shapesPatch(int row, int col) {
  return row * 14 + col;
}

// =======================================================================================
// The grid and its rule
// =======================================================================================

TEST(PatchGridTest, RuleOfTheIssueExample) {
  Expected<PatchGrid> grid = makePatchGrid(100, 70, 16);
  ASSERT_TRUE(grid.ok()) << grid.error().message();
  EXPECT_EQ(grid->cols, 6);
  EXPECT_EQ(grid->rows, 4);
  EXPECT_EQ(grid->count(), 24);
  EXPECT_EQ(grid->droppedRight, 4);
  EXPECT_EQ(grid->droppedBottom, 6);
  EXPECT_EQ(grid->rule(),
            "a 100x70 image with P=16 gives 6x4 patches (24), dropping 4 px right and 6 px bottom");
  EXPECT_EQ(makePatchGrid(64, 32, 16)->rule(),
            "a 64x32 image with P=16 gives 4x2 patches (8), dropping nothing");
}

TEST(PatchGridTest, ErrorsNameThePatchAndSayWhatFits) {
  for (int bad : {0, 3, 65, -16}) {
    Expected<PatchGrid> grid = makePatchGrid(256, 256, bad);
    ASSERT_FALSE(grid.ok());
    EXPECT_EQ(grid.error().field, "patch");
    EXPECT_NE(grid.error().problem.find("4..64"), std::string::npos) << grid.error().problem;
  }
  Expected<PatchGrid> small = makePatchGrid(10, 40, 16);
  ASSERT_FALSE(small.ok());
  EXPECT_NE(small.error().problem.find("smaller than one 16x16 patch"), std::string::npos);
  // 4096 x 4096 with P = 4: 1024² patches. 4096/P squared <= 4096 needs P >= 64.
  Expected<PatchGrid> many = makePatchGrid(4096, 4096, 4);
  ASSERT_FALSE(many.ok());
  EXPECT_NE(many.error().problem.find("1048576 patches"), std::string::npos)
      << many.error().problem;
  EXPECT_NE(many.error().problem.find("use P >= 64"), std::string::npos) << many.error().problem;
  // 1000 x 600 with P = 10: 6000 patches; P = 13 gives 76·46 = 3496 <= 4096, P = 12 gives
  // 83·50 = 4150.
  Expected<PatchGrid> some = makePatchGrid(1000, 600, 10);
  ASSERT_FALSE(some.ok());
  EXPECT_NE(some.error().problem.find("use P >= 13"), std::string::npos) << some.error().problem;
}

// =======================================================================================
// Extraction
// =======================================================================================

TEST(PatchExtractionTest, HandComputedVectors) {
  // A 9 x 5 image (width x height), P = 4: 2 x 1 patches, 1 px right and 1 px bottom
  // dropped. Pixel (x, y) has R = x/8, G = y/4, B = 1 if (x + y) is even, else 0.
  RgbImage image;
  image.cols = 9;
  image.rows = 5;
  image.rgb.resize(5, 27);
  for (int y = 0; y < 5; ++y)
    for (int x = 0; x < 9; ++x) {
      image.rgb(y, 3 * x + 0) = x / 8.0f;
      image.rgb(y, 3 * x + 1) = y / 4.0f;
      image.rgb(y, 3 * x + 2) = (x + y) % 2 == 0 ? 1.0f : 0.0f;
    }
  Expected<PatchGrid> grid = makePatchGrid(9, 5, 4);
  ASSERT_TRUE(grid.ok());
  EXPECT_EQ(grid->rule(),
            "a 9x5 image with P=4 gives 2x1 patches (2), dropping 1 px right and 1 px bottom");
  const Matrix pixels = extractPatches(image, *grid);
  ASSERT_EQ(pixels.rows(), 2);
  ASSERT_EQ(pixels.cols(), 48);
  // Patch 0, its first pixel row (y = 0, x = 0..3), written out by hand: R G B per pixel.
  const float firstRow0[12] = {0, 0, 1, 0.125f, 0, 0, 0.25f, 0, 1, 0.375f, 0, 0};
  for (int i = 0; i < 12; ++i) EXPECT_FLOAT_EQ(pixels(0, i), firstRow0[i]) << i;
  // Patch 1 (x = 4..7), its last pixel row (y = 3): entries 36..47.
  const float lastRow1[12] = {0.5f, 0.75f, 0, 0.625f, 0.75f, 1, 0.75f, 0.75f, 0, 0.875f, 0.75f, 1};
  for (int i = 0; i < 12; ++i) EXPECT_FLOAT_EQ(pixels(1, 36 + i), lastRow1[i]) << i;
  // Patch 1, pixel (x=1, y=2) inside it = image pixel (5, 2): entry (2·4 + 1)·3 = 27.
  EXPECT_FLOAT_EQ(pixels(1, 27), 5 / 8.0f);
  EXPECT_FLOAT_EQ(pixels(1, 28), 2 / 4.0f);
  EXPECT_FLOAT_EQ(pixels(1, 29), 0.0f);  // 5 + 2 odd
  // Nothing of column 8 or row 4 (the dropped strips) appears: R never reaches 1, G never 1.
  EXPECT_LT(pixels.col(0).maxCoeff(), 1.0f);
  for (int i = 0; i < 48; i += 3) EXPECT_LT(pixels.col(i).maxCoeff(), 1.0f);
  for (int i = 1; i < 48; i += 3) EXPECT_LT(pixels.col(i).maxCoeff(), 1.0f);
}

TEST(PatchExtractionTest, From8BitImageScaledToUnitRange) {
  io::Image image = samples::blankImage(8, 4, {255, 0, 51});
  samples::fillPixel(image, 5, 1, {0, 102, 255});
  Expected<PatchEmbedding> embedding =
      embedPatches(io::toRgbImage(image), PatchOptions{.patch = 4});
  ASSERT_TRUE(embedding.ok()) << embedding.error().message();
  ASSERT_EQ(embedding->pixels.rows(), 2);
  EXPECT_FLOAT_EQ(embedding->pixels(0, 0), 1.0f);
  EXPECT_FLOAT_EQ(embedding->pixels(0, 2), 0.2f);
  // Image pixel (5, 1) is pixel (1, 1) of patch 1: entry (1·4 + 1)·3 = 15.
  EXPECT_FLOAT_EQ(embedding->pixels(1, 15), 0.0f);
  EXPECT_FLOAT_EQ(embedding->pixels(1, 16), 0.4f);
  EXPECT_FLOAT_EQ(embedding->pixels(1, 17), 1.0f);
  // No projection, no PE: queries = keys = values = the pixels.
  EXPECT_EQ(embedding->inputs.queries, embedding->pixels);
  EXPECT_EQ(embedding->inputs.keys, embedding->pixels);
  EXPECT_EQ(embedding->inputs.values, embedding->pixels);
}

// =======================================================================================
// Projection and positional encoding
// =======================================================================================

TEST(PatchEmbeddingTest, RandomProjectionIsSeededAndKeepsLengths) {
  const io::Image shapes = samples::makeShapesImage();
  PatchOptions options{.patch = 16, .projection = PatchProjection::Random, .projectionDim = 256};
  options.seed = 7;
  Expected<PatchEmbedding> a = embedPatches(io::toRgbImage(shapes), options);
  Expected<PatchEmbedding> b = embedPatches(io::toRgbImage(shapes), options);
  ASSERT_TRUE(a.ok()) << a.error().message();
  ASSERT_EQ(a->projected.cols(), 256);
  EXPECT_EQ(a->projected, b->projected);
  options.seed = 8;
  Expected<PatchEmbedding> c = embedPatches(io::toRgbImage(shapes), options);
  EXPECT_GT((a->projected - c->projected).norm(), 1.0f);
  // Johnson-Lindenstrauss: lengths kept within a few tens of percent at D = 256.
  for (int i = 0; i < a->projected.rows(); ++i) {
    const float ratio = a->projected.row(i).norm() / a->pixels.row(i).norm();
    EXPECT_GT(ratio, 0.7f) << i;
    EXPECT_LT(ratio, 1.3f) << i;
  }
  // Identical patches stay identical.
  EXPECT_EQ(a->projected.row(shapesPatch(1, 1)), a->projected.row(shapesPatch(5, 9)));
}

TEST(PatchEmbeddingTest, Sinusoidal2dByHand) {
  // rows = 2, cols = 3, d = 4: [sin r, cos r, sin c, cos c] (frequency 1 for dims 0-1).
  const Matrix pe = sinusoidal2dPositionalEncoding(2, 3, 4);
  ASSERT_EQ(pe.rows(), 6);
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 3; ++c) {
      const int i = r * 3 + c;
      EXPECT_NEAR(pe(i, 0), std::sin(r), 1e-6);
      EXPECT_NEAR(pe(i, 1), std::cos(r), 1e-6);
      EXPECT_NEAR(pe(i, 2), std::sin(c), 1e-6);
      EXPECT_NEAR(pe(i, 3), std::cos(c), 1e-6);
    }
  // d = 6: row dims 0..2 use frequencies 1, 1, 10000^(-2/3); column dims 3..5 likewise.
  const Matrix pe6 = sinusoidal2dPositionalEncoding(2, 3, 6);
  EXPECT_NEAR(pe6(5, 2), std::sin(1 * std::pow(10000.0, -2.0 / 3)), 1e-6);  // r=1
  EXPECT_NEAR(pe6(5, 5), std::sin(2 * std::pow(10000.0, -2.0 / 3)), 1e-6);  // c=2
}

TEST(PatchEmbeddingTest, PositionalStrengthAddsScaledTable) {
  const io::Image stripes = samples::makeStripesImage();
  PatchOptions options{.patch = 16};
  options.positional = PatchPositional::Random;
  options.positionalStrength = 0.5f;
  options.seed = 3;
  Expected<PatchEmbedding> e = embedPatches(io::toRgbImage(stripes), options);
  ASSERT_TRUE(e.ok()) << e.error().message();
  ASSERT_EQ(e->positional.rows(), 128);
  EXPECT_LE(e->positional.maxCoeff(), 1.0f);
  EXPECT_GE(e->positional.minCoeff(), -1.0f);
  EXPECT_GT(e->positional.maxCoeff(), 0.9f);  // really spans U(-1, 1)
  const Matrix expected = e->pixels + 0.5f * e->positional;
  EXPECT_TRUE(e->inputs.queries.isApprox(expected, 1e-6f));
}

TEST(PatchEmbeddingTest, Errors) {
  const RgbImage shapes = io::toRgbImage(samples::makeShapesImage());
  // Raw 40 x 40 patches have 4800 numbers: above the width limit.
  Expected<PatchEmbedding> raw = embedPatches(shapes, PatchOptions{.patch = 40});
  ASSERT_FALSE(raw.ok());
  EXPECT_EQ(raw.error().field, "projection");
  EXPECT_NE(raw.error().problem.find("4800"), std::string::npos);
  // ... but a projection takes them.
  EXPECT_TRUE(embedPatches(shapes, PatchOptions{.patch = 40,
                                                .projection = PatchProjection::Random,
                                                .projectionDim = 32})
                  .ok());
  PatchOptions strength{.patch = 16};
  strength.positionalStrength = std::nanf("");
  EXPECT_EQ(embedPatches(shapes, strength).error().field, "positional_strength");
  EXPECT_EQ(embedPatches(RgbImage{}, PatchOptions{}).error().field, "image");
}

// =======================================================================================
// Attention over the sample images
// =======================================================================================

TEST(PatchAttentionTest, RedSquareAttendsToTheOtherRedSquareMoreThanToTheCircle) {
  using L = samples::ShapesLayout;
  const io::Image shapes = samples::makeShapesImage();
  Options options;
  options.score = ScoreKind::Cosine;
  Expected<PatchAttention> computed =
      attendPatches(io::toRgbImage(shapes), PatchOptions{.patch = 16}, options);
  ASSERT_TRUE(computed.ok()) << computed.error().message();
  const PatchGrid& grid = computed->embedding.grid;
  ASSERT_EQ(grid.cols, 14);
  ASSERT_EQ(grid.rows, 10);

  // Patches of each shape, found from the pixels (not from the layout constants).
  std::vector<int> squareB, circle;
  for (int r = 0; r < grid.rows; ++r)
    for (int c = 0; c < grid.cols; ++c) {
      const int x = c * 16, y = r * 16;
      if (x >= L::kSquareB[0] && x + 16 <= L::kSquareB[2] && y >= L::kSquareB[1] &&
          y + 16 <= L::kSquareB[3])
        squareB.push_back(grid.index(r, c));
      bool blue = false;
      for (int yy = y; yy < y + 16; ++yy)
        for (int xx = x; xx < x + 16; ++xx) {
          const std::uint8_t* p =
              &shapes.rgb[(static_cast<std::size_t>(yy) * shapes.width + xx) * 3];
          blue = blue || (p[2] == samples::kBlue.b && p[0] == samples::kBlue.r);
        }
      if (blue) circle.push_back(grid.index(r, c));
    }
  ASSERT_EQ(squareB.size(), 9u);
  ASSERT_GE(circle.size(), 9u);

  for (int queryRow = 1; queryRow <= 3; ++queryRow) {
    for (int queryCol = 1; queryCol <= 3; ++queryCol) {
      const int query = grid.index(queryRow, queryCol);
      const auto weights = computed->weights.row(query);
      float minSquare = 1, maxCircle = 0;
      for (int k : squareB) minSquare = std::min(minSquare, weights(k));
      for (int k : circle) maxCircle = std::max(maxCircle, weights(k));
      EXPECT_GT(minSquare, maxCircle) << "query " << queryRow << "," << queryCol;
      // Identical patches: cosine 1, the same weight as the query's own patch.
      for (int k : squareB) EXPECT_FLOAT_EQ(weights(k), weights(query));
      // Worked value: cosine of red (220, 30, 30) and blue (30, 70, 220) pixels, the score of
      // a full blue patch, is (220·30 + 30·70 + 30·220)/(|red|·|blue|).
      const double red = std::sqrt(220.0 * 220 + 30 * 30 + 30 * 30);
      const double blue = std::sqrt(30.0 * 30 + 70 * 70 + 220 * 220);
      const double cosRedBlue = (220.0 * 30 + 30 * 70 + 30 * 220) / (red * blue);
      const int fullBlue = grid.index(2, 9);  // inside the circle
      EXPECT_NEAR(headScores(computed->result, 0)(query, fullBlue), cosRedBlue, 1e-5);
      EXPECT_NEAR(headScores(computed->result, 0)(query, squareB[0]), 1.0, 1e-5);
    }
  }
}

TEST(PatchAttentionTest, StripesNeedPositionalEncodingToPreferNeighbours) {
  const io::Image stripes = samples::makeStripesImage();
  Options options;
  options.score = ScoreKind::Cosine;
  // Stripes at x = 16, 64, 112, ...: patch columns 1, 4, 7, 10, 13. Query: row 3, column 4.
  auto weightsOf = [&](PatchPositional positional) {
    PatchOptions patch{.patch = 16};
    patch.positional = positional;
    Expected<PatchAttention> computed = attendPatches(io::toRgbImage(stripes), patch, options);
    EXPECT_TRUE(computed.ok()) << computed.error().message();
    const int cols = computed->embedding.grid.cols;
    return std::vector<float>{computed->weights(3 * cols + 4, 3 * cols + 7),    // near stripe
                              computed->weights(3 * cols + 4, 3 * cols + 13),   // far stripe
                              computed->weights(3 * cols + 4, 0 * cols + 13)};  // far, far
  };
  const std::vector<float> plain = weightsOf(PatchPositional::None);
  // Without PE every white stripe patch is the same vector: the same weight.
  EXPECT_FLOAT_EQ(plain[0], plain[1]);
  EXPECT_FLOAT_EQ(plain[0], plain[2]);
  const std::vector<float> sin2d = weightsOf(PatchPositional::Sin2d);
  EXPECT_GT(sin2d[0], sin2d[1] * 1.0001f);
  EXPECT_GT(sin2d[1], sin2d[2] * 1.0001f);
}

// =======================================================================================
// Loading
// =======================================================================================

TEST(ImageLoadTest, PngRoundTrip) {
  const io::Image shapes = samples::makeShapesImage();
  Expected<io::Image> decoded = io::decodeImage(pngOf(shapes), "shapes.png");
  ASSERT_TRUE(decoded.ok()) << decoded.error().message();
  EXPECT_EQ(decoded->width, shapes.width);
  EXPECT_EQ(decoded->height, shapes.height);
  EXPECT_EQ(decoded->rgb, shapes.rgb);
}

TEST(ImageLoadTest, AlphaIsCompositedOverWhite) {
  // 2 x 1 RGBA: opaque-less red, then half-transparent black.
  const unsigned char rgba[8] = {255, 0, 0, 0, 0, 0, 0, 128};
  std::string png;
  ASSERT_TRUE(stbi_write_png_to_func(appendBytes, &png, 2, 1, 4, rgba, 8));
  Expected<io::Image> decoded = io::decodeImage(png, "alpha.png");
  ASSERT_TRUE(decoded.ok()) << decoded.error().message();
  // alpha 0 -> white; alpha 128 over white: (0·128 + 255·127)/255 = 127.
  EXPECT_EQ(decoded->rgb, (std::vector<std::uint8_t>{255, 255, 255, 127, 127, 127}));
}

TEST(ImageLoadTest, BombAbovePixelLimitIsRefusedFromTheHeader) {
  const std::string bomb = blackPng(18000, 18000);
  // 324 million pixels in a few hundred kB.
  EXPECT_LT(bomb.size(), 2u << 20);
  // stb_image itself would accept it (within its own 2^24-per-side and 2^30-byte limits).
  int w = 0, h = 0, n = 0;
  ASSERT_TRUE(stbi_info_from_memory(reinterpret_cast<const stbi_uc*>(bomb.data()),
                                    static_cast<int>(bomb.size()), &w, &h, &n));
  EXPECT_EQ(w, 18000);
  EXPECT_EQ(h, 18000);
  Expected<io::Image> image = io::decodeImage(bomb, "bomb.png");
  ASSERT_FALSE(image.ok());
  EXPECT_EQ(image.error().message(),
            "bomb.png: the image is 18000x18000 pixels (324000000), above the limit of 16777216 "
            "pixels (4096x4096) and 16384 per side; scale it down first");
  // One pixel over the limit is refused too; a small image of the same kind loads.
  EXPECT_FALSE(io::decodeImage(blackPng(4097, 4096), "over.png").ok());
  EXPECT_FALSE(io::decodeImage(blackPng(16385, 1), "wide.png").ok());
  Expected<io::Image> small = io::decodeImage(blackPng(300, 200), "small.png");
  ASSERT_TRUE(small.ok()) << small.error().message();
  EXPECT_EQ(small->width, 300);
  EXPECT_EQ(small->rgb[0], 0);
}

TEST(ImageLoadTest, TruncatedPngIsAClearError) {
  const std::string png = pngOf(samples::makeShapesImage());
  for (std::size_t keep : {png.size() / 2, png.size() - 20, std::size_t{40}}) {
    Expected<io::Image> image = io::decodeImage(png.substr(0, keep), "cut.png");
    ASSERT_FALSE(image.ok()) << keep;
    const std::string message = image.error().message();
    EXPECT_EQ(
        message.rfind("cut.png: the image data is truncated or corrupt (224x160 pixels claimed", 0),
        0u)
        << message;
  }
  // Cut inside the header.
  Expected<io::Image> header = io::decodeImage(png.substr(0, 20), "head.png");
  ASSERT_FALSE(header.ok());
  EXPECT_EQ(header.error().message(),
            "head.png: corrupt PNG: the header (IHDR) is missing or cut short");
}

TEST(ImageLoadTest, ZeroSizeImagesAreClearErrors) {
  Expected<io::Image> empty = io::decodeImage("", "empty.png");
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().message(), "empty.png: the file is empty (0 bytes), not an image");
  // A PNG whose header says 0 x 16 pixels.
  std::string png = pngOf(samples::blankImage(16, 16, samples::kWhite));
  std::memset(&png[16], 0, 4);
  Expected<io::Image> zero = io::decodeImage(png, "zero.png");
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.error().message(), "zero.png: the image has zero size (0x16 pixels)");
  // Not an image at all.
  Expected<io::Image> text = io::decodeImage("hello, world", "note.png");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.error().message().rfind("note.png: not a readable image (stb_image: ", 0), 0u)
      << text.error().message();
}

TEST(ImageLoadTest, FileBytesInStbReasonsAreMadePrintable) {
  // Found by fuzz_image: an unknown critical chunk makes stb_image report
  // "XXXX PNG chunk not known" with the chunk's raw type bytes, here "A\nB\x01".
  const std::string png = pngOf(samples::blankImage(4, 4, samples::kWhite));
  std::string bad = png.substr(0, 33);  // signature + IHDR
  putChunk(bad, "A\nB\x01", "xyz");
  bad += png.substr(33);
  Expected<io::Image> image = io::decodeImage(bad, "chunk.png");
  ASSERT_FALSE(image.ok());
  EXPECT_EQ(image.error().message(),
            "chunk.png: the image data is truncated or corrupt (4x4 pixels claimed; stb_image: "
            "A?B? PNG chunk not known)");
}

TEST(ImageLoadTest, MissingFileNamesIt) {
  Expected<io::Image> missing = io::loadImage(attn::testing::testTmp() + "/no/such/image.png");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().file, attn::testing::testTmp() + "/no/such/image.png");
}

TEST(ImageLoadTest, ShippedSamplesAreTheGeneratedImages) {
  Expected<io::Image> shapes = io::loadImage(attn::testing::assetDir() + "/images/shapes.png");
  ASSERT_TRUE(shapes.ok()) << shapes.error().message();
  EXPECT_EQ(shapes->rgb, samples::makeShapesImage().rgb);
  Expected<io::Image> stripes = io::loadImage(attn::testing::assetDir() + "/images/stripes.png");
  ASSERT_TRUE(stripes.ok()) << stripes.error().message();
  EXPECT_EQ(stripes->rgb, samples::makeStripesImage().rgb);
}

// =======================================================================================
// Overlay
// =======================================================================================

TEST(OverlayTest, BlendsColormapOverImageAndFramesTheQuery) {
  // 10 x 9 image, P = 4: 2 x 2 patches, 2 px right and 1 px bottom dropped.
  io::Image image = samples::blankImage(10, 9, {100, 150, 200});
  const PatchGrid grid = *makePatchGrid(10, 9, 4);
  Vector weights(4);
  weights << 0.1f, 0.4f, 0.2f, 0.3f;  // range 0.1..0.4: patch 0 at the bottom, 1 at the top
  io::OverlayStyle style;
  style.colormap = ColormapKind::Viridis;
  style.opacity = 0.5f;
  style.outlineQuery = false;
  style.range = RangeMode::MinMax;  // the user's min-max (issue 18: the default is 0..1)
  Expected<io::Image> overlay = io::renderPatchOverlay(image, grid, weights, 3, style);
  ASSERT_TRUE(overlay.ok()) << overlay.error().message();
  ASSERT_EQ(overlay->width, 10);
  ASSERT_EQ(overlay->height, 9);
  auto pixel = [&](const io::Image& im, int x, int y) {
    const std::uint8_t* p = &im.rgb[(static_cast<std::size_t>(y) * im.width + x) * 3];
    return io::Rgb{p[0], p[1], p[2]};
  };
  const io::Rgb top = io::colormapColor(ColormapKind::Viridis, 1.0f);  // weight 0.4
  const io::Rgb low = io::colormapColor(ColormapKind::Viridis, 0.0f);  // weight 0.1
  auto mix = [](std::uint8_t a, std::uint8_t b) {
    return static_cast<std::uint8_t>(std::lround(0.5 * a + 0.5 * b));
  };
  EXPECT_EQ(pixel(*overlay, 5, 2), (io::Rgb{mix(100, top.r), mix(150, top.g), mix(200, top.b)}));
  EXPECT_EQ(pixel(*overlay, 0, 0), (io::Rgb{mix(100, low.r), mix(150, low.g), mix(200, low.b)}));
  // Dropped strips: half grey. (100 + 128 + 1) / 2 = 114.
  EXPECT_EQ(pixel(*overlay, 9, 0), (io::Rgb{114, 139, 164}));
  EXPECT_EQ(pixel(*overlay, 0, 8), (io::Rgb{114, 139, 164}));

  // Opacity 0 leaves the image; the query frame is black at its edge, white inside.
  style.opacity = 0;
  style.outlineQuery = true;
  style.resolution = 2;
  Expected<io::Image> framed = io::renderPatchOverlay(image, grid, weights, 3, style);
  ASSERT_TRUE(framed.ok());
  ASSERT_EQ(framed->width, 20);
  ASSERT_EQ(framed->height, 18);
  EXPECT_EQ(pixel(*framed, 0, 0), (io::Rgb{100, 150, 200}));
  // Query patch 3 = row 1, col 1: pixels [8, 16) at scale 2. Black ring 2 px, white 1 px.
  EXPECT_EQ(pixel(*framed, 8, 8), (io::Rgb{0, 0, 0}));
  EXPECT_EQ(pixel(*framed, 9, 12), (io::Rgb{0, 0, 0}));
  EXPECT_EQ(pixel(*framed, 10, 12), (io::Rgb{255, 255, 255}));
  EXPECT_EQ(pixel(*framed, 11, 12), (io::Rgb{100, 150, 200}));
  EXPECT_EQ(pixel(*framed, 15, 15), (io::Rgb{0, 0, 0}));
}

TEST(OverlayTest, Errors) {
  io::Image image = samples::blankImage(8, 8, samples::kWhite);
  const PatchGrid grid = *makePatchGrid(8, 8, 4);
  Vector weights = Vector::Constant(4, 0.25f);
  io::OverlayStyle style;
  style.opacity = 1.5f;
  EXPECT_EQ(io::renderPatchOverlay(image, grid, weights, 0, style).error().field, "opacity");
  style.opacity = 0.5f;
  style.resolution = 9;
  EXPECT_EQ(io::renderPatchOverlay(image, grid, weights, 0, style).error().field, "scale");
  style.resolution = 1;
  EXPECT_EQ(io::renderPatchOverlay(image, grid, Vector::Zero(3), 0, style).error().field,
            "weights");
  EXPECT_EQ(io::renderPatchOverlay(image, grid, weights, 4, style).error().field, "query");
  // Under the default rule the weights sit on 0..1: 0.25 everywhere is a quarter up the map.
  style.opacity = 1;
  style.outlineQuery = false;
  Expected<io::Image> quarter = io::renderPatchOverlay(image, grid, weights, 0, style);
  ASSERT_TRUE(quarter.ok());
  EXPECT_EQ(quarter->rgb[0], io::colormapColor(style.colormap, 0.25f).r);
  EXPECT_EQ(quarter->rgb[1], io::colormapColor(style.colormap, 0.25f).g);
  // Under min-max a constant row has the middle colour of the map everywhere.
  style.range = RangeMode::MinMax;
  Expected<io::Image> flat = io::renderPatchOverlay(image, grid, weights, 0, style);
  ASSERT_TRUE(flat.ok());
  const io::Rgb middle = io::valueColor(style.colormap, 0.25f, io::ValueRange{0.25f, 0.25f});
  EXPECT_EQ(flat->rgb[0], middle.r);
  EXPECT_EQ(flat->rgb[1], middle.g);
}

TEST(CsvTest, NoLabelsFullPrecision) {
  Matrix m(2, 3);
  m << 0.1f, 1, -2.5f, 1e-8f, 0, 3;
  EXPECT_EQ(io::matrixToCsv(m), "0.100000001,1,-2.5\n9.99999994e-09,0,3\n");
}

}  // namespace
}  // namespace test_render_image
