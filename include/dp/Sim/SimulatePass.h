//===- dp/Sim/SimulatePass.h - The simulate pass ----------------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// `simulate` runs the simulator on the placed graph (the ops' `device`
/// annotations, or the placement file given with dp-opt -placement=),
/// records the result as graph annotations, writes a report to the
/// pipeline's report stream, and, when asked, the JSON summary
/// (-summary=) and a Chrome trace of the step (-trace=).
///
//===----------------------------------------------------------------------===//

#ifndef DP_SIM_SIMULATEPASS_H
#define DP_SIM_SIMULATEPASS_H

#include "dp/IR/PassManager.h"
#include "dp/Sim/Simulator.h"

namespace dp {

class SimulatePass {
public:
  static llvm::StringRef name() { return "simulate"; }
  llvm::Error run(Graph &G, PassContext &Ctx);
};

/// Sets the `device` annotation of every op from a placement file:
/// {"placement": {"<op name>": "<device name>", ...}}. Every op must be
/// placed; unknown ops and devices are errors naming the JSON path.
llvm::Error applyPlacementFile(Graph &G, const Cluster &C,
                               llvm::StringRef Path);

/// Writes the JSON summary of a simulated step (docs/simulator.md).
/// \p SearchSeconds is the placement's search time when this run placed
/// the graph (null in the JSON otherwise).
void writeSummaryJSON(llvm::raw_ostream &OS, const Graph &G,
                      const Cluster &C, const SimResult &R,
                      const LowerBounds &LB,
                      llvm::Optional<double> SearchSeconds);

/// Writes a Chrome trace (chrome://tracing, Perfetto): one track per
/// device and one per link direction.
void writeChromeTrace(llvm::raw_ostream &OS, const Graph &G,
                      const Cluster &C, const SimResult &R);

/// Writes the human report of a simulated step.
void printSimulationReport(llvm::raw_ostream &OS, const Graph &G,
                           const Cluster &C, const SimResult &R,
                           const LowerBounds &LB);

} // namespace dp

#endif // DP_SIM_SIMULATEPASS_H
