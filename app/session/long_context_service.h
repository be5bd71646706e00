// The Model panel's summary view of a long input (issue 29, point 4): instead of the whole
// [L, H, n, n] attention, the tiled pass of core/models/long_context.h (summarizeAttention)
// runs on a worker with progress and cancel, and the visible block of one head's attention
// is recomputed exactly (model::exactTile from the pass's lse and the layer's kept q and k)
// on a second, latest-wins worker as the user pans and zooms. The UI never waits for either.
//
// When an input is "long": more than kLongInputTokens tokens, or an attention tensor
// [L, H, n, n] float32 above kMaxLiveAttentionBytes (the budget of the live views,
// app/session/model_service.h). 1024 tokens because above that the n x n heatmaps of the
// Attention panel have cells below one pixel anywhere on a screen, and the full run's
// memory (L·H·n²·4 bytes) grows past what the summaries need (L·H·n·(6 + 2K)·4 bytes) by a
// factor n / 22; the budget catches the larger models earlier (Llama-3.2-1B already at
// 1024 tokens: 2 GiB). Such a run (ModelRun::longInput) holds the tokens only; this service
// computes the rest.
//
// State apart from work: LongContextState (AppState::model.longContext) holds the panel's
// choices (the head, the colouring, the visible block, hide the sinks; the log colour scale
// is the app's ViewSettings::logWeights) and the published results; LongContextService (made on first use, owned by that state, like the Image
// panel's ImageModelService) holds the workers. No ImGui, no GL: tests drive it directly.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "app/session/latest_worker.h"
#include "app/session/model_view.h"
#include "core/models/long_context.h"
#include "render/color_scale.h"

namespace attn::app {

struct AppState;

// An input with more tokens than this gets the summary view (see above).
inline constexpr int kLongInputTokens = 1024;
// q and k of every layer are kept for the exact tiles up to this many bytes (n x (H + H_kv)
// · d_h floats a layer: 100 MB at 32k tokens for a SmolLM-width layer); layers past the
// budget show their summaries, and their tiles say why they cannot be cut.
inline constexpr std::uint64_t kMaxKeptQkBytes = std::uint64_t{2} << 30;
// The largest visible block drawn cell for cell: a larger one is max-pooled (each drawn cell
// the largest exact weight of its block of rows x keys), at most this many cells a side.
inline constexpr int kMaxTileSide = 512;

// True when `n` tokens on a model of `config` get the summary view instead of the full run.
bool isLongInput(const model::Config& config, std::int64_t n);

// What colours the layer x head grid: the mean over the queries of each head's row values.
enum class SummaryMetric { Sink, Local, Distant, Entropy };

// One finished summary (immutable once published).
struct LongSummaryResult {
  std::uint64_t generation = 0, textRevision = 0;  // the model and text it belongs to
  std::shared_ptr<const ModelRun> run;             // the tokens and their labels
  model::SummaryOptions options;                   // sink, local, topK it was made with
  model::LongSummary summary;                      // [L, H, n] arrays (long_context.h)
  // Per head (L x H): the mean over the n queries of sink, local, distant mass and entropy.
  Matrix meanSink, meanLocal, meanDistant, meanEntropy;
  // The strips of every head, [L, H, bins] (bins = min(n, kStripBins), stripStep tokens a
  // bin, the last bin shorter): the mean over each bin's queries of sink, local, distant mass
  // and entropy, and the largest column sum over each bin's keys (a sharp heavy hitter stays
  // visible); stripColSumNoSink the same without the first `sink` keys.
  int stripBins = 0, stripStep = 1;
  std::vector<float> stripSink, stripLocal, stripDistant, stripEntropy, stripColSum, stripColSumNoSink;
  // Per layer: q heads then k heads, n x (H + H_kv)·d_h (after rotary and q/k norms, as
  // onLayerQkv hands them); empty for a layer past kMaxKeptQkBytes.
  std::vector<Matrix> qk;
  int headDim = 0, headsKv = 0;      // d_h and H_kv (query head h reads KV head h / (H / H_kv))
  float scale = 1, softcap = 0;      // the model's score scale and soft-cap
  std::vector<model::KeyMask> masks;  // per layer (sliding windows)
};

// The row strips and the column-sum track are drawn from at most this many bins a head.
inline constexpr int kStripBins = 1024;

// A block of one head's attention to recompute: rows [q0, q1) x keys [k0, k1).
struct TileView {
  int layer = 0, head = 0;
  int q0 = 0, q1 = 0, k0 = 0, k1 = 0;
  bool operator==(const TileView&) const = default;
};

// The colour rule of the tile's heatmap: weights on a fixed 0..1 range, log10 (with the floor
// of io::logColorRange) when `log`. The panel draws with it and the tile worker makes the
// log colour positions with it, so that the two agree.
io::ColorNormalization tileNormalization(bool log);

// The exact weights of a TileView, max-pooled to at most kMaxTileSide a side: cell (r, c)
// is the largest a_ij over rows q0 + r·rowStep ... and keys k0 + c·colStep ... (steps 1 when
// the block fits). With hideSinks the first `sink` keys are left out of the block
// (k0 raised to sink), so that the colours spread over the other keys.
struct LongTile {
  const LongSummaryResult* of = nullptr;  // the summary it was cut from (identity only)
  TileView view;                           // the block asked (k0 after hideSinks)
  bool hideSinks = false;
  int rowStep = 1, colStep = 1;  // rows / keys per drawn cell
  Matrix weights;                // ceil((q1 − q0) / rowStep) x ceil((k1 − k0) / colStep)
  std::vector<std::string> rowLabels, colLabels;  // "#i token" per cell, or "i0-i1" pooled
  std::string error;             // why it could not be cut (a layer past the q/k budget)
  double ms = 0;                 // compute time
  // What the heatmap widget would otherwise compute from the weights in the frame that
  // shows them (O(cells) on the UI thread), made on the worker: the finite range
  // (io::finiteRange), and for the log colour scale each cell's colour position
  // (io::colorPositions with tileNormalization(true), the weights' shape) and the scale's
  // range (io::normalizationRange of the whole block). Both scales are made, so that the
  // log toggle shows at once.
  std::optional<io::ValueRange> finite;
  Matrix logPositions;
  io::ValueRange logRange;
};

// Cuts `view` out of `result` exactly (see LongTile); the block is clamped to the tokens.
// Returns nullopt when *cancel turned true (checked between row chunks).
std::optional<LongTile> cutTile(const LongSummaryResult& result, TileView view, bool hideSinks,
                                const std::atomic<bool>* cancel = nullptr);

// Runs the summary of `ids` on `model` (summarizeAttention with onLayerQkv keeping q and k)
// and derives the per-head means. Errors: summarizeAttention's ("cancelled" when *cancel).
Expected<std::shared_ptr<LongSummaryResult>> computeLongSummary(
    const io::ModelFolder& model, std::shared_ptr<const ModelRun> run, const model::SummaryOptions& options,
    const model::SummaryProgress& progress = {}, const std::atomic<bool>* cancel = nullptr);

class LongContextService;

// The panel's choices and the published results. Plain data but for the service pointer.
struct LongContextState {
  model::SummaryOptions options;  // sink, local, topK of the next pass
  // The pass: what is on screen, what runs, and how far it got.
  std::shared_ptr<const LongSummaryResult> result;  // the newest finished summary
  std::uint64_t submittedGeneration = ~0ull, submittedRevision = ~0ull;  // what was asked
  bool running = false;
  int done = 0, total = 0;   // heads of the running pass
  double startedAt = 0;      // when it started (the state's clock: `now` of the update)
  bool cancelRequested = false;  // the panel's Cancel: taken by the update step
  std::string status;        // "cancelled: the previous summary stays", an error, or ""
  // The view.
  SummaryMetric metric = SummaryMetric::Sink;
  int layer = 0, head = 0;   // the selected head
  TileView tile;             // the visible block (layer / head follow the selection)
  bool hideSinks = false;    // leave keys 0..sink−1 out of the heatmap
  std::shared_ptr<const LongTile> shown;  // the newest finished tile
  bool tileRunning = false;
  // The block last asked for (of which summary, with which hideSinks): asked once.
  const LongSummaryResult* tileOf = nullptr;
  TileView submittedTile;
  bool submittedHide = false;
  std::shared_ptr<LongContextService> service;  // the window's workers (made on first use)
};

// The workers: one for the pass (a new text cancels the running pass), one for the tiles
// (newest block wins), one that frees what the window replaced. Results are taken once.
class LongContextService {
 public:
  LongContextService() = default;
  ~LongContextService() = default;  // cancels and joins the workers
  LongContextService(const LongContextService&) = delete;
  LongContextService& operator=(const LongContextService&) = delete;

  // Queues computeLongSummary of run->ids (n tokens) on `model` with `options` (sink, local,
  // topK); cancels the running pass and replaces a queued one.
  void submitSummary(std::shared_ptr<const io::ModelFolder> model, std::shared_ptr<const ModelRun> run,
                     model::SummaryOptions options);
  // Raises the running pass's cancel flag (it ends with "cancelled" at the next row block),
  // or marks the queued one cancelled before it starts.
  void cancelSummary();
  // Queues cutTile(*result, view, hideSinks); a newer block cancels it (latest wins).
  void submitTile(std::shared_ptr<const LongSummaryResult> result, TileView view, bool hideSinks);

  struct Finished {
    std::uint64_t generation = 0, textRevision = 0;
    std::shared_ptr<const LongSummaryResult> result;  // null on error or cancel
    std::string error;
    bool cancelled = false;
  };
  // The newest finished pass / block not yet taken (never block).
  std::optional<Finished> takeSummary();
  std::shared_ptr<const LongTile> takeTile();
  // The running pass's progress: heads done / total (0 / 0 when none runs).
  void progress(int& done, int& total) const;
  bool summaryBusy() const { return summaries_.busy(); }
  bool tileBusy() const { return tiles_.busy(); }
  // Blocks until the workers are idle (tests, screenshots; never in a frame).
  void waitIdle();
  // Frees `garbage` (a replaced summary, hundreds of MB at 32k tokens, or a replaced tile)
  // on a worker instead of the UI thread, so that the frame that replaces it does not pay
  // for the free. Null is ignored.
  void retire(std::shared_ptr<const void> garbage);
  // How many retired objects the release worker has freed so far (tests).
  std::uint64_t released() const;

 private:
  mutable std::mutex mutex_;
  std::optional<Finished> finished_;
  std::shared_ptr<const LongTile> tile_;
  std::atomic<int> done_{0}, total_{0};
  std::atomic<bool> cancel_{false};  // raised by Cancel and by a newer submit; polled by the pass
  std::uint64_t lastJob_ = 0, cancelledJob_ = 0;  // jobs submitted / cancelled (under mutex_)
  std::vector<std::shared_ptr<const void>> retired_;  // waiting for the release worker (under mutex_)
  std::uint64_t released_ = 0;                         // freed by it (under mutex_)
  LatestWorker summaries_, tiles_, releases_;  // last: joined before the members their jobs use go
};

// The window's step for long inputs: a new long run submits its summary (async) or computes
// it at once (!async: tests, screenshots); a Cancel is passed on; finished results are
// taken (a cancelled pass keeps the previous result and sets status); the visible block is
// resubmitted when it or the summary changed. Never blocks when async. True when something
// on screen changed.
bool updateLongContext(AppState& state, double now, bool async);

// Opens a UTF-8 text file (File ▸ Open… of a .txt) as the Model panel's text, up to 64 MiB;
// a long one gets the summary view. Errors (the file cannot be read, no decoder model
// loaded) post a notice naming the file and change nothing. True when the text was set.
bool openModelText(AppState& state, const std::string& path, double now);

// The panel's helpers on the state (no computation): the selected head's row values of the
// shown summary (n floats; empty without one) for `metric`, and the column sums.
std::span<const float> headRow(const LongSummaryResult& result, SummaryMetric metric, int layer, int head);
std::span<const float> headColumnSums(const LongSummaryResult& result, int layer, int head);
// The grid's values for `metric` (L x H).
const Matrix& metricGrid(const LongSummaryResult& result, SummaryMetric metric);
// The selected head's strip of `metric` (stripBins values), and its column-sum track.
std::span<const float> headStrip(const LongSummaryResult& result, SummaryMetric metric, int layer, int head);
std::span<const float> headColumnTrack(const LongSummaryResult& result, int layer, int head, bool withoutSinks);

}  // namespace attn::app
