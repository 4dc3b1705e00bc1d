//===- SinglePlacer.cpp - Everything on one device ------------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "Placers.h"
#include "dp/Support/Diagnostics.h"
#include "dp/Support/Format.h"

using namespace llvm;

namespace dp {

namespace {
struct SingleOptions {
  /// The device to place on; empty: the fastest that fits.
  std::string Device;
};
} // namespace

static void declareOptions(OptionTable &T, SingleOptions &O) {
  T.text("device", O.Device, "NAME");
}

/// Every unit on one device: the `device=` option if given, else the
/// fastest device on which the simulated step fits in memory.
static Expected<std::vector<uint32_t>>
placeOnOneDevice(const PlacementProblem &P, const PlaceOptions &,
                 const SingleOptions &O) {
  const Cluster &C = P.getCluster();
  unsigned N = P.getNumUnits();
  StringRef Forced = O.Device;
  if (!Forced.empty()) {
    int Dev = C.lookupDevice(Forced);
    if (Dev < 0)
      return makeError("place: cluster '" + C.getName() +
                       "' has no device '" + Forced + "'");
    return std::vector<uint32_t>(N, uint32_t(Dev));
  }
  int Best = -1, Fastest = -1;
  double BestTime = 0, FastestTime = 0;
  uint64_t FastestOver = 0;
  std::vector<uint32_t> Placement(N);
  // Under data-parallel replicas, only replica 0's devices (the others
  // hold its copies).
  std::vector<unsigned> Devs;
  for (unsigned Dev = 0, E = C.getNumDevices(); Dev != E; ++Dev)
    Devs.push_back(Dev);
  if (const Optional<PipelinePlan> &Plan = P.getSimGraph().getPlan())
    Devs = getReplicaGroup(C, *Plan, Devs);
  if (Devs.empty())
    return makeError("place{algo=single}: replicas=" +
                     Twine(P.getSimGraph().getPlan()->Replicas) +
                     " is more than the devices of any type on '" +
                     C.getName() + "'");
  for (unsigned Dev : Devs) {
    std::fill(Placement.begin(), Placement.end(), Dev);
    const SimResult &R = P.simulate(Placement);
    if (Fastest < 0 || R.StepTime < FastestTime) {
      Fastest = Dev;
      FastestTime = R.StepTime;
      FastestOver =
          R.OOM ? R.PeakBytes[Dev] - C.getDeviceType(Dev).MemoryBytes : 0;
    }
    if (R.OOM || (Best >= 0 && R.StepTime >= BestTime))
      continue;
    Best = Dev;
    BestTime = R.StepTime;
  }
  if (Best < 0)
    return makeError(
        "place{algo=single}: no single device can hold the step; on '" +
        C.getDevices()[Fastest].Name + "', the fastest, it needs " +
        formatBytes(FastestOver) + " more than its " +
        formatBytes(C.getDeviceType(Fastest).MemoryBytes) +
        " (place{algo=single,device=NAME} places it there anyway)");
  return std::vector<uint32_t>(N, uint32_t(Best));
}

DP_DEFINE_PLACER(placeSingle, describeSingle, declareOptions, placeOnOneDevice)

} // namespace dp
