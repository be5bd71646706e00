// Rotary position embedding (RoPE): the inverse frequencies and the attention factor of every
// rope type Hugging Face transformers implements in modeling_rope_utils.py, written from its
// formulas (_compute_default_rope_parameters, _compute_linear_scaling_rope_parameters,
// _compute_dynamic_ntk_parameters, _compute_yarn_parameters, _compute_longrope_parameters,
// _compute_llama3_parameters), and the cos / sin tables the engine rotates q and k with.
// Eigen only; formats/models/rope_config.h fills RopeScaling from config.json.
//
// With d = the rotated dimensions per head (rotaryDims, even) and θ = rope_theta, the
// default inverse frequencies are inv[i] = θ^(−2i/d), i = 0 .. d/2 − 1. A position p is
// rotated by the angles p·inv[i]; Hugging Face's half-split layout pairs dimension i with
// i + d/2. cos and sin are multiplied by the attention factor (transformers'
// attention_scaling), so a type with a factor f scales every q·k score by f².
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/types.h"

namespace attn::model {

// rope_type: default, linear, dynamic (NTK-aware, depends on the sequence length), yarn,
// longrope (short / long factors chosen by the sequence length), llama3.
enum class RopeType { Default, Linear, Dynamic, Yarn, LongRope, Llama3 };

// "default", "linear", "dynamic", "yarn", "longrope", "llama3".
std::string_view ropeTypeName(RopeType type);

// The scaling parameters as transformers reads them from rope_scaling / rope_parameters.
// Unused fields keep their defaults. A 0 for `attentionFactor`, `mscale`, `mscaleAllDim`
// means "absent" (transformers' None), as does a 0 `factor` for yarn and longrope (then
// factor = maxPositions / originalMaxPositions).
struct RopeScaling {
  RopeType type = RopeType::Default;
  double factor = 1.0;           // linear, dynamic, yarn, llama3, longrope
  int maxPositions = 0;          // config.json's max_position_embeddings (dynamic, yarn, longrope)
  int originalMaxPositions = 0;  // original_max_position_embeddings (yarn, longrope, llama3)
  double lowFreqFactor = 1.0;    // llama3
  double highFreqFactor = 4.0;   // llama3
  double betaFast = 32.0;        // yarn
  double betaSlow = 1.0;         // yarn
  double mscale = 0.0;           // yarn
  double mscaleAllDim = 0.0;     // yarn
  double attentionFactor = 0.0;  // yarn, longrope: given explicitly (0 = derived)
  bool truncate = true;          // yarn: floor / ceil the correction range
  std::vector<double> shortFactor, longFactor;  // longrope, rotaryDims / 2 each

  bool operator==(const RopeScaling&) const = default;
};

// The inverse frequencies (rotaryDims / 2) and the factor cos and sin are multiplied by.
struct RopeFrequencies {
  std::vector<double> inverse;
  double attentionFactor = 1.0;
};

// The frequencies for a sequence of `length` tokens (positions 0 .. length − 1), as
// transformers' rotary embedding computes them for one forward pass over `length` tokens:
//   default   inv[i] = θ^(−2i/d)
//   linear    inv[i] / factor
//   dynamic   for length > maxPositions: θ' = θ·(factor·length/maxPositions − (factor − 1))^(d/(d−2)),
//             inv[i] = θ'^(−2i/d); otherwise the default
//   yarn      a ramp between inv[i] / factor and inv[i] over the dimensions whose rotations in
//             originalMaxPositions lie between beta_slow and beta_fast; attention factor
//             attention_factor, else mscale(factor, mscale) / mscale(factor, mscale_all_dim)
//             when both are given, else 0.1·ln(factor) + 1 (1 for factor <= 1)
//   longrope  inv[i] / ext[i], ext = long_factor when length > originalMaxPositions, else
//             short_factor; attention factor attention_factor, else
//             √(1 + ln(factor) / ln(originalMaxPositions)) (1 for factor <= 1)
//   llama3    wavelengths 2π/inv[i] above originalMaxPositions / low_freq_factor divided by
//             factor, below originalMaxPositions / high_freq_factor kept, smoothed between
// rotaryDims must be even and > 0 (validateRope checks the rest).
RopeFrequencies ropeFrequencies(double theta, const RopeScaling& scaling, int rotaryDims,
                                std::int64_t length);

// Two lengths with the same key give the same frequencies (0 for the types that do not
// depend on the length). A KV cache computed at one key must be recomputed at another.
std::int64_t ropeLengthKey(const RopeScaling& scaling, std::int64_t length);

// The longest sequence the engine runs with this scaling: factor · maxPositions for
// dynamic (the length dynamic NTK scaling extends the context to), else `maxPositions`.
int ropeContextLength(const RopeScaling& scaling, int maxPositions);

// Checks the parameters against rotaryDims: finite positive factors, yarn's beta_fast >=
// beta_slow, llama3's high_freq_factor > low_freq_factor, longrope's factor lists of
// rotaryDims / 2 positive numbers, an original_max_position_embeddings >= 1 where the type
// reads one, dynamic with more than 2 rotated dimensions. Errors name the field as
// config.json's rope_scaling does ("rope_scaling.factor"); the file is left to the caller.
Status validateRope(double theta, const RopeScaling& scaling, int rotaryDims);

// cos and sin of the angles p·inv[i] for the `count` positions p = first .. first + count − 1,
// each multiplied by the attention factor: count x (rotaryDims / 2) each (row r = position
// first + r). Angles in double, rounded to float once.
void ropeCosSin(const RopeFrequencies& frequencies, std::int64_t first, Eigen::Index count,
                Matrix& cosines, Matrix& sines);

}  // namespace attn::model
