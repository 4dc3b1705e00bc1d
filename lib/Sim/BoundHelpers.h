//===- BoundHelpers.h - What the lower bounds share -------------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The fastest time of each op and the least time of a transfer, as
/// head + work + tail (PathBound.cpp) and the segment bound
/// (SegmentBound.cpp) count them. Only lib/Sim includes this header.
///
//===----------------------------------------------------------------------===//

#ifndef DP_LIB_SIM_BOUNDHELPERS_H
#define DP_LIB_SIM_BOUNDHELPERS_H

#include "dp/Sim/Simulator.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace dp {

/// Each op's time on its fastest device; false (and \p Fastest partly
/// filled) when an op has no finite time on any device.
inline bool getFastestTimes(const SimGraph &G, std::vector<double> &Fastest) {
  unsigned N = G.getNumOps(), D = G.getNumDevices();
  Fastest.assign(N, 0.0);
  for (uint32_t Op = 0; Op != N; ++Op) {
    double F = std::numeric_limits<double>::infinity();
    for (unsigned Dev = 0; Dev != D; ++Dev)
      F = std::min(F, G.getTime(Op, Dev));
    if (!std::isfinite(F))
      return false;
    Fastest[Op] = F;
  }
  return true;
}

/// The least time a transfer of some bytes takes between two devices of a
/// cluster: the smallest route latency plus the bytes over the largest
/// route bandwidth (0 with one device).
class LeastTransfer {
public:
  explicit LeastTransfer(const Cluster &C) : D(C.getNumDevices()) {
    for (unsigned Src = 0; Src != D; ++Src)
      for (unsigned Dst = 0; Dst != D; ++Dst)
        if (Src != Dst) {
          MinLatency = std::min(MinLatency, C.getRouteLatency(Src, Dst));
          MaxBandwidth = std::max(MaxBandwidth, C.getRouteBandwidth(Src, Dst));
        }
  }
  double operator()(uint64_t Bytes) const {
    return D < 2 ? 0.0 : MinLatency + double(Bytes) / MaxBandwidth;
  }

private:
  unsigned D;
  double MinLatency = std::numeric_limits<double>::infinity(), MaxBandwidth = 0;
};

} // namespace dp

#endif // DP_LIB_SIM_BOUNDHELPERS_H
