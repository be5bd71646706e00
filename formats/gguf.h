// A strict reader for GGUF files (llama.cpp / ggml; the GGUF specification, gguf.md in
// the ggml repository), versions 2 and 3, little-endian, over a read-only memory map. The
// tensor data are never copied: a tensor's bytes are a span of the mapping.
//
// Layout: "GGUF", u32 version, u64 tensor count, u64 key/value count; the key/value pairs
// (a string key, a u32 value type, the value); the tensor infos (name, u32 n_dims, n_dims
// u64 dims with ne0 innermost, u32 ggml type, u64 offset relative to the data section);
// padding to `general.alignment` (default 32); the data section. Strings are a u64 length
// and that many bytes; an array is a u32 item type, a u64 count and the items (arrays of
// arrays included).
//
// open() checks every count, length, offset, dimension product and type against the file
// size BEFORE using it, so a hostile file is refused quickly and with little memory: a count
// larger than the bytes left could hold, a key of 2^60 bytes, nesting deeper than
// kMaxGgufArrayDepth, dims whose product overflows, an unknown value or tensor type, a
// tensor whose bytes lie outside the data section, overlap another's or are misaligned.
// Errors name the file and the field ("tensor_count", "key 'general.alignment'", "tensor
// 'blk.0.attn_q.weight'"...).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/types.h"

namespace attn::io {

inline constexpr int kMaxGgufArrayDepth = 8;   // arrays of arrays of ...
inline constexpr int kMaxGgufDims = 4;         // GGML_MAX_DIMS
inline constexpr std::size_t kMaxGgufNameBytes = 64;  // GGML_MAX_NAME, a tensor name's limit
inline constexpr std::uint64_t kMaxGgufKeyBytes = 65535;

// gguf_metadata_value_type.
enum class GgufType : std::uint32_t {
  U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, Bool = 7, String = 8,
  Array = 9, U64 = 10, I64 = 11, F64 = 12,
};
// "u8", "string", "array", ...
std::string_view ggufTypeName(GgufType type);

// One metadata value. Scalars are kept widened (integers in `integer` / `unsigned64`, floats
// in `real`); a string is a view into the mapping; an array of scalars keeps its items in the
// mapping (`raw`, read with the *At accessors), an array of strings their views, an array of
// arrays the nested values.
struct GgufValue {
  GgufType type = GgufType::U8;
  std::int64_t integer = 0;        // every integer type and bool (u64 above 2^63-1: see unsigned64)
  std::uint64_t unsigned64 = 0;    // U64 exactly
  double real = 0;                 // F32, F64 (and every integer type, converted)
  std::string_view string;         // String
  // Array:
  GgufType itemType = GgufType::U8;
  std::uint64_t count = 0;
  const std::byte* raw = nullptr;           // scalar items, little-endian, packed
  std::vector<std::string_view> strings;    // String items
  std::vector<GgufValue> arrays;            // Array items

  bool isInteger() const;  // any integer type (not bool)
  // Item i of a scalar array as a double / an integer (count checked by the caller).
  double realAt(std::uint64_t i) const;
  std::int64_t integerAt(std::uint64_t i) const;
};

struct GgufKeyValue {
  std::string key;
  GgufValue value;
};

struct GgufTensorInfo {
  std::string name;
  std::vector<std::uint64_t> dims;  // ggml order: dims[0] = ne0, the innermost (contiguous)
  std::uint32_t type = 0;           // ggml type (core/models/quant.h)
  std::uint64_t offset = 0;         // absolute byte offset in the file
  std::uint64_t bytes = 0;          // the data's size
  std::uint64_t elementCount() const;
  std::string dimsText() const;     // "[576, 49152]" (ggml order)
};

class GgufFile;
// Parses a GGUF image already in memory (no file; `name` is used in errors): the same
// checks as GgufFile::open(). The returned file views `data`, which must outlive it. For the
// fuzzer and tests.
Expected<GgufFile> parseGguf(std::span<const std::byte> data, const std::string& name);

// An open GGUF file. Move-only; unmaps on destruction.
class GgufFile {
 public:
  // Maps and validates `path` (see the header comment for what is checked).
  static Expected<GgufFile> open(const std::string& path);

  GgufFile(GgufFile&& other) noexcept;
  GgufFile& operator=(GgufFile&& other) noexcept;
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;
  ~GgufFile();

  const std::string& path() const { return path_; }
  std::uint64_t fileSize() const { return size_; }
  std::uint32_t version() const { return version_; }
  std::uint32_t alignment() const { return alignment_; }
  std::uint64_t dataOffset() const { return dataOffset_; }
  const std::vector<GgufKeyValue>& metadata() const { return metadata_; }
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  // nullptr when absent.
  const GgufValue* find(std::string_view key) const;
  const GgufTensorInfo* findTensor(std::string_view name) const;
  // A tensor's bytes inside the mapping (valid while this object lives).
  std::span<const std::byte> bytes(const GgufTensorInfo& tensor) const;

  // Typed metadata look-ups. nullopt when the key is absent; an Error naming the file and
  // the key when it is present with another type or out of range.
  Expected<std::optional<std::string>> getString(std::string_view key) const;
  Expected<std::optional<std::int64_t>> getInteger(std::string_view key, std::int64_t min,
                                                   std::int64_t max) const;
  Expected<std::optional<double>> getReal(std::string_view key) const;  // any number type
  Expected<std::optional<bool>> getBool(std::string_view key) const;

 private:
  friend Expected<GgufFile> parseGguf(std::span<const std::byte> data, const std::string& name);
  GgufFile() = default;
  Status parse();  // fills everything from map_ / size_

  std::string path_;
  bool owned_ = true;  // map_ is our mapping (open), not the caller's bytes (parseGguf)
  const std::byte* map_ = nullptr;
  std::uint64_t size_ = 0;
  std::uint32_t version_ = 0;
  std::uint32_t alignment_ = 32;
  std::uint64_t dataOffset_ = 0;
  std::vector<GgufKeyValue> metadata_;
  std::vector<GgufTensorInfo> tensors_;
};


}  // namespace attn::io
