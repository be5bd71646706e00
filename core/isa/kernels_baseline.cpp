// The baseline build of the kernels, compiled (no -m flags: SSE2, the x86-64 baseline).
// Nothing but kernels.h may be included here: see the ODR note in kernels.h.
#include "core/isa/kernels.h"

#define ATTN_VECTOR_BYTES 16
#define ATTN_ISA Isa::Baseline
#define ATTN_ISA_NAME "baseline"

namespace attn::kernels::baseline {
#include "core/isa/kernels_impl.inc"
}  // namespace attn::kernels::baseline
