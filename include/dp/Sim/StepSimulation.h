//===- dp/Sim/StepSimulation.h - Results passes hand on ---------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The results that place, simulate and emit hand on through
/// PassContext::Analyses (dp/IR/PassManager.h): the simulated step of the
/// placed graph, which simulate computes and emit reuses, and the time the
/// placer searched, which place measures and the summaries report.
///
//===----------------------------------------------------------------------===//

#ifndef DP_SIM_STEPSIMULATION_H
#define DP_SIM_STEPSIMULATION_H

#include "dp/IR/PassManager.h"
#include "dp/Sim/Simulator.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <vector>

namespace dp {

/// Seconds the last placer of the run searched, and how many placements
/// it scored (0: a placer that does not search, or does not say). Wall
/// time stays out of the IR, so that the IR depends only on the input and
/// the seed.
struct PlacementSearch {
  static constexpr llvm::StringLiteral AnalysisKey = "placement-search";
  double Seconds = 0;
  uint64_t Scored = 0;
};

/// One step of the placed graph (every op has a `device`), simulated on a
/// cluster with its timeline recorded.
struct StepSimulation {
  static constexpr llvm::StringLiteral AnalysisKey = "step-simulation";
  const Cluster *C = nullptr;
  SimGraph SG;
  /// The device of every op.
  std::vector<uint32_t> Placement;
  SimResult Result;
  LowerBounds Bounds;
};

/// Simulates \p G's step on \p C. Fails like SimGraph::build and
/// getPlacement.
llvm::Expected<StepSimulation> simulateStep(const Graph &G, const Cluster &C);

/// The simulation of \p G's step on \p C that \p A holds; else simulates it
/// and stores it in \p A.
llvm::Expected<const StepSimulation *>
getStepSimulation(const Graph &G, const Cluster &C, AnalysisCache &A);

} // namespace dp

#endif // DP_SIM_STEPSIMULATION_H
