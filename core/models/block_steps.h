// Steps 3 and 4 of a block of the forward pass (transformer.h), shared by the decoder run's
// blocks (decoder_attend.cpp) and the tiled long-context pass (long_context.cpp). Internal
// to core/models.
#pragma once

#include <Eigen/Core>

#include "core/models/transformer.h"

namespace attn::model {

// Step 3: [q | k | v] (rows x qkvWidth) of a = Norm1(x) (normed: rows x E) in the config's
// layout (fused blocks, gpt_neox's fused per-head rows, or separate q, k and v).
void projectQkv(const LayerWeights& w, const Config& c, const Eigen::Ref<const Matrix>& normed,
                Eigen::Ref<Matrix> qkv, int threads);

// Steps 3b and 4 on the q and k heads of every row of qkv (rows x qkvWidth): a llama GGUF's
// interleaved q/k features back in Hugging Face's order, the q/k norms (qwen3), and the
// rotary embedding, row r rotated by cosines/sines row r mod `period` (period rows x
// rotaryDims/2; a batch's copies repeat the same positions).
void prepareQk(const LayerWeights& w, const Config& c, Eigen::Ref<Matrix> qkv, const Matrix& cosines,
               const Matrix& sines, Eigen::Index period, int threads);

}  // namespace attn::model
