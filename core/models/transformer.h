// One decoder-only transformer engine for every supported family, driven by a Config that
// formats/models/model_config.h fills from config.json (no JSON here). Eigen only.
//
// Shapes use the core's conventions (core/attention/attention.h): tokens are ROWS, a
// projection is applied on the right (X·W + b).
//   L = layers, H = query heads, H_kv = key/value heads (H_kv divides H), E = model width,
//   d_h = head width (E / H), F = MLP width, V = vocabulary, P = positions, n = tokens so far.
//
// The forward pass, per family (Hugging Face's modelling code in eval mode):
//   x = embed[ids] (+ positions[0..n) for gpt2)
//   per block:
//     a = Norm1(x)                       LayerNorm (gpt2, gpt_neox) or RMSNorm (llama family)
//     q, k, v = projections of a         fused c_attn (gpt2), fused query_key_value interleaved
//                                        per head (gpt_neox), or q/k/v_proj (llama family,
//                                        q/k/v biases for qwen2)
//     rotary on the first rotaryDims of every q and k head (half-split rotate_half layout),
//                                        cos / sin from core/models/rope.h (every rope type)
//     per query head h, with KV head g = h / (H / H_kv):
//        A_h = softmax(q_h·k_gᵀ / √d_h + causal (and sliding-window) mask); ctx_h = A_h·v_g
//     o = concat(ctx)·W_o (+ b_o)
//     sequential:  x = x + o;  x = x + MLP(Norm2(x))
//     parallel:    x = x + o + MLP(Norm2(x_in))        (gpt_neox, use_parallel_residual)
//     MLP:  plain  down(act(up(a)))                    (gpt2, gpt_neox)
//           gated  down(act(gate(a)) ⊙ up(a))          (SwiGLU, llama family)
//   logits = NormF(x)·lm_headᵀ, lm_head = embed when the embeddings are tied.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/base/types.h"
#include "core/models/rope.h"

namespace attn::model {

// ---------------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------------

enum class NormKind { LayerNorm, RmsNorm };
// gelu_new / gelu_pytorch_tanh (tanh approximation), gelu (erf), silu, relu.
enum class Activation { GeluTanh, GeluErf, Silu, Relu };
// How the attention's input projection is stored:
//   FusedBlocks   one [E, 3E] Conv1D, output columns q | k | v (gpt2 c_attn)
//   FusedPerHead  one [3E, E] Linear, output rows interleaved per head [H, 3, d_h]
//                 (gpt_neox query_key_value)
//   Separate      q_proj [H·d_h, E], k_proj and v_proj [H_kv·d_h, E] (llama family)
enum class QkvLayout { FusedBlocks, FusedPerHead, Separate };

struct Config {
  std::string modelType = "gpt2";  // config.json's model_type, for messages and the CLI
  int nLayer = 12;
  int nHead = 12;
  int nHeadKv = 12;  // num_key_value_heads; equal to nHead without GQA
  int nEmbd = 768;
  int nInner = 3072;  // MLP width
  int nPositions = 1024;
  int vocabSize = 50257;
  float normEpsilon = 1e-5f;
  NormKind norm = NormKind::LayerNorm;
  Activation activation = Activation::GeluTanh;
  QkvLayout qkvLayout = QkvLayout::FusedBlocks;
  bool gatedMlp = false;          // SwiGLU-style gate_proj/up_proj/down_proj
  bool learnedPositions = true;   // a P x E position table added to the embeddings (gpt2)
  int rotaryDims = 0;             // rotated dimensions of every head (even, <= d_h); 0 = none
  double ropeTheta = 10000.0;     // rotary base
  RopeScaling ropeScaling;        // rope_scaling / rope_parameters (core/models/rope.h)
  bool parallelResidual = false;  // x + attn(ln1 x) + mlp(ln2 x)
  bool qkvBias = true;            // biases on the q/k/v projection
  bool outBias = true;            // bias on the attention output projection
  bool mlpBias = true;            // biases on the MLP projections
  bool tiedEmbeddings = true;     // logits use the token embedding
  int slidingWindow = 0;  // > 0: query i sees keys j with i - window < j <= i; 0 = no window
  // What families after GPT-2 add (qwen3, gemma2, phi3); the defaults leave a model as above.
  int headDimension = 0;   // config.json's head_dim when it is explicit; 0 = E / H
  bool qkNorm = false;     // RMSNorm over d_h of every q and k head before the rotary (qwen3)
  // The norms multiply by (offset + w): 1 for Gemma's (1 + w) RMSNorm. The loader adds it to
  // the stored weights, so Weights always hold the factor the norm multiplies by.
  float normWeightOffset = 0;
  // Sandwich: x = x + NormPA(attn(Norm1 x)); x = x + NormPM(mlp(Norm2 x)) (gemma2's
  // post_attention / post_feedforward norms on each sublayer's output).
  bool sandwichNorms = false;
  float queryScale = 0;    // the score scale; 0 = 1/√d_h (gemma2: query_pre_attn_scalar^-½)
  float attnSoftcap = 0;   // > 0: scores = cap·tanh(scores / cap) after scaling, before the mask
  float finalSoftcap = 0;  // > 0: logits = cap·tanh(logits / cap)
  float embedScale = 0;    // > 0: the embeddings are multiplied by it (gemma: √E as a float)
  // Per-layer sliding windows (L entries, 0 = full causal); empty: slidingWindow everywhere.
  std::vector<int> layerWindows;
  // The q and k projections' output features come in llama.cpp's order (a llama-architecture
  // GGUF: convert_hf_to_gguf permutes Q and K rows so that ggml's adjacent-pair RoPE
  // applies): feature 2i + s of a head is Hugging Face's feature s·d_h/2 + i. The engine
  // puts them back in Hugging Face's order after the projection (needs rotaryDims == d_h),
  // so the half-split RoPE, the cached Q and K and every analysis are as for the
  // safetensors folder.
  bool qkPairsInterleaved = false;

  int headDim() const { return headDimension > 0 ? headDimension : nEmbd / nHead; }
  // The sliding window of layer `layer` (0 = none).
  int windowOf(int layer) const {
    return layerWindows.empty() ? slidingWindow : layerWindows[static_cast<std::size_t>(layer)];
  }
  // The factor every score q·k is multiplied by.
  float scoreScale() const;
  // Width of one token's cached q | k | v row: (H + 2·H_kv)·d_h.
  int qkvWidth() const { return (nHead + 2 * nHeadKv) * headDim(); }
  // The KV head that query head `head` reads.
  int kvHeadOf(int head) const { return head / (nHead / nHeadKv); }
};

// Upper bounds that stop a corrupt config.json from allocating absurd amounts.
inline constexpr int kMaxLayers = 512;
inline constexpr int kMaxHeads = 1024;
inline constexpr int kMaxEmbd = 65536;
inline constexpr int kMaxPositions = 1 << 20;
inline constexpr int kMaxVocab = 1 << 21;

// Every size in range, H divides E (unless head_dim is explicit), H_kv divides H, rotaryDims
// even and <= d_h, epsilon > 0 and finite, theta and the linear factor > 0, a window >= 0,
// one window per layer (or none), scales and soft caps finite and >= 0. Errors name the field by this
// struct's GPT-2-style name ("n_head", ...); formats/models/model_config.cpp renames it to
// the family's config.json field. The file is left empty for the caller.
Status validate(const Config& config);

// ---------------------------------------------------------------------------------------
// Weights
// ---------------------------------------------------------------------------------------

// A read-only row-major tensor: rows x cols (a vector has cols == 1). The numbers live
// either in a mapped checkpoint file (used in place) or in storage owned by Weights. They are
// float32 (`data`), or for a weight matrix of a BF16 checkpoint the BF16 values as stored
// (`bf16`, data == nullptr): applyLinear() multiplies by them directly (core/isa kernels,
// float32 accumulation), embedding rows are widened as they are read, and dense() widens
// the whole tensor for the code that needs a float matrix (the analyses).
// A weight matrix of a GGUF file may instead be ggml blocks as stored (`quant`, type
// `ggmlType` of core/models/quant.h: F16, Q8_0, Q4_K, ...; data and bf16 null): each of the
// `rows` rows is cols / block size blocks, rows one after the other; it is dequantized
// exactly as it is read (applyLinear's per-thread panels, readRow, dense()).
struct Tensor {
  const float* data = nullptr;
  Eigen::Index rows = 0, cols = 0;
  const std::uint16_t* bf16 = nullptr;  // BF16 bits, 2-byte aligned; set only when data is null
  const std::uint8_t* quant = nullptr;  // ggml blocks; set only when data and bf16 are null
  std::uint32_t ggmlType = 0;

  bool empty() const { return data == nullptr && bf16 == nullptr && quant == nullptr; }
  bool isBf16() const { return bf16 != nullptr; }
  bool isQuantized() const { return quant != nullptr; }
  // Bytes of one row of ggml blocks (quantized tensors only).
  std::size_t quantRowBytes() const;
  // Bytes the values take as stored (4 per float32, 2 per BF16, the blocks' bytes).
  std::size_t storedBytes() const;
  // Same storage (a tied lm_head is the embedding itself).
  bool sameStorage(const Tensor& other) const {
    return data == other.data && bf16 == other.bf16 && quant == other.quant;
  }
  Eigen::Index size() const { return rows * cols; }
  // Float32 tensors only.
  Eigen::Map<const Matrix> matrix() const { return {data, rows, cols}; }
  Eigen::Map<const Vector> vector() const { return {data, rows * cols}; }
  // The values as float32 (a view for float32, a widened copy for BF16).
  Matrix dense() const;
  // Row r (cols values) as float32 into out.
  void readRow(Eigen::Index r, float* out) const;
};

// y (m x out) = x (m x in)·W + b. The weight is stored either [in, out] (GPT-2's Conv1D) or
// [out, in] (nn.Linear, outByIn = true); both are used as stored.
struct Linear {
  Tensor weight;
  Tensor bias;  // [out] or empty
  bool outByIn = false;

  Eigen::Index in() const { return outByIn ? weight.cols : weight.rows; }
  Eigen::Index out() const { return outByIn ? weight.rows : weight.cols; }
};

struct NormWeights {
  Tensor weight;  // [E]
  Tensor bias;    // [E] for LayerNorm, empty for RMSNorm
};

struct LayerWeights {
  NormWeights norm1, norm2;  // before attention / before the MLP
  NormWeights qNorm, kNorm;  // [d_h] RMSNorm weights on q and k heads (Config::qkNorm)
  NormWeights postAttnNorm, postMlpNorm;  // [E] on the sublayer outputs (Config::sandwichNorms)
  Linear qkv;                // FusedBlocks, FusedPerHead
  Linear q, k, v;            // Separate
  Linear out;                // attention output, H·d_h -> E
  Linear up, gate, down;     // MLP: up E -> F (gate E -> F when gated), down F -> E
};

struct Weights {
  Config config;
  Tensor embed;      // V x E
  Tensor positions;  // P x E (learnedPositions), else empty
  std::vector<LayerWeights> layers;  // L
  NormWeights finalNorm;
  Tensor lmHead;  // V x E; equals embed when tied
  // Keeps every tensor's floats alive: owned buffers and mapped files (type-erased, so that
  // the core knows nothing of files).
  std::vector<std::shared_ptr<const void>> storage;
  // How the loader keeps the weights ("F32", "BF16", "F16 as F32", "BF16 as F32"; "F32" for
  // random weights) and the checkpoint files' bytes (0 when not from files). For bench.
  std::string storedAs = "F32";
  std::uint64_t fileBytes = 0;

  // Bytes of the parameters the forward pass reads, as stored (4 per float32, 2 per BF16
  // value; a tied lm_head counted once).
  std::size_t parameterBytes() const;
};

// Checks every tensor's shape against weights.config. Errors name the tensor by its role
// ("layer 3 q") and the shapes.
Status validate(const Weights& weights);

// Random weights of the given configuration (uniform noise with std 0.02, norms near 1 and 0
// with a little noise), from one seed, in owned storage. Linear weights are stored [out, in]
// except for gpt2 (FusedBlocks), whose Conv1D layout is [in, out]. For tests and benchmarks.
Weights randomWeights(const Config& config, std::uint64_t seed);

// ---------------------------------------------------------------------------------------
// Layers: the one way a Linear is applied (float32 through BLAS, BF16 through core/isa)
// ---------------------------------------------------------------------------------------

// y (m x out) = act(x (m x in)·W + b), or y += x·W + b when `accumulate` (then `activation`
// must be null). W is used as stored ([in, out] or [out, in]; float32 through OpenBLAS; BF16
// widened exactly and accumulated in float32: for m >= 4 rows a per-thread panel of widened
// columns at a time goes to OpenBLAS, for fewer rows the run-time-chosen kernels of
// core/isa stream the BF16 weights). The output columns are split over `threads` threads of the shared pool
// (core/base/parallel.h), each running one single-threaded product; the bias and the
// activation are applied to each thread's columns while they are in cache. m = 1 (a token
// through the KV cache) is a matrix-vector product that streams W once.
void applyLinear(const Linear& lin, const Eigen::Ref<const Matrix>& x, Eigen::Ref<Matrix> y,
                 bool accumulate, int threads = 1, const Activation* activation = nullptr);

// Several products in one loop on the pool: every job's column ranges are handed out
// together (one hand-over instead of one per product: the llama family's q, k and v, or gate
// and up). Each job as applyLinear(*lin, *x, *y, accumulate, threads, activation); the
// pointed-to objects must outlive the call, and no job may write what another reads.
struct LinearJob {
  const Linear* lin = nullptr;
  const Eigen::Ref<const Matrix>* x = nullptr;
  Eigen::Ref<Matrix>* y = nullptr;
  bool accumulate = false;
  const Activation* activation = nullptr;
};
void applyLinears(std::span<const LinearJob> jobs, int threads);

// The activation in place on the n floats at x.
void activateInPlace(float* x, Eigen::Index n, Activation activation);

// ---------------------------------------------------------------------------------------
// The forward pass with a KV cache
// ---------------------------------------------------------------------------------------

// A read-only view into the run's storage: rows x cols with a row stride.
using MatrixView = Eigen::Map<const Matrix, 0, Eigen::OuterStride<>>;

struct TokenProbability {
  int id = 0;
  float probability = 0;  // softmax over the whole vocabulary
  float logit = 0;
};

// The k most probable entries of softmax(logits) (V logits), most probable first (ties:
// lower id first), with probabilities over all V computed in double. The one top-k of every
// model (DecoderRun::topK, the analyses, the encoders' fill-mask, the ViT classifier).
std::vector<TokenProbability> topProbabilities(const Eigen::Ref<const Vector>& logits, int k);

// ---------------------------------------------------------------------------------------
// Hooks: interventions on the forward pass and recorded activations (core/models/analysis.h)
// ---------------------------------------------------------------------------------------

// What happens to one head's output z (n x d_h: the head's attention-weighted values, before
// W_o; TransformerLens's hook_z):
//   Zero     z = 0
//   Mean     every row of z = the mean of z's rows over the prompt's positions, as computed
//            in this very pass (after any intervention upstream)
//   Replace  z = `values` (n x d_h, one row per position of the prompt), or with `position`
//            >= 0 row `position` of z only = `values` (one row per copy of the sequence: 1 x
//            d_h in a DecoderRun of its own)
enum class HeadEdit { Zero, Mean, Replace };
struct HeadHook {
  int layer = 0, head = 0;
  HeadEdit edit = HeadEdit::Zero;
  Matrix values;      // Replace: n x d_h (or copies x d_h with a position), else empty
  int position = -1;  // Replace: -1 every position, else that one
};
// Sets the residual stream at one position to `value` (E): `layer` 0 is the embeddings'
// output (what enters block 0), `layer` l >= 1 the stream after block l - 1 (what enters
// block l, or the final norm for l = L). TransformerLens: blocks.{l}.hook_resid_pre, and
// blocks.{L-1}.hook_resid_post for l = L.
struct ResidHook {
  int layer = 0, position = 0;
  Vector value;  // E
};
struct Hooks {
  std::vector<HeadHook> heads;
  std::vector<ResidHook> resid;
  bool record = false;  // keep z, the residual streams and the final norm's scale
};
// What a pass with Hooks::record keeps (after the interventions were applied):
//   z[l]        n x (H·d_h), head h = columns [h·d_h, (h+1)·d_h)            (hook_z)
//   resid[l]    n x E for l = 0..L, numbered as ResidHook::layer            (hook_resid_pre)
//   finalScale  n, the final norm's divisor per position: √(var(x) + eps) for LayerNorm
//               (biased variance), √(mean(x²) + eps) for RMSNorm          (ln_final.hook_scale)
struct Recording {
  std::vector<Matrix> z;
  std::vector<Matrix> resid;
  Vector finalScale;
};

// One sequence's state: the tokens so far and, for every layer, everything that was computed
// for them. Attention is causal, so nothing computed for token i changes when tokens are
// appended: appending m tokens to n costs m tokens' work (plus reading the n cached keys and
// values), and changing the end of the text recomputes only from the first changed token.
//
// Kept per layer l and query head h (all readable after every update):
//   attention(l, h)   n x n, row i = query i's weights over keys 0..i (zeros above the
//                     diagonal and outside a sliding window)
//   query(l, h)       n x d_h, after the rotary embedding for rotary models
//   key/value(l, h)   n x d_h, the KV head that query head h reads (key after rotation)
//   residualNorms()   (L+1) x n, the L2 norm of the residual stream entering each layer
//                     (row 0 = the embeddings) and after the last block (row L)
//   logits(), topK(k) the next-token prediction after the last token
//
// Threads: the const members only read, so any number of threads may read one DecoderRun while
// nobody modifies it; setTokens/append/truncate need the DecoderRun to themselves. The weights
// are shared (shared_ptr<const Weights>) and never changed.
class DecoderRun {
 public:
  explicit DecoderRun(std::shared_ptr<const Weights> weights);

  const Config& config() const { return weights_->config; }
  const Weights& weights() const { return *weights_; }
  // Threads of every later pass (0 = every core, the default). Results do not depend on it
  // beyond float rounding.
  void setThreads(int threads) { threads_ = threads; }
  int threads() const;
  int size() const { return static_cast<int>(tokens_.size()); }
  const std::vector<int>& tokens() const { return tokens_; }

  // Makes the sequence equal to `ids`, reusing the cache for the longest common prefix of
  // `ids` and the current tokens. Returns the number of reused tokens. Errors (the run is
  // unchanged): an id outside [0, V), more than P tokens.
  Expected<int> setTokens(std::span<const int> ids);
  // Appends `ids` (computes only them). Same errors as setTokens.
  Status append(std::span<const int> ids);
  // Keeps the first `n` tokens (0 <= n <= size(); larger n is ignored).
  void truncate(int n);
  void clear() { truncate(0); }

  // Attention weights of layer `layer`, query head `head`: n x n (copied out of the packed
  // triangular storage).
  Matrix attention(int layer, int head) const;
  // Row `query` of the same matrix, the query+1 weights over keys 0..query (no copy).
  std::span<const float> attentionRow(int layer, int head, int query) const;
  // All weights as one row-major float32 tensor [L, H, n, n] (H = query heads).
  std::vector<float> attentionTensor() const;

  // The head's Q, K and V (n x d_h each, views into the cache: valid until the next update).
  MatrixView query(int layer, int head) const;
  MatrixView key(int layer, int head) const;
  MatrixView value(int layer, int head) const;

  Matrix residualNorms() const;

  // Logits for the token after the last one (V); empty when size() == 0.
  const Vector& logits() const { return logits_; }
  // The k most probable next tokens, most probable first (ties: lower id first).
  std::vector<TokenProbability> topK(int k) const;

  // Sets (or with nullptr removes) the interventions and recording of every later pass and
  // recomputes the current tokens under them. With hooks set the cache is not reused:
  // a mean ablation depends on every position, so each setTokens / append recomputes the
  // whole sequence. Without hooks nothing is copied or checked (the normal path is as fast
  // as before). Errors (hooks unchanged): a layer, head or position out of range, or
  // Replace values / a resid value of the wrong shape for the current tokens.
  Status setHooks(std::shared_ptr<const Hooks> hooks);
  const Hooks* hooks() const { return hooks_.get(); }

  // Re-runs blocks `layer`..L-1 for positions `first`..n-1 only, with `resid` ((n − first)
  // x E) as the stream entering block `layer` (layer = L: the stream after the last block)
  // and `hooks` (head hooks on blocks >= layer; Replace values n x d_h; no Mean when
  // first > 0) for this pass only. Attention is causal, so the earlier positions and blocks
  // the last pass computed are the ones this pass would compute: the result equals a whole
  // pass whose stream entering block `layer` differs from the last pass's at positions >=
  // first only. What activation patching needs (core/models/analysis.cpp), at a fraction of
  // a whole pass. logits() is empty afterwards; nextLogit gives single logits (the last block
  // finishes the last position only). A block whose every head a hook replaces computes no
  // attention: its q, k, v and weights keep what they held. Errors (the
  // run unchanged): out-of-range layer or position, a wrong shape, the run has its
  // own hooks, a recording or resid hook asked for.
  Status rerunFrom(int layer, int first, const Matrix& resid, std::shared_ptr<const Hooks> hooks);
  // Undoes rerunFrom(layer, first, ...): copies back what it changed from `base`, the
  // run it started as (a copy of this one before the re-run: same weights and tokens).
  void restoreFrom(const DecoderRun& base, int layer, int first);
  // One logit of the prediction after the last token, NormF(x_last)·lm_head[token] (soft-
  // capped as logits()), without the whole vocabulary's product. 0 <= token < V.
  double nextLogit(int token) const;
  // The activations of the last pass; empty unless the hooks ask to record.
  const Recording& recording() const { return recording_; }

 private:
  friend class DecoderBatch;  // core/models/decoder_batch.h: copies of one sequence re-run together

  struct LayerCache {
    std::vector<float> qkv;  // n x qkvWidth, row-major: [q (H·d_h) | k (H_kv·d_h) | v] per token
    std::vector<std::vector<float>> attention;  // per query head, row i packed with i+1 values
  };

  Status checkIds(std::span<const int> ids, std::size_t kept) const;
  Status checkHooks(const Hooks& hooks, Eigen::Index n) const;
  void applyHeadHooks(Eigen::Index layer, Eigen::Index n0, Matrix& context) const;
  void applyResidHooks(Eigen::Index layer, Matrix& x) const;
  void compute(std::span<const int> ids);
  void runBlocks(Eigen::Index firstLayer, Eigen::Index n0, Matrix& x, bool rerun = false);
  // Steps 3-5 of block l for positions n0.. of every copy (normed: copies·m x E, Norm1 of the
  // stream; cosines/sines: m x rotaryDims/2): q, k, v into the cache, attention into
  // `context` (copies·m x H·d_h). core/models/decoder_attend.cpp.
  void attendBlock(Eigen::Index l, Eigen::Index n0, const Matrix& normed, const Matrix& cosines,
                   const Matrix& sines, Matrix& context);
  void updateLogits();
  void reserveTokens(std::int64_t n);
  void dropAfter(int n);
  // The logit of `token` read from row `row` of finalHidden_ (the last position of a copy).
  double logitAt(std::size_t row, int token) const;

  std::shared_ptr<const Weights> weights_;
  std::vector<int> tokens_;
  std::vector<LayerCache> layers_;
  std::vector<float> finalHidden_;    // n x E
  std::vector<float> residualNorms_;  // n x (L+1)
  Vector logits_;
  std::int64_t tokenCapacity_ = 0;
  std::shared_ptr<const Hooks> hooks_;
  Recording recording_;
  int threads_ = 0;
  // ropeLengthKey of the length the cached q and k were rotated for (dynamic and longrope
  // frequencies depend on the sequence length: a new key recomputes from token 0).
  std::int64_t ropeKey_ = 0;
  // Copies of the sequence the caches hold (DecoderBatch; 1 for every DecoderRun the public
  // API makes): copy b's rows are b·n..(b+1)·n-1 of each layer's qkv and of finalHidden_;
  // a batch keeps no attention weights and no residual norms.
  int copies_ = 1;
};

// The whole forward pass in one call (a fresh DecoderRun). Errors as DecoderRun::setTokens.
Expected<DecoderRun> forward(std::shared_ptr<const Weights> weights, std::span<const int> ids);

// applyNorm / normRow (the family's norm): core/models/layers.h.
// logits (V, or any vector of logits) = cap·tanh(logits / cap) when config.finalSoftcap > 0
// (gemma2's final_logit_softcapping), else unchanged.
void softcapLogits(Eigen::Ref<Vector> logits, const Config& config);
// The norm's divisor of one row x (E): √(var(x) + eps) (LayerNorm, biased variance) or
// √(mean(x²) + eps) (RMSNorm).
float normScale(const Eigen::Ref<const Eigen::RowVectorXf>& x, const Config& config);

// GPT-2's GELU, the tanh approximation: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
float geluTanh(float x);

// The rotary frequencies the engine uses for a sequence of `length` tokens: ropeFrequencies
// of the config's theta, scaling and rotaryDims (core/models/rope.h).
RopeFrequencies rotaryFrequencies(const Config& config, std::int64_t length);

}  // namespace attn::model
