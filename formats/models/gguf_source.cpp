// A GGUF file as a TensorSource (see gguf_source.h).
#include "formats/models/gguf_source.h"

#include <algorithm>
#include <cstring>

#include "core/isa/isa.h"
#include "core/models/quant.h"
#include "formats/models/tensor_binding.h"
#include "formats/safetensors.h"

namespace attn::io {
namespace {

using model::GgmlType;

// Index of the first non-finite f16 (exponent all ones) of `count` at p (byte stride
// `stride`), or -1.
std::int64_t firstNonFiniteHalf(const std::byte* p, std::uint64_t count, std::uint64_t stride) {
  for (std::uint64_t i = 0; i < count; ++i) {
    std::uint16_t h;
    std::memcpy(&h, p + i * stride, 2);
    if ((h & 0x7C00u) == 0x7C00u) return static_cast<std::int64_t>(i);
  }
  return -1;
}

// The byte offsets of the f16 scales inside one block of a quantized type (ggml-common.h).
std::vector<int> scaleOffsets(std::uint32_t type) {
  switch (static_cast<GgmlType>(type)) {
    case GgmlType::Q4_0: case GgmlType::Q5_0: case GgmlType::Q8_0: return {0};
    case GgmlType::Q4_1: case GgmlType::Q5_1: case GgmlType::Q4_K: case GgmlType::Q5_K: return {0, 2};
    case GgmlType::Q2_K: return {80, 82};
    case GgmlType::Q3_K: return {108};
    case GgmlType::Q6_K: return {208};
    default: return {};
  }
}

// Every float of the tensor finite (F32, F16, BF16), or every block's f16 scales.
Status checkFinite(const GgufFile& file, const GgufTensorInfo& info) {
  const std::span<const std::byte> bytes = file.bytes(info);
  const model::GgmlTypeInfo& type = *model::ggmlTypeInfo(info.type);
  std::int64_t bad = -1;
  switch (static_cast<GgmlType>(info.type)) {
    case GgmlType::F32:
      bad = firstNonFinite(reinterpret_cast<const float*>(bytes.data()),
                           static_cast<std::int64_t>(info.elementCount()));
      break;
    case GgmlType::F16:
      bad = firstNonFiniteHalf(bytes.data(), info.elementCount(), 2);
      break;
    case GgmlType::BF16: {
      std::vector<std::uint16_t> bits(info.elementCount());  // the mapping may be unaligned for u16 reads
      std::memcpy(bits.data(), bytes.data(), bits.size() * 2);
      bad = firstNonFiniteBf16(bits.data(), static_cast<std::int64_t>(bits.size()));
      break;
    }
    default: {
      const std::uint64_t blocks = info.bytes / static_cast<std::uint64_t>(type.blockBytes);
      for (int offset : scaleOffsets(info.type)) {
        bad = firstNonFiniteHalf(bytes.data() + offset, blocks, static_cast<std::uint64_t>(type.blockBytes));
        if (bad >= 0) {
          return Error{file.path(), "", "tensor " + inQuotes(info.name) + ": block " +
                                            std::to_string(bad) + " has a scale that is not a finite number"};
        }
      }
      return Ok{};
    }
  }
  if (bad >= 0) {
    return Error{file.path(), "", "tensor " + inQuotes(info.name) + ": element " + std::to_string(bad) +
                                      " is not a finite number"};
  }
  return Ok{};
}

}  // namespace

GgufSource::GgufSource(std::shared_ptr<const GgufFile> file) : file_(std::move(file)) {
  for (const GgufTensorInfo& t : file_->tensors()) {
    Info info;
    info.shape.assign(t.dims.rbegin(), t.dims.rend());
    const model::GgmlTypeInfo* type = model::ggmlTypeInfo(t.type);
    info.dtype = model::ggmlTypeName(t.type);
    info.readable = type && type->dequantizes;
    info.blocks = info.readable && t.type != static_cast<std::uint32_t>(GgmlType::F32) &&
                  t.type != static_cast<std::uint32_t>(GgmlType::BF16);
    infos_[t.name] = std::move(info);
  }
}

std::vector<std::string> GgufSource::names() const {
  std::vector<std::string> out;
  for (const auto& [name, info] : infos_) out.push_back(name);
  return out;
}

const TensorSource::Info* GgufSource::info(std::string_view name) const {
  auto it = infos_.find(name);
  return it == infos_.end() ? nullptr : &it->second;
}

Expected<const float*> GgufSource::floats(std::string_view name,
                                          std::vector<std::shared_ptr<const void>>& storage) const {
  const GgufTensorInfo* t = file_->findTensor(name);
  const Info* i = info(name);
  if (!t || !i || !i->readable) {
    return Error{path(), "", "tensor " + inQuotes(name) + ": missing or of a type not read here"};
  }
  if (Status s = checkFinite(*file_, *t); !s) return s.error();
  const std::byte* bytes = file_->bytes(*t).data();
  // F32 in place: tensor offsets are multiples of general.alignment (a multiple of 4 when
  // the file says so; else converted)
  if (t->type == static_cast<std::uint32_t>(GgmlType::F32) &&
      reinterpret_cast<std::uintptr_t>(bytes) % alignof(float) == 0) {
    return reinterpret_cast<const float*>(bytes);
  }
  auto buffer = std::make_shared<std::vector<float>>(static_cast<std::size_t>(t->elementCount()));
  if (t->type == static_cast<std::uint32_t>(GgmlType::F32)) {
    std::memcpy(buffer->data(), bytes, buffer->size() * sizeof(float));
  } else if (t->type == static_cast<std::uint32_t>(GgmlType::BF16)) {
    for (std::size_t k = 0; k < buffer->size(); ++k) {
      std::uint16_t h;
      std::memcpy(&h, bytes + 2 * k, 2);
      (*buffer)[k] = bf16BitsToFloat(h);
    }
  } else {
    // F16 and the block types: row by row (each row is whole blocks), exactly
    const std::uint64_t cols = t->dims[0], rows = t->elementCount() / std::max<std::uint64_t>(cols, 1);
    const std::uint64_t rowBytes = model::ggmlBytes(*model::ggmlTypeInfo(t->type), cols);
    for (std::uint64_t r = 0; r < rows; ++r) {
      kernels::active().dequantize(t->type, bytes + r * rowBytes, static_cast<std::ptrdiff_t>(cols),
                                   buffer->data() + r * cols);
    }
  }
  const float* out = buffer->data();
  storage.push_back(std::move(buffer));
  return out;
}

const std::uint16_t* GgufSource::bf16InPlace(std::string_view name) const {
  const GgufTensorInfo* t = file_->findTensor(name);
  if (!t || t->type != static_cast<std::uint32_t>(GgmlType::BF16)) return nullptr;
  const std::byte* bytes = file_->bytes(*t).data();
  if (reinterpret_cast<std::uintptr_t>(bytes) % alignof(std::uint16_t) != 0) return nullptr;
  return reinterpret_cast<const std::uint16_t*>(bytes);
}

Expected<TensorSource::Blocks> GgufSource::blocksInPlace(std::string_view name) const {
  const GgufTensorInfo* t = file_->findTensor(name);
  const Info* i = info(name);
  if (!t || !i || !i->blocks) return TensorSource::blocksInPlace(name);
  if (Status s = checkFinite(*file_, *t); !s) return s.error();
  return Blocks{reinterpret_cast<const std::uint8_t*>(file_->bytes(*t).data()), t->type};
}

std::string GgufSource::readableTypes() const {
  return "F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K or Q6_K";
}

std::uint64_t GgufSource::keepAlive(std::vector<std::shared_ptr<const void>>& storage) const {
  storage.push_back(file_);
  return file_->fileSize();
}

}  // namespace attn::io
