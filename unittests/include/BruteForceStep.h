//===- BruteForceStep.h - The best placement by trying them all -*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Every placement of a few items, and the shortest simulated step of any
/// of them: the exact optimum that tests of bounds and placers compare
/// with on graphs of a few ops.
///
//===----------------------------------------------------------------------===//

#ifndef DP_UNITTESTS_BRUTEFORCESTEP_H
#define DP_UNITTESTS_BRUTEFORCESTEP_H

#include "dp/Sim/Simulator.h"

#include "llvm/ADT/ArrayRef.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

namespace dp {
namespace test {

/// Calls \p F on every placement of \p Items items on \p Devices devices
/// (an ArrayRef<uint32_t>, a device per item), all Devices^Items of them,
/// the first item's device changing fastest.
template <class Fn>
void forEachPlacement(unsigned Items, unsigned Devices, Fn F) {
  std::vector<uint32_t> Placement(Items, 0);
  while (true) {
    F(llvm::ArrayRef<uint32_t>(Placement));
    unsigned I = 0;
    while (I != Items && ++Placement[I] == Devices)
      Placement[I++] = 0;
    if (I == Items)
      return;
  }
}

/// The shortest step of any placement of \p Items (ops or units) on
/// \p Devices that fits, by trying them all; \p Simulate runs one
/// placement and returns its SimResult. Infinity if none fits.
template <class SimulateFn>
double shortestStepOfAll(unsigned Items, unsigned Devices,
                         SimulateFn Simulate) {
  double Best = std::numeric_limits<double>::infinity();
  forEachPlacement(Items, Devices, [&](llvm::ArrayRef<uint32_t> Placement) {
    const SimResult &R = Simulate(Placement);
    if (!R.OOM)
      Best = std::min(Best, R.StepTime);
  });
  return Best;
}

} // namespace test
} // namespace dp

#endif // DP_UNITTESTS_BRUTEFORCESTEP_H
