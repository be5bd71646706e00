// Stored (method 0) .npz entries of an archive FILE are used from its mapping (issue 22):
// in place when float32 data is aligned, converted head by head when it is not, never copied
// whole; numpy's own np.savez output (Zip64 extra fields in the local headers) reads the same
// way; the local header and the central directory are read strictly (formats/zip_directory)
// and every disagreement is an error naming FILE:ENTRY and the field; the inflate budget still
// refuses deflated zip bombs from their headers.
#include <gtest/gtest.h>

#include <cstdio>

#include "formats/attention_file.h"
#include "formats/npz.h"
#include "formats/zip_directory.h"
#include "tests/support/attention_test_files.h"

namespace test_formats_npz_mapped {
namespace {

using namespace attn;
using namespace attn::testfiles;
using attn::testing::readFile;

std::span<const std::byte> asBytes(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

// Byte offset of the .npy data of the only entry of `zip` (its header is `npy` minus data).
std::size_t dataOffsetOf(const std::string& zip, const std::string& npy, std::size_t dataBytes) {
  return zip.find("\x93NUMPY") + (npy.size() - dataBytes);
}

void putLe32(std::string& bytes, std::size_t at, std::uint32_t value) {
  for (int i = 0; i < 4; ++i) bytes[at + i] = static_cast<char>((value >> (8 * i)) & 0xff);
}

// Checks every value of every head against the pattern.
void expectPattern(const io::AttentionFile& file) {
  std::vector<float> scratch;
  for (int l = 0; l < file.layers(); ++l)
    for (int h = 0; h < file.heads(); ++h) {
      MatrixRef head = file.head(l, h, scratch);
      for (int i = 0; i < head.rows; ++i)
        for (int j = 0; j < head.cols; ++j)
          ASSERT_EQ(head(i, j), static_cast<float>(pattern(l, h, i, j)));
    }
}

TEST(NpzMapped, StoredEntriesOfAFileAreUsedFromTheMapping) {
  const fs::path dir = freshDir("npz_mapped");
  const std::vector<std::int64_t> shape = {2, 3, 5, 5};
  const std::string npy = npyBytes({"<f4", false, shape, 1}, attentionPattern());
  const std::size_t dataBytes = 2 * 3 * 5 * 5 * 4;
  writeNpyFile(dir / "same.npy", {"<f4", false, shape, 1}, attentionPattern());
  auto reference = io::AttentionFile::open((dir / "same.npy").string());
  ASSERT_TRUE(reference.ok());
  // Names of 1..4 letters move the data by one byte each: both alignments occur.
  bool sawAligned = false, sawMisaligned = false;
  for (std::string name : {"a", "ab", "abc", "abcd"}) {
    const std::string zip = makeZip({{name + ".npy", npy, false}});
    const std::size_t offset = dataOffsetOf(zip, npy, dataBytes);
    const bool aligned = offset % 4 == 0;
    sawAligned |= aligned;
    sawMisaligned |= !aligned;
    const fs::path path = dir / (name + ".npz");
    writeFile(path, zip);

    auto archive = io::NpzArchive::open(path.string());
    ASSERT_TRUE(archive.ok()) << archive.error().message();
    const std::uint64_t headerBytes = archive->bytesInflated();
    EXPECT_LE(headerBytes, npy.size() - dataBytes);  // only the .npy header was inflated
    auto array = archive->read(name);
    ASSERT_TRUE(array.ok()) << array.error().message();
    EXPECT_EQ(archive->bytesInflated(), headerBytes);  // the data was not
    ASSERT_EQ(array->mapping.size(), zip.size());       // the whole archive is mapped
    EXPECT_EQ(array->data, array->mapping.data() + offset);
    for (std::uint64_t i = 0; i < array->header.elementCount; ++i)
      ASSERT_EQ(array->element(i), io::npyFromBuffer(asBytes(npy), nullptr, "x")->element(i));

    auto file = io::AttentionFile::open(path.string());
    ASSERT_TRUE(file.ok()) << file.error().message();
    EXPECT_EQ(file->inPlace(0), aligned) << name;
    expectPattern(*file);
    using Kind = io::AttentionSelection::Kind;
    for (auto kind : {Kind::Mean, Kind::Max, Kind::Rollout}) {
      auto a = io::selectAttention(*file, {kind, 1, 0});
      auto b = io::selectAttention(*reference, {kind, 1, 0});
      ASSERT_TRUE(a.ok() && b.ok());
      EXPECT_EQ(a->view.values, b->view.values);
    }
    file->releaseHead(1, 2);  // pages of the archive mapping go; the values stay
    expectPattern(*file);
  }
  EXPECT_TRUE(sawAligned);
  EXPECT_TRUE(sawMisaligned);
}

std::string python() { return fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3"; }

TEST(NpzMapped, NumpySavezFilesReadInPlaceInBothOrders) {
  const fs::path dir = freshDir("npz_numpy");
  const std::string script =
      "import numpy as np, sys\n"
      "a = ((np.arange(2 * 3 * 6 * 6) * 7 % 64) / 64).astype('<f4').reshape(2, 3, 6, 6)\n"
      "np.savez(sys.argv[1] + '/c.npz', attention=a)\n"
      "np.savez(sys.argv[1] + '/f.npz', attention=np.asfortranarray(a))\n"
      "np.save(sys.argv[1] + '/c.npy', a)\n";
  writeFile(dir / "write.py", script);
  const std::string command = python() + " '" + (dir / "write.py").string() + "' '" +
                              dir.string() + "' 2>/dev/null";
  if (std::system(command.c_str()) != 0) GTEST_SKIP() << "python3 with numpy is not available";
  auto npy = io::AttentionFile::open((dir / "c.npy").string());
  auto c = io::AttentionFile::open((dir / "c.npz").string());
  auto f = io::AttentionFile::open((dir / "f.npz").string());
  ASSERT_TRUE(npy.ok()) << npy.error().message();
  ASSERT_TRUE(c.ok()) << c.error().message();
  ASSERT_TRUE(f.ok()) << f.error().message();
  EXPECT_TRUE(f->arrays()[0].fortranOrder);
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 3; ++h) {
      EXPECT_EQ(c->copyHead(l, h), npy->copyHead(l, h));
      EXPECT_EQ(f->copyHead(l, h), npy->copyHead(l, h));
    }
  using Kind = io::AttentionSelection::Kind;
  auto a = io::selectAttention(*f, {Kind::Rollout, 1, 0});
  auto b = io::selectAttention(*npy, {Kind::Rollout, 1, 0});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->view.values, b->view.values);
  // numpy writes Zip64 extra fields into its local headers: the strict reader takes them.
  const std::string zip = readFile(dir / "c.npz");
  auto directory = io::readZipDirectory(asBytes(zip), "c.npz", io::kNpzMaxEntries);
  ASSERT_TRUE(directory.ok()) << directory.error().message();
  ASSERT_EQ(directory->entries.size(), 1u);
  auto offset = io::zipStoredDataOffset(asBytes(zip), *directory, directory->entries[0], "c.npz:x");
  ASSERT_TRUE(offset.ok()) << offset.error().message();
  EXPECT_EQ(*offset, zip.find("\x93NUMPY"));
}

// The local header (at 0) and central directory of a one-entry stored archive.
struct OneEntry {
  std::string zip;
  std::size_t central = 0;
};
OneEntry oneEntry() {
  const std::string npy = npyBytes({"<f4", false, {4, 4}, 1}, attentionPattern());
  OneEntry out;
  out.zip = makeZip({{"a.npy", npy, false}});
  out.central = out.zip.rfind(std::string("PK\x01\x02", 4));
  return out;
}

Expected<std::uint64_t> dataOffset(const std::string& zip) {
  auto directory = io::readZipDirectory(asBytes(zip), "t.npz", io::kNpzMaxEntries);
  if (!directory) return directory.error();
  if (directory->entries.size() != 1) return Error{"t.npz", "", "not one entry"};
  return io::zipStoredDataOffset(asBytes(zip), *directory, directory->entries[0], "t.npz:a.npy");
}

void expectError(const Expected<std::uint64_t>& result, const std::string& field,
                 const std::string& words) {
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().field, field) << result.error().message();
  EXPECT_NE(result.error().message().find(words), std::string::npos) << result.error().message();
  EXPECT_EQ(result.error().message().find('\n'), std::string::npos);
}

TEST(NpzMappedHostile, LocalHeadersAndTheDirectoryAreReadStrictly) {
  const OneEntry good = oneEntry();
  auto offset = dataOffset(good.zip);
  ASSERT_TRUE(offset.ok()) << offset.error().message();
  EXPECT_EQ(*offset, good.zip.find("\x93NUMPY"));
  {  // the local header lies about the stored size
    std::string zip = good.zip;
    putLe32(zip, 18, 12345);
    expectError(dataOffset(zip), "size", "the local header says 12345 bytes stored");
  }
  {  // ... or about the CRC
    std::string zip = good.zip;
    putLe32(zip, 14, 0x12345678u);
    expectError(dataOffset(zip), "local header", "CRC-32");
  }
  {  // a different name of the same length
    std::string zip = good.zip;
    zip[30] = 'b';
    expectError(dataOffset(zip), "local header", "name differs");
  }
  {  // deflated in the local header
    std::string zip = good.zip;
    zip[8] = 8;
    expectError(dataOffset(zip), "local header", "compression method 8");
  }
  {  // no local header where the directory points
    std::string zip = good.zip;
    zip[0] = 'X';
    expectError(dataOffset(zip), "local header", "no local header signature");
  }
  {  // both headers declare more bytes than the entry holds: past the entries
    std::string zip = good.zip;
    for (std::size_t at : {std::size_t{18}, std::size_t{22}, good.central + 20, good.central + 24})
      putLe32(zip, at, 1u << 20);
    expectError(dataOffset(zip), "size", "run past the end of the entries");
  }
  {  // the directory points past the end
    std::string zip = good.zip;
    putLe32(zip, good.central + 42, 1u << 30);
    expectError(dataOffset(zip), "local header", "lies past the entries");
  }
  // A truncated archive has no end record; a saturated one without Zip64 is refused.
  expectError(dataOffset(good.zip.substr(0, good.zip.size() - 5)), "central directory",
              "no end of central directory record");
  {
    std::string zip = good.zip;
    putLe32(zip, zip.size() - 22 + 16, 0xFFFFFFFFu);
    expectError(dataOffset(zip), "central directory", "without a Zip64 locator");
  }
}

TEST(NpzMappedHostile, StoredEntriesThatDisagreeWithTheirNpyHeaderAreErrors) {
  const fs::path dir = freshDir("npz_mapped_hostile");
  const OneEntry good = oneEntry();
  const std::size_t entryBytes = good.zip.find("PK\x01\x02") - good.zip.find("\x93NUMPY");
  // Both zip headers say 8 bytes fewer than the .npy holds (the .npy's own header says more):
  // the entry is "truncated" as far as the archive is concerned.
  std::string shorter = good.zip;
  for (std::size_t at : {std::size_t{18}, std::size_t{22}, good.central + 20, good.central + 24})
    putLe32(shorter, at, static_cast<std::uint32_t>(entryBytes - 8));
  writeFile(dir / "short.npz", shorter);
  auto archive = io::NpzArchive::open((dir / "short.npz").string());
  std::string message;
  if (archive.ok()) {
    auto a = archive->read("a");
    ASSERT_FALSE(a.ok());
    message = a.error().message();
    EXPECT_EQ(a.error().field, "size") << message;
    EXPECT_NE(message.find("short.npz:a.npy"), std::string::npos) << message;
    EXPECT_NE(message.find(std::to_string(entryBytes - 8)), std::string::npos) << message;
  } else {
    message = archive.error().message();  // libzip's consistency check got there first
  }
  auto file = io::AttentionFile::open((dir / "short.npz").string());
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.error().message().find("short.npz"), std::string::npos);
  EXPECT_EQ(file.error().message().find('\n'), std::string::npos);

  // A file cut in the middle of the stored data: not an archive any more.
  writeFile(dir / "cut.npz", good.zip.substr(0, good.zip.find("\x93NUMPY") + 40));
  auto cut = io::AttentionFile::open((dir / "cut.npz").string());
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.error().message().find("cut.npz"), std::string::npos);
}

TEST(NpzMapped, TheInflateBudgetCountsDeflatedEntriesOnly) {
  const fs::path dir = freshDir("npz_mapped_budget");
  // Three layers of 400 KiB each under a 1 MiB limit: refused from the headers when deflated;
  // stored ones are used from the mapping and inflate nothing, so they open.
  const std::string part = npyBytes({"<f4", false, {4, 160, 160}, 1}, attentionPattern());
  io::AttentionOpenOptions options;
  options.limits.maxUncompressedBytes = 1 << 20;
  for (bool deflate : {true, false}) {
    const fs::path path = dir / (deflate ? "deflated.npz" : "stored.npz");
    writeFile(path, makeZip({{"layer_0.npy", part, deflate},
                             {"layer_1.npy", part, deflate},
                             {"layer_2.npy", part, deflate}}));
    auto file = io::AttentionFile::open(path.string(), options);
    if (deflate) {
      ASSERT_FALSE(file.ok());
      EXPECT_NE(file.error().message().find("refused before inflating"), std::string::npos)
          << file.error().message();
    } else {
      ASSERT_TRUE(file.ok()) << file.error().message();
      EXPECT_EQ(file->layers(), 3);
      EXPECT_EQ(file->copyHead(2, 3)(7, 9), static_cast<float>(pattern(0, 3, 7, 9)));
    }
  }
}


// Fuzz-ish: thousands of archives with a few bytes changed (mostly in the headers and the
// central directory), opened from a FILE so that stored entries take the mapped path. None
// may crash; every error is one line naming the file; every array read from the mapping lies
// inside it (the bounds the local-header reader promises), and every value of it is read.
TEST(NpzMappedHostile, MutatedArchivesNeverReadOutsideTheMapping) {
  const fs::path dir = freshDir("npz_mapped_mutated");
  const std::string base = makeZip(
      {{"layer_0.npy", npyBytes({"<f4", false, {2, 4, 4}, 1}, attentionPattern()), false},
       {"layer_1.npy", npyBytes({">f2", true, {2, 4, 4}, 1}, attentionPattern()), false},
       {"layer_2.npy", npyBytes({"<f8", false, {2, 4, 4}, 1}, attentionPattern()), true}});
  const std::size_t central = base.rfind(std::string("PK\x01\x02", 4));
  std::uint64_t state = 0x9E3779B97F4A7C15ull;
  auto next = [&] {
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    return state;
  };
  const fs::path path = dir / "m.npz";
  int opened = 0, readMapped = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string zip = base;
    const int changes = 1 + static_cast<int>(next() % 4);
    for (int c = 0; c < changes; ++c) {
      // Half the changes in the local headers and .npy headers at the start, half from the
      // first central record on (the directory and the end record), a few anywhere.
      const std::uint64_t pick = next();
      std::size_t at = pick % 4 == 0   ? next() % zip.size()
                       : pick % 4 == 1 ? next() % 160
                                       : central + next() % (zip.size() - central);
      zip[at] = static_cast<char>(next() % 4 == 0 ? 0xFF : next() & 0xFF);
    }
    writeFile(path, zip);
    auto archive = io::NpzArchive::open(path.string());
    if (!archive.ok()) {
      EXPECT_EQ(archive.error().message().rfind(path.string(), 0), 0u);
      continue;
    }
    ++opened;
    for (const io::NpzArrayInfo& info : archive->arrays()) {
      auto array = archive->read(info.name);
      if (!array.ok()) {
        const std::string message = array.error().message();
        EXPECT_EQ(message.find('\n'), std::string::npos) << message;
        EXPECT_NE(message.find("m.npz"), std::string::npos) << message;
        continue;
      }
      if (!array->mapping.empty()) {
        ++readMapped;
        ASSERT_GE(array->data, array->mapping.data());
        ASSERT_LE(array->data + array->header.dataBytes,
                  array->mapping.data() + array->mapping.size());
      }
      float sum = 0;
      for (std::uint64_t i = 0; i < array->header.elementCount; ++i) sum += array->element(i);
      (void)sum;
    }
    auto file = io::AttentionFile::open(path.string());
    if (!file.ok()) {
      EXPECT_EQ(file.error().message().find('\n'), std::string::npos);
      continue;
    }
    const io::HeadOverview overview = io::overviewHeads(*file);
    EXPECT_EQ(overview.stats.size(), static_cast<std::size_t>(file->layers() * file->heads()));
  }
  std::printf("%d of 3000 mutated archives opened, %d arrays read from the mapping\n", opened,
              readMapped);
  EXPECT_GT(readMapped, 0);
}

}  // namespace
}  // namespace test_formats_npz_mapped
