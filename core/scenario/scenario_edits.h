// Every edit of a document: pure functions of a Scenario, used by the panels, the tests and
// any other front end (the window never changes a Scenario field directly). Every edit
// leaves the scenario valid for buildProblem(): labels, the custom mask and the padding list
// follow the token counts, the head count keeps dividing the model width, and values keep
// as many rows as keys. An edit that cannot be made is refused with a note saying why, and
// leaves the scenario unchanged.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/scenario/scenario.h"

namespace attn {

// ---------------------------------------------------------------------------------------
// Outcome
// ---------------------------------------------------------------------------------------

struct EditOutcome {
  bool changed = false;  // the scenario was changed (call touch())
  std::string note;      // refused: why; changed: what else was adjusted. Empty = nothing.
  bool refused() const { return !changed && !note.empty(); }
};

// ---------------------------------------------------------------------------------------
// Sequences and shapes
// ---------------------------------------------------------------------------------------

// Inputs = X of self mode (queries = keys = values = X); the others are cross mode's.
enum class Sequence { Inputs, Queries, Keys, Values };

// The matrix a table shows. Values in cross mode with "values = keys" return the keys.
const Matrix& sequenceMatrix(const Scenario& s, Sequence seq);
// Labels of a sequence's rows (may be empty = defaults; values share the keys' labels).
const std::vector<std::string>& sequenceLabels(const Scenario& s, Sequence seq);
// Default label of row i ("x0", "q0", "k0", "v0" style; values use "k").
std::string defaultLabel(Sequence seq, int row);

int queryCount(const Scenario& s);  // n_q (self: n)
int keyCount(const Scenario& s);    // n_k (self: n)
// Cross mode with no explicit values: V = K.
bool valuesAreKeys(const Scenario& s);

// The widths the head count must divide: d_model (Q, K) and dv_model (V), as buildProblem
// resolves them for the scenario's projection kind.
struct ModelWidths {
  int dModel = 0;
  int dvModel = 0;
};
ModelWidths modelWidths(const Scenario& s);
// Head counts that divide both widths, ascending (1 is always there), at most kMaxHeads.
std::vector<int> validHeadCounts(const Scenario& s);

// ---------------------------------------------------------------------------------------
// Vector tables
// ---------------------------------------------------------------------------------------

// A sentence-driven scenario (sentence non-empty) becomes a plain one whose inputs are the
// sentence's embeddings, so that cell edits take effect. No-op otherwise.
void materialiseSentence(Scenario& s);

EditOutcome setValue(Scenario& s, Sequence seq, int row, int col, Scalar value);
EditOutcome setLabel(Scenario& s, Sequence seq, int row, const std::string& label);
// Appends a vector (seeded small random entries). Keys bring a value row along.
EditOutcome addVector(Scenario& s, Sequence seq);
// Removes row `row`. Refused for the last vector. Keys take their value row along; the
// custom mask and padding list lose the matching row / column.
EditOutcome removeVector(Scenario& s, Sequence seq, int row);
// Appends / removes a dimension (column). Under identity projection queries and keys share
// their width (q·k needs equal lengths), so editing one edits both. Refused when the
// projection matrices were loaded from a file (they fix the input widths).
EditOutcome addDimension(Scenario& s, Sequence seq);
EditOutcome removeDimension(Scenario& s, Sequence seq, int col);
// Entries uniform in [-2, 2], rounded to 0.1 (easy to follow by hand). Same seed, same values.
EditOutcome randomise(Scenario& s, Sequence seq, std::uint64_t seed);
// Scales every row to unit length (zero rows stay zero).
EditOutcome normaliseRows(Scenario& s, Sequence seq);
// Cross mode: values = keys (true drops explicit values) or a separate copy to edit.
EditOutcome setValuesAreKeys(Scenario& s, bool same);

// Where a typed sentence goes. Self: the sentence becomes X of self-attention (switching
// to self mode if needed). Queries / Keys: cross mode is kept and the words replace the
// queries, or the keys (values = keys then); the other side stays as it is.
enum class SentenceTarget { Self, Queries, Keys };

// One token per word, seeded embeddings (seededEmbeddings(words, d, seed)).
// - Self: width `embeddingDim`; switches to self mode (the note says so).
// - Queries / Keys (cross mode only, refused in self mode): the embeddings take the
//   replaced sequence's current width (the projections, the score and q·k keep fitting; the
//   note says when `embeddingDim` was not used), the labels are the words, and a custom or
//   padding mask starts over. Mode, score, projection and heads are kept.
EditOutcome setSentence(Scenario& s, const std::string& text, int embeddingDim,
                        SentenceTarget target = SentenceTarget::Self);

// Self <-> cross. Self -> cross: queries = keys = X. Cross -> self: X = the keys (the
// sequence being attended), the queries are dropped (said in the note).
EditOutcome setMode(Scenario& s, Mode mode);

// Makes every non-empty label list match its row count (new rows get default labels).
void resizeLabels(Scenario& s);
// Makes the custom mask n_q x n_k (new cells allowed) and the padding list n_k long (new
// keys valid), and keeps the fixed window position inside [0, n_k).
void syncMaskShapes(Scenario& s);

// ---------------------------------------------------------------------------------------
// Settings
// ---------------------------------------------------------------------------------------

// Refused (note names the valid counts) unless `heads` divides d_model and dv_model.
EditOutcome setHeads(Scenario& s, int heads);
// Switching to explicit / pytorch is refused unless the matrices are in the scenario.
EditOutcome setProjection(Scenario& s, ProjectionKind kind);
// xavier's d_model (0 = input width); the head count is lowered to a divisor if needed.
EditOutcome setModelWidth(Scenario& s, int width);
// Switching to custom starts from the mask currently applied (so one can "draw" on top of
// causal, say); padding starts with every key valid.
EditOutcome setMaskKind(Scenario& s, MaskKind kind);
// Flips one cell of the custom mask (switching the mask to custom first if needed).
EditOutcome toggleCustomMaskCell(Scenario& s, int row, int col);
// Flips a key's padding flag (switching the mask to padding first if needed).
EditOutcome togglePaddingKey(Scenario& s, int key);

// The score function in symbols, e.g. "score(q, k) = q·k / √d_h" (core/attention/formulas.h).
const char* scoreFormula(ScoreKind kind);
// What a normaliser does, one line.
const char* normalizerFormula(NormalizerKind kind);
// The mask rule in the same notation ("key j allowed iff j ≤ i").
const char* maskFormula(MaskKind kind);

// ---------------------------------------------------------------------------------------
// Scalar settings (each validates and clamps; a value outside the editable range is clamped
// with a note, a value that has no meaning is refused)
// ---------------------------------------------------------------------------------------

// The temperature range an edit accepts. Scenario files may hold any finite T > 0.
inline constexpr Scalar kMinTemperature = 1e-4f;  // "0.0001" in the clamping note
inline constexpr Scalar kMaxTemperature = 1e4f;   // "10000"

// Switching the score drops score parameters loaded from a file (they belong to the old one).
EditOutcome setScore(Scenario& s, ScoreKind kind);
// d_a / d_m of additive and mlp scores: refused below 1 (a layer of no units; a scenario
// file's 0 means d_h, which an edit cannot ask for), clamped to kMaxWidth.
EditOutcome setScoreHidden(Scenario& s, int hidden);
// Refused unless finite and > 0; clamped to [kMinTemperature, kMaxTemperature].
EditOutcome setTemperature(Scenario& s, Scalar temperature);
// Clamped to kMaxSeed (2^53).
EditOutcome setSeed(Scenario& s, std::uint64_t seed);
EditOutcome setPositionalEncoding(Scenario& s, bool enabled);
EditOutcome setDecoderOutput(Scenario& s, bool enabled);
EditOutcome setNormalizer(Scenario& s, NormalizerKind kind);
// top_k's k, clamped to [1, kMaxTokens].
EditOutcome setTopK(Scenario& s, int k);
// Local window half-width D, clamped to [0, kMaxTokens].
EditOutcome setLocalWindow(Scenario& s, int window);
EditOutcome setWindowCenter(Scenario& s, MaskOptions::Center center);
// Fixed window position p, clamped to [0, n_k).
EditOutcome setWindowPosition(Scenario& s, int position);
// Custom mask only: every cell allowed.
EditOutcome allowAllCustomMask(Scenario& s);
// The whole document back to `original` (revert to preset; undoable like any edit).
EditOutcome resetTo(Scenario& s, const Scenario& original);
// Two edits made as one step (e.g. both coordinates of a dragged arrow).
EditOutcome combine(EditOutcome a, const EditOutcome& b);

}  // namespace attn
