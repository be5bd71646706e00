// The summary view of a long input (see long_context_service.h). No ImGui, no GL.
#include "app/session/long_context_service.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>

#include "app/session/app_state.h"
#include "app/session/model_service.h"
#include "core/base/format.h"
#include "formats/files.h"
#include "core/base/parallel.h"

namespace attn::app {

bool isLongInput(const model::Config& config, std::int64_t n) {
  if (n > kLongInputTokens) return true;
  const std::uint64_t bytes = static_cast<std::uint64_t>(config.nLayer) * static_cast<std::uint64_t>(config.nHead) *
                              static_cast<std::uint64_t>(n) * static_cast<std::uint64_t>(n) * sizeof(float);
  return bytes > kMaxLiveAttentionBytes;
}

// =======================================================================================
// The pass and the tiles (any thread)
// =======================================================================================

namespace {

// The cores the pass may use: all but one, so that the window's thread keeps a core and
// its frames stay smooth while the pass runs (at least 1).
int passThreads() { return std::max(1, availableCores() - 1); }

// Mean over the n queries of every head's row values ([L, H, n] -> L x H).
Matrix headMeans(const std::vector<float>& rows, int layers, int heads, int n) {
  Matrix means(layers, heads);
  for (int l = 0; l < layers; ++l)
    for (int h = 0; h < heads; ++h) {
      const float* row = rows.data() + static_cast<std::size_t>(l * heads + h) * static_cast<std::size_t>(n);
      double sum = 0;
      for (int i = 0; i < n; ++i) sum += row[i];
      means(l, h) = static_cast<float>(sum / std::max(n, 1));
    }
  return means;
}

// The strips of every head (see LongSummaryResult): `rows` [L, H, n] into bins of `step`
// tokens, the mean of each bin (or its largest value with `max`); keys below `skip` left out.
std::vector<float> binned(const std::vector<float>& rows, int heads, int n, int bins, int step, bool max, int skip = 0) {
  std::vector<float> out(static_cast<std::size_t>(heads) * static_cast<std::size_t>(bins), 0.0f);
  for (int h = 0; h < heads; ++h) {
    const float* row = rows.data() + static_cast<std::size_t>(h) * static_cast<std::size_t>(n);
    for (int b = 0; b < bins; ++b) {
      const int a = std::max(b * step, skip), e = std::min(n, (b + 1) * step);
      double acc = 0;
      for (int i = a; i < e; ++i) acc = max ? std::max(acc, static_cast<double>(row[i])) : acc + row[i];
      out[static_cast<std::size_t>(h * bins + b)] = static_cast<float>(max || e <= a ? acc : acc / (e - a));
    }
  }
  return out;
}

// `tile` shared, keeping `of` (the summary it was cut from, which LongTile::of names) alive
// as long as the tile lives.
std::shared_ptr<const LongTile> shareTile(std::shared_ptr<const LongSummaryResult> of, LongTile tile) {
  return std::shared_ptr<const LongTile>(new LongTile(std::move(tile)),
                                         [of = std::move(of)](const LongTile* t) { delete t; });
}

// "#i token" (the label shortened to 12 code points' worth of bytes by the widget itself).
std::string cellLabel(const ModelRun& run, int i) {
  const std::size_t at = static_cast<std::size_t>(i);
  std::string label = "#";  // appended piece by piece (GCC 12's -Wrestrict misfires on a + chain)
  label.append(std::to_string(i));
  if (at < run.labels.size()) label.append(" ").append(run.labels[at]);
  return label;
}

// The labels of the cells of `step` tokens from `first` (one token a cell: cellLabel).
std::vector<std::string> blockLabels(const ModelRun* run, int first, int end, int step) {
  std::vector<std::string> labels;
  for (int a = first; a < end; a += step) {
    const int b = std::min(end, a + step) - 1;
    if (step == 1 && run)
      labels.push_back(cellLabel(*run, a));
    else
      labels.push_back(std::to_string(a).append("-").append(std::to_string(b)));  // ASCII (the heatmap axis drew an en dash blank)
  }
  return labels;
}

}  // namespace

Expected<std::shared_ptr<LongSummaryResult>> computeLongSummary(const io::ModelFolder& model,
                                                                std::shared_ptr<const ModelRun> run,
                                                                const model::SummaryOptions& options,
                                                                const model::SummaryProgress& progress,
                                                                const std::atomic<bool>* cancel) {
  const model::Config& c = model.weights->config;
  auto result = std::make_shared<LongSummaryResult>();
  result->generation = run->generation;
  result->textRevision = run->textRevision;
  result->options = options;
  result->options.tiles.clear();
  result->options.onLayerQkv = nullptr;
  result->scale = c.scoreScale();
  result->softcap = c.attnSoftcap;
  result->headDim = c.headDim();
  result->headsKv = c.nHeadKv;
  for (int l = 0; l < c.nLayer; ++l) result->masks.push_back(model::KeyMask{true, c.windowOf(l)});
  // 1 the pass, keeping each layer's q and k (not v) while they fit the budget
  const Eigen::Index qkCols = static_cast<Eigen::Index>(c.nHead + c.nHeadKv) * c.headDim();
  result->qk.resize(static_cast<std::size_t>(c.nLayer));
  std::uint64_t kept = 0;
  model::SummaryOptions passOptions = result->options;
  passOptions.threads = options.threads > 0 ? options.threads : passThreads();
  passOptions.onLayerQkv = [&](int layer, const model::MatrixView& qkv) {
    const std::uint64_t bytes = static_cast<std::uint64_t>(qkv.rows()) * static_cast<std::uint64_t>(qkCols) * sizeof(float);
    if (kept + bytes > kMaxKeptQkBytes) return;
    kept += bytes;
    result->qk[static_cast<std::size_t>(layer)] = qkv.leftCols(qkCols);
  };
  Expected<model::LongSummary> summary =
      model::summarizeAttention(model.weights, run->ids, passOptions, progress, cancel);
  if (!summary) return summary.error();
  result->summary = std::move(summary).value();
  // 2 the grid's values: per head, the mean over the queries
  const model::LongSummary& s = result->summary;
  result->meanSink = headMeans(s.sinkMass, s.layers, s.heads, s.n);
  result->meanLocal = headMeans(s.localMass, s.layers, s.heads, s.n);
  result->meanDistant = headMeans(s.distantMass, s.layers, s.heads, s.n);
  result->meanEntropy = headMeans(s.entropy, s.layers, s.heads, s.n);
  // 3 the strips
  const int heads = s.layers * s.heads;
  result->stripBins = std::min(s.n, kStripBins);
  result->stripStep = (s.n + result->stripBins - 1) / result->stripBins;
  result->stripBins = (s.n + result->stripStep - 1) / result->stripStep;
  const int bins = result->stripBins, step = result->stripStep;
  result->stripSink = binned(s.sinkMass, heads, s.n, bins, step, false);
  result->stripLocal = binned(s.localMass, heads, s.n, bins, step, false);
  result->stripDistant = binned(s.distantMass, heads, s.n, bins, step, false);
  result->stripEntropy = binned(s.entropy, heads, s.n, bins, step, false);
  result->stripColSum = binned(s.colSum, heads, s.n, bins, step, true);
  result->stripColSumNoSink = binned(s.colSum, heads, s.n, bins, step, true, options.sink);
  result->run = std::move(run);
  return result;
}

io::ColorNormalization tileNormalization(bool log) {
  io::ColorNormalization rule;
  rule.probability = true;
  rule.centreZero = false;
  rule.range = RangeMode::Fixed;  // probabilities on 0..1 (the log scale keeps 1 as its top)
  rule.vmin = 0.0f;
  rule.vmax = 1.0f;
  rule.colorScale = log ? ColorScaleKind::Log : ColorScaleKind::Linear;
  return rule;
}

std::optional<LongTile> cutTile(const LongSummaryResult& result, TileView view, bool hideSinks,
                                const std::atomic<bool>* cancel) {
  const auto started = std::chrono::steady_clock::now();
  const model::LongSummary& s = result.summary;
  LongTile tile;
  tile.of = &result;
  tile.hideSinks = hideSinks;
  // 1 the block, clamped to the tokens (and past the sink keys when they are hidden)
  view.layer = std::clamp(view.layer, 0, std::max(0, s.layers - 1));
  view.head = std::clamp(view.head, 0, std::max(0, s.heads - 1));
  view.q0 = std::clamp(view.q0, 0, s.n);
  view.q1 = std::clamp(view.q1, view.q0, s.n);
  if (hideSinks) view.k0 = std::max(view.k0, std::min(result.options.sink, s.n));
  view.k0 = std::clamp(view.k0, 0, s.n);
  view.k1 = std::clamp(view.k1, view.k0, s.n);
  tile.view = view;
  const Matrix& qk = result.qk[static_cast<std::size_t>(view.layer)];
  if (qk.size() == 0) {
    tile.error = "layer " + std::to_string(view.layer) + "'s q and k were not kept (above the " +
                 std::to_string(kMaxKeptQkBytes >> 20) + " MiB the view keeps): its summaries only";
    return tile;
  }
  const int rows = view.q1 - view.q0, cols = view.k1 - view.k0;
  if (rows == 0 || cols == 0) return tile;
  // 2 the pooling: at most kMaxTileSide drawn cells a side
  tile.rowStep = (rows + kMaxTileSide - 1) / kMaxTileSide;
  tile.colStep = (cols + kMaxTileSide - 1) / kMaxTileSide;
  const int outRows = (rows + tile.rowStep - 1) / tile.rowStep;
  const int outCols = (cols + tile.colStep - 1) / tile.colStep;
  tile.weights = Matrix::Zero(outRows, outCols);
  // 3 the head's q and its KV head's k, the rows' lse
  const Eigen::Index dh = result.headDim, n = s.n;
  const int group = s.heads / std::max(1, result.headsKv);
  const int kvHead = view.head / std::max(1, group);
  const Eigen::OuterStride<> stride(qk.outerStride());
  const model::MatrixView q(qk.data() + view.head * dh, n, dh, stride);
  const model::MatrixView k(qk.data() + (static_cast<Eigen::Index>(s.heads) + kvHead) * dh, n, dh, stride);
  const std::span<const float> lse(s.lse.data() + static_cast<std::size_t>(view.layer * s.heads + view.head) * static_cast<std::size_t>(n),
                                   static_cast<std::size_t>(n));
  const model::KeyMask& mask = result.masks[static_cast<std::size_t>(view.layer)];
  // 4 per drawn row: the exact weights of its rowStep rows, max-pooled over colStep keys
  SingleThreadedBlas singleThreadedBlas;  // one core for the tile, the other for the frames
  for (int r = 0; r < outRows; ++r) {
    if (cancel && cancel->load(std::memory_order_relaxed)) return std::nullopt;
    const int a = view.q0 + r * tile.rowStep, b = std::min(view.q1, a + tile.rowStep);
    const Matrix exact = model::exactTile(q, k, lse, result.scale, result.softcap, mask, a, b, view.k0, view.k1);
    if (tile.rowStep == 1 && tile.colStep == 1) {
      tile.weights.row(r) = exact.row(0);
      continue;
    }
    const Eigen::RowVectorXf rowMax = exact.colwise().maxCoeff();
    for (int c = 0; c < outCols; ++c) {
      const int c0 = c * tile.colStep, count = std::min(tile.colStep, cols - c0);
      tile.weights(r, c) = rowMax.segment(c0, count).maxCoeff();
    }
  }
  tile.rowLabels = blockLabels(result.run.get(), view.q0, view.q1, tile.rowStep);
  tile.colLabels = blockLabels(result.run.get(), view.k0, view.k1, tile.colStep);
  // 5 what the heatmap widget would compute from every cell when it shows the block
  const MatrixRef weights = matrixRef(tile.weights);
  const io::ColorNormalization log = io::normalizationOf(tileNormalization(true));
  tile.finite = io::finiteRange(weights);
  tile.logPositions = io::colorPositions(weights, log);
  tile.logRange = io::normalizationRange(weights, -1, log);
  tile.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  return tile;
}

// =======================================================================================
// The workers
// =======================================================================================

void LongContextService::submitSummary(std::shared_ptr<const io::ModelFolder> model,
                                       std::shared_ptr<const ModelRun> run, model::SummaryOptions options) {
  // The user's Cancel and a newer text both stop the running pass (its row blocks poll
  // cancel_); the new job starts with the flag down.
  std::uint64_t job = 0;
  {
    std::lock_guard lock(mutex_);
    job = ++lastJob_;
    cancel_ = true;
  }
  summaries_.submit([this, job, model = std::move(model), run = std::move(run),
                     options = std::move(options)](const std::atomic<bool>&) {
    Finished finished;
    finished.generation = run->generation;
    finished.textRevision = run->textRevision;
    {
      std::lock_guard lock(mutex_);
      if (cancelledJob_ >= job) {  // cancelled before it started
        finished.cancelled = true;
        finished_ = std::move(finished);
        return;
      }
      cancel_ = false;
    }
    done_ = 0;
    total_ = model->weights->config.nLayer * model->weights->config.nHead;
    Expected<std::shared_ptr<LongSummaryResult>> result = computeLongSummary(
        *model, run, options, [this](int done, int) { done_ = done; }, &cancel_);
    if (result) {
      finished.result = std::move(result).value();
    } else if (cancel_.load()) {
      finished.cancelled = true;
    } else {
      finished.error = result.error().message();
    }
    total_ = 0;
    std::lock_guard lock(mutex_);
    finished_ = std::move(finished);
  });
}

void LongContextService::cancelSummary() {
  std::lock_guard lock(mutex_);
  cancelledJob_ = lastJob_;
  cancel_ = true;
}

void LongContextService::submitTile(std::shared_ptr<const LongSummaryResult> result, TileView view, bool hideSinks) {
  tiles_.submit([this, result = std::move(result), view, hideSinks](const std::atomic<bool>& cancel) {
    std::optional<LongTile> tile = cutTile(*result, view, hideSinks, &cancel);
    if (!tile) return;  // a newer block was asked
    std::shared_ptr<const LongTile> shared = shareTile(result, std::move(*tile));
    std::lock_guard lock(mutex_);
    tile_ = std::move(shared);
  });
}

std::optional<LongContextService::Finished> LongContextService::takeSummary() {
  std::lock_guard lock(mutex_);
  return std::exchange(finished_, std::nullopt);
}

std::shared_ptr<const LongTile> LongContextService::takeTile() {
  std::lock_guard lock(mutex_);
  return std::exchange(tile_, nullptr);
}

void LongContextService::progress(int& done, int& total) const {
  done = done_.load();
  total = total_.load();
}

void LongContextService::waitIdle() {
  summaries_.waitIdle();
  tiles_.waitIdle();
  releases_.waitIdle();
}

void LongContextService::retire(std::shared_ptr<const void> garbage) {
  if (!garbage) return;
  {
    std::lock_guard lock(mutex_);
    retired_.push_back(std::move(garbage));
  }
  // The job takes whatever is waiting when it runs; a job replaced before it started holds
  // nothing, so dropping it frees nothing here.
  releases_.submit([this](const std::atomic<bool>&) {
    std::vector<std::shared_ptr<const void>> garbage;
    {
      std::lock_guard lock(mutex_);
      garbage.swap(retired_);
    }
    const std::size_t count = garbage.size();
    garbage.clear();  // the frees, on this thread
    std::lock_guard lock(mutex_);
    released_ += count;
  });
}

std::uint64_t LongContextService::released() const {
  std::lock_guard lock(mutex_);
  return released_;
}

// =======================================================================================
// The window's step
// =======================================================================================

namespace {

// Drops the window's reference to `garbage`: on the release worker when there is a service
// (the window), else here (tests and screenshots, which have no frames to keep smooth).
template <class T>
void dropReference(LongContextState& lc, std::shared_ptr<T>& garbage) {
  if (lc.service)
    lc.service->retire(std::move(garbage));
  garbage.reset();
}

// Makes `result` the summary on screen: the selection clamped to its heads, the visible
// block reset to the whole matrix when the token count changed. The summary it replaces
// (and the tile cut from it) is freed by the release worker.
void publishSummary(LongContextState& lc, std::shared_ptr<const LongSummaryResult> result) {
  const model::LongSummary& s = result->summary;
  const bool sameLength = lc.result && lc.result->summary.n == s.n;
  lc.layer = std::clamp(lc.layer, 0, s.layers - 1);
  lc.head = std::clamp(lc.head, 0, s.heads - 1);
  if (!sameLength) lc.tile = TileView{lc.layer, lc.head, 0, s.n, 0, s.n};
  std::shared_ptr<const LongSummaryResult> old = std::exchange(lc.result, std::move(result));
  dropReference(lc, old);
  lc.tileOf = nullptr;  // the block is asked again of the new summary
}

}  // namespace

bool updateLongContext(AppState& state, double now, bool async) {
  ModelView& view = state.model;
  const std::shared_ptr<const ModelRun>& run = view.run;
  const bool longRun = view.model && run && run->longInput && run->generation == view.generation;
  if (!longRun) {
    // A shorter text or another model: a pass still running for the old one is stopped.
    if (view.longContext && view.longContext->running && view.longContext->service) {
      view.longContext->service->cancelSummary();
      view.longContext->running = false;
      view.longContext->submittedGeneration = view.longContext->submittedRevision = ~0ull;
    }
    return false;
  }
  if (!view.longContext) view.longContext = std::make_shared<LongContextState>();
  LongContextState& lc = *view.longContext;
  bool changed = false;
  // 1 a new long run: its summary
  if (lc.submittedGeneration != run->generation || lc.submittedRevision != run->textRevision) {
    lc.submittedGeneration = run->generation;
    lc.submittedRevision = run->textRevision;
    lc.status.clear();
    lc.cancelRequested = false;
    const model::Config& c = view.model->weights->config;
    if (async) {
      if (!lc.service) lc.service = std::make_shared<LongContextService>();
      lc.service->submitSummary(view.model, run, lc.options);
      lc.running = true;
      lc.startedAt = now;
      lc.done = 0;
      lc.total = c.nLayer * c.nHead;
    } else {
      Expected<std::shared_ptr<LongSummaryResult>> result = computeLongSummary(*view.model, run, lc.options);
      if (result)
        publishSummary(lc, std::move(result).value());
      else
        lc.status = result.error().message();
      changed = true;
    }
  }
  // 2 the panel's Cancel
  if (std::exchange(lc.cancelRequested, false) && lc.running && lc.service) lc.service->cancelSummary();
  // 3 the pass's progress and result
  if (lc.service) {
    if (lc.running) {
      int done = 0, total = 0;
      lc.service->progress(done, total);
      if (total > 0) {  // 0 until the job starts: the submit's total stays
        lc.done = done;
        lc.total = total;
      }
    }
    if (std::optional<LongContextService::Finished> finished = lc.service->takeSummary()) {
      if (finished->generation == lc.submittedGeneration && finished->textRevision == lc.submittedRevision) {
        lc.running = false;
        if (finished->result) {
          publishSummary(lc, std::move(finished->result));
        } else if (finished->cancelled) {
          lc.status = lc.result ? "cancelled: the previous summary stays on screen"
                                : "cancelled: no summary yet";
        } else {
          lc.status = finished->error;
        }
        changed = true;
      }
      dropReference(lc, finished->result);  // a stale pass's summary
    }
  }
  if (!lc.result) return changed;
  // 4 the visible block follows the selected head; recomputed when it or the summary changed
  lc.tile.layer = lc.layer;
  lc.tile.head = lc.head;
  const bool asked = lc.tileOf == lc.result.get() && lc.submittedTile == lc.tile && lc.submittedHide == lc.hideSinks;
  if (!asked) {
    lc.tileOf = lc.result.get();
    lc.submittedTile = lc.tile;
    lc.submittedHide = lc.hideSinks;
    if (async) {
      if (!lc.service) lc.service = std::make_shared<LongContextService>();
      lc.service->submitTile(lc.result, lc.tile, lc.hideSinks);
      lc.tileRunning = true;
    } else if (std::optional<LongTile> tile = cutTile(*lc.result, lc.tile, lc.hideSinks)) {
      std::shared_ptr<const LongTile> old = std::exchange(lc.shown, shareTile(lc.result, std::move(*tile)));
      dropReference(lc, old);
      changed = true;
    }
  }
  if (lc.service && lc.tileRunning) {
    if (std::shared_ptr<const LongTile> tile = lc.service->takeTile()) {
      if (tile->of == lc.result.get()) {
        std::swap(lc.shown, tile);
        changed = true;
      }
      dropReference(lc, tile);  // the tile replaced, or a stale one
    }
    lc.tileRunning = lc.service->tileBusy();
  }
  return changed;
}

bool openModelText(AppState& state, const std::string& path, double now) {
  if (!state.model.model) {
    notify(state, Notice::Kind::Error,
           "cannot open " + path + " as the model's text: no decoder model is loaded (Model \xE2\x96\xB8 Open model folder\xE2\x80\xA6 first)",
           now);
    return false;
  }
  Expected<std::string> text = io::readCapped(path, std::size_t{64} << 20);
  if (!text) {
    notify(state, Notice::Kind::Error, "cannot open " + text.error().message(), now);
    return false;
  }
  const std::size_t bytes = text->size();
  state.model.text = std::move(text).value();
  ++state.model.textRevision;
  requestShow(state.view, ShowRequest::Model);
  notify(state, Notice::Kind::Info, "the model's text is now " + path + " (" + countOf(static_cast<long long>(bytes), "byte", "bytes") + ")", now);
  return true;
}

std::span<const float> headRow(const LongSummaryResult& result, SummaryMetric metric, int layer, int head) {
  const model::LongSummary& s = result.summary;
  if (layer < 0 || layer >= s.layers || head < 0 || head >= s.heads) return {};
  const std::vector<float>& rows = metric == SummaryMetric::Sink     ? s.sinkMass
                                   : metric == SummaryMetric::Local   ? s.localMass
                                   : metric == SummaryMetric::Distant ? s.distantMass
                                                                      : s.entropy;
  return std::span<const float>(rows.data() + static_cast<std::size_t>(layer * s.heads + head) * static_cast<std::size_t>(s.n),
                                static_cast<std::size_t>(s.n));
}

std::span<const float> headColumnSums(const LongSummaryResult& result, int layer, int head) {
  const model::LongSummary& s = result.summary;
  if (layer < 0 || layer >= s.layers || head < 0 || head >= s.heads) return {};
  return std::span<const float>(s.colSum.data() + static_cast<std::size_t>(layer * s.heads + head) * static_cast<std::size_t>(s.n),
                                static_cast<std::size_t>(s.n));
}

const Matrix& metricGrid(const LongSummaryResult& result, SummaryMetric metric) {
  switch (metric) {
    case SummaryMetric::Sink: return result.meanSink;
    case SummaryMetric::Local: return result.meanLocal;
    case SummaryMetric::Distant: return result.meanDistant;
    case SummaryMetric::Entropy: break;
  }
  return result.meanEntropy;
}

std::span<const float> headStrip(const LongSummaryResult& result, SummaryMetric metric, int layer, int head) {
  const model::LongSummary& s = result.summary;
  if (layer < 0 || layer >= s.layers || head < 0 || head >= s.heads) return {};
  const std::vector<float>& strips = metric == SummaryMetric::Sink     ? result.stripSink
                                     : metric == SummaryMetric::Local   ? result.stripLocal
                                     : metric == SummaryMetric::Distant ? result.stripDistant
                                                                        : result.stripEntropy;
  const std::size_t bins = static_cast<std::size_t>(result.stripBins);
  return std::span<const float>(strips.data() + static_cast<std::size_t>(layer * s.heads + head) * bins, bins);
}

std::span<const float> headColumnTrack(const LongSummaryResult& result, int layer, int head, bool withoutSinks) {
  const model::LongSummary& s = result.summary;
  if (layer < 0 || layer >= s.layers || head < 0 || head >= s.heads) return {};
  const std::vector<float>& track = withoutSinks ? result.stripColSumNoSink : result.stripColSum;
  const std::size_t bins = static_cast<std::size_t>(result.stripBins);
  return std::span<const float>(track.data() + static_cast<std::size_t>(layer * s.heads + head) * bins, bins);
}

}  // namespace attn::app
