// The building blocks every model of the engine applies (the decoders of transformer.cpp,
// the encoders of encoder.cpp, the vision transformer of vit.cpp): one Linear, one
// activation, one normalisation. Eigen only.
//
// Shapes use the core's conventions (core/attention/attention.h): tokens are ROWS, a
// projection is applied on the right (X·W + b).
#pragma once

#include "core/base/types.h"
#include "core/models/transformer.h"

namespace attn::model {

// A row-major view with any row stride: a whole Matrix, an Eigen::Map of a buffer, or a
// block of columns of either (the q | k | v columns of a cache row).
using RowsRef = Eigen::Ref<Matrix, 0, Eigen::OuterStride<>>;
using ConstRowsRef = Eigen::Ref<const Matrix, 0, Eigen::OuterStride<>>;

// The one function that applies a Linear:
//   out (m x lin.out()) = in (m x lin.in())·W + b        (accumulate = false)
//   out (m x lin.out()) += in (m x lin.in())·W + b       (accumulate = true)
// W is used as stored: [in, out] (GPT-2's Conv1D) or [out, in] (nn.Linear, lin.outByIn).
// One row (m = 1, typing with the KV cache) is a matrix-vector product, so that BLAS runs
// gemv and streams W once. `out` must already have the right size; it must not alias `in`.
void project(const ConstRowsRef& in, const Linear& lin, RowsRef out, bool accumulate);

// The activation, element-wise in place on hidden (m x F):
//   GeluTanh  0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))   (gelu_new, gelu_pytorch_tanh)
//   GeluErf   0.5·x·(1 + erf(x / √2))                       (gelu: BERT, ViT, Pythia)
//   Silu      x / (1 + e^−x)                                 (silu / swish: llama family)
//   Relu      max(x, 0)                                      (relu: DistilBERT options)
void activate(Matrix& hidden, Activation activation);

// The family's norm of every row of x (m x E) into out (m x E), with the weights `norm`:
//   LayerNorm  (x − mean(x)) / √(var(x) + eps) · w + b   (biased variance, nn.LayerNorm)
//   RMSNorm    x / √(mean(x²) + eps) · w                 (Hugging Face's LlamaRMSNorm)
// config.norm picks the kind and config.normEpsilon is eps. out must not alias x.
void applyNorm(const Matrix& x, const NormWeights& norm, const Config& config, Matrix& out);
// The same with the kind and eps given directly (the encoders and ViT, whose configuration
// is not a decoder Config).
void applyNorm(const Matrix& x, const NormWeights& norm, NormKind kind, float epsilon,
               Matrix& out);

}  // namespace attn::model
