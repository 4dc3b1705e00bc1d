//===- Placers.h - The placer functions of Placers.def ----------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#ifndef DP_LIB_PLACE_PLACERS_H
#define DP_LIB_PLACE_PLACERS_H

#include "dp/Place/Placer.h"

#include "llvm/ADT/SmallVector.h"

namespace dp {

#define PLACER(NAME, FUNCTION, PARAMS, DEFAULTS, DESCRIPTION)                  \
  llvm::Expected<std::vector<uint32_t>> FUNCTION(const PlacementProblem &P,    \
                                                 const PlaceOptions &Opts);
#include "Placers.def"

/// \p P with its units merged into at most \p Groups groups by colocate's
/// merge rule (the cheapest group joins the neighbour it exchanges most
/// bytes with), and the group of each of \p P's units. \p Who names the
/// caller in errors.
llvm::Expected<std::pair<PlacementProblem, std::vector<uint32_t>>>
mergeUnits(const PlacementProblem &P, unsigned Groups, llvm::StringRef Who);

/// The placers that do not search (no budget): the baselines that seed
/// anneal and warm-start mip.
std::vector<const PlacerInfo *> getBaselinePlacers();

/// The fastest placement that fits among those of \p Seeds (the first on
/// ties), run with \p Opts's seed; searching seeds get the given budget.
struct BestSeed {
  std::vector<uint32_t> Placement; ///< empty: none fits
  double StepTime = 0;
  llvm::StringRef Placer;
  uint64_t Evaluations = 0; ///< the budget given to searching seeds
};
BestSeed runSeeds(const PlacementProblem &P,
                  llvm::ArrayRef<const PlacerInfo *> Seeds,
                  const PlaceOptions &Opts, double SearchSeconds,
                  uint64_t SearchEvaluations);

} // namespace dp

#endif // DP_LIB_PLACE_PLACERS_H
