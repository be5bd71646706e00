// Checking and binding checkpoint tensors (see tensor_binding.h).
#include "formats/models/tensor_binding.h"

#include "core/base/parallel.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

namespace attn::io {
namespace {

}  // namespace

std::int64_t firstNonFinite(const float* data, std::int64_t count) {
  constexpr std::int64_t kBlock = 4096;
  for (std::int64_t start = 0; start < count; start += kBlock) {
    const std::int64_t end = std::min(count, start + kBlock);
    std::uint32_t bad = 0;
    for (std::int64_t i = start; i < end; ++i) {
      std::uint32_t bits;
      std::memcpy(&bits, data + i, sizeof bits);
      bad |= static_cast<std::uint32_t>((bits & 0x7F800000u) == 0x7F800000u);
    }
    if (bad) {
      for (std::int64_t i = start; i < end; ++i)
        if (!std::isfinite(data[i])) return i;
    }
  }
  return -1;
}

std::int64_t firstNonFiniteBf16(const std::uint16_t* data, std::int64_t count) {
  constexpr std::int64_t kBlock = 4096;
  for (std::int64_t start = 0; start < count; start += kBlock) {
    const std::int64_t end = std::min(count, start + kBlock);
    std::uint32_t bad = 0;
    for (std::int64_t i = start; i < end; ++i) bad |= static_cast<std::uint32_t>((data[i] & 0x7F80u) == 0x7F80u);
    if (bad) {
      for (std::int64_t i = start; i < end; ++i)
        if ((data[i] & 0x7F80u) == 0x7F80u) return i;
    }
  }
  return -1;
}

Status checkFinite(const std::vector<FiniteCheck>& checks) {
  constexpr std::int64_t kChunk = std::int64_t{1} << 20;
  struct Chunk {
    std::size_t check;
    std::int64_t first, count;
  };
  std::vector<Chunk> chunks;
  for (std::size_t c = 0; c < checks.size(); ++c)
    for (std::int64_t first = 0; first < checks[c].count; first += kChunk)
      chunks.push_back({c, first, std::min(kChunk, checks[c].count - first)});
  // the first bad element of each chunk (-1: none); chunks are independent
  std::vector<std::int64_t> bad(chunks.size(), -1);
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  parallelForPooled(static_cast<int>(chunks.size()), availableCores(), [&](int i, int) {
    const Chunk& chunk = chunks[static_cast<std::size_t>(i)];
    const FiniteCheck& check = checks[chunk.check];
    const std::size_t width = check.f32 ? 4 : 2;
    const char* begin = check.f32 ? reinterpret_cast<const char*>(check.f32 + chunk.first)
                                   : reinterpret_cast<const char*>(check.bf16 + chunk.first);
    // one system call maps the chunk's pages (a page fault per 64 KiB otherwise); harmless
    // on memory that is not a file mapping, and its failure only costs the faults
    const std::uintptr_t from = reinterpret_cast<std::uintptr_t>(begin) / page * page;
    const std::uintptr_t to = reinterpret_cast<std::uintptr_t>(begin) + static_cast<std::uintptr_t>(chunk.count) * width;
    ::madvise(reinterpret_cast<void*>(from), to - from, MADV_POPULATE_READ);
    const std::int64_t at = check.f32 ? firstNonFinite(check.f32 + chunk.first, chunk.count)
                                      : firstNonFiniteBf16(check.bf16 + chunk.first, chunk.count);
    if (at >= 0) bad[static_cast<std::size_t>(i)] = chunk.first + at;
  });
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    if (bad[i] < 0) continue;
    const FiniteCheck& check = checks[chunks[i].check];
    return Error{check.file, "",
                 "tensor " + inQuotes(check.name) + ": element " + std::to_string(bad[i]) + " is not a finite number"};
  }
  return Ok{};
}

Expected<const float*> tensorFloats(const Checkpoint::Entry& entry, const std::string& name,
                                    std::vector<std::shared_ptr<const void>>& storage,
                                    std::vector<FiniteCheck>* deferred) {
  const TensorInfo& info = *entry.info;
  const std::int64_t count = info.elementCount();
  const float* data = entry.file->floatsInPlace(info);
  if (!data) {  // converted, and checked afterwards (a NaN in F16 is still a NaN in F32)
    auto buffer = std::make_shared<std::vector<float>>(static_cast<std::size_t>(count));
    if (Status s = entry.file->convert(info, buffer->data()); !s) return s.error();
    entry.file->releasePages(info);
    data = buffer->data();
    storage.push_back(std::move(buffer));
  }
  if (deferred) {
    deferred->push_back({data, nullptr, count, entry.file->path(), name});
    return data;
  }
  if (const std::int64_t bad = firstNonFinite(data, count); bad >= 0) {
    return Error{entry.file->path(), "",
                 "tensor " + inQuotes(name) + ": element " + std::to_string(bad) + " is not a finite number"};
  }
  return data;
}

Status bindTensors(const Checkpoint& checkpoint, const std::vector<TensorSlot>& slots,
                   const std::function<bool(std::string_view)>& isBuffer, const std::string& model,
                   std::vector<std::shared_ptr<const void>>& storage) {
  // 1 present, a float dtype, the exact shape
  std::set<std::string, std::less<>> known;
  for (const TensorSlot& slot : slots) {
    const Checkpoint::Entry* entry = checkpoint.find(slot.name);
    if (!entry) return Error{checkpoint.path(), "", "tensor " + inQuotes(slot.name) + ": missing"};
    const TensorInfo& info = *entry->info;
    if (info.dtype == DType::Other) {
      return Error{entry->file->path(), "",
                   "tensor " + inQuotes(slot.name) + ": unsupported dtype " + inQuotes(info.dtypeName) +
                       " (use F32, F16 or BF16)"};
    }
    if (info.shape != slot.shape) {
      return Error{entry->file->path(), "",
                   "tensor " + inQuotes(slot.name) + ": shape " + info.shapeText() + ", expected " +
                       shapeText(slot.shape)};
    }
    known.insert(slot.name);
  }
  // 2 nothing else
  for (const auto& [name, entry] : checkpoint.tensors()) {
    if (known.count(name) || isBuffer(name)) continue;
    return Error{entry.file->path(), "",
                 "tensor " + inQuotes(name) + ": not used by " + model +
                     " as config.json describes it (another head or architecture?)"};
  }
  // 3 the floats, their finiteness checked at the end on all cores
  for (const auto& file : checkpoint.files()) storage.push_back(file);
  std::vector<FiniteCheck> checks;
  for (const TensorSlot& slot : slots) {
    if (!slot.target) continue;
    const Checkpoint::Entry& entry = *checkpoint.find(slot.name);
    const TensorInfo& info = *entry.info;
    const std::int64_t count = info.elementCount();
    Expected<const float*> floats = tensorFloats(entry, slot.name, storage, &checks);
    if (!floats) return floats.error();
    const float* data = *floats;
    std::int64_t rows = slot.rows, cols = slot.cols;
    if (rows == 0) {
      rows = slot.shape.empty() ? 1 : slot.shape[0];
      cols = rows == 0 ? 0 : count / rows;
    }
    *slot.target = model::Tensor{data, rows, cols};
  }
  return checkFinite(checks);
}

Status checkSameValues(const Checkpoint& checkpoint, const std::string& name,
                       const model::Tensor& tensor, const std::string& why) {
  const Checkpoint::Entry* entry = checkpoint.find(name);
  if (!entry) return Ok{};
  const TensorInfo& info = *entry->info;
  std::vector<float> values(static_cast<std::size_t>(std::max<std::int64_t>(info.elementCount(), 0)));
  const bool sameSize = info.elementCount() == tensor.size() && info.dtype != DType::Other;
  Status read = sameSize ? entry->file->convert(info, values.data()) : Status(Error{});
  if (!read || !std::equal(values.begin(), values.end(), tensor.data)) {
    return Error{entry->file->path(), "", "tensor " + inQuotes(name) + ": " + why};
  }
  return Ok{};
}

}  // namespace attn::io
