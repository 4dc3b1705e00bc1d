//===- PipelineTest.cpp - Pipelined steps against their closed forms ------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/IR/Annotations.h"
#include "dp/IR/PipelinePlan.h"
#include "dp/Sim/Simulator.h"

#include "TestGraphs.h"

#include "gtest/gtest.h"

using namespace dp;
using namespace dp::test;

namespace {

/// Floats each stage's forward result (its activation) holds.
constexpr int64_t Activation = 1000;

/// A training step over a chain of \p Stages stages, stage s on gpu:s: a
/// forward op f_s (\p F s) reading f_{s-1}'s result and weight w_s; a loss
/// on the last stage (no time); a backward op b_s (\p B s) reading the
/// gradient from b_{s+1} (or the loss) and f_s's result, making the
/// gradient for b_{s-1} and w_s's; an update u_s (no time). Everything but
/// the activations holds one float.
struct Chain : PlacedGraph {
  std::vector<OpId> Forward, Backward;

  Chain() = default;
  Chain(unsigned Stages, double F, double Bw) {
    TensorId X = B.input("x", 1);
    std::vector<TensorId> Weights;
    for (unsigned S = 0; S != Stages; ++S) {
      Weights.push_back(B.weight("w" + std::to_string(S), 1));
      TensorId In = S ? B.result(Forward.back()) : X;
      Forward.push_back(add("f" + std::to_string(S), F, {In, Weights[S]},
                            {Activation}, "forward", S));
    }
    OpId Loss =
        add("loss", 0, {B.result(Forward.back())}, {1}, "loss", Stages - 1);
    B.G.addOutput(B.result(Loss));
    TensorId Grad = B.result(Loss);
    Backward.resize(Stages);
    for (unsigned S = Stages; S--;) {
      Backward[S] = add("b" + std::to_string(S), Bw,
                        {Grad, B.result(Forward[S])}, {1, 1}, "backward", S);
      Grad = B.result(Backward[S], 0);
      add("u" + std::to_string(S), 0, {Weights[S], B.result(Backward[S], 1)},
          {1}, "update", S);
    }
  }

  void plan(unsigned MicroBatches, llvm::StringRef Schedule) {
    ann::set(B.G, ann::MicroBatches, int64_t(MicroBatches));
    ann::set(B.G, ann::Schedule, Schedule);
  }
};

/// Devices joined by links so fast that transfers take no time.
Cluster makeChainCluster(unsigned Stages) {
  return makeStarCluster(Stages, uint64_t(1) << 30, 1e30, false, 1);
}

SimResult simulate(const Chain &Ch, const Cluster &C, SimGraph *Out = nullptr) {
  llvm::Expected<SimGraph> SG = SimGraph::build(Ch.B.G, C);
  EXPECT_TRUE(bool(SG)) << describe(collectErrors(SG.takeError()));
  Simulator Sim(*SG);
  SimResult R;
  Sim.run(Ch.Placement, R, /*RecordTimeline=*/true);
  if (Out)
    *Out = std::move(*SG);
  return R;
}

struct Case {
  unsigned Stages, MicroBatches;
  double F, B;
};

class PipelineFormulaTest
    : public ::testing::TestWithParam<std::tuple<const char *, Case>> {};

TEST_P(PipelineFormulaTest, StepIsMPlusPMinusOneTimesFPlusB) {
  auto [Schedule, K] = GetParam();
  Chain Ch(K.Stages, K.F, K.B);
  Ch.plan(K.MicroBatches, Schedule);
  Cluster C = makeChainCluster(K.Stages);
  SimResult R = simulate(Ch, C);
  EXPECT_NEAR(R.StepTime, (K.MicroBatches + K.Stages - 1) * (K.F + K.B), 1e-9);
  EXPECT_EQ(R.OutOfOrder, 0u);
  // Every device runs its stage's forward and backward once per
  // micro-batch, and its update once.
  for (unsigned S = 0; S != K.Stages; ++S) {
    EXPECT_NEAR(R.BusyTime[S], K.MicroBatches * (K.F + K.B), 1e-9);
    EXPECT_EQ(R.OpCount[S], K.MicroBatches * (S + 1 == K.Stages ? 3 : 2) + 1);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Schedules, PipelineFormulaTest,
    ::testing::Combine(::testing::Values("gpipe", "1f1b"),
                       ::testing::Values(Case{4, 8, 1, 2}, Case{4, 8, 1, 1},
                                         Case{2, 4, 3, 5}, Case{3, 1, 1, 2},
                                         Case{4, 2, 2, 3}, Case{1, 5, 1, 2})));

/// The bytes a device holds beyond what it holds all step (weights,
/// inputs, outputs): at most in-flight micro-batches' activations.
uint64_t peakActivations(const Chain &Ch, unsigned M, llvm::StringRef Sched,
                         unsigned Dev) {
  Chain Copy(Ch.Forward.size(), 1, 2);
  Copy.plan(M, Sched);
  Cluster C = makeChainCluster(Ch.Forward.size());
  return simulate(Copy, C).PeakBytes[Dev];
}

TEST(PipelineTest, OneFOneBHoldsAtMostStagesMicroBatchesWhereGPipeHoldsAll) {
  const unsigned P = 4, M = 8;
  Chain Ch(P, 1, 2);
  uint64_t Bytes = Activation * 4;
  for (unsigned S = 0; S != P; ++S) {
    uint64_t GPipe = peakActivations(Ch, M, "gpipe", S);
    uint64_t OneF = peakActivations(Ch, M, "1f1b", S);
    // GPipe finishes every forward before the first backward: all M
    // activations of the stage at once.
    EXPECT_GE(GPipe, M * Bytes) << "stage " << S;
    // 1F1B: the stage's warm-up forwards plus one, P - S micro-batches,
    // and while a forward runs, the input it received (not at stage 0,
    // whose input is one float); the one-float tensors add less than
    // half an activation.
    EXPECT_GE(OneF, (P - S) * Bytes) << "stage " << S;
    EXPECT_LT(OneF, (P - S + (S ? 1 : 0)) * Bytes + Bytes / 2) << "stage " << S;
    EXPECT_LT(OneF, GPipe) << "stage " << S;
  }
}

/// A training chain of \p Stages stages of \p Layers layers each, stage s
/// on gpu:s: layer l's forward op (\p F) reads the previous layer's result
/// and makes an activation; its backward op (\p B) reads the gradient and
/// the layer's activation. With \p Recompute, the plan recomputes.
struct LayeredChain {
  Chain Base;
  LayeredChain(unsigned Stages, unsigned Layers, double F, double Bw) {
    GraphBuilder &B = Base.B;
    TensorId In = B.input("x", 1);
    std::vector<OpId> Fwd;
    std::vector<unsigned> Dev;
    for (unsigned S = 0; S != Stages; ++S)
      for (unsigned L = 0; L != Layers; ++L) {
        std::string N = std::to_string(S) + "_" + std::to_string(L);
        TensorId W = B.weight("w" + N, 1);
        Fwd.push_back(
            Base.add("f" + N, F, {In, W}, {Activation}, "forward", S));
        Dev.push_back(S);
        In = B.result(Fwd.back());
      }
    OpId Loss = Base.add("loss", 0, {In}, {1}, "loss", Stages - 1);
    B.G.addOutput(B.result(Loss));
    TensorId Grad = B.result(Loss);
    for (size_t I = Fwd.size(); I--;) {
      OpId Bo = Base.add("b" + std::to_string(I), Bw, {Grad, B.result(Fwd[I])},
                         {1}, "backward", Dev[I]);
      Grad = B.result(Bo);
    }
  }
  void plan(unsigned M, llvm::StringRef Schedule, bool Recompute) {
    Base.plan(M, Schedule);
    if (Recompute)
      ann::set(Base.B.G, ann::Recompute, int64_t(1));
  }
};

class RecomputeFormulaTest
    : public ::testing::TestWithParam<std::tuple<const char *, Case>> {};

// Recomputing, a stage's backward task first runs its forward again: on a
// uniform chain the step is (M + p - 1)(F + (F + B)), as without
// recomputation with a backward of F + B.
TEST_P(RecomputeFormulaTest, StepIsMPlusPMinusOneTimesTwoFPlusB) {
  auto [Schedule, K] = GetParam();
  Chain Ch(K.Stages, K.F, K.B);
  Ch.plan(K.MicroBatches, Schedule);
  ann::set(Ch.B.G, ann::Recompute, int64_t(1));
  Cluster C = makeChainCluster(K.Stages);
  SimResult R = simulate(Ch, C);
  EXPECT_NEAR(R.StepTime, (K.MicroBatches + K.Stages - 1) * (2 * K.F + K.B),
              1e-9);
  EXPECT_EQ(R.OutOfOrder, 0u);
  for (unsigned S = 0; S != K.Stages; ++S)
    EXPECT_NEAR(R.BusyTime[S], K.MicroBatches * (2 * K.F + K.B), 1e-9);
}

INSTANTIATE_TEST_SUITE_P(
    Schedules, RecomputeFormulaTest,
    ::testing::Combine(::testing::Values("gpipe", "1f1b"),
                       ::testing::Values(Case{4, 8, 1, 2}, Case{2, 4, 3, 5},
                                         Case{3, 1, 1, 2}, Case{1, 5, 1, 2})));

TEST(PipelineTest, RecomputingKeepsStageInputsAndOneMicroBatch) {
  // Four layers a stage: without recomputation GPipe keeps every layer's
  // activation of every micro-batch (M x 4); recomputing, a stage keeps
  // the input it received per micro-batch (M x 1, none at stage 0, whose
  // input is one float) and, during a backward, one micro-batch's four
  // recomputed activations.
  const unsigned P = 3, L = 4, M = 8;
  const uint64_t A = Activation * 4;
  Cluster C = makeChainCluster(P);
  for (const char *Sched : {"gpipe", "1f1b"}) {
    LayeredChain Keep(P, L, 1, 2), Again(P, L, 1, 2);
    Keep.plan(M, Sched, false);
    Again.plan(M, Sched, true);
    SimResult RK = simulate(Keep.Base, C), RA = simulate(Again.Base, C);
    for (unsigned S = 0; S != P; ++S) {
      // In flight per stage: M under GPipe, P - S under 1F1B.
      uint64_t InFlight = std::string(Sched) == "gpipe" ? M : P - S;
      EXPECT_GE(RK.PeakBytes[S], InFlight * L * A) << Sched << " " << S;
      uint64_t Inputs = S ? InFlight * A : 0;
      EXPECT_GE(RA.PeakBytes[S], Inputs + L * A) << Sched << " " << S;
      // The one-float tensors (weights, gradients) add less than an
      // activation; a forward in flight adds its input and result.
      EXPECT_LT(RA.PeakBytes[S], Inputs + (L + 2) * A) << Sched << " " << S;
      // It saves memory where more than one micro-batch is in flight; with
      // one (1F1B's last stage) the stashed input comes on top of the
      // recomputed activations.
      if (InFlight > 1) {
        EXPECT_LT(RA.PeakBytes[S], RK.PeakBytes[S]) << Sched << " " << S;
      }
    }
  }
}

TEST(PipelineTest, InstancesAndAccumulatedGradients) {
  Chain Ch(2, 1, 2);
  Ch.plan(3, "gpipe");
  Cluster C = makeChainCluster(2);
  SimGraph SG;
  SimResult R = simulate(Ch, C, &SG);
  // Forward, loss and backward ops run per micro-batch, updates once.
  EXPECT_EQ(SG.getNumPlacedOps(), 7u);
  EXPECT_EQ(SG.getNumOps(), 3u * 5 + 2);
  // The last backward of a stage ends before its update starts, which
  // reads the gradient accumulated over the three micro-batches: the
  // backward of micro-batch k read k - 1's gradient.
  for (uint32_t I = 0; I != SG.getNumOps(); ++I) {
    uint32_t O = SG.getBaseOp(I);
    if (ann::getString(Ch.B.G.getOp(O), ann::Phase) != "backward" ||
        SG.getMicroBatch(I) == 0)
      continue;
    bool ReadsEarlier = false;
    for (uint32_t T : SG.getInputs(I))
      if (uint32_t P = SG.getProducer(T);
          P != ~0u && SG.getBaseOp(P) == O &&
          SG.getMicroBatch(P) + 1 == SG.getMicroBatch(I))
        ReadsEarlier = true;
    EXPECT_TRUE(ReadsEarlier) << Ch.B.G.getOp(O).Name.str();
  }
  EXPECT_EQ(R.InstanceOp.size(), SG.getNumOps());
}

TEST(PipelineTest, StagesThatWaitOnEachOtherStillFinish) {
  // a and c on gpu:0, b between them on gpu:1: under 1F1B, gpu:1's
  // first backward waits for gpu:0's, which comes after gpu:0's second
  // forward, which waits for gpu:1's second forward, which comes after
  // gpu:1's first backward.
  GraphBuilder B;
  std::vector<uint32_t> Placement;
  auto Add = [&](const char *Name, llvm::ArrayRef<TensorId> In,
                 llvm::StringRef Phase, unsigned Dev) {
    OpId O = B.op(Name, 1, In, 1);
    ann::set(B.G.getOp(O), ann::Phase, Phase);
    Placement.push_back(Dev);
    return O;
  };
  TensorId X = B.input("x");
  OpId A = Add("a", {X}, "forward", 0);
  OpId Bo = Add("b", {B.result(A)}, "forward", 1);
  OpId Co = Add("c", {B.result(Bo)}, "forward", 0);
  OpId Cg = Add("c_grad", {B.result(Co)}, "backward", 0);
  OpId Bg = Add("b_grad", {B.result(Cg)}, "backward", 1);
  Add("a_grad", {B.result(Bg)}, "backward", 0);
  ann::set(B.G, ann::MicroBatches, int64_t(3));
  ann::set(B.G, ann::Schedule, "1f1b");
  Cluster C = makeChainCluster(2);
  llvm::Expected<SimGraph> SG = SimGraph::build(B.G, C);
  ASSERT_TRUE(bool(SG));
  Simulator Sim(*SG);
  SimResult R;
  Sim.run(Placement, R);
  EXPECT_GT(R.OutOfOrder, 0u);
  // Everything ran: 18 instances of one second each on two devices.
  EXPECT_NEAR(R.BusyTime[0] + R.BusyTime[1], 18, 1e-9);
  EXPECT_EQ(R.OpCount[0] + R.OpCount[1], 18u);
}

TEST(PipelineTest, StageTaskOrders) {
  PipelinePlan P;
  P.MicroBatches = 4;
  P.Schedule = PipelineScheduleKind::OneFOneB;
  // Stage 0 of 3: two warm-up forwards, then F2 B0 F3 B1, then B2 B3.
  EXPECT_EQ(getStageTaskOrder(P, 0, 3),
            (std::vector<unsigned>{0, 1, 2, 4, 3, 5, 6, 7}));
  // The last stage alternates from the start.
  EXPECT_EQ(getStageTaskOrder(P, 2, 3),
            (std::vector<unsigned>{0, 4, 1, 5, 2, 6, 3, 7}));
  P.Schedule = PipelineScheduleKind::GPipe;
  EXPECT_EQ(getStageTaskOrder(P, 0, 3),
            (std::vector<unsigned>{0, 1, 2, 3, 4, 5, 6, 7}));
  // More stages than micro-batches: every forward is a warm-up one.
  P.Schedule = PipelineScheduleKind::OneFOneB;
  P.MicroBatches = 2;
  EXPECT_EQ(getStageTaskOrder(P, 0, 4), (std::vector<unsigned>{0, 1, 2, 3}));
}

TEST(PipelineTest, MoreThanSixtyFourDevices) {
  // A chain over 96 devices: the simulator's devices are not a bit mask.
  const unsigned P = 96;
  Chain Ch(P, 1, 2);
  Ch.plan(2, "1f1b");
  Cluster C = makeChainCluster(P);
  SimResult R = simulate(Ch, C);
  EXPECT_NEAR(R.StepTime, (2 + P - 1) * 3.0, 1e-9);
  EXPECT_EQ(R.NumTransfers, 2u * 2 * (P - 1));
}

} // namespace
