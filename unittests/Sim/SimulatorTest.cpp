//===- SimulatorTest.cpp - Hand-computed simulator timelines --------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/Sim/Simulator.h"

#include "DiagnosticsTestUtil.h"
#include "TestGraphs.h"

#include "gtest/gtest.h"

using namespace dp;
using namespace dp::test;
using llvm::ArrayRef;
using llvm::Expected;
using llvm::StringRef;

namespace {

/// \p NumDevices devices of one type "t" (1 MiB each unless said
/// otherwise): two are joined by one link of \p LinkBandwidth bytes/s and
/// \p Latency s; more hang off one switch, a link each.
Cluster makeCluster(double LinkBandwidth, double Latency = 0,
                    uint64_t Memory = 1 << 20, unsigned NumDevices = 2) {
  DeviceType T;
  T.Name = "t";
  T.PeakFlops[unsigned(DTypeKind::F32)] = 1e12;
  T.MemoryBandwidth = 1e11;
  T.MemoryBytes = Memory;
  std::vector<Device> Devs;
  for (unsigned I = 0; I != NumDevices; ++I)
    Devs.push_back({"g" + std::to_string(I), 0});
  std::vector<Link> Links;
  if (NumDevices == 2) {
    Links.push_back({"l", 0, 1, LinkBandwidth, Latency});
    return cantFail(Cluster::create("test", {T}, Devs, {}, Links));
  }
  for (unsigned I = 0; I != NumDevices; ++I)
    Links.push_back({"l" + std::to_string(I), I, NumDevices, LinkBandwidth,
                     Latency});
  return cantFail(Cluster::create("test", {T}, Devs, {"sw"}, Links));
}

struct SimRun {
  SimResult R;
  void simulate(const Graph &G, const Cluster &C,
                std::vector<uint32_t> Placement) {
    Expected<SimGraph> SG = SimGraph::build(G, C);
    ASSERT_TRUE(bool(SG)) << describe(collectErrors(SG.takeError()));
    Simulator Sim(*SG);
    Sim.run(Placement, R, /*RecordTimeline=*/true);
  }
};

TEST(SimulatorTest, ChainOnOneDevice) {
  GraphBuilder B;
  TensorId X = B.input("x", 1);
  OpId A = B.op("a", 1, {X}, {1});
  OpId Bo = B.op("b", 2, {B.result(A)}, {1});
  OpId Co = B.op("c", 3, {B.result(Bo)}, {1});
  B.G.addOutput(B.result(Co));
  Cluster C = makeCluster(1e9);
  SimRun Sim;
  Sim.simulate(B.G, C, {0, 0, 0});
  EXPECT_DOUBLE_EQ(Sim.R.StepTime, 6);
  EXPECT_DOUBLE_EQ(Sim.R.Ops[Bo].Start, 1);
  EXPECT_DOUBLE_EQ(Sim.R.Ops[Co].Start, 3);
  EXPECT_DOUBLE_EQ(Sim.R.BusyTime[0], 6);
  EXPECT_DOUBLE_EQ(Sim.R.BusyTime[1], 0);
  EXPECT_EQ(Sim.R.NumTransfers, 0u);
  EXPECT_EQ(Sim.R.CriticalPath, (std::vector<uint32_t>{A, Bo, Co}));
}

TEST(SimulatorTest, ChainAcrossDevicesWaitsForTheTransfer) {
  GraphBuilder B;
  TensorId X = B.input("x", 1);
  OpId A = B.op("a", 1, {X}, {250}); // 1000 bytes
  OpId Bo = B.op("b", 2, {B.result(A)}, {1});
  B.G.addOutput(B.result(Bo));
  Cluster C = makeCluster(/*LinkBandwidth=*/1000, /*Latency=*/0.5);
  SimRun Sim;
  Sim.simulate(B.G, C, {0, 1});
  // 1 s compute, 0.5 s latency + 1000 B / 1000 B/s, then 2 s.
  EXPECT_DOUBLE_EQ(Sim.R.Ops[Bo].Start, 2.5);
  EXPECT_DOUBLE_EQ(Sim.R.StepTime, 4.5);
  EXPECT_EQ(Sim.R.NumTransfers, 1u);
  EXPECT_EQ(Sim.R.TransferBytes, 1000u);
  EXPECT_EQ(Sim.R.ChannelBytes[0], 1000u); // g0 -> g1
  EXPECT_EQ(Sim.R.ChannelBytes[1], 0u);    // g1 -> g0
}

TEST(SimulatorTest, ForkJoinRunsBranchesInParallel) {
  GraphBuilder B;
  TensorId X = B.input("x", 1);
  OpId A = B.op("a", 1, {X}, {1});
  OpId L = B.op("left", 2, {B.result(A)}, {1});
  OpId R = B.op("right", 3, {B.result(A)}, {1});
  OpId J = B.op("join", 1, {B.result(L), B.result(R)}, {1});
  B.G.addOutput(B.result(J));
  // 4-byte tensors over a 4 B/s link: each transfer takes 1 s.
  Cluster C = makeCluster(4);
  SimRun Sim;
  Sim.simulate(B.G, C, {0, 0, 1, 0});
  // a 0-1; left 1-3 on g0; right waits for x's result: 1-2 transfer, 2-5;
  // its result comes back 5-6; join 6-7.
  EXPECT_DOUBLE_EQ(Sim.R.Ops[L].End, 3);
  EXPECT_DOUBLE_EQ(Sim.R.Ops[R].Start, 2);
  EXPECT_DOUBLE_EQ(Sim.R.Ops[R].End, 5);
  EXPECT_DOUBLE_EQ(Sim.R.Ops[J].Start, 6);
  EXPECT_DOUBLE_EQ(Sim.R.StepTime, 7);
  EXPECT_EQ(Sim.R.CriticalPath, (std::vector<uint32_t>{A, R, J}));

  // The same on one device: the branches serialize in FIFO order.
  SimRun One;
  One.simulate(B.G, C, {0, 0, 0, 0});
  EXPECT_DOUBLE_EQ(One.R.Ops[L].Start, 1);
  EXPECT_DOUBLE_EQ(One.R.Ops[R].Start, 3);
  EXPECT_DOUBLE_EQ(One.R.StepTime, 7);
}

TEST(SimulatorTest, TransfersContendOnOneLink) {
  GraphBuilder B;
  TensorId X = B.input("x", 1);
  OpId A = B.op("a", 1, {X}, {250, 250}); // two 1000-byte results
  OpId P = B.op("p", 1, {B.result(A, 0)}, {1});
  OpId Q = B.op("q", 1, {B.result(A, 1)}, {1});
  B.G.addOutput(B.result(P));
  B.G.addOutput(B.result(Q));
  Cluster C = makeCluster(1000);
  SimRun Sim;
  Sim.simulate(B.G, C, {0, 1, 1});
  // Both transfers are requested at 1 s; the link serves them in turn.
  ASSERT_EQ(Sim.R.Transfers.size(), 2u);
  EXPECT_DOUBLE_EQ(Sim.R.Transfers[0].Start, 1);
  EXPECT_DOUBLE_EQ(Sim.R.Transfers[0].End, 2);
  EXPECT_DOUBLE_EQ(Sim.R.Transfers[1].Start, 2);
  EXPECT_DOUBLE_EQ(Sim.R.Transfers[1].End, 3);
  EXPECT_DOUBLE_EQ(Sim.R.Ops[P].Start, 2);
  EXPECT_DOUBLE_EQ(Sim.R.Ops[Q].Start, 3);
  EXPECT_DOUBLE_EQ(Sim.R.StepTime, 4);
}

TEST(SimulatorTest, OppositeDirectionsDoNotContend) {
  GraphBuilder B;
  TensorId X = B.input("x", 250);
  TensorId Y = B.input("y", 250);
  OpId A = B.op("a", 1, {X}, {250});
  OpId Bo = B.op("b", 1, {Y}, {250});
  OpId P = B.op("p", 1, {B.result(A)}, {1});  // on g1, reads from g0
  OpId Q = B.op("q", 1, {B.result(Bo)}, {1}); // on g0, reads from g1
  B.G.addOutput(B.result(P));
  B.G.addOutput(B.result(Q));
  Cluster C = makeCluster(1000);
  SimRun Sim;
  Sim.simulate(B.G, C, {0, 1, 1, 0});
  EXPECT_DOUBLE_EQ(Sim.R.Ops[P].Start, 2);
  EXPECT_DOUBLE_EQ(Sim.R.Ops[Q].Start, 2);
  EXPECT_DOUBLE_EQ(Sim.R.StepTime, 3);
}

TEST(SimulatorTest, ATensorIsSentToADeviceOnce) {
  GraphBuilder B;
  TensorId X = B.input("x", 1);
  OpId A = B.op("a", 1, {X}, {250});
  OpId P = B.op("p", 1, {B.result(A)}, {1});
  OpId Q = B.op("q", 1, {B.result(A)}, {1});
  B.G.addOutput(B.result(P));
  B.G.addOutput(B.result(Q));
  Cluster C = makeCluster(1000);
  SimRun Sim;
  Sim.simulate(B.G, C, {0, 1, 1});
  EXPECT_EQ(Sim.R.NumTransfers, 1u);
  EXPECT_EQ(Sim.R.TransferBytes, 1000u);
  EXPECT_DOUBLE_EQ(Sim.R.Ops[P].Start, 2);
  EXPECT_DOUBLE_EQ(Sim.R.Ops[Q].Start, 3);
  EXPECT_DOUBLE_EQ(Sim.R.StepTime, 4);
}

TEST(SimulatorTest, WeightsLiveWithTheirFirstReaderAndAreSentOnce) {
  GraphBuilder B;
  TensorId W = B.weight("w", 250);
  OpId P = B.op("p", 1, {W}, {1});
  OpId Q = B.op("q", 1, {W}, {1});
  OpId R = B.op("r", 1, {W}, {1});
  for (OpId O : {P, Q, R})
    B.G.addOutput(B.result(O));
  Cluster C = makeCluster(1000);
  SimRun Sim;
  Sim.simulate(B.G, C, {1, 0, 0});
  // w lives on g1 (p reads it first); g0 receives one copy at 0-1 s.
  EXPECT_EQ(Sim.R.NumTransfers, 1u);
  EXPECT_DOUBLE_EQ(Sim.R.Ops[Q].Start, 1);
  EXPECT_DOUBLE_EQ(Sim.R.Ops[R].Start, 2);
  // g1 keeps w (1000 B) and p's result (4 B); g0 holds the copy until r
  // is done, plus q's and r's results.
  EXPECT_EQ(Sim.R.PeakBytes[1], 1004u);
  EXPECT_EQ(Sim.R.PeakBytes[0], 1008u);
}

TEST(SimulatorTest, MemoryIsFreedAfterTheLastReader) {
  GraphBuilder B;
  TensorId X = B.input("x", 25);                   // 100 B, kept
  OpId A = B.op("a", 1, {X}, {250});               // 1000 B
  OpId Bo = B.op("b", 1, {B.result(A)}, {500});    // 2000 B
  OpId Co = B.op("c", 1, {B.result(Bo)}, {25});    // 100 B, an output
  B.G.addOutput(B.result(Co));
  Cluster C = makeCluster(1e9);
  SimRun Sim;
  Sim.simulate(B.G, C, {0, 0, 0});
  // While b runs: x + a's result + b's result. a's result is freed when b
  // ends, so c starts with x + 2000 + 100.
  EXPECT_EQ(Sim.R.PeakBytes[0], 100u + 1000 + 2000);
  EXPECT_FALSE(Sim.R.OOM);
}

TEST(SimulatorTest, PersistentAndWorkspaceBytesCount) {
  GraphBuilder B;
  TensorId X = B.input("x", 25);
  OpId A = B.op("a", 1, {X}, {25});
  B.G.getOp(A).Annotations.set("persistent_bytes", Attribute::getInt(500));
  B.G.getOp(A).Annotations.set("workspace_bytes", Attribute::getInt(300));
  B.G.addOutput(B.result(A));
  Cluster C = makeCluster(1e9);
  SimRun Sim;
  Sim.simulate(B.G, C, {0});
  EXPECT_EQ(Sim.R.PeakBytes[0], 500u + 100 + 100 + 300);
}

TEST(SimulatorTest, OutOfMemoryNamesDeviceOpAndExcess) {
  GraphBuilder B;
  TensorId X = B.input("x", 25);                // 100 B
  OpId A = B.op("a", 1, {X}, {250});            // 1000 B
  OpId Bo = B.op("b", 1, {B.result(A)}, {500}); // 2000 B
  B.G.addOutput(B.result(Bo));
  Cluster C = makeCluster(1e9, 0, /*Memory=*/2500);
  SimRun Sim;
  Sim.simulate(B.G, C, {0, 0});
  EXPECT_TRUE(Sim.R.OOM);
  EXPECT_EQ(Sim.R.OOMDevice, 0u);
  EXPECT_EQ(Sim.R.OOMOp, Bo);
  EXPECT_EQ(Sim.R.OOMBytesOver, 100u + 1000 + 2000 - 2500);
  // Split across the devices, g0 holds 1100 B, but g1 holds b's result
  // and its copy of a's: 3000 B, still too much.
  SimRun Split;
  Split.simulate(B.G, C, {0, 1});
  EXPECT_TRUE(Split.R.OOM);
  EXPECT_EQ(Split.R.OOMDevice, 1u);
  EXPECT_EQ(Split.R.OOMBytesOver, 1000u + 2000 - 2500);
}

TEST(SimulatorTest, MissingCostsAreLocatedErrors) {
  GraphBuilder B;
  TensorId X = B.input("x", 1);
  OpId A = B.op("a", 1, {X}, {1});
  B.G.getOp(A).Annotations.erase("time.t");
  B.G.addOutput(B.result(A));
  Cluster C = makeCluster(1e9);
  std::vector<Diag> Diags = collectErrors(SimGraph::build(B.G, C).takeError());
  ASSERT_EQ(Diags.size(), 1u);
  EXPECT_EQ(Diags[0].Loc.Node, "a");
  EXPECT_NE(Diags[0].Message.find("time.t"), std::string::npos);
}

TEST(SimulatorTest, LowerBounds) {
  GraphBuilder B;
  TensorId X = B.input("x", 1);
  OpId A = B.op("a", 1, {X}, {1});
  OpId L = B.op("left", 2, {B.result(A)}, {1});
  OpId R = B.op("right", 3, {B.result(A)}, {1});
  OpId J = B.op("join", 1, {B.result(L), B.result(R)}, {1});
  B.G.addOutput(B.result(J));
  Cluster C = makeCluster(1e9);
  Expected<SimGraph> SG = SimGraph::build(B.G, C);
  ASSERT_TRUE(bool(SG));
  LowerBounds LB = computeLowerBounds(*SG);
  EXPECT_DOUBLE_EQ(LB.CriticalPath, 5); // a, right, join
  EXPECT_DOUBLE_EQ(LB.Work, 7.0 / 2);
  EXPECT_DOUBLE_EQ(LB.best(), 5);
  // No placement beats the bound.
  SimRun Sim;
  Sim.simulate(B.G, C, {0, 0, 1, 0});
  EXPECT_GE(Sim.R.StepTime, LB.best());
}

/// Three devices behind a switch; g0 and g1 share execution resources:
/// either runs at half speed while both are busy.
Cluster makeSharedCluster() {
  Cluster Plain = makeCluster(1e9, 0, 1 << 20, /*NumDevices=*/3);
  SharedGroup Grp;
  Grp.Devices = {0, 1};
  Grp.Speed = {1, 0.5};
  return cantFail(Cluster::create(
      "shared", Plain.getTypes().vec(), Plain.getDevices().vec(),
      Plain.getSwitches().vec(), Plain.getLinks().vec(), {Grp}));
}

/// Two independent ops, a (\p TimeA s) and b (\p TimeB s), each reading
/// an input of its own and making a graph output.
void addFork(GraphBuilder &B, double TimeA, double TimeB, OpId &A, OpId &Bo) {
  A = B.op("a", TimeA, {B.input("x", 1)}, {1});
  Bo = B.op("b", TimeB, {B.input("y", 1)}, {1});
  B.G.addOutput(B.result(A));
  B.G.addOutput(B.result(Bo));
}

TEST(SimulatorTest, SharedDevicesSlowEachOtherWhileBothAreBusy) {
  GraphBuilder B;
  OpId A, Bo;
  addFork(B, 2, 1, A, Bo);
  Cluster C = makeSharedCluster();
  SimRun Shared;
  Shared.simulate(B.G, C, {0, 1});
  // Both at half speed until b's 1 s of work is done at t = 2; a has done
  // 1 s of its 2 by then and does the rest alone.
  EXPECT_DOUBLE_EQ(Shared.R.Ops[Bo].End, 2);
  EXPECT_DOUBLE_EQ(Shared.R.Ops[A].End, 3);
  EXPECT_DOUBLE_EQ(Shared.R.StepTime, 3);
  EXPECT_DOUBLE_EQ(Shared.R.BusyTime[0], 3);
  EXPECT_DOUBLE_EQ(Shared.R.BusyTime[1], 2);
  // g2 shares with nobody.
  SimRun Apart;
  Apart.simulate(B.G, C, {0, 2});
  EXPECT_DOUBLE_EQ(Apart.R.Ops[Bo].End, 1);
  EXPECT_DOUBLE_EQ(Apart.R.StepTime, 2);
}

TEST(SimulatorTest, AnOpsSharedTimeIsItsRateUnderContention) {
  // a (2 s alone) was measured at 2.5 s with the group busy: it keeps
  // 2 / 2.5 = 0.8 of its speed while b runs, where b, with no shared
  // time, keeps the group's 0.5. b's 1 s of work ends at t = 2; a has
  // done 1.6 s of its 2 by then and does the rest alone.
  GraphBuilder B;
  OpId A, Bo;
  addFork(B, 2, 1, A, Bo);
  B.G.getOp(A).Annotations.set("time_shared.t", Attribute::getFloat(2.5));
  Cluster C = makeSharedCluster();
  SimRun Shared;
  Shared.simulate(B.G, C, {0, 1});
  EXPECT_DOUBLE_EQ(Shared.R.Ops[Bo].End, 2);
  EXPECT_DOUBLE_EQ(Shared.R.Ops[A].End, 2.4);
  // A shared time below the op's own is drift between the profiles: the
  // op runs at full speed under contention, never faster.
  B.G.getOp(A).Annotations.set("time_shared.t", Attribute::getFloat(1.5));
  SimRun Faster;
  Faster.simulate(B.G, C, {0, 1});
  EXPECT_DOUBLE_EQ(Faster.R.Ops[A].End, 2);
  EXPECT_DOUBLE_EQ(Faster.R.Ops[Bo].End, 2);
  // Off the group the shared time changes nothing.
  SimRun Apart;
  Apart.simulate(B.G, C, {0, 2});
  EXPECT_DOUBLE_EQ(Apart.R.Ops[A].End, 2);
}

TEST(SimulatorTest, BoundsHoldForOpsThatLoseLessThanTheirGroup) {
  // The group keeps half its speed with both busy, but a and b were
  // measured unslowed under contention: together they take 1 s, which
  // the group's capacity alone (one device's worth) would bound at 2 s.
  GraphBuilder B;
  OpId A, Bo;
  addFork(B, 1, 1, A, Bo);
  for (OpId O : {A, Bo})
    B.G.getOp(O).Annotations.set("time_shared.t", Attribute::getFloat(1));
  Cluster C = makeSharedCluster();
  Expected<SimGraph> SG = SimGraph::build(B.G, C);
  ASSERT_TRUE(bool(SG)) << describe(collectErrors(SG.takeError()));
  EXPECT_DOUBLE_EQ(SG->getGroupCapacity(0), 2);
  SimResult R;
  Simulator(*SG).run({0, 1}, R);
  EXPECT_DOUBLE_EQ(R.StepTime, 1);
  LowerBounds LB = computeLowerBounds(*SG);
  EXPECT_LE(LB.Work, R.StepTime);
  EXPECT_LE(LB.HeterogeneousWork, R.StepTime * (1 + 1e-9));
  EXPECT_LE(LB.HeadWorkTail, R.StepTime * (1 + 1e-9));
}

TEST(SimulatorTest, ASharedDeviceStillRunsOneOpAtATime) {
  // a's result wakes two readers on its own device: they run one after the
  // other, alone in the group, as on any device.
  GraphBuilder B;
  OpId A = B.op("a", 1, {B.input("x", 1)}, {1});
  OpId L = B.op("left", 2, {B.result(A)}, {1});
  OpId R = B.op("right", 3, {B.result(A)}, {1});
  OpId J = B.op("join", 1, {B.result(L), B.result(R)}, {1});
  B.G.addOutput(B.result(J));
  Cluster C = makeSharedCluster();
  SimRun Sim;
  Sim.simulate(B.G, C, {0, 0, 0, 0});
  EXPECT_DOUBLE_EQ(Sim.R.Ops[L].Start, 1);
  EXPECT_DOUBLE_EQ(Sim.R.Ops[R].Start, 3);
  EXPECT_DOUBLE_EQ(Sim.R.Ops[J].Start, 6);
  EXPECT_DOUBLE_EQ(Sim.R.StepTime, 7);
  EXPECT_DOUBLE_EQ(Sim.R.BusyTime[0], 7);
}

TEST(SimulatorTest, ASharedOpsEndMovesEachTimeTheGroupChanges) {
  GraphBuilder B;
  OpId A = B.op("a", 3, {B.input("x", 1)}, {1});
  OpId B1 = B.op("b1", 1, {B.input("y", 1)}, {1});
  OpId B2 = B.op("b2", 1, {B.result(B1)}, {1});
  B.G.addOutput(B.result(A));
  B.G.addOutput(B.result(B2));
  Cluster C = makeSharedCluster();
  SimRun Sim;
  Sim.simulate(B.G, C, {0, 1, 1});
  // b1 0-2 and b2 2-4 at half speed; a has done 2 s of work at t = 4 (its
  // end moved to 4, then 6, then 5: the older end events are stale).
  EXPECT_DOUBLE_EQ(Sim.R.Ops[B1].End, 2);
  EXPECT_DOUBLE_EQ(Sim.R.Ops[B2].Start, 2);
  EXPECT_DOUBLE_EQ(Sim.R.Ops[B2].End, 4);
  EXPECT_DOUBLE_EQ(Sim.R.Ops[A].End, 5);
  EXPECT_DOUBLE_EQ(Sim.R.StepTime, 5);
  EXPECT_EQ(Sim.R.CriticalPath, (std::vector<uint32_t>{A}));

  // The work bound counts the group as one device's worth (2 x 0.5) and
  // g2 as one: 5 s of work over 2.
  Expected<SimGraph> SG = SimGraph::build(B.G, C);
  ASSERT_TRUE(bool(SG));
  EXPECT_DOUBLE_EQ(computeLowerBounds(*SG).Work, 5.0 / 2);
  EXPECT_GE(Sim.R.StepTime, computeLowerBounds(*SG).best());
}

/// A random step: ops that read one or two earlier values (two inputs to
/// start from), with random times and result sizes, each on a random one
/// of the cluster's devices; \p Seed is the generator's state.
struct RandomStep {
  GraphBuilder B;
  std::vector<uint32_t> Placement;
};

void makeRandomStep(uint64_t &Seed, unsigned NumOps, unsigned NumDevices,
                    RandomStep &Step) {
  auto Next = [&](uint64_t N) {
    Seed = Seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return (Seed >> 33) % N;
  };
  GraphBuilder &B = Step.B;
  std::vector<TensorId> Values{B.input("x", 1), B.input("y", 64)};
  for (unsigned I = 0; I != NumOps; ++I) {
    std::vector<TensorId> Ins{Values[Next(Values.size())]};
    if (Next(2))
      Ins.push_back(Values[Next(Values.size())]);
    if (Ins.size() == 2 && Ins[0] == Ins[1])
      Ins.pop_back();
    OpId O = B.op("op" + std::to_string(I), 0.001 * (1 + Next(50)), Ins,
                  {int64_t(1 + Next(4096))});
    Values.push_back(B.result(O));
    Step.Placement.push_back(Next(NumDevices));
  }
  B.G.addOutput(Values.back());
}

/// \p Step runs the same on clusters \p A and \p B: step, peak memory,
/// transfers, busy time and every op's end.
void expectSameTimeline(const RandomStep &Step, const Cluster &A,
                        const Cluster &B, unsigned Trial) {
  SimRun RA, RB;
  RA.simulate(Step.B.G, A, Step.Placement);
  RB.simulate(Step.B.G, B, Step.Placement);
  EXPECT_DOUBLE_EQ(RA.R.StepTime, RB.R.StepTime) << "trial " << Trial;
  EXPECT_EQ(RA.R.PeakBytes, RB.R.PeakBytes) << "trial " << Trial;
  EXPECT_EQ(RA.R.NumTransfers, RB.R.NumTransfers) << "trial " << Trial;
  for (unsigned Dev = 0, E = A.getNumDevices(); Dev != E; ++Dev)
    EXPECT_NEAR(RA.R.BusyTime[Dev], RB.R.BusyTime[Dev], 1e-9)
        << "trial " << Trial;
  for (unsigned Op = 0; Op != Step.Placement.size(); ++Op)
    EXPECT_DOUBLE_EQ(RA.R.Ops[Op].End, RB.R.Ops[Op].End)
        << "trial " << Trial << " op " << Op;
}

TEST(SimulatorTest, AGroupThatNeverSlowsChangesNothing) {
  // Random DAGs and placements on three devices: a shared group of g0 and
  // g1 whose speeds are all 1 must give the timeline of no group at all.
  Cluster Plain = makeCluster(1e6, 1e-4, 1 << 30, /*NumDevices=*/3);
  SharedGroup Grp;
  Grp.Devices = {0, 1};
  Grp.Speed = {1, 1};
  Cluster Shared = cantFail(Cluster::create(
      "shared", Plain.getTypes().vec(), Plain.getDevices().vec(),
      Plain.getSwitches().vec(), Plain.getLinks().vec(), {Grp}));
  uint64_t Seed = 12345;
  for (unsigned Trial = 0; Trial != 20; ++Trial) {
    RandomStep Step;
    makeRandomStep(Seed, /*NumOps=*/60, /*NumDevices=*/3, Step);
    expectSameTimeline(Step, Plain, Shared, Trial);
  }
}

/// Two devices joined by one link whose ends do the copying: while a
/// transfer is in flight the sender keeps \p Send of its speed and the
/// receiver \p Recv.
Cluster makeCopyingCluster(double Bandwidth, double Send, double Recv,
                           double Latency = 0, uint64_t Memory = 1 << 20) {
  Cluster Plain = makeCluster(Bandwidth, Latency, Memory);
  std::vector<Link> Links = Plain.getLinks().vec();
  Links[0].SpeedWhileSending = Send;
  Links[0].SpeedWhileReceiving = Recv;
  return cantFail(Cluster::create("copying", Plain.getTypes().vec(),
                                  Plain.getDevices().vec(), {}, Links));
}

TEST(SimulatorTest, ATransferSlowsTheOpsAtItsEnds) {
  // a (1 s) on g0 makes 4 bytes that r reads on g1; s1 (2 s) runs on g0
  // after a, s2 (3 s) on g1 from the start. Over a 4 B/s link the
  // transfer runs 1-2 s: s1 keeps half its speed then, s2 a quarter.
  GraphBuilder B;
  OpId A = B.op("a", 1, {B.input("x", 1)}, {1});
  OpId S1 = B.op("s1", 2, {B.result(A)}, {1});
  OpId S2 = B.op("s2", 3, {B.input("y", 1)}, {1});
  OpId R = B.op("r", 1, {B.result(A), B.result(S2)}, {1});
  B.G.addOutput(B.result(S1));
  B.G.addOutput(B.result(R));
  SimRun Sim;
  Sim.simulate(B.G, makeCopyingCluster(4, 0.5, 0.25), {0, 0, 1, 1});
  // s1: 0.5 s of work done by t = 2, the other 1.5 s alone: ends at 3.5.
  EXPECT_DOUBLE_EQ(Sim.R.Ops[S1].Start, 1);
  EXPECT_DOUBLE_EQ(Sim.R.Ops[S1].End, 3.5);
  // s2: 1 s by t = 1, 0.25 s more by t = 2, 1.75 s alone: ends at 3.75.
  EXPECT_DOUBLE_EQ(Sim.R.Ops[S2].End, 3.75);
  EXPECT_DOUBLE_EQ(Sim.R.Ops[R].Start, 3.75);
  EXPECT_DOUBLE_EQ(Sim.R.StepTime, 4.75);
  EXPECT_DOUBLE_EQ(Sim.R.BusyTime[0], 1 + 2.5);
  EXPECT_DOUBLE_EQ(Sim.R.BusyTime[1], 3.75 + 1);

  // With a copy engine (speeds 1) the ops keep their times.
  SimRun Engine;
  Engine.simulate(B.G, makeCopyingCluster(4, 1, 1), {0, 0, 1, 1});
  EXPECT_DOUBLE_EQ(Engine.R.Ops[S1].End, 3);
  EXPECT_DOUBLE_EQ(Engine.R.Ops[S2].End, 3);
  EXPECT_DOUBLE_EQ(Engine.R.StepTime, 4);
}

TEST(SimulatorTest, AQueuedTransferSlowsItsEndsOnlyOnceItMoves) {
  // Two 4-byte tensors leave g0 for g1 at t = 1 over a 4 B/s link: the
  // second waits for the first (1-2) and moves 2-3. s (4 s) runs on g1
  // from t = 0 at half speed while either moves: 1 s by t = 1, 1 s more
  // by t = 3, the last 2 s alone.
  GraphBuilder B;
  OpId A = B.op("a", 1, {B.input("x", 1)}, {1, 1});
  OpId S = B.op("s", 4, {B.input("y", 1)}, {1});
  OpId R1 = B.op("r1", 1, {B.result(A, 0), B.result(S)}, {1});
  OpId R2 = B.op("r2", 1, {B.result(A, 1)}, {1});
  B.G.addOutput(B.result(R1));
  B.G.addOutput(B.result(R2));
  SimRun Sim;
  Sim.simulate(B.G, makeCopyingCluster(4, 1, 0.5), {0, 1, 1, 1});
  ASSERT_EQ(Sim.R.Transfers.size(), 2u);
  EXPECT_DOUBLE_EQ(Sim.R.Transfers[1].Start, 2);
  EXPECT_DOUBLE_EQ(Sim.R.Ops[S].End, 5);
}

TEST(SimulatorTest, EndsThatKeepFullSpeedChangeNothing) {
  // A link whose ends keep all their speed gives the timeline of a plain
  // link, on random DAGs and placements.
  Cluster Plain = makeCluster(1e6, 1e-4, 1 << 30);
  Cluster Same = makeCopyingCluster(1e6, 1, 1, 1e-4, 1 << 30);
  uint64_t Seed = 777;
  for (unsigned Trial = 0; Trial != 10; ++Trial) {
    RandomStep Step;
    makeRandomStep(Seed, /*NumOps=*/40, /*NumDevices=*/2, Step);
    expectSameTimeline(Step, Plain, Same, Trial);
  }
}

TEST(SimulatorTest, RunsAreRepeatableWithOneSimulator) {
  GraphBuilder B;
  TensorId X = B.input("x", 1);
  OpId A = B.op("a", 1, {X}, {250});
  OpId P = B.op("p", 2, {B.result(A)}, {250});
  OpId Q = B.op("q", 3, {B.result(A), B.result(P)}, {1});
  B.G.addOutput(B.result(Q));
  Cluster C = makeCluster(1000, 0, 1 << 20, /*NumDevices=*/3);
  Expected<SimGraph> SG = SimGraph::build(B.G, C);
  ASSERT_TRUE(bool(SG));
  Simulator Sim(*SG);
  SimResult First, Again, Other;
  Sim.run({0, 1, 2}, First);
  Sim.run({0, 0, 0}, Other);
  Sim.run({0, 1, 2}, Again);
  EXPECT_EQ(First.StepTime, Again.StepTime);
  EXPECT_EQ(First.PeakBytes, Again.PeakBytes);
  EXPECT_EQ(First.ChannelBytes, Again.ChannelBytes);
  EXPECT_DOUBLE_EQ(Other.StepTime, 6);
}

} // namespace
