//===- PartitionTest.cpp - The METIS and Scotch wrappers ------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/Place/GraphPartition.h"

#include "DiagnosticsTestUtil.h"

#include "gtest/gtest.h"

#include <random>

using namespace dp;
using namespace dp::test;
using llvm::ArrayRef;
using llvm::Expected;
using llvm::StringRef;

namespace {

/// A W x H grid whose vertices weigh 1..10 (from \p Seed) and whose edges
/// weigh 1.
PartitionGraph makeGrid(unsigned W, unsigned H, uint64_t Seed = 1) {
  PartitionGraph G;
  G.NumVertices = W * H;
  std::mt19937_64 Rng(Seed);
  for (unsigned V = 0; V != G.NumVertices; ++V)
    G.VertexWeights.push_back(double(1 + Rng() % 10));
  for (unsigned Y = 0; Y != H; ++Y)
    for (unsigned X = 0; X != W; ++X) {
      unsigned V = Y * W + X;
      if (X + 1 != W)
        G.Edges.push_back({V, V + 1, 1.0});
      if (Y + 1 != H)
        G.Edges.push_back({V, V + W, 1.0});
    }
  return G;
}

/// \p NumCliques cliques of \p Size unit vertices with heavy (100) edges;
/// clique I joins clique I + 1 by one edge of weight Bridges[I].
PartitionGraph makeCliques(unsigned NumCliques, unsigned Size,
                           ArrayRef<double> Bridges) {
  PartitionGraph G;
  G.NumVertices = NumCliques * Size;
  G.VertexWeights.assign(G.NumVertices, 1.0);
  for (unsigned C = 0; C != NumCliques; ++C)
    for (unsigned A = 0; A != Size; ++A)
      for (unsigned B = A + 1; B != Size; ++B)
        G.Edges.push_back({C * Size + A, C * Size + B, 100.0});
  for (unsigned C = 0; C + 1 < NumCliques; ++C)
    G.Edges.push_back({C * Size + Size - 1, (C + 1) * Size, Bridges[C]});
  return G;
}

std::vector<double> partWeights(const PartitionGraph &G,
                                ArrayRef<uint32_t> Parts, unsigned NumParts,
                                unsigned Constraint = 0) {
  std::vector<double> W(NumParts, 0.0);
  for (unsigned V = 0; V != G.NumVertices; ++V)
    W[Parts[V]] += G.VertexWeights[V * G.NumConstraints + Constraint];
  return W;
}

double totalWeight(const PartitionGraph &G, unsigned Constraint = 0) {
  double Sum = 0;
  for (unsigned V = 0; V != G.NumVertices; ++V)
    Sum += G.VertexWeights[V * G.NumConstraints + Constraint];
  return Sum;
}

std::vector<uint32_t> metis(const PartitionGraph &G, unsigned NumParts,
                            std::vector<double> Shares = {},
                            uint64_t Seed = 0) {
  if (Shares.empty())
    Shares.assign(size_t(NumParts) * G.NumConstraints, 1.0 / NumParts);
  PartitionOptions Opts;
  Opts.Seed = Seed;
  Expected<std::vector<uint32_t>> Parts =
      partitionGraphMetis(G, NumParts, Shares, Opts);
  if (!Parts) {
    ADD_FAILURE() << llvm::toString(Parts.takeError());
    return {};
  }
  EXPECT_EQ(Parts->size(), G.NumVertices);
  for (uint32_t P : *Parts)
    EXPECT_LT(P, NumParts);
  return *Parts;
}

std::vector<uint32_t> scotch(const PartitionGraph &G, std::vector<double> Speed,
                             std::vector<double> Distance = {},
                             uint64_t Seed = 0) {
  unsigned K = Speed.size();
  if (Distance.empty())
    for (unsigned A = 0; A != K; ++A)
      for (unsigned B = 0; B != K; ++B)
        Distance.push_back(A == B ? 0.0 : 1.0);
  PartitionOptions Opts;
  Opts.Seed = Seed;
  Expected<std::vector<uint32_t>> Parts =
      mapGraphScotch(G, Speed, Distance, Opts);
  if (!Parts) {
    ADD_FAILURE() << llvm::toString(Parts.takeError());
    return {};
  }
  EXPECT_EQ(Parts->size(), G.NumVertices);
  for (uint32_t P : *Parts)
    EXPECT_LT(P, K);
  return *Parts;
}

// The libraries aim at the imbalance tolerance (3 %); the wrappers' scaling
// to integers may add a little.
constexpr double Tolerance = 1.03 + 0.01;

TEST(PartitionTest, AdjacencyMergesParallelAndReverseEdges) {
  PartitionGraph G;
  G.NumVertices = 3;
  G.VertexWeights.assign(3, 1.0);
  G.Edges = {{0, 1, 2.0}, {1, 0, 3.0}, {1, 1, 7.0}, {1, 2, 0.0}};
  Adjacency A = G.getAdjacency();
  EXPECT_EQ(A.Begin, (std::vector<uint32_t>{0, 1, 2, 2}));
  EXPECT_EQ(A.Neighbours, (std::vector<uint32_t>{1, 0}));
  EXPECT_EQ(A.Weights, (std::vector<double>{5.0, 5.0}));
}

TEST(PartitionTest, ScaledWeightsStayWithinTheBudget) {
  std::vector<double> W = {1e300, 1e-300, 0.0, 3e299};
  std::vector<int64_t> S = scaleWeights(W, 1 << 20, /*AtLeastOne=*/false);
  EXPECT_EQ(S[2], 0);
  EXPECT_EQ(S[1], 1);
  EXPECT_LE(S[0] + S[1] + S[3], (1 << 20) + 4);
  EXPECT_NEAR(double(S[0]) / double(S[3]), 10.0 / 3.0, 1e-5);
  EXPECT_EQ(scaleWeights(W, 1 << 20, /*AtLeastOne=*/true)[2], 1);
  // Nothing to scale: all zero, or only ones.
  EXPECT_EQ(scaleWeights({0.0, 0.0}, 100, true), (std::vector<int64_t>{1, 1}));
}

TEST(PartitionTest, MetisBalancesCompute) {
  PartitionGraph G = makeGrid(30, 30);
  std::vector<uint32_t> Parts = metis(G, 4);
  double Limit = totalWeight(G) / 4 * Tolerance;
  for (double W : partWeights(G, Parts, 4))
    EXPECT_LE(W, Limit);
}

TEST(PartitionTest, MetisFollowsTargetShares) {
  PartitionGraph G = makeGrid(30, 30);
  std::vector<uint32_t> Parts = metis(G, 2, {0.75, 0.25});
  std::vector<double> W = partWeights(G, Parts, 2);
  EXPECT_LE(W[0], totalWeight(G) * 0.75 * Tolerance);
  EXPECT_LE(W[1], totalWeight(G) * 0.25 * Tolerance);
}

TEST(PartitionTest, MetisBalancesASecondConstraint) {
  // Constraint 1 (memory) is all in the first row of the grid: balancing
  // it too splits that row.
  PartitionGraph G = makeGrid(20, 20);
  std::vector<double> Both;
  for (unsigned V = 0; V != G.NumVertices; ++V) {
    Both.push_back(G.VertexWeights[V]);
    Both.push_back(V < 20 ? 1.0 : 0.0);
  }
  G.NumConstraints = 2;
  G.VertexWeights = Both;
  std::vector<uint32_t> Parts = metis(G, 2);
  std::vector<double> Memory = partWeights(G, Parts, 2, 1);
  EXPECT_GE(Memory[0], 5.0);
  EXPECT_GE(Memory[1], 5.0);
}

TEST(PartitionTest, MetisCutsTheLightEdgeBetweenTwoCliques) {
  PartitionGraph G = makeCliques(2, 8, {1.0});
  std::vector<uint32_t> Parts = metis(G, 2);
  for (unsigned V = 1; V != 8; ++V) {
    EXPECT_EQ(Parts[V], Parts[0]);
    EXPECT_EQ(Parts[8 + V], Parts[8]);
  }
  EXPECT_NE(Parts[0], Parts[8]);
}

TEST(PartitionTest, MetisIsDeterministicForASeed) {
  PartitionGraph G = makeGrid(40, 25, 7);
  EXPECT_EQ(metis(G, 4, {}, 42), metis(G, 4, {}, 42));
}

TEST(PartitionTest, MetisHandlesFewerVerticesThanParts) {
  PartitionGraph G;
  G.NumVertices = 2;
  G.VertexWeights = {1.0, 1.0};
  G.Edges = {{0, 1, 1.0}};
  metis(G, 4);
  // One part, and an empty graph.
  EXPECT_EQ(metis(G, 1), (std::vector<uint32_t>{0, 0}));
  EXPECT_TRUE(metis(PartitionGraph(), 4).empty());
}

TEST(PartitionTest, MetisHandlesZeroWeights) {
  // Zero-weight vertices and edges, and no edges at all.
  PartitionGraph G = makeGrid(6, 6);
  for (double &W : G.VertexWeights)
    W = 0;
  for (PartitionGraph::Edge &E : G.Edges)
    E.Weight = 0;
  metis(G, 3);
  G.Edges.clear();
  metis(G, 3);
}

TEST(PartitionTest, ScotchBalancesCompute) {
  PartitionGraph G = makeGrid(30, 30);
  std::vector<uint32_t> Parts = scotch(G, {1, 1, 1, 1});
  double Limit = totalWeight(G) / 4 * Tolerance;
  for (double W : partWeights(G, Parts, 4))
    EXPECT_LE(W, Limit);
}

TEST(PartitionTest, ScotchLoadsFollowSpeed) {
  PartitionGraph G = makeGrid(30, 30);
  std::vector<uint32_t> Parts = scotch(G, {1.0, 0.5});
  std::vector<double> W = partWeights(G, Parts, 2);
  EXPECT_LE(W[0], totalWeight(G) * 2 / 3 * Tolerance);
  EXPECT_LE(W[1], totalWeight(G) / 3 * Tolerance);
}

TEST(PartitionTest, ScotchCutsTheLightEdgeBetweenTwoCliques) {
  PartitionGraph G = makeCliques(2, 8, {1.0});
  std::vector<uint32_t> Parts = scotch(G, {1, 1});
  for (unsigned V = 1; V != 8; ++V) {
    EXPECT_EQ(Parts[V], Parts[0]);
    EXPECT_EQ(Parts[8 + V], Parts[8]);
  }
  EXPECT_NE(Parts[0], Parts[8]);
}

TEST(PartitionTest, ScotchPutsHeavyTrafficOnShortDistances) {
  // Cliques 0-1 and 2-3 exchange much, 1-2 little; processors 0-1 and 2-3
  // are close, the pairs far apart. Each clique gets a processor, and the
  // heavy pairs sit on close processors.
  PartitionGraph G = makeCliques(4, 6, {50.0, 1.0, 50.0});
  std::vector<double> Distance = {0,  1,  10, 10, //
                                  1,  0,  10, 10, //
                                  10, 10, 0,  1,  //
                                  10, 10, 1,  0};
  std::vector<uint32_t> Parts = scotch(G, {1, 1, 1, 1}, Distance);
  auto Close = [](uint32_t A, uint32_t B) { return A / 2 == B / 2; };
  EXPECT_TRUE(Close(Parts[0], Parts[6]));
  EXPECT_TRUE(Close(Parts[12], Parts[18]));
  EXPECT_FALSE(Close(Parts[0], Parts[12]));
}

TEST(PartitionTest, ScotchIsDeterministicForASeed) {
  PartitionGraph G = makeGrid(40, 25, 7);
  EXPECT_EQ(scotch(G, {1, 1, 1}, {}, 42), scotch(G, {1, 1, 1}, {}, 42));
}

TEST(PartitionTest, ScotchHandlesFewerVerticesThanProcessors) {
  PartitionGraph G;
  G.NumVertices = 2;
  G.VertexWeights = {1.0, 1.0};
  G.Edges = {{0, 1, 1.0}};
  scotch(G, {1, 1, 1, 1});
  EXPECT_EQ(scotch(G, {1}), (std::vector<uint32_t>{0, 0}));
  EXPECT_TRUE(scotch(PartitionGraph(), {1, 1}).empty());
}

TEST(PartitionTest, ScotchHandlesZeroWeights) {
  PartitionGraph G = makeGrid(6, 6);
  for (double &W : G.VertexWeights)
    W = 0;
  for (PartitionGraph::Edge &E : G.Edges)
    E.Weight = 0;
  scotch(G, {1, 1, 1});
  G.Edges.clear();
  scotch(G, {1, 1, 1});
}

TEST(PartitionTest, HugeWeightsDoNotOverflow) {
  // Weights of 1e18 (bytes, seconds, anything) sum far beyond 32 bits.
  PartitionGraph G = makeCliques(2, 8, {1e12});
  for (double &W : G.VertexWeights)
    W = 1e18;
  for (PartitionGraph::Edge &E : G.Edges)
    E.Weight *= 1e16;
  for (const std::vector<uint32_t> &Parts : {metis(G, 2), scotch(G, {1, 1})}) {
    ASSERT_EQ(Parts.size(), 16u);
    EXPECT_NE(Parts[0], Parts[8]);
    EXPECT_EQ(partWeights(G, Parts, 2)[0], 8e18);
  }
}

//===----------------------------------------------------------------------===//
// Fitting a placement in memory
//===----------------------------------------------------------------------===//

/// Two devices of type "t" with \p Memory bytes each, joined by one link.
Cluster makeCluster(uint64_t Memory) {
  DeviceType T;
  T.Name = "t";
  T.PeakFlops[unsigned(DTypeKind::F32)] = 1e12;
  T.MemoryBandwidth = 1e11;
  T.MemoryBytes = Memory;
  return cantFail(Cluster::create("test", {T}, {{"g0", 0}, {"g1", 0}}, {},
                                  {{"l", 0, 1, 1e9, 0}}));
}

/// Independent ops reading one input, each keeping \p Persistent bytes.
Graph makeIndependentOps(ArrayRef<int64_t> Persistent) {
  Graph G;
  G.setName("g");
  TensorId X = G.addInput("x", TensorType(DTypeKind::F32, {1}));
  for (unsigned I = 0; I != Persistent.size(); ++I) {
    std::string Name = "op" + std::to_string(I);
    OpId O = G.addOp(Name, "", "Op", {X},
                     {{Name + ".out", TensorType(DTypeKind::F32, {1})}});
    G.getOp(O).Annotations.set("time.t", Attribute::getFloat(1.0));
    G.getOp(O).Annotations.set("persistent_bytes",
                               Attribute::getInt(Persistent[I]));
    G.addOutput(G.getOp(O).Results[0]);
  }
  return G;
}

TEST(PartitionTest, FittingMovesUnitsOffAFullDevice) {
  Graph G = makeIndependentOps({300000, 300000, 300000, 300000});
  Cluster C = makeCluster(1 << 20);
  Expected<PlacementProblem> P = PlacementProblem::build(G, C);
  ASSERT_TRUE(bool(P)) << describe(collectErrors(P.takeError()));
  std::vector<uint32_t> Placement(4, 0);
  ASSERT_TRUE(P->simulate(Placement).OOM);
  llvm::Error E = fitPlacementInMemory(*P, "test", {0, 1}, Placement);
  ASSERT_FALSE(bool(E)) << describe(collectErrors(std::move(E)));
  EXPECT_FALSE(P->simulate(Placement).OOM);
  // The least needed: one unit moves.
  EXPECT_EQ(std::count(Placement.begin(), Placement.end(), 1u), 1);
}

TEST(PartitionTest, FittingFailsNamingTheUnitThatFitsNowhere) {
  Graph G = makeIndependentOps({100, 2000000, 100});
  Cluster C = makeCluster(1 << 20);
  Expected<PlacementProblem> P = PlacementProblem::build(G, C);
  ASSERT_TRUE(bool(P)) << describe(collectErrors(P.takeError()));
  std::vector<uint32_t> Placement(3, 0);
  std::vector<Diag> Diags =
      collectErrors(fitPlacementInMemory(*P, "test", {0, 1}, Placement));
  ASSERT_EQ(Diags.size(), 1u);
  EXPECT_EQ(Diags[0].Loc.Node, "op1");
  EXPECT_EQ(StringRef(Diags[0].Message).substr(0, 48),
            "place{algo=test}: no device can hold op 'op1': i");
}

TEST(PartitionTest, PartsThatTalkGoToCloseDevices) {
  // g0 and g1 share switch s0, g2 and g3 share s1; the switches are joined
  // by a slow link. Op 0 sends op 2 much, op 1 sends op 3 much.
  DeviceType T;
  T.Name = "t";
  T.PeakFlops[unsigned(DTypeKind::F32)] = 1e12;
  T.MemoryBandwidth = 1e11;
  T.MemoryBytes = 1 << 20;
  Cluster C = cantFail(Cluster::create(
      "test", {T}, {{"g0", 0}, {"g1", 0}, {"g2", 0}, {"g3", 0}}, {"s0", "s1"},
      {{"l0", 0, 4, 1e9, 0},
       {"l1", 1, 4, 1e9, 0},
       {"l2", 2, 5, 1e9, 0},
       {"l3", 3, 5, 1e9, 0},
       {"l4", 4, 5, 1e3, 0}}));
  Graph G;
  G.setName("g");
  TensorId X = G.addInput("x", TensorType(DTypeKind::F32, {1}));
  auto AddOp = [&](StringRef Name, TensorId In) {
    OpId O =
        G.addOp(Name, "", "Op", {In},
                {{Name.str() + ".out", TensorType(DTypeKind::F32, {1000})}});
    G.getOp(O).Annotations.set("time.t", Attribute::getFloat(1.0));
    return G.getOp(O).Results[0];
  };
  TensorId T0 = AddOp("op0", X), T1 = AddOp("op1", X);
  G.addOutput(AddOp("op2", T0));
  G.addOutput(AddOp("op3", T1));
  Expected<PlacementProblem> P = PlacementProblem::build(G, C);
  ASSERT_TRUE(bool(P)) << describe(collectErrors(P.takeError()));
  ASSERT_EQ(P->getNumUnits(), 4u);
  // A part per unit, parts 0 and 2 (and 1 and 3) across the slow link.
  std::vector<unsigned> PartDevice = {0, 1, 2, 3};
  assignPartsToDevices(*P, {0, 1, 2, 3}, PartDevice);
  EXPECT_EQ(PartDevice[0] / 2, PartDevice[2] / 2);
  EXPECT_EQ(PartDevice[1] / 2, PartDevice[3] / 2);
  EXPECT_NE(PartDevice[0] / 2, PartDevice[1] / 2);
}

} // namespace
