//===- METISStrategy.cpp - EAGLE's METIS grouper --------------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
//
// EAGLE (Lan et al. 2021) groups ops with METIS before placing the groups.
// The vertices are the colocate-hint classes (so a hint is never split),
// weighted by compute time; the edges are weighted by the bytes that flow
// between classes in either direction; METIS_PartGraphKway cuts them into
// the number of groups asked for.
//
//===----------------------------------------------------------------------===//

#include "dp/Colocate/Colocate.h"
#include "dp/Partition/Partition.h"
#include "dp/Support/Diagnostics.h"

using namespace llvm;

namespace dp {

Expected<Grouping> groupByMETIS(const Graph &G, ArrayRef<double> Costs,
                                unsigned Groups, uint64_t Seed) {
  assert(Groups > 0 && "metis needs a group count");
  Grouping Hints = getHintClasses(G);
  unsigned N = Hints.NumGroups;
  // One part, or a part per class: nothing for METIS to decide.
  if (Groups == 1) {
    Grouping One;
    One.GroupOf.assign(G.getNumOps(), 0);
    One.NumGroups = G.getNumOps() ? 1 : 0;
    return One;
  }
  if (Groups >= N)
    return Hints;

  // Classes weigh their compute time; edges the bytes either way.
  PartitionGraph PG;
  PG.NumVertices = N;
  PG.VertexWeights.assign(N, 0);
  for (OpId O = 0, E = G.getNumOps(); O != E; ++O)
    PG.VertexWeights[Hints.GroupOf[O]] += Costs[O];
  for (const GroupEdge &E : getGroupEdges(G, Hints))
    PG.Edges.push_back({E.From, E.To, double(E.Bytes)});
  PartitionOptions Options;
  Options.Seed = Seed;
  Expected<std::vector<uint32_t>> Part = partitionGraphMetis(
      PG, Groups, std::vector<double>(Groups, 1.0), Options);
  if (!Part)
    return makeError("colocate{strategy=metis}: " + toString(Part.takeError()));

  std::vector<uint32_t> Keys(G.getNumOps());
  for (OpId O = 0, E = G.getNumOps(); O != E; ++O)
    Keys[O] = (*Part)[Hints.GroupOf[O]];
  return makeGrouping(Keys);
}

} // namespace dp
