// A scenario: everything needed to reproduce one view (inputs, labels and options), and
// its translation into attend()'s Inputs and Options. The JSON form lives in io/.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/attention/attention.h"

namespace attn {

// self: one sequence X gives queries, keys and values. cross: queries come from one
// sequence, keys/values from another (n_q may differ from n_k).
enum class Mode { Self, Cross };
std::string_view toString(Mode mode);
std::optional<Mode> parseMode(std::string_view name);

// Largest seed a scenario may hold: 2^53, so that it survives a JSON number in any reader.
inline constexpr std::uint64_t kMaxSeed = std::uint64_t{1} << 53;

// One checked statement about a scenario's result, on the matrix `stage` of head `head`
// (-1 = the mean over heads). Each set field is one statement; a claim holds at least one.
//   argmaxKey:        row `query` has its largest entry in the column labelled argmaxKey
//   value:            the cell (query, key) equals *value within `tolerance`
//   rowsSumToOne:     true: every row that is not fully masked sums to 1 (within 1e-4);
//                     false: at least one row does not
//   lowerTriangular:  true: every entry above the diagonal is 0 (or masked)
//   absAtMost:        every finite |entry| <= *absAtMost
//   maxNonzeroPerRow: no row has more than this many entries that are not 0 (nor masked)
// Labels are the result's row / column labels (query_labels, key_labels, the sentence's
// words); a label that is not there is an error of the claim, not a pass.
struct Claim {
  std::string stage = "weights";  // a MatrixKind name: weights, scores, masked_scores, q, ...
  int head = 0;
  std::string query, key, argmaxKey;
  std::optional<float> value;
  float tolerance = 0.005f;
  std::optional<bool> rowsSumToOne, lowerTriangular;
  std::optional<float> absAtMost;
  std::optional<int> maxNonzeroPerRow;
  bool operator==(const Claim&) const = default;
};

// Options as a new scenario starts: everything as Options{} but the score, dot.
inline Options scenarioOptions() {
  Options options;
  options.score = ScoreKind::Dot;
  return options;
}

// Where a scenario's rows come from when it is one self-attention head of a real model
// (the pipeline's "Open this head", app/session/head_scenario.h): its queries, keys and
// values (cross mode, identity projection) are that head's q, k and v rows of the SAME
// `tokens` tokens, so n_q = n_k and query i is the token of key i.
struct ModelHead {
  std::string model;      // the model's name (its folder or file)
  std::string modelType;  // config.json's model_type: gpt2, llama, bert, vit, ...
  int layer = 0, head = 0;
  int tokens = 0;       // n: the rows of each of Q, K and V
  bool causal = false;  // a decoder's: each token sees itself and the tokens before it
  bool rotary = false;  // q and k are after the rotary embedding (RoPE)
  bool operator==(const ModelHead&) const = default;
};

struct Scenario {
  std::string name;         // shown in the title bar and presets menu
  std::string description;  // one paragraph, shown in the UI
  // Set when the rows are one head of a model (see ModelHead); saved as "model_head".
  std::optional<ModelHead> modelHead;

  Mode mode = Mode::Cross;
  // Self mode: `inputs` is X (n x d), labelled by `inputLabels`. If `sentence` is not empty
  // it replaces `inputs`: one token per word, seededEmbeddings(tokens, embeddingDim, seed).
  Matrix inputs;
  std::vector<std::string> inputLabels;
  std::string sentence;
  int embeddingDim = 16;
  // Cross mode: queries (n_q x d_q), keys (n_k x d_k), values (n_k x d_v; empty = keys).
  Matrix queries;
  Matrix keys;
  Matrix values;
  std::vector<std::string> queryLabels;  // empty = "q0", "q1", ...
  std::vector<std::string> keyLabels;    // empty = "k0", "k1", ...
  // Adds sinusoidalPositionalEncoding to the inputs (self) or to queries and keys/values
  // (cross, each with its own positions) before projection.
  bool positionalEncoding = false;

  // What attend() is asked to do: score, heads, temperature, seed, mask, normaliser, score
  // parameters, the decoder output, and (projection == explicit) the full-width projection
  // matrices in options.projections (wo/bo may be empty). buildProblem() passes these on as
  // they are, filling in options.projections for the other projection kinds. The scenario's
  // default score is dot (the file format's default, docs/scenarios.md), not
  // Options' scaled dot.
  Options options = scenarioOptions();

  ProjectionKind projection = ProjectionKind::Identity;
  int modelWidth = 0;  // d_model for xavier projections; 0 = input width
  // projection == pytorch: nn.MultiheadAttention's block (E = d_model).
  Matrix inProjWeight;   // 3E x E
  Vector inProjBias;     // 3E (may be empty)
  Matrix outProjWeight;  // E x E
  Vector outProjBias;    // E (may be empty)

  // Machine-checkable statements about the result (the file's optional "claims"): what the
  // description and the captions say, in a form tests/session/test_session_presets.cpp checks
  // against the computed numbers for every preset (core/attention/claims.h). attend()
  // never looks at them.
  std::vector<Claim> claims;

  // The file's optional `view` object (colormap, selection, ...), kept as compact JSON text
  // so that the core needs no JSON library and unknown view settings survive a save. Empty
  // = no view object. The app reads and writes it; attend() never looks at it.
  std::string viewJson;
};

// What attend() needs, plus the labels to show on the axes.
struct Problem {
  Inputs inputs;
  Options options;
  std::vector<std::string> queryLabels;  // n_q entries
  std::vector<std::string> keyLabels;    // n_k entries
};

// Turns a scenario into attend()'s arguments: resolves self/cross, sentence embeddings,
// positional encoding, default labels and the projection kind. Errors name the field.
Expected<Problem> buildProblem(const Scenario& scenario);

// Renames the option names in an error of validate()/attend() (field and, where it names
// an input, the problem text) to the fields the scenario's author wrote: in self mode
// "queries"/"keys"/"values" become "inputs" (or "sentence"), with PyTorch projections
// "projections.wq" becomes "in_proj_weight", and so on. Every caller that runs attend() on a
// buildProblem() result passes attend()'s errors through this.
Error toScenarioError(Error error, const Scenario& scenario);

// buildProblem + attend. Errors name the field; `file` is left empty for the caller to fill.
Expected<AttentionResult> compute(const Scenario& scenario);

}  // namespace attn
