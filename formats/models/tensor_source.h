// Where a model's tensors come from, as the family table's loader sees them: a name, a shape
// and a dtype per tensor, and their values as float32 (or a BF16 matrix in place). A
// safetensors checkpoint (formats/models/checkpoint.h) and a GGUF file
// (formats/models/gguf_source.h) implement the same few members and load through the same
// family table.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/types.h"
#include "formats/models/checkpoint.h"

namespace attn::io {

struct FiniteCheck;  // formats/models/tensor_binding.h

class TensorSource {
 public:
  struct Info {
    std::vector<std::int64_t> shape;  // as stored, outermost first (PyTorch order)
    std::string dtype;                // "F32", "BF16", ... for messages and Weights::storedAs
    bool readable = false;            // floats() can read it (F32 / F16 / BF16, GGUF's blocks)
    bool blocks = false;  // a weight matrix of it is used in place as ggml blocks (GGUF)
  };
  // A weight matrix as ggml blocks in place (core/models/quant.h: F16, Q8_0, Q4_K, ...).
  struct Blocks {
    const std::uint8_t* data = nullptr;
    std::uint32_t ggmlType = 0;
  };
  virtual ~TensorSource() = default;

  // The file an error about a missing tensor names.
  virtual const std::string& path() const = 0;
  // The file that holds `name` (for errors about that tensor).
  virtual std::string fileOf(std::string_view name) const = 0;
  // Every tensor's name, sorted.
  virtual std::vector<std::string> names() const = 0;
  // The tensor's shape and dtype; nullptr when the source has no such tensor.
  virtual const Info* info(std::string_view name) const = 0;
  // Its values as float32: in place when the stored bytes allow, else converted into a
  // buffer appended to `storage`. Every value must be finite. Errors name the file and the
  // tensor.
  virtual Expected<const float*> floats(std::string_view name,
                                        std::vector<std::shared_ptr<const void>>& storage) const = 0;
  // The same, but the finiteness check may be appended to `checks` for one checkFinite() of
  // every tensor on all cores (tensor_binding.h) instead of a serial pass now; the values
  // must not be used before that check. A source whose checks are cheap checks at once.
  virtual Expected<const float*> floatsCheckedLater(std::string_view name,
                                                    std::vector<std::shared_ptr<const void>>& storage,
                                                    std::vector<FiniteCheck>& checks) const {
    (void)checks;
    return floats(name, storage);
  }
  // The stored BF16 bits when the tensor is BF16 and usable in place (2-byte aligned), else
  // nullptr (then floats() converts it). Finiteness is the caller's check.
  virtual const std::uint16_t* bf16InPlace(std::string_view name) const = 0;
  // The blocks of a tensor whose Info says `blocks`, every block scale checked finite.
  // Errors name the file and the tensor.
  virtual Expected<Blocks> blocksInPlace(std::string_view name) const {
    return Error{path(), "", "tensor " + inQuotes(name) + ": not stored as ggml blocks"};
  }
  // The dtypes floats() reads, for the message refusing another ("F32, F16 or BF16").
  virtual std::string readableTypes() const { return "F32, F16 or BF16"; }
  // Keeps the source's files alive for weights used in place; returns their bytes.
  virtual std::uint64_t keepAlive(std::vector<std::shared_ptr<const void>>& storage) const = 0;
};

// A safetensors checkpoint (single file or shards) as a TensorSource.
class SafetensorsSource final : public TensorSource {
 public:
  explicit SafetensorsSource(const Checkpoint& checkpoint);
  const std::string& path() const override { return checkpoint_.path(); }
  std::string fileOf(std::string_view name) const override;
  std::vector<std::string> names() const override;
  const Info* info(std::string_view name) const override;
  Expected<const float*> floats(std::string_view name,
                                std::vector<std::shared_ptr<const void>>& storage) const override;
  Expected<const float*> floatsCheckedLater(std::string_view name, std::vector<std::shared_ptr<const void>>& storage,
                                            std::vector<FiniteCheck>& checks) const override;
  const std::uint16_t* bf16InPlace(std::string_view name) const override;
  std::uint64_t keepAlive(std::vector<std::shared_ptr<const void>>& storage) const override;

 private:
  const Checkpoint& checkpoint_;
  std::map<std::string, Info, std::less<>> infos_;
};

}  // namespace attn::io
