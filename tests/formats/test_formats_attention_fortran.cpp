// formats/attention_file on Fortran-order arrays: every head, mean, max, rollout, the per-head
// overview and allHeadStats read through the one storage-order pass (formats/attention_scan)
// must give what the same values stored in C order give (read head by head): bit for bit
// where the arithmetic is the same (heads, mean, max, rollout, thumbnails, NaN counts), within
// 1e-6 where the order of a sum differs (entropy). Files come from the independent writer of
// tests/support/attention_test_files.h, in every dtype and byte order, with a batch and a
// layout, in per-layer archives mixing both orders, and with NaN and inf.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "formats/attention_file.h"
#include "tests/support/attention_test_files.h"

namespace test_formats_attention_fortran {
namespace {

using namespace attn;
using namespace attn::testfiles;
using Kind = io::AttentionSelection::Kind;

// Values in [0, 1) that are multiples of 2^-10 for float16 (exact there), arbitrary doubles
// otherwise; one NaN and one +inf at fixed places of the LAST four indices when `nonFinite`.
ValueFn values(const std::string& descr, bool nonFinite, int batchDims = 0) {
  return [=](const std::vector<std::int64_t>& index) {
    double seed = 0;
    for (std::int64_t i : index) seed = seed * 37.0 + static_cast<double>(i) + 1.0;
    double v = std::sin(seed * 12.9898) * 43758.5453;
    v -= std::floor(v);
    if (descr[2] == '2') v = std::floor(v * 1024.0) / 1024.0;
    const std::size_t n = index.size();
    if (nonFinite && n >= 4 + static_cast<std::size_t>(batchDims)) {
      const auto* last = index.data() + n - 4;
      if (last[0] == 1 && last[1] == 1 && last[2] == 3 && last[3] == 2)
        return std::numeric_limits<double>::quiet_NaN();
      if (last[0] == 2 && last[1] == 0 && last[2] == 4 && last[3] == 1)
        return std::numeric_limits<double>::infinity();
    }
    return v;
  };
}

// Same shape and values (NaN equal to NaN), bit for bit.
void expectSame(const Matrix& a, const Matrix& b, const std::string& what) {
  ASSERT_EQ(a.rows(), b.rows()) << what;
  ASSERT_EQ(a.cols(), b.cols()) << what;
  for (Eigen::Index r = 0; r < a.rows(); ++r)
    for (Eigen::Index c = 0; c < a.cols(); ++c) {
      if (std::isnan(a(r, c)) && std::isnan(b(r, c))) continue;
      ASSERT_EQ(a(r, c), b(r, c)) << what << " at (" << r << ", " << c << ")";
    }
}

void expectSameStats(const HeadStats& a, const HeadStats& b, const std::string& what) {
  EXPECT_EQ(a.rowsUsed, b.rowsUsed) << what;
  if (std::isnan(a.entropy)) {
    EXPECT_TRUE(std::isnan(b.entropy)) << what;
    return;
  }
  EXPECT_NEAR(a.entropy, b.entropy, 1e-6 * std::max(1.0, std::abs(b.entropy))) << what;
  EXPECT_EQ(a.top1Mass, b.top1Mass) << what;  // a max and a mean of maxima in the same order
}

Matrix selected(const io::AttentionFile& file, io::AttentionSelection selection) {
  auto result = io::selectAttention(file, selection);
  EXPECT_TRUE(result.ok()) << result.error().message();
  return result.ok() ? result->view.values : Matrix();
}

// Everything an attention file offers, `fortran` against `reference` (C order).
void expectSameAggregates(const io::AttentionFile& fortran, const io::AttentionFile& reference) {
  ASSERT_EQ(fortran.layers(), reference.layers());
  ASSERT_EQ(fortran.heads(), reference.heads());
  const std::string name = fortran.path();
  for (int l = 0; l < reference.layers(); ++l) {
    for (int h = 0; h < reference.heads(); ++h)
      expectSame(fortran.copyHead(l, h), reference.copyHead(l, h),
                 name + " head " + std::to_string(l) + "." + std::to_string(h));
    expectSame(selected(fortran, {Kind::Mean, l, 0}), selected(reference, {Kind::Mean, l, 0}),
               name + " mean of layer " + std::to_string(l));
    expectSame(selected(fortran, {Kind::Max, l, 0}), selected(reference, {Kind::Max, l, 0}),
               name + " max of layer " + std::to_string(l));
    if (reference.shape().queries == reference.shape().keys) {
      expectSame(selected(fortran, {Kind::Rollout, l, 0}),
                 selected(reference, {Kind::Rollout, l, 0}),
                 name + " rollout to layer " + std::to_string(l));
    }
  }
  for (int size : {128, 2, 1}) {
    io::HeadOverviewOptions options;
    options.thumbnailSize = size;
    int calls = 0, last = 0;
    options.progress = [&](int done, int total) {
      ++calls;
      EXPECT_GT(done, last);
      EXPECT_EQ(total, reference.layers() * reference.heads());
      last = done;
    };
    const io::HeadOverview a = io::overviewHeads(fortran, options);
    EXPECT_EQ(last, reference.layers() * reference.heads());
    const io::HeadOverview b = io::overviewHeads(reference);
    options.progress = {};
    const io::HeadOverview c = io::overviewHeads(reference, options);
    ASSERT_FALSE(a.cancelled);
    ASSERT_EQ(a.thumbnails.size(), c.thumbnails.size());
    for (std::size_t i = 0; i < a.thumbnails.size(); ++i) {
      expectSame(a.thumbnails[i], c.thumbnails[i], name + " thumbnail " + std::to_string(i));
      expectSameStats(a.stats[i], b.stats[i], name + " stats " + std::to_string(i));
      EXPECT_EQ(a.nonFinite[i].nan, b.nonFinite[i].nan);
      EXPECT_EQ(a.nonFinite[i].posInf, b.nonFinite[i].posInf);
    }
    EXPECT_EQ(a.totalNonFinite.total(), b.totalNonFinite.total());
  }
  const auto statsA = io::allHeadStats(fortran);
  const auto statsB = io::allHeadStats(reference);
  ASSERT_EQ(statsA.size(), statsB.size());
  for (std::size_t l = 0; l < statsA.size(); ++l)
    for (std::size_t h = 0; h < statsA[l].size(); ++h)
      expectSameStats(statsA[l][h], statsB[l][h], name + " allHeadStats");
}

Expected<io::AttentionFile> openFile(const fs::path& path, io::AttentionOpenOptions options = {}) {
  return io::AttentionFile::open(path.string(), options);
}

TEST(AttentionFortran, EveryDtypeAndByteOrderMatchesCOrder) {
  const fs::path dir = freshDir("attn_fortran_dtypes");
  for (const char* descr : {"<f4", ">f4", "<f2", ">f2", "<f8", ">f8"}) {
    for (bool nonFinite : {false, true}) {
      const std::vector<std::int64_t> shape = {3, 4, 6, 6};
      const std::string stem = std::string(descr[0] == '<' ? "le" : "be") + (descr + 1) +
                               (nonFinite ? "_nan" : "");
      writeNpyFile(dir / (stem + "_c.npy"), {descr, false, shape, 1}, values(descr, nonFinite));
      writeNpyFile(dir / (stem + "_f.npy"), {descr, true, shape, 1}, values(descr, nonFinite));
      auto c = openFile(dir / (stem + "_c.npy"));
      auto f = openFile(dir / (stem + "_f.npy"));
      ASSERT_TRUE(c.ok() && f.ok());
      EXPECT_FALSE(f->inPlace(0));
      SCOPED_TRACE(stem);
      expectSameAggregates(*f, *c);
      if (nonFinite) {
        EXPECT_EQ(io::overviewHeads(*f).totalNonFinite.nan, 1u);
        EXPECT_EQ(io::overviewHeads(*f).totalNonFinite.posInf, 1u);
        EXPECT_TRUE(std::isnan(selected(*f, {Kind::Mean, 1, 0})(3, 2)));
      }
    }
  }
}

TEST(AttentionFortran, NonSquareAndSingleHeadShapes) {
  const fs::path dir = freshDir("attn_fortran_shapes");
  const std::vector<std::vector<std::int64_t>> shapes = {{5, 7}, {3, 4, 9}, {2, 1, 1, 8}, {1, 2, 3, 1}};
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const std::string stem = "s" + std::to_string(i);
    writeNpyFile(dir / (stem + "_c.npy"), {"<f4", false, shapes[i], 1}, values("<f4", false));
    writeNpyFile(dir / (stem + "_f.npy"), {"<f4", true, shapes[i], 2}, values("<f4", false));
    auto c = openFile(dir / (stem + "_c.npy"));
    auto f = openFile(dir / (stem + "_f.npy"));
    ASSERT_TRUE(c.ok() && f.ok());
    SCOPED_TRACE(stem);
    expectSameAggregates(*f, *c);
  }
}

TEST(AttentionFortran, BatchAndLayoutsMatchCOrder) {
  const fs::path dir = freshDir("attn_fortran_batch");
  // [batch, layers, heads, n_q, n_k] and [layers, batch, heads, n_q, n_k], float16 and float32.
  struct Case {
    std::string layout;
    std::vector<std::int64_t> shape;
    const char* descr;
  };
  const Case cases[] = {{"blhqk", {2, 3, 2, 5, 5}, "<f4"},
                        {"lbhqk", {3, 2, 2, 5, 5}, "<f2"},
                        {"hblqk", {2, 3, 2, 4, 4}, ">f8"}};
  for (const Case& test : cases) {
    writeNpyFile(dir / (test.layout + "_c.npy"), {test.descr, false, test.shape, 1},
                 values(test.descr, false));
    writeNpyFile(dir / (test.layout + "_f.npy"), {test.descr, true, test.shape, 1},
                 values(test.descr, false));
    for (int batch : {0, 1}) {
      io::AttentionOpenOptions options;
      options.layout = test.layout;
      options.batch = batch;
      auto c = openFile(dir / (test.layout + "_c.npy"), options);
      auto f = openFile(dir / (test.layout + "_f.npy"), options);
      ASSERT_TRUE(c.ok()) << c.error().message();
      ASSERT_TRUE(f.ok()) << f.error().message();
      SCOPED_TRACE(test.layout + " batch " + std::to_string(batch));
      expectSameAggregates(*f, *c);
    }
  }
}

TEST(AttentionFortran, PerLayerArchiveMixingOrdersMatchesOneCOrderFile) {
  // layer_0 and layer_2 in Fortran order, layer_1 and layer_3 in C order: the passes cover
  // runs of one layer, the heads in between are read head by head, and rollout chains both.
  const fs::path dir = freshDir("attn_fortran_mixed");
  const std::vector<std::int64_t> shape = {4, 3, 6, 6};
  writeNpyFile(dir / "all.npy", {"<f4", false, shape, 1}, values("<f4", false));
  const ValueFn all = values("<f4", false);
  std::vector<ZipItem> items;
  for (int l = 0; l < 4; ++l) {
    const ValueFn layer = [&, l](const std::vector<std::int64_t>& i) {
      return all({l, i[0], i[1], i[2]});
    };
    items.push_back({"layer_" + std::to_string(l) + ".npy",
                     npyBytes({"<f4", l % 2 == 0, {3, 6, 6}, 1}, layer), l == 2});
  }
  writeFile(dir / "mixed.npz", makeZip(items));
  auto c = openFile(dir / "all.npy");
  auto mixed = openFile(dir / "mixed.npz");
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(mixed.ok()) << mixed.error().message();
  ASSERT_EQ(mixed->layers(), 4);
  expectSameAggregates(*mixed, *c);
}

TEST(AttentionFortran, StridedViewOfAFloat32HeadIsInPlace) {
  const fs::path dir = freshDir("attn_fortran_view");
  writeNpyFile(dir / "f.npy", {"<f4", true, {2, 3, 5, 4}, 1}, attentionPattern());
  writeNpyFile(dir / "h.npy", {"<f2", true, {2, 3, 5, 4}, 1}, attentionPattern());
  auto f = openFile(dir / "f.npy");
  auto h = openFile(dir / "h.npy");
  ASSERT_TRUE(f.ok() && h.ok());
  const std::optional<io::StridedHeadRef> a = f->headView(1, 2);
  const std::optional<io::StridedHeadRef> b = f->headView(0, 0);
  ASSERT_TRUE(a && b);
  // Fortran order [2, 3, 5, 4]: strides (1, 2, 6, 30); head (1, 2) starts at element 1 + 2·2.
  EXPECT_EQ(a->data - b->data, 5);
  EXPECT_EQ(a->rowStride, 6);
  EXPECT_EQ(a->colStride, 30);
  EXPECT_EQ(a->rows, 5);
  EXPECT_EQ(a->cols, 4);
  for (int r = 0; r < 5; ++r)
    for (int c = 0; c < 4; ++c) ASSERT_EQ((*a)(r, c), static_cast<float>(pattern(1, 2, r, c)));
  expectSame(a->map(), f->copyHead(1, 2), "strided map");
  EXPECT_FALSE(f->headView(2, 0));  // out of range
  EXPECT_FALSE(h->headView(0, 0));  // float16 has no float32 view
  // C-order float32 heads have one too, with colStride 1.
  writeNpyFile(dir / "c.npy", {"<f4", false, {2, 3, 5, 4}, 1}, attentionPattern());
  auto c = openFile(dir / "c.npy");
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c->headView(1, 1));
  EXPECT_EQ(c->headView(1, 1)->colStride, 1);
  std::vector<float> scratch;
  EXPECT_EQ(c->headView(1, 1)->data, c->head(1, 1, scratch).data);
}

TEST(AttentionFortran, CancelledOverviewStopsAndSaysSo) {
  const fs::path dir = freshDir("attn_fortran_cancel");
  writeNpyFile(dir / "f.npy", {"<f4", true, {2, 2, 8, 8}, 1}, attentionPattern());
  auto f = openFile(dir / "f.npy");
  ASSERT_TRUE(f.ok());
  io::HeadOverviewOptions options;
  int asked = 0;
  options.cancel = [&] { return ++asked > 3; };
  const io::HeadOverview overview = io::overviewHeads(*f, options);
  EXPECT_TRUE(overview.cancelled);
  EXPECT_LT(overview.thumbnails.size(), 4u);
}

}  // namespace
}  // namespace test_formats_attention_fortran
