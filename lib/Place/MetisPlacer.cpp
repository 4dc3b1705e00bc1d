//===- MetisPlacer.cpp - Graph partitioning with METIS --------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The `metis` placer: METIS_PartGraphKway splits the unit graph into one
/// part per device, balancing compute time (shares in proportion to device
/// speed) and static memory (in proportion to capacity) while cutting as
/// few bytes as it can; parts then go to devices so that heavy traffic
/// takes fast routes, and the result is made to fit in memory.
///
//===----------------------------------------------------------------------===//

#include "Placers.h"
#include "dp/Place/GraphPartition.h"
#include "dp/Support/Diagnostics.h"

#include <metis.h>

#include <algorithm>
#include <cmath>

using namespace llvm;

namespace dp {

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

/// One METIS partition of \p P's units among Request.Devices.
static Expected<std::vector<uint32_t>>
partitionUnits(const PlacementProblem &P, const PartitionRequest &Request) {
  ArrayRef<unsigned> Devices = Request.Devices;
  unsigned K = Devices.size(), N = P.getNumUnits();
  PartitionGraph G = buildUnitGraph(P, Devices, /*WithMemory=*/true);
  // Compute shares follow speed; memory shares follow capacity.
  std::vector<double> Speed = getDeviceSpeeds(P, Devices);
  std::vector<double> Shares;
  for (unsigned I = 0; I != K; ++I) {
    Shares.push_back(Speed[I]);
    if (G.NumConstraints == 2)
      Shares.push_back(double(P.getDeviceCapacity(Devices[I])));
  }
  // A part may hold as much static memory as its device: the memory
  // constraint binds only as the total nears the devices' capacity (and a
  // unit too large for an even share cannot unbalance compute).
  PartitionOptions Options = Request.Options;
  if (G.NumConstraints == 2) {
    double Memory = 0, Capacity = 0;
    for (unsigned U = 0; U != N; ++U)
      Memory += double(P.getUnitMemory(U));
    for (unsigned Dev : Devices)
      Capacity += double(P.getDeviceCapacity(Dev));
    Options.ConstraintImbalance = {
        Options.Imbalance, std::max(Options.Imbalance, Capacity / Memory - 1)};
  }
  Expected<std::vector<uint32_t>> Parts =
      partitionGraphMetis(G, K, Shares, Options);
  if (!Parts)
    return makeError("place{algo=metis}: " + toString(Parts.takeError()));
  std::vector<unsigned> PartDevice(Devices.begin(), Devices.end());
  assignPartsToDevices(P, *Parts, PartDevice);
  std::vector<uint32_t> Placement(N);
  for (unsigned U = 0; U != N; ++U)
    Placement[U] = PartDevice[(*Parts)[U]];
  return Placement;
}

Expected<std::vector<uint32_t>> placeMetis(const PlacementProblem &P,
                                           const PlaceOptions &Opts) {
  return placeByPartitioning(P, "metis", Opts, [&](const PartitionRequest &R) {
    return partitionUnits(P, R);
  });
}

} // namespace dp
