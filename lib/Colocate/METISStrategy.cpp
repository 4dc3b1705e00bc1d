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
#include "dp/Support/Diagnostics.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"

#include <metis.h>

#include <cmath>

using namespace llvm;

namespace dp {

/// Weights (seconds, bytes) are scaled to integers summing to about 2^26,
/// each at least 1: fine enough, and far from overflowing METIS's 32-bit
/// idx_t in its sums.
static constexpr double MaxTotalWeight = double(1 << 26);

static std::vector<idx_t> scaleWeights(ArrayRef<double> Values) {
  double Total = 0;
  for (double V : Values)
    Total += V;
  double Scale = Total > 0 ? MaxTotalWeight / Total : 0;
  std::vector<idx_t> W(Values.size());
  for (size_t I = 0, E = Values.size(); I != E; ++I)
    W[I] = std::max<idx_t>(1, idx_t(std::llround(Values[I] * Scale)));
  return W;
}

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

  std::vector<double> ClassCost(N, 0);
  for (OpId O = 0, E = G.getNumOps(); O != E; ++O)
    ClassCost[Hints.GroupOf[O]] += Costs[O];
  std::vector<idx_t> VertexWeight = scaleWeights(ClassCost);

  // Symmetric adjacency in CSR form: bytes either way between two classes.
  std::vector<GroupEdge> Directed = getGroupEdges(G, Hints);
  DenseMap<uint64_t, double> Undirected;
  for (const GroupEdge &E : Directed) {
    uint32_t A = std::min(E.From, E.To), B = std::max(E.From, E.To);
    Undirected[(uint64_t(A) << 32) | B] += double(E.Bytes);
  }
  std::vector<std::pair<uint64_t, double>> Pairs(Undirected.begin(),
                                                 Undirected.end());
  llvm::sort(Pairs,
             [](const auto &X, const auto &Y) { return X.first < Y.first; });
  std::vector<double> PairBytes;
  for (const auto &P : Pairs)
    PairBytes.push_back(P.second);
  std::vector<idx_t> PairWeight = scaleWeights(PairBytes);

  std::vector<idx_t> XAdj(N + 1, 0);
  for (const auto &P : Pairs) {
    ++XAdj[(P.first >> 32) + 1];
    ++XAdj[(P.first & 0xffffffffu) + 1];
  }
  for (unsigned I = 0; I != N; ++I)
    XAdj[I + 1] += XAdj[I];
  std::vector<idx_t> Adj(XAdj.back()), AdjWeight(XAdj.back());
  std::vector<idx_t> Fill(XAdj.begin(), XAdj.end() - 1);
  for (size_t I = 0, E = Pairs.size(); I != E; ++I) {
    idx_t A = idx_t(Pairs[I].first >> 32);
    idx_t B = idx_t(Pairs[I].first & 0xffffffffu);
    Adj[Fill[A]] = B;
    AdjWeight[Fill[A]++] = PairWeight[I];
    Adj[Fill[B]] = A;
    AdjWeight[Fill[B]++] = PairWeight[I];
  }

  idx_t Options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(Options);
  Options[METIS_OPTION_SEED] = idx_t(Seed & 0x7fffffff);
  Options[METIS_OPTION_NUMBERING] = 0;
  idx_t NumVertices = idx_t(N), NumConstraints = 1, NumParts = idx_t(Groups);
  idx_t EdgeCut = 0;
  std::vector<idx_t> Part(N, 0);
  int Status = METIS_PartGraphKway(
      &NumVertices, &NumConstraints, XAdj.data(), Adj.data(),
      VertexWeight.data(), /*vsize=*/nullptr, AdjWeight.data(), &NumParts,
      /*tpwgts=*/nullptr, /*ubvec=*/nullptr, Options, &EdgeCut, Part.data());
  if (Status != METIS_OK)
    return makeError(
        "colocate{strategy=metis}: METIS_PartGraphKway failed (" +
        Twine(Status == METIS_ERROR_MEMORY ? "out of memory" : "error") + ")");

  std::vector<uint32_t> Keys(G.getNumOps());
  for (OpId O = 0, E = G.getNumOps(); O != E; ++O)
    Keys[O] = uint32_t(Part[Hints.GroupOf[O]]);
  return makeGrouping(Keys);
}

} // namespace dp
