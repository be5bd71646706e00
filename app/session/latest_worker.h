// The one latest-wins worker of the services (compute, attention file, model, image,
// training): one thread that runs the newest submitted job. Submitting replaces a job that has not
// started yet (it is dropped, never run) and raises the cancel flag of the job that is
// running, which a long job may poll to stop early (a job that ignores it simply finishes;
// its result is then older than the newest request, which the service's step drops).
//
// A job may be given a time before which it must not start (a debounce: the model runs the
// text 150 ms after the last keystroke); a newer submit replaces it and its time.
//
// Jobs publish their own results (under the service's mutex); the worker knows nothing of
// what they compute. No ImGui, no GL.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

namespace attn::app {

class LatestWorker {
 public:
  using Clock = std::chrono::steady_clock;
  // `cancel` turns true when a newer job was submitted or the worker is being destroyed.
  using Job = std::function<void(const std::atomic<bool>& cancel)>;

  LatestWorker();   // starts the thread (idle)
  ~LatestWorker();  // cancels the running job, drops a queued one, joins
  LatestWorker(const LatestWorker&) = delete;
  LatestWorker& operator=(const LatestWorker&) = delete;

  // Queues `job` to start at `notBefore` at the earliest (default: at once). Replaces a
  // job that has not started; raises the running job's cancel flag.
  void submit(Job job, Clock::time_point notBefore = {});
  // True while a job is queued (waiting for its time or the thread) or running.
  bool busy() const;
  // Blocks until nothing is queued or running (tests, screenshots; never in a frame).
  void waitIdle();
  // Jobs that ran to their end so far (dropped ones are not counted).
  std::uint64_t completed() const;

 private:
  void run();

  mutable std::mutex mutex_;
  std::condition_variable wake_, idle_;
  Job queued_;
  Clock::time_point notBefore_{};
  bool running_ = false, stop_ = false;
  std::uint64_t completed_ = 0;
  std::atomic<bool> cancel_{false};
  std::thread thread_;  // last: started after every member above exists
};

}  // namespace attn::app
