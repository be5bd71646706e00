// The normalisation every model of the engine applies (the decoders of transformer.cpp, the
// encoders of encoder.cpp, the vision transformer of vit.cpp). The other shared blocks are
// declared in transformer.h and live in linear.cpp: applyLinear / applyLinears (the one way
// a Linear is applied, F32 or BF16 weights in place, on the pool) and activateInPlace.
// Eigen only.
//
// Shapes use the core's conventions (core/attention/attention.h): tokens are ROWS.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/base/random.h"
#include "core/base/types.h"
#include "core/models/transformer.h"

namespace attn::model {

// The norm of one row x (E floats) into out (E floats; may be x), with the weights `norm`:
//   LayerNorm  (x − mean(x)) / √(var(x) + eps) · w + b   (biased variance, nn.LayerNorm)
//   RMSNorm    x / √(mean(x²) + eps) · w                 (Hugging Face's LlamaRMSNorm)
void normRow(const float* x, Eigen::Index E, const NormWeights& norm, NormKind kind, float epsilon,
             float* out);

// normRow over every row of x (m x E) into out (resized to m x E; must not alias x). The
// first form takes the kind and eps from a decoder Config (config.norm, config.normEpsilon);
// the second is for the encoders and ViT, whose configuration is not a decoder Config.
void applyNorm(const Matrix& x, const NormWeights& norm, const Config& config, Matrix& out);
void applyNorm(const Matrix& x, const NormWeights& norm, NormKind kind, float epsilon,
               Matrix& out);

// A rows x cols tensor of uniform noise with standard deviation `std` around `mean`, drawn
// from `rng` (the one generator), its floats kept alive in `storage`: random weights of
// every family, for tests and benchmarks.
Tensor randomTensor(SplitMix64& rng, Eigen::Index rows, Eigen::Index cols, float std, float mean,
                    std::vector<std::shared_ptr<const void>>& storage);

// A configuration size in [lo, hi], else an error naming `field` ("n_head: 0 is outside
// 1..1024"), for every family's validate(Config).
Status checkRange(const char* field, int value, int lo, int hi);

// Checks of a model's weights against its configuration, shared by every family's
// validate(). Errors (file left empty for the caller) name the tensor by its role
// ("layer 3 q weight") and give both shapes, "[768, 2304], expected [768, 768]".
//   checkTensor  t is rows x cols (a vector: cols = 1); missing is an error
//   checkLinear  in -> out as stored ([in, out], or [out, in] with lin.outByIn), with a bias
//                of `out` when `bias`, and none when not
//   checkNorm    weight E, and a bias E for LayerNorm (RMSNorm has none)
Status checkTensor(const Tensor& t, Eigen::Index rows, Eigen::Index cols, const std::string& role);
Status checkLinear(const Linear& lin, Eigen::Index in, Eigen::Index out, bool bias,
                   const std::string& role);
Status checkNorm(const NormWeights& norm, Eigen::Index E, NormKind kind, const std::string& role);

}  // namespace attn::model
