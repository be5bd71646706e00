// ggml's type table (see quant.h). Block sizes and bytes: ggml-common.h's block structs.
#include "core/models/quant.h"

#include <array>

namespace attn::model {
namespace {

constexpr int kQK = 256;  // QK_K, the K-quants' super-block

// Indexed by ggml's type number; {} where ggml has no type (4, 5, 31-33, 36-38).
constexpr std::array<GgmlTypeInfo, 40> kTypes = {{
    {"F32", 1, 4, true},         // 0
    {"F16", 1, 2, true},         // 1
    {"Q4_0", 32, 18, true},      // 2   f16 d, 16 B nibbles
    {"Q4_1", 32, 20, true},      // 3   f16 d, f16 m, 16 B nibbles
    {},                          // 4   Q4_2, removed
    {},                          // 5   Q4_3, removed
    {"Q5_0", 32, 22, true},      // 6   f16 d, 4 B high bits, 16 B nibbles
    {"Q5_1", 32, 24, true},      // 7   f16 d, f16 m, 4 B high bits, 16 B nibbles
    {"Q8_0", 32, 34, true},      // 8   f16 d, 32 x i8
    {"Q8_1", 32, 36, false},     // 9
    {"Q2_K", kQK, 84, true},     // 10  16 B scales, 64 B quants, f16 d, f16 dmin
    {"Q3_K", kQK, 110, true},    // 11  32 B hmask, 64 B quants, 12 B scales, f16 d
    {"Q4_K", kQK, 144, true},    // 12  f16 d, f16 dmin, 12 B scales, 128 B nibbles
    {"Q5_K", kQK, 176, true},    // 13  f16 d, f16 dmin, 12 B scales, 32 B high bits, 128 B
    {"Q6_K", kQK, 210, true},    // 14  128 B low 4 bits, 64 B high 2 bits, 16 x i8, f16 d
    {"Q8_K", kQK, 292, false},   // 15
    {"IQ2_XXS", kQK, 66, false}, // 16
    {"IQ2_XS", kQK, 74, false},  // 17
    {"IQ3_XXS", kQK, 98, false}, // 18
    {"IQ1_S", kQK, 50, false},   // 19
    {"IQ4_NL", 32, 18, false},   // 20
    {"IQ3_S", kQK, 110, false},  // 21
    {"IQ2_S", kQK, 82, false},   // 22
    {"IQ4_XS", kQK, 136, false}, // 23
    {"I8", 1, 1, false},         // 24
    {"I16", 1, 2, false},        // 25
    {"I32", 1, 4, false},        // 26
    {"I64", 1, 8, false},        // 27
    {"F64", 1, 8, false},        // 28
    {"IQ1_M", kQK, 56, false},   // 29
    {"BF16", 1, 2, true},        // 30
    {},                          // 31  Q4_0_4_4, removed from files
    {},                          // 32
    {},                          // 33
    {"TQ1_0", kQK, 54, false},   // 34
    {"TQ2_0", kQK, 66, false},   // 35
    {},                          // 36  IQ4_NL_4_4, removed
    {},                          // 37
    {},                          // 38
    {"MXFP4", 32, 17, false},    // 39
}};

}  // namespace

const GgmlTypeInfo* ggmlTypeInfo(std::uint32_t type) {
  if (type >= kTypes.size() || kTypes[type].blockSize == 0) return nullptr;
  return &kTypes[type];
}

std::string ggmlTypeName(std::uint32_t type) {
  const GgmlTypeInfo* info = ggmlTypeInfo(type);
  return info ? std::string(info->name) : "type " + std::to_string(type);
}

std::uint64_t ggmlBytes(const GgmlTypeInfo& info, std::uint64_t count) {
  return count / static_cast<std::uint64_t>(info.blockSize) *
         static_cast<std::uint64_t>(info.blockBytes);
}

}  // namespace attn::model
