// The non-GEMM kernels of attention (row maximum, finiteness, mask, softmax's exp and sum,
// tanh scores, row sums), built once per instruction set and chosen at start-up.
//
// Why per ISA: the matrix products go to OpenBLAS, which picks its AVX2 / AVX-512 kernels at
// run time, but everything else is our own code, and a portable (baseline x86-64) build
// runs it with 4-wide SSE2. core/isa/kernels_impl.inc is compiled three times, by
// kernels_baseline.cpp, kernels_avx2.cpp (-mavx2 -mfma) and kernels_avx512.cpp (-mavx512f
// ...), each inside its own namespace, and kernels::active() returns the table of the best
// one this CPU runs (or the one ATTNSCOPE_ISA asks for).
//
// The ODR rule this relies on: those three translation units include NOTHING with inline
// functions (no Eigen, no <algorithm>, no <cmath>): an inline function compiled with
// -mavx512f in one unit and without it in another is one symbol to the linker, which keeps
// one copy, possibly the AVX-512 one, for every caller. So the kernels are plain pointer
// loops over GCC vector types, every helper has internal linkage, and this header declares
// only plain data and functions.
#pragma once

#include <cstddef>
#include <cstdint>

namespace attn::kernels {

enum class Isa : int { Baseline = 0, Avx2 = 1, Avx512 = 2 };

// Every kernel works on plain float arrays. `n` counts floats. Results are the same on every
// path up to rounding (the vector width changes the order of some sums; FMA is contracted
// on the AVX paths): within 1e-6 relative in practice, tested at 1e-5.
struct Table {
  Isa isa;
  const char* name;  // "baseline", "avx2", "avx512"

  // The largest of x[0..n), -inf when n == 0. x holds no NaN (-inf entries are fine).
  float (*rowMax)(const float* x, std::ptrdiff_t n);

  // True when every x[0..n) is finite (no NaN, no ±inf).
  bool (*allFinite)(const float* x, std::ptrdiff_t n);

  // Step 3 for one row: out[j] = allowed[j] ? clamp(scores[j] / temperature) : -inf, with
  // clamp to ±FLT_MAX (so that T -> 0 approaches hard attention instead of overflowing).
  // allowed may be null (every key allowed); temperature > 0. T == 1 is an exact copy.
  // out may be scores (in place).
  void (*maskRow)(const float* scores, const bool* allowed, float temperature, std::ptrdiff_t n,
                  float* out);

  // Softmax's numerator and denominator on a masked row s (n) with finite maximum m:
  // w[j] = exp(s[j] - m) where s[j] - m > floor, else exactly 0 (masked keys are -inf);
  // returns Σ w[j], accumulated in double. floor = -87 keeps exp away from denormals.
  double (*expShiftedRow)(const float* s, float m, std::ptrdiff_t n, float* w);

  // x[j] /= divisor.
  void (*divideRow)(float* x, std::ptrdiff_t n, float divisor);
  // x[j] *= y[j].
  void (*multiplyRow)(float* x, const float* y, std::ptrdiff_t n);
  // acc[j] += x[j].
  void (*addRow)(float* acc, const float* x, std::ptrdiff_t n);

  // The additive / mlp score loop: scores[i·ldScores + j] = Σ_a v[a]·tanh(a_i[a] + bT[a][j]) + c
  // for i < nQ, j < nK. a (nQ x dA, row-major), bT (dA x nK, row-major: B transposed, so
  // that the loop runs along the keys), v (dA). The sum over a runs in index order.
  void (*tanhScores)(const float* a, const float* bT, const float* v, float c, std::ptrdiff_t nQ,
                     std::ptrdiff_t nK, std::ptrdiff_t dA, float* scores, std::ptrdiff_t ldScores);

  // tanh(x[j]) in place (the decoder output step; also what tanhScores uses).
  void (*tanhRow)(float* x, std::ptrdiff_t n);
  // The model engine's activations in place: GELU's tanh form
  // 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))) (GPT-2's gelu_new), and SiLU x / (1 + e^-x)
  // (e^-x clamped to the range of exp: x < -87 gives x·e^x's size, x > 88 gives x).
  void (*geluTanhRow)(float* x, std::ptrdiff_t n);
  void (*siluRow)(float* x, std::ptrdiff_t n);

  // The model engine's matrix products on BF16 weights used as stored (core/models): output
  // columns [outBegin, outEnd) of y (m rows, row stride ldy; y points at column 0) are set
  // (accumulate == false) or added to (true) from x (m x in, row stride ldx, float32) times
  // the weight. Each BF16 weight is widened exactly to float32 and the sums are float32
  // FMAs, so the result equals the float32 product of the same weights up to the order of
  // the additions. `w` needs 2-byte alignment only.
  //   linearBf16OutByIn  w is [out, in] row-major (nn.Linear):  y[r][j] = Σ_k x[r][k]·w[j·in + k]
  //   linearBf16InByOut  w is [in, out] row-major (Conv1D):     y[r][j] = Σ_k x[r][k]·w[k·out + j]
  void (*linearBf16OutByIn)(const float* x, std::ptrdiff_t ldx, std::ptrdiff_t m,
                            std::ptrdiff_t in, const std::uint16_t* w, std::ptrdiff_t out,
                            std::ptrdiff_t outBegin, std::ptrdiff_t outEnd, float* y,
                            std::ptrdiff_t ldy, bool accumulate);
  void (*linearBf16InByOut)(const float* x, std::ptrdiff_t ldx, std::ptrdiff_t m,
                            std::ptrdiff_t in, const std::uint16_t* w, std::ptrdiff_t out,
                            std::ptrdiff_t outBegin, std::ptrdiff_t outEnd, float* y,
                            std::ptrdiff_t ldy, bool accumulate);
  // w[0..count) widened exactly to float32 at out (embedding rows, conversions).
  void (*widenBf16)(const std::uint16_t* w, std::ptrdiff_t count, float* out);

  // `count` values of ggml type `type` (core/models/quant.h: F32, F16, BF16, Q4_0, Q4_1,
  // Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K) from the blocks at `blocks` (any
  // alignment; count / block size blocks, count a multiple of the block size) to float32 at
  // out, by ggml-quants.c's dequantize_row_* formulas: the scales are f16 widened exactly,
  // the products float32 (an FMA may fuse d·q − m on the AVX paths: one rounding less).
  // Returns false, writing nothing, for any other type.
  bool (*dequantize)(std::uint32_t type, const void* blocks, std::ptrdiff_t count, float* out);

  // The model engine's matrix product on ggml blocks for a few rows (decode): output
  // columns [outBegin, outEnd) of y (m <= 4 rows, row stride ldy) are set (accumulate ==
  // false) or added to from x (m x in, row stride ldx) times the [out, in] weight whose row
  // j is the `rowBytes` bytes at w + j·rowBytes (any type `dequantize` reads). Each block is
  // dequantized exactly into a buffer in L1 and multiplied there (float32 FMAs), so no
  // float copy of the weights is ever made. Returns false, writing nothing, for another
  // type or m > 4.
  bool (*linearQuantRows)(std::uint32_t type, const void* w, std::ptrdiff_t rowBytes,
                          const float* x, std::ptrdiff_t ldx, std::ptrdiff_t m, std::ptrdiff_t in,
                          std::ptrdiff_t outBegin, std::ptrdiff_t outEnd, float* y,
                          std::ptrdiff_t ldy, bool accumulate);
};

// The three builds (defined in core/isa/kernels_<isa>.cpp). Only call a table whose ISA
// isSupported() says this CPU runs.
namespace baseline {
extern const Table kTable;
}
namespace avx2 {
extern const Table kTable;
}
namespace avx512 {
extern const Table kTable;
}

}  // namespace attn::kernels
