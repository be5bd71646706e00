// An attention source: what the Attention panel shows. The scenario's result, an attention
// file (.npy / .npz), a model run, an image's patch attention and a training run each
// become one, with one interface: a tensor [layers, heads, n_q, n_k] with its labels (the
// shape and labels), the views that make sense for it, and a name for the header. The
// selection and its reset live in AttentionView (attention_view.h: selectAttentionView,
// showSource). Panels show a source; they never ask which kind it is.
//
// New kinds (model families, interventions) add a factory here that fills the tensor; the
// panel, the worker (attention_service.h) and the exports work on it unchanged.
//
// Also the ONE classifier from a path to what it opens (classifyPath), used by the window,
// the file dialog and the CLI. No ImGui, no GL.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/attention/patches.h"
#include "core/base/types.h"
#include "formats/attention_file.h"

namespace attn::app {

struct Computed;             // app_state.h
struct ModelRun;             // model_view.h
struct TrainingSnapshot;     // training_service.h

// ---------------------------------------------------------------------------------------
// Paths
// ---------------------------------------------------------------------------------------

// What a path opens, by its extension (any case): an attention file (.npy, .npz), an image
// (.png, .jpg, .jpeg, .bmp, .gif, .tga, .psd, .hdr, .pic, .pnm, .ppm, .pgm), else a
// scenario (JSON; a wrong file is reported by the scenario reader, naming the field).
enum class PathKind { Scenario, AttentionFile, Image };
PathKind classifyPath(const std::string& path);

// ---------------------------------------------------------------------------------------
// Sources
// ---------------------------------------------------------------------------------------

// Which of the Attention panel's views apply to a source.
struct SourceViews {
  bool grid = true;      // the layer x head thumbnails
  bool headView = true;  // two token columns joined by lines (needs tokens on both axes)
  bool text = true;      // tokens as text (needs the keys to be the queries' own tokens)
  bool compare = true;   // A | B | A - B against another selection or file
  // Heatmap and focus (one row / column as bars) apply to every source.
};

// What a source's values are, for the colour range and the names on its colour bar (issue
// 30's "show" selector, app/session/mechanism_view.h): attention weights (probabilities: the
// range fixed 0..1) or another non-negative quantity shown on 0..its maximum.
struct SourceQuantity {
  bool probability = true;  // false: the colours span 0..the shown matrix's maximum
  std::string name;         // prefixed to the heatmap's title ("norm-weighted ‖a·f(x)‖"); "" = weights
  std::string meaning;      // the heatmap's hover line: what a cell is
};

struct AttentionSource {
  std::string name;    // the header: "run.npz", a model folder's name, "scenario · Decoder state"
  std::string detail;  // the header's tooltip: how the dimensions were read
  std::shared_ptr<const io::AttentionFile> tensor;  // never null: [layers, heads, n_q, n_k]
  SourceViews views;
  // Heads an intervention edited (a model run with ablated heads, model_analysis.h), layer-
  // major flags (layers x heads; empty = none), and what was done ("ablated (zero)"). The
  // grid marks them: their own patterns are unchanged (z is edited after the softmax), the
  // heads downstream of them moved.
  std::vector<bool> intervened;
  std::string intervention;
  SourceQuantity quantity;  // attention weights unless a mechanism says otherwise

  bool isIntervened(int layer, int head) const {
    const std::size_t i = static_cast<std::size_t>(layer * shape().heads + head);
    return i < intervened.size() && intervened[i];
  }
  const io::AttentionShape& shape() const { return tensor->shape(); }
  const std::vector<std::string>& queryLabels() const { return tensor->queryLabels(); }
  const std::vector<std::string>& keyLabels() const { return tensor->keyLabels(); }
  // Where the labels came from, for the header: a file name, "tokenizer", or "indices".
  std::string labelsFrom() const;
  // `selection` moved into range of this source's layers and heads.
  io::AttentionSelection clamp(io::AttentionSelection selection) const;
};

using SourcePtr = std::shared_ptr<const AttentionSource>;

// An attention file: the source, or (an .npz with several readable arrays and none named
// in `options`) the arrays to pick from. The file is read once. Errors name the file, the
// field and the problem (io::AttentionFile::open).
struct SourceOrChoice {
  SourcePtr source;                       // null when there is a choice to make
  std::vector<io::ArraySummary> choices;  // readable arrays, when source is null
};
Expected<SourceOrChoice> openFileSource(const std::string& path,
                                        const io::AttentionOpenOptions& options = {});

// The model run's attention [layers, heads, n, n] (run.attention must be set), named after
// the model folder. Every view applies.
SourcePtr modelRunSource(const ModelRun& run);

// The scenario's weights as one layer of H heads (n_q x n_k each), labelled with the
// problem's query and key labels. `name` is the scenario's. The text view applies in self
// mode only (the keys are the queries' own tokens). Errors: no result (field "result").
Expected<SourcePtr> scenarioSource(const Computed& computed, const std::string& name);

// An image's patch attention: one layer, the heads of `patches.result` (count x count),
// labelled "r,c" by `labels` (count entries). No head or text view (patches are not text).
Expected<SourcePtr> imageSource(const PatchAttention& patches,
                                const std::vector<std::string>& labels, const std::string& name);

// A training run's maps of the chosen example: every map shaped like the first becomes a
// head of one layer (rows = target positions, cols = input tokens). Errors: no maps yet.
Expected<SourcePtr> trainingSource(const TrainingSnapshot& snapshot);

}  // namespace attn::app
