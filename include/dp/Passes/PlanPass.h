//===- dp/Passes/PlanPass.h - How a model should use a cluster --*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The plan pass (docs/plans.md) answers "how should this model use this
/// cluster": it searches data-parallel replicas R (and how they lie on the
/// devices), micro-batches M and pipeline stages (the pipeline placer's
/// cuts over each replica's devices), and the flat placer's op placement
/// of the whole batch, under every device's memory, by the simulator's
/// step of each, as Alpa, Piper and Mist search R x stages x M.
///
///   dp-opt -passes='import-onnx{batch=64},training-graph,cost-annotate,
///                   plan,simulate,emit{out=plan/}' -cluster=v100x8-nvlink
///
/// Each candidate is one replica's micro-batch imported anew: the pass
/// runs the passes before it again with import-onnx{microbatches=M,
/// replicas=R}, so that every cost is the micro-batch's own, as pipeline{}
/// does. The graph it leaves is the chosen plan's, placed; the plans it
/// weighed go to PassContext::Analyses (PlanSearch), which simulate's
/// summary and emit's report show.
///
//===----------------------------------------------------------------------===//

#ifndef DP_PASSES_PLANPASS_H
#define DP_PASSES_PLANPASS_H

#include "dp/IR/PassManager.h"
#include "dp/IR/PipelinePlan.h"
#include "dp/Passes/PassBuilder.h"
#include "dp/Support/Options.h"

#include <string>
#include <vector>

namespace dp {

struct PlanOptions {
  /// The search's budget in wall seconds.
  double Seconds = 60;
  /// The most micro-batches a plan runs.
  int64_t MaxMicroBatches = 64;
  /// The placer of the op-placement candidate (the whole batch, one
  /// replica); empty or "none": no such candidate.
  std::string Flat = "anneal";
  /// The schedule of pipelined plans.
  PipelineScheduleKind Schedule = PipelineScheduleKind::OneFOneB;
  /// The passes before plan in its pipeline, which it runs again for each
  /// candidate (set by the pass builder; not an option).
  std::vector<PipelineElement> Prefix;
};

class PlanPass {
public:
  explicit PlanPass(PlanOptions Opts = {}) : Opts(std::move(Opts)) {}
  static llvm::StringRef name() { return "plan"; }
  /// Searches and leaves the chosen plan's graph, placed, in \p G. Fails
  /// when no plan fits, naming what the largest candidates lacked.
  llvm::Error run(Graph &G, PassContext &Ctx);
  void printPipeline(llvm::raw_ostream &OS) const;
  /// seconds=S, max-microbatches=N, flat=NAME|none, schedule=gpipe|1f1b.
  static OptionTable describeOptions(PlanOptions &O);
  static llvm::Expected<PlanOptions> parseOptions(OptionList Options) {
    return parsePassOptions<PlanOptions>(Options, describeOptions);
  }

private:
  PlanOptions Opts;
};

} // namespace dp

#endif // DP_PASSES_PLANPASS_H
