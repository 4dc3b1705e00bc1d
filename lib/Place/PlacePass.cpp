//===- PlacePass.cpp - The place pass -------------------------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/Place/PlacePass.h"
#include "dp/Cluster/Cluster.h"
#include "dp/Sim/Simulator.h"
#include "dp/Support/Diagnostics.h"
#include "dp/Support/Format.h"

#include "llvm/Support/Timer.h"

#include <chrono>

using namespace llvm;

namespace dp {

static void setPlacement(Graph &G, const Cluster &C,
                         ArrayRef<uint32_t> Placement) {
  for (OpId O = 0, E = G.getNumOps(); O != E; ++O)
    G.getOp(O).Annotations.set(
        "device", Attribute::getString(C.getDevices()[Placement[O]].Name));
}

/// Every op on one device: \p Forced if given, else the fastest device on
/// which the simulated step fits in memory.
static Expected<std::vector<uint32_t>>
placeSingle(const SimGraph &SG, const Cluster &C, StringRef Forced) {
  unsigned N = SG.getNumOps();
  if (!Forced.empty()) {
    int Dev = C.lookupDevice(Forced);
    if (Dev < 0)
      return makeError("place: cluster '" + C.getName() +
                       "' has no device '" + Forced + "'");
    return std::vector<uint32_t>(N, uint32_t(Dev));
  }
  Simulator Sim(SG);
  SimResult R;
  int Best = -1, Fastest = -1;
  double BestTime = 0, FastestTime = 0;
  uint64_t FastestOver = 0;
  std::vector<uint32_t> Placement(N);
  for (unsigned Dev = 0, E = C.getNumDevices(); Dev != E; ++Dev) {
    std::fill(Placement.begin(), Placement.end(), Dev);
    Sim.run(Placement, R);
    if (Fastest < 0 || R.StepTime < FastestTime) {
      Fastest = Dev;
      FastestTime = R.StepTime;
      FastestOver = R.OOM ? R.PeakBytes[Dev] - C.getDeviceType(Dev).MemoryBytes
                          : 0;
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

Error PlacePass::run(Graph &G, PassContext &Ctx) {
  if (!Ctx.TheCluster)
    return makeError("place needs a cluster: pass -cluster=<preset|file>");
  const Cluster &C = *Ctx.TheCluster;
  auto Start = std::chrono::steady_clock::now();
  Expected<SimGraph> SG = SimGraph::build(G, C);
  if (!SG)
    return SG.takeError();
  Expected<std::vector<uint32_t>> Placement =
      placeSingle(*SG, C, Opts.Device);
  if (!Placement)
    return Placement.takeError();
  double Seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - Start)
                       .count();
  setPlacement(G, C, *Placement);
  G.getAnnotations().set("placer", Attribute::getString(Opts.Algo));
  Ctx.SearchSeconds = Seconds;
  return Error::success();
}

void PlacePass::printPipeline(raw_ostream &OS) const {
  OS << name() << "{algo=" << Opts.Algo;
  if (!Opts.Device.empty())
    OS << ",device=" << Opts.Device;
  OS << '}';
}

Expected<PlaceOptions>
PlacePass::parseOptions(ArrayRef<std::pair<std::string, std::string>> KVs) {
  PlaceOptions Opts;
  for (const auto &[Key, Value] : KVs) {
    if (Key == "algo") {
      if (Value != "single")
        return makeError("place: unknown algo '" + Value +
                         "' (available: single)");
      Opts.Algo = Value;
      continue;
    }
    if (Key == "device") {
      Opts.Device = Value;
      continue;
    }
    return makeError("place: unknown option '" + Key +
                     "' (expected algo=NAME or device=NAME)");
  }
  return Opts;
}

} // namespace dp
