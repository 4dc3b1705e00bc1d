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
#include "dp/Sim/StepSimulation.h"
#include "dp/Support/Options.h"

#include "llvm/Support/JSON.h"

#include <string>

namespace dp {

/// Files simulate writes or reads; empty when not asked for.
struct SimulateOptions {
  /// The JSON summary of the step (dp-opt -summary=).
  std::string Summary;
  /// The step as a Chrome trace (dp-opt -trace=).
  std::string Trace;
  /// A placement (JSON) to simulate instead of the ops' devices (dp-opt
  /// -placement=).
  std::string Placement;
  /// Seconds for the segment bound (computeSegmentBound()), which is not
  /// computed unless set (bound-seconds=S).
  llvm::Optional<double> BoundSeconds;
};

class SimulatePass {
public:
  SimulatePass() = default;
  explicit SimulatePass(SimulateOptions Opts) : Opts(std::move(Opts)) {}
  static llvm::StringRef name() { return "simulate"; }
  llvm::Error run(Graph &G, PassContext &Ctx);
  /// It adds only the step's figures to the graph's annotations, which no
  /// part of the graph holds; a placement= replaces the devices.
  GraphChange changes() const {
    return Opts.Placement.empty() ? GraphChange::None : GraphChange::Devices;
  }
  void printPipeline(llvm::raw_ostream &OS) const;
  /// summary, trace and placement, when the pipeline does not give them.
  bool setDriverOption(llvm::StringRef Key, llvm::StringRef Value);
  /// summary=FILE, trace=FILE, placement=FILE and bound-seconds=S, bound
  /// to \p O.
  static OptionTable describeOptions(SimulateOptions &O);
  static llvm::Expected<SimulateOptions> parseOptions(OptionList Options) {
    return parsePassOptions<SimulateOptions>(Options, describeOptions);
  }

private:
  SimulateOptions Opts;
};

/// Sets the `device` annotation of every op from a placement file:
/// {"placement": {"<op name>": "<device name>", ...}}. Every op must be
/// placed; unknown ops and devices are errors naming the JSON path.
llvm::Error applyPlacementFile(Graph &G, const Cluster &C,
                               llvm::StringRef Path);

/// Reads a placement file ({"placement": {"<op name>": "<device name>"}})
/// into a device index per op, without changing \p G. Every op must be
/// placed; unknown ops and devices are errors naming the JSON path.
llvm::Expected<std::vector<uint32_t>>
readPlacementFile(const Graph &G, const Cluster &C, llvm::StringRef Path);

/// Writes the JSON summary of a simulated step (docs/simulator.md).
/// \p Search is the placement's search when this run placed the graph
/// (its seconds and the placements it scored; null in the JSON otherwise).
/// \p Plans, when the plan pass chose the plan, are the plans it weighed.
void writeSummaryJSON(llvm::raw_ostream &OS, const Graph &G, const Cluster &C,
                      const SimResult &R, const LowerBounds &LB,
                      const PlacementSearch *Search,
                      const PlanSearch *Plans = nullptr);
/// Writes the same summary as one JSON object value into \p J, so that
/// other outputs can embed it.
void writeSummary(llvm::json::OStream &J, const Graph &G, const Cluster &C,
                  const SimResult &R, const LowerBounds &LB,
                  const PlacementSearch *Search,
                  const PlanSearch *Plans = nullptr);

/// Writes the plans the plan pass weighed, one line each: kind, replicas,
/// stages, micro-batches, step and samples per second (the chosen first).
void printPlanSearch(llvm::raw_ostream &OS, const PlanSearch &Plans);

/// Writes a Chrome trace (chrome://tracing, Perfetto): one track per
/// device and one per link direction.
void writeChromeTrace(llvm::raw_ostream &OS, const Graph &G, const Cluster &C,
                      const SimResult &R);

/// The fastest placement of a whole step on one device: what the
/// speed-up of a placement is measured against.
struct SingleDeviceBaseline {
  /// The fastest device on which the step fits in memory, or -1 when it
  /// fits on none.
  int Device = -1;
  double StepTime = 0;
  /// The fastest device regardless of memory, and its step time.
  unsigned FastestDevice = 0;
  double FastestTime = 0;
};
/// Simulates the step of \p SG on each device alone.
SingleDeviceBaseline computeSingleDeviceBaseline(const SimGraph &SG);

/// A pipelined step's bubble: the share of the step that the devices with
/// ops sit idle, 1 - their busy time / (their count x the step).
double getPipelineBubble(const SimResult &R);

/// Writes the human report of a simulated step. With \p Baseline, it says
/// the speed-up over the best single device too.
void printSimulationReport(llvm::raw_ostream &OS, const Graph &G,
                           const Cluster &C, const SimResult &R,
                           const LowerBounds &LB,
                           const SingleDeviceBaseline *Baseline = nullptr);

/// "pcie0 gpu:0->switch0": the link of channel \p Channel of \p C and its
/// direction.
std::string getChannelName(const Cluster &C, unsigned Channel);

/// "1.234 ms": seconds with three decimals in s, ms or us.
std::string formatSeconds(double Seconds);

/// "7.000 ms (critical path 6.000 ms, work / devices ...)": the best of
/// \p LB and each of its bounds, as reports print them.
std::string formatLowerBounds(const LowerBounds &LB);

} // namespace dp

#endif // DP_SIM_SIMULATEPASS_H
