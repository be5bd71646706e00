// Threads for the core (see core/base/parallel.h).
#include "core/base/parallel.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
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

// One job at a time. A job is published as a generation g (`generation`, which idle workers
// watch) and a ticket: g in the high 32 bits, the next item in the low 32. Anyone takes item
// i of job g by moving the ticket from (g, i) to (g, i + 1) with a compare-and-swap, so a
// worker that wakes up late, still holding an older g, can never take an item of a newer
// job; the job's body, count and wanted workers sit in slot g % 2 (a late worker reads only
// its own job's slot, which the next-but-one job overwrites only after the ticket has moved
// on). The caller returns once every item is finished (`finished` == count): it never waits
// for a worker that took no item. (The previous pool waited for every worker to check in,
// so one worker descheduled by another process held up every loop of a loaded machine, even
// when the caller had done all the items itself.)
struct Pool {
  struct Slot {
    const std::function<void(int, int)>* body = nullptr;
    std::atomic<int> count{0};
    std::atomic<int> wanted{0};  // workers 1..wanted take items; the others stay idle
  };
  std::mutex run;  // held by the caller for the whole job
  std::mutex sleepMutex;
  std::condition_variable wake;
  std::atomic<std::uint32_t> generation{0};
  std::atomic<std::uint64_t> ticket{0};
  std::atomic<int> finished{0};  // items of the current job finished (or dropped after a failure)
  Slot slots[2];
  std::exception_ptr failure;
  std::mutex failureMutex;
  int workers = 0;

  // Takes the next item of job `g` (false: none left, or `g` is no longer the job).
  bool claim(std::uint32_t g, int& item) {
    std::uint64_t t = ticket.load(std::memory_order_acquire);
    for (;;) {
      if (static_cast<std::uint32_t>(t >> 32) != g) return false;
      const auto next = static_cast<int>(t & 0xFFFFFFFFu);
      if (next >= slots[g & 1].count.load(std::memory_order_relaxed)) return false;
      if (ticket.compare_exchange_weak(t, t + 1, std::memory_order_acq_rel, std::memory_order_acquire)) {
        item = next;
        return true;
      }
    }
  }

  void take(std::uint32_t g, int worker) {
    int item = 0;
    while (claim(g, item)) {
      try {
        (*slots[g & 1].body)(item, worker);
      } catch (...) {
        {
          std::lock_guard<std::mutex> lock(failureMutex);
          if (!failure) failure = std::current_exception();
        }
        // the items nobody took yet are dropped: counted as finished
        const int count = slots[g & 1].count.load(std::memory_order_relaxed);
        std::uint64_t t = ticket.load(std::memory_order_acquire);
        while (static_cast<std::uint32_t>(t >> 32) == g && static_cast<int>(t & 0xFFFFFFFFu) < count) {
          const int dropped = count - static_cast<int>(t & 0xFFFFFFFFu);
          if (ticket.compare_exchange_weak(t, (std::uint64_t{g} << 32) | static_cast<std::uint32_t>(count),
                                           std::memory_order_acq_rel, std::memory_order_acquire)) {
            finished.fetch_add(dropped, std::memory_order_acq_rel);
            break;
          }
        }
      }
      finished.fetch_add(1, std::memory_order_release);
    }
  }

  void loop(int worker) {
    std::uint32_t seen = 0;
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
      if (worker <= slots[seen & 1].wanted.load(std::memory_order_relaxed)) take(seen, worker);
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
  // 1 publish: the slot of the new generation, then the ticket, then the generation
  const std::uint32_t g = p.generation.load(std::memory_order_relaxed) + 1;
  Pool::Slot& slot = p.slots[g & 1];
  slot.body = &body;
  slot.count.store(count, std::memory_order_relaxed);
  slot.wanted.store(std::min(threads - 1, p.workers), std::memory_order_relaxed);
  p.failure = nullptr;
  p.finished.store(0, std::memory_order_relaxed);
  p.ticket.store(std::uint64_t{g} << 32, std::memory_order_release);
  {
    std::lock_guard<std::mutex> sleep(p.sleepMutex);  // no worker misses the wake-up
    p.generation.store(g, std::memory_order_release);
  }
  p.wake.notify_all();
  // 2 the caller takes items too, then waits for the items the workers took
  p.take(g, 0);
  for (int spins = 1; p.finished.load(std::memory_order_acquire) < count; ++spins) {
    __builtin_ia32_pause();
    if ((spins & 1023) == 0) std::this_thread::yield();  // a worker may wait for this core
  }
  if (p.failure) std::rethrow_exception(p.failure);
}

}  // namespace attn
