// The avx512 build of the kernels, compiled with -mavx512f -mavx512dq -mavx512bw -mavx512vl
// -mavx2 -mfma (CMakeLists.txt).
// Nothing but kernels.h may be included here: see the ODR note in kernels.h.
#include "core/isa/kernels.h"

#define ATTN_VECTOR_BYTES 64
#define ATTN_ISA Isa::Avx512
#define ATTN_ISA_NAME "avx512"

namespace attn::kernels::avx512 {
#include "core/isa/kernels_impl.inc"
}  // namespace attn::kernels::avx512
