//===- CollectivesTest.cpp - All-reduce costs against closed forms --------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/Sim/Collectives.h"

#include "gtest/gtest.h"

#include <cmath>
#include <numeric>

using namespace dp;
using llvm::cantFail;

namespace {

DeviceType makeType() {
  DeviceType T;
  T.Name = "t";
  T.PeakFlops[unsigned(DTypeKind::F32)] = 1e12;
  T.MemoryBandwidth = 1e11;
  T.MemoryBytes = 1 << 20;
  return T;
}

std::vector<Device> makeDevices(unsigned N) {
  std::vector<Device> Devs;
  for (unsigned I = 0; I != N; ++I)
    Devs.push_back({"g" + std::to_string(I), 0});
  return Devs;
}

std::vector<unsigned> firstDevices(unsigned N) {
  std::vector<unsigned> Devs(N);
  std::iota(Devs.begin(), Devs.end(), 0);
  return Devs;
}

/// \p N devices, each with one link of \p Bandwidth and \p Latency to one
/// switch.
Cluster makeStar(unsigned N, double Bandwidth, double Latency) {
  std::vector<Link> Links;
  for (unsigned I = 0; I != N; ++I)
    Links.push_back({"l" + std::to_string(I), I, N, Bandwidth, Latency});
  return cantFail(
      Cluster::create("star", {makeType()}, makeDevices(N), {"sw"}, Links));
}

/// Devices 0 and 1 on switch X, 2 and 3 on switch Y (links of
/// \p DevBandwidth, \p DevLatency); X and Y joined by one link of
/// \p Bandwidth and \p Latency.
Cluster makeTwoSwitches(double DevBandwidth, double DevLatency,
                        double Bandwidth, double Latency) {
  std::vector<Link> Links;
  for (unsigned I = 0; I != 4; ++I)
    Links.push_back(
        {"l" + std::to_string(I), I, 4 + I / 2, DevBandwidth, DevLatency});
  Links.push_back({"xy", 4, 5, Bandwidth, Latency});
  return cantFail(Cluster::create("two-switches", {makeType()}, makeDevices(4),
                                  {"x", "y"}, Links));
}

/// \p M nodes of \p K devices: device J*K+I is the I-th of node J. Inside
/// a node the devices hang off the node's switch (\p Bi, \p Ai per link);
/// every node switch has one link (\p Be, \p Ae) to a core switch.
Cluster makeNodes(unsigned M, unsigned K, double Bi, double Ai, double Be,
                  double Ae) {
  unsigned N = M * K;
  std::vector<std::string> Switches;
  std::vector<Link> Links;
  for (unsigned J = 0; J != M; ++J) {
    Switches.push_back("node" + std::to_string(J));
    for (unsigned I = 0; I != K; ++I)
      Links.push_back(
          {"l" + std::to_string(J * K + I), J * K + I, N + J, Bi, Ai});
    Links.push_back({"up" + std::to_string(J), N + J, N + M, Be, Ae});
  }
  Switches.push_back("core");
  return cantFail(
      Cluster::create("nodes", {makeType()}, makeDevices(N), Switches, Links));
}

/// The GPUs of \p C, in device order.
std::vector<unsigned> getGPUs(const Cluster &C) {
  std::vector<unsigned> GPUs;
  for (unsigned D = 0, E = C.getNumDevices(); D != E; ++D)
    if (C.getDeviceType(D).Kind == DeviceKind::GPU)
      GPUs.push_back(D);
  return GPUs;
}

const CollectiveCost *findCost(const std::vector<CollectiveCost> &Costs,
                               CollectiveAlgorithm A) {
  for (const CollectiveCost &Cost : Costs)
    if (Cost.Algorithm == A)
      return &Cost;
  return nullptr;
}

/// Equal to a relative 1e-9.
#define EXPECT_CLOSE(Actual, Expected)                                         \
  EXPECT_NEAR(Actual, Expected, 1e-9 * std::fabs(double(Expected)))

constexpr double B = 10e9;
constexpr double Lat = 2e-6;
constexpr uint64_t S = 64 << 20;

TEST(CollectivesTest, AlgorithmNamesRoundTrip) {
  for (const auto &E : getCollectiveAlgorithmNames()) {
    EXPECT_EQ(getCollectiveAlgorithmName(E.Value), E.Name);
    EXPECT_EQ(parseCollectiveAlgorithmName(E.Name), E.Value);
  }
  EXPECT_EQ(getCollectiveAlgorithmName(CollectiveAlgorithm::Hierarchical),
            "hierarchical");
  EXPECT_FALSE(parseCollectiveAlgorithmName("butterfly"));
}

TEST(CollectivesTest, RingOnAStarMovesTwoNMinusOneOverNOfTheBytes) {
  for (unsigned N : {2u, 3u, 4u, 8u}) {
    SCOPED_TRACE("n = " + std::to_string(N));
    Cluster C = makeStar(N, B, Lat);
    CollectiveCost Ring = costPhases(C, getRingPhases(firstDevices(N)),
                                     CollectiveAlgorithm::Ring);
    // Every hop is two links, each channel used by one transfer.
    EXPECT_CLOSE(Ring.getTime(S),
                 2.0 * (N - 1) / N * S / B + 2.0 * (N - 1) * 2 * Lat);
    EXPECT_CLOSE(Ring.SecondsPerByte, 2.0 * (N - 1) / N / B);
    EXPECT_EQ(Ring.Channels.size(), 2 * N);
  }
}

TEST(CollectivesTest, TreeOnAStarTakesTwoLogNRounds) {
  for (unsigned N : {2u, 3u, 4u, 5u, 8u}) {
    SCOPED_TRACE("n = " + std::to_string(N));
    Cluster C = makeStar(N, B, Lat);
    CollectiveCost Tree = costPhases(C, getTreePhases(firstDevices(N)),
                                     CollectiveAlgorithm::Tree);
    // A round's senders are distinct and so are its receivers: no channel
    // is shared.
    double Rounds = std::ceil(std::log2(double(N)));
    EXPECT_CLOSE(Tree.getTime(S), 2 * Rounds * (double(S) / B + 2 * Lat));
  }
}

TEST(CollectivesTest, TreePhasesAreABinomialReduceThenItsBroadcast) {
  std::vector<CollectivePhase> Phases = getTreePhases({10, 11, 12, 13, 14});
  using Transfers = std::vector<std::pair<unsigned, unsigned>>;
  std::vector<Transfers> Expected = {
      {{11, 10}, {13, 12}}, {{12, 10}}, {{14, 10}},
      {{10, 14}},           {{10, 12}}, {{10, 11}, {12, 13}}};
  ASSERT_EQ(Phases.size(), Expected.size());
  for (unsigned I = 0; I != Phases.size(); ++I) {
    EXPECT_EQ(Phases[I].Transfers, Expected[I]) << "phase " << I;
    EXPECT_EQ(Phases[I].Fraction, 1);
    EXPECT_EQ(Phases[I].Steps, 1u);
  }
}

TEST(CollectivesTest, OneDeviceHasNoPhasesAndNoCosts) {
  Cluster C = makeStar(2, B, Lat);
  EXPECT_TRUE(getRingPhases({0}).empty());
  EXPECT_TRUE(getTreePhases({0}).empty());
  EXPECT_TRUE(getAllReduceCosts(C, {1}).empty());
}

TEST(CollectivesTest, TransferToItselfCostsNothing) {
  Cluster C = makeStar(2, B, Lat);
  CollectivePhase P;
  P.Transfers = {{1, 1}};
  P.Steps = 3;
  CollectiveCost Cost = costPhases(C, {P}, CollectiveAlgorithm::Ring);
  EXPECT_EQ(Cost.Latency, 0);
  EXPECT_EQ(Cost.SecondsPerByte, 0);
  EXPECT_TRUE(Cost.Channels.empty());
}

TEST(CollectivesTest, RingHopsThatShareAChannelSplitItsBandwidth) {
  const double Bd = 10e9, Ad = 1e-6, Bx = 4e9, Ax = 3e-6;
  Cluster C = makeTwoSwitches(Bd, Ad, Bx, Ax);
  // 0 -> 1 -> 2 -> 3 -> 0 crosses X -> Y once and Y -> X once.
  CollectiveCost InOrder =
      costPhases(C, getRingPhases({0, 1, 2, 3}), CollectiveAlgorithm::Ring);
  EXPECT_CLOSE(InOrder.SecondsPerByte, 6 * 0.25 / Bx);
  EXPECT_CLOSE(InOrder.Latency, 6 * (2 * Ad + Ax));
  EXPECT_EQ(InOrder.Channels.size(), 10u);
  // 0 -> 2 -> 1 -> 3 -> 0 crosses each direction twice: half of Bx each.
  CollectiveCost Crossed =
      costPhases(C, getRingPhases({0, 2, 1, 3}), CollectiveAlgorithm::Ring);
  EXPECT_CLOSE(Crossed.SecondsPerByte, 6 * 0.25 / (Bx / 2));
  EXPECT_CLOSE(Crossed.Latency, 6 * (2 * Ad + Ax));
  // Given the crossed order, the greedy order finds the uncrossed ring.
  std::vector<CollectiveCost> Costs = getAllReduceCosts(C, {0, 2, 1, 3});
  const CollectiveCost *Ring = findCost(Costs, CollectiveAlgorithm::Ring);
  ASSERT_TRUE(Ring);
  EXPECT_CLOSE(Ring->SecondsPerByte, InOrder.SecondsPerByte);
}

TEST(CollectivesTest, GreedyRingTakesFewerChannelsOnTies) {
  // Every route has bandwidth B: from 0 the greedy order goes to 1 (two
  // channels) rather than 2 (three), and finds the uncrossed ring.
  Cluster C = makeTwoSwitches(B, Lat, B, Lat);
  std::vector<CollectiveCost> Costs = getAllReduceCosts(C, {0, 2, 1, 3});
  const CollectiveCost *Ring = findCost(Costs, CollectiveAlgorithm::Ring);
  ASSERT_TRUE(Ring);
  EXPECT_CLOSE(Ring->SecondsPerByte, 6 * 0.25 / B);
  EXPECT_CLOSE(
      costPhases(C, getRingPhases({0, 2, 1, 3}), CollectiveAlgorithm::Ring)
          .SecondsPerByte,
      6 * 0.25 / (B / 2));
}

TEST(CollectivesTest, HierarchicalRingsShareTheNodeUplinks) {
  const double Bi = 100e9, Ai = 1e-6, Be = 10e9, Ae = 5e-6;
  for (auto MK : {std::make_pair(2u, 4u), std::make_pair(3u, 2u),
                  std::make_pair(4u, 3u)}) {
    unsigned M = MK.first, K = MK.second, N = M * K;
    SCOPED_TRACE("m = " + std::to_string(M) + ", k = " + std::to_string(K));
    Cluster C = makeNodes(M, K, Bi, Ai, Be, Ae);
    std::vector<std::vector<unsigned>> Nodes = findNodes(C, firstDevices(N));
    std::vector<std::vector<unsigned>> Expected(M);
    for (unsigned D = 0; D != N; ++D)
      Expected[D / K].push_back(D);
    EXPECT_EQ(Nodes, Expected);

    std::vector<CollectiveCost> Costs = getAllReduceCosts(C, firstDevices(N));
    const CollectiveCost *Hier =
        findCost(Costs, CollectiveAlgorithm::Hierarchical);
    ASSERT_TRUE(Hier);
    // Inside: 2(k - 1) steps of S/k over the node switch. Across: the k
    // rings' transfers share each uplink channel, k at a time, so each
    // moves S/(k m) at Be/k: 2(m - 1) steps of S/(m Be).
    double CrossLatency = Ai + Ae + Ae + Ai;
    EXPECT_CLOSE(Hier->Latency,
                 2.0 * (K - 1) * 2 * Ai + 2.0 * (M - 1) * CrossLatency);
    EXPECT_CLOSE(Hier->SecondsPerByte,
                 2.0 * (K - 1) / (K * Bi) + 2.0 * (M - 1) / (M * Be));
    EXPECT_CLOSE(Hier->getTime(S),
                 2.0 * (K - 1) * (2 * Ai + double(S) / (K * Bi)) +
                     2.0 * (M - 1) * (CrossLatency + double(S) / (M * Be)));

    // The ring over all devices crosses each uplink direction once.
    const CollectiveCost *Ring = findCost(Costs, CollectiveAlgorithm::Ring);
    ASSERT_TRUE(Ring);
    EXPECT_CLOSE(Ring->SecondsPerByte, 2.0 * (N - 1) / N / Be);
    EXPECT_CLOSE(Ring->Latency, 2.0 * (N - 1) * CrossLatency);
    EXPECT_EQ(pickAllReduce(Costs, uint64_t(1) << 30).Algorithm,
              CollectiveAlgorithm::Hierarchical);
  }
}

TEST(CollectivesTest, TreeAcrossTwoNodesCrossesOnceEachWay) {
  const double Bi = 100e9, Ai = 1e-6, Be = 10e9, Ae = 5e-6;
  Cluster C = makeNodes(2, 4, Bi, Ai, Be, Ae);
  std::vector<CollectiveCost> Costs = getAllReduceCosts(C, firstDevices(8));
  const CollectiveCost *Tree = findCost(Costs, CollectiveAlgorithm::Tree);
  ASSERT_TRUE(Tree);
  // Rounds 1 -> 0 (and 3 -> 2, ...), 2 -> 0 (6 -> 4) inside the nodes,
  // then 4 -> 0 across; the broadcast again.
  EXPECT_CLOSE(Tree->SecondsPerByte, 2 * (2 / Bi + 1 / Be));
  EXPECT_CLOSE(Tree->Latency, 2 * (2 * Ai + 2 * Ai + (2 * Ai + 2 * Ae)));
}

TEST(CollectivesTest, FindNodesNeedsEqualNodesOfTwoOrMore) {
  Cluster C = makeNodes(2, 4, 100e9, 1e-6, 10e9, 5e-6);
  EXPECT_EQ(findNodes(C, {0, 1, 4, 5}),
            (std::vector<std::vector<unsigned>>{{0, 1}, {4, 5}}));
  // In the order of first appearance, each in the given order.
  EXPECT_EQ(findNodes(C, {5, 1, 4, 0}),
            (std::vector<std::vector<unsigned>>{{5, 4}, {1, 0}}));
  EXPECT_TRUE(findNodes(C, {0, 1, 2, 4, 5}).empty());
  EXPECT_TRUE(findNodes(C, {0, 1, 4}).empty());
  EXPECT_TRUE(findNodes(C, {0, 4}).empty());
  EXPECT_TRUE(findNodes(makeStar(8, B, Lat), firstDevices(8)).empty());
}

TEST(CollectivesTest, FindNodesOnPresets) {
  Cluster NVLink = cantFail(getClusterPreset("v100x8-nvlink"));
  EXPECT_TRUE(findNodes(NVLink, firstDevices(8)).empty());
  Cluster IB = cantFail(getClusterPreset("v100x4x2-ib"));
  EXPECT_EQ(findNodes(IB, firstDevices(8)),
            (std::vector<std::vector<unsigned>>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_TRUE(findCost(getAllReduceCosts(IB, firstDevices(8)),
                       CollectiveAlgorithm::Hierarchical));
}

TEST(CollectivesTest, FindNodesOnA100x8x4) {
  Cluster C =
      cantFail(loadCluster(DP_SOURCE_DIR "/bench/clusters/a100x8x4-ib.json"));
  std::vector<unsigned> GPUs = getGPUs(C);
  ASSERT_EQ(GPUs.size(), 32u);
  std::vector<std::vector<unsigned>> Expected(4);
  for (unsigned G : GPUs)
    Expected[G / 8].push_back(G);
  EXPECT_EQ(findNodes(C, GPUs), Expected);
}

TEST(CollectivesTest, GreedyRingOnDGX1UsesOnlyDoubleNVLinks) {
  Cluster C = cantFail(getClusterPreset("v100x8-nvlink"));
  std::vector<unsigned> GPUs = firstDevices(8);
  std::vector<CollectiveCost> Costs = getAllReduceCosts(C, GPUs);
  const CollectiveCost *Ring = findCost(Costs, CollectiveAlgorithm::Ring);
  ASSERT_TRUE(Ring);
  CollectiveCost InOrder =
      costPhases(C, getRingPhases(GPUs), CollectiveAlgorithm::Ring);
  EXPECT_LE(Ring->getTime(S), InOrder.getTime(S));
  // 0-3-2-1-5-6-7-4-0: every hop a direct pair of NVLink 2.0 links, one
  // channel each.
  CollectiveCost Direct = costPhases(C, getRingPhases({0, 3, 2, 1, 5, 6, 7, 4}),
                                     CollectiveAlgorithm::Ring);
  const double DoubleNVLink = 2 * 25e9;
  EXPECT_CLOSE(Direct.SecondsPerByte, 2.0 * 7 / 8 / DoubleNVLink);
  EXPECT_CLOSE(Ring->SecondsPerByte, Direct.SecondsPerByte);
  EXPECT_CLOSE(Ring->Latency, Direct.Latency);
  EXPECT_EQ(Ring->Channels, Direct.Channels);
  EXPECT_EQ(Ring->Channels.size(), 8u);
}

TEST(CollectivesTest, PickTreeForSmallAndRingForLargeOnAStar) {
  Cluster C = makeStar(8, B, Lat);
  std::vector<CollectiveCost> Costs = getAllReduceCosts(C, firstDevices(8));
  ASSERT_EQ(Costs.size(), 2u);
  // Tree: 6 (S/B + 2a); ring: 1.75 S/B + 28 a.
  EXPECT_EQ(pickAllReduce(Costs, 1).Algorithm, CollectiveAlgorithm::Tree);
  EXPECT_EQ(pickAllReduce(Costs, uint64_t(1) << 30).Algorithm,
            CollectiveAlgorithm::Ring);
}

TEST(CollectivesTest, PickTakesTheFirstOnTies) {
  CollectiveCost A, Bc;
  A.Algorithm = CollectiveAlgorithm::Tree;
  A.Latency = Bc.Latency = 1;
  EXPECT_EQ(pickAllReduce({A, Bc}, 100).Algorithm, CollectiveAlgorithm::Tree);
}

} // namespace
