// A safetensors checkpoint as a TensorSource (see tensor_source.h).
#include "formats/models/tensor_source.h"

#include "formats/models/tensor_binding.h"

namespace attn::io {

SafetensorsSource::SafetensorsSource(const Checkpoint& checkpoint) : checkpoint_(checkpoint) {
  for (const auto& [name, entry] : checkpoint.tensors()) {
    const TensorInfo& t = *entry.info;
    infos_[name] = Info{t.shape, t.dtypeName, t.dtype != DType::Other};
  }
}

std::string SafetensorsSource::fileOf(std::string_view name) const {
  const Checkpoint::Entry* entry = checkpoint_.find(name);
  return entry ? entry->file->path() : checkpoint_.path();
}

std::vector<std::string> SafetensorsSource::names() const {
  std::vector<std::string> out;
  for (const auto& [name, info] : infos_) out.push_back(name);
  return out;
}

const TensorSource::Info* SafetensorsSource::info(std::string_view name) const {
  auto it = infos_.find(name);
  return it == infos_.end() ? nullptr : &it->second;
}

Expected<const float*> SafetensorsSource::floats(
    std::string_view name, std::vector<std::shared_ptr<const void>>& storage) const {
  const Checkpoint::Entry* entry = checkpoint_.find(name);
  if (!entry) return Error{checkpoint_.path(), "", "tensor " + inQuotes(name) + ": missing"};
  return tensorFloats(*entry, std::string(name), storage);
}

Expected<const float*> SafetensorsSource::floatsCheckedLater(
    std::string_view name, std::vector<std::shared_ptr<const void>>& storage,
    std::vector<FiniteCheck>& checks) const {
  const Checkpoint::Entry* entry = checkpoint_.find(name);
  if (!entry) return Error{checkpoint_.path(), "", "tensor " + inQuotes(name) + ": missing"};
  return tensorFloats(*entry, std::string(name), storage, &checks);
}

const std::uint16_t* SafetensorsSource::bf16InPlace(std::string_view name) const {
  const Checkpoint::Entry* entry = checkpoint_.find(name);
  return entry ? entry->file->bf16InPlace(*entry->info) : nullptr;
}

std::uint64_t SafetensorsSource::keepAlive(std::vector<std::shared_ptr<const void>>& storage) const {
  std::uint64_t bytes = 0;
  for (const auto& file : checkpoint_.files()) {
    storage.push_back(file);
    bytes += file->fileSize();
  }
  return bytes;
}

}  // namespace attn::io
