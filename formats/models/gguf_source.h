// A GGUF file (formats/gguf.h) as a TensorSource: its tensors under their GGUF names
// ("blk.0.attn_q.weight"), each shape in PyTorch order (ggml's dims reversed: [out, in] for a
// matrix), values read in place. F32 tensors are used as stored; BF16 matrices through the
// BF16 kernels; F16 and the quantized types (Q4_0 ... Q6_K) as ggml blocks in place, or
// dequantized exactly into float32 for the small tensors (norms, biases, position tables).
// formats/models/gguf_model.cpp renames a family's plan onto these names.
#pragma once

#include <map>
#include <memory>

#include "formats/gguf.h"
#include "formats/models/tensor_source.h"

namespace attn::io {

class GgufSource final : public TensorSource {
 public:
  explicit GgufSource(std::shared_ptr<const GgufFile> file);
  const std::string& path() const override { return file_->path(); }
  std::string fileOf(std::string_view) const override { return file_->path(); }
  std::vector<std::string> names() const override;
  const Info* info(std::string_view name) const override;
  Expected<const float*> floats(std::string_view name,
                                std::vector<std::shared_ptr<const void>>& storage) const override;
  const std::uint16_t* bf16InPlace(std::string_view name) const override;
  Expected<Blocks> blocksInPlace(std::string_view name) const override;
  std::string readableTypes() const override;
  std::uint64_t keepAlive(std::vector<std::shared_ptr<const void>>& storage) const override;

 private:
  std::shared_ptr<const GgufFile> file_;
  std::map<std::string, Info, std::less<>> infos_;
};

}  // namespace attn::io
