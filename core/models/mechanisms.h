// Beyond raw attention weights (issue 30): norm-weighted attention, value zeroing, attention
// flow and the QK / OV circuits of every head, on the decoder engine (core/models/
// transformer.h). Pure functions of a run or of the weights; docs/analyses.md states every
// formula with its paper, and tests/formats/mechanisms_reference.py is an independent numpy
// version the tests compare with.
//
// Shapes: L = layers, H = query heads, H_kv = key/value heads, g = kvHeadOf(h) = h / (H /
// H_kv) the KV head query head h reads, E = model width, d_h = head width, V = vocabulary,
// n = tokens. Row-major tensors [L, H, n, n] index (l, h, i, j) as ((l·H + h)·n + i)·n + j;
// row i is the query (the token that reads), column j the key.
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "core/models/transformer.h"

namespace attn::model {

// ---------------------------------------------------------------------------------------
// Norm-weighted attention (Kobayashi et al., 2020, "Attention is Not Only a Weight")
// ---------------------------------------------------------------------------------------

// N[l,h,i,j] = ‖a[l,h,i,j] · f_h(x_j)‖ = a[l,h,i,j] · ‖f_h(x_j)‖ (a >= 0), with
// f_h(x_j) = (Norm1(x_j)·W_V^g + b_V^g)·W_O^h: token j's value vector of KV head g as the
// engine computed it (DecoderRun::value: the layer's own pre-attention norm, bias included)
// times rows h·d_h..(h+1)·d_h of the output projection (d_h x E; no output bias).
// Returns [L, H, n, n] float32 (zeros above the diagonal and outside a sliding window).
std::vector<float> normWeightedAttention(const DecoderRun& run);

// The norms ‖f_h(x_j)‖ of one layer: H x n (row h, column j).
Matrix transformedValueNorms(const DecoderRun& run, int layer);

// The same for a bidirectional run (an encoder's EncoderRun or a ViT's VitRun, whose blocks
// are core/models/encoder.h's): attention [L, H, n, n] (full rows), qkv L matrices n x 3E
// (q | k | v; head h = columns h·d_h..(h+1)·d_h of each third), outputs the L output
// projections (E -> E, as stored). The values are the run's own: x_j·W_V + b_V of the
// block's input for BERT's post-norm blocks (that input already left the previous block's
// LayerNorm, as Kobayashi et al. take it), LN1(x_j)·W_V + b_V for ViT's pre-norm blocks.
// Returns [L, H, n, n] float32.
std::vector<float> normWeightedAttention(std::span<const float> attention, std::span<const Matrix> qkv,
                                         std::span<const Linear> outputs, int heads);

// ---------------------------------------------------------------------------------------
// Value zeroing (Mohebbi et al., 2023)
// ---------------------------------------------------------------------------------------

// Z[l,i,j] = 1 − cos(y_i, y_i^¬j) / (row sum), where y (n x E) is the residual stream after
// block l (what enters block l + 1) and y^¬j the same block re-run on the same input with
// token j's value vectors zeroed in every KV head of layer l (the attention weights kept as
// they are, as in the paper's code). j runs over 0..i (the decoder is causal: zeroing a later
// token's values changes nothing at i, and Z is 0 there); each row is divided by its sum
// (a row whose sum is 0 stays 0). The cosine is taken in double; a distance below 0 by
// rounding counts as 0.
//
// How: one recorded pass (Hooks::record) gives every layer's input resid[l], its head
// outputs z[l] and its output resid[l + 1]. Block l alone is then re-run as a one-layer
// model that shares the weights (singleLayerModel: no copy): a ResidHook puts resid[l] in
// place of the embeddings at every position, and one HeadHook per query head replaces z_h by
// z_h − a_h[:, j]·v_{g,j} (exactly A_h·V_g with row j of V_g zeroed). L·n one-layer passes.
// Returns [L, n, n] float32. Errors: as runWithHooks (ids out of range, too many tokens);
// field "cancelled" when `cancel` (may be null) turned true, checked before every re-run
// (the window's worker stops a computation a newer text replaced).
// `progress` (when set) is called after every re-run with (done, L·n).
Expected<std::vector<float>> valueZeroing(std::shared_ptr<const Weights> weights,
                                          std::span<const int> ids, int threads = 0,
                                          const std::function<void(int done, int total)>& progress = {},
                                          const std::atomic<bool>* cancel = nullptr);

// The one-layer model of block `layer` of `weights`: views of the same tensors (block
// `layer` with its sliding window, the position table, the final norm) and a vocabulary of
// one token, row 0 of the embedding and of lm_head, so that a pass costs the block alone
// (its embeddings are replaced by a ResidHook and its logits are not read: run it on ids of
// zeros). Kept alive by a reference to `weights`. Used by valueZeroing().
std::shared_ptr<const Weights> singleLayerModel(std::shared_ptr<const Weights> weights, int layer);

// ---------------------------------------------------------------------------------------
// Attention flow (Abnar & Zuidema, 2020)
// ---------------------------------------------------------------------------------------

// The layered graph of (L+1)·n nodes, node (k, t) = k·n + t for k = 0..L (0 = the input
// tokens), with an edge (k, j) -> (k+1, i) of capacity Â_k[i, j] wherever it is > 0, where
// Â_k = residualAttention(mean_h A_k) (core/attention/aggregate.h: 0.5·A + 0.5·I, rows
// renormalised: the matrices of attention rollout). F[i, j] = the maximum flow from input
// node (0, j) to top node (L, i) (FlowNetwork, exact up to double rounding).
// layerMeans: L matrices n x n (the mean over heads of each layer, first layer first).
// normalize: divide each row of F by its sum (a row whose sum is 0 stays 0).
// Returns F, n x n. Errors: no layer, a matrix not square or of another n. The n sinks are
// shared out over `threads` threads (0 = every core), each with its own copy of the graph.
Expected<Matrix> attentionFlow(std::span<const Matrix> layerMeans, bool normalize, int threads = 0);
// The same for a decoder run (its attention averaged over the H query heads of each layer).
Expected<Matrix> attentionFlow(const DecoderRun& run, bool normalize, int threads = 0);
// The same for a contiguous [L, H, n, n] tensor (EncoderRun::attention, VitRun::attention).
Expected<Matrix> attentionFlow(std::span<const float> lhnn, int layers, int heads, int n, bool normalize,
                               int threads = 0);

// ---------------------------------------------------------------------------------------
// Head circuits (Elhage et al., 2021, "A Mathematical Framework for Transformer Circuits")
// ---------------------------------------------------------------------------------------

inline constexpr int kCircuitSingularValues = 8;

// Of query head h of layer l, from the raw weights (no LayerNorm folding, no biases, no
// rotary), each W as it maps row vectors (x·W):
//   W_QK = W_Q^h · W_K^gᵀ   (E x E; W_Q^h, W_K^g: E x d_h)
//   W_OV = W_V^g · W_O^h    (E x E; W_V^g: E x d_h, W_O^h: d_h x E)
// qk, ov: their 8 largest singular values, largest first (rank <= d_h: zeros past d_h).
// copying = Σ_k λ_k / Σ_k |λ_k| over the eigenvalues λ of W_E·W_OV·W_U (V x V; W_E = the
// embedding V x E, W_U = lm_headᵀ E x V), which has the same nonzero eigenvalues as the
// E x E matrix W_OV·W_U·W_E and as the d_h x d_h matrix W_O^h·(W_U·W_E)·W_V^g (AB and BA
// share their nonzero eigenvalues): the last is what is solved (Eigen's EigenSolver, in
// double). NaN when every eigenvalue is 0.
struct HeadCircuit {
  int layer = 0, head = 0, kvHead = 0;
  std::array<double, kCircuitSingularValues> qk{}, ov{};
  double copying = 0;
};

// Every layer and query head, layer-major (L·H entries). The weights may be float32, BF16 or
// quantized (widened exactly as the engine reads them). W_U·W_E (E x E) is formed once, in
// double, over blocks of vocabulary rows.
std::vector<HeadCircuit> headCircuits(const Weights& weights);

// One query head's raw projections in double, as they map row vectors (x·W + b), whatever
// the layer's QkvLayout (fused columns q | k | v, gpt_neox's per-head interleaving, or
// separate projections) and storage ([in, out] or [out, in]; BF16 and quantized widened):
// what headCircuits() reads. A llama-architecture GGUF's q and k columns are in llama.cpp's
// permuted order within each head, as stored.
struct HeadWeights {
  int kvHead = 0;
  Eigen::MatrixXd q, k, v;               // E x d_h: W_Q^h, W_K^g, W_V^g
  Eigen::RowVectorXd qBias, kBias, vBias;  // d_h each (zeros when the model has none)
  Eigen::MatrixXd out;                   // d_h x E: W_O^h
};
HeadWeights headWeights(const Weights& weights, int layer, int head);

// The singular values of A·Bᵀ (A, B: E x k) in decreasing order, k of them (min(E, k)
// nonzero at most), through thin QR: A = Q_a R_a, B = Q_b R_b, A·Bᵀ = Q_a (R_a R_bᵀ) Q_bᵀ,
// so they are those of the k x k matrix R_a R_bᵀ (E < k: the E x E product itself).
Eigen::VectorXd productSingularValues(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b);

}  // namespace attn::model
