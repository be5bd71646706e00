// The kernel dispatcher (see core/isa/isa.h).
#include "core/isa/isa.h"

#include <atomic>
#include <cstdlib>
#include <mutex>

// OpenBLAS's introspection (declared in its cblas.h; declared here to keep that header, and
// its macros, out of the core).
extern "C" char* openblas_get_corename(void);
extern "C" char* openblas_get_config(void);

namespace attn::kernels {

std::string_view isaName(Isa isa) {
  switch (isa) {
    case Isa::Baseline:
      return "baseline";
    case Isa::Avx2:
      return "avx2";
    case Isa::Avx512:
      return "avx512";
  }
  return "baseline";
}

std::optional<Isa> parseIsa(std::string_view name) {
  for (Isa isa : {Isa::Baseline, Isa::Avx2, Isa::Avx512})
    if (name == isaName(isa)) return isa;
  return std::nullopt;
}

bool isSupported(Isa isa) {
  // libgcc's __builtin_cpu_supports reads CPUID and checks with XGETBV that the OS saves the
  // YMM / ZMM registers, so a feature the kernel has disabled counts as missing.
  __builtin_cpu_init();
  switch (isa) {
    case Isa::Baseline:
      return true;
    case Isa::Avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case Isa::Avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
             isSupported(Isa::Avx2);
  }
  return false;
}

Isa bestSupportedIsa() {
  if (isSupported(Isa::Avx512)) return Isa::Avx512;
  if (isSupported(Isa::Avx2)) return Isa::Avx2;
  return Isa::Baseline;
}

const Table& tableFor(Isa isa) {
  switch (isa) {
    case Isa::Baseline:
      return baseline::kTable;
    case Isa::Avx2:
      return avx2::kTable;
    case Isa::Avx512:
      return avx512::kTable;
  }
  return baseline::kTable;
}

IsaChoice chooseIsa(const char* requested, Isa best) {
  if (!requested || !*requested) return {best, ""};
  const std::string asked = "ATTNSCOPE_ISA=" + std::string(requested);
  const std::optional<Isa> isa = parseIsa(requested);
  if (!isa)
    return {best, asked + " is not baseline, avx2 or avx512; using " +
                      std::string(isaName(best))};
  if (static_cast<int>(*isa) > static_cast<int>(best))
    return {best, asked + " asked for, but this CPU cannot run it; using " +
                      std::string(isaName(best))};
  return {*isa, ""};
}

namespace {

struct ActiveState {
  std::atomic<const Table*> table{nullptr};
  std::once_flag chosen;
  std::string description;  // written once, under `chosen`
};

ActiveState& state() {
  static ActiveState s;
  return s;
}

void chooseOnce() {
  ActiveState& s = state();
  std::call_once(s.chosen, [&s] {
    const char* requested = std::getenv("ATTNSCOPE_ISA");
    const IsaChoice choice = chooseIsa(requested, bestSupportedIsa());
    s.description = std::string(isaName(choice.isa));
    if (!choice.note.empty())
      s.description += " (" + choice.note + ")";
    else if (requested && *requested)
      s.description += " (ATTNSCOPE_ISA=" + std::string(requested) + ")";
    else
      s.description += " (auto)";
    const Table* expected = nullptr;
    s.table.compare_exchange_strong(expected, &tableFor(choice.isa));
  });
}

}  // namespace

const Table& active() {
  const Table* table = state().table.load(std::memory_order_acquire);
  if (table) return *table;
  chooseOnce();
  return *state().table.load(std::memory_order_acquire);
}

Isa activeIsa() {
  return active().isa;
}

std::string activeIsaDescription() {
  chooseOnce();
  const Isa now = activeIsa();
  const std::string& first = state().description;
  // After setActiveIsa() the first description may name another path.
  if (first.rfind(std::string(isaName(now)) + " ", 0) == 0) return first;
  return std::string(isaName(now)) + " (set by the program)";
}

bool setActiveIsa(Isa isa) {
  if (!isSupported(isa)) return false;
  chooseOnce();
  state().table.store(&tableFor(isa), std::memory_order_release);
  return true;
}

std::string openblasCoreName() {
  const char* name = openblas_get_corename();
  return name ? name : "";
}

}  // namespace attn::kernels
