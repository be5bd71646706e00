// The attention mechanism, one pure function with every intermediate kept for display.
//
// Conventions (used in every comment of core/):
//   * vectors are ROWS: a sequence of n tokens of width d is an (n x d) matrix;
//   * a projection is applied on the right: Q = X·W + b, with W (d_in x d_out), b (d_out);
//   * n_q = number of queries, n_k = number of keys (= number of values), H = heads,
//     d_model = projected width of Q and K, d_h = d_model / H (per-head width),
//     dv_model = projected width of V, dv_h = dv_model / H, d_out = width after W_o.
//
// The steps of attend() are numbered as they are taught:
//   1 project, 2 score, 3 mask, 4 normalise, 5 weigh values, 6 concat heads,
//   7 output projection, (8 optional decoder output step y = tanh([c; h]·W_c)).
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/attention/attention_types.h"
#include "core/base/types.h"

namespace attn {

// The kinds, options, inputs and result structs are in core/attention/attention_types.h.

// ---------------------------------------------------------------------------------------
// Derived stages and the mechanism
// ---------------------------------------------------------------------------------------

// Step 2 of head `head`, computed again from the result: rows [first, first + count) of the
// raw scores (count x n_k), the very numbers attend() normalised (same blocks, same bits).
// Cost: the score function on the 64-row blocks that cover the rows (one small GEMM for the
// dot products). Empty when head or rows are out of range.
Matrix headScoreRows(const AttentionResult& result, int head, int first, int count);
// The same after step 3: scores / temperature (clamped to ±FLT_MAX), -inf where masked.
Matrix headMaskedScoreRows(const AttentionResult& result, int head, int first, int count);
// Every row: n_q x n_k.
Matrix headScores(const AttentionResult& result, int head);
Matrix headMaskedScores(const AttentionResult& result, int head);

// Checks shapes, head count, parameters and finiteness without computing. The error's
// `field` names the option ("heads", "mask.custom", "queries", ...); `file` is empty.
Status validate(const Inputs& inputs, const Options& options);

// Runs the whole mechanism. Never asserts on user input: everything validate() rejects is
// returned as an Error. Never produces NaN from finite inputs.
Expected<AttentionResult> attend(const Inputs& inputs, const Options& options);

// The same, computed into `out`, reusing its storage: every matrix whose shape is unchanged
// keeps its buffer (heads: n_q x d_h, n_k x d_h, n_k x dv_h, three n_q x n_k, n_q x dv_h;
// allowed n_q x n_k; concat n_q x dv_model; output n_q x d_out; ...), so recomputing with
// the same shapes (the window does, on every edit) allocates and page-faults almost nothing.
// `out` may be default-constructed or hold any earlier result; on success it equals what
// attend(inputs, options) returns, bit for bit. On a validation error `out` is untouched. On
// an error found while computing (float32 overflow), `out` holds a partial result: a caller
// that must keep showing the previous result computes into a second AttentionResult and
// swaps on success.
Status attend(const Inputs& inputs, const Options& options, AttentionResult& out);

// How attend() runs, as opposed to what it computes: the result has the same bits for every
// thread count (the work is split into items that do not depend on it: per head, per block
// of rows; tests/core/test_core_isa.cpp checks it).
struct RunOptions {
  // Threads to use, >= 1; 0 = every core this process may run on (availableCores()).
  // The items of each step (256-row blocks of the full-width projections, then (head,
  // query-row block) pairs for scores, softmax and context, with 64 to 256 rows by n_k, then
  // row blocks of the mean and the output projection) are
  // handed out to `threads` threads. OpenBLAS runs single-threaded inside them (attend() sets
  // its process-wide thread count to 1 for the call and puts the previous value back), so
  // there are never more busy threads than `threads`. Two attend() calls may run at the same
  // time (each on its own result).
  int threads = 1;
};
// `threads` with 0 resolved to the number of cores, clamped to [1, 256].
int resolvedThreads(const RunOptions& run);

// attend(inputs, options, out) on the threads `run` asks for (the other overloads use one).
Status attend(const Inputs& inputs, const Options& options, AttentionResult& out,
              const RunOptions& run);

// ---------------------------------------------------------------------------------------
// The individual steps, public so that tests and the inspector can use them.
// ---------------------------------------------------------------------------------------

// Seeded Xavier-uniform (Glorot) matrix, entries in ±√(6/(rows+cols)). The same seed gives
// the same matrix on every platform (the generator and the float mapping are our own).
Matrix xavierUniform(int rows, int cols, std::uint64_t seed);

// PyTorch nn.MultiheadAttention layout -> Projections.
// in_proj_weight (3E x E), in_proj_bias (3E, may be empty), out_proj_weight (E x E),
// out_proj_bias (E, may be empty). PyTorch computes x·Wᵀ, so wq = in_proj_weight[0:E]ᵀ etc.
Expected<Projections> projectionsFromPyTorch(const Matrix& inProjWeight, const Vector& inProjBias,
                                             const Matrix& outProjWeight,
                                             const Vector& outProjBias);

// A packed q/k/v weight in the interleaved layout -> PyTorch's blocked layout.
// A tutorial-style `qkv_proj = nn.Linear(E, 3E)` whose output is reshaped to
// [batch, seq, heads, 3·d_h] and chunked into q, k, v (d_h = E / heads) gives head h the output
// features [3h·d_h, 3h·d_h + d_h) as q, the next d_h as k and the next d_h as v. PyTorch's
// in_proj_weight holds all of W_q (rows [0, E)), then W_k, then W_v. `weight` (3E x E, stored
// out x in) and `bias` (3E, may be empty) are reordered row by row into the blocked layout, so
// that projectionsFromPyTorch() reads them; the numbers are not changed. Errors: a shape that is
// not 3E x E ("in_proj_weight", "in_proj_bias"), or heads that do not divide E ("heads").
struct BlockedQkv {
  Matrix weight;  // 3E x E, [W_q; W_k; W_v]
  Vector bias;    // 3E, [b_q; b_k; b_v] (empty if `bias` was)
};
Expected<BlockedQkv> blockedFromInterleavedQkv(const Matrix& weight, const Vector& bias,
                                               int heads);

// Fills in seeded matrices for every empty field a kind needs. Xavier with `seed`.
// d_q_in, d_k_in, d_v_in: input widths; d_model: width of Q/K; dv_model: of V.
Projections xavierProjections(int dQIn, int dKIn, int dVIn, int dModel, int dvModel,
                              std::uint64_t seed);

// Step 2: raw similarity scores for one head. q (n_q x d_h), k (n_k x d_h) -> (n_q x n_k).
// `params` must hold the fields `kind` needs (see completeScoreParams). Zero vectors under
// cosine give score 0; their indices are appended to warnings if non-null.
Matrix similarity(ScoreKind kind, const Matrix& q, const Matrix& k, const ScoreParams& params,
                  std::vector<Warning>* warnings = nullptr, int head = -1);

// Returns `params` with every field that `kind` needs and that is empty filled from `seed`
// (Xavier-uniform; biases zero). d_h: per-head width; hidden: d_a or d_m (0 = d_h).
ScoreParams completeScoreParams(ScoreKind kind, ScoreParams params, int dH, int hidden,
                                std::uint64_t seed);

// Step 3: which keys each query may attend, (n_q x n_k). Also fills positionWeights
// (n_q x n_k) for local_gaussian when non-null. Options must be valid (see validate()).
BoolMatrix buildMask(const MaskOptions& mask, int nQ, int nK, Matrix* positionWeights = nullptr);

// Step 4 for one row: scores (n_k), allowed (n_k) -> weights (n_k), non-negative, summing to
// 1 over allowed keys, exactly 0 where masked. Returns false (and all-zero weights) when no
// key is allowed. Scores are already divided by the temperature.
// This public form allocates a little scratch per call; attend() normalises its masked rows
// without any per-row allocation.
bool normalizeRow(const NormalizerOptions& normalizer, const Scalar* scores, const bool* allowed,
                  int n, Scalar* weights);

// The rules of top_k and sparsemax for one row, exposed so that explanations use the very
// implementation normalizeRow() uses. scores (n), allowed (n, or null = every key allowed);
// a key takes part when it is allowed and its score is above -inf (NaN never does).

// top_k's kept set: the min(max(k, 1), available) keys with the largest scores, in
// descending order of score, ties going to the lower index. Empty when no key takes part.
std::vector<int> topKKeys(const Scalar* scores, const bool* allowed, int n, int k);

// Sparsemax's threshold. Weights are w_j = max((s_j - maxScore) - tau, 0), so the threshold
// on the scores themselves is maxScore + tau; `support` keys get a weight above 0.
struct SparsemaxThreshold {
  Scalar maxScore = -std::numeric_limits<Scalar>::infinity();  // largest available score
  double tau = 0;   // relative to maxScore (computed on s - maxScore, in double)
  int support = 0;  // k(z): keys above the threshold; 0 when no key takes part
};
// (A +inf maximum, reachable only through this API: support = the number of +inf keys and
// tau = 0, matching the core, which then shares the weight among them.)
SparsemaxThreshold sparsemaxThreshold(const Scalar* scores, const bool* allowed, int n);

// The row step 4 normalises when T != 1 (attend() does the same): z_j = (s_j - m) / T for
// allowed keys, m = the largest allowed RAW score, -inf where masked; z_j is kept at -FLT_MAX at
// least. scores (n, raw, before T), allowed (n, or null = all). Its maximum is 0, and the order
// of the keys is kept for every T > 0 (no false ties from overflowing quotients).
std::vector<Scalar> temperedScores(const Scalar* scores, const bool* allowed, Scalar temperature,
                                   int n);

// Sinusoidal positional encoding (Vaswani et al. 2017), (n x d):
// PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(pos / 10000^(2i/d)).
Matrix sinusoidalPositionalEncoding(int n, int d);

// Splits text into tokens at white space (punctuation stays attached). At most maxTokens.
std::vector<std::string> tokenize(std::string_view text);

// One seeded embedding row per token (n x d). The same word with the same seed always gets
// the same row (the seed is mixed with a hash of the lower-cased word), entries ~ U(-1, 1).
Matrix seededEmbeddings(const std::vector<std::string>& tokens, int d, std::uint64_t seed);

// Documented limits on what the core accepts (validate() enforces them). The last two keep a
// legal problem affordable: kMaxCells bounds the memory of the per-head n_q x n_k matrices
// (three floats per cell: 400 MB at the limit; 2048 tokens x 8 heads is exactly at it), and
// kMaxWork bounds the arithmetic (about 0.5 s on one baseline x86-64 core).
struct Limits {
  static constexpr int kMaxTokens = 4096;         // n_q and n_k
  static constexpr int kMaxWidth = 4096;          // any d
  static constexpr int kMaxHeads = 64;
  static constexpr long long kMaxCells = 1LL << 25;  // heads · n_q · n_k
  static constexpr long long kMaxWork = 1LL << 33;   // multiply-adds, see attentionWork()
};

// The sizes that decide how much attend() computes (see attentionWork()).
struct WorkShape {
  long long nQ = 0, nK = 0;                // queries, keys
  long long dQ = 0, dK = 0, dV = 0;        // input widths
  long long dModel = 0, dvModel = 0;       // projected widths (identity: dQ and dV)
  long long dOut = 0;                      // width after W_o (0 = no output projection)
  long long heads = 1;
  bool projected = false;                  // W_q, W_k, W_v are applied
  ScoreKind score = ScoreKind::ScaledDot;
  long long dHidden = 0;                   // d_a / d_m of additive / mlp
  long long dY = 0;                        // decoder output width, 0 = no decoder step
};

// Multiply-adds attend() performs, as a documented estimate (docs/scenarios.md, Limits):
//   projections   n_q·d_q·d_model + n_k·d_k·d_model + n_k·d_v·dv_model  (+ n_q·dv_model·d_out)
//   scores        n_q·n_k·d_model; general adds n_q·d_model·d_h; additive/mlp add
//                 H·(n_q + n_k)·d_h·d_a + 8·H·n_q·n_k·d_a (a tanh counts as 8)
//   normalising   4·H·n_q·n_k
//   context       n_q·n_k·dv_model
//   decoder step  n_q·(d_out + d_q)·d_y
// Saturates instead of overflowing.
long long attentionWork(const WorkShape& shape);

// The terms of the estimate that come from the options, the one rule for validate() and
// buildProblem(): heads, score, the hidden width d_a / d_m of additive and mlp scores (the
// first head's parameters, else scoreHidden, else d_h) and the decoder output width d_y
// (W_c's columns, else d_q). Needs shape.dModel and shape.dQ; heads must divide dModel.
void setWorkOptions(WorkShape& shape, const Options& options);

// Error (field "queries", as validate() names it) when attentionWork(shape) is above
// Limits::kMaxWork or H·n_q·n_k above Limits::kMaxCells. buildProblem() calls it before it
// generates sentence embeddings or Xavier matrices, so an unaffordable scenario costs nothing.
Status checkWork(const WorkShape& shape);

}  // namespace attn
