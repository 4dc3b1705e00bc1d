//===- dp/Place/LearnTask.h - Tasks for learned placers ----*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// What the learned placers of lib/Learn see of a PlacementProblem: a
/// fixed-width feature row per unit, the unit graph, the topological order
/// and the simulator as the score (lib/Place/LearnedPlacers.cpp documents
/// the features).
///
//===----------------------------------------------------------------------===//

#ifndef DP_PLACE_LEARNTASK_H
#define DP_PLACE_LEARNTASK_H

#include "dp/Learn/Search.h"
#include "dp/Place/Placer.h"

namespace dp {

/// The task for \p P; its Evaluate simulates with \p P, which must outlive
/// it.
LearnTask buildLearnTask(const PlacementProblem &P);

/// The op-kind feature of ops of type \p Type, in any domain: the FEATURE
/// of its record in include/dp/IR/Ops.def (a backward op dp::<Type>Grad
/// counts as its forward op), or the id of "other". The ids are part of the
/// saved policies' input and never change.
unsigned getOpFeatureId(llvm::StringRef Type);

} // namespace dp

#endif // DP_PLACE_LEARNTASK_H
