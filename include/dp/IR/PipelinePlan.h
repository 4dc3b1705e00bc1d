//===- dp/IR/PipelinePlan.h - Micro-batches and their schedule --*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// A pipeline plan as the graph records it (docs/transforms.md, "pipeline"):
/// the step runs M micro-batches of the graph, each op once per
/// micro-batch except the optimizer updates, which run once on the
/// accumulated gradients; each device runs its micro-batches' forward and
/// backward work in the order of the schedule. The graph stays one
/// micro-batch's step; the simulator makes the instances (op, micro-batch).
///
//===----------------------------------------------------------------------===//

#ifndef DP_IR_PIPELINEPLAN_H
#define DP_IR_PIPELINEPLAN_H

#include "dp/Support/EnumNames.h"
#include "dp/Support/Options.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/Optional.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace dp {

class Graph;

enum class PipelineScheduleKind : uint8_t {
  /// GPipe: every micro-batch's forward, then every backward.
  GPipe,
  /// PipeDream-Flush's one-forward-one-backward: stage s of p runs
  /// min(p - s - 1, M) forwards, then alternates one forward and one
  /// backward, then runs the backwards left.
  OneFOneB,
};

/// "gpipe", "1f1b".
llvm::ArrayRef<EnumEntry<PipelineScheduleKind>> getPipelineScheduleNames();
llvm::StringRef getPipelineScheduleName(PipelineScheduleKind K);
llvm::Optional<PipelineScheduleKind> parsePipelineScheduleName(llvm::StringRef);

struct PipelinePlan {
  unsigned MicroBatches = 1;
  PipelineScheduleKind Schedule = PipelineScheduleKind::OneFOneB;
  /// Each stage keeps only what it reads from other stages (and the graph
  /// inputs) for a micro-batch's backward, and recomputes its forward
  /// first (annotation `recompute`).
  bool Recompute = false;
  /// Data-parallel replicas (annotation `replicas`): each runs the placed
  /// step on its own devices; the gradients the updates read are
  /// all-reduced among the replicas, bucket by bucket
  /// (docs/simulator.md, "Replicas").
  unsigned Replicas = 1;
  /// The distance, in devices of one type, from a device to its next
  /// replica's copy; 0: the type's devices over Replicas (contiguous
  /// blocks). Annotation `replica_stride`.
  unsigned ReplicaStride = 0;
  /// Gradients all-reduce in buckets of at most this many bytes, filled in
  /// the order the backward makes them; the first bucket of each device
  /// holds at most FirstBucketBytes (DDP's bucket_cap_mb and its 1 MiB
  /// first bucket). Annotation `bucket_bytes`.
  uint64_t BucketBytes = DefaultBucketBytes;
  static constexpr uint64_t DefaultBucketBytes = uint64_t(25) << 20;
  static constexpr uint64_t FirstBucketBytes = uint64_t(1) << 20;
};

/// The plan \p G records (annotations `microbatches`, `schedule`,
/// `replicas` and the others above), or None when it records none of
/// them (one micro-batch, one replica, no schedule). A graph
/// imported for M micro-batches without a schedule runs them as GPipe
/// (gradient accumulation over the whole batch).
llvm::Optional<PipelinePlan> getPipelinePlan(const Graph &G);

/// The position of \p Task (as below; 2M, an update, comes last) in the
/// order of stage \p Stage of \p Stages under \p Plan.
unsigned getStageTaskPosition(const PipelinePlan &Plan, unsigned Stage,
                              unsigned Stages, unsigned Task);

/// The order in which stage \p Stage of \p Stages runs its tasks under
/// \p Plan: task k < M is micro-batch k's forward (and loss), M + k its
/// backward. Every task appears once.
std::vector<unsigned> getStageTaskOrder(const PipelinePlan &Plan,
                                        unsigned Stage, unsigned Stages);

/// The stages of a placement under a plan, in \p Stages: the devices that
/// run ops, in the order of their first op (\p Placement gives each op of
/// the graph its device, of \p NumDevices). \p First is scratch, one entry
/// per device. The simulator and emit both order stages so.
void computeStageDevices(llvm::ArrayRef<uint32_t> Placement,
                         unsigned NumDevices, std::vector<uint32_t> &First,
                         std::vector<unsigned> &Stages);

/// Declares the repeatable option batch-axis=NAME:AXIS (the batch axis of
/// graph input NAME) of import-onnx and pipeline, kept in \p Axes.
void addBatchAxisOption(OptionTable &T,
                        std::vector<std::pair<std::string, int64_t>> &Axes);

} // namespace dp

#endif // DP_IR_PIPELINEPLAN_H
