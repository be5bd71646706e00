// NumPy .npz archives (np.savez / np.savez_compressed): a zip file of .npy entries, read and
// written with Debian's libzip (no inflate of our own).
//
// Reading rules (docs/import.md):
// - Entries may be stored or deflated; other methods and encrypted entries are errors.
// - Stored entries of an archive opened from a FILE are not copied: the archive is mapped
//   (mmap) and read() points the array into the mapping, at the offset given by the entry's
//   local header (formats/zip_directory.h, read strictly and checked against the central
//   directory and the .npy header). Their CRC-32 is not checked (that would read every byte;
//   docs/import.md), and they inflate nothing, so they do not count against the limit below. Deflated entries, and every entry of an archive in memory, are inflated.
// - An array's name is its entry name without ".npy" (numpy's rule). Entries that do not end
//   in ".npy" and folders are ignored.
// - Any entry name that could escape a folder ("../x.npy", "a/../../x", "/abs.npy",
//   "C:x", a backslash, control characters) makes the whole archive an error. So do duplicate
//   names and more than kNpzMaxEntries entries.
// - Zip bombs: every byte inflated from the archive is counted against
//   NpzLimits::maxUncompressedBytes (2 GiB by default) WHILE inflating, in 1 MiB chunks; the
//   sizes in the zip headers are never trusted. An entry also may not inflate to more than
//   its .npy header says.
// - A truncated or corrupt archive is an error naming the file and what libzip found.
// No GL, no UI.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/types.h"
#include "formats/files.h"
#include "formats/npy.h"

namespace attn::io {

inline constexpr std::uint64_t kNpzDefaultMaxUncompressed = 2ull << 30;  // 2 GiB
inline constexpr std::size_t kNpzMaxEntries = 65536;

struct NpzLimits {
  // Total bytes one NpzArchive may inflate (headers for the listing + arrays read).
  std::uint64_t maxUncompressedBytes = kNpzDefaultMaxUncompressed;
};

// One array of the archive, known from its header alone (the data is not inflated yet).
// Largest string-scalar entry whose text is read at open (NpzArrayInfo::text).
inline constexpr std::uint64_t kNpzMaxTextBytes = 4096;

struct NpzArrayInfo {
  std::string name;       // "layer_0" for the entry "layer_0.npy"
  std::string entryName;  // "layer_0.npy"
  NpyHeader header;
  std::uint64_t compressedSize = 0;
  bool deflated = false;
  // Why the array cannot be read (an unsupported dtype such as a bool mask or a string
  // saved next to the attention), or "" when it can. Such entries are listed, not fatal.
  // Integer arrays (an int64 input_ids, attnscope's token_ids) are read (formats/npy.h).
  std::string unsupported;
  // A numpy string scalar of at most kNpzMaxTextBytes (np.savez(f, layout="lbhqk")): its
  // text as UTF-8 (the entry stays unsupported as an array). Empty otherwise.
  std::string text;
};

// An open archive. Not thread-safe (libzip is not); read what you need, then let it go:
// arrays returned by read() own their bytes and outlive the archive.
class NpzArchive {
 public:
  // Opens `path` and reads the header of every .npy entry (only the first bytes of each entry
  // are inflated). Errors: not a zip / truncated, traversal names, duplicate names, bad
  // headers (naming "FILE:ENTRY"), compression method, the limit.
  static Expected<NpzArchive> open(const std::string& path, const NpzLimits& limits = {});
  // Same, from bytes in memory (copied into the archive object); `file` names it in errors.
  static Expected<NpzArchive> openMemory(std::span<const std::byte> bytes, const std::string& file,
                                         const NpzLimits& limits = {});

  NpzArchive(NpzArchive&&) noexcept;
  NpzArchive& operator=(NpzArchive&&) noexcept;
  ~NpzArchive();

  const std::string& file() const { return file_; }
  // The .npy entries in archive order.
  const std::vector<NpzArrayInfo>& arrays() const { return arrays_; }
  // The array called `name` (without ".npy"), or nullptr.
  const NpzArrayInfo* find(std::string_view name) const;

  // The array `name`: a stored entry of an archive opened from a file points into the
  // archive's mapping (NpyArray::mapping set; nothing inflated); any other entry is inflated
  // into a buffer it owns. Errors: no such array (listing the names), the limit, an entry
  // longer or shorter than its header says, libzip errors (CRC mismatch, truncation); for a
  // mapped entry, a local header or central directory record that disagrees with the other
  // or with the .npy header, or data past the entries (fields "local header", "size",
  // "central directory", "header"; zip_directory.h).
  Expected<NpyArray> read(std::string_view name);
  // True when read(name) will use the archive's file mapping instead of inflating (a stored
  // entry of an archive opened from a file, which costs no memory and no inflate budget).
  bool readsInPlace(std::string_view name) const;

  // Bytes inflated so far (counted against limits.maxUncompressedBytes).
  std::uint64_t bytesInflated() const { return inflated_; }

 private:
  NpzArchive() = default;
  static Expected<NpzArchive> finishOpen(NpzArchive archive);
  // read() of a stored entry of a mapped archive (no copy).
  Expected<NpyArray> readMapped(const NpzArrayInfo& info, const std::string& where);

  struct Handle;
  std::unique_ptr<Handle> handle_;
  std::string file_;
  NpzLimits limits_;
  std::vector<NpzArrayInfo> arrays_;
  std::uint64_t inflated_ = 0;
};

// How many times NpzArchive::open has opened an archive file in this process (every call
// that reached libzip, successful or not). Tests use it to check that a path opens its
// archive once; thread-safe.
std::uint64_t npzArchiveOpens();

// True when `name` is a safe relative entry name (see the rules above).
bool isSafeEntryName(std::string_view name);

// ---------------------------------------------------------------------------------------
// Writer (to memory; the caller writes the bytes with the atomic file writer)
// ---------------------------------------------------------------------------------------

struct NpzEntry {
  std::string name;      // array name; ".npy" is appended
  std::string npyBytes;  // a complete .npy file (writeNpyFloat32 / writeNpyInt64)
};

// A zip archive of the entries, stored (like np.savez) or deflated (like
// np.savez_compressed). Errors (field "name"): an unsafe or duplicate name.
Expected<std::string> writeNpz(std::span<const NpzEntry> entries, bool deflate = false);

// One entry of a streamed archive: the array name (".npy" is appended), its .npy header
// (npyHeaderFloat32, or the first bytes of writeNpy*'s output), the bytes of data after the
// header, and the function that hands exactly those bytes to `write`, in order, in chunks.
// It is called twice (once for the CRC-32, once to write) and must hand the same bytes.
struct NpzStreamEntry {
  std::string name;
  std::string npyHeader;
  std::uint64_t dataBytes = 0;
  std::function<Status(const ChunkWriter& write)> produce;
};

// Writes a stored archive (np.savez's format) of the entries to `path` through
// writeFileStreamed (atomic), holding nothing but the chunk in flight: each entry's CRC-32
// is computed by a first pass of its producer, so the local headers carry the CRC and sizes
// as np.savez writes them. Errors: an unsafe or
// duplicate name (field "name"), an entry of 4 GiB or more (no Zip64), a producer handing
// more or fewer bytes than dataBytes, the writer's errors.
Status writeNpzStreamed(const std::string& path, std::span<const NpzStreamEntry> entries);

}  // namespace attn::io
