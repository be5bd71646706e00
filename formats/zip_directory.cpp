// Strict reading of a zip's central directory and local headers (see zip_directory.h).
#include "formats/zip_directory.h"

#include <algorithm>
#include <optional>

namespace attn::io {

namespace {

constexpr std::uint32_t kEndSignature = 0x06054b50;         // PK\5\6
constexpr std::uint32_t kZip64LocatorSignature = 0x07064b50;  // PK\6\7
constexpr std::uint32_t kZip64EndSignature = 0x06064b50;      // PK\6\6
constexpr std::uint32_t kCentralSignature = 0x02014b50;       // PK\1\2
constexpr std::uint32_t kLocalSignature = 0x04034b50;         // PK\3\4
constexpr std::uint32_t kSaturated32 = 0xFFFFFFFFu;
constexpr std::uint16_t kZip64ExtraId = 0x0001;

// Little-endian reads at `at`; the caller has checked `at + N <= bytes.size()`.
std::uint64_t le(std::span<const std::byte> bytes, std::uint64_t at, int n) {
  std::uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | std::to_integer<std::uint64_t>(bytes[at + i]);
  return v;
}

bool fits(std::span<const std::byte> bytes, std::uint64_t at, std::uint64_t length) {
  return at <= bytes.size() && length <= bytes.size() - at;
}

// The Zip64 extra field (id 0x0001) in extra[0..length): the 8-byte values for the fields
// that are saturated, in the order uncompressed, compressed, offset. nullopt when the field
// is malformed or shorter than needed; the values not asked for are left as they are.
std::optional<bool> readZip64Extra(std::span<const std::byte> bytes, std::uint64_t extra,
                                   std::uint64_t length, std::uint64_t* uncompressed,
                                   std::uint64_t* compressed, std::uint64_t* offset) {
  std::uint64_t at = extra;
  const std::uint64_t end = extra + length;
  while (at + 4 <= end) {
    const auto id = static_cast<std::uint16_t>(le(bytes, at, 2));
    const std::uint64_t size = le(bytes, at + 2, 2);
    if (at + 4 + size > end) return std::nullopt;
    if (id == kZip64ExtraId) {
      std::uint64_t p = at + 4;
      for (std::uint64_t* field : {uncompressed, compressed, offset}) {
        if (!field) continue;
        if (p + 8 > at + 4 + size) return std::nullopt;
        *field = le(bytes, p, 8);
        p += 8;
      }
      return true;
    }
    at += 4 + size;
  }
  return (uncompressed || compressed || offset) ? std::nullopt : std::optional<bool>(false);
}

Error directoryError(const std::string& where, const std::string& problem) {
  return Error{where, "central directory", problem};
}

}  // namespace

Expected<ZipDirectory> readZipDirectory(std::span<const std::byte> file, const std::string& where,
                                        std::size_t maxEntries) {
  // 1 the end of central directory record: the last PK\5\6 whose comment ends the file
  if (file.size() < 22) return directoryError(where, "the file is too short for a zip archive");
  std::optional<std::uint64_t> end;
  const std::uint64_t lowest = file.size() >= 22 + 65535 ? file.size() - 22 - 65535 : 0;
  for (std::uint64_t at = file.size() - 22 + 1; at-- > lowest;) {
    if (le(file, at, 4) == kEndSignature && at + 22 + le(file, at + 20, 2) == file.size()) {
      end = at;
      break;
    }
  }
  if (!end) return directoryError(where, "no end of central directory record");
  std::uint64_t count = le(file, *end + 10, 2);
  std::uint64_t size = le(file, *end + 12, 4);
  std::uint64_t offset = le(file, *end + 16, 4);
  // 2 Zip64: the locator sits just before the end record
  if (count == 0xFFFF || size == kSaturated32 || offset == kSaturated32) {
    if (*end < 20 || le(file, *end - 20, 4) != kZip64LocatorSignature) {
      return directoryError(where, "a saturated end record without a Zip64 locator");
    }
    const std::uint64_t record = le(file, *end - 20 + 8, 8);
    if (!fits(file, record, 56) || le(file, record, 4) != kZip64EndSignature) {
      return directoryError(where, "the Zip64 end record is missing or out of the file");
    }
    count = le(file, record + 32, 8);
    size = le(file, record + 40, 8);
    offset = le(file, record + 48, 8);
  }
  if (count > maxEntries) {
    return directoryError(where, std::to_string(count) + " entries, above the limit of " +
                                     std::to_string(maxEntries));
  }
  if (!fits(file, offset, size)) {
    return directoryError(where, "the directory (" + std::to_string(size) + " bytes at " +
                                     std::to_string(offset) + ") runs past the end of the file");
  }
  // 3 the records
  ZipDirectory directory;
  directory.directoryOffset = offset;
  directory.entries.reserve(static_cast<std::size_t>(count));
  std::uint64_t at = offset;
  const std::uint64_t limit = offset + size;
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::string record = "record " + std::to_string(i);
    if (at + 46 > limit || le(file, at, 4) != kCentralSignature) {
      return directoryError(where, record + " is not a central directory record");
    }
    ZipCentralEntry entry;
    entry.flags = static_cast<std::uint16_t>(le(file, at + 8, 2));
    entry.method = static_cast<std::uint16_t>(le(file, at + 10, 2));
    entry.crc = static_cast<std::uint32_t>(le(file, at + 16, 4));
    entry.compressedSize = le(file, at + 20, 4);
    entry.uncompressedSize = le(file, at + 24, 4);
    const std::uint64_t nameLength = le(file, at + 28, 2);
    const std::uint64_t extraLength = le(file, at + 30, 2);
    const std::uint64_t commentLength = le(file, at + 32, 2);
    entry.localHeaderOffset = le(file, at + 42, 4);
    const std::uint64_t next = at + 46 + nameLength + extraLength + commentLength;
    if (next > limit) return directoryError(where, record + " runs past the directory");
    entry.name.assign(reinterpret_cast<const char*>(file.data() + at + 46), nameLength);
    const bool bigU = entry.uncompressedSize == kSaturated32;
    const bool bigC = entry.compressedSize == kSaturated32;
    const bool bigO = entry.localHeaderOffset == kSaturated32;
    if (bigU || bigC || bigO) {
      const auto found = readZip64Extra(file, at + 46 + nameLength, extraLength,
                                        bigU ? &entry.uncompressedSize : nullptr,
                                        bigC ? &entry.compressedSize : nullptr,
                                        bigO ? &entry.localHeaderOffset : nullptr);
      if (!found || !*found) {
        return directoryError(where, record + " ('" + entry.name +
                                         "') has saturated sizes without a valid Zip64 extra field");
      }
    }
    directory.entries.push_back(std::move(entry));
    at = next;
  }
  return directory;
}

Expected<std::uint64_t> zipStoredDataOffset(std::span<const std::byte> file,
                                            const ZipDirectory& directory,
                                            const ZipCentralEntry& entry, const std::string& where) {
  auto local = [&](const std::string& problem) { return Error{where, "local header", problem}; };
  const std::uint64_t at = entry.localHeaderOffset;
  if (!fits(file, at, 30) || at + 30 > directory.directoryOffset) {
    return local("the local header at byte " + std::to_string(at) +
                 " lies past the entries (file of " + std::to_string(file.size()) + " bytes)");
  }
  if (le(file, at, 4) != kLocalSignature) {
    return local("no local header signature at byte " + std::to_string(at));
  }
  const auto flags = static_cast<std::uint16_t>(le(file, at + 6, 2));
  const auto method = static_cast<std::uint16_t>(le(file, at + 8, 2));
  if ((flags & 1u) || (entry.flags & 1u)) return local("the entry is encrypted");
  if (method != 0 || entry.method != 0) {
    return local("compression method " + std::to_string(method) + " in the local header and " +
                 std::to_string(entry.method) + " in the central directory; stored (0) expected");
  }
  const std::uint64_t nameLength = le(file, at + 26, 2);
  const std::uint64_t extraLength = le(file, at + 28, 2);
  const std::uint64_t data = at + 30 + nameLength + extraLength;
  if (data > file.size()) return local("the name and extra field run past the end of the file");
  const std::string_view name(reinterpret_cast<const char*>(file.data() + at + 30), nameLength);
  if (name != entry.name) {
    return local("the name differs from the central directory's ('" + std::string(name) + "')");
  }
  // Bit 3: the CRC and sizes are in a data descriptor after the data; the directory's are used.
  if (!(flags & 8u)) {
    const auto crc = static_cast<std::uint32_t>(le(file, at + 14, 4));
    if (crc != entry.crc) {
      return local("CRC-32 " + std::to_string(crc) + " differs from the central directory's " +
                   std::to_string(entry.crc));
    }
    std::uint64_t compressed = le(file, at + 18, 4);
    std::uint64_t uncompressed = le(file, at + 22, 4);
    const bool bigU = uncompressed == kSaturated32, bigC = compressed == kSaturated32;
    if (bigU || bigC) {
      const auto found = readZip64Extra(file, at + 30 + nameLength, extraLength,
                                        bigU ? &uncompressed : nullptr,
                                        bigC ? &compressed : nullptr, nullptr);
      if (!found || !*found) return local("saturated sizes without a valid Zip64 extra field");
    }
    if (compressed != entry.compressedSize || uncompressed != entry.uncompressedSize) {
      return Error{where, "size",
                   "the local header says " + std::to_string(compressed) + " bytes stored, " +
                       std::to_string(uncompressed) + " uncompressed; the central directory " +
                       std::to_string(entry.compressedSize) + " and " +
                       std::to_string(entry.uncompressedSize)};
    }
  }
  if (entry.compressedSize != entry.uncompressedSize) {
    return Error{where, "size",
                 "a stored entry of " + std::to_string(entry.compressedSize) +
                     " bytes declares " + std::to_string(entry.uncompressedSize) +
                     " uncompressed bytes"};
  }
  if (!fits(file, data, entry.compressedSize) ||
      data + entry.compressedSize > directory.directoryOffset) {
    return Error{where, "size",
                 "the entry's " + std::to_string(entry.compressedSize) + " bytes from byte " +
                     std::to_string(data) + " run past the end of the entries (file of " +
                     std::to_string(file.size()) + " bytes, directory at " +
                     std::to_string(directory.directoryOffset) + ")"};
  }
  return data;
}

}  // namespace attn::io
