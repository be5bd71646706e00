// Threads for the core: how many cores there are, a parallel loop, and OpenBLAS's thread
// count. The rule everywhere: OpenBLAS threads x our own threads <= the threads asked for,
// so the core never runs more busy threads than cores (issue 11, docs/performance.md).
#pragma once

#include <atomic>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace attn {

// Cores this process may run on (its CPU affinity), at least 1.
int availableCores();

// OpenBLAS's thread count (openblas_get_num_threads / openblas_set_num_threads). It is one
// setting for the whole process.
int blasThreads();
void setBlasThreads(int threads);

// Keeps OpenBLAS single-threaded while at least one of these objects lives (on any thread),
// and puts the previous thread count back when the last one ends. attend() holds one for its
// whole call, so that concurrent attend() calls never see OpenBLAS's count change under them.
class SingleThreadedBlas {
 public:
  SingleThreadedBlas();
  ~SingleThreadedBlas();
  SingleThreadedBlas(const SingleThreadedBlas&) = delete;
  SingleThreadedBlas& operator=(const SingleThreadedBlas&) = delete;
};

// Runs body(i, worker) for every i in [0, count), on min(threads, count) threads (the caller
// is worker 0; the others are started here and joined before returning). Items are handed out
// in order, one at a time, so uneven items balance. worker < threads indexes per-thread
// scratch. An exception thrown by body is rethrown here after every thread has stopped.
template <class Body>
void parallelFor(int count, int threads, Body&& body) {
  if (count <= 0) return;
  if (threads > count) threads = count;
  if (threads <= 1) {
    for (int i = 0; i < count; ++i) body(i, 0);
    return;
  }
  std::atomic<int> next{0};
  std::exception_ptr failure;
  std::mutex failureMutex;
  auto work = [&](int worker) {
    try {
      for (int i = next.fetch_add(1); i < count; i = next.fetch_add(1)) body(i, worker);
    } catch (...) {
      next.store(count);  // the others stop at their next item
      std::lock_guard<std::mutex> lock(failureMutex);
      if (!failure) failure = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(threads - 1));
  for (int w = 1; w < threads; ++w) {
    try {
      pool.emplace_back(work, w);
    } catch (...) {
      break;  // no more threads to be had: the ones running share the items
    }
  }
  work(0);
  for (std::thread& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
}

// The same contract as parallelFor, on a pool of worker threads kept for the whole process
// (availableCores() - 1 of them, started at the first call): for loops too short to pay for
// starting threads (the model engine runs about ten per layer; a thread start costs tens of
// microseconds, a pooled hand-over a few). Idle workers spin for a fraction of a millisecond,
// then sleep. One loop runs on the pool at a time: a call made while another runs (from
// another thread, or nested inside a body) runs its items on the calling thread alone.
void parallelForPooled(int count, int threads, const std::function<void(int, int)>& body);

}  // namespace attn
