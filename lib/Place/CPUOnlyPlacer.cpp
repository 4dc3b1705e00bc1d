//===- CPUOnlyPlacer.cpp - Everything on the first CPU --------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The CPU-only baseline of the papers: every unit on the cluster's first
/// device of kind cpu.
///
//===----------------------------------------------------------------------===//

#include "Placers.h"
#include "dp/Support/Diagnostics.h"

#include <algorithm>

using namespace llvm;

namespace dp {

namespace {
struct CPUOnlyOptions {};
} // namespace

static void declareOptions(OptionTable &, CPUOnlyOptions &) {}

static Expected<std::vector<uint32_t>> placeOnCPU(const PlacementProblem &P,
                                                  const PlaceOptions &,
                                                  const CPUOnlyOptions &) {
  const Cluster &C = P.getCluster();
  unsigned N = P.getNumUnits();
  unsigned D = C.getNumDevices();
  unsigned CPU = 0;
  while (CPU != D && C.getDeviceType(CPU).Kind != DeviceKind::CPU)
    ++CPU;
  if (CPU == D)
    return makeError("place{algo=cpu-only}: cluster '" + C.getName() +
                     "' has no device of kind cpu");
  std::vector<uint32_t> Placement(N, CPU);
  const SimResult &R = P.simulate(Placement);
  if (!R.OOM)
    return std::move(Placement);
  // Name the largest unit: whatever else is live at the peak leaves it
  // at most capacity - (peak - its bytes).
  unsigned Largest = 0;
  for (unsigned U = 1; U != N; ++U)
    if (P.getUnitMemory(U) > P.getUnitMemory(Largest))
      Largest = U;
  uint64_t Capacity = P.getDeviceCapacity(CPU);
  uint64_t Others =
      R.PeakBytes[CPU] - std::min(R.PeakBytes[CPU], P.getUnitMemory(Largest));
  uint64_t Free = Capacity - std::min(Capacity, Others);
  return makeNoFitError(P, "cpu-only", Largest, Free, CPU);
}

DP_DEFINE_PLACER(placeCPUOnly, describeCPUOnly, declareOptions, placeOnCPU)

} // namespace dp
