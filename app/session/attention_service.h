// Opening attention files into the app, and the worker that makes what the Attention panel
// shows off the UI thread (the ComputeService pattern, app/session/compute_service.h): the model
// view's thumbnails and per-head statistics (io::overviewHeads, ONCE per file, with
// progress, cancelled when another file is opened) and the selected head / mean / max /
// rollout (io::selectAttention; latest wins). Results are immutable shared_ptr<const T>;
// the UI never waits. No ImGui, no GL: tests drive it directly.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "app/session/app_state.h"
#include "app/session/latest_worker.h"

namespace attn::app {

// Opens `path` (.npy / .npz) as state.attention (its side-file labels included) and shows
// the Attention panel. On error the state keeps what it had and an error notice names the
// file and the problem. The scenario document is never touched. An .npz with several
// arrays and none named in `options` is not an error: its readable arrays are put in
// state.attention.chooseArrays for the panel to offer (returns false, nothing else changes).
// Returns success.
bool openAttentionFile(AppState& state, const std::string& path, double now,
                       const io::AttentionOpenOptions& options = {});

// Computes synchronously what is missing (overview of the current file, the current
// selection). Screenshots and tests. Returns true when something was replaced.
bool updateAttention(AppState& state);

class AttentionService {
 public:
  AttentionService();   // starts the two workers (overview, selection)
  ~AttentionService();  // cancels what runs and joins
  AttentionService(const AttentionService&) = delete;
  AttentionService& operator=(const AttentionService&) = delete;

  // Queues the overview of `file` (cancels one in progress: a newer file wins).
  void submitOverview(std::shared_ptr<const io::AttentionFile> file, std::uint64_t generation);
  // Queues a selection (an unstarted older one is dropped).
  void submitSelection(std::shared_ptr<const io::AttentionFile> file, std::uint64_t generation,
                       io::AttentionSelection selection, std::uint64_t revision);
  // Finished results not yet taken, or null. Never block.
  std::shared_ptr<const io::HeadOverview> takeOverview(std::uint64_t* generation);
  std::shared_ptr<const AttentionShown> takeShown();
  // Heads done / in total of the overview in progress (0..1).
  float overviewProgress() const;
  bool busy() const;
  // Blocks until both workers are idle (tests; never in a frame).
  void waitIdle();

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<const io::HeadOverview> overview_;
  std::uint64_t overviewGeneration_ = 0;
  std::shared_ptr<const AttentionShown> shown_;
  std::atomic<int> done_{0}, total_{0};
  LatestWorker overviewWorker_, selectionWorker_;  // last: joined first on destruction
};

// The window's step: submits what changed (a new file, a new selection), moves finished
// results into state.attention when they belong to the current file. Never blocks.
// Returns true when something was replaced.
bool updateAttentionAsync(AppState& state, AttentionService& service);

}  // namespace attn::app
