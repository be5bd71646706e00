// Which build of the non-GEMM kernels runs (core/isa/kernels.h), and how that is chosen.
//
// At the first use the dispatcher picks the widest instruction set this CPU (and OS) runs:
// avx512 (AVX-512 F, DQ, BW, VL), else avx2 (AVX2 + FMA), else baseline (SSE2). The
// environment variable ATTNSCOPE_ISA=baseline|avx2|avx512 forces a path; asking for one the
// CPU cannot run falls back to the best one it can, and the description says so. The matrix
// products do not go through here: OpenBLAS dispatches them itself (openblasCoreName()).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/isa/kernels.h"

namespace attn::kernels {

std::string_view isaName(Isa isa);
// "baseline", "avx2", "avx512" -> the Isa; nullopt otherwise.
std::optional<Isa> parseIsa(std::string_view name);

// True when this CPU and OS can run `isa` (baseline: always).
bool isSupported(Isa isa);
// The widest supported Isa.
Isa bestSupportedIsa();

// The table of one build. Only call its kernels when isSupported(isa).
const Table& tableFor(Isa isa);

// The choice for an ATTNSCOPE_ISA value (`requested`, nullptr when the variable is unset) on
// a CPU whose widest supported Isa is `best` (every narrower one is supported too). Pure, so
// that tests can check every case. `note` says why when the choice differs from the request.
struct IsaChoice {
  Isa isa = Isa::Baseline;
  std::string note;  // "" or e.g. "ATTNSCOPE_ISA=avx512 asked for, but this CPU has no AVX-512"
};
IsaChoice chooseIsa(const char* requested, Isa best);

// The kernels in use. The first call chooses from ATTNSCOPE_ISA and the CPU; thread-safe.
const Table& active();
Isa activeIsa();
// One line for --version and bench: "avx512 (auto)", "baseline (ATTNSCOPE_ISA=baseline)", or
// the fallback note.
std::string activeIsaDescription();
// Switches the kernels in use (tests compare the paths). Returns false, and changes nothing,
// when the CPU cannot run `isa`. Not to be called while attend() runs on another thread.
bool setActiveIsa(Isa isa);

// OpenBLAS's own choice of kernel (openblas_get_corename(), e.g. "Cooperlake", "Haswell").
// OPENBLAS_CORETYPE in the environment overrides it.
std::string openblasCoreName();

}  // namespace attn::kernels
