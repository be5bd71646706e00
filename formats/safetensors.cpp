// Safetensors reader (see safetensors.h). Validation happens once, in open(); the accessors
// rely on it.
#include "formats/safetensors.h"

#include "core/base/format.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "formats/models/checkpoint.h"  // inQuotes

namespace attn::io {
namespace {

using nlohmann::json;

// Bytes per element of the dtypes the safetensors format defines; 0 = unknown name.
std::uint64_t dtypeSize(std::string_view name) {
  if (name == "F64" || name == "I64" || name == "U64") return 8;
  if (name == "F32" || name == "I32" || name == "U32") return 4;
  if (name == "F16" || name == "BF16" || name == "I16" || name == "U16") return 2;
  if (name == "I8" || name == "U8" || name == "BOOL" || name == "F8_E4M3" || name == "F8_E5M2")
    return 1;
  return 0;
}

DType dtypeOf(std::string_view name) {
  if (name == "F32") return DType::F32;
  if (name == "F16") return DType::F16;
  if (name == "BF16") return DType::BF16;
  return DType::Other;
}

// Reads an unsigned 64-bit JSON integer; rejects floats, negatives and non-numbers.
bool asUnsigned(const json& value, std::uint64_t& out) {
  if (value.is_number_unsigned()) {
    out = value.get<std::uint64_t>();
    return true;
  }
  if (value.is_number_integer() && value.get<std::int64_t>() >= 0) {
    out = static_cast<std::uint64_t>(value.get<std::int64_t>());
    return true;
  }
  return false;
}

// "FILE: tensor 'NAME': PROBLEM" (the tensor is part of the problem text so that the one-line
// message reads naturally; Error's `field` is for JSON fields).
Error tensorError(const std::string& path, std::string_view name, const std::string& problem) {
  return Error{path, "", "tensor " + inQuotes(name) + ": " + problem};
}

std::uint64_t readLe64(const std::byte* p) {
  std::uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | static_cast<std::uint8_t>(p[i]);
  return value;
}

}  // namespace

// =======================================================================================
// Scalars
// =======================================================================================

float f16BitsToFloat(std::uint16_t bits) {
  const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
  std::uint32_t exponent = (bits >> 10) & 0x1Fu;
  std::uint32_t mantissa = bits & 0x3FFu;
  std::uint32_t out = 0;
  if (exponent == 0x1F) {  // inf / NaN
    out = sign | 0x7F800000u | (mantissa << 13);
  } else if (exponent != 0) {  // normal: rebias 15 -> 127
    out = sign | ((exponent + 112u) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {  // +-0
    out = sign;
  } else {  // subnormal half: normalise the mantissa
    exponent = 113;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --exponent;
    }
    mantissa &= 0x3FFu;
    out = sign | (exponent << 23) | (mantissa << 13);
  }
  float value = 0;
  std::memcpy(&value, &out, sizeof value);
  return value;
}

float bf16BitsToFloat(std::uint16_t bits) {
  const std::uint32_t out = static_cast<std::uint32_t>(bits) << 16;
  float value = 0;
  std::memcpy(&value, &out, sizeof value);
  return value;
}

std::int64_t TensorInfo::elementCount() const {
  std::int64_t count = 1;
  for (std::int64_t d : shape) count *= d;  // bounded in open()
  return count;
}

std::string TensorInfo::shapeText() const {
  return attn::shapeText(shape);
}

// =======================================================================================
// Opening and validating
// =======================================================================================

Expected<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  auto fail = [&](std::string field, std::string problem) {
    return Error{path, std::move(field), std::move(problem)};
  };

  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail("", std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return fail("", "not a regular file");
  }
  const auto fileSize = static_cast<std::uint64_t>(st.st_size);
  if (fileSize < 8) {
    ::close(fd);
    return fail("", "too small for a safetensors file (" + std::to_string(fileSize) +
                        " bytes; the header length alone takes 8)");
  }
  // No MAP_POPULATE: nothing but the header is read here. The loaders check every tensor's
  // name, dtype, shape and range against the model first, then map in only the tensors they
  // use, in bulk (formats/models/tensor_binding.h, checkFinite: MADV_POPULATE_READ per chunk
  // on all cores), so a tensor nothing needs (a 6 GB stray, a rotary_emb.inv_freq buffer)
  // is never read and never resident.
  void* mapped = ::mmap(nullptr, fileSize, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);  // the mapping keeps the file alive
  if (mapped == MAP_FAILED) return fail("", std::string("cannot map: ") + std::strerror(errno));

  SafetensorsFile file;
  file.path_ = path;
  file.map_ = static_cast<const std::byte*>(mapped);
  file.size_ = fileSize;

  // 1 header length
  const std::uint64_t headerLength = readLe64(file.map_);
  if (headerLength > kMaxSafetensorsHeaderBytes) {
    return fail("", "header length " + std::to_string(headerLength) +
                        " bytes is above the limit of " +
                        std::to_string(kMaxSafetensorsHeaderBytes) + " bytes");
  }
  if (headerLength > fileSize - 8) {
    return fail("", "header length " + std::to_string(headerLength) +
                        " bytes runs past the end of the " + std::to_string(fileSize) +
                        "-byte file");
  }
  const std::uint64_t dataStart = 8 + headerLength;
  const std::uint64_t dataSize = fileSize - dataStart;

  // 2 JSON
  const char* headerText = reinterpret_cast<const char*>(file.map_ + 8);
  json header =
      json::parse(headerText, headerText + headerLength, nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded()) return fail("", "the header is not valid JSON");
  if (!header.is_object()) return fail("", "the header is not a JSON object");

  // 3 every entry
  for (auto& item : header.items()) {
    // (not a structured binding: clang 14 cannot capture one in the lambda below)
    const std::string& name = item.key();
    const json& entry = item.value();
    if (name == "__metadata__") continue;
    auto bad = [&](const std::string& problem) { return tensorError(path, name, problem); };
    if (!entry.is_object()) return bad("entry is not an object");
    for (const auto& [key, value] : entry.items()) {
      (void)value;
      if (key != "dtype" && key != "shape" && key != "data_offsets")
        return bad("unknown key " + inQuotes(key));
    }
    TensorInfo info;
    info.name = name;
    auto dtype = entry.find("dtype");
    if (dtype == entry.end() || !dtype->is_string()) return bad("missing or non-string 'dtype'");
    info.dtypeName = dtype->get<std::string>();
    const std::uint64_t elementSize = dtypeSize(info.dtypeName);
    if (elementSize == 0) return bad("unknown dtype " + inQuotes(info.dtypeName));
    info.dtype = dtypeOf(info.dtypeName);

    auto shape = entry.find("shape");
    if (shape == entry.end() || !shape->is_array()) return bad("missing or non-array 'shape'");
    if (shape->size() > 8)
      return bad("shape has " + std::to_string(shape->size()) + " dimensions (at most 8)");
    std::uint64_t bytes = elementSize;
    for (const json& dim : *shape) {
      std::uint64_t d = 0;
      if (!asUnsigned(dim, d)) return bad("shape entries must be integers >= 0");
      if (d > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) ||
          (d != 0 && bytes > fileSize / d)) {
        // Larger than the file: cannot fit, whatever the offsets say.
        return bad("shape " + shape->dump() + " needs more bytes than the file has");
      }
      bytes *= d;
      info.shape.push_back(static_cast<std::int64_t>(d));
    }

    auto offsets = entry.find("data_offsets");
    if (offsets == entry.end() || !offsets->is_array() || offsets->size() != 2)
      return bad("missing 'data_offsets' [begin, end]");
    std::uint64_t begin = 0;
    std::uint64_t end = 0;
    if (!asUnsigned((*offsets)[0], begin) || !asUnsigned((*offsets)[1], end))
      return bad("data_offsets must be integers >= 0");
    if (begin > end)
      return bad("data_offsets begin " + std::to_string(begin) + " > end " + std::to_string(end));
    if (end > dataSize) {
      return bad("data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                 "] lie outside the file (the data section has " + std::to_string(dataSize) +
                 " bytes)");
    }
    if (end - begin != bytes) {
      return bad("data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + "] hold " +
                 std::to_string(end - begin) + " bytes but " + info.dtypeName + " " +
                 shape->dump() + " needs " + std::to_string(bytes));
    }
    info.begin = dataStart + begin;
    info.end = dataStart + end;
    file.tensors_.push_back(std::move(info));
  }

  // 4 no two tensors share bytes
  std::vector<const TensorInfo*> byOffset;
  for (const TensorInfo& t : file.tensors_) byOffset.push_back(&t);
  std::sort(byOffset.begin(), byOffset.end(), [](const TensorInfo* a, const TensorInfo* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  for (std::size_t i = 1; i < byOffset.size(); ++i) {
    if (byOffset[i]->begin < byOffset[i - 1]->end) {
      return tensorError(path, byOffset[i]->name,
                         "its bytes overlap those of tensor " + inQuotes(byOffset[i - 1]->name));
    }
  }
  std::sort(file.tensors_.begin(), file.tensors_.end(),
            [](const TensorInfo& a, const TensorInfo& b) { return a.name < b.name; });
  return file;
}

SafetensorsFile::SafetensorsFile(SafetensorsFile&& other) noexcept
    : path_(std::move(other.path_)),
      map_(std::exchange(other.map_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      tensors_(std::move(other.tensors_)) {}

SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&& other) noexcept {
  if (this != &other) {
    if (map_) ::munmap(const_cast<std::byte*>(map_), size_);
    path_ = std::move(other.path_);
    map_ = std::exchange(other.map_, nullptr);
    size_ = std::exchange(other.size_, 0);
    tensors_ = std::move(other.tensors_);
  }
  return *this;
}

SafetensorsFile::~SafetensorsFile() {
  if (map_) ::munmap(const_cast<std::byte*>(map_), size_);
}

// =======================================================================================
// Access
// =======================================================================================

const TensorInfo* SafetensorsFile::find(std::string_view name) const {
  auto it = std::lower_bound(tensors_.begin(), tensors_.end(), name,
                             [](const TensorInfo& t, std::string_view n) { return t.name < n; });
  if (it == tensors_.end() || it->name != name) return nullptr;
  return &*it;
}

std::span<const std::byte> SafetensorsFile::bytes(const TensorInfo& tensor) const {
  return {map_ + tensor.begin, static_cast<std::size_t>(tensor.end - tensor.begin)};
}

void SafetensorsFile::releasePages(const TensorInfo& tensor) const {
  const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  // Only whole pages inside the tensor: a neighbour's bytes must stay (they would be
  // re-read anyway, but there is no reason to).
  const std::uint64_t first = (tensor.begin + page - 1) / page * page;
  const std::uint64_t last = tensor.end / page * page;
  if (last > first) {
    ::madvise(const_cast<std::byte*>(map_) + first, last - first, MADV_DONTNEED);
  }
}

const float* SafetensorsFile::floatsInPlace(const TensorInfo& tensor) const {
  if (tensor.dtype != DType::F32) return nullptr;
  const std::byte* data = map_ + tensor.begin;
  if (reinterpret_cast<std::uintptr_t>(data) % alignof(float) != 0) return nullptr;
  return reinterpret_cast<const float*>(data);
}

const std::uint16_t* SafetensorsFile::bf16InPlace(const TensorInfo& tensor) const {
  if (tensor.dtype != DType::BF16) return nullptr;
  const std::byte* data = map_ + tensor.begin;
  if (reinterpret_cast<std::uintptr_t>(data) % alignof(std::uint16_t) != 0) return nullptr;
  return reinterpret_cast<const std::uint16_t*>(data);
}

Status SafetensorsFile::convert(const TensorInfo& tensor, float* out) const {
  const std::byte* src = map_ + tensor.begin;
  const std::int64_t count = tensor.elementCount();
  switch (tensor.dtype) {
    case DType::F32:
      std::memcpy(out, src, static_cast<std::size_t>(count) * 4);  // may be unaligned in the file
      break;
    case DType::F16:
    case DType::BF16: {
      const bool half = tensor.dtype == DType::F16;
      for (std::int64_t i = 0; i < count; ++i) {
        std::uint16_t bits = 0;
        std::memcpy(&bits, src + 2 * i, 2);  // little-endian host (x86-64)
        out[i] = half ? f16BitsToFloat(bits) : bf16BitsToFloat(bits);
      }
      break;
    }
    case DType::Other:
      return tensorError(
          path_, tensor.name,
          "unsupported dtype " + inQuotes(tensor.dtypeName) + " (use F32, F16 or BF16)");
  }
  for (std::int64_t i = 0; i < count; ++i) {
    if (!std::isfinite(out[i])) {
      return tensorError(path_, tensor.name,
                         "element " + std::to_string(i) + " is not a finite number");
    }
  }
  return Ok{};
}

Expected<Matrix> SafetensorsFile::readMatrix(std::string_view name, std::int64_t rows,
                                             std::int64_t cols) const {
  const TensorInfo* tensor = find(name);
  if (!tensor) return tensorError(path_, name, "missing");
  if (tensor->shape != std::vector<std::int64_t>{rows, cols}) {
    return tensorError(path_, name,
                       "shape " + tensor->shapeText() + ", expected [" + std::to_string(rows) +
                           ", " + std::to_string(cols) + "]");
  }
  Matrix out(rows, cols);
  Status converted = convert(*tensor, out.data());
  if (!converted) return converted.error();
  return out;
}

Expected<Vector> SafetensorsFile::readVector(std::string_view name, std::int64_t size) const {
  const TensorInfo* tensor = find(name);
  if (!tensor) return tensorError(path_, name, "missing");
  if (tensor->shape != std::vector<std::int64_t>{size}) {
    return tensorError(
        path_, name, "shape " + tensor->shapeText() + ", expected [" + std::to_string(size) + "]");
  }
  Vector out(size);
  Status converted = convert(*tensor, out.data());
  if (!converted) return converted.error();
  return out;
}

}  // namespace attn::io
