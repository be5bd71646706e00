// A strict reader for safetensors files (Hugging Face), over a read-only memory map.
//
// Format: an 8-byte little-endian header length N, then N bytes of JSON, then the data.
// The JSON maps each tensor name to {"dtype", "shape", "data_offsets": [begin, end]}, with
// offsets relative to the first byte after the header; an optional "__metadata__" entry
// (string to string) is ignored. open() checks every entry against the header and the file
// size before anything is read: known dtype sizes times the shape must equal the byte range,
// ranges must lie inside the file and must not overlap. Errors name the file and the tensor.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/types.h"

namespace attn::io {

// Largest JSON header we accept, in bytes (documented in docs/models.md). The published
// GPT-2 files have headers of a few tens of kilobytes; 100 MB stops a corrupt length from
// making us parse gigabytes of tensor data as JSON.
inline constexpr std::uint64_t kMaxSafetensorsHeaderBytes = 100ull << 20;

// Element types. Only F32, F16 and BF16 can be converted to float; the others are recognised
// (so their byte ranges are checked) but reading them as floats is an error.
enum class DType { F32, F16, BF16, Other };

struct TensorInfo {
  std::string name;
  std::string dtypeName;  // as written in the header, e.g. "F16"
  DType dtype = DType::Other;
  std::vector<std::int64_t> shape;  // may be empty (a scalar)
  std::uint64_t begin = 0;          // absolute byte offset in the file
  std::uint64_t end = 0;            // one past the last byte

  std::int64_t elementCount() const;
  std::string shapeText() const;  // "[768, 2304]"
};

// An open safetensors file. Move-only; unmaps on destruction.
class SafetensorsFile {
 public:
  // Maps and validates `path`. Errors: not a regular file, too small, header longer than
  // kMaxSafetensorsHeaderBytes or than the file, bad JSON, an entry without dtype / shape /
  // data_offsets, negative or overflowing sizes, a byte range that does not match the shape
  // or lies outside the file, overlapping ranges.
  static Expected<SafetensorsFile> open(const std::string& path);

  SafetensorsFile(SafetensorsFile&& other) noexcept;
  SafetensorsFile& operator=(SafetensorsFile&& other) noexcept;
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;
  ~SafetensorsFile();

  const std::string& path() const { return path_; }
  std::uint64_t fileSize() const { return size_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  // nullptr when there is no tensor of that name.
  const TensorInfo* find(std::string_view name) const;

  // The raw bytes of a tensor (inside the map; valid while this object lives).
  std::span<const std::byte> bytes(const TensorInfo& tensor) const;

  // Converts tensor `name` (F32, F16 or BF16) to a float32 row-major rows x cols matrix.
  // The tensor's shape must be exactly [rows, cols]. Errors name the file and the tensor:
  // missing, wrong shape, unsupported dtype, a NaN or infinite value.
  Expected<Matrix> readMatrix(std::string_view name, std::int64_t rows, std::int64_t cols) const;
  // The same for a 1-D tensor of shape [size].
  Expected<Vector> readVector(std::string_view name, std::int64_t size) const;

  // Tells the kernel it may drop the mapped pages of `tensor` (they are re-read from the file
  // if touched again). Used after conversion so that loading a model does not hold both the
  // file's pages and the converted floats at peak.
  void releasePages(const TensorInfo& tensor) const;

  // Converts `tensor` (F32, F16 or BF16; any shape) into tensor.elementCount() floats at
  // `out`. Errors name the file and the tensor: an unsupported dtype, a NaN or infinity.
  Status convert(const TensorInfo& tensor, float* out) const;
  // The tensor's floats inside the map, usable in place: non-null only for an F32 tensor
  // whose data is 4-byte aligned (valid while this object lives). Values are not checked.
  const float* floatsInPlace(const TensorInfo& tensor) const;
  // The same for a BF16 tensor whose data is 2-byte aligned: its 16-bit values in the map.
  const std::uint16_t* bf16InPlace(const TensorInfo& tensor) const;

 private:
  SafetensorsFile() = default;

  std::string path_;
  const std::byte* map_ = nullptr;
  std::uint64_t size_ = 0;
  std::vector<TensorInfo> tensors_;  // sorted by name
};

// IEEE half and bfloat16 to float (exact: every half and bfloat16 value is a float).
float f16BitsToFloat(std::uint16_t bits);
float bf16BitsToFloat(std::uint16_t bits);

}  // namespace attn::io
