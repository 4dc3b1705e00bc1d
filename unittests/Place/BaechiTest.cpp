//===- BaechiTest.cpp - Baechi's m-TOPO, m-ETF and m-SCT ------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "Baechi.h"

#include "DiagnosticsTestUtil.h"
#include "TestGraphs.h"

#include "gtest/gtest.h"

#include <random>

using namespace dp;
using namespace dp::baechi;
using namespace dp::test;
using llvm::ArrayRef;
using llvm::Expected;
using llvm::StringRef;

namespace {

/// \p NumGPUs devices of type "t" with \p Memory bytes each (and, with
/// \p WithCPU, a last device "cpu:0" of type "c" with 1 GiB), each joined
/// to one switch by a link of \p Bandwidth bytes/s without latency: a
/// transfer between two devices takes bytes / Bandwidth.
Cluster makeCluster(unsigned NumGPUs, uint64_t Memory = 1 << 20,
                    double Bandwidth = 1000, bool WithCPU = false) {
  return makeStarCluster(NumGPUs, Memory, Bandwidth, WithCPU, 1 << 30);
}

/// The devices of devices=\p Which.
DeviceTiers tiers(const Cluster &C, StringRef Which = "auto") {
  return cantFail(selectDevices(
      C, "test", *parseEnumName<DeviceSetKind>(BaechiDeviceSetNames, Which)));
}

Schedule schedule(const PlacementProblem &P, StringRef Which = "auto",
                  ArrayRef<uint32_t> Favourites = {}) {
  DeviceTiers T = tiers(P.getCluster(), Which);
  Expected<Schedule> S = scheduleList(P, "test", T, Favourites);
  if (!S) {
    ADD_FAILURE() << describe(collectErrors(S.takeError()));
    return {};
  }
  return std::move(*S);
}

std::vector<uint32_t> topo(const PlacementProblem &P, bool Uniform,
                           StringRef Which = "auto",
                           MemoryEstimate Memory = MemoryEstimate::Schedule) {
  Expected<std::vector<uint32_t>> R =
      placeTopo(P, tiers(P.getCluster(), Which), Uniform, Memory);
  if (!R) {
    ADD_FAILURE() << describe(collectErrors(R.takeError()));
    return {};
  }
  return std::move(*R);
}

/// Runs the placer \p Algo of Placers.def with its own options \p Extra.
Expected<std::vector<uint32_t>>
runPlacer(const PlacementProblem &P, StringRef Algo,
          std::vector<std::pair<std::string, std::string>> Extra = {}) {
  PlaceOptions Opts;
  Opts.Algo = Algo.str();
  Opts.Extra = std::move(Extra);
  return lookupPlacer(Algo)->Run(P, Opts);
}

uint32_t unitOf(const PlacementProblem &P, StringRef OpName) {
  return P.getUnitOf(P.getGraph().lookupOp(OpName));
}

uint32_t deviceOf(const PlacementProblem &P, ArrayRef<uint32_t> Placement,
                  StringRef OpName) {
  return Placement[unitOf(P, OpName)];
}

/// A random DAG of \p NumOps ops, each reading one or two earlier results,
/// taking 0.1 to 2 s, producing 4 to 8000 bytes, and some keeping up to
/// 20 KiB on their device.
Graph makeRandomGraph(uint64_t Seed, unsigned NumOps) {
  std::mt19937_64 Rng(Seed);
  GraphBuilder B;
  std::vector<TensorId> Values{B.input("x")};
  for (unsigned I = 0; I != NumOps; ++I) {
    std::vector<TensorId> Operands{Values[Rng() % Values.size()]};
    if (Rng() % 3 == 0) {
      TensorId Second = Values[Rng() % Values.size()];
      if (Second != Operands[0])
        Operands.push_back(Second);
    }
    OpId O = B.op("op" + std::to_string(I), 0.1 + double(Rng() % 20) / 10,
                  Operands, 1 + int64_t(Rng() % 2000));
    if (Rng() % 4 == 0)
      B.persistent(O, int64_t(Rng() % (20 << 10)));
    Values.push_back(B.result(O));
  }
  B.G.addOutput(Values.back());
  return std::move(B.G);
}

//===----------------------------------------------------------------------===//
// m-ETF
//===----------------------------------------------------------------------===//

// a (1 s) forks to b and c (2 s each); a's result is 500 bytes, 0.5 s over
// a link. ETF: a on gpu:0 at 0; b and c could both start at 1 on gpu:0 or
// at 1.5 on gpu:1, so b (the first unit) takes gpu:0 at 1; then c starts
// at 3 on gpu:0 or at 1.5 on gpu:1: gpu:1. Makespan 3.5 s.
TEST(BaechiETFTest, ForkByHand) {
  GraphBuilder B;
  OpId A = B.op("a", 1, {B.input("x")}, 125);
  B.op("b", 2, {B.result(A)});
  B.op("c", 2, {B.result(A)});
  Cluster C = makeCluster(2);
  PlacementProblem P = buildProblem(B.G, C);
  Schedule S = schedule(P);
  EXPECT_EQ(S.UnitDevice[unitOf(P, "a")], 0u);
  EXPECT_EQ(S.UnitDevice[unitOf(P, "b")], 0u);
  EXPECT_EQ(S.UnitDevice[unitOf(P, "c")], 1u);
  EXPECT_DOUBLE_EQ(S.Start[P.getGraph().lookupOp("b")], 1.0);
  EXPECT_DOUBLE_EQ(S.Start[P.getGraph().lookupOp("c")], 1.5);
  EXPECT_DOUBLE_EQ(S.Makespan, 3.5);
  // The simulator agrees on this schedule.
  EXPECT_DOUBLE_EQ(P.simulate(S.UnitDevice).StepTime, 3.5);
}

// a (1 s) has two results of 500 bytes; z (10 s, the lower unit) takes
// gpu:0 after a, so c goes to gpu:1, where its two inputs arrive one after
// the other over gpu:0's link: at 1.5 and 2 s.
TEST(BaechiETFTest, TransfersShareChannels) {
  GraphBuilder B;
  OpId A = B.op("a", 1, {B.input("x")}, ArrayRef<int64_t>{125, 125});
  B.op("z", 10, {B.result(A, 0)});
  B.op("c", 1, {B.result(A, 0), B.result(A, 1)});
  Cluster C = makeCluster(3);
  PlacementProblem P = buildProblem(B.G, C);
  Schedule S = schedule(P);
  EXPECT_EQ(S.UnitDevice, (std::vector<uint32_t>{0, 0, 1}));
  EXPECT_DOUBLE_EQ(S.Start[P.getGraph().lookupOp("c")], 2.0);
  EXPECT_DOUBLE_EQ(S.Makespan, 11.0);
}

TEST(BaechiETFTest, IndependentChainsSplit) {
  GraphBuilder B;
  TensorId X = B.input("x");
  OpId A1 = B.op("a1", 1, {X});
  OpId A2 = B.op("a2", 1, {B.result(A1)});
  B.op("a3", 1, {B.result(A2)});
  TensorId Y = B.input("y");
  OpId B1 = B.op("b1", 1, {Y});
  OpId B2 = B.op("b2", 1, {B.result(B1)});
  B.op("b3", 1, {B.result(B2)});
  Cluster C = makeCluster(2);
  PlacementProblem P = buildProblem(B.G, C);
  Schedule S = schedule(P);
  EXPECT_DOUBLE_EQ(S.Makespan, 3.0);
  for (StringRef Op : {"a2", "a3"})
    EXPECT_EQ(deviceOf(P, S.UnitDevice, Op), deviceOf(P, S.UnitDevice, "a1"));
  for (StringRef Op : {"b2", "b3"})
    EXPECT_EQ(deviceOf(P, S.UnitDevice, Op), deviceOf(P, S.UnitDevice, "b1"));
  EXPECT_NE(deviceOf(P, S.UnitDevice, "a1"), deviceOf(P, S.UnitDevice, "b1"));
}

// A CPU that is idle but ten times slower does not win an op by starting
// it first: the op goes where it ends first.
TEST(BaechiETFTest, SlowIdleDeviceDoesNotWin) {
  GraphBuilder B;
  TensorId X = B.input("x");
  B.op("a", 1, {X});
  B.op("b", 1, {X});
  Cluster C = makeCluster(1, 1 << 20, 1000, /*WithCPU=*/true);
  PlacementProblem P = buildProblem(B.G, C);
  Schedule S = schedule(P, "all");
  EXPECT_EQ(S.UnitDevice, (std::vector<uint32_t>{0, 0}));
  EXPECT_DOUBLE_EQ(S.Makespan, 2.0);
}

// b would start first right after a on a's device, but after a that device
// can hold nothing more: b goes to gpu:1 and waits for a's result.
TEST(BaechiETFTest, RespectsMemory) {
  GraphBuilder B;
  OpId A = B.op("a", 1, {B.input("x")}, 125);
  OpId Bop = B.op("b", 1, {B.result(A)});
  B.persistent(A, 2000);
  B.persistent(Bop, 2000);
  Cluster C = makeCluster(2, 3000);
  PlacementProblem P = buildProblem(B.G, C);
  Schedule S = schedule(P);
  EXPECT_EQ(S.UnitDevice, (std::vector<uint32_t>{0, 1}));
  EXPECT_DOUBLE_EQ(S.Start[P.getGraph().lookupOp("b")], 1.5);
}

// Units {a, d} and {b, c} of a chain a -> b -> c -> d: placing {a, d}
// reserves room for a copy of c's 1000-byte result, which {b, c} frees by
// joining it on gpu:0 (2000 bytes hold 1012 + 4, not 1012 + 1004).
TEST(BaechiETFTest, CopiesFreedWhenTheirHomeArrives) {
  GraphBuilder B;
  OpId A = B.op("a", 1, {B.input("x")});
  OpId Bop = B.op("b", 1, {B.result(A)});
  OpId Cop = B.op("c", 1, {B.result(Bop)}, 250);
  OpId Dop = B.op("d", 1, {B.result(Cop)});
  for (OpId O : {A, Dop})
    B.G.getOp(O).Annotations.set("group", Attribute::getInt(0));
  for (OpId O : {Bop, Cop})
    B.G.getOp(O).Annotations.set("group", Attribute::getInt(1));
  Cluster C = makeCluster(2, 2000);
  PlacementProblem P = buildProblem(B.G, C);
  ASSERT_EQ(P.getNumUnits(), 2u);
  EXPECT_EQ(P.getUnitMemory(0), 12u);
  EXPECT_EQ(P.getUnitMemory(1), 1004u);
  Schedule S = schedule(P);
  EXPECT_EQ(S.UnitDevice, (std::vector<uint32_t>{0, 0}));
}

TEST(BaechiETFTest, NoFitNamesTheUnit) {
  GraphBuilder B;
  OpId A = B.op("a", 1, {B.input("x")});
  OpId Big = B.op("big", 1, {B.result(A)});
  B.persistent(Big, 5000);
  Cluster C = makeCluster(2, 4096);
  PlacementProblem P = buildProblem(B.G, C);
  Expected<std::vector<uint32_t>> R = runPlacer(P, "m-etf");
  ASSERT_FALSE(bool(R));
  std::vector<Diag> Diags = collectErrors(R.takeError());
  ASSERT_EQ(Diags.size(), 1u);
  EXPECT_EQ(Diags[0].Loc.Node, "big");
  EXPECT_EQ(Diags[0].Message,
            "place{algo=m-etf}: no device can hold op 'big': it needs 4.9 KiB, "
            "and at most 4.0 KiB is free (on gpu:1, of its 4.0 KiB); it "
            "would fit only on a device of at least 4.9 KiB (a cluster with "
            "more memory per device)");
}

// devices=auto: the CPU only takes what fits on no GPU; devices=gpus: an
// error instead; devices=all: the CPU is one more device.
TEST(BaechiETFTest, DeviceTiers) {
  Cluster C = makeCluster(2, 4096, 1000, /*WithCPU=*/true);
  DeviceTiers Auto = tiers(C, "auto");
  EXPECT_EQ(Auto.First, (std::vector<unsigned>{0, 1}));
  EXPECT_EQ(Auto.Spill, (std::vector<unsigned>{2}));
  DeviceTiers GPUs = tiers(C, "gpus");
  EXPECT_EQ(GPUs.First, (std::vector<unsigned>{0, 1}));
  EXPECT_TRUE(GPUs.Spill.empty());
  DeviceTiers All = tiers(C, "all");
  EXPECT_EQ(All.First, (std::vector<unsigned>{0, 1, 2}));
  EXPECT_TRUE(All.Spill.empty());

  GraphBuilder B;
  OpId A = B.op("a", 1, {B.input("x")});
  OpId Big = B.op("big", 1, {B.result(A)});
  B.persistent(Big, 5000);
  PlacementProblem P = buildProblem(B.G, C);
  EXPECT_EQ(schedule(P, "auto").UnitDevice, (std::vector<uint32_t>{0, 2}));
  Expected<std::vector<uint32_t>> R =
      runPlacer(P, "m-etf", {{"devices", "gpus"}});
  ASSERT_FALSE(bool(R));
  EXPECT_EQ(collectErrors(R.takeError())[0].Loc.Node, "big");
}

//===----------------------------------------------------------------------===//
// m-SCT's favourite children
//===----------------------------------------------------------------------===//

// A fork a -> {b, c}, every node 1 s, communication 10 s to b and 1 s to c.
// With x = 1 - y: w = 2 + max(10 x, y), least at x = 1/11: b is the
// favourite child and the relaxed makespan is 2 + 10/11.
TEST(BaechiSCTTest, ForkFavoursTheHeavyEdge) {
  for (bool HeavyToB : {true, false}) {
    std::vector<LPEdge> Edges{{0, 1, HeavyToB ? 10.0 : 1.0},
                              {0, 2, HeavyToB ? 1.0 : 10.0}};
    FavouriteChildren F =
        solveFavouriteChildren({1, 1, 1}, Edges, {0, 1, 2}, 0.5, 1000);
    EXPECT_EQ(F.Child[0], HeavyToB ? 1u : 2u);
    EXPECT_EQ(F.Child[1], NoUnit);
    EXPECT_EQ(F.Child[2], NoUnit);
    EXPECT_NEAR(F.RelaxedMakespan, 2 + 10.0 / 11, 1e-6);
    EXPECT_EQ(F.NumLPs, 1u);
  }
}

// A join b, c -> d: d's favourite parent is the one with the heavy edge.
TEST(BaechiSCTTest, JoinFavoursTheHeavyEdge) {
  std::vector<LPEdge> Edges{{0, 1, 1}, {0, 2, 1}, {1, 3, 1}, {2, 3, 10}};
  FavouriteChildren F =
      solveFavouriteChildren({1, 1, 1, 1}, Edges, {0, 1, 2, 3}, 0.5, 1000);
  EXPECT_EQ(F.Child[2], 3u);
  EXPECT_EQ(F.Child[1], NoUnit);
  EXPECT_EQ(F.Child[3], NoUnit);
}

// Chains need no LP: every chain edge is favourite.
TEST(BaechiSCTTest, ChainsContract) {
  std::vector<LPEdge> Edges{{0, 1, 5}, {1, 2, 5}};
  FavouriteChildren F =
      solveFavouriteChildren({1, 1, 1}, Edges, {0, 1, 2}, 0.5, 1000);
  EXPECT_EQ(F.Child, (std::vector<uint32_t>{1, 2, NoUnit}));
  EXPECT_EQ(F.NumLPs, 0u);
  EXPECT_EQ(F.LPNodes, 0u);
}

// A fork whose branches are chains: the LP sees the fork node and the two
// chain heads only, and the chain times add up: the branch of 3 s with the
// heavier edge is favourite, since its chain is the longer path.
TEST(BaechiSCTTest, ContractedChainsKeepTheirTime) {
  // 0 -> 1 -> 2 -> 3 (branch of three nodes), 0 -> 4 (one node).
  std::vector<LPEdge> Edges{{0, 1, 2}, {1, 2, 2}, {2, 3, 2}, {0, 4, 2}};
  FavouriteChildren F = solveFavouriteChildren({1, 1, 1, 1, 1}, Edges,
                                               {0, 1, 2, 3, 4}, 0.5, 1000);
  EXPECT_EQ(F.LPNodes, 3u);
  EXPECT_EQ(F.LPEdges, 2u);
  EXPECT_EQ(F.Child[0], 1u);
  EXPECT_NEAR(F.RelaxedMakespan, 4.0, 1e-6);
}

// Two forks 0 -> {1, 2} and 3 -> {4, 5}, joined by 1 -> 3 and 2 -> 3,
// heavy edges 0 -> 1 and 3 -> 4. The whole LP also makes 2 -> 3 favourite
// (the path through 1 pays 10 s less on 0 -> 1); in windows of three
// nodes, the edges between the windows are no favourites.
TEST(BaechiSCTTest, WindowsAboveTheLimit) {
  std::vector<LPEdge> Edges{{0, 1, 10}, {0, 2, 1},  {1, 3, 1},
                            {2, 3, 1},  {3, 4, 10}, {3, 5, 1}};
  std::vector<uint32_t> Order{0, 1, 2, 3, 4, 5};
  std::vector<double> Time(6, 1.0);
  FavouriteChildren Whole = solveFavouriteChildren(Time, Edges, Order, 0.5, 6);
  EXPECT_EQ(Whole.NumLPs, 1u);
  EXPECT_EQ(Whole.Child,
            (std::vector<uint32_t>{1, NoUnit, 3, 4, NoUnit, NoUnit}));
  EXPECT_NEAR(Whole.RelaxedMakespan, 5 + 10.0 / 11, 1e-6);
  FavouriteChildren Split = solveFavouriteChildren(Time, Edges, Order, 0.5, 3);
  EXPECT_EQ(Split.NumLPs, 2u);
  EXPECT_EQ(Split.Child,
            (std::vector<uint32_t>{1, NoUnit, NoUnit, 4, NoUnit, NoUnit}));
}

// threshold=0 keeps only edges the LP makes fully favourite: in the fork,
// x = 1/11 on the heavy edge is not enough.
TEST(BaechiSCTTest, Threshold) {
  std::vector<LPEdge> Edges{{0, 1, 10}, {0, 2, 1}};
  FavouriteChildren F =
      solveFavouriteChildren({1, 1, 1}, Edges, {0, 1, 2}, 0.0, 1000);
  EXPECT_EQ(F.Child[0], NoUnit);
}

// a (1 s) sends 4 bytes to x and 10000 bytes (5 s) to c, which the LP
// makes a's favourite child. ETF runs x (the lower unit) right after a on
// gpu:0, then c at 2 s; m-SCT's gpu:0 waits for c, which starts at 1 s,
// and x goes to gpu:1.
TEST(BaechiSCTTest, DeviceWaitsForTheFavouriteChild) {
  GraphBuilder B;
  OpId A = B.op("a", 1, {B.input("in")}, ArrayRef<int64_t>{1, 2500});
  B.op("x", 1, {B.result(A, 0)});
  B.op("c", 1, {B.result(A, 1)});
  Cluster C = makeCluster(2, 1 << 20, 2000);
  PlacementProblem P = buildProblem(B.G, C);
  Schedule ETF = schedule(P);
  EXPECT_EQ(ETF.UnitDevice, (std::vector<uint32_t>{0, 0, 0}));
  EXPECT_DOUBLE_EQ(ETF.Start[P.getGraph().lookupOp("c")], 2.0);

  FavouriteChildren F = computeUnitFavourites(P, 0.5, 1000);
  EXPECT_EQ(F.Child[unitOf(P, "a")], unitOf(P, "c"));
  Schedule SCT = schedule(P, "auto", F.Child);
  EXPECT_EQ(SCT.UnitDevice, (std::vector<uint32_t>{0, 1, 0}));
  EXPECT_DOUBLE_EQ(SCT.Start[P.getGraph().lookupOp("c")], 1.0);
  EXPECT_DOUBLE_EQ(SCT.Makespan, 2.002);
}

//===----------------------------------------------------------------------===//
// m-TOPO
//===----------------------------------------------------------------------===//

/// A chain of four ops of 1 s, each keeping 1000 bytes (and its 4-byte
/// result; the first also its 4-byte input).
Graph makeHeavyChain() {
  GraphBuilder B;
  TensorId V = B.input("x");
  for (StringRef Name : {"a", "b", "c", "d"}) {
    OpId O = B.op(Name, 1, {V});
    B.persistent(O, 1000);
    V = B.result(O);
  }
  B.G.addOutput(V);
  return std::move(B.G);
}

// Memory 4020 bytes in all, the largest unit 1008: Baechi's cap is
// 4020 / 2 + 1008 = 3018 per device (and compute 4 / 2 + 1 = 3 s): a, b, c
// (3016 bytes, 3 s) fill gpu:0, d goes to gpu:1.
TEST(BaechiTopoTest, FillsUpToTheCap) {
  Graph G = makeHeavyChain();
  Cluster C = makeCluster(2);
  PlacementProblem P = buildProblem(G, C);
  EXPECT_EQ(topo(P, /*Uniform=*/true), (std::vector<uint32_t>{0, 0, 0, 1}));
  // Without caps, gpu:0 takes everything it can hold.
  EXPECT_EQ(topo(P, /*Uniform=*/false), (std::vector<uint32_t>{0, 0, 0, 0}));
}

// Under the static estimate: with 2100 bytes per device, gpu:0 holds a
// and b; c needs 1004 bytes and a 4-byte copy of b's result on gpu:1, and
// d fits beside it. With 2011 bytes, gpu:0 holds a, gpu:1 b (and a copy of
// a's result), and c fits on neither. Under the schedule estimate a's
// result and its copy are gone once b ran: c fits on gpu:1, and d (1004
// bytes of its own and a copy of c's result) is the op that fits nowhere.
TEST(BaechiTopoTest, CapacityAndCopies) {
  Graph G = makeHeavyChain();
  Cluster C = makeCluster(2, 2100);
  PlacementProblem P = buildProblem(G, C);
  EXPECT_EQ(topo(P, /*Uniform=*/false, "auto", MemoryEstimate::Static),
            (std::vector<uint32_t>{0, 0, 1, 1}));
  Cluster Tight = makeCluster(2, 2011);
  PlacementProblem PT = buildProblem(G, Tight);
  Expected<std::vector<uint32_t>> R =
      runPlacer(PT, "m-topo", {{"uniform", "false"}, {"memory", "static"}});
  ASSERT_FALSE(bool(R));
  EXPECT_EQ(collectErrors(R.takeError())[0].Message,
            "place{algo=m-topo}: no device can hold op 'c': it needs 1004 B, "
            "and at most 1003 B is free (on gpu:1, of its 2.0 KiB); to "
            "fit, try place{algo=anneal} (it searches with the simulator's "
            "memory), a smaller batch (import-onnx{batch=N}) or a cluster "
            "with more memory");
  R = runPlacer(PT, "m-topo", {{"uniform", "false"}});
  ASSERT_FALSE(bool(R));
  EXPECT_EQ(collectErrors(R.takeError())[0].Loc.Node, "d");
}

// The CPU's fair share follows its speed: a tenth of a GPU's.
TEST(BaechiTopoTest, SharesFollowSpeed) {
  GraphBuilder B;
  TensorId V = B.input("x");
  for (unsigned I = 0; I != 21; ++I) {
    OpId O = B.op("op" + std::to_string(I), 1, {V});
    V = B.result(O);
  }
  Cluster C = makeCluster(1, 1 << 20, 1000, /*WithCPU=*/true);
  PlacementProblem P = buildProblem(B.G, C);
  // Shares 10/11 and 1/11 of the work: 19.09 + 1 s on the GPU (20 ops),
  // the last op on the CPU.
  std::vector<uint32_t> Placement = topo(P, true, "all");
  EXPECT_EQ(std::count(Placement.begin(), Placement.end(), 0u), 20);
  EXPECT_EQ(Placement.back(), 1u);
  // devices=auto: the CPU only takes what fits on no GPU.
  Placement = topo(P, true, "auto");
  EXPECT_EQ(std::count(Placement.begin(), Placement.end(), 0u), 21);
}

//===----------------------------------------------------------------------===//
// All three
//===----------------------------------------------------------------------===//

// On random graphs with tight memory, each placer returns the same
// placement twice under either estimate, and under the static one it fits
// the static model (or the placer fails).
TEST(BaechiTest, DeterministicAndWithinMemory) {
  Cluster C = makeCluster(3, 160 << 10, 1e4);
  unsigned Placed = 0;
  for (uint64_t Seed = 0; Seed != 24; ++Seed) {
    Graph G = makeRandomGraph(Seed / 2, 10 + Seed / 2 * 5);
    PlacementProblem P = buildProblem(G, C);
    PlacementProblem P2 = buildProblem(G, C);
    bool Static = Seed % 2;
    for (StringRef Algo : {"m-topo", "m-etf", "m-sct"}) {
      std::vector<std::pair<std::string, std::string>> Opts{
          {"memory", Static ? "static" : "schedule"}};
      Expected<std::vector<uint32_t>> A = runPlacer(P, Algo, Opts);
      Expected<std::vector<uint32_t>> B = runPlacer(P2, Algo, Opts);
      ASSERT_EQ(bool(A), bool(B));
      if (!A) {
        llvm::consumeError(A.takeError());
        llvm::consumeError(B.takeError());
        continue;
      }
      EXPECT_EQ(*A, *B) << Algo.str() << " on graph " << Seed;
      ++Placed;
      if (!Static)
        continue;
      std::vector<uint64_t> Used(C.getNumDevices(), 0);
      for (unsigned U = 0; U != P.getNumUnits(); ++U)
        Used[(*A)[U]] += P.getUnitMemory(U);
      for (unsigned Dev = 0; Dev != C.getNumDevices(); ++Dev)
        EXPECT_LE(Used[Dev], P.getDeviceCapacity(Dev))
            << Algo.str() << " on graph " << Seed;
    }
  }
  EXPECT_GT(Placed, 40u);
}

// A chain x -> a -> b -> ... -> f of 1000-byte results on two GPUs of
// 2500 bytes and a CPU. The static estimate holds every result all step
// (6004 bytes), so the chain spills to the CPU; Baechi's schedule estimate
// frees each result once its reader ran, and the GPUs hold it all.
TEST(BaechiTest, ScheduleEstimateFreesResults) {
  GraphBuilder B;
  TensorId V = B.input("x");
  for (StringRef Name : {"a", "b", "c", "d", "e", "f"})
    V = B.result(B.op(Name, 1, {V}, 250));
  B.G.addOutput(V);
  Cluster C = makeCluster(2, 2500, 1000, /*WithCPU=*/true);
  PlacementProblem P = buildProblem(B.G, C);
  for (StringRef Algo : {"m-topo", "m-etf", "m-sct"}) {
    Expected<std::vector<uint32_t>> Live = runPlacer(P, Algo);
    ASSERT_TRUE(bool(Live)) << describe(collectErrors(Live.takeError()));
    EXPECT_EQ(llvm::count(*Live, 2u), 0) << Algo.str();
    Expected<std::vector<uint32_t>> Static =
        runPlacer(P, Algo, {{"memory", "static"}});
    ASSERT_TRUE(bool(Static)) << describe(collectErrors(Static.takeError()));
    EXPECT_GT(llvm::count(*Static, 2u), 0) << Algo.str();
  }
}

// A result stays while a reader has not run: a -> b -> c -> d with d also
// reading a, 1000-byte results but d's, two GPUs of 2500 bytes. a and b go
// to gpu:0; c does not fit beside them, as a is still to be read by d
// (1004 + 1000 + 1000 bytes), and goes to gpu:1 with a copy of b. Once c
// ran, b and its copy are freed and d fits. The static estimate keeps b:
// d fits nowhere.
TEST(BaechiTest, ScheduleEstimateKeepsWhatIsStillRead) {
  GraphBuilder B;
  OpId A = B.op("a", 1, {B.input("x")}, 250);
  OpId Bop = B.op("b", 1, {B.result(A)}, 250);
  OpId Cop = B.op("c", 1, {B.result(Bop)}, 250);
  B.G.addOutput(B.result(B.op("d", 1, {B.result(A), B.result(Cop)})));
  Cluster C = makeCluster(2, 2500);
  PlacementProblem P = buildProblem(B.G, C);
  for (StringRef Algo : {"m-topo", "m-etf", "m-sct"}) {
    std::vector<std::pair<std::string, std::string>> Opts{{"devices", "gpus"}};
    if (Algo == "m-topo")
      Opts.emplace_back("uniform", "false");
    Expected<std::vector<uint32_t>> R = runPlacer(P, Algo, Opts);
    ASSERT_TRUE(bool(R)) << describe(collectErrors(R.takeError()));
    EXPECT_EQ(deviceOf(P, *R, "a"), 0u) << Algo.str();
    EXPECT_EQ(deviceOf(P, *R, "b"), 0u) << Algo.str();
    EXPECT_EQ(deviceOf(P, *R, "c"), 1u) << Algo.str();
    Opts.emplace_back("memory", "static");
    Expected<std::vector<uint32_t>> S = runPlacer(P, Algo, Opts);
    ASSERT_FALSE(bool(S)) << Algo.str();
    EXPECT_EQ(collectErrors(S.takeError())[0].Loc.Node, "d");
  }
}

// Scheduled op by op, a unit's later op takes its result when it runs, on
// the unit's device: groups {a, d}, {b}, {c} on one GPU of 2500 bytes, d
// reading b and c (1200 bytes each, held until d ran) and making 1000
// bytes. Each unit fits when it is placed, but d does not fit when it runs.
// The placer then schedules with units taken whole, then with the static
// estimate: {a, d} takes 1008 bytes and copies of the 2400 bytes d reads
// from units not placed yet, and fits nowhere at a, as under
// memory=static.
TEST(BaechiETFTest, LaterOpOfAPlacedUnitThatDoesNotFit) {
  GraphBuilder B;
  OpId A = B.op("a", 1, {B.input("x")});
  OpId Bop = B.op("b", 1, {B.result(A)}, 300);
  OpId Cop = B.op("c", 1, {B.result(Bop)}, 300);
  OpId Dop = B.op("d", 1, {B.result(Bop), B.result(Cop)}, 250);
  B.G.addOutput(B.result(Dop));
  for (auto [O, Group] : {std::pair{A, 0}, {Bop, 1}, {Cop, 2}, {Dop, 0}})
    B.G.getOp(O).Annotations.set("group", Attribute::getInt(Group));
  Cluster C = makeCluster(1, 2500);
  PlacementProblem P = buildProblem(B.G, C);
  ASSERT_EQ(P.getNumUnits(), 3u);
  for (StringRef Algo : {"m-etf", "m-sct"}) {
    Expected<std::vector<uint32_t>> R = runPlacer(P, Algo);
    ASSERT_FALSE(bool(R)) << Algo.str();
    std::vector<Diag> Diags = collectErrors(R.takeError());
    ASSERT_EQ(Diags.size(), 1u);
    Expected<std::vector<uint32_t>> S =
        runPlacer(P, Algo, {{"memory", "static"}});
    ASSERT_FALSE(bool(S));
    std::vector<Diag> Static = collectErrors(S.takeError());
    ASSERT_EQ(Static.size(), 1u);
    EXPECT_EQ(Diags[0].Loc.Node, "a");
    EXPECT_EQ(Diags[0].Message, Static[0].Message);
  }
  // With room for {a, d} and its copies, the schedule keeps all three on
  // the GPU.
  Cluster Roomy = makeCluster(1, 3600);
  PlacementProblem PR = buildProblem(B.G, Roomy);
  for (StringRef Algo : {"m-etf", "m-sct"}) {
    Expected<std::vector<uint32_t>> R = runPlacer(PR, Algo);
    ASSERT_TRUE(bool(R)) << describe(collectErrors(R.takeError()));
    EXPECT_EQ(*R, (std::vector<uint32_t>{0, 0, 0}));
  }
}

// memory= takes schedule or static.
TEST(BaechiTest, MemoryOption) {
  GraphBuilder B;
  B.G.addOutput(B.result(B.op("a", 1, {B.input("x")})));
  Cluster C = makeCluster(2);
  PlacementProblem P = buildProblem(B.G, C);
  for (StringRef Algo : {"m-topo", "m-etf", "m-sct"}) {
    Expected<std::vector<uint32_t>> R =
        runPlacer(P, Algo, {{"memory", "peak"}});
    ASSERT_FALSE(bool(R));
    EXPECT_EQ(collectErrors(R.takeError())[0].Message,
              "place{algo=" + Algo.str() +
                  "}: memory must be schedule or static, not 'peak'");
  }
}

// The list schedule is a valid schedule: every op starts after its inputs
// are on its device and devices run one op at a time.
TEST(BaechiTest, SchedulesAreValid) {
  Cluster C = makeCluster(3, 1 << 20, 1e4);
  for (uint64_t Seed = 0; Seed != 8; ++Seed) {
    Graph G = makeRandomGraph(50 + Seed, 40);
    PlacementProblem P = buildProblem(G, C);
    FavouriteChildren F = computeUnitFavourites(P, 0.5, 1000);
    for (bool SCT : {false, true}) {
      Schedule S = schedule(
          P, "auto", SCT ? ArrayRef<uint32_t>(F.Child) : ArrayRef<uint32_t>());
      const Graph &Gr = P.getGraph();
      for (OpId O = 0; O != Gr.getNumOps(); ++O) {
        unsigned Dev = S.UnitDevice[P.getUnitOf(O)];
        for (TensorId T : Gr.getOp(O).Operands) {
          OpId From = Gr.getTensor(T).Producer;
          if (From == NoId)
            continue;
          unsigned FromDev = S.UnitDevice[P.getUnitOf(From)];
          double Earliest =
              S.End[From] +
              C.getTransferTime(FromDev, Dev,
                                *Gr.getTensor(T).Type.getSizeInBytes());
          EXPECT_GE(S.Start[O], Earliest - 1e-9) << Gr.getOp(O).Name.str();
        }
        for (OpId Other = 0; Other != O; ++Other) {
          if (S.UnitDevice[P.getUnitOf(Other)] != Dev)
            continue;
          EXPECT_TRUE(S.End[Other] <= S.Start[O] + 1e-9 ||
                      S.End[O] <= S.Start[Other] + 1e-9);
        }
      }
    }
  }
}

} // namespace
