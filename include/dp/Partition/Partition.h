//===- dp/Partition/Partition.h - Weighted graphs and METIS -----*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// A weighted undirected graph with double weights and the one wrapper
/// around METIS that partitions it (scaling the weights into METIS's
/// integer ranges): colocate{strategy=metis} cuts op groups with it and the
/// `metis` placer splits units among devices. The `scotch` placer maps the
/// same graph with Scotch (dp/Place/GraphPartition.h).
///
//===----------------------------------------------------------------------===//

#ifndef DP_PARTITION_PARTITION_H
#define DP_PARTITION_PARTITION_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <vector>

namespace dp {

/// Symmetric adjacency in compressed sparse row form: the neighbours of
/// vertex V are Neighbours[Begin[V]..Begin[V + 1]), in increasing order,
/// each with the total weight of the edges joining them.
struct Adjacency {
  std::vector<uint32_t> Begin, Neighbours;
  std::vector<double> Weights;
};

/// An undirected graph with weighted vertices and edges.
struct PartitionGraph {
  struct Edge {
    uint32_t A = 0, B = 0;
    double Weight = 0;
  };

  unsigned NumVertices = 0;
  /// Weights per vertex that parts balance (1 or 2).
  unsigned NumConstraints = 1;
  /// VertexWeights[V * NumConstraints + C] >= 0.
  std::vector<double> VertexWeights;
  /// Edges in any order; parallel edges add up, self loops and edges of
  /// weight 0 are ignored.
  std::vector<Edge> Edges;

  /// The edges as symmetric adjacency lists (parallel edges merged, self
  /// loops and zero weights dropped).
  Adjacency getAdjacency() const;
};

struct PartitionOptions {
  /// How far a part may exceed its target share, as a fraction (0.03:
  /// 3 %).
  double Imbalance = 0.03;
  /// METIS only: the imbalance of each constraint, where they differ
  /// (empty: Imbalance for all).
  std::vector<double> ConstraintImbalance;
  /// The libraries' random seed: the same seed gives the same partition.
  uint64_t Seed = 0;
};

/// Partitions \p G into \p NumParts parts with METIS_PartGraphKway,
/// minimizing the weight of cut edges while every part P gets about
/// TargetShares[P * NumConstraints + C] of the total weight of constraint C
/// (shares are relative: each constraint's are scaled to sum to 1).
/// Returns a part per vertex.
llvm::Expected<std::vector<uint32_t>>
partitionGraphMetis(const PartitionGraph &G, unsigned NumParts,
                    llvm::ArrayRef<double> TargetShares,
                    const PartitionOptions &Opts);

/// Scales non-negative \p Weights to integers summing to about \p Budget
/// (at most Budget + Weights.size()), keeping every positive weight at
/// least 1 and, with \p AtLeastOne, zero weights too.
std::vector<int64_t> scaleWeights(llvm::ArrayRef<double> Weights,
                                  int64_t Budget, bool AtLeastOne);

} // namespace dp

#endif // DP_PARTITION_PARTITION_H
