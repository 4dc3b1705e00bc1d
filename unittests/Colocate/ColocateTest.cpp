//===- ColocateTest.cpp - Colocation groups -------------------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/Colocate/Colocate.h"
#include "dp/Cluster/Cluster.h"
#include "dp/IR/TextFormat.h"
#include "dp/Transforms/TrainingGraph.h"

#include "DiagnosticsTestUtil.h"

#include "llvm/Support/MemoryBuffer.h"

#include "gtest/gtest.h"

#include <cmath>
#include <random>
#include <string>
#include <vector>

using namespace dp;
using namespace dp::test;
using llvm::StringRef;

namespace {

Graph parse(StringRef Text) {
  llvm::Expected<Graph> G = parseGraph(llvm::MemoryBufferRef(Text, "test.dp"));
  if (!G) {
    ADD_FAILURE() << llvm::toString(G.takeError());
    return Graph();
  }
  return std::move(*G);
}

TensorType f32(std::vector<int64_t> Dims) {
  return TensorType(DTypeKind::F32, Dims);
}

/// A forward network of \p Layers ops in scopes "/blockK/...", with
/// fan-outs and joins: each op is a MatMul with its own weight, a Relu, or
/// an Add of two earlier results, drawn from \p Seed. Then one training
/// step of it, and a time.g on every op.
Graph buildTrainingStep(unsigned Layers, uint64_t Seed) {
  std::mt19937_64 Rng(Seed);
  Graph G;
  G.setName("net");
  G.setOpset("", 17);
  std::vector<TensorId> Values = {G.addInput("x", f32({8, 16}))};
  std::vector<bool> Read = {false};
  for (unsigned L = 0; L != Layers; ++L) {
    std::string Name =
        "/block" + std::to_string(L / 6) + "/layer" + std::to_string(L);
    auto Pick = [&] {
      // Mostly the last few values, so that chains and branches both occur.
      size_t Back = std::min<size_t>(Values.size(), 4);
      size_t I = Values.size() - 1 - Rng() % Back;
      Read[I] = true;
      return Values[I];
    };
    OpId O;
    switch (Rng() % 3) {
    case 0: {
      TensorId W = G.addWeight("w" + std::to_string(L), f32({16, 16}));
      O = G.addOp(Name + "/MatMul", "", "MatMul", {Pick(), W},
                  {{Name + "/mm", f32({8, 16})}});
      break;
    }
    case 1:
      O = G.addOp(Name + "/Relu", "", "Relu", {Pick()},
                  {{Name + "/relu", f32({8, 16})}});
      break;
    default:
      O = G.addOp(Name + "/Add", "", "Add", {Pick(), Pick()},
                  {{Name + "/add", f32({8, 16})}});
      break;
    }
    Values.push_back(G.getOp(O).Results[0]);
    Read.push_back(false);
  }
  // Results nobody reads are outputs, so every op reaches the loss.
  for (size_t I = 1; I != Values.size(); ++I)
    if (!Read[I])
      G.addOutput(Values[I]);
  if (llvm::Error E = buildTrainingGraph(G)) {
    ADD_FAILURE() << llvm::toString(std::move(E));
    return G;
  }
  std::uniform_real_distribution<double> Time(1e-6, 1e-3);
  for (OpId O = 0, E = G.getNumOps(); O != E; ++O)
    G.getOp(O).Annotations.set("time.g", Attribute::getFloat(Time(Rng)));
  return G;
}

/// Checks what every grouping promises: a group per op, ids dense in order
/// of first op, and every colocate hint kept.
void expectWellFormed(const Graph &G, const Grouping &Gr) {
  ASSERT_EQ(Gr.GroupOf.size(), G.getNumOps());
  uint32_t Next = 0;
  for (uint32_t X : Gr.GroupOf) {
    ASSERT_LE(X, Next) << "group ids are not in first-op order";
    if (X == Next)
      ++Next;
  }
  EXPECT_EQ(Next, Gr.NumGroups);
  unsigned Hints = 0;
  for (OpId O = 0, E = G.getNumOps(); O != E; ++O) {
    const Attribute *A = G.getOp(O).Annotations.get("colocate");
    if (!A)
      continue;
    OpId Target = G.lookupOp(A->getString());
    ASSERT_NE(Target, NoId);
    ++Hints;
    EXPECT_EQ(Gr.GroupOf[O], Gr.GroupOf[Target])
        << G.getOp(O).Name.str() << " is split from its hint "
        << A->getString();
  }
  EXPECT_GT(Hints, 0u) << "a training graph has hints";
}

std::vector<double> costs(const Graph &G) {
  return llvm::cantFail(getComputeCosts(G, nullptr, "test"));
}

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

TEST(ColocateTest, NameScope) {
  EXPECT_EQ(getNameScope("/a/b/c/Op", 1), "/a");
  EXPECT_EQ(getNameScope("/a/b/c/Op", 2), "/a/b");
  EXPECT_EQ(getNameScope("/a/b/c/Op", 3), "/a/b/c");
  EXPECT_EQ(getNameScope("/a/b/c/Op", 4), "/a/b/c");
  EXPECT_EQ(getNameScope("/bert/encoder/layer.3/attention/self/MatMul", 2),
            "/bert/encoder");
  EXPECT_EQ(getNameScope("a/b/Op", 1), "a");
  EXPECT_EQ(getNameScope("//a//b/Op", 2), "//a//b");
  EXPECT_EQ(getNameScope("MatMul_3", 1), "");
  EXPECT_EQ(getNameScope("/MatMul", 1), "");
  EXPECT_EQ(getNameScope("", 1), "");
}

TEST(ColocateTest, MakeGroupingNumbersByFirstAppearance) {
  Grouping Gr = makeGrouping({7, 3, 7, ~0u, 3, 0});
  EXPECT_EQ(Gr.GroupOf, (std::vector<uint32_t>{0, 1, 0, 2, 1, 3}));
  EXPECT_EQ(Gr.NumGroups, 4u);
}

TEST(ColocateTest, HintClassesFollowChainsAndIgnoreUnknownTargets) {
  Graph G = parse(R"(dp.graph @g {
  input %x : f32[1]
  op @a = Op(%x) -> (%t : f32[1])
  op @b = Op(%t) -> (%u : f32[1])
  op @a/grad = Op(%u) -> (%v : f32[1]) [colocate = "a"]
  op @a/grad/acc = Op(%v) -> (%w : f32[1]) [colocate = "a/grad"]
  op @lost = Op(%w) -> (%y : f32[1]) [colocate = "nowhere"]
  output %y
})");
  Grouping Gr = getHintClasses(G);
  EXPECT_EQ(Gr.GroupOf, (std::vector<uint32_t>{0, 1, 0, 0, 2}));
}

TEST(ColocateTest, ComputeCostsUseTheFastestType) {
  Graph G = parse(R"(dp.graph @g {
  input %x : f32[1]
  op @a = Op(%x) -> (%t : f32[1]) [time.g = 2.0, time.h = 3.0, time.k = 0.5]
  output %t
})");
  EXPECT_EQ(costs(G), (std::vector<double>{0.5}));

  DeviceType H;
  H.Name = "h";
  H.PeakFlops[unsigned(DTypeKind::F32)] = 1e12;
  H.MemoryBandwidth = 1e11;
  H.MemoryBytes = 1 << 20;
  DeviceType Gt = H;
  Gt.Name = "g";
  Cluster C = llvm::cantFail(Cluster::create(
      "c", {Gt, H}, {{"g:0", 0}, {"h:0", 1}}, {}, {{"l", 0, 1, 1e9, 0}}));
  // time.k is for no type of the cluster.
  EXPECT_EQ(llvm::cantFail(getComputeCosts(G, &C, "test")),
            (std::vector<double>{2.0}));

  Graph Missing = parse(R"(dp.graph @g {
  input %x : f32[1]
  op @a = Op(%x) -> (%t : f32[1]) [time.g = 2.0, time.h = 3.0]
  op @b = Op(%t) -> (%u : f32[1]) [time.g = 2.0]
  op @c = Op(%u) -> (%v : f32[1])
  output %v
})");
  std::vector<Diag> Diags =
      collectErrors(getComputeCosts(Missing, &C, "who").takeError());
  ASSERT_EQ(Diags.size(), 1u);
  EXPECT_EQ(Diags[0].Loc.Node, "b");
  EXPECT_EQ(Diags[0].Message, "who: needs costs: run cost-annotate first");
  Diags = collectErrors(getComputeCosts(Missing, nullptr, "who").takeError());
  ASSERT_EQ(Diags.size(), 1u);
  EXPECT_EQ(Diags[0].Loc.Node, "c");
}

TEST(ColocateTest, EdgesAndMemoryCountLikePlacementProblem) {
  // w is first read by a, so it lives with a and b receives it from there;
  // t goes once to the group of b and c although both read it.
  Graph G = parse(R"(dp.graph @g {
  input %x : f32[2]
  weight %w : f32[4]
  op @a = Op(%x, %w) -> (%t : f32[8]) [persistent_bytes = 100]
  op @b = Op(%t, %w) -> (%u : f32[1])
  op @c = Op(%t) -> (%v : f32[1])
  output %u
  output %v
})");
  EXPECT_EQ(getOpMemory(G), (std::vector<uint64_t>{8 + 16 + 32 + 100, 4, 4}));
  Grouping Gr = makeGrouping({0, 1, 1});
  std::vector<GroupEdge> Edges = getGroupEdges(G, Gr);
  ASSERT_EQ(Edges.size(), 1u);
  EXPECT_EQ(Edges[0].From, 0u);
  EXPECT_EQ(Edges[0].To, 1u);
  EXPECT_EQ(Edges[0].Bytes, 32u + 16u);
}

//===----------------------------------------------------------------------===//
// Strategies on training graphs: hints are never split
//===----------------------------------------------------------------------===//

TEST(ColocateTest, EveryStrategyKeepsHintsOnTrainingGraphs) {
  for (uint64_t Seed : {1, 2, 3}) {
    Graph G = buildTrainingStep(60, Seed);
    Grouping Hints = getHintClasses(G);
    ASSERT_LT(Hints.NumGroups, G.getNumOps());
    std::vector<double> C = costs(G);
    SCOPED_TRACE("seed " + std::to_string(Seed));

    Grouping TF = groupByTF(G);
    expectWellFormed(G, TF);
    EXPECT_LE(TF.NumGroups, Hints.NumGroups);

    for (unsigned N : {1u, 2u, 7u, 20u}) {
      Grouping M = groupByMerge(G, C, N, HUGE_VAL);
      expectWellFormed(G, M);
      EXPECT_EQ(M.NumGroups, N) << "merge reaches exactly N groups";

      Grouping P = llvm::cantFail(groupByMETIS(G, C, N, Seed));
      expectWellFormed(G, P);
      EXPECT_LE(P.NumGroups, N);
      EXPECT_GE(P.NumGroups, 1u);
    }
    for (unsigned D : {1u, 2u, 3u}) {
      Grouping S = groupByScope(G, D);
      expectWellFormed(G, S);
    }
  }
}

TEST(ColocateTest, ScopeDepthOneSplitsBlocks) {
  Graph G = buildTrainingStep(60, 4);
  // 60 layers in blocks of 6: /block0 .. /block9, plus the loss ops, which
  // join the block they read from or stay apart.
  Grouping S = groupByScope(G, 1);
  EXPECT_GE(S.NumGroups, 10u);
  EXPECT_LE(S.NumGroups, 13u);
  // Depth 2 is a layer each (and hints keep backward ops with them).
  Grouping L = groupByScope(G, 2);
  EXPECT_GE(L.NumGroups, 60u);
}

TEST(ColocateTest, MergeStopsAtTheThreshold) {
  Graph G = buildTrainingStep(40, 5);
  std::vector<double> C = costs(G);
  Grouping Hints = getHintClasses(G);
  // A threshold below every group's cost merges nothing.
  Grouping None = groupByMerge(G, C, 1, 1e-9);
  EXPECT_EQ(None.NumGroups, Hints.NumGroups);
  EXPECT_EQ(None.GroupOf, Hints.GroupOf);
  // With a threshold, every group left (but the last) costs at least it.
  double Threshold = 2e-3;
  Grouping Some = groupByMerge(G, C, 1, Threshold);
  std::vector<double> GroupCost(Some.NumGroups, 0);
  for (OpId O = 0, E = G.getNumOps(); O != E; ++O)
    GroupCost[Some.GroupOf[O]] += C[O];
  ASSERT_GT(Some.NumGroups, 1u);
  for (double Cost : GroupCost)
    EXPECT_GE(Cost, Threshold);
}

TEST(ColocateTest, MergeFromGivenGroupsNeverSplitsThem) {
  // Mars merges a placement problem's units (here: the tf groups) into
  // fewer groups; every start group stays whole.
  Graph G = buildTrainingStep(60, 7);
  std::vector<double> C = costs(G);
  Grouping Start = groupByTF(G);
  for (unsigned N : {1u, 5u, 16u}) {
    Grouping M = groupByMerge(G, C, N, HUGE_VAL, &Start);
    expectWellFormed(G, M);
    EXPECT_EQ(M.NumGroups, N);
    std::vector<int64_t> MergedOf(Start.NumGroups, -1);
    for (OpId O = 0, E = G.getNumOps(); O != E; ++O) {
      int64_t &To = MergedOf[Start.GroupOf[O]];
      if (To < 0)
        To = M.GroupOf[O];
      EXPECT_EQ(To, int64_t(M.GroupOf[O])) << "op " << O;
    }
  }
  // As many groups as the start has: nothing to merge.
  Grouping Same = groupByMerge(G, C, Start.NumGroups, HUGE_VAL, &Start);
  EXPECT_EQ(Same.GroupOf, Start.GroupOf);
}

TEST(ColocateTest, METISIsDeterministicPerSeed) {
  Graph G = buildTrainingStep(80, 6);
  std::vector<double> C = costs(G);
  Grouping A = llvm::cantFail(groupByMETIS(G, C, 8, 42));
  Grouping B = llvm::cantFail(groupByMETIS(G, C, 8, 42));
  EXPECT_EQ(A.GroupOf, B.GroupOf);
  // One group, and a group per class, need no partition.
  Grouping One = llvm::cantFail(groupByMETIS(G, C, 1, 0));
  EXPECT_EQ(One.NumGroups, 1u);
  Grouping Hints = getHintClasses(G);
  Grouping All = llvm::cantFail(groupByMETIS(G, C, Hints.NumGroups, 0));
  EXPECT_EQ(All.GroupOf, Hints.GroupOf);
}

TEST(ColocateTest, MergeIsFastOnLargeGraphs) {
  // About 30k ops; the heap and small-into-large neighbour merging keep
  // this well under a second even in debug builds.
  Graph G = buildTrainingStep(9000, 7);
  ASSERT_GT(G.getNumOps(), 25000u);
  std::vector<double> C = costs(G);
  Grouping M = groupByMerge(G, C, 64, HUGE_VAL);
  EXPECT_EQ(M.NumGroups, 64u);
  expectWellFormed(G, M);
}

//===----------------------------------------------------------------------===//
// Options
//===----------------------------------------------------------------------===//

std::string roundTrip(StringRef Strategy) {
  llvm::Expected<ColocateOptions> Opts =
      ColocatePass::parseOptions({{"strategy", Strategy.str()}});
  if (!Opts)
    return llvm::toString(Opts.takeError());
  std::string S;
  llvm::raw_string_ostream OS(S);
  printColocatePipeline(OS, *Opts);
  return OS.str();
}

TEST(ColocateTest, OptionsPrintAsTheyParse) {
  EXPECT_EQ(roundTrip("tf"), "colocate{strategy=tf}");
  EXPECT_EQ(roundTrip("tf{}"), "colocate{strategy=tf}");
  EXPECT_EQ(roundTrip("merge{groups=64}"),
            "colocate{strategy=merge{groups=64}}");
  EXPECT_EQ(roundTrip("merge{threshold=0.25,groups=3}"),
            "colocate{strategy=merge{groups=3,threshold=0.25}}");
  EXPECT_EQ(roundTrip("metis{groups=2}"), "colocate{strategy=metis{groups=2}}");
  EXPECT_EQ(roundTrip("scope{depth=4}"), "colocate{strategy=scope{depth=4}}");
  EXPECT_EQ(roundTrip("scope"), "colocate{strategy=scope{depth=1}}");
  EXPECT_EQ(roundTrip("metis"),
            "error: colocate{strategy=metis}: groups= is required (e.g. "
            "strategy=metis{groups=64})");
  llvm::Expected<ColocateOptions> Default = ColocatePass::parseOptions({});
  ASSERT_TRUE(bool(Default));
  EXPECT_EQ(Default->Strategy, ColocateStrategyKind::TF);
}

TEST(ColocateTest, PassAnnotatesAndReports) {
  Graph G = parse(R"(dp.graph @g {
  input %x : f32[1]
  op @a = Op(%x) -> (%t : f32[1]) [time.g = 1.0]
  op @b = Op(%t) -> (%u : f32[1]) [time.g = 3.0]
  op @c = Op(%t) -> (%v : f32[1]) [time.g = 1.0]
  output %u
  output %v
})");
  ColocateOptions Opts;
  Opts.Strategy = ColocateStrategyKind::Merge;
  Opts.Groups = 2;
  Opts.Threshold = HUGE_VAL;
  std::string Report;
  llvm::raw_string_ostream OS(Report);
  PassContext Ctx;
  Ctx.Report = &OS;
  ASSERT_FALSE(bool(ColocatePass(Opts).run(G, Ctx)));
  const Attribute *Groups = G.getAnnotations().get("groups");
  ASSERT_TRUE(Groups);
  EXPECT_EQ(Groups->getInt(), 2);
  // a (1 s, no predecessor) joins b, its successor that receives the most
  // (a tie with c: the earlier).
  EXPECT_EQ(G.getOp(0).Annotations.get("group")->getInt(), 0);
  EXPECT_EQ(G.getOp(1).Annotations.get("group")->getInt(), 0);
  EXPECT_EQ(G.getOp(2).Annotations.get("group")->getInt(), 1);
  EXPECT_EQ(OS.str(), "colocate{strategy=merge{groups=2,threshold=inf}}: 2 "
                      "groups from 3 ops; largest group 'a' (2 ops): 80.0 % "
                      "of compute, 75.0 % of memory\n");
}

} // namespace
