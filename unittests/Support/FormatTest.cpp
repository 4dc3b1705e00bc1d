//===- FormatTest.cpp - Number formatting ---------------------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/Support/Format.h"

#include "gtest/gtest.h"

#include <cmath>
#include <limits>

using namespace dp;

namespace {

std::string printDouble(double V) {
  std::string S;
  llvm::raw_string_ostream OS(S);
  writeDouble(OS, V);
  return OS.str();
}

TEST(FormatTest, DoublesPrintShortestAndNeverAsIntegers) {
  EXPECT_EQ(printDouble(1.0), "1.0");
  EXPECT_EQ(printDouble(-2.5), "-2.5");
  EXPECT_EQ(printDouble(1e-05), "1e-05");
  EXPECT_EQ(printDouble(1e300), "1e+300");
  EXPECT_EQ(printDouble(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(printDouble(-std::numeric_limits<double>::infinity()), "-inf");
  EXPECT_EQ(printDouble(std::nan("")), "nan");
}

TEST(FormatTest, DoublesRoundTrip) {
  for (double V : {0.1, 1.0 / 3.0, 6.02214076e23, -1e-300, 123456789.0,
                   std::numeric_limits<double>::denorm_min()}) {
    double Back = 0;
    ASSERT_TRUE(parseDouble(printDouble(V), Back)) << printDouble(V);
    EXPECT_EQ(Back, V);
  }
}

TEST(FormatTest, FloatsWidenThroughTheirShortestForm) {
  EXPECT_EQ(floatToShortestDouble(1e-5f), 1e-05);
  EXPECT_EQ(floatToShortestDouble(0.1f), 0.1);
  EXPECT_EQ(static_cast<float>(floatToShortestDouble(0.1f)), 0.1f);
  EXPECT_TRUE(std::isinf(
      floatToShortestDouble(std::numeric_limits<float>::infinity())));
}

TEST(FormatTest, ParseDoubleRejectsPartialInput) {
  double V;
  EXPECT_FALSE(parseDouble("", V));
  EXPECT_FALSE(parseDouble("1.5x", V));
  EXPECT_FALSE(parseDouble("abc", V));
  EXPECT_TRUE(parseDouble("-inf", V));
  EXPECT_TRUE(std::isinf(V) && V < 0);
}

TEST(FormatTest, Bytes) {
  EXPECT_EQ(formatBytes(0), "0 B");
  EXPECT_EQ(formatBytes(1023), "1023 B");
  EXPECT_EQ(formatBytes(1024), "1.0 KiB");
  EXPECT_EQ(formatBytes(12ull << 30), "12.0 GiB");
  EXPECT_EQ(formatBytes(1536ull << 20), "1.5 GiB");
}

TEST(FormatTest, WrapTextBreaksAfterSpacesAndCommas) {
  EXPECT_EQ(wrapText("one two three", 2, 8), "  one\n  two\n  three");
  EXPECT_EQ(wrapText("one two three", 2, 9), "  one two\n  three");
  EXPECT_EQ(wrapText("a=1,b=2,c=3", 0, 8), "a=1,b=2,\nc=3");
  EXPECT_EQ(wrapText("fits on one line", 4, 80), "    fits on one line");
  // A word longer than a line stays whole, on a line of its own.
  EXPECT_EQ(wrapText("x abcdefghij y", 0, 5), "x\nabcdefghij\ny");
  EXPECT_EQ(wrapText("", 2, 10), "");
}

} // namespace
