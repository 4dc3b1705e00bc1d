//===- ReplicaTest.cpp - Data-parallel replicas against closed forms ------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
//
// A replicated step is replica 0's: its compute, then each gradient's
// bucket all-reduced among a device's copies, which the update waits for.
// On a star of identical links the all-reduce has closed forms (ring and
// binomial tree), written out here rather than taken from Collectives.cpp.
//
//===----------------------------------------------------------------------===//

#include "dp/IR/Annotations.h"
#include "dp/IR/PipelinePlan.h"
#include "dp/Sim/Simulator.h"

#include "TestGraphs.h"

#include "gtest/gtest.h"

#include <cmath>
#include <numeric>

using namespace dp;
using namespace dp::test;

namespace {

constexpr uint64_t KiB = 1024, MiB = KiB * KiB;

/// Bytes per second and seconds of every link of the star: a route
/// between two devices crosses two links, so it has latency 2 * Lat.
constexpr double Bw = 1e9, Lat = 1e-3;

/// \p N devices "gpu:I" of type "t", each with a link of Bw and Lat to one
/// switch, and memory enough for anything here.
Cluster makeStar(unsigned N = 8) {
  DeviceType T;
  T.Name = "t";
  T.PeakFlops[unsigned(DTypeKind::F32)] = 1e12;
  T.MemoryBandwidth = 1e11;
  T.MemoryBytes = uint64_t(1) << 40;
  std::vector<Device> Devs;
  std::vector<Link> Links;
  for (unsigned I = 0; I != N; ++I) {
    Devs.push_back({"gpu:" + std::to_string(I), 0});
    Links.push_back({"l" + std::to_string(I), I, N, Bw, Lat});
  }
  return llvm::cantFail(Cluster::create("star", {T}, Devs, {"sw"}, Links));
}

/// Ring all-reduce of \p S bytes among \p N devices of the star:
/// 2(n - 1) steps of S/n bytes over a two-link route.
double ringTime(unsigned N, uint64_t S) {
  return 2.0 * (N - 1) / N * double(S) / Bw + 2.0 * (N - 1) * (2 * Lat);
}

/// Binomial tree all-reduce: reduce then broadcast, ceil(log2 n) rounds
/// each, every round moving all S bytes over a two-link route.
double treeTime(unsigned N, uint64_t S) {
  return 2 * std::ceil(std::log2(double(N))) * (double(S) / Bw + 2 * Lat);
}

double allReduceTime(unsigned N, uint64_t S) {
  return std::min(ringTime(N, S), treeTime(N, S));
}

/// Equal to a relative 1e-9.
#define EXPECT_CLOSE(Actual, Expected)                                         \
  EXPECT_NEAR(Actual, Expected, 1e-9 * std::fabs(double(Expected)))

/// A training step of layers 0..L-1, layer l on device Dev[l]: forward
/// f_l (F[l]) reads f_{l-1}'s result (or input x) and weight w_l of
/// Floats[l] floats; a loss (no time) on the last layer's device; then,
/// from the last layer down, backward b_l (B[l]) reads the gradient from
/// b_{l+1} (or the loss) and f_l's result, making the gradient for
/// b_{l-1} (one float) and w_l's gradient (Floats[l] floats), and update
/// u_l (\p U) reads w_l and its gradient. Op ids follow that order, so
/// the backward makes the gradients from the last layer down.
struct Step : PlacedGraph {
  std::vector<OpId> Forward, Backward, Update;
  std::vector<TensorId> Weights;

  Step(llvm::ArrayRef<int64_t> Floats, llvm::ArrayRef<double> F,
       llvm::ArrayRef<double> Bwd, double U,
       llvm::ArrayRef<unsigned> Dev = {}) {
    unsigned L = Floats.size();
    auto DevOf = [&](unsigned I) { return Dev.empty() ? 0u : Dev[I]; };
    TensorId In = B.input("x", 1);
    for (unsigned I = 0; I != L; ++I) {
      Weights.push_back(B.weight("w" + std::to_string(I), Floats[I]));
      Forward.push_back(add("f" + std::to_string(I), F[I], {In, Weights[I]},
                            {1}, "forward", DevOf(I)));
      In = B.result(Forward.back());
    }
    OpId Loss = add("loss", 0, {In}, {1}, "loss", DevOf(L - 1));
    B.G.addOutput(B.result(Loss));
    TensorId Grad = B.result(Loss);
    Backward.resize(L);
    Update.resize(L);
    for (unsigned I = L; I--;) {
      Backward[I] =
          add("b" + std::to_string(I), Bwd[I], {Grad, B.result(Forward[I])},
              {1, Floats[I]}, "backward", DevOf(I));
      Grad = B.result(Backward[I], 0);
      Update[I] = add("u" + std::to_string(I), U, {Weights[I], getGradient(I)},
                      {1}, "update", DevOf(I));
    }
  }

  /// Layer \p I's weight gradient, a graph tensor.
  TensorId getGradient(unsigned I) { return B.result(Backward[I], 1); }

  void replicate(unsigned Replicas, uint64_t BucketBytes = 0) {
    ann::set(B.G, ann::Replicas, int64_t(Replicas));
    if (BucketBytes)
      ann::set(B.G, ann::BucketBytes, int64_t(BucketBytes));
  }
};

SimResult simulate(const Graph &G, llvm::ArrayRef<uint32_t> Placement,
                   const Cluster &C) {
  llvm::Expected<SimGraph> SG = SimGraph::build(G, C);
  EXPECT_TRUE(bool(SG)) << describe(collectErrors(SG.takeError()));
  if (!SG)
    return SimResult();
  Simulator Sim(*SG);
  SimResult R;
  Sim.run(Placement, R, /*RecordTimeline=*/true);
  return R;
}

SimResult simulate(const Step &St, const Cluster &C) {
  return simulate(St.B.G, St.Placement, C);
}

/// The interval of graph op \p O's instance (its only one, or its last
/// micro-batch's).
OpInterval getInterval(const SimResult &R, OpId O) {
  for (uint32_t I = R.Ops.size(); I--;)
    if (R.getOp(I) == O)
      return R.Ops[I];
  ADD_FAILURE() << "op " << O << " has no instance";
  return OpInterval();
}

/// The graph tensors of a recorded bucket.
std::vector<TensorId> getTensors(const SimResult &R,
                                 const CollectiveRecord &Rec) {
  std::vector<TensorId> Tensors;
  for (uint32_t T : Rec.Tensors)
    Tensors.push_back(R.getTensor(T));
  return Tensors;
}

TEST(ReplicaTest, ClosedFormsPickBothAlgorithms) {
  // The figures below are only worth checking if they differ: the tree
  // wins a 1 MiB bucket among 4 or 8, the ring among 2 and at 64 MiB.
  EXPECT_LT(treeTime(8, MiB), ringTime(8, MiB));
  EXPECT_LT(treeTime(4, MiB), ringTime(4, MiB));
  EXPECT_LT(ringTime(2, MiB), treeTime(2, MiB));
  EXPECT_LT(ringTime(8, 64 * MiB), treeTime(8, 64 * MiB));
  // And they are what Collectives.cpp computes over the star.
  Cluster C = makeStar();
  for (unsigned N : {2u, 4u, 8u})
    for (uint64_t S : {MiB, 64 * MiB}) {
      std::vector<unsigned> Devs(N);
      std::iota(Devs.begin(), Devs.end(), 0);
      std::vector<CollectiveCost> Costs = getAllReduceCosts(C, Devs);
      ASSERT_FALSE(Costs.empty());
      EXPECT_CLOSE(pickAllReduce(Costs, S).getTime(S), allReduceTime(N, S))
          << "n = " << N << ", S = " << S;
    }
}

class ReplicaOneLayerTest
    : public ::testing::TestWithParam<std::tuple<unsigned, uint64_t>> {};

// One layer on gpu:0: forward, backward, then the weight gradient's one
// bucket all-reduced among the R copies of gpu:0, then the update.
TEST_P(ReplicaOneLayerTest, StepIsComputePlusOneAllReduce) {
  auto [Replicas, Bytes] = GetParam();
  const double F = 0.010, Bk = 0.020, U = 0.003;
  Step St({int64_t(Bytes / 4)}, {F}, {Bk}, U);
  St.replicate(Replicas);
  Cluster C = makeStar();
  SimResult R = simulate(St, C);
  double AR = allReduceTime(Replicas, Bytes);
  EXPECT_CLOSE(R.StepTime, F + Bk + AR + U);
  EXPECT_EQ(R.NumBuckets, 1u);
  EXPECT_EQ(R.AllReduceBytes, Bytes);
  ASSERT_EQ(R.AllReduceTime.size(), C.getNumDevices());
  EXPECT_CLOSE(R.AllReduceTime[0], AR);
  for (unsigned D = 1; D != C.getNumDevices(); ++D)
    EXPECT_EQ(R.AllReduceTime[D], 0) << "device " << D;
  ASSERT_EQ(R.Collectives.size(), 1u);
  const CollectiveRecord &Rec = R.Collectives[0];
  EXPECT_EQ(Rec.Device, 0u);
  EXPECT_EQ(Rec.Bytes, Bytes);
  EXPECT_EQ(getTensors(R, Rec), std::vector<TensorId>{St.getGradient(0)});
  EXPECT_EQ(Rec.Algorithm, ringTime(Replicas, Bytes) < treeTime(Replicas, Bytes)
                               ? CollectiveAlgorithm::Ring
                               : CollectiveAlgorithm::Tree);
  EXPECT_CLOSE(Rec.Start, F + Bk);
  EXPECT_CLOSE(Rec.End, F + Bk + AR);
  // The update waited for the bucket.
  EXPECT_CLOSE(getInterval(R, St.Update[0]).Start, F + Bk + AR);
}

INSTANTIATE_TEST_SUITE_P(Replicas, ReplicaOneLayerTest,
                         ::testing::Combine(::testing::Values(2u, 4u, 8u),
                                            ::testing::Values(MiB, 64 * MiB)));

TEST(ReplicaTest, OneReplicaReducesNothing) {
  const double F = 0.010, Bk = 0.020, U = 0.003;
  Cluster C = makeStar();
  for (bool Annotate : {false, true}) {
    SCOPED_TRACE(Annotate ? "replicas=1" : "no annotation");
    Step St({int64_t(MiB / 4)}, {F}, {Bk}, U);
    if (Annotate)
      St.replicate(1);
    SimResult R = simulate(St, C);
    EXPECT_CLOSE(R.StepTime, F + Bk + U);
    EXPECT_EQ(R.NumBuckets, 0u);
    EXPECT_EQ(R.AllReduceBytes, 0u);
    EXPECT_TRUE(R.Collectives.empty());
    for (double T : R.AllReduceTime)
      EXPECT_EQ(T, 0);
  }
}

// Two layers on gpu:0, buckets of 1 MiB: each weight gradient is its own
// bucket. b1 runs while b2's gradient all-reduces; b1's bucket then waits
// for b1 and for b2's bucket, whichever ends last.
TEST(ReplicaTest, BackwardOverlapsTheEarlierBucket) {
  const double F1 = 0.004, F2 = 0.005, B2 = 0.003;
  const uint64_t S1 = 2 * MiB, S2 = MiB;
  const double AR1 = allReduceTime(2, S1), AR2 = allReduceTime(2, S2);
  Cluster C = makeStar();
  // B1 longer than b2's all-reduce, then shorter.
  for (double B1 : {AR2 + 0.002, AR2 / 3}) {
    SCOPED_TRACE("B1 = " + std::to_string(B1));
    // Layer 0 is "1" (S1, B1), layer 1 is "2" (S2, B2).
    Step St({int64_t(S1 / 4), int64_t(S2 / 4)}, {F1, F2}, {B1, B2}, 0);
    St.replicate(2, MiB);
    SimResult R = simulate(St, C);
    double Grad2 = F1 + F2 + B2, Grad1 = Grad2 + B1;
    double Start1 = std::max(Grad1, Grad2 + AR2);
    EXPECT_CLOSE(R.StepTime, Start1 + AR1);
    EXPECT_CLOSE(R.StepTime,
                 B1 > AR2 ? F1 + F2 + B2 + B1 + AR1 : F1 + F2 + B2 + AR2 + AR1);
    EXPECT_EQ(R.NumBuckets, 2u);
    EXPECT_EQ(R.AllReduceBytes, S1 + S2);
    EXPECT_CLOSE(R.AllReduceTime[0], AR1 + AR2);
    ASSERT_EQ(R.Collectives.size(), 2u);
    const CollectiveRecord &First = R.Collectives[0],
                           &Second = R.Collectives[1];
    EXPECT_EQ(getTensors(R, First), std::vector<TensorId>{St.getGradient(1)});
    EXPECT_EQ(First.Bytes, S2);
    EXPECT_CLOSE(First.Start, Grad2);
    EXPECT_CLOSE(First.End, Grad2 + AR2);
    EXPECT_EQ(getTensors(R, Second), std::vector<TensorId>{St.getGradient(0)});
    EXPECT_EQ(Second.Bytes, S1);
    EXPECT_CLOSE(Second.Start, Start1);
    EXPECT_CLOSE(Second.End, Start1 + AR1);
    // Each update waits for its own bucket only.
    EXPECT_CLOSE(getInterval(R, St.Update[1]).Start,
                 std::max(Grad1, Grad2 + AR2));
    EXPECT_CLOSE(getInterval(R, St.Update[0]).Start, Start1 + AR1);
  }
}

/// Six layers of 400 KiB weights on gpu:0.
Step makeSixLayers(double F, double Bk) {
  std::vector<int64_t> Floats(6, int64_t(400 * KiB / 4));
  return Step(Floats, std::vector<double>(6, F), std::vector<double>(6, Bk), 0);
}

// The backward makes w5's gradient first. The first bucket closes at
// 1 MiB: w5, w4, w3 (1200 KiB); the next holds up to 25 MiB, so the
// other three, and closes only with the last gradient.
TEST(ReplicaTest, FirstBucketClosesAtOneMiB) {
  const double F = 0.001, Bk = 0.004;
  Step St = makeSixLayers(F, Bk);
  St.replicate(2);
  Cluster C = makeStar();
  SimResult R = simulate(St, C);
  const uint64_t Grad = 400 * KiB;
  EXPECT_EQ(R.NumBuckets, 2u);
  EXPECT_EQ(R.AllReduceBytes, 6 * Grad);
  ASSERT_EQ(R.Collectives.size(), 2u);
  EXPECT_EQ(getTensors(R, R.Collectives[0]),
            (std::vector<TensorId>{St.getGradient(5), St.getGradient(4),
                                   St.getGradient(3)}));
  EXPECT_EQ(getTensors(R, R.Collectives[1]),
            (std::vector<TensorId>{St.getGradient(2), St.getGradient(1),
                                   St.getGradient(0)}));
  EXPECT_EQ(R.Collectives[0].Bytes, 3 * Grad);
  EXPECT_EQ(R.Collectives[1].Bytes, 3 * Grad);
  // Each starts with its last gradient (b3, then b0): the first ends
  // before b0 does.
  double AR = allReduceTime(2, 3 * Grad);
  ASSERT_LT(AR, 3 * Bk);
  EXPECT_CLOSE(R.Collectives[0].Start, 6 * F + 3 * Bk);
  EXPECT_CLOSE(R.Collectives[1].Start, 6 * F + 6 * Bk);
  EXPECT_CLOSE(R.StepTime, 6 * F + 6 * Bk + AR);
}

// With bucket_bytes=800 KiB, under 1 MiB, every bucket (the first too)
// closes at 800 KiB: two gradients each.
TEST(ReplicaTest, SmallBucketBytesCapsTheFirstBucketToo) {
  Step St = makeSixLayers(0.001, 0.004);
  St.replicate(2, 800 * KiB);
  Cluster C = makeStar();
  SimResult R = simulate(St, C);
  EXPECT_EQ(R.NumBuckets, 3u);
  ASSERT_EQ(R.Collectives.size(), 3u);
  for (unsigned K = 0; K != 3; ++K) {
    EXPECT_EQ(getTensors(R, R.Collectives[K]),
              (std::vector<TensorId>{St.getGradient(5 - 2 * K),
                                     St.getGradient(4 - 2 * K)}))
        << "bucket " << K;
    EXPECT_EQ(R.Collectives[K].Bytes, 800 * KiB);
  }
}

// Buckets are per device: layers 3..5 on gpu:1, 0..2 on gpu:0 (a
// two-stage step); each device's first bucket takes its three gradients
// (1200 KiB) and all-reduces with that device's copy (gpu:5, gpu:4).
TEST(ReplicaTest, EachDeviceFillsItsOwnBuckets) {
  std::vector<int64_t> Floats(6, int64_t(400 * KiB / 4));
  Step St(Floats, std::vector<double>(6, 0.001), std::vector<double>(6, 0.004),
          0, {0, 0, 0, 1, 1, 1});
  St.replicate(2);
  Cluster C = makeStar();
  SimResult R = simulate(St, C);
  EXPECT_EQ(R.NumBuckets, 2u);
  ASSERT_EQ(R.Collectives.size(), 2u);
  // gpu:1's backward runs first.
  EXPECT_EQ(R.Collectives[0].Device, 1u);
  EXPECT_EQ(getTensors(R, R.Collectives[0]),
            (std::vector<TensorId>{St.getGradient(5), St.getGradient(4),
                                   St.getGradient(3)}));
  EXPECT_EQ(R.Collectives[1].Device, 0u);
  EXPECT_EQ(getTensors(R, R.Collectives[1]),
            (std::vector<TensorId>{St.getGradient(2), St.getGradient(1),
                                   St.getGradient(0)}));
  double AR = allReduceTime(2, 1200 * KiB);
  EXPECT_CLOSE(R.AllReduceTime[0], AR);
  EXPECT_CLOSE(R.AllReduceTime[1], AR);
}

// Micro-batches accumulate the gradient; only the last micro-batch's
// accumulated gradient is all-reduced, once. GPipe on one device: every
// forward, then every backward.
TEST(ReplicaTest, MicroBatchesAllReduceOnceAfterTheLastBackward) {
  const double F = 0.010, Bk = 0.020, U = 0.003;
  const uint64_t S = 4 * MiB;
  const unsigned M = 4;
  Step St({int64_t(S / 4)}, {F}, {Bk}, U);
  ann::set(St.B.G, ann::MicroBatches, int64_t(M));
  ann::set(St.B.G, ann::Schedule, llvm::StringRef("gpipe"));
  St.replicate(2);
  Cluster C = makeStar();
  SimResult R = simulate(St, C);
  double AR = allReduceTime(2, S);
  EXPECT_CLOSE(R.StepTime, M * (F + Bk) + AR + U);
  EXPECT_EQ(R.NumBuckets, 1u);
  EXPECT_EQ(R.AllReduceBytes, S);
  EXPECT_CLOSE(R.AllReduceTime[0], AR);
  ASSERT_EQ(R.Collectives.size(), 1u);
  ASSERT_EQ(R.Collectives[0].Tensors.size(), 1u);
  EXPECT_EQ(R.getTensor(R.Collectives[0].Tensors[0]), St.getGradient(0));
  EXPECT_CLOSE(R.Collectives[0].Start, M * (F + Bk));
}

// A bucket waits for the channels its algorithm crosses: gpu:1's bucket
// (ring gpu:1 <-> gpu:5) needs gpu:1's uplink, which the transfer of
// b1's input gradient to gpu:0, requested earlier, holds.
TEST(ReplicaTest, BucketWaitsForATransferOnItsChannels) {
  const double F = 0.001, B1 = 0.002, W1 = 0.001, B0 = 0.003;
  const uint64_t Act = 8 * MiB, S = MiB;
  PlacedGraph P;
  GraphBuilder &B = P.B;
  TensorId X = B.input("x", 1);
  TensorId Wt0 = B.weight("w0", int64_t(S / 4));
  TensorId Wt1 = B.weight("w1", int64_t(S / 4));
  OpId F0 = P.add("f0", F, {X, Wt0}, {1}, "forward", 0);
  OpId F1 = P.add("f1", F, {B.result(F0), Wt1}, {1}, "forward", 1);
  OpId Loss = P.add("loss", 0, {B.result(F1)}, {1}, "loss", 1);
  B.G.addOutput(B.result(Loss));
  // b1 makes the gradient for gpu:0 (8 MiB); gw1 makes w1's afterwards.
  OpId Bo1 = P.add("b1", B1, {B.result(Loss), B.result(F1)}, {int64_t(Act / 4)},
                   "backward", 1);
  OpId Gw1 = P.add("gw1", W1, {B.result(Loss), B.result(F1)}, {int64_t(S / 4)},
                   "backward", 1);
  OpId U1 = P.add("u1", 0, {Wt1, B.result(Gw1)}, {1}, "update", 1);
  OpId Bo0 = P.add("b0", B0, {B.result(Bo1), B.result(F0)}, {int64_t(S / 4)},
                   "backward", 0);
  OpId U0 = P.add("u0", 0, {Wt0, B.result(Bo0)}, {1}, "update", 0);
  ann::set(B.G, ann::Replicas, int64_t(2));

  Cluster C = makeStar();
  SimResult R = simulate(P.B.G, P.Placement, C);
  // f0's result (4 bytes) goes to gpu:1.
  double Small = 2 * Lat + 4 / Bw, Big = 2 * Lat + double(Act) / Bw;
  double T1 = F + Small + F + B1;
  ASSERT_LT(W1, Big); // gw1 ends while the transfer still runs.
  double AR = allReduceTime(2, S);
  ASSERT_EQ(R.Collectives.size(), 2u);
  EXPECT_EQ(R.Collectives[0].Device, 1u);
  EXPECT_CLOSE(R.Collectives[0].Start, T1 + Big);
  EXPECT_EQ(R.Collectives[1].Device, 0u);
  EXPECT_CLOSE(R.Collectives[1].Start, T1 + Big + B0);
  EXPECT_CLOSE(getInterval(R, U1).Start, T1 + Big + AR);
  EXPECT_CLOSE(getInterval(R, U0).Start, T1 + Big + B0 + AR);
  EXPECT_CLOSE(R.StepTime, T1 + Big + B0 + AR);
}

// Buckets fill in the order of the ops that make the gradients (DDP
// assigns them once, by the parameters' order) and start in turn: on
// gpu:0, b_a (the earliest backward op) waits for its input from gpu:1,
// so b_b and b_c make their gradients first. Gradients of 600 KiB: the
// first bucket (1 MiB) closes with b_a's and b_b's, the next holds
// b_c's; it is full first, but waits for the first bucket's turn.
TEST(ReplicaTest, BucketsFollowOpOrderAndStartInTurn) {
  const double F = 0.001, G1 = 0.010, Ba = 0.002, Bb = 0.003, Bc = 0.004;
  const uint64_t S = 600 * KiB;
  PlacedGraph P;
  GraphBuilder &B = P.B;
  TensorId X = B.input("x", 1);
  TensorId Wa = B.weight("wa", int64_t(S / 4));
  TensorId Wb = B.weight("wb", int64_t(S / 4));
  TensorId Wc = B.weight("wc", int64_t(S / 4));
  OpId Fa = P.add("fa", F, {X, Wa}, {1}, "forward", 0);
  OpId Fb = P.add("fb", F, {X, Wb}, {1}, "forward", 0);
  OpId Fc = P.add("fc", F, {X, Wc}, {1}, "forward", 0);
  OpId Loss = P.add("loss", 0, {B.result(Fa), B.result(Fb), B.result(Fc)}, {1},
                    "loss", 0);
  B.G.addOutput(B.result(Loss));
  // The gradient for branch a takes a detour through gpu:1.
  OpId Ga = P.add("ga", G1, {B.result(Loss)}, {1}, "backward", 1);
  OpId Bwa = P.add("b_a", Ba, {B.result(Ga), B.result(Fa)}, {int64_t(S / 4)},
                   "backward", 0);
  OpId Bwb = P.add("b_b", Bb, {B.result(Loss), B.result(Fb)}, {int64_t(S / 4)},
                   "backward", 0);
  OpId Bwc = P.add("b_c", Bc, {B.result(Loss), B.result(Fc)}, {int64_t(S / 4)},
                   "backward", 0);
  P.add("u_a", 0, {Wa, B.result(Bwa)}, {1}, "update", 0);
  P.add("u_b", 0, {Wb, B.result(Bwb)}, {1}, "update", 0);
  P.add("u_c", 0, {Wc, B.result(Bwc)}, {1}, "update", 0);
  ann::set(B.G, ann::Replicas, int64_t(2));

  Cluster C = makeStar();
  SimResult R = simulate(P.B.G, P.Placement, C);
  double Hop = 2 * Lat + 4 / Bw;
  double MadeB = 3 * F + Bb, MadeC = MadeB + Bc;
  double MadeA = 3 * F + Hop + G1 + Hop + Ba;
  ASSERT_LT(MadeC, MadeA - Ba); // gpu:0 idles before b_a.
  EXPECT_CLOSE(getInterval(R, Bwb).End, MadeB);
  EXPECT_CLOSE(getInterval(R, Bwc).End, MadeC);
  EXPECT_CLOSE(getInterval(R, Bwa).End, MadeA);
  double AR2 = allReduceTime(2, 2 * S), AR1 = allReduceTime(2, S);
  EXPECT_EQ(R.NumBuckets, 2u);
  ASSERT_EQ(R.Collectives.size(), 2u);
  EXPECT_EQ(getTensors(R, R.Collectives[0]),
            (std::vector<TensorId>{B.result(Bwa), B.result(Bwb)}));
  EXPECT_CLOSE(R.Collectives[0].Start, MadeA);
  EXPECT_EQ(getTensors(R, R.Collectives[1]),
            std::vector<TensorId>{B.result(Bwc)});
  EXPECT_CLOSE(R.Collectives[1].Start, MadeA + AR2);
  EXPECT_CLOSE(R.StepTime, MadeA + AR2 + AR1);
}

//===----------------------------------------------------------------------===//
// Replica devices
//===----------------------------------------------------------------------===//

PipelinePlan makePlan(unsigned Replicas, unsigned Stride = 0) {
  PipelinePlan P;
  P.Replicas = Replicas;
  P.ReplicaStride = Stride;
  return P;
}

std::vector<unsigned> getGPUs() { return {0, 1, 2, 3, 4, 5, 6, 7}; }

// v100x8-nvlink: gpu:0..7 are devices 0..7, cpu:0 device 8, its own type.
TEST(ReplicaDeviceTest, ContiguousBlocksByDefault) {
  Cluster C = llvm::cantFail(getClusterPreset("v100x8-nvlink"));
  ASSERT_EQ(C.getNumDevices(), 9u);
  ASSERT_EQ(C.getDevices()[8].Name, "cpu:0");
  PipelinePlan P = makePlan(2);
  EXPECT_EQ(getReplicaDevice(C, P, 1, 0), 1u);
  EXPECT_EQ(getReplicaDevice(C, P, 1, 1), 5u);
  EXPECT_EQ(getReplicaDevice(C, P, 3, 1), 7u);
  // gpu:4 is replica 1's; it has no copy in a further block.
  EXPECT_EQ(getReplicaDevice(C, P, 4, 1), ~0u);
  // The CPU type has one device: no copy.
  EXPECT_EQ(getReplicaDevice(C, P, 8, 1), ~0u);
  EXPECT_EQ(getReplicaGroup(C, P, getGPUs()),
            (std::vector<unsigned>{0, 1, 2, 3}));
  std::vector<unsigned> All = getGPUs();
  All.push_back(8);
  EXPECT_EQ(getReplicaGroup(C, P, All), (std::vector<unsigned>{0, 1, 2, 3}));
  PipelinePlan Four = makePlan(4);
  EXPECT_EQ(getReplicaDevice(C, Four, 1, 3), 7u);
  EXPECT_EQ(getReplicaGroup(C, Four, getGPUs()), (std::vector<unsigned>{0, 1}));
}

TEST(ReplicaDeviceTest, StrideOneInterleaves) {
  Cluster C = llvm::cantFail(getClusterPreset("v100x8-nvlink"));
  PipelinePlan P = makePlan(2, 1);
  EXPECT_EQ(getReplicaDevice(C, P, 0, 1), 1u);
  EXPECT_EQ(getReplicaDevice(C, P, 6, 1), 7u);
  EXPECT_EQ(getReplicaDevice(C, P, 7, 1), ~0u);
  EXPECT_EQ(getReplicaGroup(C, P, getGPUs()),
            (std::vector<unsigned>{0, 2, 4, 6}));
}

TEST(ReplicaDeviceTest, MoreReplicasThanDevicesHaveNoCopies) {
  Cluster C = llvm::cantFail(getClusterPreset("v100x8-nvlink"));
  PipelinePlan P = makePlan(16);
  EXPECT_EQ(getReplicaDevice(C, P, 0, 0), 0u);
  EXPECT_EQ(getReplicaDevice(C, P, 0, 1), ~0u);
  EXPECT_TRUE(getReplicaGroup(C, P, getGPUs()).empty());
}

TEST(ReplicaDeviceTest, OneReplicaMayUseEveryDevice) {
  Cluster C = llvm::cantFail(getClusterPreset("v100x8-nvlink"));
  PipelinePlan P = makePlan(1);
  std::vector<unsigned> All = getGPUs();
  All.push_back(8);
  EXPECT_EQ(getReplicaGroup(C, P, All), All);
  EXPECT_FALSE(bool(checkReplicaDevices(C, P, {0, 4, 8})));
}

TEST(ReplicaDeviceTest, CheckRejectsCopiesReplicaZeroUses) {
  Cluster C = llvm::cantFail(getClusterPreset("v100x8-nvlink"));
  PipelinePlan P = makePlan(2);
  EXPECT_FALSE(bool(checkReplicaDevices(C, P, {0, 1, 2, 3, 0})));

  llvm::Error E = checkReplicaDevices(C, P, {0, 4});
  ASSERT_TRUE(bool(E));
  std::string Msg = llvm::toString(std::move(E));
  EXPECT_NE(Msg.find("'gpu:0'"), std::string::npos) << Msg;
  EXPECT_NE(Msg.find("'gpu:4'"), std::string::npos) << Msg;
  EXPECT_NE(Msg.find("replica 0 uses too"), std::string::npos) << Msg;
  EXPECT_NE(Msg.find("replica 0 may use gpu:0, gpu:1, gpu:2, gpu:3"),
            std::string::npos)
      << Msg;

  // gpu:4's copy in replica 1 would be the ninth V100.
  llvm::Error NoCopy = checkReplicaDevices(C, P, {4});
  ASSERT_TRUE(bool(NoCopy));
  Msg = llvm::toString(std::move(NoCopy));
  EXPECT_NE(Msg.find("'gpu:4' has no copy in replica 1"), std::string::npos)
      << Msg;
  EXPECT_NE(Msg.find("replica 0 may use gpu:0, gpu:1, gpu:2, gpu:3"),
            std::string::npos)
      << Msg;

  // More replicas than V100s, or than CPUs.
  llvm::Error Many = checkReplicaDevices(C, makePlan(16), {0});
  ASSERT_TRUE(bool(Many));
  Msg = llvm::toString(std::move(Many));
  EXPECT_NE(Msg.find("replicas=16"), std::string::npos) << Msg;
  EXPECT_NE(Msg.find("'gpu:0'"), std::string::npos) << Msg;

  llvm::Error Cpu = checkReplicaDevices(C, P, {0, 8});
  ASSERT_TRUE(bool(Cpu));
  Msg = llvm::toString(std::move(Cpu));
  EXPECT_NE(Msg.find("'cpu:0'"), std::string::npos) << Msg;
}

} // namespace
