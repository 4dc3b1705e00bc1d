//===- BoundsTest.cpp - Lower bounds against hand figures and brute force -===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/Sim/Simulator.h"

#include "BruteForceStep.h"

#include "gtest/gtest.h"

#include <cmath>
#include <random>

using namespace dp;
using llvm::ArrayRef;

namespace {

/// \p Fast devices of type "fast" with \p FastMemory bytes each and \p Slow
/// of type "slow" with 1 GiB, behind one switch (1 GB/s links, 10 us).
Cluster makeMixedCluster(unsigned Fast, unsigned Slow, uint64_t FastMemory) {
  DeviceType F, S;
  F.Name = "fast";
  S.Name = "slow";
  for (DeviceType *T : {&F, &S}) {
    T->PeakFlops[unsigned(DTypeKind::F32)] = 1e12;
    T->MemoryBandwidth = 1e11;
  }
  F.MemoryBytes = FastMemory;
  S.MemoryBytes = uint64_t(1) << 30;
  std::vector<Device> Devs;
  for (unsigned I = 0; I != Fast; ++I)
    Devs.push_back({"f" + std::to_string(I), 0});
  for (unsigned I = 0; I != Slow; ++I)
    Devs.push_back({"s" + std::to_string(I), 1});
  std::vector<Link> Links;
  unsigned N = Fast + Slow;
  for (unsigned I = 0; I != N; ++I)
    Links.push_back({"l" + std::to_string(I), I, N, 1e9, 1e-5});
  return llvm::cantFail(Cluster::create("mixed", {F, S}, Devs, {"sw"}, Links));
}

/// An op with its time on each type and f32 results of \p Elements each.
OpId addOp(Graph &G, const std::string &Name, double Fast, double Slow,
           ArrayRef<TensorId> Operands, int64_t Elements) {
  OpId O = G.addOp(Name, "", "Op", Operands,
                   {{Name + ".0", TensorType(DTypeKind::F32, {Elements})}});
  G.getOp(O).Annotations.set("time.fast", Attribute::getFloat(Fast));
  G.getOp(O).Annotations.set("time.slow", Attribute::getFloat(Slow));
  return O;
}

/// The bounds, with the segment bound where CBC is there.
LowerBounds boundsOf(const Graph &G, const Cluster &C) {
  llvm::Expected<SimGraph> SG = SimGraph::build(G, C);
  EXPECT_TRUE(bool(SG));
  if (!SG) {
    llvm::consumeError(SG.takeError());
    return {};
  }
  LowerBounds LB = computeLowerBounds(*SG);
  LB.Segments = computeSegmentBound(*SG, /*Seconds=*/5);
  return LB;
}

/// The shortest step of any placement of \p G's ops that fits, by trying
/// them all; infinity if none fits.
double bruteForceOptimum(const Graph &G, const Cluster &C) {
  SimGraph SG = llvm::cantFail(SimGraph::build(G, C));
  Simulator Sim(SG);
  SimResult R;
  return test::shortestStepOfAll(
      G.getNumOps(), C.getNumDevices(),
      [&](ArrayRef<uint32_t> P) -> const SimResult & {
        Sim.run(P, R);
        return R;
      });
}

} // namespace

// Two independent ops of 1 s on the fast device and 3 s on the slow one.
// Work / devices: 2 s of fastest work over 2 devices, 1 s. The split: 1.5
// ops' worth on the fast device, half an op's (1.5 s) on the slow one.
TEST(BoundsTest, TheWorkSplitCountsTheSlowDevicesSpeed) {
  Graph G;
  G.setName("g");
  TensorId X = G.addInput("x", TensorType(DTypeKind::F32, {1}));
  G.addOutput(G.getOp(addOp(G, "a", 1, 3, {X}, 1)).Results[0]);
  G.addOutput(G.getOp(addOp(G, "b", 1, 3, {X}, 1)).Results[0]);
  Cluster C = makeMixedCluster(1, 1, 1 << 20);
  LowerBounds LB = boundsOf(G, C);
  EXPECT_DOUBLE_EQ(LB.Work, 1);
  EXPECT_NEAR(LB.HeterogeneousWork, 1.5, 1e-6);
  EXPECT_NEAR(LB.best(), 1.5, 1e-6);
  EXPECT_LE(LB.best(), bruteForceOptimum(G, C)); // 2 s: both on f0
}

// An op whose weight the fast device cannot hold runs on the slow one: 10
// s, where the fastest-device bounds say 1 s.
TEST(BoundsTest, AnOpThatFitsOnlyTheSlowDeviceRunsThere) {
  Graph G;
  G.setName("g");
  TensorId W = G.addWeight("w", TensorType(DTypeKind::F32, {1 << 20}));
  G.addOutput(G.getOp(addOp(G, "a", 1, 10, {W}, 1)).Results[0]);
  Cluster C = makeMixedCluster(2, 1, 1 << 20); // 1 MiB: the 4 MiB weight
  LowerBounds LB = boundsOf(G, C);             // does not fit
  EXPECT_DOUBLE_EQ(LB.CriticalPath, 1);
  EXPECT_NEAR(LB.HeterogeneousWork, 10, 1e-5);
  EXPECT_NEAR(bruteForceOptimum(G, C), 10, 1e-3);
}

// Weights that fit the fast device one at a time but not all together:
// the rest go to the slow device, and the bound counts them there.
TEST(BoundsTest, TheFastDeviceHoldsOnlySoManyWeights) {
  Graph G;
  G.setName("g");
  for (int I = 0; I != 4; ++I) {
    TensorId W = G.addWeight("w" + std::to_string(I),
                             TensorType(DTypeKind::F32, {100 << 10}));
    G.addOutput(
        G.getOp(addOp(G, "op" + std::to_string(I), 1, 4, {W}, 1)).Results[0]);
  }
  // The fast device (1 MiB) holds 2.56 of the 400 KiB weights, so at
  // least 1.44 ops' worth run on the slow device: 1.44 x 4 s = 5.76 s.
  // (Without memory the split would be 3.2 ops fast, 0.8 slow: 3.2 s.)
  // The best placement: two ops on each device, 8 s.
  Cluster C = makeMixedCluster(1, 1, 1 << 20);
  LowerBounds LB = boundsOf(G, C);
  EXPECT_NEAR(LB.HeterogeneousWork, 1.44 * 4, 1e-4);
  EXPECT_NEAR(bruteForceOptimum(G, C), 8, 1e-3);
}

namespace {

/// A fork "a", two branches of \p Length ops, and a join "d", every op 1 s
/// on either type, every result but the join's \p Elements f32 (250
/// million: 1 s over a 1 GB/s link).
Graph makeForkJoin(unsigned Length, int64_t Elements) {
  Graph G;
  G.setName("fork-join");
  TensorId X = G.addInput("x", TensorType(DTypeKind::F32, {4}));
  auto Out = [&](OpId O) { return G.getOp(O).Results[0]; };
  OpId A = addOp(G, "a", 1, 1, {X}, Elements);
  std::vector<TensorId> Ends;
  for (const char *Branch : {"b", "c"}) {
    OpId Last = A;
    for (unsigned I = 1; I <= Length; ++I)
      Last = addOp(G, Branch + std::to_string(I), 1, 1, {Out(Last)}, Elements);
    Ends.push_back(Out(Last));
  }
  G.addOutput(Out(addOp(G, "d", 1, 1, Ends, 4)));
  return G;
}

} // namespace

// A fork and a join of 1 s ops whose results take 1 s to send: either
// branch away from the join's device costs two transfers, so the best
// step runs all four ops on one device, 4 s. The critical path is 3 s;
// the join's head counts the branches run one after the other there
// (1 + 2 s), which with the join's 1 s is the optimum.
TEST(BoundsTest, AJoinPaysForItsBranchesOrTheirTransfers) {
  Graph G = makeForkJoin(1, 250000000);
  Cluster Cl = makeMixedCluster(2, 0, uint64_t(64) << 30);
  LowerBounds LB = boundsOf(G, Cl);
  EXPECT_NEAR(LB.CriticalPath, 3, 1e-6);
  EXPECT_NEAR(LB.HeadWorkTail, 4, 1e-6);
  EXPECT_NEAR(LB.best(), 4, 1e-6);
  EXPECT_NEAR(bruteForceOptimum(G, Cl), 4, 1e-6);
  if (hasSegmentBoundSolver()) {
    EXPECT_NEAR(LB.Segments, 4, 1e-4);
  }
}

// A fork, two branches of two ops and a join, every op 1 s, every result
// but the join's 2 s to send. With the branches on the join's device they
// run one after the other (1 + 4 + 1 s); with one elsewhere, it waits 2 s
// for the fork's result, or the join waits 2 s for its result (also 6 s).
// Head + work + tail sees only the branches' last ops at the join (5 s);
// the segment bound, a program over the placements of the ops after the
// fork, sees the whole branches (docs/simulator.md).
TEST(BoundsTest, TheSegmentBoundSeesWholeBranches) {
  Graph G = makeForkJoin(2, 500000000);
  Cluster Cl = makeMixedCluster(2, 0, uint64_t(64) << 30);
  LowerBounds LB = boundsOf(G, Cl);
  EXPECT_NEAR(LB.HeadWorkTail, 5, 1e-4);
  EXPECT_NEAR(bruteForceOptimum(G, Cl), 6, 1e-4);
  if (!hasSegmentBoundSolver())
    GTEST_SKIP() << "dp was built without CBC";
  SegmentBoundInfo Info;
  SimGraph SG = llvm::cantFail(SimGraph::build(G, Cl));
  EXPECT_NEAR(computeSegmentBound(SG, 5, &Info), 6, 1e-4);
  // The fork, then the rest: the join is the other cut, but it ends the
  // step.
  EXPECT_EQ(Info.Segments, 2u);
  EXPECT_EQ(Info.Exact, 2u);
  EXPECT_EQ(computeSegmentBound(SG, 0), 0);
}

namespace {

/// Which bound was the tightest by more than 1 % on how many graphs.
struct Tightest {
  unsigned Checked = 0, Split = 0, Path = 0;
};

/// Random small graphs (3 to 6 ops, results of up to \p MaxElements f32
/// each) on two fast devices of \p FastMemory bytes and one slow device:
/// no bound exceeds the shortest step of any placement that fits, found
/// by trying every placement.
Tightest checkRandomGraphs(uint64_t Seed, int64_t MaxElements,
                           uint64_t FastMemory) {
  std::mt19937_64 Rng(Seed);
  std::uniform_real_distribution<double> Time(0.1, 2.0), Slowdown(1.0, 6.0);
  Tightest Count;
  for (int Trial = 0; Trial != 60; ++Trial) {
    Graph G;
    G.setName("g");
    unsigned N = 3 + Trial % 4; // 3..6 ops: at most 3^6 placements
    std::vector<TensorId> Avail{
        G.addInput("x", TensorType(DTypeKind::F32, {int64_t(Rng() % 4096)}))};
    for (unsigned I = 0; I != N; ++I) {
      std::vector<TensorId> Ins{Avail[Rng() % Avail.size()]};
      if (Rng() % 2)
        Ins.push_back(Avail[Rng() % Avail.size()]);
      if (Rng() % 3 == 0)
        Ins.push_back(G.addWeight(
            "w" + std::to_string(I),
            TensorType(DTypeKind::F32, {int64_t(Rng() % (96 << 10))})));
      std::sort(Ins.begin(), Ins.end());
      Ins.erase(std::unique(Ins.begin(), Ins.end()), Ins.end());
      double T = Time(Rng);
      OpId O = addOp(G, "op" + std::to_string(I), T, T * Slowdown(Rng), Ins,
                     int64_t(Rng() % uint64_t(MaxElements)));
      Avail.push_back(G.getOp(O).Results[0]);
    }
    G.addOutput(Avail.back());
    Cluster C = makeMixedCluster(2, 1, FastMemory);
    LowerBounds LB = boundsOf(G, C);
    double Opt = bruteForceOptimum(G, C);
    if (!std::isfinite(Opt))
      continue; // nothing fits
    ++Count.Checked;
    std::string What =
        "seed " + std::to_string(Seed) + " trial " + std::to_string(Trial);
    EXPECT_LE(LB.CriticalPath, Opt * (1 + 1e-9)) << What;
    EXPECT_LE(LB.Work, Opt * (1 + 1e-9)) << What;
    EXPECT_LE(LB.HeterogeneousWork, Opt * (1 + 1e-9)) << What;
    EXPECT_LE(LB.HeadWorkTail, Opt * (1 + 1e-9)) << What;
    EXPECT_LE(LB.Segments, Opt * (1 + 1e-9)) << What;
    double Others = std::max(LB.CriticalPath, LB.Work);
    if (LB.HeterogeneousWork > Others * 1.01)
      ++Count.Split;
    if (LB.HeadWorkTail > std::max(Others, LB.HeterogeneousWork) * 1.01)
      ++Count.Path;
  }
  return Count;
}

} // namespace

// Little memory on the fast devices, small transfers: the split bound is
// the tightest on some graphs (else this would not tell it from the
// others).
TEST(BoundsTest, NoBoundExceedsTheOptimumWhereMemoryBinds) {
  Tightest Count = checkRandomGraphs(11, 64 << 10, 512 << 10);
  EXPECT_GE(Count.Checked, 40u);
  EXPECT_GT(Count.Split, 0u);
}

// Roomy devices and results that take about as long to send (up to 1 s on
// the 1 GB/s links) as ops take to run: the head + work + tail bound,
// which counts the transfers of joins and forks, is the tightest on some.
TEST(BoundsTest, NoBoundExceedsTheOptimumWhereTransfersCost) {
  Tightest Count =
      checkRandomGraphs(12, int64_t(250) << 20, uint64_t(64) << 30);
  EXPECT_GE(Count.Checked, 40u);
  EXPECT_GT(Count.Path, 0u);
}
