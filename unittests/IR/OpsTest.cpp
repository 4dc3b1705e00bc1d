//===- OpsTest.cpp - The op registry, include/dp/IR/Ops.def ---------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
//
// Each consumer reads the registry into a map by op type, keeping the first
// record of a type: a second record would be silently ignored.
//
//===----------------------------------------------------------------------===//

#include "llvm/ADT/StringSet.h"
#include "gtest/gtest.h"

using namespace llvm;

namespace {

TEST(OpsTest, EveryOpTypeHasOneRecord) {
  StringSet<> ONNX, DP;
#define OP(NAME, COST, BACKWARD, ONEDNN, FEATURE, OPSET, RUNTIME)              \
  EXPECT_TRUE(ONNX.insert(NAME).second) << NAME << " has two records";
#define DP_OP(NAME, COST, FEATURE)                                             \
  EXPECT_TRUE(DP.insert(NAME).second) << NAME << " has two records";
#include "dp/IR/Ops.def"
  EXPECT_GT(ONNX.size(), 100u);
  EXPECT_EQ(DP.size(), 3u);
  // The learned placers' features look op types up in any domain.
  for (const auto &Entry : DP) {
    EXPECT_FALSE(ONNX.contains(Entry.getKey())) << Entry.getKey().str();
  }
}

} // namespace
