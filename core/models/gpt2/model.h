// GPT-2 (and distilgpt2, gpt2-medium/-large/-xl): configuration, weights and the forward pass
// with a KV cache. Eigen only; reading files is in io/gpt2_model.h.
//
// Shapes use the core's conventions (core/attention.h): tokens are ROWS, a projection is
// applied on the right (X·W + b), W is (d_in x d_out). That is exactly GPT-2's Conv1D layout
// ([in, out] in the checkpoint), so checkpoint matrices are used as they are stored.
//   L = n_layer, H = n_head, E = n_embd, d_h = E / H, F = n_inner (4E), V = vocab_size,
//   P = n_positions, n = number of tokens in the session.
//
// The forward pass (Radford et al. 2019; Hugging Face's GPT2LMHeadModel in eval mode):
//   x = wte[ids] + wpe[0..n)
//   per block: a = LN1(x); [q k v] = a·W_attn + b_attn; per head h:
//                A_h = softmax(q_h·k_hᵀ / √d_h, causal); ctx_h = A_h·v_h
//              x += concat(ctx)·W_proj + b_proj
//              x += GELU_tanh(LN2(x)·W_fc + b_fc)·W_fcproj + b_fcproj
//   logits = LN_f(x)·wteᵀ (tied embedding); only the last token's logits are computed.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/base/types.h"

namespace attn::gpt2 {

// ---------------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------------

// The sizes from config.json. Defaults are GPT-2 small's.
struct Config {
  int nLayer = 12;
  int nHead = 12;
  int nEmbd = 768;
  int nInner = 3072;  // MLP width; config.json's n_inner, null means 4 * n_embd
  int nPositions = 1024;
  int vocabSize = 50257;
  float layerNormEpsilon = 1e-5f;

  int headDim() const { return nEmbd / nHead; }
};

// Upper bounds that stop a corrupt config.json from allocating absurd amounts (gpt2-xl is
// 48 layers, 25 heads, 1600 wide, 1024 positions, 50257 tokens).
inline constexpr int kMaxLayers = 256;
inline constexpr int kMaxHeads = 256;
inline constexpr int kMaxEmbd = 16384;
inline constexpr int kMaxPositions = 65536;
inline constexpr int kMaxVocab = 1 << 21;

// Every size > 0 and below the limits above, n_head divides n_embd, epsilon > 0 and finite.
// Errors name the config.json field ("n_head", ...), file left empty for the caller.
Status validate(const Config& config);

// ---------------------------------------------------------------------------------------
// Weights
// ---------------------------------------------------------------------------------------

struct LayerWeights {
  Vector ln1Weight, ln1Bias;  // E, E                      (ln_1)
  Matrix attnWeight;          // E x 3E, columns q | k | v  (attn.c_attn)
  Vector attnBias;            // 3E
  Matrix attnProjWeight;      // E x E                      (attn.c_proj)
  Vector attnProjBias;        // E
  Vector ln2Weight, ln2Bias;  // E, E                      (ln_2)
  Matrix fcWeight;            // E x F                      (mlp.c_fc)
  Vector fcBias;              // F
  Matrix fcProjWeight;        // F x E                      (mlp.c_proj)
  Vector fcProjBias;          // E
};

struct Weights {
  Config config;
  Matrix wte;                        // V x E, token embedding; also the output projection (tied)
  Matrix wpe;                        // P x E, position embedding
  std::vector<LayerWeights> layers;  // L
  Vector lnFWeight, lnFBias;         // E, E (ln_f)

  // Bytes held by the float32 parameters.
  std::size_t parameterBytes() const;
};

// Checks every matrix's shape against weights.config. Errors name the tensor as it is
// called in the checkpoint (e.g. "h.3.attn.c_attn.weight").
Status validate(const Weights& weights);

// Random weights of the given shape (normal, std 0.02 like GPT-2's initialisation; layer
// norms near 1 and 0 with a little noise so that tests see them), from one seed. For tests
// and benchmarks.
Weights randomWeights(const Config& config, std::uint64_t seed);

// ---------------------------------------------------------------------------------------
// The forward pass with a KV cache
// ---------------------------------------------------------------------------------------

// A read-only view into the session's storage: rows x cols with a row stride.
using MatrixView = Eigen::Map<const Matrix, 0, Eigen::OuterStride<>>;

struct TokenProbability {
  int id = 0;
  float probability = 0;  // softmax over the whole vocabulary
  float logit = 0;
};

// One sequence's state: the tokens so far and, for every layer, everything that was computed
// for them. Because attention is causal, nothing computed for token i changes when tokens are
// appended after it; so appending m tokens to n costs m tokens' work (plus reading the n
// cached keys and values), and changing the end of the text recomputes only from the first
// changed token on.
//
// Kept per layer l and head h (all readable after every update):
//   attention(l, h)   n x n, row i = query i's weights over keys 0..i (zeros above the diagonal)
//   query/key/value(l, h)   n x d_h, the head's slice of LN1(x)·W_attn + b_attn
//   residualNorms()   (L+1) x n, the L2 norm of the residual stream entering each layer
//                     (row 0 = the embeddings) and after the last block (row L)
//   logits(), topK(k) the next-token prediction after the last token
//
// Threads: the const members only read, so any number of threads may read one Session
// while nobody modifies it; setTokens/append/truncate need the Session to themselves. The
// weights are shared (shared_ptr<const Weights>) and never changed. A compute worker can
// keep two Sessions and publish them as shared_ptr<const Session>: it updates the one the UI
// does not hold, and setTokens() makes that one catch up from its own common prefix (when
// typing, one or two tokens), so nothing is copied per keystroke.
class Session {
 public:
  explicit Session(std::shared_ptr<const Weights> weights);

  const Config& config() const { return weights_->config; }
  const Weights& weights() const { return *weights_; }
  int size() const { return static_cast<int>(tokens_.size()); }
  const std::vector<int>& tokens() const { return tokens_; }

  // Makes the sequence equal to `ids`, reusing the cache for the longest common prefix of
  // `ids` and the current tokens; only the tokens after it are computed. Returns the number
  // of reused tokens. Errors (the session is unchanged): an id outside [0, V), more than P
  // tokens.
  Expected<int> setTokens(std::span<const int> ids);
  // Appends `ids` (computes only them). Same errors as setTokens.
  Status append(std::span<const int> ids);
  // Keeps the first `n` tokens (0 <= n <= size(); larger n is ignored).
  void truncate(int n);
  // Forgets everything (size() == 0).
  void clear() { truncate(0); }

  // Attention weights of layer `layer`, head `head`: n x n, row i sums to 1 over columns
  // 0..i, zeros above the diagonal. Copies out of the packed (triangular) storage.
  Matrix attention(int layer, int head) const;
  // Row `query` of the same matrix, the query+1 weights over keys 0..query (no copy).
  std::span<const float> attentionRow(int layer, int head, int query) const;
  // All weights as one row-major float32 tensor [L, H, n, n] (for the npz export).
  std::vector<float> attentionTensor() const;

  // The head's Q, K and V (n x d_h each, views into the cache: valid until the next update).
  MatrixView query(int layer, int head) const;
  MatrixView key(int layer, int head) const;
  MatrixView value(int layer, int head) const;

  // (L+1) x n, see above.
  Matrix residualNorms() const;

  // Logits for the token after the last one (V); empty when size() == 0.
  const Vector& logits() const { return logits_; }
  // The k most probable next tokens, most probable first (ties: lower id first); empty when
  // size() == 0. k is clamped to [0, V].
  std::vector<TokenProbability> topK(int k) const;

 private:
  struct LayerCache {
    std::vector<float> qkv;                     // n x 3E, row-major: [q | k | v] per token
    std::vector<std::vector<float>> attention;  // per head, rows 0..n-1 packed: row i has i+1
  };

  Status checkIds(std::span<const int> ids) const;
  void compute(std::span<const int> ids);  // appends, ids already checked
  void updateLogits();
  void reserveTokens(std::int64_t n);  // capacity for n tokens in every cache vector
  void dropAfter(int n);               // keeps tokens 0..n-1 (0 <= n <= size()), no logits

  std::shared_ptr<const Weights> weights_;
  std::vector<int> tokens_;
  std::vector<LayerCache> layers_;
  std::vector<float> finalHidden_;    // n x E, the residual stream after the last block
  std::vector<float> residualNorms_;  // n x (L+1), row-major per token
  Vector logits_;
  std::int64_t tokenCapacity_ = 0;
};

// The whole forward pass in one call (a fresh Session). Errors as Session::setTokens.
Expected<Session> forward(std::shared_ptr<const Weights> weights, std::span<const int> ids);

// GPT-2's GELU, the tanh approximation: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
float geluTanh(float x);

}  // namespace attn::gpt2
