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

void ComputeService::submit(std::shared_ptr<const Scenario> doc, std::uint64_t revision,
                            std::vector<ViewKey> views) {
  worker_.submit([this, doc = std::move(doc), revision,
                  views = std::move(views)](const std::atomic<bool>&) mutable {
    // Reuse the buffers of a result that only this worker still holds (the UI has moved on
    // to a newer one); otherwise allocate fresh ones.
    std::shared_ptr<Computed> recycle;
    {
      std::lock_guard lock(mutex_);
      for (std::shared_ptr<const Computed>& old : published_) {
        if (old && old.use_count() == 1) {  // nobody else can copy it: it is ours again
          recycle = std::const_pointer_cast<Computed>(std::move(old));
          old.reset();
          break;
        }
      }
    }
    std::shared_ptr<Computed> result = computeDocument(*doc, revision, std::move(recycle), views);
    doc.reset();
    std::lock_guard lock(mutex_);
    finished_ = result;
    // Remember the last two results: the one on screen, and the one it replaced, which
    // becomes reusable as soon as the UI lets go of it.
    published_[1] = std::move(published_[0]);
    published_[0] = std::move(result);
  });
}

std::shared_ptr<const Computed> ComputeService::take() {
  std::lock_guard lock(mutex_);
  return std::exchange(finished_, nullptr);
}

bool ComputeService::busy() const {
  return worker_.busy();
}

void ComputeService::waitIdle() {
  worker_.waitIdle();
}

std::uint64_t ComputeService::completed() const {
  return worker_.completed();
}

// =======================================================================================
// The window's recompute step
// =======================================================================================

bool updateAsync(AppState& state, ComputeService& service, const std::vector<ViewKey>& views) {
  if (state.submittedRevision != state.revision) {
    service.submit(std::make_shared<const Scenario>(state.doc), state.revision, views);
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
