//===- dp/Transforms/Pipeline.h - The pipeline plan pass --------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The "pipeline" pass records a pipeline plan on the graph (dp/IR/
/// PipelinePlan.h): M micro-batches and the schedule each device runs them
/// in. The graph must be one micro-batch's step: import-onnx divides every
/// data input's batch axis by M (import-onnx{microbatches=M}), which the
/// pass builder asks of every import-onnx before a pipeline{} in one
/// pipeline. place then gives each op a stage (a device) and simulate runs
/// the M micro-batches. docs/transforms.md says why the model is imported
/// at micro-batch size rather than scaled.
///
//===----------------------------------------------------------------------===//

#ifndef DP_TRANSFORMS_PIPELINE_H
#define DP_TRANSFORMS_PIPELINE_H

#include "dp/IR/PassManager.h"
#include "dp/IR/PipelinePlan.h"
#include "dp/Support/Options.h"

#include <string>
#include <utility>
#include <vector>

namespace dp {

struct PipelineOptions {
  int64_t MicroBatches = 1;
  PipelineScheduleKind Schedule = PipelineScheduleKind::OneFOneB;
  /// Activation recomputation per stage (annotation `recompute`).
  bool Recompute = false;
  /// Data-parallel replicas, the distance between a device and its next
  /// replica's copy (0: contiguous blocks) and the all-reduce's bucket
  /// size (annotations `replicas`, `replica_stride`, `bucket_bytes`).
  int64_t Replicas = 1;
  int64_t ReplicaStride = 0;
  int64_t BucketMB = 25;
  /// Handed to import-onnx{batch-axis=} by the pass builder.
  std::vector<std::pair<std::string, int64_t>> BatchAxes;
};

/// The "pipeline" pass.
class PipelinePass {
public:
  explicit PipelinePass(PipelineOptions Opts = {}) : Opts(std::move(Opts)) {}
  static llvm::StringRef name() { return "pipeline"; }
  /// The plan is the graph's structure (its annotations).
  static GraphChange changes() { return GraphChange::Structure; }
  /// Records the plan. Fails when the graph was not imported for the same
  /// micro-batch and replica counts, or already has a plan.
  llvm::Error run(Graph &G, PassContext &Ctx);
  void printPipeline(llvm::raw_ostream &OS) const;
  /// microbatches=M, schedule=gpipe|1f1b, recompute=, replicas=R,
  /// replica-stride=N, bucket-mb=N, batch-axis=NAME:AXIS.
  static OptionTable describeOptions(PipelineOptions &O);
  static llvm::Expected<PipelineOptions> parseOptions(OptionList Options) {
    return parsePassOptions<PipelineOptions>(Options, describeOptions);
  }

private:
  PipelineOptions Opts;
};

} // namespace dp

#endif // DP_TRANSFORMS_PIPELINE_H
