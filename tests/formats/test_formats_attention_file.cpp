// formats/attention_file: shape normalisation, per-layer npz stacking, batch, layouts, in-place
// float32 heads, converted heads, token labels, selections and hostile shapes, on files from
// tests/support/attention_test_files.h (an independent writer).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>

#include "formats/attention_file.h"
#include "render/attention_grid.h"
#include "tests/support/attention_test_files.h"
#include "tests/support/test_paths.h"

namespace test_formats_attention_file {
namespace {

using namespace attn;
using namespace attn::testfiles;

// "a" + std::to_string(n) + "b" without GCC 12's false -Wrestrict.
std::string named(std::string_view prefix, long long n, std::string_view suffix) {
  std::string out(prefix);
  out += std::to_string(n);
  out += suffix;
  return out;
}

// Checks every value of every head against the pattern (layer/head indices as stored).
void expectPattern(const io::AttentionFile& file, int batch = 0) {
  std::vector<float> scratch;
  for (int l = 0; l < file.layers(); ++l) {
    for (int h = 0; h < file.heads(); ++h) {
      MatrixRef head = file.head(l, h, scratch);
      ASSERT_EQ(head.rows, file.shape().queries);
      ASSERT_EQ(head.cols, file.shape().keys);
      for (Eigen::Index i = 0; i < head.rows; ++i)
        for (Eigen::Index j = 0; j < head.cols; ++j)
          ASSERT_EQ(head(i, j), static_cast<float>(pattern(l + 17 * batch, h, i, j)))
              << file.path() << " layer " << l << " head " << h << " (" << i << ", " << j << ")";
    }
  }
}

std::string errorOf(const fs::path& path, const io::AttentionOpenOptions& options = {}) {
  auto file = io::AttentionFile::open(path.string(), options);
  EXPECT_FALSE(file.ok()) << path;
  if (file.ok()) return "";
  const std::string message = file.error().message();
  EXPECT_NE(message.find(path.filename().string()), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos);
  return message;
}

// =======================================================================================
// Shapes
// =======================================================================================

TEST(AttentionFile, NormalisesTwoThreeAndFourDimensions) {
  const fs::path dir = freshDir("attn_dims");
  struct Case {
    std::vector<std::int64_t> shape;
    io::AttentionShape want;
  };
  const Case cases[] = {
      {{5, 4}, {1, 1, 5, 4}}, {{3, 5, 4}, {1, 3, 5, 4}}, {{2, 3, 5, 4}, {2, 3, 5, 4}}};
  for (const Case& c : cases) {
    const fs::path path = dir / named("d", static_cast<long long>(c.shape.size()), ".npy");
    writeNpyFile(path, {"<f4", false, c.shape, 1}, attentionPattern());
    auto file = io::AttentionFile::open(path.string());
    ASSERT_TRUE(file.ok()) << file.error().message();
    EXPECT_EQ(file->shape().layers, c.want.layers);
    EXPECT_EQ(file->shape().heads, c.want.heads);
    EXPECT_EQ(file->shape().queries, c.want.queries);
    EXPECT_EQ(file->shape().keys, c.want.keys);
    EXPECT_EQ(file->batchSize(), 1);
    expectPattern(*file);
  }
}

TEST(AttentionFile, FortranOrderBigEndianFloat64) {
  const fs::path dir = freshDir("attn_f64");
  const fs::path path = dir / "fortran.npy";
  writeNpyFile(path, {">f8", true, {3, 4, 7, 5}, 2}, attentionPattern());
  auto file = io::AttentionFile::open(path.string());
  ASSERT_TRUE(file.ok()) << file.error().message();
  EXPECT_EQ(file->storageDescr(0), ">f8");
  EXPECT_FALSE(file->inPlace(0));
  EXPECT_EQ(file->layoutDescription(), "[layers, heads, n_q, n_k] = [3, 4, 7, 5]");
  expectPattern(*file);
}

TEST(AttentionFile, Float32COrderIsUsedInPlace) {
  const fs::path dir = freshDir("attn_inplace");
  const fs::path path = dir / "f32.npy";
  writeNpyFile(path, {"<f4", false, {2, 3, 6, 6}, 1}, attentionPattern());
  auto file = io::AttentionFile::open(path.string());
  ASSERT_TRUE(file.ok());
  EXPECT_TRUE(file->inPlace(0));
  EXPECT_TRUE(file->inPlace(1));
  std::vector<float> scratch;
  MatrixRef a = file->head(1, 2, scratch);
  MatrixRef b = file->head(1, 2, scratch);
  EXPECT_TRUE(scratch.empty());  // no conversion buffer was needed
  EXPECT_EQ(a.data, b.data);     // the same bytes of the mapping
  MatrixRef first = file->head(0, 0, scratch);
  // Head (1, 2) starts (1·3 + 2)·36 floats after head (0, 0): one contiguous file.
  EXPECT_EQ(a.data - first.data, (1 * 3 + 2) * 36);
  EXPECT_EQ(a.stride, 6);
  file->releaseHead(1, 2);  // dropping pages must not change what is read next
  expectPattern(*file);
  // Out of range gives an empty view, not a crash.
  EXPECT_TRUE(file->head(2, 0, scratch).empty());
  EXPECT_TRUE(file->head(0, -1, scratch).empty());
}

TEST(AttentionFile, BatchDimensionAndLayouts) {
  const fs::path dir = freshDir("attn_batch");
  const fs::path path = dir / "batch.npy";
  writeNpyFile(path, {"<f2", false, {3, 2, 2, 4, 4}, 1}, attentionPattern(1));
  // Five dimensions are never guessed (issue 19: [L, B, ...] read as [B, L, ...] showed the
  // wrong layer): the error names both readings and --layout.
  const std::string guess = errorOf(path);
  EXPECT_NE(guess.find("[layers, batch, heads, n_q, n_k] as torch.stack(outputs.attentions) "
                       "gives (--layout lbhqk)"),
            std::string::npos) << guess;
  EXPECT_NE(guess.find("[batch, layers, heads, n_q, n_k] (--layout blhqk)"), std::string::npos);
  EXPECT_NE(guess.find("field 'layout'"), std::string::npos) << guess;
  for (int batch : {0, 1, 2}) {
    io::AttentionOpenOptions options;
    options.batch = batch;
    options.layout = "blhqk";
    auto file = io::AttentionFile::open(path.string(), options);
    ASSERT_TRUE(file.ok()) << file.error().message();
    EXPECT_EQ(file->batchSize(), 3);
    EXPECT_EQ(file->shape().layers, 2);
    EXPECT_EQ(file->layoutDescription(),
              named("[batch, layers, heads, n_q, n_k] = [3, 2, 2, 4, 4], batch ", batch, ""));
    expectPattern(*file, batch);
  }
  io::AttentionOpenOptions outOfRange;
  outOfRange.batch = 3;
  outOfRange.layout = "blhqk";
  EXPECT_NE(errorOf(path, outOfRange)
                .find("batch 3 is out of range: the batch has 3 items (valid: 0..2)"),
            std::string::npos);

  // torch.stack(hf.attentions) is [layers, batch, heads, n_q, n_k]: --layout lbhqk.
  const fs::path stacked = dir / "stacked.npy";
  writeNpyFile(stacked, {"<f4", false, {2, 3, 2, 4, 4}, 1}, [](const std::vector<std::int64_t>& i) {
    return pattern(i[0] + 17 * i[1], i[2], i[3], i[4]);
  });
  io::AttentionOpenOptions lb;
  lb.layout = "LBHQK";
  lb.batch = 2;
  auto file = io::AttentionFile::open(stacked.string(), lb);
  ASSERT_TRUE(file.ok()) << file.error().message();
  EXPECT_EQ(file->shape().layers, 2);
  EXPECT_EQ(file->batchSize(), 3);
  expectPattern(*file, 2);

  // One layer with a batch, [batch, heads, n_q, n_k]: --layout bhqk.
  io::AttentionOpenOptions bh;
  bh.layout = "bhqk";
  const fs::path four = dir / "four.npy";
  writeNpyFile(four, {"<f4", false, {2, 3, 4, 4}, 1}, attentionPattern());
  auto one = io::AttentionFile::open(four.string(), bh);
  ASSERT_TRUE(one.ok()) << one.error().message();
  EXPECT_EQ(one->shape().layers, 1);
  EXPECT_EQ(one->shape().heads, 3);
  EXPECT_EQ(one->batchSize(), 2);

  io::AttentionOpenOptions bad;
  bad.layout = "hhqk";
  EXPECT_NE(errorOf(four, bad).find("is not a layout"), std::string::npos);
  bad.layout = "lhkq";
  EXPECT_NE(errorOf(four, bad).find("is not a layout"), std::string::npos);
  bad.layout = "hqk";
  EXPECT_NE(errorOf(four, bad).find("names 3 dimensions but the array has shape [2, 3, 4, 4]"),
            std::string::npos);
  io::AttentionOpenOptions noBatch;
  noBatch.batch = 1;
  EXPECT_NE(errorOf(four, noBatch).find("has no batch dimension"), std::string::npos);
}

// A string scalar `layout` in the .npz (np.savez(f, attention=a, layout="lbhqk")) is the
// file's own word on a 5-D array.
std::string stringScalarNpy(const std::string& ascii) {
  std::string dict = "{'descr': '<U" + std::to_string(ascii.size()) +
                     "', 'fortran_order': False, 'shape': (), }";
  while ((10 + dict.size() + 1) % 64 != 0) dict += ' ';
  dict += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(dict.size() & 0xFF);
  out += static_cast<char>(dict.size() >> 8);
  out += dict;
  for (char c : ascii) {
    out += c;
    out += std::string(3, '\0');
  }
  return out;
}

// Issue 22's many-entry zip bomb: 40 per-layer arrays whose .npy headers each declare 100 MB
// [1, 5000, 5000] float32 (4 GB together, above the 2 GiB default budget). Each is under the
// budget alone, so the archive used to be inflated entry by entry until the total ran out
// (15 s, 2 GB RSS). Now the declared total is refused before any entry is inflated: the
// entries here hold only their header and 64 bytes, so reading any of them would fail with
// a different error ("shorter than its header").
TEST(AttentionFile, ManyEntryZipBombIsRefusedFromTheHeadersBeforeInflating) {
  const fs::path dir = freshDir("attn_bomb");
  std::vector<ZipItem> items;
  for (int l = 0; l < 40; ++l) {
    const std::string header = headerFor({"<f4", false, {1, 5000, 5000}, 1});
    items.push_back({"layer_" + std::to_string(l) + ".npy", header + std::string(64, '\0'), true});
  }
  writeFile(dir / "bomb.npz", makeZip(items));
  EXPECT_LT(fs::file_size(dir / "bomb.npz"), 64u << 10);
  auto file = io::AttentionFile::open((dir / "bomb.npz").string());
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.error().message().find("40 arrays declare 4000000000 bytes in their .npy "
                                        "headers, above the uncompressed limit of 2147483648 "
                                        "bytes; refused before inflating"),
            std::string::npos)
      << file.error().message();
  // One of them picked by name fits the budget: read, it fails on its own truncation.
  io::AttentionOpenOptions one;
  one.arrayName = "layer_3";
  auto single = io::AttentionFile::open((dir / "bomb.npz").string(), one);
  ASSERT_FALSE(single.ok());
  EXPECT_EQ(single.error().message().find("refused before inflating"), std::string::npos)
      << single.error().message();
}

TEST(AttentionFile, FiveDimensionsFollowTheFilesLayoutMetadata) {
  const fs::path dir = freshDir("attn_meta");
  // torch.stack(outputs.attentions): [L=2, B=3, H=2, 4, 4]; layer l of item b is l + 17 b.
  const std::string stacked =
      npyBytes({"<f4", false, {2, 3, 2, 4, 4}, 1}, [](const std::vector<std::int64_t>& i) {
        return pattern(i[0] + 17 * i[1], i[2], i[3], i[4]);
      });
  writeFile(dir / "lb.npz", makeZip({{"attention.npy", stacked, true},
                                      {"layout.npy", stringScalarNpy("lbhqk"), false}}));
  io::AttentionOpenOptions second;
  second.batch = 2;
  auto file = io::AttentionFile::open((dir / "lb.npz").string(), second);
  ASSERT_TRUE(file.ok()) << file.error().message();
  EXPECT_EQ(file->shape().layers, 2);
  EXPECT_EQ(file->batchSize(), 3);
  expectPattern(*file, 2);
  // --layout still wins over the metadata (here it reads [B, L, ...]: 2 items of 3 layers).
  io::AttentionOpenOptions override;
  override.layout = "blhqk";
  auto other = io::AttentionFile::open((dir / "lb.npz").string(), override);
  ASSERT_TRUE(other.ok()) << other.error().message();
  EXPECT_EQ(other->shape().layers, 3);
  // Without the metadata the same array is refused.
  writeFile(dir / "plain.npz", makeZip({{"attention.npy", stacked, true}}));
  EXPECT_NE(errorOf(dir / "plain.npz").find("--layout lbhqk"), std::string::npos);
  // Metadata that is not a layout is named.
  writeFile(dir / "bad.npz", makeZip({{"attention.npy", stacked, true},
                                       {"layout.npy", stringScalarNpy("lbh"), false}}));
  EXPECT_NE(errorOf(dir / "bad.npz").find("'lbh' is not a layout"), std::string::npos)
      << errorOf(dir / "bad.npz");
}

TEST(AttentionFile, SavezPositionalArraysAreLayersInNumericOrder) {
  const fs::path dir = freshDir("attn_arr");
  // np.savez(f, *attentions) with 12 layers of [B=1, H=2, 5, 5]: arr_0 .. arr_11, written in
  // an order where a text sort would put arr_10 before arr_2.
  std::vector<ZipItem> items;
  for (int l : {0, 1, 10, 11, 2, 3, 4, 5, 6, 7, 8, 9}) {
    items.push_back({named("arr_", l, ".npy"),
                     npyBytes({"<f4", false, {1, 2, 5, 5}, 1},
                              [l](const std::vector<std::int64_t>& i) {
                                return pattern(l, i[1], i[2], i[3]);
                              }),
                     true});
  }
  writeFile(dir / "savez.npz", makeZip(items));
  auto file = io::AttentionFile::open((dir / "savez.npz").string());
  ASSERT_TRUE(file.ok()) << file.error().message();
  EXPECT_EQ(file->shape().layers, 12);
  EXPECT_EQ(file->shape().heads, 2);
  EXPECT_EQ(file->arraysUsed().at(2), "arr_2");
  EXPECT_EQ(file->arraysUsed().at(10), "arr_10");
  expectPattern(*file);
  // A lone arr_0 is np.savez(f, stacked): read by the whole-array rules ([L, H, n, n]).
  writeFile(dir / "one.npz",
            makeZip({{"arr_0.npy", npyBytes({"<f4", false, {3, 2, 5, 5}, 1}, attentionPattern()),
                      true}}));
  auto one = io::AttentionFile::open((dir / "one.npz").string());
  ASSERT_TRUE(one.ok()) << one.error().message();
  EXPECT_EQ(one->shape().layers, 3);
  EXPECT_EQ(one->batchSize(), 1);
  expectPattern(*one);
}

TEST(AttentionFile, HostileShapes) {
  const fs::path dir = freshDir("attn_hostile");
  writeNpyFile(dir / "one.npy", {"<f4", false, {7}, 1}, attentionPattern());
  EXPECT_NE(errorOf(dir / "one.npy").find("has 1 dimensions; attention needs"), std::string::npos);
  writeNpyFile(dir / "six.npy", {"<f4", false, {1, 1, 1, 1, 2, 2}, 1}, attentionPattern());
  EXPECT_NE(errorOf(dir / "six.npy").find("has 6 dimensions"), std::string::npos);
  writeNpyFile(dir / "empty.npy", {"<f4", false, {2, 0, 4}, 1}, attentionPattern());
  EXPECT_NE(errorOf(dir / "empty.npy").find("is empty (n_q = 0)"), std::string::npos);
  writeNpyFile(dir / "ints.npy", {"<i8", false, {2, 2}, 1}, attentionPattern());
  EXPECT_NE(errorOf(dir / "ints.npy").find("'ints' is int64 (integers: ids or indices), not attention weights"),
            std::string::npos);
  writeFile(dir / "text.npy", "hello");
  EXPECT_NE(errorOf(dir / "text.npy").find("not an .npy file"), std::string::npos);
  writeFile(dir / "zero.npz", "");
  EXPECT_NE(errorOf(dir / "zero.npz").find("empty file"), std::string::npos);
  EXPECT_NE(errorOf(dir / "missing.npy").find("no such file"), std::string::npos);
  // Too many tokens for the view: [1, 2000000] passes npy but not the attention limit.
  writeFile(dir / "wide.npy",
             headerFor({"<f2", false, {1, 2000000}, 1}) + std::string(4000000, '\0'));
  EXPECT_NE(errorOf(dir / "wide.npy").find("n_k = 2000000 is above the limit"), std::string::npos);
  io::AttentionOpenOptions array;
  array.arrayName = "x";
  writeNpyFile(dir / "a.npy", {"<f4", false, {2, 2}, 1}, attentionPattern());
  EXPECT_NE(errorOf(dir / "a.npy", array).find("--array is for .npz"), std::string::npos);
}

// =======================================================================================
// Archives
// =======================================================================================

TEST(AttentionFile, PerLayerNpzWithDeflateAndBatchIsStacked) {
  const fs::path dir = freshDir("attn_npz");
  // Hugging Face: one [batch, heads, n_q, n_k] array per layer; layer l gets index l.
  std::vector<ZipItem> items;
  for (int l = 0; l < 4; ++l) {
    const std::string descr = l % 2 ? ">f8" : "<f4";  // layers may differ in dtype
    items.push_back({named("layer_", l, ".npy"),
                     npyBytes({descr, false, {2, 3, 6, 6}, 1},
                              [l](const std::vector<std::int64_t>& i) {
                                return pattern(l + 17 * i[0], i[1], i[2], i[3]);
                              }),
                     true});
  }
  items.push_back({"input_ids.npy", npyBytes({"<i8", false, {2, 6}, 1}, attentionPattern()), true});
  writeFile(dir / "hf.npz", makeZip(items));
  for (int batch : {0, 1}) {
    io::AttentionOpenOptions options;
    options.batch = batch;
    auto file = io::AttentionFile::open((dir / "hf.npz").string(), options);
    ASSERT_TRUE(file.ok()) << file.error().message();
    EXPECT_EQ(file->shape().layers, 4);
    EXPECT_EQ(file->shape().heads, 3);
    EXPECT_EQ(file->arraysUsed(),
              (std::vector<std::string>{"layer_0", "layer_1", "layer_2", "layer_3"}));
    EXPECT_EQ(file->arrays().size(), 5u);
    EXPECT_TRUE(file->arrays()[4].unsupported.empty());  // int64 input_ids: read, described,
    EXPECT_TRUE(file->arrays()[4].integer);               // never taken as attention
    EXPECT_EQ(file->arrays()[4].descr, "<i8");
    EXPECT_FALSE(file->arrays()[4].weights());
    EXPECT_EQ(
        file->layoutDescription(),
        named("4 arrays layer_0..layer_3 stacked as layers, each [batch, heads, n_q, n_k], batch ",
              batch, ""));
    EXPECT_TRUE(file->inPlace(0));  // float32 LE inside the inflated buffer
    EXPECT_FALSE(file->inPlace(1));
    expectPattern(*file, batch);
  }
  // One named array of the archive.
  io::AttentionOpenOptions named;
  named.arrayName = "layer_2";
  auto single = io::AttentionFile::open((dir / "hf.npz").string(), named);
  ASSERT_TRUE(single.ok()) << single.error().message();
  // A per-layer name is read by the per-layer rule: [batch, heads, n_q, n_k], one layer.
  EXPECT_EQ(single->shape().layers, 1);
  EXPECT_EQ(single->shape().heads, 3);
  EXPECT_EQ(single->batchSize(), 2);
  EXPECT_EQ(single->copyHead(0, 1)(4, 5), static_cast<float>(pattern(2, 1, 4, 5)));
  named.arrayName = "input_ids";
  EXPECT_NE(errorOf(dir / "hf.npz", named).find("hf.npz:input_ids.npy"), std::string::npos);
}

TEST(AttentionFile, AttentionsPrefixGapsAndChoices) {
  const fs::path dir = freshDir("attn_npz_names");
  auto arr = [](int salt) {
    return npyBytes({"<f4", false, {2, 5, 5}, 1}, [salt](const std::vector<std::int64_t>& i) {
      return pattern(salt, i[0], i[1], i[2]);
    });
  };
  writeFile(dir / "tl.npz",
             makeZip({{"attentions_1.npy", arr(1), false}, {"attentions_0.npy", arr(0), false}}));
  auto tl = io::AttentionFile::open((dir / "tl.npz").string());
  ASSERT_TRUE(tl.ok()) << tl.error().message();
  EXPECT_EQ(tl->shape().layers, 2);
  expectPattern(*tl);  // stacked by number, not archive order

  writeFile(dir / "gap.npz",
             makeZip({{"layer_0.npy", arr(0), false}, {"layer_2.npy", arr(2), false}}));
  EXPECT_NE(errorOf(dir / "gap.npz")
                .find("several arrays (layer_0, layer_2); pick one with --array NAME"),
            std::string::npos);

  writeFile(dir / "mixed.npz",
             makeZip({{"layer_0.npy", arr(0), false},
                      {"layer_1.npy", npyBytes({"<f4", false, {3, 5, 5}, 1}, attentionPattern()),
                       false}}));
  EXPECT_NE(errorOf(dir / "mixed.npz").find("does not match the layers before it"),
            std::string::npos);

  writeFile(dir / "one.npz", makeZip({{"attn.npy", arr(0), true}}));
  auto one = io::AttentionFile::open((dir / "one.npz").string());
  ASSERT_TRUE(one.ok()) << one.error().message();
  EXPECT_EQ(one->arraysUsed(), (std::vector<std::string>{"attn"}));

  writeFile(dir / "none.npz",
             makeZip({{"ids.npy", npyBytes({"<i8", false, {3}, 1}, attentionPattern()), true}}));
  EXPECT_NE(errorOf(dir / "none.npz").find("no float array"), std::string::npos);
  // An archive with no arrays at all: the file's fault, not --array's.
  writeFile(dir / "nothing.npz", makeZip({{"readme.txt", "hello", false}}));
  auto nothing = io::AttentionFile::open((dir / "nothing.npz").string());
  ASSERT_FALSE(nothing.ok());
  EXPECT_EQ(nothing.error().field, "");
  EXPECT_EQ(nothing.error().message(),
            (dir / "nothing.npz").string() + ": the archive has no arrays (no .npy entries)");

  writeFile(dir / "evil.npz", makeZip({{"../layer_0.npy", arr(0), false}}));
  EXPECT_NE(errorOf(dir / "evil.npz").find("refusing entry '../layer_0.npy'"), std::string::npos);
}

// =======================================================================================
// Token labels
// =======================================================================================

TEST(AttentionFile, TokenLabelsFromSideFilesOrOption) {
  const fs::path dir = freshDir("attn_tokens");
  writeNpyFile(dir / "run.npy", {"<f4", false, {3, 3}, 1}, attentionPattern());
  auto plain = io::AttentionFile::open((dir / "run.npy").string());
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->keyLabels(), (std::vector<std::string>{"0", "1", "2"}));
  EXPECT_EQ(plain->labelsSource(), "");

  writeFile(dir / "run.tokens.txt", "the\ncat\r\nsat\n");
  auto txt = io::AttentionFile::open((dir / "run.npy").string());
  ASSERT_TRUE(txt.ok()) << txt.error().message();
  EXPECT_EQ(txt->keyLabels(), (std::vector<std::string>{"the", "cat", "sat"}));
  EXPECT_EQ(txt->queryLabels(), txt->keyLabels());

  writeFile(dir / "run.tokens.json", R"(["[CLS]", "héllo", "[SEP]"])");  // json wins
  auto json = io::AttentionFile::open((dir / "run.npy").string());
  ASSERT_TRUE(json.ok()) << json.error().message();
  EXPECT_EQ(json->keyLabels()[1], "héllo");
  EXPECT_EQ(json->labelsSource(), (dir / "run.tokens.json").string());

  writeFile(dir / "four.json", R"(["a", "b", "c", "d"])");
  io::AttentionOpenOptions options;
  options.tokensPath = (dir / "four.json").string();
  auto file = io::AttentionFile::open((dir / "run.npy").string(), options);
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.error().message(), (dir / "four.json").string() + ": 4 tokens, but " +
                                        (dir / "run.npy").string() + " has n_k = 3 keys");

  writeFile(dir / "bad.json", R"(["a", 2, "c"])");
  options.tokensPath = (dir / "bad.json").string();
  EXPECT_NE(io::AttentionFile::open((dir / "run.npy").string(), options)
                .error()
                .message()
                .find("token 1 is not a string"),
            std::string::npos);
  writeFile(dir / "object.json", R"({"not": "a list"})");
  options.tokensPath = (dir / "object.json").string();
  EXPECT_EQ(io::AttentionFile::open((dir / "run.npy").string(), options).error().message(),
            (dir / "object.json").string() +
                ": must be a JSON list of strings, or an object with exactly 'queries' and "
                "'keys' (two lists of strings)");
  writeFile(dir / "broken.json", R"(["a", )");
  options.tokensPath = (dir / "broken.json").string();
  EXPECT_NE(io::AttentionFile::open((dir / "run.npy").string(), options)
                .error()
                .message()
                .find("not valid JSON"),
            std::string::npos);
}

TEST(AttentionFile, DecodingQueriesAreTheLastTokensOrGivenSeparately) {
  const fs::path dir = freshDir("attn_kv");
  writeNpyFile(dir / "step.npy", {"<f4", false, {2, 4}, 1}, attentionPattern());
  writeFile(dir / "step.tokens.txt", "a\nb\nc\nd\n");
  auto step = io::AttentionFile::open((dir / "step.npy").string());
  ASSERT_TRUE(step.ok()) << step.error().message();
  EXPECT_EQ(step->queryLabels(), (std::vector<std::string>{"c", "d"}));
  writeFile(dir / "cross.json", R"({"queries": ["x", "y"], "keys": ["a", "b", "c", "d"]})");
  io::AttentionOpenOptions options;
  options.tokensPath = (dir / "cross.json").string();
  auto cross = io::AttentionFile::open((dir / "step.npy").string(), options);
  ASSERT_TRUE(cross.ok()) << cross.error().message();
  EXPECT_EQ(cross->queryLabels(), (std::vector<std::string>{"x", "y"}));
  writeFile(dir / "cross3.json", R"({"queries": ["x"], "keys": ["a", "b", "c", "d"]})");
  options.tokensPath = (dir / "cross3.json").string();
  auto wrong = io::AttentionFile::open((dir / "step.npy").string(), options);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.error().message().find("1 tokens, but"), std::string::npos);
  EXPECT_NE(wrong.error().message().find("n_q = 2"), std::string::npos);
}

// =======================================================================================
// Selections
// =======================================================================================

TEST(AttentionFile, FromMemoryIsUsedInPlaceWithLabels) {
  // [2 layers, 3 heads, 2 queries, 4 keys], element (l, h, q, k) = 1000l + 100h + 10q + k.
  std::vector<float> values;
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 3; ++h)
      for (int q = 0; q < 2; ++q)
        for (int k = 0; k < 4; ++k) values.push_back(static_cast<float>(1000 * l + 100 * h + 10 * q + k));
  io::AttentionShape shape{2, 3, 2, 4};
  const std::vector<std::string> labels = {"a", "\xC2\xB7" "b", "c", "d"};
  Expected<io::AttentionFile> file =
      io::AttentionFile::fromMemory("live", values, shape, labels, "tokenizer");
  ASSERT_TRUE(file.ok()) << file.error().message();
  EXPECT_EQ(file->path(), "live");
  EXPECT_EQ(file->layers(), 2);
  EXPECT_EQ(file->heads(), 3);
  EXPECT_TRUE(file->inPlace(1));
  EXPECT_EQ(file->keyLabels(), labels);
  EXPECT_EQ(file->queryLabels(), (std::vector<std::string>{"c", "d"}));  // the last n_q
  EXPECT_EQ(file->labelsSource(), "tokenizer");
  const Matrix head = file->copyHead(1, 2);
  ASSERT_EQ(head.rows(), 2);
  ASSERT_EQ(head.cols(), 4);
  EXPECT_EQ(head(1, 3), 1213.f);
  EXPECT_EQ(head(0, 1), 1201.f);
  Expected<io::SelectedAttention> mean =
      io::selectAttention(*file, {io::AttentionSelection::Kind::Mean, 0, 0});
  ASSERT_TRUE(mean.ok());
  EXPECT_FLOAT_EQ(mean->view.values(1, 2), 112.f);  // (12 + 112 + 212) / 3

  // Errors name the source and the field.
  Expected<io::AttentionFile> count =
      io::AttentionFile::fromMemory("live", std::vector<float>(5), shape, labels, "");
  ASSERT_FALSE(count.ok());
  EXPECT_EQ(count.error().field, "shape");
  EXPECT_EQ(count.error().file, "live");
  Expected<io::AttentionFile> fewLabels =
      io::AttentionFile::fromMemory("live", values, shape, {"a", "b"}, "");
  ASSERT_FALSE(fewLabels.ok());
  EXPECT_EQ(fewLabels.error().field, "tokens");
  Expected<io::AttentionFile> empty =
      io::AttentionFile::fromMemory("live", {}, io::AttentionShape{1, 1, 0, 0}, {}, "");
  EXPECT_FALSE(empty.ok());
  Expected<io::AttentionFile> tall =
      io::AttentionFile::fromMemory("live", std::vector<float>(8), io::AttentionShape{1, 1, 4, 2},
                                    {"a", "b"}, "");
  EXPECT_FALSE(tall.ok());
}

TEST(AttentionSelection, HeadMeanMaxRolloutAndNonFinite) {
  const fs::path dir = freshDir("attn_select");
  // 2 layers x 2 heads of 2 x 2; values chosen by hand.
  const double values[2][2][2][2] = {{{{0.5, 0.5}, {0.25, 0.75}}, {{1.0, 0.0}, {0.75, 0.25}}},
                                     {{{0.0, 1.0}, {1.0, 0.0}}, {{0.0, 1.0}, {1.0, 0.0}}}};
  writeNpyFile(dir / "hand.npy", {"<f2", false, {2, 2, 2, 2}, 1},
               [&](const std::vector<std::int64_t>& i) { return values[i[0]][i[1]][i[2]][i[3]]; });
  auto file = io::AttentionFile::open((dir / "hand.npy").string());
  ASSERT_TRUE(file.ok());
  using Kind = io::AttentionSelection::Kind;
  auto head = io::selectAttention(*file, {Kind::Head, 0, 1});
  ASSERT_TRUE(head.ok());
  EXPECT_EQ(head->view.values(1, 0), 0.75f);
  EXPECT_EQ(head->view.title, "layer 0 of 2 · head 1 of 2");
  auto mean = io::selectAttention(*file, {Kind::Mean, 0, 0});
  ASSERT_TRUE(mean.ok());
  // Layer 0 mean: [[0.75, 0.25], [0.5, 0.5]].
  EXPECT_FLOAT_EQ(mean->view.values(0, 0), 0.75f);
  EXPECT_FLOAT_EQ(mean->view.values(1, 1), 0.5f);
  auto max = io::selectAttention(*file, {Kind::Max, 0, 0});
  ASSERT_TRUE(max.ok());
  EXPECT_FLOAT_EQ(max->view.values(0, 0), 1.0f);
  EXPECT_FLOAT_EQ(max->view.values(1, 1), 0.75f);
  // Rollout: Â_0 from [[0.75, 0.25], [0.5, 0.5]] = [[0.875, 0.125], [0.25, 0.75]];
  // Â_1 from [[0, 1], [1, 0]] = [[0.5, 0.5], [0.5, 0.5]];
  // Â_1 · Â_0 = [[0.5625, 0.4375], [0.5625, 0.4375]].
  int calls = 0;
  auto rollout = io::selectAttention(*file, {Kind::Rollout, 1, 0}, [&](int done, int total) {
    ++calls;
    EXPECT_EQ(total, 4);
    EXPECT_LE(done, total);
  });
  ASSERT_TRUE(rollout.ok());
  EXPECT_EQ(calls, 4);
  EXPECT_FLOAT_EQ(rollout->view.values(0, 0), 0.5625f);
  EXPECT_FLOAT_EQ(rollout->view.values(1, 1), 0.4375f);
  auto rollout0 = io::selectAttention(*file, {Kind::Rollout, 0, 0});
  EXPECT_FLOAT_EQ(rollout0->view.values(0, 0), 0.875f);

  auto badLayer = io::selectAttention(*file, {Kind::Head, 2, 0});
  ASSERT_FALSE(badLayer.ok());
  EXPECT_EQ(badLayer.error().field, "layer");
  EXPECT_NE(badLayer.error().problem.find("valid: 0..1"), std::string::npos);
  auto badHead = io::selectAttention(*file, {Kind::Head, 0, 5});
  ASSERT_FALSE(badHead.ok());
  EXPECT_EQ(badHead.error().field, "head");

  const auto stats = io::allHeadStats(*file);
  ASSERT_EQ(stats.size(), 2u);
  EXPECT_NEAR(stats[1][0].entropy, 0.0, 1e-9);
  EXPECT_NEAR(stats[0][0].top1Mass, (0.5 + 0.75) / 2, 1e-7);

  // One pass for the model view: thumbnails, stats and NaN counts per head.
  int progressCalls = 0;
  io::HeadOverviewOptions overviewOptions;
  overviewOptions.thumbnailSize = 1;
  overviewOptions.progress = [&](int done, int total) {
    EXPECT_EQ(done, ++progressCalls);
    EXPECT_EQ(total, 4);
  };
  const io::HeadOverview overview = io::overviewHeads(*file, overviewOptions);
  EXPECT_FALSE(overview.cancelled);
  ASSERT_EQ(overview.thumbnails.size(), 4u);
  EXPECT_EQ(overview.thumbnails[1].size(), 1);
  EXPECT_FLOAT_EQ(overview.thumbnails[1](0, 0), 1.0f);  // layer 0 head 1 pooled to its max
  EXPECT_NEAR(overview.stats[2].entropy, 0.0, 1e-9);
  EXPECT_EQ(overview.totalNonFinite.total(), 0u);
  int asked = 0;
  overviewOptions.progress = {};
  overviewOptions.cancel = [&] { return ++asked > 2; };
  const io::HeadOverview cancelled = io::overviewHeads(*file, overviewOptions);
  EXPECT_TRUE(cancelled.cancelled);
  EXPECT_EQ(cancelled.thumbnails.size(), 2u);

  // NaN and inf are counted, never hidden.
  writeNpyFile(dir / "nan.npy", {"<f4", false, {2, 3}, 1}, [](const std::vector<std::int64_t>& i) {
    if (i[0] == 0 && i[1] == 1) return std::numeric_limits<double>::quiet_NaN();
    if (i[0] == 1 && i[1] == 2) return -std::numeric_limits<double>::infinity();
    return 0.5;
  });
  auto nanFile = io::AttentionFile::open((dir / "nan.npy").string());
  ASSERT_TRUE(nanFile.ok());
  auto nan = io::selectAttention(*nanFile, {Kind::Head, 0, 0});
  ASSERT_TRUE(nan.ok());
  EXPECT_EQ(nan->nonFinite.nan, 1u);
  EXPECT_EQ(nan->nonFinite.negInf, 1u);
  EXPECT_EQ(io::describeNonFinite(nan->nonFinite), "1 NaN, 1 -inf");
  EXPECT_EQ(io::overviewHeads(*nanFile).totalNonFinite.total(), 2u);
  auto notSquare = io::selectAttention(*nanFile, {Kind::Rollout, 0, 0});
  ASSERT_FALSE(notSquare.ok());
  EXPECT_NE(notSquare.error().problem.find("square"), std::string::npos);
}

// =======================================================================================
// The grid image
// =======================================================================================

TEST(AttentionGrid, TilesEveryHeadWithOneColourRange) {
  const fs::path dir = freshDir("attn_grid");
  // 2 layers x 3 heads, each head constant (l·3 + h + 1) / 8 over 40 x 40.
  writeNpyFile(dir / "c.npy", {"<f4", false, {2, 3, 40, 40}, 1},
               [](const std::vector<std::int64_t>& i) { return (i[0] * 3 + i[1] + 1) / 8.0; });
  auto file = io::AttentionFile::open((dir / "c.npy").string());
  ASSERT_TRUE(file.ok());
  io::GridStyle style;
  style.thumbnailSize = 16;  // 40 -> blocks of 3 -> 14 x 14 cells
  io::HeadOverviewOptions options;
  options.thumbnailSize = style.thumbnailSize;
  const io::HeadOverview overview = io::overviewHeads(*file, options);
  ASSERT_EQ(overview.thumbnails[0].rows(), 14);
  auto grid = io::renderAttentionGrid(overview, style);
  ASSERT_TRUE(grid.ok()) << grid.error().message();

  // The tile layout, from renderHeatmap with the same settings as the grid uses.
  io::HeatmapStyle tileStyle;
  tileStyle.cellLabels = tileStyle.axisLabels = tileStyle.colorbar = false;
  // 14 cells: raised from cellPixels to 7 px so that a thumbnail is at least 96 px.
  tileStyle.cellSize = (io::kGridMinThumbnailPixels + 13) / 14;
  ASSERT_EQ(tileStyle.cellSize, 7);
  tileStyle.vmin = 0.0f;
  tileStyle.vmax = 1.0f;  // weights on 0..1 (issue 18), the largest value being 6/8
  MatrixView first;
  first.values = overview.thumbnails[0];
  first.title = "L0 H0";
  auto tile = io::renderHeatmap(first, tileStyle);
  ASSERT_TRUE(tile.ok());
  // The tiles, then the colour bar with its tick labels on the right.
  EXPECT_GE(tile->width, io::kGridMinThumbnailPixels);
  EXPECT_GT(grid->width, 3 * (tile->width + 6) + 6 + 20);
  EXPECT_LT(grid->width, 3 * (tile->width + 6) + 6 + 120);
  // The bar's outer tick labels may reach a little below the tiles.
  EXPECT_GE(grid->height, 2 * (tile->height + 6) + 6);
  EXPECT_LE(grid->height, 2 * (tile->height + 6) + 6 + 30);
  const io::PixelRect cell = io::cellRect(first, tileStyle, 7, 7);
  for (int l = 0; l < 2; ++l) {
    for (int h = 0; h < 3; ++h) {
      const int x = 6 + h * (tile->width + 6) + (cell.x0 + cell.x1) / 2;
      const int y = 6 + l * (tile->height + 6) + (cell.y0 + cell.y1) / 2;
      const std::uint8_t* px =
          grid->rgb.data() + (static_cast<std::size_t>(y) * grid->width + x) * 3;
      const io::Rgb want =
          io::valueColor(ColormapKind::Viridis, (l * 3 + h + 1) / 8.0f, {0.0f, 1.0f});
      EXPECT_EQ(io::Rgb({px[0], px[1], px[2]}), want) << l << " " << h;
    }
  }
  EXPECT_FALSE(io::exportAttentionGrid(*file, style, (dir / "g.svg").string()).ok());
  ASSERT_TRUE(io::exportAttentionGrid(*file, style, (dir / "g.png").string()).ok());
  EXPECT_GT(fs::file_size(dir / "g.png"), 100u);
}

// =======================================================================================
// A model-sized float16 file: [12, 12, 1024, 1024] (~302 MB in the build's test-tmp/)
// =======================================================================================

TEST(AttentionFileLarge, Float16Model12x12x1024) {
  const fs::path dir = freshDir("attn_large_f16");
  const fs::path path = dir / "bert.npy";
  writeNpyFile(path, {"<f2", false, {12, 12, 1024, 1024}, 1}, attentionPattern());
  EXPECT_EQ(fs::file_size(path), 128u + 12u * 12 * 1024 * 1024 * 2);
  auto file = io::AttentionFile::open(path.string());
  ASSERT_TRUE(file.ok()) << file.error().message();
  EXPECT_EQ(file->shape().layers, 12);
  EXPECT_EQ(file->shape().heads, 12);
  EXPECT_EQ(file->shape().queries, 1024);
  EXPECT_FALSE(file->inPlace(0));
  std::vector<float> scratch;
  for (auto [l, h] : {std::pair{0, 0}, std::pair{5, 7}, std::pair{11, 11}}) {
    MatrixRef head = file->head(l, h, scratch);
    for (Eigen::Index i = 0; i < 1024; i += 97)
      for (Eigen::Index j = 0; j < 1024; j += 89)
        ASSERT_EQ(head(i, j), static_cast<float>(pattern(l, h, i, j)));
    ASSERT_EQ(head(1023, 1023), static_cast<float>(pattern(l, h, 1023, 1023)));
    file->releaseHead(l, h);
  }
  // The model view's one pass: 144 heads pooled to 128 x 128 (blocks of 8 x 8).
  const auto start = std::chrono::steady_clock::now();
  const io::HeadOverview overview = io::overviewHeads(*file);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("overviewHeads on [12, 12, 1024, 1024] float16: %.2f s\n", seconds);
  ASSERT_EQ(overview.thumbnails.size(), 144u);
  EXPECT_EQ(overview.thumbnails[0].rows(), 128);
  // Every 8 x 8 block holds some (7i + 3j) mod 64 = 63, so each pooled cell is 63/64.
  EXPECT_FLOAT_EQ(overview.thumbnails[77](5, 9), 63.0f / 64.0f);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace test_formats_attention_file
