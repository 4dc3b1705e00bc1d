//===- MergeStrategy.cpp - Placeto's Merge-and-Colocate -------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
//
// Placeto (Addanki et al. 2019, appendix A.6): "the Merge-and-Colocate
// heuristic first merges the node with the lowest cost into its neighbor
// [...]. This step is repeated until the graph size reaches a desired value
// or alternatively until there are no more nodes with cost below a certain
// threshold." Here the nodes are groups (starting from the colocate-hint
// classes, or from given groups such as a placement problem's units), the cost
// is compute time on the fastest device type, and the neighbour is the
// predecessor sending the group the most bytes, else the successor receiving
// the most, else the group just before it in graph order. A heap of (cost,
// first op) finds the cheapest group; neighbour lists are merged small into
// large, so a 26k-op graph takes milliseconds.
//
//===----------------------------------------------------------------------===//

#include "dp/Colocate/Colocate.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/IntEqClasses.h"

#include <numeric>
#include <queue>
#include <tuple>

using namespace llvm;

namespace dp {

namespace {
/// A group of the merge: its cost, first op and dataflow neighbours (bytes
/// each way).
struct MergeNode {
  double Cost = 0;
  OpId FirstOp = 0;
  uint32_t Version = 0;
  bool Alive = true;
  DenseMap<uint32_t, uint64_t> Preds, Succs;
};

struct HeapEntry {
  double Cost;
  OpId FirstOp;
  uint32_t Node, Version;
  /// Greater-than, so that std::priority_queue pops the cheapest first;
  /// equal costs go by first op.
  bool operator<(const HeapEntry &O) const {
    return std::tie(Cost, FirstOp) > std::tie(O.Cost, O.FirstOp);
  }
};
} // namespace

/// The neighbour with the most bytes in \p Adj (ties: the earliest group).
static uint32_t pickHeaviest(const DenseMap<uint32_t, uint64_t> &Adj,
                             ArrayRef<MergeNode> Nodes) {
  uint32_t Best = ~0u;
  uint64_t BestBytes = 0;
  for (const auto &[Other, Bytes] : Adj)
    if (Best == ~0u || Bytes > BestBytes ||
        (Bytes == BestBytes && Nodes[Other].FirstOp < Nodes[Best].FirstOp)) {
      Best = Other;
      BestBytes = Bytes;
    }
  return Best;
}

Grouping groupByMerge(const Graph &G, ArrayRef<double> Costs, unsigned Groups,
                      double Threshold, const Grouping *Start) {
  assert(Groups > 0 && "merge needs a group count");
  Grouping Hints = Start ? *Start : getHintClasses(G);
  unsigned N = Hints.NumGroups;
  unsigned NumOps = G.getNumOps();
  std::vector<MergeNode> Nodes(N);
  for (OpId O = NumOps; O-- != 0;) {
    Nodes[Hints.GroupOf[O]].Cost += Costs[O];
    Nodes[Hints.GroupOf[O]].FirstOp = O;
  }
  for (const GroupEdge &E : getGroupEdges(G, Hints)) {
    Nodes[E.From].Succs[E.To] = E.Bytes;
    Nodes[E.To].Preds[E.From] = E.Bytes;
  }

  std::priority_queue<HeapEntry> Heap;
  for (uint32_t X = 0; X != N; ++X)
    Heap.push({Nodes[X].Cost, Nodes[X].FirstOp, X, 0});
  // Sets of merged hint classes; Owner maps a set's representative to the
  // merge node that holds it.
  IntEqClasses Sets(N);
  std::vector<uint32_t> Owner(N);
  std::iota(Owner.begin(), Owner.end(), 0u);
  unsigned Alive = N;
  while (Alive > Groups && !Heap.empty()) {
    HeapEntry Top = Heap.top();
    Heap.pop();
    MergeNode &A = Nodes[Top.Node];
    if (!A.Alive || A.Version != Top.Version)
      continue;
    if (!(A.Cost < Threshold))
      break;
    uint32_t Into;
    if (!A.Preds.empty()) {
      Into = pickHeaviest(A.Preds, Nodes);
    } else if (!A.Succs.empty()) {
      Into = pickHeaviest(A.Succs, Nodes);
    } else {
      // No dataflow: the group holding the op just before its first one
      // (for the group of op 0, the first op outside it).
      OpId Near = A.FirstOp;
      if (Near)
        --Near;
      else
        while (Owner[Sets.findLeader(Hints.GroupOf[Near])] == Top.Node)
          ++Near;
      Into = Owner[Sets.findLeader(Hints.GroupOf[Near])];
    }

    // Keep the node with more neighbours and move the other's into it.
    uint32_t Keep = Top.Node, Gone = Into;
    if (Nodes[Keep].Preds.size() + Nodes[Keep].Succs.size() <
        Nodes[Gone].Preds.size() + Nodes[Gone].Succs.size())
      std::swap(Keep, Gone);
    MergeNode &K = Nodes[Keep], &R = Nodes[Gone];
    K.Preds.erase(Gone);
    K.Succs.erase(Gone);
    R.Preds.erase(Keep);
    R.Succs.erase(Keep);
    for (const auto &[P, Bytes] : R.Preds) {
      MergeNode &PN = Nodes[P];
      PN.Succs.erase(Gone);
      PN.Succs[Keep] += Bytes;
      K.Preds[P] += Bytes;
    }
    for (const auto &[S, Bytes] : R.Succs) {
      MergeNode &SN = Nodes[S];
      SN.Preds.erase(Gone);
      SN.Preds[Keep] += Bytes;
      K.Succs[S] += Bytes;
    }
    R.Preds.shrink_and_clear();
    R.Succs.shrink_and_clear();
    R.Alive = false;
    K.Cost += R.Cost;
    K.FirstOp = std::min(K.FirstOp, R.FirstOp);
    ++K.Version;
    Heap.push({K.Cost, K.FirstOp, Keep, K.Version});
    Owner[Sets.join(Keep, Gone)] = Keep;
    --Alive;
  }

  std::vector<uint32_t> Keys(NumOps);
  for (OpId O = 0; O != NumOps; ++O)
    Keys[O] = Sets.findLeader(Hints.GroupOf[O]);
  return makeGrouping(Keys);
}

} // namespace dp
