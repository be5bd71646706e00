// BERT-family encoders (bert, distilbert, roberta) on the engine's building blocks
// (core/models/layers.h), driven by an EncoderConfig that formats/models/encoder_folder.cpp
// fills from config.json. Eigen only. The vision transformer (core/models/vit.h) runs the
// same block with the norms before instead of after.
//
// Shapes: tokens are ROWS, X·W + b; L layers, H heads, E width, d_h = E / H, F MLP width,
// V vocabulary, P positions, T token types, n tokens.
//
// The forward pass (Hugging Face's BertForMaskedLM / DistilBertForMaskedLM /
// RobertaForMaskedLM in eval mode):
//   1 x = LN_emb(word[ids] + position[pos] + type[types])   (no type table for distilbert)
//       pos = 0..n-1, or RoBERTa's padding_idx + 1 + (number of non-pad tokens before),
//       padding_idx for a pad token (create_position_ids_from_input_ids)
//   per block (post-LN, bidirectional: every query sees every key):
//   2   q, k, v = x·W_q + b, x·W_k + b, x·W_v + b                       each n x E
//   3   per head h: A_h = softmax(q_h·k_hᵀ / √d_h) (n x n); ctx_h = A_h·v_h
//   4   a = LN_1(x + concat(ctx)·W_o + b_o)
//   5   x = LN_2(a + down(act(up(a))))                                  act: erf-GELU (gelu)
//   MLM head at a position i (when the checkpoint has one):
//   6   h = LN_head(act_head(x_i·W_t + b_t));  logits = h·W_decᵀ + bias  (V)
//       BERT cls.predictions (act_head = hidden_act), DistilBERT vocab_transform /
//       vocab_layer_norm / vocab_projector (act_head = activation), RoBERTa lm_head
//       (act_head = erf-GELU always). W_dec is the word embedding when tied.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/base/types.h"
#include "core/models/transformer.h"

namespace attn::model {

// ---------------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------------

struct EncoderConfig {
  std::string modelType = "bert";  // bert, distilbert, roberta (messages, the CLI)
  int nLayer = 12;
  int nHead = 12;
  int nEmbd = 768;
  int nInner = 3072;
  int nPositions = 512;  // rows of the position table (max_position_embeddings)
  int vocabSize = 30522;
  int typeVocabSize = 2;   // rows of the token-type table; 0: none (distilbert)
  float normEpsilon = 1e-12f;  // every LayerNorm's eps (layer_norm_eps; 1e-12 in DistilBERT)
  Activation activation = Activation::GeluErf;      // the MLP's (hidden_act / activation)
  Activation headActivation = Activation::GeluErf;  // the MLM transform's
  // >= 0: RoBERTa's positions, counted from padding_idx + 1 (pad_token_id); -1: 0..n-1.
  int paddingIdx = -1;

  int headDim() const { return nEmbd / nHead; }
  // The most tokens one input may have: P, or P - padding_idx - 1 for RoBERTa.
  int maxTokens() const { return paddingIdx >= 0 ? nPositions - paddingIdx - 1 : nPositions; }
};

// Every size in range (the limits of transformer.h), H divides E, 0 <= T <= 16, eps finite
// and > 0, padding_idx < P - 1. Errors name the field by its BERT name ("num_attention_heads",
// ...); the config reader renames it for distilbert. The file is left empty for the caller.
Status validate(const EncoderConfig& config);

// ---------------------------------------------------------------------------------------
// Weights (Linear weights as stored, nn.Linear [out, in]; see transformer.h for Tensor)
// ---------------------------------------------------------------------------------------

// One encoder block. Post-LN (BERT family): norm1 after the attention's residual, norm2
// after the MLP's. Pre-LN (ViT): norm1 before the attention, norm2 before the MLP.
struct EncoderLayerWeights {
  Linear q, k, v;  // E -> E each
  Linear out;      // E -> E
  NormWeights norm1, norm2;
  Linear up;    // E -> F
  Linear down;  // F -> E
};

// The masked-language-model head.
struct MlmHead {
  Linear transform;  // E -> E
  NormWeights norm;  // E
  Tensor decoder;    // V x E (the word embedding when tied)
  Tensor bias;       // V
};

struct EncoderWeights {
  EncoderConfig config;
  Tensor wordEmbed;   // V x E
  Tensor positions;   // P x E
  Tensor tokenTypes;  // T x E, empty when T = 0
  NormWeights embedNorm;
  std::vector<EncoderLayerWeights> layers;  // L
  bool hasMlmHead = false;
  MlmHead mlm;  // when hasMlmHead
  // Keeps every tensor's floats alive (owned buffers and mapped files, type-erased).
  std::vector<std::shared_ptr<const void>> storage;
};

// Checks every tensor's shape against weights.config. Errors name the tensor by its role
// ("layer 3 query weight") and the shapes.
Status validate(const EncoderWeights& weights);

// Random weights of the configuration (std 0.02, norms near 1 and 0), from one seed, with
// an MLM head whose decoder is the word embedding. For benchmarks and tests.
EncoderWeights randomEncoderWeights(const EncoderConfig& config, std::uint64_t seed);

// ---------------------------------------------------------------------------------------
// The forward pass
// ---------------------------------------------------------------------------------------

// Heads to ablate in a bidirectional run (encoder or ViT), as Hugging Face's `head_mask`
// does for zero: ablated[l·H + h] != 0 replaces head h of layer l's context z_h (n x d_h,
// the head's weights times its values, before the output projection) by 0 (Zero), or
// every row of it by its mean over the n positions of the same pass (Mean, as
// TransformerLens's mean ablation of hook_z). The weights the run records stay the head's
// own: ablation changes what the head writes, not where it looks.
struct HeadMask {
  std::vector<std::uint8_t> ablated;  // L·H, empty = none
  bool mean = false;                  // false: zero ablation
  bool any(int layer, int heads) const;
  bool at(int layer, int head, int heads) const {
    return !ablated.empty() && ablated[static_cast<std::size_t>(layer * heads + head)] != 0;
  }
};

// One head's z (n x d_h, its weights times its values, before the output projection)
// replaced in a bidirectional block: z = *values (n x d_h) when row < 0, else only z's row
// `row` = values' row 0 (1 x d_h). The values must outlive the block.
struct HeadPatch {
  int head = 0;
  int row = -1;
  const Matrix* values = nullptr;
};

// Options of one bidirectional block (shared with core/models/vit.h).
struct BlockOptions {
  int heads = 12;
  float epsilon = 1e-12f;
  Activation activation = Activation::GeluErf;
  bool preNorm = false;  // ViT: norm1 before the attention, norm2 before the MLP
  // Ablated heads of this block (H flags, nullptr: none) and the mode (HeadMask::mean).
  const std::uint8_t* ablated = nullptr;
  bool ablateMean = false;
  // Value zeroing (core/models/mechanisms_bidirectional.h): token `zeroValueRow`'s value
  // vector (row j of v, every head) is zeroed after the projections, the weights kept as
  // the softmax gave them; -1: none.
  int zeroValueRow = -1;
  // Activation patching (the patches of core/models/model_run.h): each puts other values
  // into one head's z after any ablation (HeadPatch). Empty: none.
  std::span<const HeadPatch> patches = {};
};

// One block on x (n x E) in place (steps 2-5 above, or ViT's pre-LN form:
//   x = x + O(attention(LN_1(x)));  x = x + down(act(up(LN_2(x))))).
// Writes the weights of every head to attention[h·n·n + i·n + j] (H x n x n, row i = query
// i over all keys) and the projected rows to qkv (n x 3E: q | k | v, head h = columns
// [h·d_h, (h+1)·d_h) of each third) when qkv is not null, and every head's z after the
// ablations and patches (n x E, head h = columns [h·d_h, (h+1)·d_h)) when z is not null.
void encoderBlock(Matrix& x, const EncoderLayerWeights& layer, const BlockOptions& options,
                  float* attention, Matrix* qkv, Matrix* z = nullptr);

// Errors (field "heads") when `mask` is neither null, empty nor L·H flags.
Status checkHeadMask(const HeadMask* mask, int layers, int heads);
// `options` with layer `layer`'s ablated heads of `mask` (nullptr: none) set.
BlockOptions withAblation(BlockOptions options, const HeadMask* mask, int layer);

// Everything one pass computed, kept for the views.
struct EncoderRun {
  std::vector<int> ids;        // n
  std::vector<int> positions;  // n, the position rows used
  int layers = 0, heads = 0;
  std::vector<float> attention;  // [L, H, n, n] row-major, rows sum to 1
  std::vector<Matrix> qkv;       // L, each n x 3E (q | k | v) for the pipeline
  Matrix hidden;                 // n x E, the last block's output
  Matrix residualNorms;          // (L+1) x n: ‖x‖ entering each block, and after the last
  std::vector<Matrix> resid;     // L+1, each n x E: x entering each block, then the last output
  std::vector<Matrix> z;         // L, each n x E: every head's z after any ablation (encoderBlock)

  int size() const { return static_cast<int>(ids.size()); }
  // The n x n weights of one layer and head (a copy).
  Matrix attentionMatrix(int layer, int head) const;
};

// The position row of every token (1 above).
std::vector<int> encoderPositions(const EncoderConfig& config, std::span<const int> ids);

// Runs the encoder on `ids` (token types all 0, as a single text), with the heads of `mask`
// ablated (nullptr or empty: none). Errors: no tokens, an id outside [0, V), more than
// config.maxTokens() tokens (field "tokens"); a mask of other than L·H flags ("heads").
Expected<EncoderRun> runEncoder(const EncoderWeights& weights, std::span<const int> ids,
                                const HeadMask* mask = nullptr);

// The MLM head's logits (V) at token `position` of `run` (6 above). Errors: no MLM head in
// the weights (field "mlm head"), a position outside the run.
Expected<Vector> mlmLogits(const EncoderWeights& weights, const EncoderRun& run, int position);

// The MLM head (6 above) on any rows of the stream: rows (m x E) -> logits (m x V), row i
// = h_i·W_decᵀ + bias with h_i = LN_head(act_head(rows_i·W_t + b_t)). The weights must
// have an MLM head (hasMlmHead); mlmLogits() checks it.
Matrix mlmHeadLogits(const EncoderWeights& weights, const Matrix& rows);

// The top k of the MLM logits: topProbabilities() (core/models/transformer.h).

}  // namespace attn::model
