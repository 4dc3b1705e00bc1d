//===- OpFeaturesTest.cpp - The learned placers' op-kind features ---------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
//
// The op-kind feature ids are input of the saved policies (models/): a
// change to the op registry (include/dp/IR/Ops.def) must leave them as
// they are.
//
//===----------------------------------------------------------------------===//

#include "dp/Place/LearnTask.h"

#include "gtest/gtest.h"

using namespace dp;

namespace {

TEST(OpFeaturesTest, IdsArePinned) {
  EXPECT_EQ(getOpFeatureId("Conv"), 0u);
  EXPECT_EQ(getOpFeatureId("ConvTranspose"), 0u);
  EXPECT_EQ(getOpFeatureId("MatMul"), 1u);
  EXPECT_EQ(getOpFeatureId("Einsum"), 1u);
  EXPECT_EQ(getOpFeatureId("Gemm"), 2u);
  EXPECT_EQ(getOpFeatureId("LayerNormalization"), 4u);
  EXPECT_EQ(getOpFeatureId("SkipLayerNormalization"), 4u);
  EXPECT_EQ(getOpFeatureId("Relu"), 5u);
  EXPECT_EQ(getOpFeatureId("Softmax"), 9u);
  EXPECT_EQ(getOpFeatureId("Gather"), 21u);
  EXPECT_EQ(getOpFeatureId("ScatterND"), 21u);
  EXPECT_EQ(getOpFeatureId("ReduceMean"), 24u);
  EXPECT_EQ(getOpFeatureId("Constant"), 28u);
  EXPECT_EQ(getOpFeatureId("LSTM"), 32u);
  EXPECT_EQ(getOpFeatureId("SoftmaxCrossEntropyLoss"), 34u);
  EXPECT_EQ(getOpFeatureId("MomentumUpdate"), 35u);
  EXPECT_EQ(getOpFeatureId("AdamUpdate"), 35u);
  EXPECT_EQ(getOpFeatureId("Scan"), 36u);
  // "other": ops without a kind, SGDUpdate among them.
  EXPECT_EQ(getOpFeatureId("SGDUpdate"), 37u);
  EXPECT_EQ(getOpFeatureId("ReduceL1"), 37u);
  EXPECT_EQ(getOpFeatureId("Frobnicate"), 37u);
}

TEST(OpFeaturesTest, BackwardOpsCountAsTheirForwardOp) {
  EXPECT_EQ(getOpFeatureId("ConvGrad"), getOpFeatureId("Conv"));
  EXPECT_EQ(getOpFeatureId("LayerNormalizationGrad"), 4u);
  EXPECT_EQ(getOpFeatureId("FrobnicateGrad"), 37u);
}

} // namespace
