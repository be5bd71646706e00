// Seeded randomness, one generator for the whole program: our own generator and float
// mappings, so that a seed gives the same numbers with every compiler and standard library
// (std::uniform_real_distribution does not promise that). Used for the seeded weights and
// embeddings of core/attention/, the "teaching" numbers that core/scenario/scenario_edits.cpp
// puts in new rows, the models' random weights (core/models/layers.cpp, tools/gen_checkpoint.cpp), the settings
// panel's "new seed" and the tests' tiny GPT-2 fixture.
// Tests pin values drawn from it: changing anything here changes saved results.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/base/types.h"

namespace attn {

// The splitmix64 output function (Steele, Lea & Flood 2014): a bijective 64-bit mixer.
constexpr std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The golden-ratio increment of splitmix64 (also a handy odd multiplier for seeds).
inline constexpr std::uint64_t kGoldenGamma = 0x9E3779B97F4A7C15ull;

// FNV-1a, 64 bit: turns short names (and words) into tags.
constexpr std::uint64_t fnv1a(std::string_view text) {
  std::uint64_t hash = 0xCBF29CE484222325ull;
  for (char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001B3ull;
  }
  return hash;
}

// Derives an independent seed from (seed, what it is for, which head). Different tags or
// indices give unrelated streams; the same triple always gives the same stream.
constexpr std::uint64_t deriveSeed(std::uint64_t seed, std::string_view tag,
                                   std::uint64_t index = 0) {
  return mix64(seed ^ mix64(fnv1a(tag) + kGoldenGamma * (index + 1)));
}

// splitmix64 as a stream: good enough for initialisation, and trivially portable.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() { return mix64(state_ += kGoldenGamma); }
  // Uniform in [0, 1) with 24 random bits: exactly representable in float32.
  Scalar uniform01() { return static_cast<Scalar>(next() >> 40) * 0x1p-24f; }
  // Uniform in [-1, 1) (float32).
  Scalar uniformSymmetric() { return Scalar(2) * uniform01() - Scalar(1); }
  // Uniform in [0, 1) with 53 random bits (double).
  double uniform01Double() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

 private:
  std::uint64_t state_;
};

}  // namespace attn
