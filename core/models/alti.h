// ALTI, Aggregation of Layer-wise Token-to-token Interactions (Ferrando, Gállego and
// Costa-jussà, 2022, "Measuring the Mixing of Contextual Information in the Transformer"),
// issue 30's fourth mechanism, on the decoder engine (core/models/transformer.h). The other
// three and the shapes' conventions are in core/models/mechanisms.h; docs/analyses.md
// section 6 states the formula, and tests/formats/mechanisms_reference.py checks it.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "core/models/transformer.h"

namespace attn::model {

// The layer-wise contributions of every token to every token's output of the attention
// sublayer with its residual, with the L1 distance:
//   y_i      = x_i + Σ_h Σ_j a[l,h,i,j]·f_h(x_j) + b_O        (the stream after attention, n x E)
//   T_i(x_j) = Σ_h a[l,h,i,j]·f_h(x_j) + [i = j]·x_i           (token j's part of y_i)
//   c[l,i,j] = max(0, ‖y_i‖₁ − ‖y_i − T_i(x_j)‖₁),   ALTI[l,i,j] = c[l,i,j] / Σ_k c[l,i,k]
// x = the stream entering block l, f_h(x_j) = (Norm1(x_j)·W_V^g + b_V^g)·W_O^h as in
// normWeightedAttention (the engine's own values; g = the KV head of query head h), b_O the
// output projection's bias (it belongs to no token, so it stays in y only). A pre-norm block
// needs no linearised LayerNorm: the norm acts on each x_j before the values. A key after
// the query contributes nothing (T = 0, c = 0). Rows summing to 0 stay 0. In double.
// Returns [L, n, n] float32. Errors: a parallel-residual (gpt_neox) or sandwich-norm
// (gemma2) model, whose attention output is not added to the stream alone (field "model");
// as runWithHooks (ids out of range, too many tokens).
Expected<std::vector<float>> altiContributions(std::shared_ptr<const Weights> weights, std::span<const int> ids,
                                               int threads = 0);

}  // namespace attn::model
