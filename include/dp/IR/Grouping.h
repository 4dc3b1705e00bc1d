//===- dp/IR/Grouping.h - Ops in groups, and the group graph ----*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The one place where ops are put into groups and the groups' graph is
/// built: colocate's strategies make groups, and the placement problem's
/// units are groups too (dp/Place/Placer.h), so both count edges and memory
/// the same way.
///
//===----------------------------------------------------------------------===//

#ifndef DP_IR_GROUPING_H
#define DP_IR_GROUPING_H

#include "dp/IR/Graph.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <cstdint>
#include <vector>

namespace dp {

/// Ops assigned to groups: dense ids, numbered in order of each group's
/// first op.
struct Grouping {
  std::vector<uint32_t> GroupOf;
  unsigned NumGroups = 0;
};

/// Numbers the distinct values of \p Keys (one per op) densely in order of
/// first appearance.
Grouping makeGrouping(llvm::ArrayRef<uint32_t> Keys);

/// The classes of ops joined by `colocate` hints (hints naming no op are
/// ignored): the groups every colocation strategy starts from, and the
/// units of a graph that was not colocated.
Grouping getHintClasses(const Graph &G);

/// Data a group sends to another in one step: a tensor goes from the group
/// of its producer (for weights and graph inputs, of its first reader) to
/// every other group reading it, once per group.
struct GroupEdge {
  uint32_t From = 0, To = 0;
  /// Bytes of the distinct tensors From produces (or, for weights and
  /// inputs, first reads) that To reads.
  uint64_t Bytes = 0;
};

/// The edges between the groups \p GroupOf gives the ops, sorted by
/// (From, To), one per ordered pair. With \p ActivationsOnly, weights and
/// graph inputs make none: only tensors some op produces, which order
/// their readers after their producer.
std::vector<GroupEdge> getGroupEdges(const Graph &G,
                                     llvm::ArrayRef<uint32_t> GroupOf,
                                     bool ActivationsOnly = false);
inline std::vector<GroupEdge> getGroupEdges(const Graph &G,
                                            const Grouping &Gr) {
  return getGroupEdges(G, Gr.GroupOf);
}

/// Neighbour lists of a group graph in compressed form: the groups listed
/// for group G are Groups[Begin[G]..Begin[G + 1]), in edge order.
struct GroupAdjacency {
  std::vector<uint32_t> Begin, Groups;

  unsigned getDegree(uint32_t G) const { return Begin[G + 1] - Begin[G]; }
  llvm::ArrayRef<uint32_t> operator[](uint32_t G) const {
    return llvm::makeArrayRef(Groups).slice(Begin[G], getDegree(G));
  }

  /// The lists of \p NumGroups groups over the \p Edges that \p Keep
  /// accepts (all when null): each edge lists its To at its From
  /// (successors) with \p Out, and its From at its To (predecessors) with
  /// \p In; with both, a group's neighbours either way.
  static GroupAdjacency
  build(unsigned NumGroups, llvm::ArrayRef<GroupEdge> Edges, bool Out, bool In,
        llvm::function_ref<bool(const GroupEdge &)> Keep = nullptr);
};

/// Calls \p Fn(From, User) for every use of an activation (a tensor some
/// op produces) by an op \p User of another group than the producer's
/// group \p From, in tensor order.
void forEachCrossGroupUse(const Graph &G, llvm::ArrayRef<uint32_t> GroupOf,
                          llvm::function_ref<void(uint32_t, OpId)> Fn);

/// A static estimate of the bytes each op keeps on its device: its
/// results, its `persistent_bytes`, and the weights and graph inputs it is
/// the first reader of. A group's memory is the sum over its ops.
std::vector<uint64_t> getOpMemory(const Graph &G);

/// Bytes the graph holds all step wherever it is placed: its weights and
/// the ops' `persistent_bytes` (the optimizer's state).
uint64_t getHeldBytes(const Graph &G);

} // namespace dp

#endif // DP_IR_GROUPING_H
