//===- BruteForceStep.h - The best placement by trying them all -*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The shortest simulated step of any placement, found by trying every one:
/// the exact optimum that tests of bounds and placers compare with on
/// graphs of a few ops.
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

/// The shortest step of any placement of \p Items (ops or units) on
/// \p Devices that fits, by trying all Devices^Items; \p Simulate runs one
/// placement (an ArrayRef<uint32_t>, a device per item) and returns its
/// SimResult. Infinity if none fits.
template <class SimulateFn>
double shortestStepOfAll(unsigned Items, unsigned Devices,
                         SimulateFn Simulate) {
  std::vector<uint32_t> Placement(Items, 0);
  double Best = std::numeric_limits<double>::infinity();
  while (true) {
    const SimResult &R = Simulate(llvm::ArrayRef<uint32_t>(Placement));
    if (!R.OOM)
      Best = std::min(Best, R.StepTime);
    unsigned I = 0;
    while (I != Items && ++Placement[I] == Devices)
      Placement[I++] = 0;
    if (I == Items)
      return Best;
  }
}

} // namespace test
} // namespace dp

#endif // DP_UNITTESTS_BRUTEFORCESTEP_H
