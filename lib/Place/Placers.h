//===- Placers.h - The placer functions of Placers.def ----------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#ifndef DP_LIB_PLACE_PLACERS_H
#define DP_LIB_PLACE_PLACERS_H

#include "dp/Place/Placer.h"

namespace dp {

#define PLACER(NAME, FUNCTION, PARAMS, DESCRIPTION)                          \
  llvm::Expected<std::vector<uint32_t>> FUNCTION(const PlacementProblem &P,  \
                                                 const PlaceOptions &Opts);
#include "Placers.def"

} // namespace dp

#endif // DP_LIB_PLACE_PLACERS_H
