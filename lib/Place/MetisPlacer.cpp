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

#include <algorithm>
#include <cmath>

using namespace llvm;

namespace dp {

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
    return Parts.takeError();
  std::vector<unsigned> PartDevice(Devices.begin(), Devices.end());
  assignPartsToDevices(P, *Parts, PartDevice);
  return placeParts(*Parts, PartDevice);
}

Expected<std::vector<uint32_t>> placeMetis(const PlacementProblem &P,
                                           const PlaceOptions &Opts) {
  return placeByPartitioning(P, "metis", Opts, partitionUnits);
}

} // namespace dp
