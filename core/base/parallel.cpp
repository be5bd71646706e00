// Threads for the core (see core/parallel.h).
#include "core/base/parallel.h"

#include <sched.h>

#include <algorithm>

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

}  // namespace attn
