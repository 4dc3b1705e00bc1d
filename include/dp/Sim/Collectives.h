//===- dp/Sim/Collectives.h - All-reduce over a cluster's links -*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The time of a gradient all-reduce over a group of devices, by the
/// algorithms NCCL and MPI use, over the cluster's own routes
/// (docs/simulator.md, "Collectives"):
///
/// - ring: reduce-scatter then all-gather around a ring of the n devices,
///   2(n - 1) steps each moving S/n bytes over every hop at once:
///   2(n - 1)/n * S / B + 2(n - 1) * latency on equal links;
/// - tree: a binomial tree's reduce to the first device, then its
///   broadcast back, 2 * ceil(log2 n) rounds each moving S:
///   2 * ceil(log2 n) * (S / B + latency) (latency-bound sizes);
/// - hierarchical: the devices fall into k-device nodes (findNodes()): a
///   ring reduce-scatter inside every node, then k rings across the m
///   nodes at once (the i-th device of each), each all-reducing its S/k,
///   then a ring all-gather inside every node.
///
/// Every algorithm is a sequence of phases; a phase is a set of
/// concurrent point-to-point transfers, each carrying a fraction of S,
/// repeated some number of steps. A phase step takes as long as its
/// slowest transfer: the route's latency plus its bytes over the route's
/// narrowest channel, a channel's bandwidth being shared by the phase's
/// transfers that cross it (two hops of a ring through one PCIe switch
/// uplink each get half). So the cost of an algorithm is linear in S:
/// Latency + S * SecondsPerByte, and it occupies a set of channels.
///
//===----------------------------------------------------------------------===//

#ifndef DP_SIM_COLLECTIVES_H
#define DP_SIM_COLLECTIVES_H

#include "dp/Cluster/Cluster.h"
#include "dp/Support/EnumNames.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/Optional.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <utility>
#include <vector>

namespace dp {

enum class CollectiveAlgorithm : uint8_t { Ring, Tree, Hierarchical };

/// "ring", "tree", "hierarchical".
llvm::ArrayRef<EnumEntry<CollectiveAlgorithm>> getCollectiveAlgorithmNames();
llvm::StringRef getCollectiveAlgorithmName(CollectiveAlgorithm A);
llvm::Optional<CollectiveAlgorithm>
parseCollectiveAlgorithmName(llvm::StringRef Name);

/// Concurrent transfers (source, destination device), each of Fraction
/// times the collective's bytes, repeated Steps times one after another.
struct CollectivePhase {
  std::vector<std::pair<unsigned, unsigned>> Transfers;
  double Fraction = 1;
  unsigned Steps = 1;
};

/// An algorithm's cost over one device group: an all-reduce of S bytes
/// takes Latency + S * SecondsPerByte and occupies Channels (the union
/// of its transfers' routes, sorted, without repeats) while it runs.
struct CollectiveCost {
  CollectiveAlgorithm Algorithm = CollectiveAlgorithm::Ring;
  double Latency = 0;
  double SecondsPerByte = 0;
  std::vector<unsigned> Channels;
  double getTime(uint64_t Bytes) const {
    return Latency + static_cast<double>(Bytes) * SecondsPerByte;
  }
};

/// The cost of \p Phases on \p C (see the file comment), as \p Algorithm.
CollectiveCost costPhases(const Cluster &C,
                          llvm::ArrayRef<CollectivePhase> Phases,
                          CollectiveAlgorithm Algorithm);

/// The phases of \p Algorithm over \p Devices in this order (ring: the
/// ring Devices[0] -> Devices[1] -> ... -> Devices[0]; tree: rooted at
/// Devices[0]; hierarchical: \p Nodes, each a list of the same number of
/// devices, the i-th devices of the nodes forming the i-th ring across).
std::vector<CollectivePhase> getRingPhases(llvm::ArrayRef<unsigned> Devices);
std::vector<CollectivePhase> getTreePhases(llvm::ArrayRef<unsigned> Devices);
std::vector<CollectivePhase>
getHierarchicalPhases(llvm::ArrayRef<std::vector<unsigned>> Nodes);

/// The nodes among \p Devices: the groups joined by routes faster than
/// the slowest route between any two of \p Devices (connected components
/// of that relation), each in the order of \p Devices. Empty unless there
/// are at least two nodes, all of one size of at least two (a hierarchy
/// that hierarchical all-reduce can use).
std::vector<std::vector<unsigned>> findNodes(const Cluster &C,
                                             llvm::ArrayRef<unsigned> Devices);

/// The all-reduce costs over \p Devices (at least two, distinct): the
/// ring (the better of \p Devices' order and an order that takes, from
/// each device, the unvisited device of the fastest route, fewest
/// channels on ties), the tree, and the hierarchical one where findNodes()
/// finds nodes. One device: empty.
std::vector<CollectiveCost> getAllReduceCosts(const Cluster &C,
                                              llvm::ArrayRef<unsigned> Devices);

/// The cost among \p Costs (not empty) that all-reduces \p Bytes
/// fastest, as NCCL picks an algorithm by size (the first on ties).
const CollectiveCost &pickAllReduce(llvm::ArrayRef<CollectiveCost> Costs,
                                    uint64_t Bytes);

} // namespace dp

#endif // DP_SIM_COLLECTIVES_H
