// .npz archives through libzip (see npz.h for the rules and limits).
#include "formats/npz.h"

#include "core/base/utf8.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <optional>
#include <set>

#include "formats/zip_directory.h"

namespace attn::io {

namespace {

constexpr std::size_t kChunk = 1 << 20;  // inflate 1 MiB at a time

std::string libzipMessage(int code) {
  zip_error_t error;
  zip_error_init_with_code(&error, code);
  std::string text = zip_error_strerror(&error);
  zip_error_fini(&error);
  return text;
}

std::string printable(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, 80)) {
    const auto u = static_cast<unsigned char>(c);
    out += (u >= 0x20 && u != 0x7f) ? c : '?';
  }
  if (text.size() > 80) out += "...";
  return out;
}

// Closes a zip_file_t on every path.
struct EntryFile {
  zip_file_t* file = nullptr;
  ~EntryFile() {
    if (file) zip_fclose(file);
  }
};

}  // namespace

struct NpzArchive::Handle {
  zip_t* archive = nullptr;
  std::vector<std::byte> memory;         // the bytes of an in-memory archive (openMemory)
  std::vector<zip_uint64_t> entryIndex;  // parallel to arrays_
  // An archive opened from a file: the whole file mapped read-only (stored entries are used
  // from it), and its central directory once read (readMapped). Empty otherwise.
  std::span<const std::byte> mapped;
  std::shared_ptr<const void> mappedOwner;
  std::optional<ZipDirectory> directory;
  ~Handle() {
    if (archive) zip_discard(archive);
  }
};

NpzArchive::NpzArchive(NpzArchive&&) noexcept = default;
NpzArchive& NpzArchive::operator=(NpzArchive&&) noexcept = default;
NpzArchive::~NpzArchive() = default;

bool isSafeEntryName(std::string_view name) {
  if (name.empty() || name.front() == '/') return false;
  if (name.size() >= 2 && name[1] == ':') return false;  // "C:..." drive letters
  for (char c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\\' || u < 0x20 || u == 0x7f) return false;
  }
  std::size_t start = 0;
  while (start <= name.size()) {
    std::size_t end = name.find('/', start);
    if (end == std::string_view::npos) end = name.size();
    if (name.substr(start, end - start) == "..") return false;
    start = end + 1;
  }
  return true;
}

const NpzArrayInfo* NpzArchive::find(std::string_view name) const {
  for (const NpzArrayInfo& info : arrays_) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

namespace {
std::atomic<std::uint64_t> archiveOpens{0};
}  // namespace

std::uint64_t npzArchiveOpens() {
  return archiveOpens.load();
}

Expected<NpzArchive> NpzArchive::open(const std::string& path, const NpzLimits& limits) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Error{path, "", "cannot open: no such file"};
  if (!S_ISREG(st.st_mode)) return Error{path, "", "not a regular file"};
  if (st.st_size == 0) return Error{path, "", "empty file (not a readable zip/npz archive)"};
  NpzArchive archive;
  archive.file_ = path;
  archive.limits_ = limits;
  archive.handle_ = std::make_unique<Handle>();
  int code = 0;
  ++archiveOpens;
  archive.handle_->archive = zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &code);
  if (!archive.handle_->archive) {
    return Error{path, "",
                 "not a readable zip/npz archive (truncated or corrupt?): " + libzipMessage(code)};
  }
  // The mapping stored entries are read from. Without it (mmap refused) they are inflated.
  if (const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC); fd >= 0) {
    struct stat mappedStat {};
    if (::fstat(fd, &mappedStat) == 0 && mappedStat.st_size > 0) {
      const auto size = static_cast<std::size_t>(mappedStat.st_size);
      void* bytes = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
      if (bytes != MAP_FAILED) {
        archive.handle_->mapped = {static_cast<const std::byte*>(bytes), size};
        archive.handle_->mappedOwner = std::shared_ptr<const void>(
            bytes, [size](const void* p) { ::munmap(const_cast<void*>(p), size); });
      }
    }
    ::close(fd);
  }
  return finishOpen(std::move(archive));
}

Expected<NpzArchive> NpzArchive::openMemory(std::span<const std::byte> bytes,
                                            const std::string& file, const NpzLimits& limits) {
  if (bytes.empty()) return Error{file, "", "empty file (not a readable zip/npz archive)"};
  NpzArchive archive;
  archive.file_ = file;
  archive.limits_ = limits;
  archive.handle_ = std::make_unique<Handle>();
  archive.handle_->memory.assign(bytes.begin(), bytes.end());
  zip_error_t error;
  zip_error_init(&error);
  const auto& memory = archive.handle_->memory;
  zip_source_t* source =
      zip_source_buffer_create(memory.empty() ? nullptr : memory.data(), memory.size(), 0, &error);
  if (!source) {
    std::string text = zip_error_strerror(&error);
    zip_error_fini(&error);
    return Error{file, "", "cannot read the archive: " + text};
  }
  archive.handle_->archive = zip_open_from_source(source, ZIP_RDONLY | ZIP_CHECKCONS, &error);
  if (!archive.handle_->archive) {
    zip_source_free(source);
    std::string text = zip_error_strerror(&error);
    zip_error_fini(&error);
    return Error{file, "", "not a readable zip/npz archive (truncated or corrupt?): " + text};
  }
  zip_error_fini(&error);
  return finishOpen(std::move(archive));
}

namespace {

// The bytes one entry has produced so far against the uncompressed size its zip header
// declares (`declared` is UINT64_MAX when libzip does not know it).
// The text of a numpy string scalar entry: `head` is the magic, version, length and header
// dict, `data` the bytes after them. '<Un' data is n UTF-32LE code units, '|Sn' n bytes;
// trailing NULs are dropped. Empty when the dict is not that of a string scalar (shape ()).
std::string stringScalar(const std::vector<std::byte>& head, const std::vector<std::byte>& data) {
  std::string dict;
  for (std::byte b : head) dict.push_back(static_cast<char>(b));
  const std::size_t descrKey = dict.find("'descr':");
  const std::size_t shapeKey = dict.find("'shape':");
  if (descrKey == std::string::npos || shapeKey == std::string::npos) return {};
  std::size_t q = dict.find('\'', descrKey + 8);
  const std::size_t qEnd = q == std::string::npos ? q : dict.find('\'', q + 1);
  if (qEnd == std::string::npos) return {};
  const std::string descr = dict.substr(q + 1, qEnd - q - 1);
  std::size_t shape = dict.find('(', shapeKey);
  if (shape == std::string::npos || dict.compare(shape, 2, "()") != 0) return {};
  std::string out;
  if (descr.size() >= 3 && (descr[0] == '<' || descr[0] == '=') && descr[1] == 'U') {
    for (std::size_t i = 0; i + 4 <= data.size(); i += 4) {
      const char32_t c = std::to_integer<char32_t>(data[i]) | (std::to_integer<char32_t>(data[i + 1]) << 8) |
                         (std::to_integer<char32_t>(data[i + 2]) << 16) |
                         (std::to_integer<char32_t>(data[i + 3]) << 24);
      if (c == 0) break;
      if (c > 0x10FFFF) return {};
      appendUtf8(out, c);
    }
  } else if (descr.size() >= 3 && descr[0] == '|' && descr[1] == 'S') {
    for (std::byte b : data) {
      if (b == std::byte{0}) break;
      out.push_back(static_cast<char>(b));
    }
  }
  return out;
}

struct EntryCount {
  std::uint64_t produced = 0;
  std::uint64_t declared = UINT64_MAX;
};

Error sizeMismatch(const std::string& where, const EntryCount& count, const char* produced) {
  return Error{where, "",
               "its data does not match the size its header declares (" +
                   std::to_string(count.declared) + " bytes declared, " + produced +
                   std::to_string(count.produced) + " inflated)"};
}

// Reads up to `want` bytes of an open entry into `out`, counting them in `inflated` against
// `limit` and in `count` against the entry's declared size as they come. Returns the bytes
// read (less than `want` only at the end of the entry), or an error.
Expected<std::uint64_t> readCounted(zip_file_t* entry, std::byte* out, std::uint64_t want,
                                    std::uint64_t& inflated, std::uint64_t limit,
                                    EntryCount& count, const std::string& where) {
  std::uint64_t got = 0;
  while (got < want) {
    const std::uint64_t ask = std::min<std::uint64_t>(kChunk, want - got);
    const zip_int64_t n = zip_fread(entry, out + got, ask);
    if (n < 0) {
      return Error{where, "", std::string("cannot inflate: ") + zip_file_strerror(entry)};
    }
    if (n == 0) break;
    got += static_cast<std::uint64_t>(n);
    inflated += static_cast<std::uint64_t>(n);
    count.produced += static_cast<std::uint64_t>(n);
    if (count.produced > count.declared) return sizeMismatch(where, count, "at least ");
    if (inflated > limit) {
      return Error{where, "",
                   "stopped after inflating " + std::to_string(inflated) +
                       " bytes: above the uncompressed limit of " + std::to_string(limit) +
                       " bytes (zip bomb?)"};
    }
  }
  return got;
}

}  // namespace

Expected<NpzArchive> NpzArchive::finishOpen(NpzArchive archive) {
  zip_t* za = archive.handle_->archive;
  const std::string& file = archive.file_;
  const zip_int64_t count = zip_get_num_entries(za, 0);
  if (count < 0) return Error{file, "", "cannot list the archive"};
  if (static_cast<std::uint64_t>(count) > kNpzMaxEntries) {
    return Error{file, "",
                 "the archive has " + std::to_string(count) + " entries, above the limit of " +
                     std::to_string(kNpzMaxEntries)};
  }
  std::set<std::string, std::less<>> seen;
  for (zip_uint64_t i = 0; i < static_cast<zip_uint64_t>(count); ++i) {
    const char* rawName = zip_get_name(za, i, ZIP_FL_ENC_RAW);
    if (!rawName) return Error{file, "", "cannot read the name of entry " + std::to_string(i)};
    const std::string name = rawName;
    if (!isSafeEntryName(name)) {
      return Error{file, "",
                   "refusing entry '" + printable(name) +
                       "': an absolute or path-traversal name has no place in an .npz"};
    }
    if (!seen.insert(name).second) {
      return Error{file, "", "duplicate entry '" + printable(name) + "'"};
    }
    if (!name.ends_with(".npy")) continue;  // folders, metadata: not arrays
    const std::string where = file + ":" + printable(name);

    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(za, i, 0, &st) != 0) return Error{where, "", "cannot read the entry"};
    if ((st.valid & ZIP_STAT_ENCRYPTION_METHOD) && st.encryption_method != ZIP_EM_NONE) {
      return Error{where, "", "encrypted entries are not supported"};
    }
    if (!(st.valid & ZIP_STAT_COMP_METHOD) ||
        (st.comp_method != ZIP_CM_STORE && st.comp_method != ZIP_CM_DEFLATE)) {
      return Error{where, "",
                   "compression method " + std::to_string(st.comp_method) +
                       " is not supported (stored or deflated only)"};
    }
    // The header: 10 or 12 fixed bytes, then up to kNpyMaxHeaderBytes of dict.
    EntryFile entry{zip_fopen_index(za, i, 0)};
    if (!entry.file) return Error{where, "", std::string("cannot open: ") + zip_strerror(za)};
    EntryCount count;
    if (st.valid & ZIP_STAT_SIZE) count.declared = st.size;
    std::vector<std::byte> head(12);
    Expected<std::uint64_t> got = readCounted(entry.file, head.data(), 12, archive.inflated_,
                                              archive.limits_.maxUncompressedBytes, count, where);
    if (!got) return got.error();
    head.resize(*got);
    if (head.size() >= 10) {
      const bool v1 = std::to_integer<int>(head[6]) == 1;
      std::size_t length =
          std::to_integer<std::size_t>(head[8]) | (std::to_integer<std::size_t>(head[9]) << 8);
      if (!v1 && head.size() == 12) {
        length |= (std::to_integer<std::size_t>(head[10]) << 16) |
                  (std::to_integer<std::size_t>(head[11]) << 24);
      }
      const std::size_t fixed = v1 ? 10 : 12;
      if (length <= kNpyMaxHeaderBytes && head.size() == 12) {
        const std::size_t total = fixed + length;
        const std::size_t before = head.size();
        if (total > before) {
          head.resize(total);
          got = readCounted(entry.file, head.data() + before, total - before, archive.inflated_,
                            archive.limits_.maxUncompressedBytes, count, where);
          if (!got) return got.error();
          head.resize(before + *got);
        }
      }
    }
    Expected<NpyHeader> header = parseNpyHeader(head, where);
    NpzArrayInfo info;
    if (!header) {
      if (header.error().field != "descr") return header.error();
      info.unsupported = header.error().problem;  // a well-formed header of another dtype
      // A small string scalar (np.savez(f, layout="lbhqk")): read whole and kept as text.
      if ((st.valid & ZIP_STAT_SIZE) && st.size <= kNpzMaxTextBytes && st.size > head.size()) {
        std::vector<std::byte> rest(st.size - head.size());
        got = readCounted(entry.file, rest.data(), rest.size(), archive.inflated_,
                          archive.limits_.maxUncompressedBytes, count, where);
        if (!got) return got.error();
        rest.resize(*got);
        info.text = stringScalar(head, rest);
      }
    } else {
      info.header = std::move(header).value();
    }
    info.entryName = name;
    info.name = name.substr(0, name.size() - 4);
    info.compressedSize = (st.valid & ZIP_STAT_COMP_SIZE) ? st.comp_size : 0;
    info.deflated = st.comp_method == ZIP_CM_DEFLATE;
    archive.arrays_.push_back(std::move(info));
    archive.handle_->entryIndex.push_back(i);
  }
  return archive;
}

bool NpzArchive::readsInPlace(std::string_view name) const {
  const NpzArrayInfo* info = find(name);
  return info && info->unsupported.empty() && !info->deflated && !handle_->mapped.empty();
}

Expected<NpyArray> NpzArchive::readMapped(const NpzArrayInfo& info, const std::string& where) {
  // 1 the central directory, once, and this entry's record in it (libzip's index order)
  Handle& handle = *handle_;
  if (!handle.directory) {
    Expected<ZipDirectory> directory = readZipDirectory(handle.mapped, file_, kNpzMaxEntries);
    if (!directory) return directory.error();
    const zip_int64_t listed = zip_get_num_entries(handle.archive, 0);
    if (listed < 0 || static_cast<std::uint64_t>(listed) != directory->entries.size()) {
      return Error{file_, "central directory",
                   std::to_string(directory->entries.size()) + " records, but libzip lists " +
                       std::to_string(listed) + " entries"};
    }
    handle.directory = std::move(directory).value();
  }
  const zip_uint64_t index = handle.entryIndex[static_cast<std::size_t>(&info - arrays_.data())];
  const ZipCentralEntry& entry = handle.directory->entries[index];
  if (entry.name != info.entryName) {
    return Error{where, "central directory",
                 "record " + std::to_string(index) + " is named '" + printable(entry.name) + "'"};
  }
  // 2 the local header gives where the bytes are
  Expected<std::uint64_t> offset = zipStoredDataOffset(handle.mapped, *handle.directory, entry, where);
  if (!offset) return offset.error();
  // 3 the zip's size must be the .npy's (header + data) exactly
  const std::uint64_t expected = info.header.dataOffset + info.header.dataBytes;
  if (entry.compressedSize != expected) {
    return Error{where, "size",
                 "the zip entry holds " + std::to_string(entry.compressedSize) +
                     " bytes but its .npy header says " + std::to_string(info.header.dataOffset) +
                     " + " + std::to_string(info.header.dataBytes) + " = " +
                     std::to_string(expected)};
  }
  Expected<NpyArray> array =
      npyFromBuffer(handle.mapped.subspan(*offset, expected), handle.mappedOwner, where);
  if (!array) return array.error();
  // 4 and the header in the mapping must be the one libzip handed over at open
  const NpyHeader& mappedHeader = array->header;
  if (mappedHeader.dataOffset != info.header.dataOffset ||
      mappedHeader.shape != info.header.shape || mappedHeader.descr() != info.header.descr() ||
      mappedHeader.fortranOrder != info.header.fortranOrder) {
    return Error{where, "header",
                 "the .npy header at the local header's data offset differs from the entry's"};
  }
  array->mapping = handle.mapped;
  return array;
}

Expected<NpyArray> NpzArchive::read(std::string_view name) {
  const NpzArrayInfo* info = find(name);
  if (!info) {
    std::string names;
    for (const NpzArrayInfo& a : arrays_) names += (names.empty() ? "" : ", ") + a.name;
    return Error{file_, "",
                 "no array '" + printable(name) + "' in the archive (arrays: " +
                     (names.empty() ? std::string("none") : names) + ")"};
  }
  const std::string where = file_ + ":" + info->entryName;
  if (!info->unsupported.empty()) return Error{where, "descr", info->unsupported};
  if (readsInPlace(name)) return readMapped(*info, where);
  const std::uint64_t expected = info->header.dataOffset + info->header.dataBytes;
  const std::uint64_t limit = limits_.maxUncompressedBytes;
  // The header's claim is checked first (no point starting), the real bytes while inflating.
  if (expected > limit || inflated_ + expected > limit) {
    return Error{where, "",
                 "the array needs " + std::to_string(expected) +
                     " bytes, above the uncompressed limit of " + std::to_string(limit) +
                     " bytes (" + std::to_string(inflated_) + " already inflated)"};
  }
  const zip_uint64_t index = handle_->entryIndex[static_cast<std::size_t>(info - arrays_.data())];
  EntryCount count;
  zip_stat_t st;
  zip_stat_init(&st);
  if (zip_stat_index(handle_->archive, index, 0, &st) == 0 && (st.valid & ZIP_STAT_SIZE)) {
    count.declared = st.size;
  }
  EntryFile entry{zip_fopen_index(handle_->archive, index, 0)};
  if (!entry.file) {
    return Error{where, "", std::string("cannot open: ") + zip_strerror(handle_->archive)};
  }
  auto buffer = std::shared_ptr<std::byte[]>(new std::byte[std::max<std::uint64_t>(expected, 1)]);
  // Inflation stops as soon as the entry produces more than its zip header declares.
  Expected<std::uint64_t> got =
      readCounted(entry.file, buffer.get(), expected, inflated_, limit, count, where);
  if (!got) return got.error();
  if (*got < expected) {
    return Error{where, "",
                 "the entry holds " + std::to_string(*got) + " bytes but its header says " +
                     std::to_string(expected) + " (truncated entry)"};
  }
  // One more byte: there must be none, and reading to the end makes libzip check the CRC.
  std::byte extra[1];
  got = readCounted(entry.file, extra, 1, inflated_, limit, count, where);
  if (!got) return got.error();
  if (*got != 0) {
    return Error{
        where, "",
        "the entry holds more than the " + std::to_string(expected) + " bytes its header says"};
  }
  // Fewer bytes than the zip header declares (the npy header and the zip header disagree).
  if (count.declared != UINT64_MAX && count.produced != count.declared) {
    return sizeMismatch(where, count, "");
  }
  std::span<const std::byte> bytes(buffer.get(), expected);
  return npyFromBuffer(bytes, std::shared_ptr<const void>(buffer, buffer.get()), where);
}

// =======================================================================================
// Writer
// =======================================================================================

Expected<std::string> writeNpz(std::span<const NpzEntry> entries, bool deflate) {
  std::set<std::string, std::less<>> names;
  for (const NpzEntry& entry : entries) {
    if (!isSafeEntryName(entry.name + ".npy")) {
      return Error{"", "name", "unsafe array name '" + printable(entry.name) + "'"};
    }
    if (!names.insert(entry.name).second) {
      return Error{"", "name", "duplicate array name '" + printable(entry.name) + "'"};
    }
  }
  zip_error_t error;
  zip_error_init(&error);
  auto failWith = [&](const std::string& what) {
    std::string text = what + ": " + zip_error_strerror(&error);
    zip_error_fini(&error);
    return Error{"", "", text};
  };
  zip_source_t* target = zip_source_buffer_create(nullptr, 0, 0, &error);
  if (!target) return failWith("cannot create the archive");
  zip_source_keep(target);
  zip_t* za = zip_open_from_source(target, ZIP_TRUNCATE, &error);
  if (!za) {
    zip_source_free(target);
    return failWith("cannot create the archive");
  }
  for (const NpzEntry& entry : entries) {
    zip_source_t* data = zip_source_buffer(za, entry.npyBytes.data(), entry.npyBytes.size(), 0);
    const std::string entryName = entry.name + ".npy";
    const zip_int64_t index =
        data ? zip_file_add(za, entryName.c_str(), data, ZIP_FL_ENC_UTF_8) : -1;
    if (index < 0) {
      if (data) zip_source_free(data);
      std::string text = zip_strerror(za);
      zip_discard(za);
      zip_source_free(target);
      return Error{"", "", "cannot add '" + entryName + "': " + text};
    }
    zip_set_file_compression(za, static_cast<zip_uint64_t>(index),
                             deflate ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0);
  }
  if (zip_close(za) != 0) {
    std::string text = zip_strerror(za);
    zip_discard(za);
    zip_source_free(target);
    return Error{"", "", "cannot write the archive: " + text};
  }
  std::string out;
  if (zip_source_open(target) != 0) {
    zip_source_free(target);
    return Error{"", "", "cannot read back the archive"};
  }
  zip_source_seek(target, 0, SEEK_END);
  const zip_int64_t size = zip_source_tell(target);
  zip_source_seek(target, 0, SEEK_SET);
  out.resize(size > 0 ? static_cast<std::size_t>(size) : 0);
  const zip_int64_t read = out.empty() ? 0 : zip_source_read(target, out.data(), out.size());
  zip_source_close(target);
  zip_source_free(target);
  zip_error_fini(&error);
  if (read != static_cast<zip_int64_t>(out.size())) {
    return Error{"", "", "cannot read back the archive"};
  }
  return out;
}

}  // namespace attn::io
