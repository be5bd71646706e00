// formats/npz: listing and reading stored and deflated archives, the writer, and the hostile
// archives (traversal names, truncation, zip bombs, corrupt data).
#include <gtest/gtest.h>

#include "formats/npz.h"
#include "tests/support/attention_test_files.h"

namespace test_formats_npz {
namespace {

using namespace attn;
using namespace attn::testfiles;
using attn::testing::readFile;
namespace fs = std::filesystem;

std::span<const std::byte> asBytes(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

Expected<io::NpzArchive> openBytes(const std::string& bytes, io::NpzLimits limits = {}) {
  return io::NpzArchive::openMemory(asBytes(bytes), "t.npz", limits);
}

std::string small(const std::vector<std::int64_t>& shape, const std::string& descr = "<f4") {
  return npyBytes({descr, false, shape, 1}, attentionPattern());
}

TEST(Npz, ListsAndReadsStoredAndDeflatedEntries) {
  for (bool deflate : {false, true}) {
    const std::string zip = makeZip({{"a.npy", small({3, 4}), deflate},
                                     {"b.npy", small({2, 2}, ">f8"), deflate},
                                     {"notes.txt", "hello", deflate},
                                     {"folder/", "", false}});
    auto archive = openBytes(zip);
    ASSERT_TRUE(archive.ok()) << archive.error().message();
    ASSERT_EQ(archive->arrays().size(), 2u);
    EXPECT_EQ(archive->arrays()[0].name, "a");
    EXPECT_EQ(archive->arrays()[1].name, "b");
    EXPECT_EQ(archive->arrays()[0].deflated, deflate);
    EXPECT_EQ(archive->arrays()[1].header.shape, (std::vector<std::int64_t>{2, 2}));
    EXPECT_TRUE(archive->arrays()[1].header.bigEndian);
    auto b = archive->read("b");
    ASSERT_TRUE(b.ok()) << b.error().message();
    EXPECT_EQ(b->file, "t.npz:b.npy");
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j)
        EXPECT_EQ(b->element(static_cast<std::uint64_t>(i * 2 + j)),
                  static_cast<float>(pattern(0, 0, i, j)));
    auto missing = archive->read("c");
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().message().find("no array 'c' in the archive (arrays: a, b)"),
              std::string::npos)
        << missing.error().message();
  }
}

TEST(Npz, ReadArraysOutliveTheArchive) {
  auto archive = openBytes(makeZip({{"a.npy", small({3, 4}), true}}));
  ASSERT_TRUE(archive.ok());
  auto a = archive->read("a");
  ASSERT_TRUE(a.ok());
  { io::NpzArchive gone = std::move(archive).value(); }
  EXPECT_EQ(a->element(11), static_cast<float>(pattern(0, 0, 2, 3)));
}

TEST(Npz, OpensFromAFile) {
  const fs::path dir = freshDir("npz_file");
  writeFile(dir / "x.npz", makeZip({{"x.npy", small({2, 3}), true}}));
  auto archive = io::NpzArchive::open((dir / "x.npz").string());
  ASSERT_TRUE(archive.ok()) << archive.error().message();
  auto x = archive->read("x");
  ASSERT_TRUE(x.ok()) << x.error().message();
  EXPECT_EQ(x->element(4), static_cast<float>(pattern(0, 0, 1, 1)));
  auto missing = io::NpzArchive::open((dir / "nope.npz").string());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message().find("nope.npz: "), std::string::npos);
}

TEST(Npz, UnsupportedDtypeEntriesAreListedNotFatal) {
  auto archive = openBytes(
      makeZip({{"mask.npy", headerFor({"|b1", false, {5}, 1}) + std::string(5, '\0'), false}, {"attn.npy", small({2, 2}), false}}));
  ASSERT_TRUE(archive.ok()) << archive.error().message();
  ASSERT_EQ(archive->arrays().size(), 2u);
  EXPECT_NE(archive->arrays()[0].unsupported.find("bool"), std::string::npos);
  auto mask = archive->read("mask");
  ASSERT_FALSE(mask.ok());
  EXPECT_NE(mask.error().message().find("t.npz:mask.npy"), std::string::npos);
}

// Integer entries (an int64 input_ids beside the attention) are read: ids with their values.
TEST(Npz, IntegerEntriesAreRead) {
  auto archive = openBytes(
      makeZip({{"input_ids.npy",
                npyBytes({"<i8", false, {5}, 1}, [](const std::vector<std::int64_t>& i) { return 101.0 * i[0] - 3; }),
                true},
               {"attn.npy", small({2, 2}), false}}));
  ASSERT_TRUE(archive.ok()) << archive.error().message();
  ASSERT_EQ(archive->arrays().size(), 2u);
  EXPECT_TRUE(archive->arrays()[0].unsupported.empty());
  EXPECT_EQ(archive->arrays()[0].header.descr(), "<i8");
  auto ids = archive->read("input_ids");
  ASSERT_TRUE(ids.ok()) << ids.error().message();
  auto values = io::readIds(*ids, "input_ids");
  ASSERT_TRUE(values.ok()) << values.error().message();
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ((*values)[static_cast<std::size_t>(i)], 101 * i - 3);
}

// =======================================================================================
// Writer
// =======================================================================================

TEST(NpzWriter, StoredAndDeflatedRoundTrip) {
  const std::vector<float> values = {1, 2, 3, 4, 5, 6};
  const std::vector<std::int64_t> shape = {2, 3};
  const std::vector<std::int64_t> ids = {7, 8, 9};
  const std::vector<std::int64_t> idsShape = {3};
  std::vector<io::NpzEntry> entries = {{"weights", *io::writeNpyFloat32(values, shape)},
                                       {"ids", *io::writeNpyInt64(ids, idsShape)}};
  for (bool deflate : {false, true}) {
    auto zip = io::writeNpz(entries, deflate);
    ASSERT_TRUE(zip.ok()) << zip.error().message();
    EXPECT_EQ(zip->substr(0, 4), "PK\x03\x04");
    auto archive = openBytes(*zip);
    ASSERT_TRUE(archive.ok()) << archive.error().message();
    ASSERT_EQ(archive->arrays().size(), 2u);
    EXPECT_EQ(archive->arrays()[0].entryName, "weights.npy");
    EXPECT_EQ(archive->arrays()[0].deflated, deflate);
    auto w = archive->read("weights");
    ASSERT_TRUE(w.ok()) << w.error().message();
    for (std::size_t i = 0; i < values.size(); ++i) EXPECT_EQ(w->element(i), values[i]);
  }
  // Stored: the .npy bytes appear verbatim in the archive.
  auto stored = io::writeNpz(entries, false);
  EXPECT_NE(stored->find(entries[0].npyBytes), std::string::npos);
}

// The streamed writer (model --out): the same archive content as writeNpz's stored one,
// read back by libzip (which checks every CRC), from chunks of any size; the producer runs
// twice (CRC, then data). A producer short of its declared size, an unsafe name: errors, and
// no file is left behind.
TEST(NpzWriter, StreamedArchiveRoundTripsAndMatchesTheStoredWriter) {
  const fs::path dir = freshDir("npz_streamed");
  std::vector<float> values(3 * 5 * 7);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) * 0.5f - 3.0f;
  const std::vector<std::int64_t> shape = {3, 5, 7};
  const std::vector<std::int64_t> ids = {7, 8, 9};
  const std::vector<std::int64_t> idsShape = {3};
  const std::string idsNpy = *io::writeNpyInt64(ids, idsShape);
  const std::string header = *io::npyHeaderFloat32(shape);
  EXPECT_EQ(*io::writeNpyFloat32(values, shape), header + std::string(reinterpret_cast<const char*>(values.data()), values.size() * 4));
  int calls = 0;
  std::vector<io::NpzStreamEntry> entries(2);
  entries[0] = {"attention", header, values.size() * 4, [&](const io::ChunkWriter& write) -> Status {
                  ++calls;
                  // chunks of 1, 2, 3, ... floats
                  std::size_t at = 0;
                  for (std::size_t chunk = 1; at < values.size(); ++chunk) {
                    const std::size_t count = std::min(chunk, values.size() - at);
                    if (Status s = write({reinterpret_cast<const char*>(values.data() + at), count * 4}); !s) return s;
                    at += count;
                  }
                  return Ok{};
                }};
  const std::size_t idsHeader = idsNpy.size() - 24;
  entries[1] = {"token_ids", idsNpy.substr(0, idsHeader), 24,
                [&](const io::ChunkWriter& write) { return write(std::string_view(idsNpy).substr(idsHeader)); }};
  const fs::path path = dir / "out.npz";
  ASSERT_TRUE(io::writeNpzStreamed(path.string(), entries).ok());
  EXPECT_EQ(calls, 2);
  auto archive = io::NpzArchive::open(path.string());
  ASSERT_TRUE(archive.ok()) << archive.error().message();
  ASSERT_EQ(archive->arrays().size(), 2u);
  auto a = archive->read("attention");
  ASSERT_TRUE(a.ok()) << a.error().message();
  EXPECT_EQ(a->header.shape, shape);
  for (std::size_t i = 0; i < values.size(); ++i) ASSERT_EQ(a->element(i), values[i]);
  EXPECT_EQ(archive->arrays()[1].entryName, "token_ids.npy");  // int64: listed, not read here
  // Byte for byte, each stored entry is the .npy writeNpz would store.
  const std::string bytes = readFile(path);
  EXPECT_NE(bytes.find(*io::writeNpyFloat32(values, shape)), std::string::npos);
  EXPECT_NE(bytes.find(idsNpy), std::string::npos);

  entries[0].dataBytes += 4;  // the producer hands one float less than declared
  const fs::path bad = dir / "bad.npz";
  Status short_ = io::writeNpzStreamed(bad.string(), entries);
  ASSERT_FALSE(short_.ok());
  EXPECT_NE(short_.error().message().find("declared"), std::string::npos) << short_.error().message();
  EXPECT_FALSE(fs::exists(bad));
  entries[0].dataBytes -= 4;
  entries[1].name = "../up";
  EXPECT_FALSE(io::writeNpzStreamed(bad.string(), entries).ok());
  EXPECT_FALSE(fs::exists(bad));
}

TEST(NpzWriter, RefusesUnsafeAndDuplicateNames) {
  std::vector<io::NpzEntry> bad = {{"../up", small({1})}};
  EXPECT_FALSE(io::writeNpz(bad).ok());
  std::vector<io::NpzEntry> dup = {{"a", small({1})}, {"a", small({1})}};
  auto zip = io::writeNpz(dup);
  ASSERT_FALSE(zip.ok());
  EXPECT_NE(zip.error().message().find("duplicate"), std::string::npos);
}

// =======================================================================================
// Hostile archives
// =======================================================================================

TEST(NpzHostile, PathTraversalAndAbsoluteNamesAreRefused) {
  for (const char* name :
       {"../x.npy", "a/../../x.npy", "/etc/x.npy", "C:x.npy", "a\\..\\x.npy", "..", "ok/../.."}) {
    auto archive = openBytes(makeZip({{"fine.npy", small({1}), false}, {name, small({1}), false}}));
    ASSERT_FALSE(archive.ok()) << name;
    const std::string message = archive.error().message();
    EXPECT_EQ(message.rfind("t.npz: refusing entry", 0), 0u) << message;
    EXPECT_NE(message.find("path-traversal"), std::string::npos) << message;
  }
  EXPECT_TRUE(io::isSafeEntryName("a/b..c/x.npy"));
  EXPECT_TRUE(io::isSafeEntryName("..x.npy"));
  EXPECT_FALSE(io::isSafeEntryName(""));
}

TEST(NpzHostile, TruncatedArchives) {
  const std::string zip = makeZip({{"a.npy", small({64, 64}), true}, {"b.npy", small({8}), false}});
  for (std::size_t keep : {zip.size() - 1, zip.size() - 30, zip.size() / 2, std::size_t{30},
                           std::size_t{3}, std::size_t{0}}) {
    auto archive = openBytes(zip.substr(0, keep));
    ASSERT_FALSE(archive.ok()) << keep;
    EXPECT_NE(archive.error().message().find("not a readable zip/npz archive"), std::string::npos)
        << archive.error().message();
  }
}

TEST(NpzHostile, CorruptDeflateDataIsAnErrorNotGarbage) {
  std::string zip = makeZip({{"a.npy", small({64, 64}), true}});
  // Flip bytes near the END of the compressed stream (it starts after the 30-byte local
  // header and the 5-byte name; its size is the local header's field at offset 18), so the
  // .npy header at the stream's start still inflates and opening must succeed; the central
  // directory stays intact. Only reading the data can find the damage.
  const std::size_t dataStart = 30 + 5;
  const std::size_t compressed = static_cast<unsigned char>(zip[18]) |
                                 static_cast<std::size_t>(static_cast<unsigned char>(zip[19])) << 8 |
                                 static_cast<std::size_t>(static_cast<unsigned char>(zip[20])) << 16;
  ASSERT_GT(compressed, 200u);
  for (std::size_t i = dataStart + compressed - 40; i < dataStart + compressed - 20; ++i)
    zip[i] = static_cast<char>(zip[i] ^ 0x5a);
  auto archive = openBytes(zip);
  ASSERT_TRUE(archive.ok()) << archive.error().message();
  auto a = archive->read("a");
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().message().rfind("t.npz:a.npy: ", 0), 0u) << a.error().message();
}

TEST(NpzHostile, ZipBombStopsAtTheLimitBeforeInflating) {
  // 64 MiB of float32 zeros deflate to ~64 KiB; the header's claim is over the 1 MiB limit.
  const std::string big = npyBytes({"<f4", false, {16 * 1024 * 1024}, 1},
                                   [](const std::vector<std::int64_t>&) { return 0.0; });
  const std::string zip = makeZip({{"bomb.npy", big, true}});
  EXPECT_LT(zip.size(), 1u << 20);
  io::NpzLimits limits;
  limits.maxUncompressedBytes = 1 << 20;
  auto archive = openBytes(zip, limits);
  ASSERT_TRUE(archive.ok()) << archive.error().message();
  auto bomb = archive->read("bomb");
  ASSERT_FALSE(bomb.ok());
  EXPECT_NE(bomb.error().message().find("above the uncompressed limit of 1048576"),
            std::string::npos)
      << bomb.error().message();
  EXPECT_LT(archive->bytesInflated(), 1024u);  // only the header was inflated
}

TEST(NpzHostile, ZipBombWithALyingHeaderStopsWhileInflating) {
  // The npy header says 4 floats; the entry then inflates 32 MiB of zeros. The reader stops
  // one byte past what the header allows instead of inflating it all.
  std::string lying = npyBytes({"<f4", false, {4}, 1}, attentionPattern());
  lying += std::string(32u << 20, '\0');
  const std::string zip = makeZip({{"bomb.npy", lying, true}});
  auto archive = openBytes(zip);
  ASSERT_TRUE(archive.ok());
  auto bomb = archive->read("bomb");
  ASSERT_FALSE(bomb.ok());
  EXPECT_NE(bomb.error().message().find("holds more than"), std::string::npos)
      << bomb.error().message();
  EXPECT_LT(archive->bytesInflated(), 4096u);
}

// Overwrites a 4-byte little-endian field of the (single) entry in both its local header
// (at `localOffset`) and its central-directory record (at `centralOffset`), so that the
// two headers still agree with each other.
std::string patchBothHeaders(std::string zip, std::size_t localOffset, std::size_t centralOffset,
                             std::uint32_t value) {
  const std::size_t central = zip.rfind(std::string("PK\x01\x02", 4));
  EXPECT_NE(central, std::string::npos);
  for (std::size_t at : {localOffset, central + centralOffset}) {
    for (int i = 0; i < 4; ++i) zip[at + i] = static_cast<char>((value >> (8 * i)) & 0xff);
  }
  return zip;
}

TEST(NpzHostile, ZipHeaderLyingAboutTheUncompressedSize) {
  // The npy header honestly says 16 Mi floats (64 MiB); the zip headers claim 1000 bytes.
  const std::string big = npyBytes({"<f4", false, {16 * 1024 * 1024}, 1},
                                   [](const std::vector<std::int64_t>&) { return 0.0; });
  const std::string lying = patchBothHeaders(makeZip({{"bomb.npy", big, true}}), 22, 24, 1000);
  auto archive = openBytes(lying);
  ASSERT_TRUE(archive.ok()) << archive.error().message();
  auto bomb = archive->read("bomb");
  ASSERT_FALSE(bomb.ok());
  EXPECT_EQ(bomb.error().message().rfind("t.npz:bomb.npy: ", 0), 0u) << bomb.error().message();
  EXPECT_NE(bomb.error().message().find("its data does not match the size its header declares"),
            std::string::npos)
      << bomb.error().message();
  // Inflation stopped within one chunk of the declared size, not after 64 MiB.
  EXPECT_LE(archive->bytesInflated(), (1u << 20) + 1000u);

  // A small array whose zip headers claim more bytes than the entry produces.
  const std::string part = small({4, 4});
  const auto claimed = static_cast<std::uint32_t>(part.size() + 100);
  auto longer = openBytes(patchBothHeaders(makeZip({{"a.npy", part, true}}), 22, 24, claimed));
  ASSERT_TRUE(longer.ok()) << longer.error().message();
  auto a = longer->read("a");
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().message().find("its data does not match the size its header declares (" +
                                     std::to_string(claimed) + " bytes declared, " +
                                     std::to_string(part.size()) + " inflated)"),
            std::string::npos)
      << a.error().message();
}

TEST(NpzHostile, WrongCrcIsAnError) {
  const std::string part = small({8, 8});
  for (bool deflate : {false, true}) {
    const std::string zip =
        patchBothHeaders(makeZip({{"a.npy", part, deflate}}), 14, 16, 0x12345678u);
    auto archive = openBytes(zip);
    ASSERT_TRUE(archive.ok()) << archive.error().message();
    auto a = archive->read("a");
    ASSERT_FALSE(a.ok()) << deflate;
    EXPECT_EQ(a.error().message().rfind("t.npz:a.npy: ", 0), 0u) << a.error().message();
    EXPECT_NE(a.error().message().find("CRC"), std::string::npos) << a.error().message();
  }
}

TEST(NpzHostile, TheLimitCountsEveryInflatedByte) {
  // Three arrays of 400 KiB each under a 1 MiB limit: the third one does not fit.
  const std::string part = npyBytes({"<f4", false, {100 * 1024}, 1}, attentionPattern());
  const std::string zip =
      makeZip({{"a.npy", part, true}, {"b.npy", part, true}, {"c.npy", part, true}});
  io::NpzLimits limits;
  limits.maxUncompressedBytes = 1 << 20;
  auto archive = openBytes(zip, limits);
  ASSERT_TRUE(archive.ok());
  EXPECT_TRUE(archive->read("a").ok());
  EXPECT_TRUE(archive->read("b").ok());
  auto c = archive->read("c");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message().find("uncompressed limit"), std::string::npos);
  EXPECT_LE(archive->bytesInflated(), limits.maxUncompressedBytes);
  // A limit below even the headers stops the listing itself, while inflating.
  limits.maxUncompressedBytes = 100;
  auto tiny = openBytes(zip, limits);
  ASSERT_FALSE(tiny.ok());
  EXPECT_NE(tiny.error().message().find("stopped after inflating"), std::string::npos)
      << tiny.error().message();
}

TEST(NpzHostile, EntryShorterThanItsHeader) {
  std::string shortEntry = npyBytes({"<f4", false, {16}, 1}, attentionPattern());
  shortEntry.resize(shortEntry.size() - 8);
  auto archive = openBytes(makeZip({{"s.npy", shortEntry, true}}));
  ASSERT_TRUE(archive.ok());
  auto s = archive->read("s");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("truncated entry"), std::string::npos) << s.error().message();
}

TEST(NpzHostile, BadHeadersInsideNameTheEntry) {
  std::string header = "\x93NUMPY";
  header += {'\x01', '\0', '\x10', '\0'};
  header += "{'descr': 1}   \n";  // 16 bytes of dict, as the length says
  auto archive = openBytes(makeZip({{"x.npy", header, false}}));
  ASSERT_FALSE(archive.ok());
  EXPECT_EQ(archive.error().message().rfind("t.npz:x.npy: malformed .npy header", 0), 0u)
      << archive.error().message();
  auto notNpy = openBytes(makeZip({{"y.npy", "plain text", false}}));
  ASSERT_FALSE(notNpy.ok());
  EXPECT_NE(notNpy.error().message().find("t.npz:y.npy: not an .npy file"), std::string::npos);
}

TEST(NpzHostile, NotAZipAtAll) {
  auto archive = openBytes("PK\x03\x04 definitely not a zip");
  ASSERT_FALSE(archive.ok());
  EXPECT_EQ(archive.error().message().rfind("t.npz: not a readable zip/npz archive", 0), 0u);
}

}  // namespace
}  // namespace test_formats_npz
