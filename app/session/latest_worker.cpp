// The latest-wins worker (see latest_worker.h).
#include "app/session/latest_worker.h"

#include <utility>

namespace attn::app {

LatestWorker::LatestWorker() : thread_([this] { run(); }) {}

LatestWorker::~LatestWorker() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
    cancel_ = true;
    queued_ = nullptr;
  }
  wake_.notify_all();
  thread_.join();
}

void LatestWorker::submit(Job job, Clock::time_point notBefore) {
  {
    std::lock_guard lock(mutex_);
    queued_ = std::move(job);  // latest wins: an unstarted older job is dropped here
    notBefore_ = notBefore;
    cancel_ = true;  // the running job (if any) is stale now
  }
  wake_.notify_all();
}

bool LatestWorker::busy() const {
  std::lock_guard lock(mutex_);
  return running_ || queued_ != nullptr;
}

void LatestWorker::waitIdle() {
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [this] { return !running_ && queued_ == nullptr; });
}

std::uint64_t LatestWorker::completed() const {
  std::lock_guard lock(mutex_);
  return completed_;
}

void LatestWorker::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stop_ || queued_ != nullptr; });
    if (stop_) return;
    if (Clock::now() < notBefore_) {  // debounce: a newer submit may still replace it
      wake_.wait_until(lock, notBefore_);
      continue;
    }
    Job job = std::exchange(queued_, nullptr);
    cancel_ = false;
    running_ = true;
    lock.unlock();
    job(cancel_);
    job = nullptr;  // release what the job captured before reporting idle
    lock.lock();
    running_ = false;
    ++completed_;
    if (queued_ == nullptr) idle_.notify_all();
  }
}

}  // namespace attn::app
