// The compute worker (see compute_service.h). No ImGui, no GL: tests drive it directly.
#include "app/session/compute_service.h"

#include <chrono>
#include <utility>

namespace attn::app {

// =======================================================================================
// One document -> one Computed
// =======================================================================================

std::shared_ptr<Computed> computeDocument(const Scenario& doc, std::uint64_t revision,
                                          std::shared_ptr<Computed> recycle,
                                          const std::vector<ViewKey>& views) {
  const auto start = std::chrono::steady_clock::now();
  std::shared_ptr<Computed> computed = recycle ? std::move(recycle) : std::make_shared<Computed>();
  computed->revision = revision;
  computed->error.clear();
  computed->views.clear();  // they point into the result that is recomputed below
  Expected<Problem> problem = buildProblem(doc);
  if (!problem) {
    computed->problem.reset();
    computed->result.reset();
    computed->error = problem.error().message();
  } else {
    // Compute into the recycled result's buffers: with the same shapes (every edit of a
    // value) nothing is reallocated, which saves ~25% at 2048 tokens. On an error the
    // partial result is dropped, as the error replaces it on screen anyway.
    if (!computed->result) computed->result.emplace();
    RunOptions run;
    run.threads = 0;  // every core: heads (or row blocks) in parallel, docs/performance.md
    Status status = attend(problem->inputs, problem->options, *computed->result, run);
    if (!status) {
      computed->problem.reset();
      computed->result.reset();
      computed->error = toScenarioError(status.error(), doc).message();
    } else {
      computed->problem = std::move(problem).value();
      for (const ViewKey& key : views) {
        Expected<SelectedMatrix> selected =
            selectMatrixRef(*computed->result, *computed->problem, key.kind, key.head);
        if (selected) computed->views.push_back({key, std::move(selected).value()});
      }
    }
  }
  computed->computeMs =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return computed;
}

// =======================================================================================
// The worker
// =======================================================================================

ComputeService::ComputeService() : worker_([this] { run(); }) {}

ComputeService::~ComputeService() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  worker_.join();
}

void ComputeService::submit(std::shared_ptr<const Scenario> doc, std::uint64_t revision,
                            std::vector<ViewKey> views) {
  {
    std::lock_guard lock(mutex_);
    queued_ = std::move(doc);  // latest wins: an unstarted older request is dropped here
    queuedRevision_ = revision;
    queuedViews_ = std::move(views);
  }
  wake_.notify_one();
}

std::shared_ptr<const Computed> ComputeService::take() {
  std::lock_guard lock(mutex_);
  return std::exchange(finished_, nullptr);
}

bool ComputeService::busy() const {
  std::lock_guard lock(mutex_);
  return running_ || queued_ != nullptr;
}

void ComputeService::waitIdle() {
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [this] { return !running_ && queued_ == nullptr; });
}

std::uint64_t ComputeService::completed() const {
  std::lock_guard lock(mutex_);
  return completed_;
}

void ComputeService::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stop_ || queued_ != nullptr; });
    if (stop_) return;
    std::shared_ptr<const Scenario> doc = std::exchange(queued_, nullptr);
    const std::uint64_t revision = queuedRevision_;
    const std::vector<ViewKey> views = std::move(queuedViews_);
    queuedViews_.clear();
    running_ = true;
    // Reuse the buffers of a result that only this worker still holds (the UI has moved on
    // to a newer one); otherwise allocate fresh ones.
    std::shared_ptr<Computed> recycle;
    for (std::shared_ptr<const Computed>& old : published_) {
      if (old && old.use_count() == 1) {  // nobody else can copy it: it is ours again
        recycle = std::const_pointer_cast<Computed>(std::move(old));
        old.reset();
        break;
      }
    }
    lock.unlock();
    std::shared_ptr<Computed> result = computeDocument(*doc, revision, std::move(recycle), views);
    doc.reset();
    lock.lock();
    running_ = false;
    ++completed_;
    finished_ = result;
    // Remember the last two results: the one on screen, and the one it replaced, which
    // becomes reusable as soon as the UI lets go of it.
    published_[1] = std::move(published_[0]);
    published_[0] = std::move(result);
    if (queued_ == nullptr) idle_.notify_all();
  }
}

// =======================================================================================
// The window's recompute step
// =======================================================================================

bool updateAsync(AppState& state, ComputeService& service) {
  if (state.submittedRevision != state.revision) {
    // The views on screen now (the cache of the shown revision) are the ones the new result
    // will be shown in; the mask view (a negative pseudo-head) is the panel's own.
    std::vector<ViewKey> views;
    for (const PanelScratch::CachedView& entry : state.panels.viewCache)
      if (entry.head >= -1) views.push_back({entry.kind, entry.head});
    service.submit(std::make_shared<const Scenario>(state.doc), state.revision, std::move(views));
    state.submittedRevision = state.revision;
  }
  std::shared_ptr<const Computed> finished = service.take();
  if (!finished) return false;
  // Results arrive in submit order, so a finished one is never older than what is shown,
  // except after a synchronous update() moved ahead of it: then it is stale.
  if (state.computed->revision != ~0ull && finished->revision < state.computed->revision &&
      state.computed->revision <= state.revision) {
    return false;
  }
  publishComputed(state, std::move(finished));
  return true;
}

}  // namespace attn::app
