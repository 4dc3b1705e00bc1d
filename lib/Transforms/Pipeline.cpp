//===- Pipeline.cpp - The pipeline plan pass ------------------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/Transforms/Pipeline.h"
#include "dp/IR/Annotations.h"
#include "dp/IR/Graph.h"
#include "dp/Support/Diagnostics.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace dp {

Error PipelinePass::run(Graph &G, PassContext &Ctx) {
  std::string Who =
      "pipeline{microbatches=" + std::to_string(Opts.MicroBatches) + "}";
  if (ann::get(G, ann::Schedule))
    return makeError(Who + ": the graph already has a pipeline plan (" +
                     ann::get(G, ann::Schedule)->str() + ")");
  int64_t Imported = ann::get(G, ann::MicroBatches).getValueOr(1);
  if (Imported != Opts.MicroBatches) {
    if (Imported == 1)
      return makeError(
          Who +
          ": the graph is the whole batch's step; import it as one "
          "micro-batch's, with import-onnx{microbatches=" +
          Twine(Opts.MicroBatches) +
          "} (dp-opt does so when pipeline{} follows import-onnx in one "
          "pipeline)");
    return makeError(Who + ": the graph was imported for " + Twine(Imported) +
                     " micro-batches");
  }
  int64_t ImportedReplicas = ann::get(G, ann::Replicas).getValueOr(1);
  if (ImportedReplicas != Opts.Replicas)
    return makeError(
        "pipeline{replicas=" + Twine(Opts.Replicas) + "}: the graph was " +
        "imported for " + Twine(ImportedReplicas) + " replica" +
        (ImportedReplicas == 1 ? "" : "s") +
        "; import it as one replica's "
        "share of the batch, with import-onnx{replicas=" +
        Twine(Opts.Replicas) +
        "} (dp-opt does so when pipeline{} follows import-onnx in one "
        "pipeline)");
  ann::set(G, ann::Schedule, getPipelineScheduleName(Opts.Schedule));
  if (Opts.Recompute)
    ann::set(G, ann::Recompute, int64_t(1));
  if (Opts.ReplicaStride)
    ann::set(G, ann::ReplicaStride, Opts.ReplicaStride);
  if (Opts.Replicas > 1 && Opts.BucketMB != 25)
    ann::set(G, ann::BucketBytes, Opts.BucketMB << 20);
  if (Ctx.Report)
    *Ctx.Report << name() << ": " << Opts.MicroBatches << " micro-batch"
                << (Opts.MicroBatches == 1 ? "" : "es")
                << " per step, schedule "
                << getPipelineScheduleName(Opts.Schedule)
                << (Opts.Recompute ? ", recomputing activations per stage"
                                   : "");
  if (Ctx.Report && Opts.Replicas > 1)
    *Ctx.Report << ", " << Opts.Replicas << " data-parallel replicas";
  if (Ctx.Report)
    *Ctx.Report << '\n';
  return Error::success();
}

void PipelinePass::printPipeline(raw_ostream &OS) const {
  printPassOptions(OS, name(), Opts, describeOptions);
}

OptionTable PipelinePass::describeOptions(PipelineOptions &O) {
  OptionTable T(name().str());
  T.integer<int64_t>("microbatches", O.MicroBatches, 1, 1 << 20, "M")
      .printAlways()
      .choice<PipelineScheduleKind>("schedule", O.Schedule,
                                    getPipelineScheduleNames())
      .printAlways()
      .flag("recompute", O.Recompute)
      .integer<int64_t>("replicas", O.Replicas, 1, 1 << 16, "R")
      .integer<int64_t>("replica-stride", O.ReplicaStride, 0, 1 << 16, "N")
      .integer<int64_t>("bucket-mb", O.BucketMB, 1, 1 << 20, "N");
  addBatchAxisOption(T, O.BatchAxes);
  return T;
}

} // namespace dp
