// The types of the attention mechanism: the kinds (score, mask, normaliser, projection)
// and their names, the options and inputs of attend(), and its results. Split from
// core/attention/attention.h so that code that only passes these around (scenario files, views,
// the compute worker) does not need the functions. Conventions: see core/attention/attention.h.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/types.h"

namespace attn {

// ---------------------------------------------------------------------------------------
// Kinds and their names (the names are the ones used in scenario files and the CLI).
// ---------------------------------------------------------------------------------------

// dot: q·k; scaled_dot: q·k/√d_h; cosine: q·k/(|q||k|); general: qᵀ·W_a·k;
// additive: vᵀ·tanh(W₁q + W₂k + b) (Bahdanau); mlp: w_oᵀ·tanh(W_h·[q;k] + b_h) + b_o.
enum class ScoreKind { Dot, ScaledDot, Cosine, General, Additive, Mlp };
// Every score, in the order above (the CLI's --score lists them).
inline constexpr ScoreKind kAllScoreKinds[] = {ScoreKind::Dot,     ScoreKind::ScaledDot,
                                               ScoreKind::Cosine,  ScoreKind::General,
                                               ScoreKind::Additive, ScoreKind::Mlp};
// none; causal (key j allowed iff j <= i); padding (per-key validity); local (|j - p| <= D);
// local_gaussian (local window, and weights multiplied by exp(-(j-p)²/(2σ²)), σ = D/2);
// custom (explicit 0/1 matrix).
enum class MaskKind { None, Causal, Padding, Local, LocalGaussian, Custom };
// softmax (stable); hard (one-hot argmax, ties split evenly); top_k (softmax over the k
// largest allowed scores); sparsemax (Martins & Astudillo 2016).
enum class NormalizerKind { Softmax, Hard, TopK, Sparsemax };
// identity (raw vectors), xavier (seeded Xavier-uniform, zero bias), explicit (given
// matrices), pytorch (nn.MultiheadAttention's in_proj/out_proj block: W_q, W_k, W_v stacked
// in blocks), qkv_interleaved (the same fields from one qkv_proj Linear whose output is viewed
// as [heads, 3·d_h] and chunked into q, k, v: interleaved per head, see
// blockedFromInterleavedQkv()).
enum class ProjectionKind { Identity, Xavier, Explicit, PyTorch, QkvInterleaved };

std::string_view toString(ScoreKind kind);
std::string_view toString(MaskKind kind);
std::string_view toString(NormalizerKind kind);
std::string_view toString(ProjectionKind kind);
// Parse the names above ("scaled_dot", "local_gaussian", "top_k", ...). nullopt if unknown.
std::optional<ScoreKind> parseScoreKind(std::string_view name);
std::optional<MaskKind> parseMaskKind(std::string_view name);
std::optional<NormalizerKind> parseNormalizerKind(std::string_view name);
std::optional<ProjectionKind> parseProjectionKind(std::string_view name);

// ---------------------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------------------

// Parameters of the parametric score functions, for ONE head (widths in terms of d_h).
// Only the fields of the chosen ScoreKind are used. Empty fields are filled from the seed.
struct ScoreParams {
  Matrix generalW;        // general:  W_a (d_h x d_h); score = q·W_a·kᵀ
  Matrix additiveWq;      // additive: W₁ (d_h x d_a), applied as q·W₁
  Matrix additiveWk;      // additive: W₂ (d_h x d_a), applied as k·W₂
  Vector additiveBias;    // additive: b (d_a)
  Vector additiveV;       // additive: v (d_a); score = tanh(q·W₁ + k·W₂ + b)·v
  Matrix mlpHiddenW;      // mlp: W_h (2·d_h x d_m), applied as [q k]·W_h
  Vector mlpHiddenBias;   // mlp: b_h (d_m)
  Vector mlpOutW;         // mlp: w_o (d_m)
  Scalar mlpOutBias = 0;  // mlp: b_o; score = tanh([q k]·W_h + b_h)·w_o + b_o
};

// Full-width projections. Head h uses columns [h·d_h, (h+1)·d_h) of wq/wk (and of wv with
// dv_h), i.e. the same split as PyTorch's nn.MultiheadAttention. When `identity` is true
// the matrices are ignored: Q, K, V are the raw inputs and there is no output projection.
struct Projections {
  bool identity = true;
  Matrix wq;  // d_q_in x d_model
  Vector bq;  // d_model (empty = zero)
  Matrix wk;  // d_k_in x d_model
  Vector bk;  // d_model
  Matrix wv;  // d_v_in x dv_model
  Vector bv;  // dv_model
  Matrix wo;  // dv_model x d_out (empty = no output projection: output = concat)
  Vector bo;  // d_out
};

struct MaskOptions {
  MaskKind kind = MaskKind::None;
  std::vector<bool> keyValid;  // padding: n_k entries, false = padding token (masked)
  int window = 2;              // local / local_gaussian: half-width D (>= 0)
  // Where the local window is centred: at p = t, the query's own index (Luong local-m),
  // or at one fixed position p for every query.
  enum class Center { Aligned, Fixed } center = Center::Aligned;
  int position = 0;            // fixed p (0-based key index)
  BoolMatrix custom;           // custom: n_q x n_k, true = allowed
};

struct NormalizerOptions {
  NormalizerKind kind = NormalizerKind::Softmax;
  int topK = 2;  // top_k: how many keys keep weight (>= 1)
};

// The decoder output step of the seq2seq formulation (Luong et al. 2015):
// y = tanh([c; h]·W_c), where c is the attention output row and h the raw query row.
struct DecoderOutputOptions {
  bool enabled = false;
  Matrix wc;  // (d_out + d_q_in) x d_y; empty = seeded Xavier with d_y = d_q_in
};

struct Options {
  ScoreKind score = ScoreKind::ScaledDot;
  int heads = 1;
  Scalar temperature = 1;  // scores are divided by it before normalising (> 0)
  MaskOptions mask;
  NormalizerOptions normalizer;
  Projections projections;              // identity by default
  std::vector<ScoreParams> scoreParams;  // per head; missing heads/fields come from `seed`
  int scoreHidden = 0;  // d_a / d_m of additive and mlp scores; 0 = d_h
  std::uint64_t seed = 0;
  DecoderOutputOptions decoderOutput;
};

struct Inputs {
  Matrix queries;  // n_q x d_q_in
  Matrix keys;     // n_k x d_k_in
  Matrix values;   // n_k x d_v_in (self-attention: all three are the same X)
};

// ---------------------------------------------------------------------------------------
// Results
// ---------------------------------------------------------------------------------------

// Something that did not stop the computation but that the user must be told about.
struct Warning {
  std::string code;     // stable id: "fully_masked_row", "cosine_zero_vector", ...
  std::string message;  // one human line
  int head = -1;        // -1 = not head-specific
  int row = -1;         // query row, -1 = not row-specific
};

// One head. The raw scores and the masked scores (n_q x n_k each) are not kept: they are
// derived from q, k, params and the mask whenever a view asks, by headScores() and
// headMaskedScores() below (issue 11: keeping them took 2/3 of a result's memory).
struct HeadResult {
  Matrix q;             // n_q x d_h
  Matrix k;             // n_k x d_h
  Matrix v;             // n_k x dv_h
  Matrix weights;       // n_q x n_k, rows sum to 1 (0 for fully masked rows)
  Matrix context;       // n_q x dv_h, weights·v
  ScoreParams params;   // the score parameters actually used (seeded ones filled in)
};

struct AttentionResult {
  std::vector<HeadResult> heads;
  BoolMatrix allowed;              // n_q x n_k, the mask actually applied
  Matrix positionWeights;          // n_q x n_k, local_gaussian only (else empty)
  Matrix concat;                   // n_q x dv_model, heads side by side
  Matrix output;                   // n_q x d_out, concat·W_o + b_o (= concat if no W_o)
  Matrix weightsMean;              // n_q x n_k, mean over heads (PyTorch average_attn_weights)
  Matrix decoderOutput;            // n_q x d_y when enabled, else empty
  Projections projections;         // the projections actually used (seeded ones filled in)
  std::vector<int> fullyMaskedRows;  // query rows whose keys are all masked
  std::vector<Warning> warnings;
  // What headScores() / headMaskedScores() need besides the heads and `allowed`:
  ScoreKind score = ScoreKind::ScaledDot;  // the score function of step 2
  Scalar temperature = 1;                  // step 3's divisor
  bool masked = false;                     // false: no mask (then `allowed` is all true)
};

}  // namespace attn
