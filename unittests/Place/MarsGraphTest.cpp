//===- MarsGraphTest.cpp - Mars's pieces on a bundled model ---------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/Cluster/Cluster.h"
#include "dp/IR/PassManager.h"
#include "dp/Learn/Placers.h"
#include "dp/Passes/PassBuilder.h"
#include "dp/Place/LearnTask.h"

#include "llvm/Support/MemoryBuffer.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <numeric>

using namespace dp;

namespace {

/// ResNet-50's training step on p100x4, with roofline costs.
struct ResNetTraining : ::testing::Test {
  void SetUp() override {
    auto Buf = llvm::MemoryBuffer::getFile(DP_MODELS_DIR "/resnet50.onnx");
    ASSERT_TRUE(bool(Buf));
    Model = std::move(*Buf);
    llvm::Expected<Cluster> C = getClusterPreset("p100x4");
    ASSERT_TRUE(bool(C));
    TheCluster = std::make_unique<Cluster>(std::move(*C));
    PassManager PM;
    ASSERT_FALSE(bool(parsePassPipeline(
        PM, "import-onnx,training-graph,cost-annotate")));
    PassContext Ctx;
    Ctx.Input = Model->getMemBufferRef();
    Ctx.TheCluster = TheCluster.get();
    ASSERT_FALSE(bool(PM.run(G, Ctx)));
    llvm::Expected<PlacementProblem> P =
        PlacementProblem::build(G, *TheCluster);
    ASSERT_TRUE(bool(P));
    Problem = std::make_unique<PlacementProblem>(std::move(*P));
  }

  std::unique_ptr<llvm::MemoryBuffer> Model;
  std::unique_ptr<Cluster> TheCluster;
  Graph G;
  std::unique_ptr<PlacementProblem> Problem;
};

TEST_F(ResNetTraining, TheTaskDescribesEveryUnit) {
  LearnTask T = buildLearnTask(*Problem);
  EXPECT_EQ(T.NumUnits, Problem->getNumUnits());
  EXPECT_EQ(T.NumDevices, 5u);
  ASSERT_EQ(T.Features.size(), size_t(T.NumUnits) * T.NumFeatures);
  // Features are scaled into [0, 1], and every unit's op-kind shares sum
  // to one.
  for (float F : T.Features) {
    EXPECT_GE(F, 0.0f);
    EXPECT_LE(F, 1.0f);
  }
  std::vector<uint32_t> Sorted = T.Order;
  std::sort(Sorted.begin(), Sorted.end());
  for (uint32_t I = 0; I != T.NumUnits; ++I)
    ASSERT_EQ(Sorted[I], I);
  std::vector<uint32_t> Placement(T.NumUnits, 0);
  Evaluation E = T.Evaluate(Placement);
  EXPECT_GT(E.StepSeconds, 0.0);
  EXPECT_FALSE(E.OutOfMemory);
}

TEST_F(ResNetTraining, DGILossFalls) {
  LearnTask T = buildLearnTask(*Problem);
  std::vector<double> Loss =
      pretrainGraphEncoder(T, /*Iterations=*/60, /*Hidden=*/256, /*Seed=*/1,
                           /*Threads=*/1);
  ASSERT_EQ(Loss.size(), 60u);
  // Binary cross-entropy starts near log 2, where the discriminator
  // guesses, and falls as the encoder learns to tell the graph from its
  // corruption.
  EXPECT_NEAR(Loss.front(), std::log(2.0), 0.1);
  double Last = std::accumulate(Loss.end() - 10, Loss.end(), 0.0) / 10;
  EXPECT_LT(Last, 0.5 * Loss.front());
}

} // namespace
