//===- dp/Place/GraphPartition.h - METIS and Scotch for placers -*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The graph partitioning placers (`metis`, `scotch`) in layers that can be
/// tested alone: Scotch's wrapper (METIS's is dp/Partition/Partition.h,
/// shared with colocate{strategy=metis}), and the steps that turn a
/// PlacementProblem into a weighted graph and a partition into a placement
/// that fits in memory.
///
//===----------------------------------------------------------------------===//

#ifndef DP_PLACE_GRAPHPARTITION_H
#define DP_PLACE_GRAPHPARTITION_H

#include "dp/Partition/Partition.h"
#include "dp/Place/Placer.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <vector>

namespace dp {

/// Maps \p G onto Speed.size() processors with SCOTCH_graphMap, minimizing
/// the sum over cut edges of weight times distance while each processor
/// gets load in proportion to its speed (constraint 0 only). \p Distance is
/// row-major, Speed.size() squared, symmetric, > 0 off the diagonal (a
/// relative cost per unit of edge weight). Returns a processor per vertex.
llvm::Expected<std::vector<uint32_t>>
mapGraphScotch(const PartitionGraph &G, llvm::ArrayRef<double> Speed,
               llvm::ArrayRef<double> Distance, const PartitionOptions &Opts);

/// What a partitioning placer splits the units among in one try.
struct PartitionRequest {
  /// The devices, one part each.
  llvm::ArrayRef<unsigned> Devices;
  PartitionOptions Options;
};

/// Partitions \p P's units among Request.Devices: a device per unit. Its
/// errors are the library's; the driver names the placer before them.
using PartitionFn = llvm::function_ref<llvm::Expected<std::vector<uint32_t>>(
    const PlacementProblem &P, const PartitionRequest &Request)>;

/// The driver of the partitioning placer \p Algo. Its options:
/// `devices=gpus|all` (the devices to partition among: the GPUs, the
/// default, or every device), `parts=auto|N` (how many of them to use:
/// with auto, the default, each count from 1 up, the placement with the
/// shortest simulated step wins; N uses exactly N) and `imbalance=PERCENT`
/// (3 by default). For k parts it takes the k fastest devices, each next
/// one the device with the fastest slowest route to those taken, calls
/// \p Partition, and fits the result in memory (fitPlacementInMemory).
llvm::Expected<std::vector<uint32_t>>
placeByPartitioning(const PlacementProblem &P, llvm::StringRef Algo,
                    const PlaceOptions &Opts, PartitionFn Partition);

/// Relative speed of each of \p Devices on \p P's units: the inverse of
/// the time all units take there, normalized so the fastest is 1 (all 1
/// when the units take no time).
std::vector<double> getDeviceSpeeds(const PlacementProblem &P,
                                    llvm::ArrayRef<unsigned> Devices);

/// The unit graph of \p P: vertices are units weighing their compute time
/// on the fastest of \p Devices (and, with \p WithMemory where units keep
/// any memory, their static memory as a second constraint); edges weigh
/// the bytes units exchange.
PartitionGraph buildUnitGraph(const PlacementProblem &P,
                              llvm::ArrayRef<unsigned> Devices,
                              bool WithMemory);

/// Improves which device each part goes to: \p PartDevice gives a device
/// per part (parts numbered as in \p UnitPart, a part per unit), and
/// parts on devices of one type swap devices while that lowers the sum
/// over part pairs of the bytes they exchange times the seconds per byte
/// of their route.
void assignPartsToDevices(const PlacementProblem &P,
                          llvm::ArrayRef<uint32_t> UnitPart,
                          std::vector<unsigned> &PartDevice);

/// The placement that puts each unit on the device of its part: the entry
/// of \p PartDevice for the unit's part in \p UnitPart.
std::vector<uint32_t> placeParts(llvm::ArrayRef<uint32_t> UnitPart,
                                 llvm::ArrayRef<unsigned> PartDevice);

/// Makes \p Placement (a device per unit, each one of \p Devices) fit in
/// memory. The simulator judges whether it fits; while it does not, units
/// move off each device whose simulated peak exceeds its capacity until
/// their static memory (getUnitMemory) covers the excess: first those that
/// add the least traffic per byte they free, each to the device among
/// \p Devices with room (capacity minus simulated peak) that it exchanges
/// most bytes with (ties: the most room). Fails with makeNoFitError when
/// that finds no fit.
llvm::Error fitPlacementInMemory(const PlacementProblem &P,
                                 llvm::StringRef Algo,
                                 llvm::ArrayRef<unsigned> Devices,
                                 std::vector<uint32_t> &Placement);

} // namespace dp

#endif // DP_PLACE_GRAPHPARTITION_H
