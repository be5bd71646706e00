// Long context without n² memory (issue 29): the decoder forward pass with a tiled
// ("flash-style") attention that never holds more than one tile of scores per thread, and
// the per-row summaries of every head's attention computed by the same tiles. Eigen only.
//
// The math (docs/long-context.md). For query i of one head, with the scores
//   s_ij = cap·tanh(scale·q_i·k_j / cap)   (no tanh without soft-capping; scale = 1/√d_h or
//                                           query_pre_attn_scalar^-½)
// over its visible keys V(i) (causal: j <= i; a sliding window w: i − w < j <= i), the row's
// log-sum-exp lse_i = log Σ_{j∈V(i)} exp(s_ij) is found in one pass over key tiles with a
// running maximum m and sum l (l ← l·e^{m−m'} + Σ e^{s−m'}); the head's output row is
// accumulated the same way (o ← o·e^{m−m'} + Σ e^{s−m'}·v_j; o/l at the end). Then any weight
// is a_ij = exp(s_ij − lse_i) exactly, so a second pass over the same tiles gives
//   entropy_i    = −Σ_j a_ij·(s_ij − lse_i)                    (nats)
//   topk_i       the K largest a_ij, descending (ties: lower j first), with their j
//   sink_i       = Σ_{j < sink} a_ij
//   local_i      = Σ_{j: 0 <= i − j < local} a_ij              (the query itself and the
//                                                               local − 1 keys before it)
//   distant_i    = Σ_{j >= sink, i − j >= local} a_ij          (neither sink nor local: 1 −
//                                                               the mass of their union)
//   col_sum_j    = Σ_i a_ij                                    (the attention key j receives)
// and any block of weights. Both passes multiply tiles with the BLAS GEMM (OpenBLAS through
// Eigen); the row blocks of a head run on the shared pool (core/base/parallel.h).
//
// Memory: the residual stream (n x E), one layer's q | k | v (n x (H + 2·H_kv)·d_h), the
// heads' outputs (n x H·d_h) and the summaries (7 + 2K floats per row per head), plus per
// thread one row block's tile of scores and per head one column-sum vector: O(n), never
// O(n²). The MLP and the projections run on row chunks (kChunkRows rows at a time).
//
// Families: every decoder of transformer.h (gpt2, gpt_neox, llama / mistral / qwen2 / qwen3 /
// phi3 / gemma2: GQA, per-layer sliding windows, soft-capping, query_pre_attn_scalar,
// q/k norms, parallel residuals, sandwich norms, GGUF files). Encoders (bidirectional) are
// not run by this pass; the tiled head function itself takes a bidirectional mask
// (KeyMask::causal = false), so their summaries are one driver away.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/base/types.h"
#include "core/models/transformer.h"

namespace attn::model {

// Which keys a query sees.
//   causal, window 0    j <= i
//   causal, window w    i − w < j <= i
//   !causal             every key (a bidirectional encoder; window must be 0)
struct KeyMask {
  bool causal = true;
  int window = 0;
};

// One block of exact weights to cut out of the pass: layer, query head, query rows
// [q0, q1) and key columns [k0, k1) (half-open, 0-based).
struct TileRequest {
  int layer = 0, head = 0;
  int q0 = 0, q1 = 0, k0 = 0, k1 = 0;
};

struct SummaryOptions {
  int sink = 4;    // sink_mass: the weight on keys 0..sink-1 (>= 0)
  int local = 64;  // local_mass: the weight on keys j with 0 <= i − j < local (>= 1);
                   // bidirectional: |i − j| < local
  int topK = 8;    // top-k per row (>= 1)
  int threads = 0;          // 0 = every core (the shared pool)
  int rowBlock = 64;        // query rows per tile (one pool item)
  int keyTile = 512;        // keys per tile
  std::vector<TileRequest> tiles;  // exact blocks to return (LongSummary::tiles, same order)
  // Called on the caller's thread once per layer, after the layer's q | k | v rows are
  // computed (n x (H + 2·H_kv)·d_h: q heads, k heads, v heads; q and k after the rotary and
  // the q/k norms, as DecoderRun::query / key hold them) and before its attention: what a window
  // keeps to recompute tiles later (exactTile), and what the tests' float64 reference reads.
  // Valid during the call only.
  std::function<void(int layer, const MatrixView& qkv)> onLayerQkv;
};

// Per-row summaries of every head: arrays [L, H, n] (topk: [L, H, n, K]), row-major, head
// (l, h) row i at index (l·H + h)·n + i. A row with fewer than K visible keys pads its top-k
// with index −1 and weight 0.
struct LongSummary {
  int layers = 0, heads = 0, n = 0, topK = 0;
  std::vector<float> lse;        // log Σ exp of the scaled, capped, masked scores
  std::vector<float> entropy;    // nats
  std::vector<float> sinkMass;
  std::vector<float> localMass;
  std::vector<float> distantMass;  // keys j >= sink with i − j >= local (|i − j| bidirectional)
  std::vector<float> colSum;     // [L, H, n]: index j = key j, summed over the queries
  std::vector<std::int32_t> topIdx;  // [L, H, n, K]
  std::vector<float> topW;           // [L, H, n, K], descending per row
  std::vector<Matrix> tiles;     // (q1 − q0) x (k1 − k0) each, as requested (masked keys 0)
  double seconds = 0;            // wall time of the pass
};

// Called on the caller's thread after every head of every layer: done / total heads.
using SummaryProgress = std::function<void(int done, int total)>;

// Checks the options against a model of L layers x H heads and n tokens; errors name the
// field ("sink", "local", "topk", "tile": layer out of range, q1 > n, an empty block, ...).
Status validateSummaryOptions(const SummaryOptions& options, int layers, int heads, int n);

// Runs the decoder on `ids` with the tiled attention and returns every head's summaries
// (and the requested tiles). Errors: the options (validateSummaryOptions), ids outside the
// vocabulary or more than n_positions tokens (as DecoderRun::setTokens), "cancelled" when
// *cancel turns true (checked between row blocks). `progress` may be empty.
Expected<LongSummary> summarizeAttention(std::shared_ptr<const Weights> weights,
                                         std::span<const int> ids, const SummaryOptions& options,
                                         const SummaryProgress& progress = {},
                                         const std::atomic<bool>* cancel = nullptr);

// Where one head's pass writes (each may be null / empty to skip): n floats each for lse,
// entropy, sink, local, distant and colSum (colSum is overwritten), n·K for topIdx / topW, and
// context (n x d_h, row stride contextStride) for the head's attention output Σ_j a_ij·v_j.
struct HeadOutputs {
  float* lse = nullptr;
  float* entropy = nullptr;
  float* sinkMass = nullptr;
  float* localMass = nullptr;
  float* colSum = nullptr;
  std::int32_t* topIdx = nullptr;
  float* topW = nullptr;
  float* context = nullptr;
  Eigen::Index contextStride = 0;
  float* distantMass = nullptr;
};

// The tiled pass of one head: q (n x d), k and v (n x d; v may have 0 rows when no context
// is asked), scores s = scale·q·kᵀ, soft-capped when softcap > 0, masked by `mask`. The
// summaries (and context) into `out`. Row blocks run on options.threads threads of the
// pool; returns false (outputs incomplete) when *cancel turned true.
bool tiledHeadPass(const MatrixView& q, const MatrixView& k, const MatrixView& v, float scale,
                   float softcap, const KeyMask& mask, const SummaryOptions& options,
                   const HeadOutputs& out, const std::atomic<bool>* cancel = nullptr);

// The exact weights of rows [q0, q1) x keys [k0, k1) of one head from its rows' lse (n):
// a_ij = exp(s_ij − lse_i) on visible keys, 0 elsewhere. q, k as tiledHeadPass.
Matrix exactTile(const MatrixView& q, const MatrixView& k, std::span<const float> lse, float scale,
                 float softcap, const KeyMask& mask, int q0, int q1, int k0, int k1);

}  // namespace attn::model
