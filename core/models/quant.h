// ggml's tensor types (the `type` of a GGUF tensor) as the model engine knows them: the
// block size and bytes of every type a GGUF file may carry (so a reader can check byte
// ranges), and which of them the engine multiplies by in place. Layouts: ggml's
// ggml-common.h; formulas: ggml-quants.c dequantize_row_* (core/isa/kernels_impl.inc
// implements them per instruction set). No files, no UI.
#pragma once

#include <cstdint>
#include <string>

namespace attn::model {

// ggml's type numbers (ggml.h enum ggml_type). Only those the engine dequantizes are named.
enum class GgmlType : std::uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  BF16 = 30,
};

struct GgmlTypeInfo {
  const char* name = "";    // ggml's name: "Q4_K", "IQ2_XXS", ...
  int blockSize = 0;        // values per block (1 for the float and integer types)
  int blockBytes = 0;       // bytes per block
  bool dequantizes = false; // the engine reads it (F32, F16, BF16, Q4_0 ... Q6_K)
};

// The type `type` of a GGUF file, or null when ggml has no such type (or attnscope does not
// know its block layout: types added after ggml's MXFP4, 39).
const GgmlTypeInfo* ggmlTypeInfo(std::uint32_t type);
// "Q4_K", or "type 17" for a number with no entry.
std::string ggmlTypeName(std::uint32_t type);
// Bytes of `count` values of a known type (count a multiple of its block size).
std::uint64_t ggmlBytes(const GgmlTypeInfo& info, std::uint64_t count);

}  // namespace attn::model
