// Analyses on the transformer engine (core/models/transformer.h), in the spirit of
// TransformerLens: ablation, activation patching, the logit lens, direct logit attribution
// and head scores. Every analysis is one function here, used by the CLI (app/cli/) and the
// window alike. docs/analyses.md writes out every formula and convention.
//
// Shapes: L = layers, H = query heads, E = model width, d_h = head width, V = vocabulary,
// n = tokens of the prompt. Positions are 0-based; "the last position" is n - 1, where the
// next token is predicted. No BOS token is added: the ids are used as given.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "core/models/transformer.h"

namespace attn::model {

struct HeadId {
  int layer = 0, head = 0;
  bool operator==(const HeadId&) const = default;
};

// ---------------------------------------------------------------------------------------
// Runs and predictions
// ---------------------------------------------------------------------------------------

// The checks of a prompt: not empty, every id in [0, V) (errors name `field` and the token's
// place), and of one token id (`field`: outside the vocabulary).
Status checkPrompt(const Config& config, std::span<const int> ids, const char* field);
Status checkToken(const Config& config, int id, const char* field);

// One pass over `ids` under `hooks` (nullptr: none) on `threads` threads (0: every core, as
// DecoderRun::setThreads). Errors as DecoderRun::setTokens and DecoderRun::setHooks.
Expected<DecoderRun> runWithHooks(std::shared_ptr<const Weights> weights, std::span<const int> ids,
                               std::shared_ptr<const Hooks> hooks, int threads = 0);

// Hooks that only record (Hooks::record): the stream entering each block, every head's z
// and the stream after the last block (DecoderRun::recording()), nothing changed.
std::shared_ptr<const Hooks> recordingHooks();

// The logits at every position: n x V = NormF(resid)·W_Uᵀ for resid (n x E), the stream
// after the last block (Recording::resid[L]).
Matrix logitsAt(const Weights& weights, const Matrix& resid);

// The top k of a row of logits: topProbabilities() (core/models/transformer.h).

// The language-model loss of the text: the mean over positions i = 0..n-2 of
// −log softmax(logits_i)[ids_{i+1}] (nats), from logits (n x V). NaN when n < 2.
double textLoss(const Matrix& logits, std::span<const int> ids);

// What a run predicts: the top-K after the last token, all V logits there, the loss.
struct Prediction {
  std::vector<TokenProbability> next;  // K
  Vector logits;                       // V, at position n - 1
  double loss = 0;                     // textLoss over the whole prompt
};

// The prediction of a pass that recorded (Hooks::record, so Recording::resid[L] holds all n
// positions): the top-K after the last token, its V logits and textLoss over `ids` (the
// run's n tokens). The window's ablation (app/session/model_analysis.h) and
// ablateHeads() both use it.
Prediction predictionOf(const DecoderRun& recorded, std::span<const int> ids, int topK);
// The same from the logits at every position (n x V, rows in the order of `ids`; a
// RunOutput::logits of model::runModel, core/models/model_run.h).
Prediction predictionOf(const Matrix& logits, std::span<const int> ids, int topK);

// ---------------------------------------------------------------------------------------
// 1 Ablation
// ---------------------------------------------------------------------------------------

// Zero: z_h = 0. Mean: every row of z_h = the mean over the prompt's n positions of z_h in
// the same pass (TransformerLens: a hook on blocks.{l}.attn.hook_z setting
// z[:, :, h] = z[:, :, h].mean(1, keepdim=True)).
enum class AblationMode { Zero, Mean };

struct Ablation {
  Prediction clean, ablated;
};

// Hooks (recording) that ablate every head of `heads` together by `mode`: one HeadHook per
// head, in the given order. Errors: a head outside L x H (field "heads").
Expected<std::shared_ptr<const Hooks>> ablationHooks(const Config& config,
                                                     std::span<const HeadId> heads,
                                                     AblationMode mode);

// Runs `ids` as is and with every head of `heads` ablated together. Errors: empty ids, a
// head outside L x H, topK < 1.
Expected<Ablation> ablateHeads(std::shared_ptr<const Weights> weights, std::span<const int> ids,
                               std::span<const HeadId> heads, AblationMode mode, int topK);

// ---------------------------------------------------------------------------------------
// 2 Activation patching
// ---------------------------------------------------------------------------------------

// m = logit(answer) − logit(wrong) at the last position.
enum class PatchTarget {
  Heads,  // each head's z at all positions, from the clean run: L x H
  Resid,  // the residual stream of layer l (ResidHook numbering) at position p: (L+1) x n
  HeadsByPosition,  // one head's z at one position p: (L·H) x n, row l·H + h
};

struct Patching {
  Matrix effect;  // (m_patched − m_corrupt) / (m_clean − m_corrupt); shape as PatchTarget
  double cleanMetric = 0, corruptMetric = 0;
  int answer = -1;  // the metric's answer (modelPatching: the clean run's argmax when not given)
};

// modelPatching() (core/models/run_analyses.h) on a decoder: patches from the clean run into
// the corrupt run, one site at a time (L·H, (L+1)·n or L·H·n sites), each re-running the
// corrupt pass from the patched block and position only, with m = logit(answer) −
// logit(wrong) after the last token. Errors: the prompts differ in length or are empty, an id
// outside V, and m_clean = m_corrupt (the normalisation divides by it).
Expected<Patching> activationPatching(std::shared_ptr<const Weights> weights,
                                      std::span<const int> clean, std::span<const int> corrupt,
                                      int answer, int wrong, PatchTarget target);

// ---------------------------------------------------------------------------------------
// 3 Logit lens and direct logit attribution
// ---------------------------------------------------------------------------------------

// top[l][i] = the K largest of NormF(resid_l[i])·W_Uᵀ (with their softmax probabilities)
// for l = 0..L (0 = the embeddings, l = after block l - 1; the final norm with its own
// weights and bias) and every position i. top[L] is the model's own prediction.
struct Lens {
  std::vector<std::vector<std::vector<TokenProbability>>> top;  // [L+1][n][K]
};
// modelLens() (core/models/run_analyses.h) on a decoder, at the streams' own scale.
Expected<Lens> logitLens(std::shared_ptr<const Weights> weights, std::span<const int> ids,
                         int topK);

// Each head's direct contribution to m = logit(answer) − logit(wrong) at the last position
// p, as TransformerLens's stack_head_results + apply_ln_to_stack + logits_to_logit_diff
// (a model loaded with fold_ln): the head's output r = z_h·W_o[h] (1 x E, rows
// h·d_h..(h+1)·d_h of W_o, no bias), centred over E for LayerNorm (not for RMSNorm), divided
// by the final norm's scale at p (Recording::finalScale, from the unpatched run), dotted
// with g ⊙ (u_answer − u_wrong) where g is the final norm's weight and u are rows of W_U.
// Refused for a model with sandwich norms or soft-capped logits (gemma2): not linear there.
struct Attribution {
  Matrix heads;       // L x H
  double metric = 0;  // m itself
};
Expected<Attribution> directLogitAttribution(std::shared_ptr<const Weights> weights,
                                             std::span<const int> ids, int answer, int wrong);

// ---------------------------------------------------------------------------------------
// 4 Head scores (TransformerLens head_detector, "mul" error measure)
// ---------------------------------------------------------------------------------------

// 0/1 templates D (n x n, lower triangular):
//   previous token   D[i][i-1] = 1
//   duplicate token  D[i][j] = 1 for j < i with ids[j] = ids[i]
//   induction        D[i][j] = 1 for 1 <= j <= i with ids[j-1] = ids[i]
Matrix previousTokenTemplate(int n);
Matrix duplicateTokenTemplate(std::span<const int> ids);
Matrix inductionTemplate(std::span<const int> ids);

// The attention patterns of one run of any kind (decoder DecoderRun, EncoderRun, VitRun), as
// the head scores read them: row(l, h, i) = query i's weights over the keys of head h of
// layer l (n values, or the first i + 1 where a causal run stores only those).
struct AttentionStack {
  int layers = 0, heads = 0, n = 0;
  std::function<std::span<const float>(int layer, int head, int query)> row;
};
// The patterns of a decoder run (it must outlive the stack).
AttentionStack attentionStack(const DecoderRun& run);
// The patterns of a contiguous [L, H, n, n] buffer (EncoderRun::attention,
// VitRun::attention; it must outlive the stack).
AttentionStack attentionStack(std::span<const float> lhnn, int layers, int heads, int n);

struct DetectOptions {
  bool excludeBos = false;           // A[:, 0] = 0 before scoring
  bool excludeCurrentToken = false;  // A[i][i] = 0 before scoring
  // The head classes of long context (issue 29; `heads --sink K --local W`): sink = the
  // first sinkKeys keys (1: α0 as below), local = keys j with 0 <= i − j < localWindow
  // (|i − j| on a bidirectional pattern), distant = every other key.
  int sinkKeys = 1;
  int localWindow = 64;
};
// Per head: Σ(A ⊙ D) / ΣA over the whole n x n pattern A (after the exclusions; a causal
// pattern is 0 above the diagonal, a bidirectional one is not), L x H. A head whose
// excluded pattern sums to 0 scores 0.
Matrix detectionScores(const AttentionStack& attention, const Matrix& detection,
                       const DetectOptions& options);
Matrix detectionScores(const DecoderRun& run, const Matrix& detection,
                       const DetectOptions& options);
// Attention-sink mass: α0 = mean over queries i of A[i][0], L x H (with
// DetectOptions::sinkKeys K > 1 through headScore: the mean of Σ_{j<K} A[i][j]).
Matrix sinkMass(const AttentionStack& attention);
Matrix sinkMass(const DecoderRun& run);
// Mean over queries i of the entropy −Σ_j A[i][j]·ln A[i][j] (nats; 0·ln 0 = 0), L x H.
Matrix attentionEntropy(const AttentionStack& attention);
Matrix attentionEntropy(const DecoderRun& run);

// `length` token ids drawn uniformly from [0, vocab) by SplitMix64(seed), then repeated:
// 2·length ids.
std::vector<int> repeatedRandomTokens(int length, int vocab, std::uint64_t seed);
// The induction score on such a sequence (2·length tokens): per head the mean of the
// pattern's diagonal at offset 1 − length, A[i][i − length + 1] for i = length−1..2·length−1,
// L x H. Errors: length < 1, 2·length over the context.
Expected<Matrix> repeatedInductionScores(std::shared_ptr<const Weights> weights, int length,
                                         std::uint64_t seed);

// ---------------------------------------------------------------------------------------
// 5 Over a dataset: the five scores per head, accumulated over prompts and merged exactly
// ---------------------------------------------------------------------------------------

enum class HeadScoreKind { PreviousToken, DuplicateToken, Induction, Sink, Entropy, Local, Distant, Retrieval };
// The five scores of one run's pattern (the window's head scores, `heads`' default).
inline constexpr HeadScoreKind kAllHeadScores[] = {
    HeadScoreKind::PreviousToken, HeadScoreKind::DuplicateToken, HeadScoreKind::Induction,
    HeadScoreKind::Sink, HeadScoreKind::Entropy};
// The head classes of long context (issue 29, core/models/head_classes.h), after DuoAttention
// and the Retrieval Head paper: local and distant mass (DetectOptions), and the retrieval
// score of a synthetic needle run (not one run's pattern: headScore returns an empty matrix
// for it, and accumulate() must not be given it).
inline constexpr HeadScoreKind kLongContextHeadScores[] = {HeadScoreKind::Local, HeadScoreKind::Distant,
                                                           HeadScoreKind::Retrieval};
// Every kind, for parsing names.
inline constexpr HeadScoreKind kEveryHeadScore[] = {
    HeadScoreKind::PreviousToken, HeadScoreKind::DuplicateToken, HeadScoreKind::Induction, HeadScoreKind::Sink,
    HeadScoreKind::Entropy,       HeadScoreKind::Local,          HeadScoreKind::Distant,   HeadScoreKind::Retrieval};
// "prev", "dup", "induction", "sink", "entropy", "local", "distant", "retrieval": the CLI's
// and the files' names.
const char* toString(HeadScoreKind kind);

// The mean over queries of the weight on DetectOptions' sink keys j < sinkKeys (kind Sink),
// local keys |i − j| < localWindow (Local) or the others (Distant), L x H: the long-context
// classes from a whole pattern (head_classes.h computes the same from the tiled pass).
Matrix windowMass(const AttentionStack& attention, const DetectOptions& options, HeadScoreKind kind);

// Whether a score needs token ids (dup and induction compare them; a vision transformer's
// patches have none).
bool needsTokenIds(HeadScoreKind kind);
// One score of every head (L x H): the detection scores with the templates of the run's
// tokens `ids` (n, or empty for patches: then only the kinds !needsTokenIds), sink mass,
// entropy.
Matrix headScore(const AttentionStack& attention, std::span<const int> ids, HeadScoreKind kind,
                 const DetectOptions& options);
Matrix headScore(const DecoderRun& run, HeadScoreKind kind, const DetectOptions& options);

// Per score and head: the number of prompts, Σ score and Σ score² (in double). Totals of
// disjoint prompt sets merge by adding, so shards merge to the unsharded totals up to the
// order of the additions (about 1e-16 relative).
struct ScoreTotals {
  int layers = 0, heads = 0;
  std::vector<HeadScoreKind> kinds;
  std::int64_t count = 0;                   // prompts
  std::vector<Eigen::MatrixXd> sum, sumSq;  // per kind: L x H
};
// Empty totals for a model's L x H and the chosen scores.
ScoreTotals emptyTotals(int layers, int heads, std::vector<HeadScoreKind> kinds);
ScoreTotals emptyTotals(const Config& config, std::vector<HeadScoreKind> kinds);
// Adds one prompt: headScore() of every kind of `totals`.
void accumulate(ScoreTotals& totals, const AttentionStack& attention, std::span<const int> ids,
                const DetectOptions& options);
void accumulate(ScoreTotals& totals, const DecoderRun& run, const DetectOptions& options);
// Adds `part` into `into`. Errors: different L x H or score lists (naming both).
Status merge(ScoreTotals& into, const ScoreTotals& part);
// Mean and standard deviation (population, √(Σs²/N − mean²), 0 when negative by rounding)
// of score `index` of `totals`, L x H each.
Eigen::MatrixXd meanOf(const ScoreTotals& totals, std::size_t index);
Eigen::MatrixXd stdOf(const ScoreTotals& totals, std::size_t index);

// The prompts of shard `shard` (1-based) of `shards` over `count` prompts: the contiguous
// range [first, last) with first = ⌊(shard−1)·count/shards⌋, last = ⌊shard·count/shards⌋.
// The shards cover every prompt once.
struct ShardRange {
  std::size_t first = 0, last = 0;
};
ShardRange shardRange(std::size_t count, int shard, int shards);

}  // namespace attn::model
