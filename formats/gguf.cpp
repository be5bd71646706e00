// GGUF reader (see gguf.h). Every read goes through Cursor, which refuses to step past the
// end of the file; every count is compared with the bytes left before anything is allocated.
#include "formats/gguf.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <map>
#include <utility>

#include "core/models/quant.h"
#include "formats/models/checkpoint.h"  // inQuotes

namespace attn::io {
namespace {

constexpr std::uint32_t kGgufMagic = 0x46554747;  // "GGUF" read as a little-endian u32
constexpr std::uint64_t kHeaderBytes = 24;    // magic, version, two u64 counts

// Bytes of one scalar item; 0 for String and Array.
std::uint64_t scalarBytes(GgufType type) {
  switch (type) {
    case GgufType::U8: case GgufType::I8: case GgufType::Bool: return 1;
    case GgufType::U16: case GgufType::I16: return 2;
    case GgufType::U32: case GgufType::I32: case GgufType::F32: return 4;
    case GgufType::U64: case GgufType::I64: case GgufType::F64: return 8;
    case GgufType::String: case GgufType::Array: return 0;
  }
  return 0;
}

bool knownType(std::uint32_t type) {
  return type <= static_cast<std::uint32_t>(GgufType::F64);
}

// The smallest number of bytes one item of `type` takes in the file: a string is at least
// its u64 length, an array its u32 type and u64 count.
std::uint64_t minItemBytes(GgufType type) {
  if (type == GgufType::String) return 8;
  if (type == GgufType::Array) return 12;
  return scalarBytes(type);
}

template <class T>
T readLe(const std::byte* p) {
  T value;
  std::memcpy(&value, p, sizeof value);  // x86-64 and every target we build are little-endian
  return value;
}

// A bounded reader over the file's bytes. Every method fails (returns false) rather than
// read past `size`.
struct Cursor {
  const std::byte* data;
  std::uint64_t size;
  std::uint64_t at = 0;

  std::uint64_t left() const { return size - at; }
  template <class T>
  bool read(T& out) {
    if (left() < sizeof(T)) return false;
    out = readLe<T>(data + at);
    at += sizeof(T);
    return true;
  }
  bool string(std::string_view& out) {
    std::uint64_t length = 0;
    if (!read(length) || length > left()) return false;
    out = std::string_view(reinterpret_cast<const char*>(data + at), static_cast<std::size_t>(length));
    at += length;
    return true;
  }
};

class Parser {
 public:
  Parser(const std::byte* data, std::uint64_t size, const std::string& name)
      : cursor_{data, size}, name_(name) {}

  Error fail(const std::string& field, const std::string& problem) const {
    return Error{name_, "", field + ": " + problem};
  }

  Status header(std::uint32_t& version, std::uint64_t& tensorCount, std::uint64_t& kvCount) {
    if (cursor_.size < kHeaderBytes) {
      return Error{name_, "", "not a GGUF file: " + std::to_string(cursor_.size) +
                                  " bytes, shorter than the 24-byte header"};
    }
    std::uint32_t magic = 0;
    cursor_.read(magic);
    if (magic != kGgufMagic) return Error{name_, "", "not a GGUF file (its first 4 bytes are not 'GGUF')"};
    cursor_.read(version);
    if (version == 1) {
      return fail("version", "1, the 2023 format with 32-bit counts, is not supported "
                             "(convert the model again with a current llama.cpp)");
    }
    if (version != 2 && version != 3) {
      const bool swapped = (version & 0xFFFFu) == 0 && version != 0;
      return fail("version", std::to_string(version) +
                                 (swapped ? " (a big-endian GGUF file?): only little-endian files "
                                            "of versions 2 and 3 are read"
                                          : ": only versions 2 and 3 are read"));
    }
    cursor_.read(tensorCount);
    cursor_.read(kvCount);
    // Each key/value pair takes at least 13 bytes (an empty key, a type, a u8); each tensor
    // info at least 24 (an empty name, n_dims, type, offset).
    if (kvCount > cursor_.left() / 13) {
      return fail("metadata_kv_count", std::to_string(kvCount) + " key/value pairs cannot fit in the " +
                                           std::to_string(cursor_.left()) + " bytes left");
    }
    if (tensorCount > cursor_.left() / 24) {
      return fail("tensor_count", std::to_string(tensorCount) + " tensors cannot fit in the " +
                                      std::to_string(cursor_.left()) + " bytes left");
    }
    return Ok{};
  }

  Status value(GgufType type, GgufValue& out, const std::string& field, int depth) {
    out.type = type;
    const std::uint64_t at = cursor_.at;
    auto truncated = [&] { return fail(field, "truncated at byte " + std::to_string(at)); };
    switch (type) {
      case GgufType::String:
        if (!cursor_.string(out.string)) return truncated();
        return Ok{};
      case GgufType::Array: {
        std::uint32_t itemType = 0;
        if (!cursor_.read(itemType) || !cursor_.read(out.count)) return truncated();
        if (!knownType(itemType)) {
          return fail(field, "array of unknown value type " + std::to_string(itemType));
        }
        out.itemType = static_cast<GgufType>(itemType);
        if (out.itemType == GgufType::Array && depth + 1 >= kMaxGgufArrayDepth) {
          return fail(field, "arrays nested deeper than " + std::to_string(kMaxGgufArrayDepth));
        }
        const std::uint64_t minBytes = minItemBytes(out.itemType);
        if (out.count > cursor_.left() / minBytes) {
          return fail(field, "array of " + std::to_string(out.count) + " " +
                                 std::string(ggufTypeName(out.itemType)) + " items cannot fit in the " +
                                 std::to_string(cursor_.left()) + " bytes left");
        }
        if (out.itemType == GgufType::String) {
          out.strings.resize(static_cast<std::size_t>(out.count));
          for (auto& item : out.strings) {
            if (!cursor_.string(item)) return fail(field, "truncated in a string item");
          }
        } else if (out.itemType == GgufType::Array) {
          out.arrays.resize(static_cast<std::size_t>(out.count));
          for (auto& item : out.arrays) {
            if (Status s = value(GgufType::Array, item, field, depth + 1); !s) return s;
          }
        } else {
          out.raw = cursor_.data + cursor_.at;
          cursor_.at += out.count * minBytes;  // fits: checked against left() above
          if (out.itemType == GgufType::Bool) {
            for (std::uint64_t i = 0; i < out.count; ++i) {
              if (static_cast<std::uint8_t>(out.raw[i]) > 1) {
                return fail(field, "bool item " + std::to_string(i) + " is neither 0 nor 1");
              }
            }
          }
        }
        return Ok{};
      }
      default: {
        const std::uint64_t bytes = scalarBytes(type);
        if (cursor_.left() < bytes) return truncated();
        const std::byte* p = cursor_.data + cursor_.at;
        cursor_.at += bytes;
        GgufValue scalar;
        scalar.type = GgufType::U8;
        scalar.itemType = type;
        scalar.raw = p;
        scalar.count = 1;
        out.integer = scalar.integerAt(0);
        out.real = scalar.realAt(0);
        if (type == GgufType::U64) out.unsigned64 = readLe<std::uint64_t>(p);
        if (type == GgufType::Bool && out.integer > 1) return fail(field, "a bool that is neither 0 nor 1");
        return Ok{};
      }
    }
  }

  Status metadata(std::uint64_t count, std::vector<GgufKeyValue>& out) {
    out.reserve(static_cast<std::size_t>(count));
    std::map<std::string_view, std::uint64_t> seen;
    for (std::uint64_t i = 0; i < count; ++i) {
      const std::string field = "key " + std::to_string(i);
      std::uint64_t length = 0;
      if (!cursor_.read(length)) return fail(field, "truncated");
      if (length > kMaxGgufKeyBytes || length > cursor_.left()) {
        return fail(field, "length " + std::to_string(length) + " is longer than " +
                               (length > kMaxGgufKeyBytes ? "65535 bytes"
                                                          : "the " + std::to_string(cursor_.left()) +
                                                                " bytes left"));
      }
      std::string_view key(reinterpret_cast<const char*>(cursor_.data + cursor_.at), length);
      cursor_.at += length;
      const std::string named = "key " + inQuotes(key);
      if (seen.count(key)) return fail(named, "appears twice");
      seen[key] = i;
      std::uint32_t type = 0;
      if (!cursor_.read(type)) return fail(named, "truncated before its type");
      if (!knownType(type)) return fail(named, "unknown value type " + std::to_string(type));
      GgufKeyValue kv;
      kv.key = std::string(key);
      if (Status s = value(static_cast<GgufType>(type), kv.value, named, 0); !s) return s;
      out.push_back(std::move(kv));
    }
    return Ok{};
  }

  Status tensorInfos(std::uint64_t count, std::vector<GgufTensorInfo>& out) {
    out.reserve(static_cast<std::size_t>(count));
    for (std::uint64_t i = 0; i < count; ++i) {
      const std::string field = "tensor " + std::to_string(i);
      std::string_view name;
      if (!cursor_.string(name)) return fail(field, "truncated in its name");
      if (name.size() > kMaxGgufNameBytes) {
        return fail(field, "name of " + std::to_string(name.size()) + " bytes (at most 64)");
      }
      GgufTensorInfo info;
      info.name = std::string(name);
      const std::string named = "tensor " + inQuotes(info.name);
      std::uint32_t nDims = 0;
      if (!cursor_.read(nDims)) return fail(named, "truncated");
      if (nDims > kMaxGgufDims) return fail(named, std::to_string(nDims) + " dimensions (at most 4)");
      std::uint64_t product = 1;
      for (std::uint32_t d = 0; d < nDims; ++d) {
        std::uint64_t dim = 0;
        if (!cursor_.read(dim)) return fail(named, "truncated in its dimensions");
        if (dim > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) ||
            (dim != 0 && product > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) / dim)) {
          return fail(named, "dimensions overflow 64 bits");
        }
        product *= dim;
        info.dims.push_back(dim);
      }
      if (!cursor_.read(info.type)) return fail(named, "truncated before its type");
      const model::GgmlTypeInfo* type = model::ggmlTypeInfo(info.type);
      if (!type) return fail(named, "unknown ggml type " + std::to_string(info.type));
      if (!info.dims.empty() && info.dims[0] % static_cast<std::uint64_t>(type->blockSize) != 0) {
        return fail(named, "ne0 = " + std::to_string(info.dims[0]) + " is not a multiple of " +
                               type->name + "'s block of " + std::to_string(type->blockSize));
      }
      info.bytes = product / static_cast<std::uint64_t>(type->blockSize) *
                   static_cast<std::uint64_t>(type->blockBytes);
      if (type->blockBytes != 0 &&
          product / static_cast<std::uint64_t>(type->blockSize) > cursor_.size / static_cast<std::uint64_t>(type->blockBytes)) {
        return fail(named, info.dimsText() + " " + type->name + " needs more bytes than the file's " +
                               std::to_string(cursor_.size));
      }
      if (!cursor_.read(info.offset)) return fail(named, "truncated before its offset");
      out.push_back(std::move(info));
    }
    return Ok{};
  }

  Cursor& cursor() { return cursor_; }

 private:
  Cursor cursor_;
  const std::string& name_;
};

}  // namespace

std::string_view ggufTypeName(GgufType type) {
  static constexpr std::string_view kNames[] = {"u8",  "i8",  "u16",  "i16",    "u32",   "i32", "f32",
                                                "bool", "string", "array", "u64", "i64", "f64"};
  const auto index = static_cast<std::uint32_t>(type);
  return index < std::size(kNames) ? kNames[index] : "unknown";
}

bool GgufValue::isInteger() const {
  switch (type) {
    case GgufType::U8: case GgufType::I8: case GgufType::U16: case GgufType::I16:
    case GgufType::U32: case GgufType::I32: case GgufType::U64: case GgufType::I64:
      return true;
    default:
      return false;
  }
}

std::int64_t GgufValue::integerAt(std::uint64_t i) const {
  const std::byte* p = raw + i * scalarBytes(itemType);
  switch (itemType) {
    case GgufType::U8: case GgufType::Bool: return readLe<std::uint8_t>(p);
    case GgufType::I8: return readLe<std::int8_t>(p);
    case GgufType::U16: return readLe<std::uint16_t>(p);
    case GgufType::I16: return readLe<std::int16_t>(p);
    case GgufType::U32: return readLe<std::uint32_t>(p);
    case GgufType::I32: return readLe<std::int32_t>(p);
    case GgufType::U64: {
      const auto v = readLe<std::uint64_t>(p);
      return v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())
                 ? std::numeric_limits<std::int64_t>::max()
                 : static_cast<std::int64_t>(v);
    }
    case GgufType::I64: return readLe<std::int64_t>(p);
    case GgufType::F32: return static_cast<std::int64_t>(0);
    case GgufType::F64: return static_cast<std::int64_t>(0);
    default: return 0;
  }
}

double GgufValue::realAt(std::uint64_t i) const {
  const std::byte* p = raw + i * scalarBytes(itemType);
  switch (itemType) {
    case GgufType::F32: return readLe<float>(p);
    case GgufType::F64: return readLe<double>(p);
    case GgufType::U64: return static_cast<double>(readLe<std::uint64_t>(p));
    default: return static_cast<double>(integerAt(i));
  }
}

std::uint64_t GgufTensorInfo::elementCount() const {
  std::uint64_t count = 1;
  for (std::uint64_t d : dims) count *= d;  // bounded in open()
  return count;
}

std::string GgufTensorInfo::dimsText() const {
  std::string out = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) out += (i ? ", " : "") + std::to_string(dims[i]);
  return out + "]";
}

Expected<GgufFile> parseGguf(std::span<const std::byte> data, const std::string& name) {
  GgufFile file;
  file.path_ = name;
  file.map_ = data.data();
  file.size_ = data.size();
  file.owned_ = false;
  if (Status s = file.parse(); !s) {
    file.map_ = nullptr;
    return s.error();
  }
  return file;
}

Status GgufFile::parse() {
  Parser parser(map_, size_, path_);
  std::uint64_t tensorCount = 0, kvCount = 0;
  if (Status s = parser.header(version_, tensorCount, kvCount); !s) return s;
  if (Status s = parser.metadata(kvCount, metadata_); !s) return s;
  // general.alignment: a u32, a nonzero multiple of 8 (the GGUF specification, gguf.md in
  // the ggml repository); a power of two, too,
  // so that every offset that is a multiple of it is aligned for its type.
  if (const GgufValue* a = find("general.alignment")) {
    if (a->type != GgufType::U32 || a->integer == 0 || a->integer % 8 != 0 ||
        (a->integer & (a->integer - 1)) != 0 || a->integer > (1 << 20)) {
      return parser.fail("key 'general.alignment'",
                         "must be a u32 power of two, a multiple of 8 (got " +
                             std::string(ggufTypeName(a->type)) + " " + std::to_string(a->integer) + ")");
    }
    alignment_ = static_cast<std::uint32_t>(a->integer);
  }
  if (Status s = parser.tensorInfos(tensorCount, tensors_); !s) return s;
  // The data section starts at the next multiple of the alignment.
  const std::uint64_t end = parser.cursor().at;
  dataOffset_ = (end + alignment_ - 1) / alignment_ * alignment_;
  const std::uint64_t dataBytes = dataOffset_ <= size_ ? size_ - dataOffset_ : 0;
  for (GgufTensorInfo& t : tensors_) {
    const std::string named = "tensor " + inQuotes(t.name);
    if (t.offset % alignment_ != 0) {
      return parser.fail(named, "offset " + std::to_string(t.offset) + " is not a multiple of the alignment " +
                                    std::to_string(alignment_));
    }
    if (t.offset > dataBytes || t.bytes > dataBytes - t.offset) {
      return parser.fail(named, "data [" + std::to_string(t.offset) + ", +" + std::to_string(t.bytes) +
                                    ") lies past the end of the data section (" +
                                    std::to_string(dataBytes) + " bytes)");
    }
    t.offset += dataOffset_;
  }
  // No two tensors share a name or a byte.
  std::vector<const GgufTensorInfo*> byOffset;
  for (const GgufTensorInfo& t : tensors_) byOffset.push_back(&t);
  std::sort(byOffset.begin(), byOffset.end(), [](auto* a, auto* b) {
    return a->offset != b->offset ? a->offset < b->offset : a->name < b->name;
  });
  for (std::size_t i = 1; i < byOffset.size(); ++i) {
    const GgufTensorInfo& a = *byOffset[i - 1];
    const GgufTensorInfo& b = *byOffset[i];
    if (b.offset < a.offset + a.bytes) {
      return parser.fail("tensor " + inQuotes(b.name), "data overlaps tensor " + inQuotes(a.name));
    }
  }
  std::vector<std::string_view> names;
  for (const GgufTensorInfo& t : tensors_) names.push_back(t.name);
  std::sort(names.begin(), names.end());
  if (auto twice = std::adjacent_find(names.begin(), names.end()); twice != names.end()) {
    return parser.fail("tensor " + inQuotes(*twice), "appears twice");
  }
  return Ok{};
}

Expected<GgufFile> GgufFile::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error{path, "", std::string("cannot open: ") + std::strerror(errno)};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Error{path, "", "not a regular file"};
  }
  const auto fileSize = static_cast<std::uint64_t>(st.st_size);
  if (fileSize < kHeaderBytes) {
    ::close(fd);
    return Error{path, "", "not a GGUF file: " + std::to_string(fileSize) +
                               " bytes, shorter than the 24-byte header"};
  }
  void* mapped = ::mmap(nullptr, fileSize, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (mapped == MAP_FAILED) return Error{path, "", std::string("cannot map: ") + std::strerror(errno)};
  GgufFile file;
  file.path_ = path;
  file.map_ = static_cast<const std::byte*>(mapped);
  file.size_ = fileSize;
  file.owned_ = true;
  if (Status s = file.parse(); !s) return s.error();  // ~GgufFile unmaps
  return file;
}

GgufFile::GgufFile(GgufFile&& other) noexcept { *this = std::move(other); }

GgufFile& GgufFile::operator=(GgufFile&& other) noexcept {
  if (this != &other) {
    if (map_ && owned_) ::munmap(const_cast<std::byte*>(map_), size_);
    path_ = std::move(other.path_);
    map_ = std::exchange(other.map_, nullptr);
    size_ = std::exchange(other.size_, 0);
    owned_ = other.owned_;
    version_ = other.version_;
    alignment_ = other.alignment_;
    dataOffset_ = other.dataOffset_;
    metadata_ = std::move(other.metadata_);
    tensors_ = std::move(other.tensors_);
  }
  return *this;
}

GgufFile::~GgufFile() {
  if (map_ && owned_) ::munmap(const_cast<std::byte*>(map_), size_);
}

const GgufValue* GgufFile::find(std::string_view key) const {
  for (const GgufKeyValue& kv : metadata_)
    if (kv.key == key) return &kv.value;
  return nullptr;
}

const GgufTensorInfo* GgufFile::findTensor(std::string_view name) const {
  for (const GgufTensorInfo& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

std::span<const std::byte> GgufFile::bytes(const GgufTensorInfo& tensor) const {
  return {map_ + tensor.offset, static_cast<std::size_t>(tensor.bytes)};
}

Expected<std::optional<std::string>> GgufFile::getString(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::optional<std::string>();
  if (v->type != GgufType::String) {
    return Error{path_, "", "key '" + std::string(key) + "': a " +
                                std::string(ggufTypeName(v->type)) + ", expected a string"};
  }
  return std::optional<std::string>(std::string(v->string));
}

Expected<std::optional<std::int64_t>> GgufFile::getInteger(std::string_view key, std::int64_t min,
                                                           std::int64_t max) const {
  const GgufValue* v = find(key);
  if (!v) return std::optional<std::int64_t>();
  if (!v->isInteger()) {
    return Error{path_, "", "key '" + std::string(key) + "': a " +
                                std::string(ggufTypeName(v->type)) + ", expected an integer"};
  }
  const bool huge = v->type == GgufType::U64 &&
                    v->unsigned64 > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  if (huge || v->integer < min || v->integer > max) {
    return Error{path_, "", "key '" + std::string(key) + "': " +
                                (huge ? std::to_string(v->unsigned64) : std::to_string(v->integer)) +
                                " is outside [" + std::to_string(min) + ", " + std::to_string(max) + "]"};
  }
  return std::optional<std::int64_t>(v->integer);
}

Expected<std::optional<double>> GgufFile::getReal(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::optional<double>();
  if (!v->isInteger() && v->type != GgufType::F32 && v->type != GgufType::F64) {
    return Error{path_, "", "key '" + std::string(key) + "': a " +
                                std::string(ggufTypeName(v->type)) + ", expected a number"};
  }
  return std::optional<double>(v->real);
}

Expected<std::optional<bool>> GgufFile::getBool(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::optional<bool>();
  if (v->type != GgufType::Bool) {
    return Error{path_, "", "key '" + std::string(key) + "': a " +
                                std::string(ggufTypeName(v->type)) + ", expected a bool"};
  }
  return std::optional<bool>(v->integer != 0);
}

}  // namespace attn::io
