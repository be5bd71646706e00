// The one number formatter (core/base/format.h): the precision rule, special values, and the
// fewer-digits fallback the heatmap labels rely on.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/base/format.h"

namespace attn {
namespace test_core_format {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(FormatNumber, IntegersAsIntegers) {
  EXPECT_EQ(formatNumber(927.0f, kCellDigits), "927");  // the screen showed "927.00"
  EXPECT_EQ(formatNumber(929.0f, 1), "929");
  EXPECT_EQ(formatNumber(1.0f, kCellDigits), "1");
  EXPECT_EQ(formatNumber(-3.0f, kCellDigits), "-3");
  EXPECT_EQ(formatNumber(0.0f, kCellDigits), "0");
  EXPECT_EQ(formatNumber(-0.0f, kCellDigits), "0");
  EXPECT_EQ(formatNumber(99999.0f, kCellDigits), "99999");
}

TEST(FormatNumber, SignificantDigitsOtherwise) {
  EXPECT_EQ(formatNumber(0.1192f, 3), "0.119");
  EXPECT_EQ(formatNumber(0.1192f, 2), "0.12");
  EXPECT_EQ(formatNumber(0.1192f, 1), "0.1");
  EXPECT_EQ(formatNumber(0.135335f, 4), "0.1353");
  EXPECT_EQ(formatNumber(12.345f, 3), "12.3");
  EXPECT_EQ(formatNumber(929.4f, 3), "929");
  EXPECT_EQ(formatNumber(0.5f, 3), "0.5");  // trailing zeros dropped
  EXPECT_EQ(formatNumber(-0.5f, 3), "-0.5");
  EXPECT_EQ(formatNumber(0.0821f, 3), "0.0821");
  EXPECT_EQ(formatNumber(9.996f, 3), "10");  // rounding up to the next decade
  EXPECT_EQ(formatNumber(0.001f, 3), "0.001");
  EXPECT_EQ(formatNumber(535.53f, 4), "535.5");
}

TEST(FormatNumber, ScientificForVeryLargeAndVerySmall) {
  EXPECT_EQ(formatNumber(1e6f, 3), "1e6");
  EXPECT_EQ(formatNumber(123456.0f, 3), "1.23e5");
  EXPECT_EQ(formatNumber(-1.5e6f, 4), "-1.5e6");
  EXPECT_EQ(formatNumber(0.000123456f, 3), "1.23e-4");
  EXPECT_EQ(formatNumber(3.2e-12f, 2), "3.2e-12");
  EXPECT_EQ(formatNumber(0.0004f, 3), "4e-4");
  EXPECT_EQ(formatNumber(-2.5e-4f, 3), "-2.5e-4");  // never "0.00" or "-0.00"
}

TEST(FormatNumber, SpecialValues) {
  EXPECT_EQ(formatNumber(-kInf, kCellDigits), "\u2212\u221E");  // masked, not "0.00"
  EXPECT_EQ(formatNumber(kInf, kCellDigits), "\u221E");
  EXPECT_EQ(formatNumber(std::nanf(""), kCellDigits), "NaN");
}

TEST(FormatNumber, DigitsAreClampedAndFewerDigitsNeverLonger) {
  EXPECT_EQ(formatNumber(0.1192f, 0), formatNumber(0.1192f, 1));
  EXPECT_EQ(formatNumber(1.0 / 3.0, 42), formatNumber(1.0 / 3.0, 9));
  for (double v : {0.1192, 12.345, 927.0, 123456.0, 3.2e-12, -0.7071, 99.95, 0.00123}) {
    for (int d = 9; d > 1; --d) {
      EXPECT_LE(formatNumber(v, d - 1).size(), formatNumber(v, d).size()) << v << " " << d;
    }
  }
}

TEST(CountOf, SingularOnlyForOne) {
  EXPECT_EQ(countOf(1, "query", "queries"), "1 query");
  EXPECT_EQ(countOf(2, "query", "queries"), "2 queries");
  EXPECT_EQ(countOf(0, "key", "keys"), "0 keys");
  EXPECT_EQ(countOf(-1, "head", "heads"), "-1 heads");
}

}  // namespace
}  // namespace test_core_format

}  // namespace attn
