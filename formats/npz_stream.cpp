// The streamed .npz writer (see writeNpzStreamed in npz.h): a stored zip written by hand,
// one chunk at a time, with zlib's CRC-32.
#include <zlib.h>

#include <set>

#include "formats/npz.h"

namespace attn::io {
namespace {

void put16(std::string& out, std::uint32_t v) {
  out += static_cast<char>(v & 0xff);
  out += static_cast<char>((v >> 8) & 0xff);
}
void put32(std::string& out, std::uint32_t v) {
  put16(out, v & 0xffff);
  put16(out, v >> 16);
}

constexpr std::uint32_t kDosDate = (0u << 9) | (1u << 5) | 1u;  // 1980-01-01, zip's epoch
constexpr std::uint16_t kFlags = 1u << 11;                      // UTF-8 name

struct Written {
  std::string name;
  std::uint32_t crc = 0;
  std::uint32_t size = 0;
  std::uint32_t offset = 0;
};

}  // namespace

Status writeNpzStreamed(const std::string& path, std::span<const NpzStreamEntry> entries) {
  std::set<std::string, std::less<>> names;
  for (const NpzStreamEntry& entry : entries) {
    if (!isSafeEntryName(entry.name + ".npy"))
      return Error{path, "name", "unsafe array name '" + entry.name + "'"};
    if (!names.insert(entry.name).second)
      return Error{path, "name", "duplicate array name '" + entry.name + "'"};
    if (entry.npyHeader.size() + entry.dataBytes >= 0xFFFFFFFFull)
      return Error{path, "", "array '" + entry.name + "' is 4 GiB or more (no Zip64 here)"};
  }
  return writeFileStreamed(path, [&](const ChunkWriter& write) -> Status {
    std::uint64_t offset = 0;
    std::vector<Written> written;
    auto emit = [&](std::string_view bytes) -> Status {
      offset += bytes.size();
      return write(bytes);
    };
    for (const NpzStreamEntry& entry : entries) {
      Written w;
      w.name = entry.name + ".npy";
      w.offset = static_cast<std::uint32_t>(offset);
      if (offset >= 0xFFFFFFFFull) return Error{path, "", "the archive passes 4 GiB (no Zip64 here)"};
      // 1 the CRC-32 of the .npy: a first pass of the producer, nothing written
      uLong crc = crc32(0L, Z_NULL, 0);
      std::uint64_t size = 0;
      auto checksum = [&](std::string_view chunk) -> Status {
        crc = crc32_z(crc, reinterpret_cast<const Bytef*>(chunk.data()), chunk.size());
        size += chunk.size();
        return Ok{};
      };
      if (Status s = checksum(entry.npyHeader); !s) return s;
      if (Status s = entry.produce(checksum); !s) return s;
      if (size != entry.npyHeader.size() + entry.dataBytes) {
        return Error{path, "", "array '" + entry.name + "': " + std::to_string(size - entry.npyHeader.size()) +
                                   " bytes of data, " + std::to_string(entry.dataBytes) + " declared"};
      }
      w.crc = static_cast<std::uint32_t>(crc);
      w.size = static_cast<std::uint32_t>(size);
      // 2 local header, with the CRC and sizes (no data descriptor: simple readers work)
      std::string header;
      put32(header, 0x04034b50);
      put16(header, 20);  // version needed: 2.0
      put16(header, kFlags);
      put16(header, 0);  // stored
      put16(header, 0);  // time
      put16(header, kDosDate);
      put32(header, w.crc);
      put32(header, w.size);
      put32(header, w.size);
      put16(header, static_cast<std::uint32_t>(w.name.size()));
      put16(header, 0);
      header += w.name;
      if (Status s = emit(header); !s) return s;
      // 3 the .npy: header, then the producer's chunks again
      std::uint64_t again = entry.npyHeader.size();
      if (Status s = emit(entry.npyHeader); !s) return s;
      Status produced = entry.produce([&](std::string_view chunk) -> Status {
        again += chunk.size();
        return emit(chunk);
      });
      if (!produced) return produced;
      if (again != size) return Error{path, "", "array '" + entry.name + "': the producer changed its data"};
      written.push_back(std::move(w));
    }
    // 4 central directory and its end record
    const std::uint64_t directoryStart = offset;
    std::string directory;
    for (const Written& w : written) {
      put32(directory, 0x02014b50);
      put16(directory, 20);  // made by: MS-DOS / 2.0 (no Unix attributes)
      put16(directory, 20);
      put16(directory, kFlags);
      put16(directory, 0);
      put16(directory, 0);
      put16(directory, kDosDate);
      put32(directory, w.crc);
      put32(directory, w.size);
      put32(directory, w.size);
      put16(directory, static_cast<std::uint32_t>(w.name.size()));
      put16(directory, 0);  // extra
      put16(directory, 0);  // comment
      put16(directory, 0);  // disk
      put16(directory, 0);  // internal attributes
      put32(directory, 0);  // external attributes
      put32(directory, w.offset);
      directory += w.name;
    }
    if (directoryStart + directory.size() >= 0xFFFFFFFFull)
      return Error{path, "", "the archive passes 4 GiB (no Zip64 here)"};
    put32(directory, 0x06054b50);
    put16(directory, 0);
    put16(directory, 0);
    put16(directory, static_cast<std::uint32_t>(written.size()));
    put16(directory, static_cast<std::uint32_t>(written.size()));
    put32(directory, static_cast<std::uint32_t>(directory.size() - 0));  // placeholder, fixed below
    put32(directory, static_cast<std::uint32_t>(directoryStart));
    put16(directory, 0);
    // The directory's size excludes its 22-byte end record.
    const std::uint32_t directorySize = static_cast<std::uint32_t>(directory.size() - 22);
    for (int i = 0; i < 4; ++i)
      directory[directory.size() - 22 + 12 + static_cast<std::size_t>(i)] =
          static_cast<char>((directorySize >> (8 * i)) & 0xff);
    return emit(directory);
  });
}

}  // namespace attn::io
