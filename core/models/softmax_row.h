// The one softmax of a model's attention row: every engine's scores (the decoders'
// core/models/decoder_attend.cpp, the encoder and ViT block of core/models/encoder.cpp) go
// through it, on core/isa's run-time-chosen kernels (the CPU's widest vectors).
#pragma once

#include <cstddef>

namespace attn::model {

// Softmax of a row of raw scores s (count >= 1 values, in place): s *= scale, then with
// softcap > 0 s = softcap·tanh(s / softcap), then w = exp(s - max s) / Σ exp(s - max s):
// the maximum by kernels rowMax, the shifted exponentials and their sum (in double; one
// term is exp(0) = 1, so the sum is >= 1; a term below exp(-87) is exactly 0) by
// expShiftedRow, the division by divideRow. Masked keys are simply not in the row (a
// decoder passes its visible keys only).
void softmaxScaledRow(float* s, std::ptrdiff_t count, float scale, float softcap = 0);

}  // namespace attn::model
