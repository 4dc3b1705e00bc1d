//===- Partition.cpp - Weighted graphs and METIS --------------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/Partition/Partition.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Twine.h"

#include <metis.h>

#include <algorithm>
#include <cassert>
#include <cmath>

using namespace llvm;

namespace dp {

Adjacency PartitionGraph::getAdjacency() const {
  Adjacency A;
  A.Begin.assign(NumVertices + 1, 0);
  auto Kept = [](const Edge &E) { return E.A != E.B && E.Weight > 0; };
  for (const Edge &E : Edges) {
    assert(E.A < NumVertices && E.B < NumVertices && "edge out of range");
    if (!Kept(E))
      continue;
    ++A.Begin[E.A + 1];
    ++A.Begin[E.B + 1];
  }
  for (unsigned V = 0; V != NumVertices; ++V)
    A.Begin[V + 1] += A.Begin[V];
  std::vector<std::pair<uint32_t, double>> Arcs(A.Begin.back());
  std::vector<uint32_t> Fill(A.Begin.begin(), A.Begin.end() - 1);
  for (const Edge &E : Edges) {
    if (!Kept(E))
      continue;
    Arcs[Fill[E.A]++] = {E.B, E.Weight};
    Arcs[Fill[E.B]++] = {E.A, E.Weight};
  }
  // Sort each row and merge parallel arcs, compacting in place.
  uint32_t Out = 0;
  for (unsigned V = 0; V != NumVertices; ++V) {
    auto First = Arcs.begin() + A.Begin[V],
         Last = Arcs.begin() + A.Begin[V + 1];
    std::sort(First, Last,
              [](const auto &L, const auto &R) { return L.first < R.first; });
    A.Begin[V] = Out;
    for (auto I = First; I != Last; ++I) {
      if (Out != A.Begin[V] && Arcs[Out - 1].first == I->first) {
        Arcs[Out - 1].second += I->second;
        continue;
      }
      Arcs[Out++] = *I;
    }
  }
  A.Begin[NumVertices] = Out;
  A.Neighbours.resize(Out);
  A.Weights.resize(Out);
  for (uint32_t I = 0; I != Out; ++I) {
    A.Neighbours[I] = Arcs[I].first;
    A.Weights[I] = Arcs[I].second;
  }
  return A;
}

std::vector<int64_t> scaleWeights(ArrayRef<double> Weights, int64_t Budget,
                                  bool AtLeastOne) {
  double Total = 0;
  for (double W : Weights) {
    assert(W >= 0 && "weights are non-negative");
    Total += W;
  }
  std::vector<int64_t> Scaled(Weights.size(), AtLeastOne ? 1 : 0);
  if (!(Total > 0) || !std::isfinite(Total))
    return Scaled;
  double Factor = double(Budget) / Total;
  for (size_t I = 0, E = Weights.size(); I != E; ++I) {
    if (!(Weights[I] > 0))
      continue;
    // W * Factor <= Budget, so this neither overflows nor, summed, exceeds
    // Budget by more than one per weight.
    int64_t V = int64_t(std::floor(Weights[I] * Factor + 0.5));
    Scaled[I] = std::max<int64_t>(V, 1);
  }
  return Scaled;
}

/// A failure of the library, which the placer prefixes with its name.
static Error makeLibraryError(const Twine &Message) {
  return createStringError(inconvertibleErrorCode(), Message);
}

// METIS sums vertex weights (per constraint) and edge weights in idx_t;
// these budgets keep every sum far from its limit.
static_assert(sizeof(idx_t) >= 4, "METIS with 16-bit indices");
static constexpr int64_t MetisVertexBudget = int64_t(1) << 26;
static constexpr int64_t MetisEdgeBudget = int64_t(1) << 28;

Expected<std::vector<uint32_t>>
partitionGraphMetis(const PartitionGraph &G, unsigned NumParts,
                    ArrayRef<double> TargetShares,
                    const PartitionOptions &Opts) {
  unsigned N = G.NumVertices, NCon = G.NumConstraints;
  assert(NumParts > 0 && "partitioning into no parts");
  assert(NCon > 0 && G.VertexWeights.size() == size_t(N) * NCon &&
         TargetShares.size() == size_t(NumParts) * NCon &&
         "a weight per vertex and constraint, a share per part and "
         "constraint");
  if (N == 0)
    return std::vector<uint32_t>();
  // One part needs no METIS. Vertex and arc counts below 2^30 keep the
  // scaled sums (budget plus one per vertex or arc) below 2^31.
  if (NumParts == 1)
    return std::vector<uint32_t>(N, 0);
  if (uint64_t(N) >= uint64_t(1) << 30)
    return makeLibraryError("METIS: the graph has too many vertices (" +
                            Twine(N) + ")");

  Adjacency Adj = G.getAdjacency();
  if (uint64_t(Adj.Neighbours.size()) >= uint64_t(1) << 30)
    return makeLibraryError("METIS: the graph has too many edges (" +
                            Twine(Adj.Neighbours.size() / 2) + ")");
  std::vector<idx_t> XAdj(Adj.Begin.begin(), Adj.Begin.end());
  std::vector<idx_t> AdjNcy(Adj.Neighbours.begin(), Adj.Neighbours.end());
  std::vector<idx_t> AdjWgt;
  // Both arcs of an edge carry the same weight, so they scale alike.
  for (int64_t W : scaleWeights(Adj.Weights, MetisEdgeBudget, false))
    AdjWgt.push_back(idx_t(W));

  // Every vertex weighs at least 1 so that METIS never sees a constraint
  // that weighs nothing.
  std::vector<idx_t> VWgt(size_t(N) * NCon);
  std::vector<double> Column(N);
  for (unsigned C = 0; C != NCon; ++C) {
    for (unsigned V = 0; V != N; ++V)
      Column[V] = G.VertexWeights[size_t(V) * NCon + C];
    std::vector<int64_t> Scaled =
        scaleWeights(Column, MetisVertexBudget, /*AtLeastOne=*/true);
    for (unsigned V = 0; V != N; ++V)
      VWgt[size_t(V) * NCon + C] = idx_t(Scaled[V]);
  }

  // Shares: each at least a little (METIS divides by them), and summing to
  // 1 per constraint in METIS's precision.
  std::vector<real_t> TPWgts(size_t(NumParts) * NCon);
  for (unsigned C = 0; C != NCon; ++C) {
    double Sum = 0;
    for (unsigned Part = 0; Part != NumParts; ++Part)
      Sum += std::max(TargetShares[size_t(Part) * NCon + C], 0.0);
    for (unsigned Part = 0; Part != NumParts; ++Part) {
      double Share =
          Sum > 0 ? std::max(TargetShares[size_t(Part) * NCon + C], 0.0) / Sum
                  : 1.0 / NumParts;
      TPWgts[size_t(Part) * NCon + C] = real_t(std::max(Share, 1e-4));
    }
    double Total = 0;
    for (unsigned Part = 0; Part != NumParts; ++Part)
      Total += TPWgts[size_t(Part) * NCon + C];
    for (unsigned Part = 0; Part != NumParts; ++Part)
      TPWgts[size_t(Part) * NCon + C] =
          real_t(TPWgts[size_t(Part) * NCon + C] / Total);
  }

  idx_t Options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(Options);
  Options[METIS_OPTION_NUMBERING] = 0;
  Options[METIS_OPTION_SEED] = idx_t(Opts.Seed & 0x7fffffff);
  assert((Opts.ConstraintImbalance.empty() ||
          Opts.ConstraintImbalance.size() == NCon) &&
         "an imbalance per constraint");
  std::vector<real_t> UBVec;
  for (unsigned C = 0; C != NCon; ++C) {
    double Imbalance = Opts.ConstraintImbalance.empty()
                           ? Opts.Imbalance
                           : Opts.ConstraintImbalance[C];
    UBVec.push_back(real_t(1 + std::max(Imbalance, 0.001)));
  }

  idx_t NVtxs = idx_t(N), NConI = idx_t(NCon), NPartsI = idx_t(NumParts);
  idx_t EdgeCut = 0;
  std::vector<idx_t> Part(N, 0);
  int Status = METIS_PartGraphKway(
      &NVtxs, &NConI, XAdj.data(), AdjNcy.data(), VWgt.data(),
      /*vsize=*/nullptr, AdjWgt.empty() ? nullptr : AdjWgt.data(), &NPartsI,
      TPWgts.data(), UBVec.data(), Options, &EdgeCut, Part.data());
  if (Status != METIS_OK)
    return makeLibraryError("METIS_PartGraphKway failed (status " +
                            Twine(Status) + ")");
  std::vector<uint32_t> Result(N);
  for (unsigned V = 0; V != N; ++V) {
    assert(Part[V] >= 0 && Part[V] < NPartsI && "METIS part out of range");
    Result[V] = uint32_t(Part[V]);
  }
  return Result;
}

} // namespace dp
