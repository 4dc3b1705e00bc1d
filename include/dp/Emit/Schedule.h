//===- dp/Emit/Schedule.h - The order a runtime follows ---------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The schedule that emit writes into the placed model (`dp.schedule`) and
/// the split manifest (`order`) for a runtime to follow: the forward part
/// of every segment of the split (dp/Emit/PlacedModel.h) and, for a
/// training step, its backward part, in one global order. Each device runs
/// its own items in that order.
///
/// The order is a topological order of the items' dependencies (forward j
/// before forward k when segment k reads a tensor that j makes, backward k
/// before backward j for the same pair, forward k before backward k) that
/// takes, among the items whose dependencies are done, the one that
/// started first in the simulated step. Being a linear extension of the
/// dependencies whatever the times, it cannot deadlock a runtime that posts
/// its sends without blocking: the first item in the order that could not
/// finish would have all its dependencies, and all the items before it on
/// its device, finished before it, so nothing would hold it back.
/// docs/emit.md says more.
///
//===----------------------------------------------------------------------===//

#ifndef DP_EMIT_SCHEDULE_H
#define DP_EMIT_SCHEDULE_H

#include "dp/Emit/Emit.h"
#include "dp/Emit/PlacedModel.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/JSON.h"

#include <vector>

namespace dp {

/// The version of the format of `dp.schedule`, its "version" member; it
/// changes when a runtime that reads one version would misread the next.
constexpr unsigned ScheduleFormatVersion = 1;

/// Which part of a segment's work an item of the schedule is.
enum class ScheduleItemKind : unsigned char { Forward, Backward };

/// "forward" or "backward", as the schedule writes it.
llvm::StringRef getScheduleItemKindName(ScheduleItemKind K);

/// The forward or backward part of one segment, by its index in the
/// split's run order.
struct ScheduleItem {
  ScheduleItemKind Kind = ScheduleItemKind::Forward;
  unsigned Segment = 0;

  bool operator==(const ScheduleItem &O) const {
    return Kind == O.Kind && Segment == O.Segment;
  }
  bool operator!=(const ScheduleItem &O) const { return !(*this == O); }
};

/// The items of a step in the order a runtime runs them.
struct StepSchedule {
  /// Whether the step trains: it has backward ops, and every segment has a
  /// backward item.
  bool Training = false;
  /// Each item's key (when it would have started in the simulated step),
  /// by segment; BackwardKeys is empty for inference.
  std::vector<double> ForwardKeys, BackwardKeys;
  /// Every item once.
  std::vector<ScheduleItem> Order;
  /// By segment, its nodes (indices in the model) in the order they ran in
  /// the simulated step: by the start of their first forward op, each
  /// node no earlier than the nodes of its segment it reads from, ties in
  /// the split's order. A topological order of the segment's nodes.
  std::vector<std::vector<unsigned>> Nodes;
  /// For a training step, by segment, its nodes in the order their
  /// backward ran in the simulated step: by the start of their first
  /// backward op, each node no earlier than the nodes of its segment that
  /// read from it, ties in reverse forward order. A reverse topological
  /// order of the segment's nodes. Empty for inference.
  std::vector<std::vector<unsigned>> BackwardNodes;
  /// With a pipeline plan: the segment of each stage (getStageSegments).
  std::vector<unsigned> StageSegments;
};

/// Orders the items of segments whose dependencies \p After gives (the
/// segments each segment reads from, as ModelSegments::Segment::After):
/// Kahn's algorithm over the items' dependencies, taking among the ready
/// items the smallest (key, forward before backward, segment). There is a
/// forward item per entry of \p ForwardKeys, and a backward item per entry
/// of \p BackwardKeys, which is either empty or as long. The result is a
/// topological order of the dependencies whatever the keys; \p After must
/// be acyclic.
std::vector<ScheduleItem>
orderScheduleItems(llvm::ArrayRef<llvm::SmallVector<unsigned, 4>> After,
                   llvm::ArrayRef<double> ForwardKeys,
                   llvm::ArrayRef<double> BackwardKeys);

/// The schedule of \p S's step over \p Segs, the segments of \p PM. An
/// item's key comes from the simulated timeline: over the ops of the item
/// (the ops whose node is in the segment; forward: the ops that are not
/// backward, update or loss ops; backward: the backward ops), the latest
/// end minus the sum of their durations, the time the item would have
/// started had it run as one block ending where it ended. An item without
/// ops takes the key of the item it must follow: a forward item the
/// largest key of its forward dependencies (0 without any), a backward
/// item its forward item's. Update and loss ops belong to no item.
StepSchedule computeStepSchedule(const PlacedStep &S, const PlacedModel &PM,
                                 const ModelSegments &Segs);

/// With a pipeline plan (PlacedStep::Plan), the segment of each of \p S's
/// stages: each stage must be one segment of \p Segs (one contiguous part
/// of the model), and read only from earlier stages. Fails, naming the
/// stage, its device and the nodes or tensor concerned, when a stage's
/// nodes are cut into several segments, when a stage has no node of the
/// model, or when a stage reads from a later one.
llvm::Expected<std::vector<unsigned>>
getStageSegments(const PlacedStep &S, const PlacedModel &PM,
                 const ModelSegments &Segs);

/// Writes \p S's pipeline plan as a JSON object (docs/emit.md, "Pipeline
/// plans"): microbatches, schedule, the graph inputs the micro-batches
/// divide with their batch axes, and per stage in order its device,
/// segment and the order of its tasks, ["forward", k] and, for a training
/// step, ["backward", k] for micro-batch k, as the simulator ran them.
void writePipelinePlan(llvm::json::OStream &J, const PlacedStep &S,
                       const StepSchedule &Schedule);

/// Writes \p Order as a JSON array of [kind, segment] pairs:
/// [["forward", 0], ["backward", 0]].
void writeScheduleOrder(llvm::json::OStream &J,
                        llvm::ArrayRef<ScheduleItem> Order);

} // namespace dp

#endif // DP_EMIT_SCHEDULE_H
