// Binding a checkpoint's tensors to a model's Tensor slots, for the encoders and the vision
// transformer (formats/models/encoder_folder.h, vit_folder.h): every tensor's name, dtype
// and shape is checked, and nothing in the file is silently ignored, before any float is
// read or converted.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/models/transformer.h"
#include "formats/models/checkpoint.h"

namespace attn::io {

// One tensor the model needs (or knows and does not use).
struct TensorSlot {
  std::string name;                 // the checkpoint's name
  std::vector<std::int64_t> shape;  // exactly as the file must store it
  model::Tensor* target = nullptr;  // null: checked, never read (a pooler the model skips)
  // The view the model gets: rows x cols floats, rows * cols = the element count. 0: the
  // first dimension x the product of the others ([1] for a 0-d or 1-d tensor's cols).
  std::int64_t rows = 0, cols = 0;
};

// 1 every slot's tensor is present, its dtype F32 / F16 / BF16 and its shape exact;
// 2 every tensor of the checkpoint is a slot or `isBuffer(name)` (non-parameters such as
//   position_ids), else "not used by a `model`";
// 3 each slot with a target gets its floats: F32 aligned data in place from the mapping
//   (the files go into `storage`), others converted once into owned buffers; every value
//   finite.
// Errors name the file and the tensor.
Status bindTensors(const Checkpoint& checkpoint, const std::vector<TensorSlot>& slots,
                   const std::function<bool(std::string_view)>& isBuffer, const std::string& model,
                   std::vector<std::shared_ptr<const void>>& storage);

// The index of the first NaN or infinity in data[0, count), or -1. Tests the exponent bits in
// blocks with a branch-free OR, which the compiler vectorises (std::isfinite per element made
// this check half of loading a 500 MB F32 model). Shared with model_folder.cpp.
std::int64_t firstNonFinite(const float* data, std::int64_t count);
// One tensor's values whose finiteness is still to be checked (checkFinite): float32 or
// BF16 values, in place in a mapping or in a converted buffer.
struct FiniteCheck {
  const float* f32 = nullptr;
  const std::uint16_t* bf16 = nullptr;  // when f32 is null
  std::int64_t count = 0;
  std::string file, name;  // for the message
};
// Checks every value of every tensor of `checks` for NaN and infinity on all cores
// (availableCores() threads of the shared pool, each tensor cut into chunks of 2^20 values),
// prefaulting each chunk's pages with one MADV_POPULATE_READ before reading them (a mapping
// is never populated whole: a tensor nothing needs is never read). Error: the first
// non-finite value in list order, naming the file, the tensor and the element.
Status checkFinite(const std::vector<FiniteCheck>& checks);

// The float32 values of the checkpoint tensor `name` (entry): read in place from the mapping
// when its dtype allows (F32), else converted into a buffer appended to `storage` (F16, BF16,
// F64). Every value must be finite: checked here, or, when `deferred` is given, appended to
// it for one checkFinite() over all tensors. Errors name the file, the tensor and the element.
Expected<const float*> tensorFloats(const Checkpoint::Entry& entry, const std::string& name,
                                    std::vector<std::shared_ptr<const void>>& storage,
                                    std::vector<FiniteCheck>* deferred = nullptr);

// The same for `count` BF16 values (exponent bits all ones).
std::int64_t firstNonFiniteBf16(const std::uint16_t* data, std::int64_t count);

// The tensor `name` holds exactly the floats of `tensor` (a tied weight written twice).
// Errors: its shape differs, it cannot be read, or a value differs; `why` ends the message.
Status checkSameValues(const Checkpoint& checkpoint, const std::string& name,
                       const model::Tensor& tensor, const std::string& why);

}  // namespace attn::io
