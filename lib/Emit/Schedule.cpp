//===- Schedule.cpp - The order a runtime follows -------------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/Emit/Schedule.h"
#include "dp/IR/Annotations.h"
#include "dp/Support/Diagnostics.h"
#include "dp/Support/EnumNames.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"

#include "onnx/onnx_pb.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <queue>

using namespace llvm;

namespace dp {

static constexpr EnumEntry<ScheduleItemKind> ScheduleItemKindNames[] = {
    {"forward", ScheduleItemKind::Forward},
    {"backward", ScheduleItemKind::Backward},
};

StringRef getScheduleItemKindName(ScheduleItemKind K) {
  return getEnumName<ScheduleItemKind>(ScheduleItemKindNames, K);
}

std::vector<ScheduleItem>
orderScheduleItems(ArrayRef<SmallVector<unsigned, 4>> After,
                   ArrayRef<double> ForwardKeys,
                   ArrayRef<double> BackwardKeys) {
  unsigned NumSegs = After.size();
  assert(ForwardKeys.size() == NumSegs && "a forward key per segment");
  assert((BackwardKeys.empty() || BackwardKeys.size() == NumSegs) &&
         "a backward key per segment, or none");
  bool Training = !BackwardKeys.empty();
  // Items: forward k is k, backward k is NumSegs + k, so that comparing
  // (key, item) breaks ties forward first, then by segment.
  unsigned NumItems = Training ? 2 * NumSegs : NumSegs;
  auto KeyOf = [&](unsigned Item) {
    return Item < NumSegs ? ForwardKeys[Item] : BackwardKeys[Item - NumSegs];
  };
  std::vector<SmallVector<unsigned, 4>> Next(NumItems);
  std::vector<unsigned> Pending(NumItems);
  auto AddEdge = [&](unsigned From, unsigned To) {
    Next[From].push_back(To);
    ++Pending[To];
  };
  for (unsigned K = 0; K != NumSegs; ++K) {
    for (unsigned J : After[K]) {
      assert(J < NumSegs && J != K && "a dependency on another segment");
      // After lists each segment once; a repeat would count twice.
      assert(count(After[K], J) == 1 && "a segment listed once");
      AddEdge(J, K);
      if (Training)
        AddEdge(NumSegs + K, NumSegs + J);
    }
    if (Training)
      AddEdge(K, NumSegs + K);
  }

  using Entry = std::pair<double, unsigned>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> Ready;
  for (unsigned I = 0; I != NumItems; ++I) {
    assert(!std::isnan(KeyOf(I)) && "keys are ordered");
    if (!Pending[I])
      Ready.push({KeyOf(I), I});
  }
  std::vector<ScheduleItem> Order;
  Order.reserve(NumItems);
  while (!Ready.empty()) {
    unsigned I = Ready.top().second;
    Ready.pop();
    Order.push_back(
        I < NumSegs ? ScheduleItem{ScheduleItemKind::Forward, I}
                    : ScheduleItem{ScheduleItemKind::Backward, I - NumSegs});
    for (unsigned U : Next[I])
      if (!--Pending[U])
        Ready.push({KeyOf(U), U});
  }
  assert(Order.size() == NumItems && "the segments' dependencies are acyclic");
  return Order;
}

/// The earliest simulated start of each model node's forward ops (the ops
/// that are not backward, update or loss ops), or of its backward ops
/// with \p Backward; HasStart says which nodes have such ops.
struct NodeStarts {
  std::vector<double> Start;
  std::vector<bool> HasStart;
};
static NodeStarts firstOpStarts(const PlacedStep &S, const PlacedModel &PM,
                                bool Backward) {
  const Graph &G = *S.G;
  ArrayRef<std::string> Names = PM.getNodeNames();
  StringMap<unsigned> ModelIndex;
  for (unsigned I = 0, E = Names.size(); I != E; ++I)
    ModelIndex[Names[I]] = I;
  NodeStarts N{std::vector<double>(Names.size(), 0),
               std::vector<bool>(Names.size())};
  for (OpId O = 0, E = G.getNumOps(); O != E; ++O) {
    if (S.Origin[O].empty())
      continue;
    StringRef Phase = ann::getString(G.getOp(O), ann::Phase);
    if (Backward ? Phase != "backward"
                 : Phase == "backward" || Phase == "update" || Phase == "loss")
      continue;
    auto It = ModelIndex.find(S.Origin[O]);
    if (It == ModelIndex.end())
      continue;
    double Start = S.OpSpans[O].Start;
    unsigned I = It->second;
    N.Start[I] = N.HasStart[I] ? std::min(N.Start[I], Start) : Start;
    N.HasStart[I] = true;
  }
  return N;
}

/// Each segment's nodes in the order they ran in the simulated step
/// (StepSchedule::Nodes). A node's key is the start of its first forward
/// op, raised to the keys of the nodes of its segment it reads from, so
/// that a stable sort by key keeps every producer before its readers
/// (the split's order is topological).
static std::vector<std::vector<unsigned>>
orderSegmentNodes(const PlacedStep &S, const PlacedModel &PM,
                  const ModelSegments &Segs) {
  std::vector<double> Key = firstOpStarts(S, PM, /*Backward=*/false).Start;
  const onnx::GraphProto &OG = PM.getModel().graph();
  std::vector<std::vector<unsigned>> Out;
  Out.reserve(Segs.Segments.size());
  for (const ModelSegments::Segment &Seg : Segs.Segments) {
    StringMap<double> Made;
    for (unsigned I : Seg.Nodes) {
      for (const std::string &In : OG.node(I).input()) {
        auto It = Made.find(In);
        if (It != Made.end())
          Key[I] = std::max(Key[I], It->second);
      }
      for (const std::string &Res : OG.node(I).output())
        if (!Res.empty())
          Made[Res] = Key[I];
    }
    std::vector<unsigned> Nodes = Seg.Nodes;
    llvm::stable_sort(Nodes,
                      [&](unsigned A, unsigned B) { return Key[A] < Key[B]; });
    Out.push_back(std::move(Nodes));
  }
  return Out;
}

/// Each segment's nodes in the order their backward ran in the simulated
/// step (StepSchedule::BackwardNodes), from the forward orders \p Nodes. A
/// node's key is the start of its first backward op, raised to the keys
/// of the nodes of its segment that read from it (a node's gradient is
/// whole only when theirs has run); a node without backward ops takes
/// those readers' largest key (0 without any). A stable sort by key of
/// the reversed forward order keeps every reader before its producer.
static std::vector<std::vector<unsigned>>
orderSegmentBackward(const PlacedStep &S, const PlacedModel &PM,
                     ArrayRef<std::vector<unsigned>> Nodes) {
  NodeStarts First = firstOpStarts(S, PM, /*Backward=*/true);
  std::vector<double> &Key = First.Start;
  const std::vector<bool> &HasKey = First.HasStart;
  const onnx::GraphProto &OG = PM.getModel().graph();
  std::vector<std::vector<unsigned>> Out;
  Out.reserve(Nodes.size());
  for (ArrayRef<unsigned> Forward : Nodes) {
    // The largest key of the segment's readers of each tensor so far.
    StringMap<double> ReadAt;
    std::vector<unsigned> Order(Forward.rbegin(), Forward.rend());
    for (unsigned I : Order) {
      double Readers = 0;
      bool Read = false;
      for (const std::string &Res : OG.node(I).output()) {
        auto It = Res.empty() ? ReadAt.end() : ReadAt.find(Res);
        if (It != ReadAt.end()) {
          Readers = Read ? std::max(Readers, It->second) : It->second;
          Read = true;
        }
      }
      if (!HasKey[I])
        Key[I] = Readers;
      else if (Read)
        Key[I] = std::max(Key[I], Readers);
      for (const std::string &In : OG.node(I).input()) {
        if (In.empty())
          continue;
        auto [It, New] = ReadAt.try_emplace(In, Key[I]);
        if (!New)
          It->second = std::max(It->second, Key[I]);
      }
    }
    llvm::stable_sort(Order,
                      [&](unsigned A, unsigned B) { return Key[A] < Key[B]; });
    Out.push_back(std::move(Order));
  }
  return Out;
}

StepSchedule computeStepSchedule(const PlacedStep &S, const PlacedModel &PM,
                                 const ModelSegments &Segs) {
  const Graph &G = *S.G;
  unsigned NumSegs = Segs.Segments.size();
  // The segment of every node of S, through its node of the model.
  std::vector<unsigned> SegmentOfNode(S.Nodes.size(), ~0u);
  for (unsigned K = 0; K != NumSegs; ++K)
    for (unsigned I : Segs.Segments[K].Nodes) {
      auto It = S.NodeIndex.find(PM.getNodeNames()[I]);
      if (It != S.NodeIndex.end())
        SegmentOfNode[It->second] = K;
    }

  StepSchedule Sched;
  Sched.Training = any_of(G.ops(), [](const Op &Node) {
    return ann::getString(Node, ann::Phase) == "backward";
  });
  // Per item: the latest end and the sum of the durations of its ops.
  struct Span {
    double End = 0, Busy = 0;
    bool HasOps = false;
  };
  std::vector<Span> Forward(NumSegs), Backward(NumSegs);
  const std::vector<OpInterval> &Times = S.OpSpans;
  assert(Times.size() == G.getNumOps() && "the timeline was recorded");
  for (OpId O = 0, E = G.getNumOps(); O != E; ++O) {
    if (S.Origin[O].empty())
      continue;
    StringRef Phase = ann::getString(G.getOp(O), ann::Phase);
    if (Phase == "update" || Phase == "loss")
      continue;
    auto It = S.NodeIndex.find(S.Origin[O]);
    assert(It != S.NodeIndex.end() && "every origin is a node");
    unsigned K = SegmentOfNode[It->second];
    assert(K < NumSegs && "every node is in a segment");
    Span &Item = Phase == "backward" ? Backward[K] : Forward[K];
    Item.End = Item.HasOps ? std::max(Item.End, Times[O].End) : Times[O].End;
    Item.Busy += Times[O].End - Times[O].Start;
    Item.HasOps = true;
  }

  // After lists only earlier segments, so a forward item's dependencies
  // have their keys when it gets its own.
  Sched.ForwardKeys.resize(NumSegs);
  for (unsigned K = 0; K != NumSegs; ++K) {
    if (Forward[K].HasOps) {
      Sched.ForwardKeys[K] = Forward[K].End - Forward[K].Busy;
      continue;
    }
    double Key = 0;
    for (unsigned J : Segs.Segments[K].After) {
      assert(J < K && "segments read only from earlier segments");
      Key = std::max(Key, Sched.ForwardKeys[J]);
    }
    Sched.ForwardKeys[K] = Key;
  }
  if (Sched.Training) {
    Sched.BackwardKeys.resize(NumSegs);
    for (unsigned K = 0; K != NumSegs; ++K)
      Sched.BackwardKeys[K] = Backward[K].HasOps
                                  ? Backward[K].End - Backward[K].Busy
                                  : Sched.ForwardKeys[K];
  }

  std::vector<SmallVector<unsigned, 4>> After;
  After.reserve(NumSegs);
  for (const ModelSegments::Segment &Seg : Segs.Segments)
    After.push_back(Seg.After);
  Sched.Order =
      orderScheduleItems(After, Sched.ForwardKeys, Sched.BackwardKeys);
  Sched.Nodes = orderSegmentNodes(S, PM, Segs);
  if (Sched.Training)
    Sched.BackwardNodes = orderSegmentBackward(S, PM, Sched.Nodes);
  return Sched;
}

Expected<std::vector<unsigned>> getStageSegments(const PlacedStep &S,
                                                 const PlacedModel &PM,
                                                 const ModelSegments &Segs) {
  const Cluster &C = *S.C;
  unsigned NumStages = S.Stages.size();
  std::vector<unsigned> StageOfDevice(C.getNumDevices(), ~0u);
  for (unsigned St = 0; St != NumStages; ++St)
    StageOfDevice[S.Stages[St]] = St;
  auto Name = [&](unsigned St) {
    return ("emit: stage " + Twine(St) + " of the pipeline (" +
            C.getDevices()[S.Stages[St]].Name + ")")
        .str();
  };
  std::vector<unsigned> Segment(NumStages, ~0u);
  for (unsigned K = 0, E = Segs.Segments.size(); K != E; ++K) {
    const ModelSegments::Segment &Seg = Segs.Segments[K];
    unsigned St = StageOfDevice[Seg.Device];
    assert(St != ~0u && "a segment's device has ops");
    if (Segment[St] != ~0u)
      return makeError(
          Name(St) + " is cut into several parts of the model: node '" +
          PM.getNodeNames()[Segs.Segments[Segment[St]].Nodes.front()] +
          "' and node '" + PM.getNodeNames()[Seg.Nodes.front()] +
          "' have nodes of other stages between them; a stage must be one "
          "contiguous part of the model (place{algo=pipeline} makes such "
          "stages)");
    Segment[St] = K;
  }
  for (unsigned St = 0; St != NumStages; ++St)
    if (Segment[St] == ~0u)
      return makeError(Name(St) +
                       " has no node of the model, only ops that dp added "
                       "(the loss, backward or update ops); every stage "
                       "must run a part of the model");
  for (const SegmentTensor &X : Segs.Transfers) {
    unsigned From = StageOfDevice[Segs.Segments[X.From].Device];
    for (unsigned To : X.To)
      if (unsigned St = StageOfDevice[Segs.Segments[To].Device]; St < From)
        return makeError(Name(St) + " reads '" + X.Name + "' from stage " +
                         Twine(From) + " (" +
                         C.getDevices()[S.Stages[From]].Name +
                         "), a later one; the stages must form a chain in "
                         "which each reads only from earlier stages");
  }
  return Segment;
}

void writePipelinePlan(json::OStream &J, const PlacedStep &S,
                       const StepSchedule &Schedule) {
  assert(S.Plan && "a pipeline plan");
  const PipelinePlan &Plan = *S.Plan;
  unsigned M = Plan.MicroBatches, NumStages = S.Stages.size();
  J.object([&] {
    J.attribute("microbatches", int64_t(M));
    J.attribute("schedule", getPipelineScheduleName(Plan.Schedule));
    // "src:1,tgt:1" as {"src": 1, "tgt": 1}.
    J.attributeObject("batch_axes", [&] {
      SmallVector<StringRef, 4> Items;
      ann::get(*S.G, ann::BatchAxes)
          .getValueOr("")
          .split(Items, ',', -1, false);
      for (StringRef Item : Items) {
        auto [Input, Axis] = Item.rsplit(':');
        int64_t A = 0;
        if (!Axis.getAsInteger(10, A))
          J.attribute(Input, A);
      }
    });
    // Data-parallel replicas: each stage's device in every replica, and
    // the gradient buckets all-reduced among them, in the order they
    // start (the simulated step's).
    J.attribute("replicas", int64_t(Plan.Replicas));
    // Each stage keeps only what it receives and runs its forward again
    // before each backward.
    J.attribute("recompute", Plan.Recompute);
    if (Plan.Replicas > 1)
      J.attributeArray("buckets", [&] {
        for (const CollectiveRecord &B : S.Result.Collectives)
          J.object([&] {
            J.attribute("device", S.C->getDevices()[B.Device].Name);
            J.attribute("bytes", int64_t(B.Bytes));
            J.attribute("algorithm", getCollectiveAlgorithmName(B.Algorithm));
            J.attributeArray("gradients", [&] {
              for (uint32_t T : B.Tensors)
                J.value(S.G->getTensor(S.Result.getTensor(T)).Name);
            });
          });
      });
    J.attributeArray("stages", [&] {
      for (unsigned St = 0; St != NumStages; ++St)
        J.object([&] {
          J.attribute("device", S.C->getDevices()[S.Stages[St]].Name);
          if (Plan.Replicas > 1)
            J.attributeArray("replica_devices", [&] {
              for (unsigned Rep = 0; Rep != Plan.Replicas; ++Rep) {
                unsigned Copy = getReplicaDevice(*S.C, Plan, S.Stages[St], Rep);
                if (Copy != ~0u)
                  J.value(S.C->getDevices()[Copy].Name);
              }
            });
          J.attribute("segment", int64_t(Schedule.StageSegments[St]));
          J.attributeArray("order", [&] {
            for (unsigned Task : getStageTaskOrder(Plan, St, NumStages)) {
              bool Backward = Task >= M;
              if (Backward && !Schedule.Training)
                continue;
              J.array([&] {
                J.value(getScheduleItemKindName(
                    Backward ? ScheduleItemKind::Backward
                             : ScheduleItemKind::Forward));
                J.value(int64_t(Backward ? Task - M : Task));
              });
            }
          });
        });
    });
  });
}

void writeScheduleOrder(json::OStream &J, ArrayRef<ScheduleItem> Order) {
  J.array([&] {
    for (const ScheduleItem &Item : Order)
      J.array([&] {
        J.value(getScheduleItemKindName(Item.Kind));
        J.value(int64_t(Item.Segment));
      });
  });
}

} // namespace dp
