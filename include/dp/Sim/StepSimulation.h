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
#include <string>
#include <vector>

namespace dp {

/// Seconds the last placer of the run searched, and how many placements
/// it scored (0: a placer that does not search, or does not say). Wall
/// time stays out of the IR, so that the IR depends only on the input and
/// the seed.
struct PlacementSearch {
  static constexpr llvm::StringLiteral AnalysisKey = "placement-search";
  /// It describes the search for the devices of this graph.
  static constexpr GraphChange DependsOn =
      GraphChange::Devices | GraphChange::Structure;
  double Seconds = 0;
  uint64_t Scored = 0;
};

/// One plan the plan pass weighed (docs/plans.md): its kind, replicas,
/// stages, micro-batches and schedule, and its predicted step.
struct PlanCandidate {
  /// "data parallel" (replicas of one device each), "pipeline" (one
  /// replica of several stages), "hybrid" (replicas of pipelines), "op
  /// placement" (the flat placer's placement of the whole batch) or "one
  /// device".
  std::string Kind;
  unsigned Replicas = 1, ReplicaStride = 0, Stages = 1, MicroBatches = 1;
  std::string Schedule;
  bool Recompute = false;
  /// The predicted step (0 when it was not simulated) and whether it fits.
  double StepTime = 0;
  bool Fits = false;
  /// Why it has no step, or what else to know ("placer: anneal").
  std::string Note;
};

/// What the plan pass searched: its seconds, the global batch (samples
/// per step; 0 when the graph has no batch input), how many plans it
/// simulated, and the chosen plan first, then the fastest of each other
/// kind (and those that did not fit, with why).
struct PlanSearch {
  static constexpr llvm::StringLiteral AnalysisKey = "plan-search";
  /// It describes the search for this graph's plan and devices.
  static constexpr GraphChange DependsOn =
      GraphChange::Devices | GraphChange::Structure;
  double Seconds = 0;
  int64_t GlobalBatch = 0;
  unsigned Tried = 0;
  std::vector<PlanCandidate> Plans;
};

/// One step of the placed graph (every op has a `device`), simulated on a
/// cluster with its timeline recorded.
struct StepSimulation {
  static constexpr llvm::StringLiteral AnalysisKey = "step-simulation";
  /// Simulated from the graph, its costs and its devices; the groups do
  /// not matter.
  static constexpr GraphChange DependsOn =
      GraphChange::Devices | GraphChange::Costs | GraphChange::Structure;
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
