// The zip central directory and local headers, read strictly from the bytes of a mapped
// archive, for one purpose: finding where a STORED (method 0) entry's bytes lie in the file,
// so that an .npz written by np.savez can be used from the mapping instead of being copied
// out through libzip (formats/npz.cpp). libzip still opens, lists and checks the archive and
// inflates deflated entries; it does not say where an entry's data starts, hence this file.
//
// Format (PKWARE APPNOTE 4.3.6 / 4.3.7 / 4.3.12 / 4.3.14 / 4.5.3): the end of central
// directory record (signature PK\5\6, at most 65535 bytes of comment after it), with the
// Zip64 locator and record (PK\6\7, PK\6\6) when a field is saturated; then one central
// directory record (PK\1\2) per entry, whose 0xFFFFFFFF sizes and offset are in its Zip64
// extra field (id 0x0001); each entry's data follows its local header (PK\3\4) + name + extra.
// Every offset and length is checked against the file before it is used. No GL, no UI.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/base/types.h"

namespace attn::io {

// One central directory record, as the directory states it.
struct ZipCentralEntry {
  std::string name;  // raw bytes of the name
  std::uint16_t flags = 0, method = 0;
  std::uint32_t crc = 0;
  std::uint64_t compressedSize = 0, uncompressedSize = 0;
  std::uint64_t localHeaderOffset = 0;
};

struct ZipDirectory {
  std::vector<ZipCentralEntry> entries;  // in directory order (libzip's indices)
  std::uint64_t directoryOffset = 0;     // where the central directory starts
};

// Reads the central directory of the archive `file` (all of its bytes). `where` names the
// archive in errors. Errors (field "central directory"): no end record, offsets or lengths
// past the end, a bad record signature, more than `maxEntries` records.
Expected<ZipDirectory> readZipDirectory(std::span<const std::byte> file, const std::string& where,
                                        std::size_t maxEntries);

// The byte offset in `file` of a stored entry's data, from its local header, checked against
// the central directory record `entry`: signature, method 0 on both, no encryption, the same
// name, the same CRC and sizes (from the Zip64 extra when the 32-bit fields are 0xFFFFFFFF;
// not when flag bit 3 defers them to a data descriptor), equal compressed and uncompressed
// sizes, and data that ends before the central directory. `where` is "FILE:ENTRY".
// Errors (field "local header" or "size") say which field disagrees and both values.
Expected<std::uint64_t> zipStoredDataOffset(std::span<const std::byte> file,
                                            const ZipDirectory& directory,
                                            const ZipCentralEntry& entry, const std::string& where);

}  // namespace attn::io
