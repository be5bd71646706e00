// Threads for the core (see core/base/parallel.h).
#include "core/base/parallel.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>

// OpenBLAS's thread control (declared in its cblas.h; declared here to keep that header, and
// its macros, out of the core).
extern "C" void openblas_set_num_threads(int num_threads);
extern "C" int openblas_get_num_threads(void);

namespace attn {

int availableCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(CPU_COUNT(&set), 1);
  return std::max(static_cast<int>(std::thread::hardware_concurrency()), 1);
}

int blasThreads() {
  return openblas_get_num_threads();
}

void setBlasThreads(int threads) {
  openblas_set_num_threads(std::max(threads, 1));
}

namespace {
std::mutex blasMutex;
int blasHolders = 0;    // live SingleThreadedBlas objects
int blasPrevious = 1;   // the count before the first of them
}  // namespace

SingleThreadedBlas::SingleThreadedBlas() {
  std::lock_guard<std::mutex> lock(blasMutex);
  if (blasHolders++ == 0) {
    blasPrevious = blasThreads();
    if (blasPrevious != 1) setBlasThreads(1);
  }
}

SingleThreadedBlas::~SingleThreadedBlas() {
  std::lock_guard<std::mutex> lock(blasMutex);
  if (--blasHolders == 0 && blasPrevious != 1) setBlasThreads(blasPrevious);
}

// =======================================================================================
// The pool
// =======================================================================================

namespace {

// One job at a time: `generation` counts the jobs; a worker that sees a new one takes items
// from `next` until `count`, then decrements `pending`. The caller waits for pending == 0.
struct Pool {
  std::mutex run;  // held by the caller for the whole job
  std::mutex sleepMutex;
  std::condition_variable wake;
  std::atomic<std::uint64_t> generation{0};
  std::atomic<int> next{0};
  std::atomic<int> pending{0};
  const std::function<void(int, int)>* body = nullptr;
  int count = 0;
  int wanted = 0;  // workers 1..wanted take items; the others only check in
  std::exception_ptr failure;
  std::mutex failureMutex;
  int workers = 0;

  void take(int worker) {
    try {
      for (int i = next.fetch_add(1); i < count; i = next.fetch_add(1)) (*body)(i, worker);
    } catch (...) {
      next.store(count);
      std::lock_guard<std::mutex> lock(failureMutex);
      if (!failure) failure = std::current_exception();
    }
  }

  void loop(int worker) {
    std::uint64_t seen = 0;
    for (;;) {
      // Spin briefly (the engine's loops follow each other within microseconds), then sleep.
      const auto spinUntil = std::chrono::steady_clock::now() + std::chrono::microseconds(300);
      for (int spins = 0; generation.load(std::memory_order_acquire) == seen; ++spins) {
        __builtin_ia32_pause();
        if ((spins & 255) == 255 && std::chrono::steady_clock::now() > spinUntil) {
          std::unique_lock<std::mutex> lock(sleepMutex);
          wake.wait(lock, [&] { return generation.load(std::memory_order_acquire) != seen; });
          break;
        }
      }
      seen = generation.load(std::memory_order_acquire);
      if (worker <= wanted) take(worker);
      pending.fetch_sub(1, std::memory_order_acq_rel);
    }
  }
};

Pool& pool() {
  // Never destroyed: the workers run until the process ends.
  static Pool* shared = [] {
    auto* p = new Pool;
    p->workers = availableCores() - 1;
    for (int w = 1; w <= p->workers; ++w) {
      try {
        std::thread(&Pool::loop, p, w).detach();
      } catch (...) {
        p->workers = w - 1;
        break;
      }
    }
    return p;
  }();
  return *shared;
}

}  // namespace

void parallelForPooled(int count, int threads, const std::function<void(int, int)>& body) {
  if (count <= 0) return;
  threads = std::min(threads, count);
  auto serial = [&] {
    for (int i = 0; i < count; ++i) body(i, 0);
  };
  if (threads <= 1) return serial();
  Pool& p = pool();
  std::unique_lock<std::mutex> lock(p.run, std::try_to_lock);
  if (p.workers == 0 || !lock.owns_lock()) return serial();
  p.body = &body;
  p.count = count;
  p.wanted = std::min(threads - 1, p.workers);
  p.failure = nullptr;
  p.next.store(0, std::memory_order_relaxed);
  p.pending.store(p.workers, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> sleep(p.sleepMutex);  // no worker misses the wake-up
    p.generation.fetch_add(1, std::memory_order_acq_rel);
  }
  p.wake.notify_all();
  p.take(0);
  // The workers finish their last items; yield now and then, in case one of them waits for
  // this core.
  for (int spins = 1; p.pending.load(std::memory_order_acquire) != 0; ++spins) {
    __builtin_ia32_pause();
    if ((spins & 1023) == 0) std::this_thread::yield();
  }
  if (p.failure) std::rethrow_exception(p.failure);
}

}  // namespace attn
