//===- PipelinePlan.cpp - Micro-batches and their schedule ----------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/IR/PipelinePlan.h"
#include "dp/IR/Annotations.h"
#include "dp/IR/Graph.h"

#include "llvm/ADT/StringExtras.h"

#include <algorithm>

using namespace llvm;

namespace dp {

static constexpr EnumEntry<PipelineScheduleKind> ScheduleNames[] = {
    {"gpipe", PipelineScheduleKind::GPipe},
    {"1f1b", PipelineScheduleKind::OneFOneB},
};

ArrayRef<EnumEntry<PipelineScheduleKind>> getPipelineScheduleNames() {
  return ScheduleNames;
}

StringRef getPipelineScheduleName(PipelineScheduleKind K) {
  return getEnumName<PipelineScheduleKind>(ScheduleNames, K);
}

Optional<PipelineScheduleKind> parsePipelineScheduleName(StringRef Name) {
  return parseEnumName<PipelineScheduleKind>(ScheduleNames, Name);
}

Optional<PipelinePlan> getPipelinePlan(const Graph &G) {
  Optional<int64_t> M = ann::get(G, ann::MicroBatches);
  Optional<StringRef> Name = ann::get(G, ann::Schedule);
  int64_t R = ann::get(G, ann::Replicas).getValueOr(1);
  if (!Name && (!M || *M <= 1) && R <= 1)
    return None;
  PipelinePlan P;
  P.MicroBatches = M && *M > 1 ? unsigned(*M) : 1;
  P.Schedule = PipelineScheduleKind::GPipe;
  if (Name)
    if (Optional<PipelineScheduleKind> K = parsePipelineScheduleName(*Name))
      P.Schedule = *K;
  P.Recompute = ann::get(G, ann::Recompute).getValueOr(0) != 0;
  P.Replicas = R > 1 ? unsigned(R) : 1;
  int64_t Stride = ann::get(G, ann::ReplicaStride).getValueOr(0);
  P.ReplicaStride = Stride > 0 ? unsigned(Stride) : 0;
  int64_t Bucket = ann::get(G, ann::BucketBytes).getValueOr(0);
  if (Bucket > 0)
    P.BucketBytes = uint64_t(Bucket);
  return P;
}

unsigned getStageTaskPosition(const PipelinePlan &Plan, unsigned Stage,
                              unsigned Stages, unsigned Task) {
  unsigned M = Plan.MicroBatches;
  if (Plan.Schedule == PipelineScheduleKind::GPipe || Task >= 2 * M)
    return Task;
  // 1F1B: W warm-up forwards, then forward W + i and backward i side by
  // side, then the W backwards left.
  unsigned W = std::min(Stages > Stage ? Stages - Stage - 1 : 0, M);
  if (Task < M)
    return Task < W ? Task : W + 2 * (Task - W);
  unsigned K = Task - M;
  return K < M - W ? W + 2 * K + 1 : 2 * M - W + (K - (M - W));
}

std::vector<unsigned> getStageTaskOrder(const PipelinePlan &Plan,
                                        unsigned Stage, unsigned Stages) {
  unsigned M = Plan.MicroBatches;
  std::vector<unsigned> Order(2 * M);
  for (unsigned Task = 0; Task != 2 * M; ++Task)
    Order[getStageTaskPosition(Plan, Stage, Stages, Task)] = Task;
  return Order;
}

void computeStageDevices(ArrayRef<uint32_t> Placement, unsigned NumDevices,
                         std::vector<uint32_t> &First,
                         std::vector<unsigned> &Stages) {
  constexpr uint32_t None = ~0u;
  First.assign(NumDevices, None);
  for (uint32_t O = Placement.size(); O-- > 0;)
    First[Placement[O]] = O;
  Stages.clear();
  for (unsigned Dev = 0; Dev != NumDevices; ++Dev)
    if (First[Dev] != None)
      Stages.push_back(Dev);
  // First ops differ: no two devices tie.
  std::sort(Stages.begin(), Stages.end(),
            [&](unsigned A, unsigned B) { return First[A] < First[B]; });
}

void addBatchAxisOption(OptionTable &T,
                        std::vector<std::pair<std::string, int64_t>> &Axes) {
  addNamedOption<int64_t>(
      T, "batch-axis", "NAME:AXIS", "AXIS a non-negative integer", Axes,
      /*Once=*/true,
      [](StringRef Text) -> Optional<int64_t> {
        int64_t N;
        if (!to_integer(Text, N, 10) || N < 0)
          return None;
        return N;
      },
      [](const int64_t &N) { return std::to_string(N); });
}

} // namespace dp
