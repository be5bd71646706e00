// Computing off the UI thread. The window hands every new document revision to a
// ComputeService; its worker thread computes the latest one (older requests that were not
// started yet are dropped: latest wins) and publishes an immutable
// std::shared_ptr<const Computed>. The UI never waits: until the new result arrives, the
// panels keep showing the previous one with a "computing…" mark.
//
// computeDocument() is the one function that turns a document into a Computed; the
// synchronous update() of app_state.h (tests, screenshots, the CLI-like paths) and the
// worker both call it, so both give the same result bit for bit.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "app/session/app_state.h"
#include "app/session/latest_worker.h"

namespace attn::app {

// Builds the problem of `doc` and runs attend(). `revision` is stored in the result.
// `recycle` (may be null) is an earlier result that nobody else holds any more: its buffers
// are reused when the shapes match (no reallocation per edit at 2048 tokens). `views`: the
// matrices the window shows; each is selected here (selectMatrixRef: a head's scores are
// computed again, labels built) into Computed::views, so the UI thread only uploads them.
// Never throws for bad input: the error text is in Computed::error.
std::shared_ptr<Computed> computeDocument(const Scenario& doc, std::uint64_t revision,
                                          std::shared_ptr<Computed> recycle,
                                          const std::vector<ViewKey>& views = {});

class ComputeService {
 public:
  ComputeService() = default;   // starts the worker thread
  ~ComputeService() = default;  // joins the worker (an attend() in flight finishes)
  ComputeService(const ComputeService&) = delete;
  ComputeService& operator=(const ComputeService&) = delete;

  // Queues `doc` (a snapshot the caller no longer changes) for computing, with the views to
  // prepare (see computeDocument). A request that is still queued is replaced: only the
  // newest revision is ever computed next.
  void submit(std::shared_ptr<const Scenario> doc, std::uint64_t revision,
              std::vector<ViewKey> views = {});
  // The newest finished result not yet taken, or null. Never blocks on a computation.
  std::shared_ptr<const Computed> take();
  // True while a request is queued or being computed.
  bool busy() const;
  // Blocks until nothing is queued or running (screenshots and tests; never in a frame).
  void waitIdle();
  // How many requests the worker has computed so far (dropped ones are not counted).
  std::uint64_t completed() const;

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<const Computed> finished_;  // published, not yet taken
  // The last two published results; one that only the worker still holds is recomputed in
  // place (buffer reuse). Touched by the worker's jobs only (one at a time).
  std::shared_ptr<const Computed> published_[2];
  LatestWorker worker_;  // last: joined before the members its jobs use go
};

// The window's recompute step: submits the document when its revision changed since the
// last submit, with `views`: the matrices the window shows now (the UI says which; the
// service never reads panel state), which the worker selects with the result. Moves a
// finished result into state.computed (when it belongs to the newest revision submitted,
// or to any newer revision than the one shown). Returns true when state.computed was
// replaced this call. Never blocks.
bool updateAsync(AppState& state, ComputeService& service, const std::vector<ViewKey>& views = {});

}  // namespace attn::app
