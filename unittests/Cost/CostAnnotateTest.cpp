//===- CostAnnotateTest.cpp - The cost-annotate pass ----------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "CostTestUtil.h"
#include "DiagnosticsTestUtil.h"

#include "dp/Cost/CostAnnotate.h"
#include "dp/Cost/OpCost.h"

#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

using namespace llvm;
using namespace dp;
using namespace dp::test;

namespace {

double getTime(const Graph &G, StringRef Op, StringRef Type) {
  const Attribute *A =
      G.getOp(G.lookupOp(Op)).Annotations.get(("time." + Type).str());
  EXPECT_TRUE(A) << Op.str() << " has no time." << Type.str();
  return A ? A->getFloat() : -1;
}

const Attribute *getAnnotation(const Graph &G, StringRef Op, StringRef Name) {
  return G.getOp(G.lookupOp(Op)).Annotations.get(Name);
}

Error runPass(Graph &G, const Cluster *C, CostOptions Opts = {}) {
  PassContext Ctx;
  Ctx.TheCluster = C;
  return CostAnnotatePass(std::move(Opts)).run(G, Ctx);
}

/// x -> MatMul(w) -> h -> Relu -> y, plus the backward and update ops a
/// training graph has.
Graph makeTrainingGraph() {
  Graph G;
  TensorId X = G.addInput("x", f32({64, 128}));
  TensorId W = G.addWeight("w", f32({128, 256}));
  OpId MM = G.addOp("mm", "", "MatMul", {X, W}, {{"h", f32({64, 256})}});
  TensorId H = G.getOp(MM).Results[0];
  OpId Relu = G.addOp("relu", "", "Relu", {H}, {{"y", f32({64, 256})}});
  TensorId Y = G.getOp(Relu).Results[0];
  TensorId DY = G.addInput("y/grad", f32({64, 256}));
  AttributeList Back;
  Back.set("colocate", Attribute::getString("relu"));
  OpId RG = G.addOp("relu/grad", "dp", "ReluGrad", {DY, Y},
                    {{"h/grad", f32({64, 256})}});
  G.getOp(RG).Annotations = Back;
  Back.set("colocate", Attribute::getString("mm"));
  OpId MG =
      G.addOp("mm/grad", "dp", "MatMulGrad", {G.getOp(RG).Results[0], X, W},
              {{"", TensorType()}, {"w/grad", f32({128, 256})}});
  G.getOp(MG).Annotations = Back;
  AttributeList U;
  U.set("state_copies", Attribute::getInt(1));
  G.addOp("w/update", "dp", "MomentumUpdate", {W, G.getOp(MG).Results[1]},
          {{"w/updated", f32({128, 256})}}, U);
  return G;
}

TEST(CostAnnotateTest, NeedsACluster) {
  Graph G = makeTrainingGraph();
  std::vector<Diag> Diags = collectErrors(runPass(G, nullptr));
  ASSERT_EQ(Diags.size(), 1u);
  EXPECT_EQ(Diags[0].Message,
            "cost-annotate needs a cluster: pass -cluster=<preset|file>");
}

TEST(CostAnnotateTest, EveryOpEveryType) {
  Cluster C = makeTestCluster();
  Graph G = makeTrainingGraph();
  ASSERT_FALSE(bool(runPass(G, &C)));
  EXPECT_EQ(G.getAnnotations().get("cluster")->getString(), "test");
  for (const Op &O : G.ops()) {
    EXPECT_TRUE(O.Annotations.contains("time.g")) << O.Name.str();
    EXPECT_TRUE(O.Annotations.contains("time.c")) << O.Name.str();
    EXPECT_TRUE(O.Annotations.contains("flops")) << O.Name.str();
    EXPECT_TRUE(O.Annotations.contains("output_bytes")) << O.Name.str();
    EXPECT_TRUE(O.Annotations.contains("workspace_bytes")) << O.Name.str();
    EXPECT_EQ(O.Annotations.get("cost_source")->getString(), "roofline");
  }
  EXPECT_DOUBLE_EQ(getTime(G, "mm", "g"),
                   2.0 * 64 * 128 * 256 / (1e12 * 0.7) + 1e-5);
  EXPECT_EQ(getAnnotation(G, "mm", "flops")->getInt(), 2 * 64 * 128 * 256);
  EXPECT_EQ(getAnnotation(G, "mm", "output_bytes")->getInt(), 4 * 64 * 256);
  EXPECT_FALSE(getAnnotation(G, "mm", "persistent_bytes"));
}

TEST(CostAnnotateTest, BackwardOpsAreMultiplesOfTheirForwardOps) {
  Cluster C = makeTestCluster();
  Graph G = makeTrainingGraph();
  ASSERT_FALSE(bool(runPass(G, &C)));
  for (StringRef T : {"g", "c"}) {
    EXPECT_DOUBLE_EQ(getTime(G, "mm/grad", T), 2 * getTime(G, "mm", T));
    EXPECT_DOUBLE_EQ(getTime(G, "relu/grad", T), getTime(G, "relu", T));
  }
  EXPECT_EQ(getAnnotation(G, "mm/grad", "flops")->getInt(),
            2 * 2 * 64 * 128 * 256);
  EXPECT_EQ(getAnnotation(G, "mm/grad", "output_bytes")->getInt(),
            4 * 128 * 256);
}

TEST(CostAnnotateTest, UpdateOpsKeepTheirState) {
  Cluster C = makeTestCluster();
  Graph G = makeTrainingGraph();
  ASSERT_FALSE(bool(runPass(G, &C)));
  const int64_t W = 4 * 128 * 256;
  EXPECT_EQ(getAnnotation(G, "w/update", "persistent_bytes")->getInt(), W);
  // Memory-bound: weight, gradient and velocity read, weight and velocity
  // written.
  EXPECT_DOUBLE_EQ(getTime(G, "w/update", "g"), 5.0 * W / (1e11 * 0.8) + 1e-5);
}

TEST(CostAnnotateTest, BackwardOpWithoutForwardOp) {
  Cluster C = makeTestCluster();
  Graph G;
  addOp(G, "ConvGrad", {f32({4})}, {f32({4})}, {}, "dp", "lost/grad");
  ASSERT_FALSE(bool(runPass(G, &C)));
  EXPECT_EQ(getAnnotation(G, "lost/grad", "cost_note")->getString(),
            "backward op without its forward op: treated as elementwise");
}

TEST(CostAnnotateTest, RunningAgainReplacesCosts) {
  Cluster C = makeTestCluster();
  Graph G;
  addOp(G, "Relu", {f32({16})}, {f32({16})});
  AttributeList &A = G.getOp(0).Annotations;
  A.set("time.old-type", Attribute::getFloat(1.0));
  A.set("cost_note", Attribute::getString("stale"));
  A.set("persistent_bytes", Attribute::getInt(7));
  A.set("group", Attribute::getInt(3));
  G.getAnnotations().set("profile_unmatched", Attribute::getInt(9));
  ASSERT_FALSE(bool(runPass(G, &C)));
  EXPECT_FALSE(A.contains("time.old-type"));
  EXPECT_FALSE(A.contains("cost_note"));
  EXPECT_FALSE(A.contains("persistent_bytes"));
  EXPECT_FALSE(G.getAnnotations().contains("profile_unmatched"));
  // Annotations of other passes stay.
  EXPECT_EQ(A.get("group")->getInt(), 3);
  EXPECT_TRUE(A.contains("time.g"));
}

TEST(CostAnnotateTest, ParseAndPrintOptions) {
  auto RoundTrip = [](std::vector<std::pair<std::string, std::string>> KVs) {
    Expected<CostOptions> O = CostAnnotatePass::parseOptions(KVs);
    EXPECT_TRUE(bool(O)) << toString(O.takeError());
    std::string S;
    raw_string_ostream OS(S);
    if (O)
      CostAnnotatePass(*O).printPipeline(OS);
    return OS.str();
  };
  EXPECT_EQ(RoundTrip({}), "cost-annotate");
  EXPECT_EQ(RoundTrip({{"source", "roofline"}}), "cost-annotate");
  EXPECT_EQ(RoundTrip({{"source", "onednn"},
                       {"runs", "3"},
                       {"cache", "/tmp/c"},
                       {"measure-limit", "0.5"},
                       {"profile", "p.json"},
                       {"profile-device", "g"}}),
            "cost-annotate{source=onednn,profile=p.json,profile-device=g,"
            "runs=3,cache=/tmp/c,measure-limit=0.5}");
  EXPECT_EQ(RoundTrip({{"profile", "p.json"}, {"profile-stat", "median"}}),
            "cost-annotate{profile=p.json}");
  EXPECT_EQ(RoundTrip({{"profile-stat", "min"}, {"profile", "p.json"}}),
            "cost-annotate{profile=p.json,profile-stat=min}");
  EXPECT_EQ(RoundTrip({{"profile-stat", "mean"}, {"profile", "p.json"}}),
            "cost-annotate{profile=p.json,profile-stat=mean}");

  auto ErrorOf = [](std::vector<std::pair<std::string, std::string>> KVs) {
    Expected<CostOptions> O = CostAnnotatePass::parseOptions(KVs);
    if (O)
      return std::string("no error");
    std::vector<Diag> D = collectErrors(O.takeError());
    return D.size() == 1 ? D[0].Message : describe(D);
  };
  EXPECT_EQ(ErrorOf({{"source", "cuda"}}),
            "cost-annotate: source must be roofline or onednn, not 'cuda'");
  EXPECT_EQ(ErrorOf({{"source", "onednn"}, {"runs", "0"}}),
            "cost-annotate: runs must be an integer from 1 to 1000, not '0'");
  EXPECT_EQ(ErrorOf({{"runs", "3"}}),
            "cost-annotate: runs= applies to source=onednn only");
  EXPECT_EQ(ErrorOf({{"source", "onednn"}, {"measure-limit", "-1"}}),
            "cost-annotate: measure-limit must be a positive number of "
            "seconds, not '-1'");
  EXPECT_EQ(ErrorOf({{"profile-device", "g"}}),
            "cost-annotate: profile-device= needs profile=<file>");
  EXPECT_EQ(ErrorOf({{"profile-stat", "min"}}),
            "cost-annotate: profile-stat= needs profile=<file>");
  EXPECT_EQ(ErrorOf({{"profile", "p.json"}, {"profile-stat", "mode"}}),
            "cost-annotate: profile-stat must be median, min or mean, not "
            "'mode'");
  EXPECT_EQ(ErrorOf({{"speed", "fast"}}),
            "cost-annotate: unknown option 'speed' (expected "
            "source=roofline|onednn, profile=FILE[:FILE...], "
            "shared-profile=FILE[:FILE...], profile-device=TYPE, "
            "profile-stat=median|min|mean, runs=N, "
            "cache=DIR or measure-limit=SECONDS)");
}

} // namespace
