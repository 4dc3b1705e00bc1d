//===- Collectives.cpp - All-reduce over a cluster's links ----------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/Sim/Collectives.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <numeric>

using namespace llvm;

namespace dp {

static constexpr EnumEntry<CollectiveAlgorithm> AlgorithmNames[] = {
    {"ring", CollectiveAlgorithm::Ring},
    {"tree", CollectiveAlgorithm::Tree},
    {"hierarchical", CollectiveAlgorithm::Hierarchical},
};

ArrayRef<EnumEntry<CollectiveAlgorithm>> getCollectiveAlgorithmNames() {
  return AlgorithmNames;
}

StringRef getCollectiveAlgorithmName(CollectiveAlgorithm A) {
  return getEnumName<CollectiveAlgorithm>(AlgorithmNames, A);
}

Optional<CollectiveAlgorithm> parseCollectiveAlgorithmName(StringRef Name) {
  return parseEnumName<CollectiveAlgorithm>(AlgorithmNames, Name);
}

//===----------------------------------------------------------------------===//
// Cost of a phase sequence
//===----------------------------------------------------------------------===//

CollectiveCost costPhases(const Cluster &C, ArrayRef<CollectivePhase> Phases,
                          CollectiveAlgorithm Algorithm) {
  CollectiveCost Cost;
  Cost.Algorithm = Algorithm;
  ArrayRef<Link> Links = C.getLinks();
  // How many of the current phase's transfers cross each channel.
  std::vector<unsigned> Users(C.getNumChannels(), 0);
  for (const CollectivePhase &P : Phases) {
    for (const auto &T : P.Transfers)
      for (unsigned Ch : C.getRoute(T.first, T.second))
        ++Users[Ch];
    // A step takes max over transfers of (latency + Fraction * S / bw).
    // Taking the maxima of the two terms apart keeps the cost linear in S;
    // it is exact when one transfer has both the largest latency and the
    // largest time per byte (every phase of a uniform cluster), and an
    // upper bound by at most the smaller term otherwise.
    double MaxLatency = 0, MaxPerByte = 0;
    for (const auto &T : P.Transfers) {
      if (T.first == T.second)
        continue;
      double Bandwidth = HUGE_VAL;
      for (unsigned Ch : C.getRoute(T.first, T.second))
        Bandwidth = std::min(Bandwidth, Links[Ch / 2].Bandwidth / Users[Ch]);
      MaxLatency = std::max(MaxLatency, C.getRouteLatency(T.first, T.second));
      MaxPerByte = std::max(MaxPerByte, P.Fraction / Bandwidth);
    }
    Cost.Latency += P.Steps * MaxLatency;
    Cost.SecondsPerByte += P.Steps * MaxPerByte;
    for (const auto &T : P.Transfers)
      for (unsigned Ch : C.getRoute(T.first, T.second)) {
        if (Users[Ch] != 0)
          Cost.Channels.push_back(Ch);
        Users[Ch] = 0;
      }
  }
  llvm::sort(Cost.Channels);
  Cost.Channels.erase(std::unique(Cost.Channels.begin(), Cost.Channels.end()),
                      Cost.Channels.end());
  return Cost;
}

//===----------------------------------------------------------------------===//
// Phases of each algorithm
//===----------------------------------------------------------------------===//

std::vector<CollectivePhase> getRingPhases(ArrayRef<unsigned> Devices) {
  unsigned N = Devices.size();
  if (N < 2)
    return {};
  CollectivePhase P;
  for (unsigned I = 0; I != N; ++I)
    P.Transfers.emplace_back(Devices[I], Devices[(I + 1) % N]);
  P.Fraction = 1.0 / N;
  P.Steps = 2 * (N - 1);
  return {std::move(P)};
}

std::vector<CollectivePhase> getTreePhases(ArrayRef<unsigned> Devices) {
  unsigned N = Devices.size();
  std::vector<CollectivePhase> Reduce;
  // Round R joins each multiple of 2^(R+1) with the device 2^R after it.
  for (unsigned Half = 1; Half < N; Half *= 2) {
    CollectivePhase P;
    for (unsigned I = 0; I + Half < N; I += 2 * Half)
      P.Transfers.emplace_back(Devices[I + Half], Devices[I]);
    Reduce.push_back(std::move(P));
  }
  // The broadcast retraces the reduce backwards.
  std::vector<CollectivePhase> Phases = Reduce;
  for (auto It = Reduce.rbegin(), E = Reduce.rend(); It != E; ++It) {
    CollectivePhase P = std::move(*It);
    for (auto &T : P.Transfers)
      std::swap(T.first, T.second);
    Phases.push_back(std::move(P));
  }
  return Phases;
}

std::vector<CollectivePhase>
getHierarchicalPhases(ArrayRef<std::vector<unsigned>> Nodes) {
  unsigned M = Nodes.size();
  if (M == 0)
    return {};
  unsigned K = Nodes.front().size();
  assert(
      all_of(Nodes,
             [&](const std::vector<unsigned> &N) { return N.size() == K; }) &&
      "hierarchical all-reduce over nodes of different sizes");
  std::vector<CollectivePhase> Phases;
  // Reduce-scatter inside every node at once; the all-gather repeats it.
  CollectivePhase Inside;
  if (K >= 2) {
    for (const std::vector<unsigned> &Node : Nodes)
      for (unsigned I = 0; I != K; ++I)
        Inside.Transfers.emplace_back(Node[I], Node[(I + 1) % K]);
    Inside.Fraction = 1.0 / K;
    Inside.Steps = K - 1;
    Phases.push_back(Inside);
  }
  // The K rings across the nodes run at once and share the nodes' uplinks.
  if (M >= 2) {
    CollectivePhase Across;
    for (unsigned I = 0; I != K; ++I)
      for (unsigned J = 0; J != M; ++J)
        Across.Transfers.emplace_back(Nodes[J][I], Nodes[(J + 1) % M][I]);
    Across.Fraction = 1.0 / (double(K) * M);
    Across.Steps = 2 * (M - 1);
    Phases.push_back(std::move(Across));
  }
  if (K >= 2)
    Phases.push_back(std::move(Inside));
  return Phases;
}

//===----------------------------------------------------------------------===//
// Nodes and the choice of algorithm
//===----------------------------------------------------------------------===//

static unsigned findRoot(std::vector<unsigned> &Parent, unsigned X) {
  while (Parent[X] != X)
    X = Parent[X] = Parent[Parent[X]];
  return X;
}

std::vector<std::vector<unsigned>> findNodes(const Cluster &C,
                                             ArrayRef<unsigned> Devices) {
  unsigned N = Devices.size();
  if (N < 4)
    return {};
  double Slowest = HUGE_VAL;
  for (unsigned A : Devices)
    for (unsigned B : Devices)
      if (A != B)
        Slowest = std::min(Slowest, C.getRouteBandwidth(A, B));
  // Union-find over positions in Devices; the root is the first position
  // of its group, so groups come out in the order of first appearance.
  std::vector<unsigned> Parent(N);
  std::iota(Parent.begin(), Parent.end(), 0);
  for (unsigned I = 0; I != N; ++I)
    for (unsigned J = I + 1; J != N; ++J) {
      if (C.getRouteBandwidth(Devices[I], Devices[J]) <= Slowest &&
          C.getRouteBandwidth(Devices[J], Devices[I]) <= Slowest)
        continue;
      unsigned RI = findRoot(Parent, I), RJ = findRoot(Parent, J);
      if (RI != RJ)
        Parent[std::max(RI, RJ)] = std::min(RI, RJ);
    }
  std::vector<std::vector<unsigned>> Nodes;
  std::vector<unsigned> NodeOfRoot(N, ~0u);
  for (unsigned I = 0; I != N; ++I) {
    unsigned R = findRoot(Parent, I);
    if (NodeOfRoot[R] == ~0u) {
      NodeOfRoot[R] = Nodes.size();
      Nodes.emplace_back();
    }
    Nodes[NodeOfRoot[R]].push_back(Devices[I]);
  }
  size_t K = Nodes.front().size();
  if (Nodes.size() < 2 || K < 2 ||
      any_of(Nodes, [&](const std::vector<unsigned> &Node) {
        return Node.size() != K;
      }))
    return {};
  return Nodes;
}

/// The ring that goes from each device to the unvisited one of the fastest
/// route, fewest channels on ties, then the first in \p Devices.
static std::vector<unsigned> getGreedyRing(const Cluster &C,
                                           ArrayRef<unsigned> Devices) {
  unsigned N = Devices.size();
  std::vector<bool> Visited(N, false);
  std::vector<unsigned> Order;
  Order.reserve(N);
  unsigned Cur = 0;
  Visited[0] = true;
  Order.push_back(Devices[0]);
  for (unsigned Step = 1; Step != N; ++Step) {
    unsigned Best = N;
    for (unsigned I = 0; I != N; ++I) {
      if (Visited[I])
        continue;
      if (Best == N) {
        Best = I;
        continue;
      }
      double BW = C.getRouteBandwidth(Devices[Cur], Devices[I]);
      double BestBW = C.getRouteBandwidth(Devices[Cur], Devices[Best]);
      if (BW > BestBW ||
          (BW == BestBW && C.getRoute(Devices[Cur], Devices[I]).size() <
                               C.getRoute(Devices[Cur], Devices[Best]).size()))
        Best = I;
    }
    Visited[Best] = true;
    Order.push_back(Devices[Best]);
    Cur = Best;
  }
  return Order;
}

std::vector<CollectiveCost> getAllReduceCosts(const Cluster &C,
                                              ArrayRef<unsigned> Devices) {
  if (Devices.size() < 2)
    return {};
  std::vector<CollectiveCost> Costs;
  // Rings are compared at large sizes, where the time per byte dominates.
  CollectiveCost Ring =
      costPhases(C, getRingPhases(Devices), CollectiveAlgorithm::Ring);
  CollectiveCost Greedy = costPhases(
      C, getRingPhases(getGreedyRing(C, Devices)), CollectiveAlgorithm::Ring);
  if (std::make_pair(Greedy.SecondsPerByte, Greedy.Latency) <
      std::make_pair(Ring.SecondsPerByte, Ring.Latency))
    Ring = std::move(Greedy);
  Costs.push_back(std::move(Ring));
  Costs.push_back(
      costPhases(C, getTreePhases(Devices), CollectiveAlgorithm::Tree));
  std::vector<std::vector<unsigned>> Nodes = findNodes(C, Devices);
  if (!Nodes.empty())
    Costs.push_back(costPhases(C, getHierarchicalPhases(Nodes),
                               CollectiveAlgorithm::Hierarchical));
  return Costs;
}

const CollectiveCost &pickAllReduce(ArrayRef<CollectiveCost> Costs,
                                    uint64_t Bytes) {
  assert(!Costs.empty() && "no all-reduce algorithm to pick from");
  const CollectiveCost *Best = &Costs.front();
  for (const CollectiveCost &Cost : Costs.drop_front())
    if (Cost.getTime(Bytes) < Best->getTime(Bytes))
      Best = &Cost;
  return *Best;
}

} // namespace dp
