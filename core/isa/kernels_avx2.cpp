// The avx2 build of the kernels, compiled with -mavx2 -mfma (CMakeLists.txt).
// Nothing but kernels.h may be included here: see the ODR note in kernels.h.
#include "core/isa/kernels.h"

#define ATTN_VECTOR_BYTES 32
#define ATTN_ISA Isa::Avx2
#define ATTN_ISA_NAME "avx2"

namespace attn::kernels::avx2 {
#include "core/isa/kernels_impl.inc"
}  // namespace attn::kernels::avx2
