// core/base/random.h: the one seeded generator. Pinned against the published splitmix64
// reference outputs (Vigna's splitmix64.c, seed 1234567) and FNV-1a test vectors, so that
// a change to the generator (and with it every seeded weight) cannot go unnoticed.
#include <gtest/gtest.h>

#include "core/base/random.h"

namespace attn {
namespace test_core_random {
namespace {

TEST(SplitMix64, MatchesTheReferenceStream) {
  SplitMix64 rng(1234567);
  EXPECT_EQ(rng.next(), 6457827717110365317ull);
  EXPECT_EQ(rng.next(), 3203168211198807973ull);
  EXPECT_EQ(rng.next(), 9817491932198370423ull);
  EXPECT_EQ(rng.next(), 4593380528125082431ull);
  EXPECT_EQ(rng.next(), 16408922859458223821ull);
}

TEST(SplitMix64, FloatMappingsUseTheTopBits) {
  // The first reference output 6457827717110365317: top 24 bits / 2^24 and top 53 / 2^53.
  SplitMix64 a(1234567), b(1234567), c(1234567);
  EXPECT_EQ(a.uniform01(), 0.3500795364379883f);
  EXPECT_EQ(b.uniform01Double(), 0.3500795420214081);
  EXPECT_EQ(c.uniformSymmetric(), 2 * 0.3500795364379883f - 1);
  SplitMix64 d(0);
  for (int i = 0; i < 1000; ++i) {
    const float u = d.uniform01();
    const double w = d.uniform01Double();
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    ASSERT_GE(w, 0.0);
    ASSERT_LT(w, 1.0);
  }
}

TEST(Fnv1a, MatchesTheReferenceVectors) {
  EXPECT_EQ(fnv1a(""), 0xCBF29CE484222325ull);
  EXPECT_EQ(fnv1a("a"), 0xAF63DC4C8601EC8Cull);
  EXPECT_EQ(fnv1a("foobar"), 0x85944171F73967E8ull);
}

TEST(DeriveSeed, TagsAndIndicesGiveDifferentStreams) {
  EXPECT_EQ(deriveSeed(7, "projection.wq"), deriveSeed(7, "projection.wq", 0));
  EXPECT_NE(deriveSeed(7, "projection.wq"), deriveSeed(7, "projection.wk"));
  EXPECT_NE(deriveSeed(7, "score", 0), deriveSeed(7, "score", 1));
  EXPECT_NE(deriveSeed(7, "score"), deriveSeed(8, "score"));
  static_assert(deriveSeed(1, "x") == deriveSeed(1, "x"), "usable at compile time");
}

}  // namespace
}  // namespace test_core_random
}  // namespace attn
