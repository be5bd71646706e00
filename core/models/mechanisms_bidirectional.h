// Issue 30's value zeroing and head circuits on bidirectional models: the BERT-style
// encoders (bert, distilbert, roberta; post-LN) and ViT (pre-LN), whose blocks are
// core/models/encoder.h's encoderBlock. The decoder versions and every formula are in
// core/models/mechanisms.h; docs/analyses.md section 6 states them with their papers, and
// tests/formats/mechanisms_reference.py checks these against numpy.
//
// Shapes: L = layers, H = heads (no grouped-query attention here: KV head = query head),
// E = model width, d_h = E / H, n = tokens, V = vocabulary.
#pragma once

#include <atomic>
#include <functional>
#include <span>
#include <vector>

#include "core/models/encoder.h"
#include "core/models/mechanisms.h"

namespace attn::model {

// Value zeroing (Mohebbi et al., 2023) of one bidirectional pass: Z[l,i,j] = 1 − cos(y_i,
// y_i^¬j), each row divided by its sum (a row whose sum is 0 stays 0), where y = resid[l+1]
// (n x E: block l's output, after its last LayerNorm in a post-LN block) and y^¬j is block l
// re-run on its recorded input resid[l] with token j's value vector zeroed in every head
// (BlockOptions::zeroValueRow: the weights kept as the softmax gave them). Every i and j (a
// bidirectional block: zeroing any token's values moves every row). L·n block passes.
//   resid:   L+1 matrices n x E (EncoderRun::resid, VitRun::resid)
//   layers:  the L blocks (EncoderWeights::layers, VitWeights::layers)
//   options: the run's block options (heads, eps, activation, preNorm; no ablation)
// Returns [L, n, n] float32. Errors: resid not L+1 matrices of one shape (field "resid");
// field "cancelled" when `cancel` (may be null) turned true (checked before every pass).
// `progress` (when set) is called after every pass with (done, L·n).
Expected<std::vector<float>> bidirectionalValueZeroing(
    std::span<const Matrix> resid, std::span<const EncoderLayerWeights> layers, const BlockOptions& options,
    const std::function<void(int done, int total)>& progress = {}, const std::atomic<bool>* cancel = nullptr);

// The QK / OV circuits of every head of a bidirectional model (Elhage et al., 2021), from
// the raw weights as headCircuits() (no LayerNorm folding, no biases), each W as it maps row
// vectors: W_QK = W_Q^h·W_K^hᵀ, W_OV = W_V^h·W_O^h (E x E), their 8 largest singular values;
// kvHead = head. copying = Σλ / Σ|λ| over the eigenvalues of W_E·W_OV·W_U with W_E = `embed`
// (V x E, the word embedding) and W_U = `unembed`ᵀ (`unembed` V x E: the MLM head's decoder,
// without the MLM transform and its norm), solved as those of W_O^h·(W_U·W_E)·W_V^h
// (d_h x d_h). NaN copying when `embed` or `unembed` is null (ViT: no vocabulary; an
// encoder without its MLM head) or every eigenvalue is 0. Layer-major, L·H entries.
std::vector<HeadCircuit> bidirectionalHeadCircuits(std::span<const EncoderLayerWeights> layers, int heads,
                                                   const Tensor* embed, const Tensor* unembed);

}  // namespace attn::model
