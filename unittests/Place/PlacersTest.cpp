//===- PlacersTest.cpp - The cpu-only, expert and anneal placers ----------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/Place/Placer.h"

#include "BruteForceStep.h"
#include "DiagnosticsTestUtil.h"
#include "TestGraphs.h"

#include "llvm/ADT/StringSet.h"
#include "gtest/gtest.h"

#include <random>

using namespace dp;
using namespace dp::test;
using llvm::ArrayRef;
using llvm::Expected;
using llvm::SmallVector;
using llvm::StringRef;
using llvm::StringSet;

namespace {

/// \p NumGPUs devices of type "t" (and, with \p WithCPU, one of type "c"
/// last), each of \p Memory bytes, hanging off one switch by links of
/// \p Bandwidth bytes/s.
Cluster makeCluster(unsigned NumGPUs, uint64_t Memory = 1 << 20,
                    double Bandwidth = 1e6, bool WithCPU = false) {
  return makeStarCluster(NumGPUs, Memory, Bandwidth, WithCPU, Memory);
}

/// A random DAG of \p NumOps ops: each reads one or two earlier results
/// (or the input), takes 0.1 to 2 s, and produces 4 to 8000 bytes; with
/// \p Persistent, some ops keep up to 60 KiB on their device.
Graph makeRandomGraph(uint64_t Seed, unsigned NumOps, bool Persistent = false) {
  std::mt19937_64 Rng(Seed);
  GraphBuilder B(/*CPUFactor=*/3);
  std::vector<TensorId> Values{B.input("x")};
  for (unsigned I = 0; I != NumOps; ++I) {
    std::vector<TensorId> Operands{Values[Rng() % Values.size()]};
    if (Rng() % 3 == 0) {
      TensorId Second = Values[Rng() % Values.size()];
      if (Second != Operands[0])
        Operands.push_back(Second);
    }
    double Seconds = 0.1 + double(Rng() % 20) / 10;
    OpId O = B.op("op" + std::to_string(I), Seconds, Operands,
                  1 + int64_t(Rng() % 2000));
    if (Persistent && Rng() % 4 == 0)
      B.annotate(O, "persistent_bytes",
                 Attribute::getInt(int64_t(Rng() % (60 << 10))));
    Values.push_back(B.result(O));
  }
  B.G.addOutput(Values.back());
  return std::move(B.G);
}

/// Runs placer \p Algo with the given own options; fails the test if it
/// fails.
std::vector<uint32_t>
place(const PlacementProblem &P, StringRef Algo,
      std::vector<std::pair<std::string, std::string>> Extra = {},
      uint64_t Seed = 0, uint64_t Evals = 0) {
  PlaceOptions Opts;
  Opts.Algo = Algo.str();
  Opts.Seed = Seed;
  Opts.Evaluations = Evals;
  Opts.Extra = std::move(Extra);
  Expected<std::vector<uint32_t>> Placement = lookupPlacer(Algo)->Run(P, Opts);
  if (!Placement) {
    ADD_FAILURE() << Algo.str() << ": "
                  << describe(collectErrors(Placement.takeError()));
    return {};
  }
  return std::move(*Placement);
}

/// The device of each unit's first op, by op name.
uint32_t deviceOf(const PlacementProblem &P, ArrayRef<uint32_t> Placement,
                  StringRef OpName) {
  return Placement[P.getUnitOf(P.getGraph().lookupOp(OpName))];
}

//===----------------------------------------------------------------------===//
// anneal
//===----------------------------------------------------------------------===//

TEST(AnnealTest, NeverWorseThanItsSeed) {
  Cluster C = makeCluster(3, 1 << 20, 1e4, /*WithCPU=*/true);
  for (uint64_t Seed = 0; Seed != 12; ++Seed) {
    Graph G = makeRandomGraph(Seed, 10 + Seed * 3);
    PlacementProblem P = buildProblem(G, C);
    for (StringRef From : {"single", "expert", "m-etf"}) {
      std::vector<uint32_t> Start = place(P, From, {}, Seed);
      const SimResult &R0 = P.simulate(Start);
      ASSERT_FALSE(R0.OOM);
      double SeedTime = R0.StepTime;
      std::vector<uint32_t> Annealed =
          place(P, "anneal", {{"seeds", From.str()}}, Seed, /*Evals=*/150);
      const SimResult &R = P.simulate(Annealed);
      EXPECT_FALSE(R.OOM);
      EXPECT_LE(R.StepTime, SeedTime)
          << "graph " << Seed << ", seeded by " << From.str();
    }
  }
}

// Each placer's defaults name options it takes, each once, and parse back
// through its own table to themselves; learned placers have none here.
TEST(PlacersTest, DefaultsAreTheirOwnOptions) {
  for (const PlacerInfo &Info : getPlacers()) {
    SmallVector<StringRef, 8> Params, Defaults;
    StringRef(Info.Params).split(Params, ',', -1, /*KeepEmpty=*/false);
    StringRef(Info.Defaults).split(Defaults, ',', -1, /*KeepEmpty=*/false);
    StringSet<> Keys, Seen;
    for (StringRef Param : Params)
      Keys.insert(Param.split('=').first);
    std::vector<std::pair<std::string, std::string>> Given;
    for (StringRef Default : Defaults) {
      auto [Key, Value] = Default.split('=');
      EXPECT_TRUE(Keys.contains(Key)) << Info.Name.str() << ": " << Key.str();
      EXPECT_TRUE(Seen.insert(Key).second) << Info.Name.str();
      EXPECT_FALSE(Value.empty()) << Info.Name.str() << ": " << Key.str();
      Given.emplace_back(Key.str(), Value.str());
    }
    if (!Info.DescribeOptions) {
      EXPECT_TRUE(Info.Defaults.empty()) << Info.Name.str();
      continue;
    }
    PlacerOptionTable T = Info.DescribeOptions(Info.Name);
    ASSERT_FALSE(bool(T.Table.parse(Given))) << Info.Name.str();
    EXPECT_EQ(T.Table.getDefaults(), Info.Defaults) << Info.Name.str();
  }
  EXPECT_EQ(lookupPlacer("metis")->Defaults,
            "devices=gpus,parts=auto,imbalance=3.0");
  EXPECT_EQ(lookupPlacer("m-sct")->Ranges,
            "lp-limit: a positive integer; threshold: a number in [0, 1]");
}

// A placer run with a bad value of its own option says so in the one
// wording of every option (a run that place{} did not check first, as
// the unit tests and anneal's seeds do).
TEST(PlacersTest, BadOptionValuesAreErrors) {
  Cluster C = makeCluster(2, 1 << 20, 1e4);
  Graph G = makeRandomGraph(1, 8);
  PlacementProblem P = buildProblem(G, C);
  struct Case {
    const char *Algo, *Key, *Value, *Message;
  } Cases[] = {
      {"m-sct", "lp-limit", "0",
       "place{algo=m-sct}: lp-limit must be a positive integer, not '0'"},
      {"metis", "parts", "many",
       "place{algo=metis}: parts must be auto or a positive integer, not "
       "'many'"},
      {"expert", "mode", "rings",
       "place{algo=expert}: mode must be auto, layers, pipeline or "
       "branches, not 'rings'"},
  };
  for (const Case &K : Cases) {
    PlaceOptions Opts;
    Opts.Algo = K.Algo;
    Opts.Extra = {{K.Key, K.Value}};
    Expected<std::vector<uint32_t>> R = lookupPlacer(K.Algo)->Run(P, Opts);
    ASSERT_FALSE(bool(R)) << K.Algo;
    EXPECT_EQ(collectErrors(R.takeError())[0].Message, K.Message);
  }
}

TEST(AnnealTest, NoWorseThanAnyOtherPlacer) {
  Cluster C = makeCluster(2, 1 << 20, 1e4, /*WithCPU=*/true);
  for (uint64_t Seed = 0; Seed != 4; ++Seed) {
    Graph G = makeRandomGraph(100 + Seed, 20);
    PlacementProblem P = buildProblem(G, C);
    double Annealed =
        P.simulate(place(P, "anneal", {}, Seed, /*Evals=*/100)).StepTime;
    for (const PlacerInfo &Info : getPlacers()) {
      if (Info.Searches) // anneal seeds from the others only
        continue;
      PlaceOptions Opts;
      Opts.Algo = Info.Name.str();
      Opts.Seed = Seed;
      Expected<std::vector<uint32_t>> Other = Info.Run(P, Opts);
      if (!Other) {
        llvm::consumeError(Other.takeError());
        continue;
      }
      const SimResult &R = P.simulate(*Other);
      if (!R.OOM) {
        EXPECT_LE(Annealed, R.StepTime) << Info.Name.str();
      }
    }
  }
}

TEST(AnnealTest, SameSeedAndEvalsSamePlacement) {
  Cluster C = makeCluster(4, 1 << 20, 1e4);
  Graph G = makeRandomGraph(7, 40);
  PlacementProblem P1 = buildProblem(G, C);
  PlacementProblem P2 = buildProblem(G, C);
  std::vector<uint32_t> A = place(P1, "anneal", {}, 3, 300);
  std::vector<uint32_t> B = place(P2, "anneal", {}, 3, 300);
  // And once more on the problem the first run used.
  std::vector<uint32_t> A2 = place(P1, "anneal", {}, 3, 300);
  EXPECT_EQ(A, B);
  EXPECT_EQ(A, A2);
}

TEST(AnnealTest, ReturnsPlacementsThatFit) {
  // 64 KiB per GPU and ops that keep up to 60 KiB: single devices
  // overflow. Anneal returns a placement that fits whenever one of its
  // seeds (here the expert's) found one, and otherwise names an op.
  Cluster C = makeCluster(3, 64 << 10, 1e4);
  unsigned Placed = 0;
  for (uint64_t Seed = 0; Seed != 8; ++Seed) {
    Graph G = makeRandomGraph(300 + Seed, 16, /*Persistent=*/true);
    PlacementProblem P = buildProblem(G, C);
    PlaceOptions Opts;
    Opts.Algo = "expert";
    Expected<std::vector<uint32_t>> Expert =
        lookupPlacer("expert")->Run(P, Opts);
    bool ExpertFits = bool(Expert);
    if (!Expert)
      llvm::consumeError(Expert.takeError());
    Opts.Algo = "anneal";
    Opts.Seed = Seed;
    Opts.Evaluations = 200;
    Expected<std::vector<uint32_t>> Placement =
        lookupPlacer("anneal")->Run(P, Opts);
    if (!Placement) {
      EXPECT_FALSE(ExpertFits) << "graph " << Seed;
      std::vector<Diag> Diags = collectErrors(Placement.takeError());
      ASSERT_EQ(Diags.size(), 1u);
      EXPECT_NE(Diags[0].Message.find("no device can hold"), std::string::npos)
          << Diags[0].Message;
      continue;
    }
    EXPECT_FALSE(P.simulate(*Placement).OOM) << "graph " << Seed;
    ++Placed;
  }
  EXPECT_GT(Placed, 0u);
}

//===----------------------------------------------------------------------===//
// expert
//===----------------------------------------------------------------------===//

TEST(ExpertTest, LayersRoundRobinInOrderOfFirstOp) {
  // Five layers on three GPUs, named against their order; the layer
  // "z" interleaves with "y" but is numbered by its first op.
  GraphBuilder B(/*CPUFactor=*/3);
  TensorId X = B.input("x");
  const char *Layers[] = {"z", "y", "x", "w", "v"};
  TensorId Prev = X;
  for (unsigned L = 0; L != 5; ++L) {
    OpId O = B.op(std::string("cell") + char('0' + L), 1, {Prev});
    B.annotate(O, "rnn", Attribute::getString(Layers[L]));
    Prev = B.result(O);
  }
  OpId Late = B.op("late_z", 1, {Prev});
  B.annotate(Late, "rnn", Attribute::getString("z"));
  B.G.addOutput(B.result(Late));
  Cluster C = makeCluster(3);
  PlacementProblem P = buildProblem(B.G, C);
  std::vector<uint32_t> Placement = place(P, "expert");
  for (unsigned L = 0; L != 5; ++L)
    EXPECT_EQ(deviceOf(P, Placement, std::string("cell") + char('0' + L)),
              L % 3)
        << "layer " << L;
  EXPECT_EQ(deviceOf(P, Placement, "late_z"), 0u);
}

TEST(ExpertTest, RecurrentOpsThatWereNotUnrolledAreLayers) {
  GraphBuilder B(/*CPUFactor=*/3);
  TensorId X = B.input("x");
  OpId Embed = B.op("embed", 1, {X});
  OpId L0 = B.op("lstm0", 4, {B.result(Embed)}, 1, "LSTM");
  OpId Mid = B.op("mid", 1, {B.result(L0)});
  OpId L1 = B.op("gru1", 4, {B.result(Mid)}, 1, "GRU");
  OpId Head = B.op("head", 1, {B.result(L1)});
  B.G.addOutput(B.result(Head));
  Cluster C = makeCluster(2, 1 << 20, 1e6, /*WithCPU=*/true);
  PlacementProblem P = buildProblem(B.G, C);
  std::vector<uint32_t> Placement = place(P, "expert");
  EXPECT_EQ(deviceOf(P, Placement, "embed"), 0u);
  EXPECT_EQ(deviceOf(P, Placement, "lstm0"), 0u);
  EXPECT_EQ(deviceOf(P, Placement, "mid"), 0u);
  EXPECT_EQ(deviceOf(P, Placement, "gru1"), 1u);
  EXPECT_EQ(deviceOf(P, Placement, "head"), 1u);
}

TEST(ExpertTest, PipelineStagesAreContiguousAndBalanced) {
  // A chain of 30 ops of 1..5 s on three GPUs.
  GraphBuilder B(/*CPUFactor=*/3);
  TensorId Prev = B.input("x");
  std::mt19937_64 Rng(5);
  double Total = 0;
  for (unsigned I = 0; I != 30; ++I) {
    double Seconds = double(1 + Rng() % 5);
    Total += Seconds;
    Prev = B.result(B.op("op" + std::to_string(I), Seconds, {Prev}));
  }
  B.G.addOutput(Prev);
  Cluster C = makeCluster(3, 1 << 20, 1e6, /*WithCPU=*/true);
  PlacementProblem P = buildProblem(B.G, C);
  std::vector<uint32_t> Placement = place(P, "expert");
  std::vector<double> Load(4, 0.0);
  uint32_t Last = 0;
  for (uint32_t U : P.getTopologicalOrder()) {
    EXPECT_GE(Placement[U], Last) << "stages follow the topological order";
    Last = Placement[U];
    Load[Placement[U]] += P.getUnitTime(U, 0);
  }
  EXPECT_EQ(Load[3], 0.0) << "nothing on the CPU";
  for (unsigned K = 0; K != 3; ++K)
    EXPECT_NEAR(Load[K], Total / 3, 5.0) << "stage " << K;
}

TEST(ExpertTest, PipelineSharesFollowDeviceSpeed) {
  // gpu:1 runs every op twice as fast: it gets two thirds of the chain.
  DeviceType Slow;
  Slow.Name = "slow";
  Slow.PeakFlops[unsigned(DTypeKind::F32)] = 1e12;
  Slow.MemoryBandwidth = 1e11;
  Slow.MemoryBytes = 1 << 20;
  DeviceType Fast = Slow;
  Fast.Name = "fast";
  Cluster C = cantFail(Cluster::create("mixed", {Slow, Fast},
                                       {{"gpu:0", 0}, {"gpu:1", 1}}, {},
                                       {{"l", 0, 1, 1e9, 0}}));
  Graph G;
  G.setName("chain");
  TensorId Prev = G.addInput("x", TensorType(DTypeKind::F32, {1}));
  for (unsigned I = 0; I != 9; ++I) {
    std::string Name = "op" + std::to_string(I);
    OpId O = G.addOp(Name, "", "Op", {Prev},
                     {{Name, TensorType(DTypeKind::F32, {1})}});
    G.getOp(O).Annotations.set("time.slow", Attribute::getFloat(1.0));
    G.getOp(O).Annotations.set("time.fast", Attribute::getFloat(0.5));
    Prev = G.getOp(O).Results[0];
  }
  G.addOutput(Prev);
  PlacementProblem P = buildProblem(G, C);
  std::vector<uint32_t> Placement = place(P, "expert");
  for (unsigned I = 0; I != 9; ++I)
    EXPECT_EQ(deviceOf(P, Placement, "op" + std::to_string(I)), I < 3 ? 0u : 1u)
        << "op" << I;
}

TEST(ExpertTest, BranchesGoLongestFirstToTheLeastLoadedDevice) {
  // Five branches of 5, 4, 3, 2 and 1 s between a fork and a join, on two
  // GPUs: 5 -> gpu:0, 4 -> gpu:1, 3 -> gpu:1, 2 -> gpu:0, 1 -> gpu:0 (the
  // first of two equally loaded GPUs).
  GraphBuilder B(/*CPUFactor=*/3);
  OpId Fork = B.op("fork", 1, {B.input("x")});
  std::vector<TensorId> Ends;
  for (unsigned I = 0; I != 5; ++I) {
    double Seconds = 5 - I;
    OpId First =
        B.op("b" + std::to_string(I) + "a", Seconds / 2, {B.result(Fork)});
    OpId Second =
        B.op("b" + std::to_string(I) + "b", Seconds / 2, {B.result(First)});
    Ends.push_back(B.result(Second));
  }
  OpId Join = B.op("join", 1, Ends);
  B.G.addOutput(B.result(Join));
  Cluster C = makeCluster(2, 1 << 20, 1e9);
  PlacementProblem P = buildProblem(B.G, C);
  std::vector<uint32_t> Placement = place(P, "expert", {{"mode", "branches"}});
  const uint32_t Expected[] = {0, 1, 1, 0, 0};
  for (unsigned I = 0; I != 5; ++I) {
    EXPECT_EQ(deviceOf(P, Placement, "b" + std::to_string(I) + "a"),
              Expected[I])
        << "branch " << I;
    EXPECT_EQ(deviceOf(P, Placement, "b" + std::to_string(I) + "b"),
              Expected[I])
        << "branch " << I;
  }
  EXPECT_EQ(deviceOf(P, Placement, "fork"), 0u);
  EXPECT_EQ(deviceOf(P, Placement, "join"), 0u);
}

TEST(ExpertTest, FitsWhenItReturns) {
  Cluster C = makeCluster(3, 64 << 10, 1e4);
  unsigned Placed = 0;
  for (uint64_t Seed = 0; Seed != 8; ++Seed) {
    Graph G = makeRandomGraph(300 + Seed, 16, /*Persistent=*/true);
    PlacementProblem P = buildProblem(G, C);
    for (StringRef Mode : {"auto", "pipeline", "branches"}) {
      PlaceOptions Opts;
      Opts.Algo = "expert";
      Opts.Extra = {{"mode", Mode.str()}};
      Expected<std::vector<uint32_t>> Placement =
          lookupPlacer("expert")->Run(P, Opts);
      if (!Placement) {
        llvm::consumeError(Placement.takeError());
        continue;
      }
      EXPECT_FALSE(P.simulate(*Placement).OOM)
          << "graph " << Seed << ", mode " << Mode.str();
      ++Placed;
    }
  }
  EXPECT_GT(Placed, 0u);
}

//===----------------------------------------------------------------------===//
// cpu-only
//===----------------------------------------------------------------------===//

TEST(CPUOnlyTest, EverythingOnTheCPU) {
  Cluster C = makeCluster(2, 1 << 20, 1e6, /*WithCPU=*/true);
  Graph G = makeRandomGraph(1, 10);
  PlacementProblem P = buildProblem(G, C);
  std::vector<uint32_t> Placement = place(P, "cpu-only");
  EXPECT_EQ(Placement, std::vector<uint32_t>(P.getNumUnits(), 2u));
}

//===----------------------------------------------------------------------===//
// mip
//===----------------------------------------------------------------------===//

/// The seconds of the figure after \p Key in \p Line as formatSeconds()
/// writes it ("1.250 s", "12.500 ms"), or a negative value.
double figureAfter(StringRef Line, StringRef Key) {
  size_t At = Line.find(Key);
  if (At == StringRef::npos)
    return -1;
  auto [Number, Rest] = Line.drop_front(At + Key.size()).split(' ');
  double Value;
  if (Number.getAsDouble(Value))
    return -1;
  return Rest.startswith("s") ? Value : Rest.startswith("ms") ? Value * 1e-3 : -1;
}

// The program relaxes the simulator (no link contention, only what a
// device keeps all step in its memory, weights and inputs ordering
// nothing), so a level that CBC solves to optimality has a model step no
// longer than the simulated step of any placement that fits: a program
// that cut off a schedule the simulator could run (a constraint or bound
// too tight) fails this. Random DAGs of 7 ops on two GPUs and a CPU
// (2,187 placements each), ops (and on two, segments) scheduled; mip's
// placement is never slower than its warm start.
TEST(MIPTest, TheProgramsOptimumIsNoLongerThanAnyPlacementsStep) {
  Cluster C = makeCluster(2, 1 << 20, 1e4, /*WithCPU=*/true);
  unsigned Solved = 0;
  for (uint64_t Seed = 0; Seed != 8; ++Seed) {
    Graph G = makeRandomGraph(500 + Seed, 7);
    PlacementProblem P = buildProblem(G, C);
    double Best = shortestStepOfAll(
        P.getNumUnits(), P.getNumDevices(),
        [&](ArrayRef<uint32_t> Placement) -> const SimResult & {
          return P.simulate(Placement);
        });
    for (StringRef Schedule : {"ops", "segments"}) {
      if (Schedule == "segments" && Seed >= 2) // CBC takes ~1 s a program
        continue;
      std::string Log;
      llvm::raw_string_ostream OS(Log);
      PlaceOptions Opts;
      Opts.Algo = "mip";
      Opts.Seconds = 30;
      Opts.Progress = &OS;
      Opts.Extra = {{"schedule", Schedule.str()}};
      Expected<std::vector<uint32_t>> Placement =
          lookupPlacer("mip")->Run(P, Opts);
      if (!Placement) {
        std::string Message = llvm::toString(Placement.takeError());
        if (Message.find("unavailable") != std::string::npos)
          GTEST_SKIP() << Message;
        FAIL() << Message;
      }
      std::string Where = "graph " + std::to_string(Seed) + ", " +
                          Schedule.str() + ":\n" + OS.str();
      double Warm = -1;
      StringRef Rest(OS.str());
      while (!Rest.empty()) {
        StringRef Line;
        std::tie(Line, Rest) = Rest.split('\n');
        if (Warm < 0)
          Warm = figureAfter(Line, "warm start ");
        if (!Line.contains("optimal, model step"))
          continue;
        double Model = figureAfter(Line, "optimal, model step ");
        ASSERT_GE(Model, 0) << Where;
        EXPECT_LE(Model, Best + 1e-3) << Where; // 3 decimals printed
        ++Solved;
      }
      ASSERT_GT(Warm, 0) << Where;
      EXPECT_LE(P.simulate(*Placement).StepTime, Warm + 1e-3) << Where;
    }
  }
  // The programs have at most 7 jobs: CBC solves nearly every level.
  EXPECT_GE(Solved, 8u);
}

} // namespace
