// The cell-number rule (core/base/cell_number.h): a number drawn in a cell reads within 5 %
// of its value, a nonzero value never reads "0", and one precision serves a whole matrix.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "core/base/cell_number.h"

namespace attn {
namespace test_core_cell_number {
namespace {

double readBack(const std::string& text) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  EXPECT_EQ(end, text.c_str() + text.size()) << "not a number: " << text;
  return value;
}

TEST(CellNumber, WorkedExamples) {
  // The lies and what the rule draws instead (asked for 1 digit, the least).
  EXPECT_EQ(cellNumber(0.66, 1), "0.66");   // "0.7" is 6 % off, "1" is a lie
  EXPECT_EQ(cellNumber(0.34, 1), "0.34");   // "0.3" is 12 % off
  EXPECT_EQ(cellNumber(0.083, 1), "0.08");  // 3.6 % off: one digit is enough
  EXPECT_EQ(cellNumber(0.0765, 1), "0.08");  // 4.6 % off: within
  EXPECT_EQ(cellNumber(0.0755, 1), "0.075");  // "0.08" would be 6 % off
  EXPECT_EQ(cellNumber(0.15, 1), "0.15");
  EXPECT_EQ(cellNumber(0.5, 1), "0.5");
  EXPECT_EQ(cellNumber(0, 1), "0");
  EXPECT_EQ(cellNumber(1, 1), "1");
  EXPECT_EQ(cellNumber(927, 1), "927");     // integers stay whole
  EXPECT_EQ(cellNumber(-0.32, 3), "-0.32");
  EXPECT_EQ(cellNumber(0.387, 3), "0.387");
  EXPECT_EQ(cellNumber(3e-5, 1), "3e-5");
  EXPECT_EQ(cellNumber(-std::numeric_limits<double>::infinity(), 1), "\xE2\x88\x92\xE2\x88\x9E");
}

TEST(CellNumber, LeastDigits) {
  EXPECT_EQ(leastTrueDigits(0), 1);
  EXPECT_EQ(leastTrueDigits(1), 1);
  EXPECT_EQ(leastTrueDigits(0.5), 1);
  EXPECT_EQ(leastTrueDigits(0.08), 1);
  EXPECT_EQ(leastTrueDigits(0.66), 2);
  EXPECT_EQ(leastTrueDigits(0.15), 2);
  EXPECT_EQ(leastTrueDigits(-0.66), 2);
  EXPECT_EQ(leastTrueDigits(12.5), 1);  // one digit of 12.5 is the integer "12" (4 % off)
  EXPECT_EQ(leastTrueDigits(14.5), 1);  // never fewer than the integer digits: "14"
  EXPECT_TRUE(readsTrue(0.083, 1));
  EXPECT_FALSE(readsTrue(0.66, 1));
  EXPECT_TRUE(readsTrue(0.0004, 0));  // clamped to 1 digit: "4e-4" is exact
}

TEST(CellNumber, TwoDigitsAlwaysReadTrueAndNothingNonzeroReadsZero) {
  // Values over 18 decades, both signs, near the rounding edges: at the least digits the
  // text is within 5 % and never "0"; asking for more digits never makes it worse.
  std::mt19937 random(31);
  std::uniform_real_distribution<double> exponent(-9, 9), unit(0, 1);
  std::vector<double> values = {0.105, 0.1049999, 1.05, 1.049, 9.96, 99.6, 99999.4, 0.00105,
                                0.95, 0.949, 0.0012, 0.0096, 0.0456, 0.397, 0.119, 0.881};
  for (int i = 0; i < 20000; ++i) {
    const double v = std::pow(10.0, exponent(random)) * (unit(random) < 0.5 ? -1 : 1);
    values.push_back(static_cast<float>(v));  // the matrices hold floats
  }
  for (double v : values) {
    const int least = leastTrueDigits(v);
    ASSERT_GE(least, 1);
    ASSERT_LE(least, 2) << v;
    for (int d = least; d <= 3; ++d) {
      const std::string text = cellNumber(v, d);
      const double read = readBack(text);
      ASSERT_NE(read, 0) << v << " drawn as " << text;
      ASSERT_LE(std::fabs(read - v), kCellTolerance * std::fabs(v)) << v << " drawn as " << text;
    }
    // Asked for too few digits, cellNumber still tells the truth.
    ASSERT_LE(std::fabs(std::strtod(cellNumber(v, 1).c_str(), nullptr) - v),
              kCellTolerance * std::fabs(v))
        << v;
  }
}

TEST(CellNumber, OnePrecisionForTheMatrix) {
  // matrixDigits: the most digits that fit, never fewer than the least; 0 when none fits.
  int asked = 0;
  auto fitsUpTo = [&](int most) {
    return [&asked, most](int d) {
      ++asked;
      return d <= most;
    };
  };
  EXPECT_EQ(matrixDigits(2, 3, fitsUpTo(3)), 3);
  EXPECT_EQ(matrixDigits(2, 3, fitsUpTo(2)), 2);
  EXPECT_EQ(matrixDigits(2, 3, fitsUpTo(1)), 0);  // 1 digit would fit, but would lie
  EXPECT_EQ(matrixDigits(1, 3, fitsUpTo(1)), 1);
  EXPECT_EQ(matrixDigits(2, 1, fitsUpTo(9)), 2);  // asked for 1, the values need 2
  asked = 0;
  EXPECT_EQ(matrixDigits(1, 3, fitsUpTo(0)), 0);
  EXPECT_EQ(asked, 3);
  // One precision: every value of {-0.32, 0.387} at the matrix's digits.
  EXPECT_EQ(cellNumber(-0.3201, 3), "-0.32");  // trailing zero of -0.320 dropped
  EXPECT_EQ(cellNumber(0.387, 2), "0.39");
  EXPECT_EQ(cellNumber(-0.3201, 2), "-0.32");
}

}  // namespace
}  // namespace test_core_cell_number
}  // namespace attn
