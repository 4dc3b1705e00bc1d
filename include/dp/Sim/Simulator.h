//===- dp/Sim/Simulator.h - Event-driven step-time simulator ----*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Predicts the time and memory of one step of a placed graph on a cluster,
/// with the semantics of Placeto's simulator (appendix A.5):
///
/// - each device runs one op at a time, taking runnable ops from a FIFO
///   queue in the order they became runnable;
/// - an op is runnable on its device once every tensor it reads is there;
/// - a tensor needed on another device is sent there once, as soon as its
///   producer finishes, over the route between the devices; a transfer
///   occupies every channel of its route, channels serve transfers in the
///   order they were requested, and transfers overlap compute;
/// - devices of a shared group (SharedGroup: hardware threads of one core,
///   and the like) share their execution resources: while K of them run
///   ops, each op progresses at Speed[K - 1] of its own time, and an op's
///   end moves whenever another op of the group starts or ends. An op
///   with a time measured under contention (`time_shared.<type>`,
///   cost-annotate's shared-profile=) has its own rate instead: its time
///   over that time with two busy, scaled by the group's Speed for more
///   (min(1, Speed[K - 1] * (time / time_shared) / Speed[1]));
/// - memory: an op's results are allocated on its device when it starts
///   and freed once their last reader there has finished and every
///   transfer out of them is done; a received copy is allocated when its
///   transfer is requested and freed after its last reader on that device;
///   workspace lives while its op runs; weights, graph inputs, graph
///   outputs and ops' persistent bytes (optimizer state) stay for the whole
///   step. A weight or input lives on the device of its first reader.
/// - a link may have its ends do the copying (CPU workers, no copy
///   engine): while a transfer over it is in flight, an op on the sending
///   device progresses at Link::SpeedWhileSending of its rate, one on the
///   receiving device at SpeedWhileReceiving.
///
/// - a pipeline plan (dp/IR/PipelinePlan.h) runs every op once per
///   micro-batch (an instance), the optimizer updates once after the last
///   micro-batch's backward; a weight gradient accumulates: its instance
///   for micro-batch k reads micro-batch k - 1's, the update reads the
///   last. Graph inputs come once per micro-batch, weights once. Each
///   device runs its instances in the order of its stage's schedule: an
///   instance of a later task (a micro-batch's forward or backward) waits
///   until the device has finished every instance of the earlier ones,
///   FIFO within a task. Stages are the devices in the order of their
///   first op. Where those orders wait on each other in a cycle (a
///   placement that is not a chain of stages), the idle devices take
///   their next ready instance out of order, and the run counts it.
/// - with data-parallel replicas (PipelinePlan::Replicas = R), the run is
///   replica 0's step on its devices; every replica runs the same step
///   on its own copies of them (getReplicaDevice()) at the same time. The
///   gradients the updates read (the last micro-batch's accumulated ones)
///   are all-reduced among a device's R copies, in buckets filled in the
///   order of the ops that make them (PipelinePlan::BucketBytes): a
///   bucket starts once its last gradient is made and the device's
///   earlier buckets have started and ended (DDP launches its buckets in
///   turn), once the channels its algorithm crosses are free,
///   and holds them until it ends (so transfers and other devices'
///   buckets wait, as transfers wait for each other); it takes the
///   fastest of the algorithms of dp/Sim/Collectives.h for its bytes.
///   The updates reading a gradient wait for its bucket. Other replicas'
///   own transfers are not simulated: they run on their own devices'
///   links.
///
/// The simulator is the reward function of every learned placer, so the
/// problem is compiled once into flat arrays (SimGraph) and each run
/// allocates nothing.
///
//===----------------------------------------------------------------------===//

#ifndef DP_SIM_SIMULATOR_H
#define DP_SIM_SIMULATOR_H

#include "dp/Cluster/Cluster.h"
#include "dp/IR/Graph.h"
#include "dp/IR/PipelinePlan.h"
#include "dp/Sim/Collectives.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace dp {

struct LowerBounds;

/// A graph compiled for simulation on one cluster: costs per op and device,
/// tensor sizes, and dataflow in compressed arrays indexed by op and tensor
/// id. Built from the cost annotations (cost-annotate).
class SimGraph {
public:
  /// Fails with a located error if an op lacks a `time.<type>` annotation
  /// for a device type of \p C. With a pipeline plan on \p G, the ops of
  /// the SimGraph are the plan's instances (getBaseOp()).
  static llvm::Expected<SimGraph> build(const Graph &G, const Cluster &C);

  /// Ops, or with a pipeline plan, instances (op, micro-batch).
  unsigned getNumOps() const { return NumOps; }
  /// The graph's ops: what a placement gives a device each.
  unsigned getNumPlacedOps() const { return NumPlacedOps; }
  /// The graph op of instance \p Op (itself without a plan).
  uint32_t getBaseOp(uint32_t Op) const {
    return BaseOp.empty() ? Op : BaseOp[Op];
  }
  /// The micro-batch of instance \p Op (0 without a plan; for an update,
  /// which runs once, the last).
  unsigned getMicroBatch(uint32_t Op) const {
    return InstMicroBatch.empty() ? 0 : InstMicroBatch[Op];
  }
  /// The plan the instances follow, or None.
  const llvm::Optional<PipelinePlan> &getPlan() const { return Plan; }
  unsigned getNumDevices() const { return NumDevices; }
  /// Compute time of \p Op (an instance under a plan) on device \p Dev.
  double getTime(unsigned Op, unsigned Dev) const {
    return Time[size_t(Op) * NumDevices + Dev];
  }
  /// Compute time of graph op \p Op on \p Dev (one micro-batch's).
  double getOpTime(unsigned Op, unsigned Dev) const {
    return getTime(FirstInstance.empty() ? Op : FirstInstance[Op], Dev);
  }
  const Cluster &getCluster() const { return *C; }
  /// What shared group \p Grp of the cluster can do at most, in devices'
  /// worth of work: SharedGroup::getCapacity(), or more where some op
  /// loses less to contention than the group's speeds say.
  double getGroupCapacity(unsigned Grp) const { return GroupCapacity[Grp]; }
  /// The distinct tensors \p Op reads.
  llvm::ArrayRef<uint32_t> getInputs(unsigned Op) const {
    return llvm::makeArrayRef(OpInputs).slice(
        OpInputsBegin[Op], OpInputsBegin[Op + 1] - OpInputsBegin[Op]);
  }
  /// The op that produces \p Tensor, or ~0u for weights and graph inputs.
  uint32_t getProducer(uint32_t Tensor) const { return TensorProducer[Tensor]; }
  uint64_t getBytes(uint32_t Tensor) const { return TensorBytes[Tensor]; }

private:
  friend class Simulator;
  friend LowerBounds computeLowerBounds(const SimGraph &G);

  /// Per op, the bytes the simulator allocates on the op's device before
  /// the step and keeps to its end: the op's persistent bytes and the
  /// weights and inputs it is the first reader of (their home).
  std::vector<uint64_t> getResidentBytes(const SimGraph &G);
  /// SharedScale of op \p O (annotated \p Node) on every device of a
  /// shared group, from its `time_shared.<type>` (\p SharedKeys by type).
  void setSharedScales(unsigned O, const Op &Node,
                       llvm::ArrayRef<std::string> SharedKeys);
  /// GroupCapacity where SharedScale raises it.
  void computeGroupCapacities();
  /// From OpInputs, OpResults and TensorProducer: consumers, sources.
  void buildConsumers();
  /// Replaces the ops and tensors by the instances of \p P.
  void expandMicroBatches(const Graph &G, const PipelinePlan &P);
  friend double computeHeterogeneousWorkBound(const SimGraph &G);
  friend double computeHeadWorkTailBound(const SimGraph &G);
  friend std::vector<uint64_t> getResidentBytes(const SimGraph &G);

  const Cluster *C = nullptr;
  unsigned NumOps = 0, NumDevices = 0, NumTensors = 0, NumPlacedOps = 0;
  llvm::Optional<PipelinePlan> Plan;
  /// With a plan, per instance: its graph op, micro-batch and task (k < M:
  /// micro-batch k's forward, M + k its backward, 2M an update).
  std::vector<uint32_t> BaseOp;
  std::vector<uint32_t> InstMicroBatch, InstTask;
  /// With a plan, per tensor instance: its graph tensor.
  std::vector<uint32_t> BaseTensor;
  /// With a plan, per graph op: its first instance.
  std::vector<uint32_t> FirstInstance;
  /// With replicas, the tensors (instances) the replicas all-reduce: what
  /// the updates read from the last micro-batch, in the order of their
  /// producers (op order).
  std::vector<uint32_t> Gradients;
  /// Op-major: Time[Op * NumDevices + Dev].
  std::vector<double> Time;
  /// Op-major like Time, empty when no op has a shared time: the factor
  /// on the group's speed of an op on a device of a shared group while
  /// other devices of the group are busy (1: the group's speed).
  std::vector<double> SharedScale;
  /// Per shared group of the cluster: getGroupCapacity().
  std::vector<double> GroupCapacity;
  std::vector<uint64_t> OpWorkspace, OpPersistent;
  /// Distinct tensors each op reads: OpInputs[OpInputsBegin[Op]..[Op + 1]).
  std::vector<uint32_t> OpInputsBegin, OpInputs;
  /// Tensors each op produces: OpResults[OpResultsBegin[Op]..[Op + 1]).
  std::vector<uint32_t> OpResultsBegin, OpResults;
  /// Distinct ops reading each tensor, in op order.
  std::vector<uint32_t> ConsumersBegin, Consumers;
  std::vector<uint64_t> TensorBytes;
  /// Producer op, or ~0u for weights and graph inputs.
  std::vector<uint32_t> TensorProducer;
  /// Graph outputs, weights and inputs are never freed.
  std::vector<uint8_t> TensorKeep;
  /// Weights and inputs with a reader, and ops without inputs: where the
  /// simulation starts.
  std::vector<uint32_t> SourceTensors, SourceOps;
};

/// One op's simulated interval.
struct OpInterval {
  double Start = 0, End = 0;
};

/// One simulated transfer.
struct TransferRecord {
  uint32_t Tensor = 0;
  uint16_t Src = 0, Dst = 0;
  double Start = 0, End = 0;
};

/// A device's live bytes from Time on (recorded runs).
struct MemorySample {
  double Time = 0;
  uint32_t Device = 0;
  uint64_t Bytes = 0;
};

/// One simulated all-reduce bucket (recorded runs).
struct CollectiveRecord {
  uint32_t Device = 0;
  uint64_t Bytes = 0;
  /// The gradients it holds (tensor instances under a plan: see
  /// SimResult::getTensor()), in the order of the ops that make them.
  std::vector<uint32_t> Tensors;
  CollectiveAlgorithm Algorithm = CollectiveAlgorithm::Ring;
  double Start = 0, End = 0;
};

struct SimResult {
  double StepTime = 0;
  bool OOM = false;
  /// The first allocation that exceeded a capacity: device, the op (of
  /// the graph, also under a plan) that was starting or receiving, and the
  /// bytes over.
  unsigned OOMDevice = 0;
  uint32_t OOMOp = 0;
  uint64_t OOMBytesOver = 0;
  /// Per device.
  std::vector<double> BusyTime;
  std::vector<uint64_t> PeakBytes;
  std::vector<uint32_t> OpCount;
  /// Bytes carried by each channel (Cluster::getNumChannels()).
  std::vector<uint64_t> ChannelBytes;
  uint64_t TransferBytes = 0;
  uint32_t NumTransfers = 0;
  /// With a pipeline plan: instances a device started before earlier
  /// tasks of its schedule were done, because the schedules waited on each
  /// other in a cycle (0 for a chain of stages).
  uint32_t OutOfOrder = 0;
  /// With replicas: per device, the seconds its buckets' all-reduces took;
  /// the buckets and the bytes they all-reduced.
  std::vector<double> AllReduceTime;
  uint32_t NumBuckets = 0;
  uint64_t AllReduceBytes = 0;
  /// Filled only when timelines are recorded.
  std::vector<CollectiveRecord> Collectives;
  std::vector<OpInterval> Ops;
  std::vector<TransferRecord> Transfers;
  /// The ops on the step's critical path, first to last (recorded runs).
  std::vector<uint32_t> CriticalPath;
  /// Every change of a device's live bytes, in time order; at one time a
  /// device's last sample holds (recorded runs).
  std::vector<MemorySample> Memory;
  /// With a pipeline plan (recorded runs): what Ops, CriticalPath, OOMOp
  /// and the transfers index are instances; these give each instance's
  /// graph op and micro-batch and each tensor instance's graph tensor.
  /// Empty without a plan, where the indices are the graph's.
  std::vector<uint32_t> InstanceOp, InstanceMicroBatch, InstanceTensor;
  uint32_t getOp(uint32_t I) const {
    return InstanceOp.empty() ? I : InstanceOp[I];
  }
  uint32_t getTensor(uint32_t I) const {
    return InstanceTensor.empty() ? I : InstanceTensor[I];
  }
};

/// Runs placements of one SimGraph. Reuse one Simulator for many runs: its
/// buffers are sized once.
class Simulator {
public:
  explicit Simulator(const SimGraph &G);

  /// Simulates \p Placement (a device index per op of the graph:
  /// SimGraph::getNumPlacedOps(), also under a pipeline plan). With
  /// \p RecordTimeline, per-op intervals, transfers and the critical path
  /// are recorded too (for reports and traces).
  void run(llvm::ArrayRef<uint32_t> Placement, SimResult &R,
           bool RecordTimeline = false);

private:
  /// Events at equal times are handled in Payload order, so runs are
  /// deterministic without a sequence counter.
  struct Event {
    double Time;
    /// Op id for an op end; tensor id * devices + destination for a
    /// transfer end (tagged by the top bit).
    uint64_t Payload;
    bool operator<(const Event &O) const {
      return Time != O.Time ? Time < O.Time : Payload < O.Payload;
    }
  };
  void push(double Time, uint64_t Payload);
  Event pop();
  /// Clears the state of the last run and \p R, and counts each op's
  /// inputs still to come.
  void reset(SimResult &R);
  /// Gives every tensor its home and counts the uses that keep each copy
  /// alive.
  void placeTensors();
  /// With recomputation, for forward result \p T: adds it to its home's
  /// recomputed bytes when a backward instance there reads it
  /// (\p Recomputed), and stashes the copies that other devices' forward
  /// instances read.
  void stashAndCount(uint32_t T, bool Recomputed);
  /// Allocates what is there before the step, and starts the source ops.
  void startStep(SimResult &R);
  /// The transfer \p Key (tensor id * devices + destination) ended.
  void finishTransfer(uint64_t Key, double Now, SimResult &R);
  /// Op \p Op ended on \p Dev: its results are available, its inputs have
  /// one reader fewer, and the device takes its next op.
  void finishOp(uint32_t Op, unsigned Dev, double Now, SimResult &R);
  void startOp(uint32_t Op, unsigned Dev, double Now, SimResult &R);
  void makeAvailable(uint32_t T, unsigned Dev, double Now, SimResult &R);
  void allocate(unsigned Dev, uint64_t Bytes, uint32_t Op, SimResult &R);
  void release(uint32_t T, unsigned Dev, SimResult &R);
  /// Shared groups: the work left of every running op of group \p Grp as
  /// of \p Now, then, with \p Delta devices more (or fewer) busy, each
  /// op's new end. \p Except is left for the caller.
  void reshare(unsigned Grp, int Delta, double Now, unsigned Except);
  /// The op running on \p Dev (a device with a variable rate): its work
  /// left as of \p Now at the rate it ran, then its end at today's rate.
  void rerate(unsigned Dev, double Now);
  /// The rate of an op on \p Dev now: its group's speed for the busy
  /// count, times what the transfers in flight at its ends leave it.
  double getRate(unsigned Dev) const;
  void pushOpEnd(unsigned Dev, double Now);
  /// A transfer over a route whose ends lose speed while it is in flight
  /// (Link::SpeedWhileSending, SpeedWhileReceiving) begins or ends.
  void loadEnds(unsigned Src, unsigned Dst, int Delta, double Now);

  const SimGraph &G;
  const Cluster &C;
  /// The device of each instance (of each op without a plan), and of each
  /// op of the graph.
  llvm::ArrayRef<uint32_t> Place, GraphPlace;
  bool Record = false;
  /// A binary min-heap of pending events.
  std::vector<Event> Heap;
  /// Routes by (source, destination), flattened: channels, latency and
  /// seconds per byte.
  std::vector<uint32_t> RouteBegin, RouteChannels;
  std::vector<double> RouteLatency, RouteSecondsPerByte;
  std::vector<uint32_t> Pending;
  /// Per (tensor, device): 0 absent, 1 in flight, 2 present, 3 in flight
  /// and slowing its route's ends.
  std::vector<uint8_t> State;
  /// Per (tensor, device): readers and outgoing transfers still to come.
  std::vector<uint32_t> Uses;
  /// The home device of each tensor.
  std::vector<uint32_t> Home;
  /// Per device: FIFO of runnable ops, a list through QNext (an op is
  /// queued at most once per run).
  std::vector<uint32_t> QNext;
  std::vector<uint32_t> QHead, QTail;
  /// Op \p Op is runnable on \p Dev: starts it if the device may, else
  /// queues it.
  void makeReady(uint32_t Op, unsigned Dev, double Now, SimResult &R);
  /// The device's next op, or ~0u: the head of its FIFO, or with a plan,
  /// the first ready instance of its current task (of any task with
  /// \p AnyTask).
  uint32_t takeNext(unsigned Dev, bool AnyTask);
  /// With a plan: the placement per instance.
  std::vector<uint32_t> InstPlace;
  /// With a plan: per device and task, its position in the device's
  /// schedule (TaskPos) and the instances of the position still to finish
  /// (PosLeft); per device, the position it runs (CurPos) and its ready
  /// instances, a min-heap by (position, arrival).
  unsigned NumTasks = 0;
  std::vector<uint32_t> TaskPos, PosLeft, CurPos;
  struct ReadyEntry {
    uint64_t Key;
    uint32_t Op;
    bool operator>(const ReadyEntry &O) const { return Key > O.Key; }
  };
  std::vector<std::vector<ReadyEntry>> ReadyHeap;
  uint32_t Arrivals = 0;
  /// Sets TaskPos and PosLeft for the placement (and, with
  /// recomputation, the per-device figures below).
  void orderTasks();
  /// With a plan that recomputes (PipelinePlan::Recompute), per device:
  /// the seconds of one micro-batch's forward instances on it, the bytes
  /// of the results of those that its own backward instances read (what
  /// a recomputation holds), and per (device, position) whether the
  /// backward task there has started its recomputation (1) or finished
  /// (2). Stash lists, per (device, micro-batch), the copies of other
  /// devices' forward results that its forward instances read, kept
  /// until that micro-batch's backward there is done. Extra is the
  /// recomputation added to the op running on a device.
  bool Recompute = false;
  std::vector<double> RecomputeTime, Extra;
  std::vector<uint64_t> RecomputeBytes;
  std::vector<uint8_t> RecomputeState, HasBackward;
  std::vector<uint32_t> PosTask;
  std::vector<std::vector<uint32_t>> Stash;
  /// Whether instance \p Op is a forward (or loss) one, or a backward one.
  bool isForwardInstance(uint32_t Op) const {
    return G.InstTask[Op] < G.Plan->MicroBatches;
  }
  bool isBackwardInstance(uint32_t Op) const {
    return G.InstTask[Op] >= G.Plan->MicroBatches &&
           G.InstTask[Op] < 2 * G.Plan->MicroBatches;
  }
  /// With recomputation: whether backward instance \p Reader reading \p T
  /// reads a recomputed copy (T is a forward result of its own device), so
  /// that T itself need not stay for it.
  bool readsRecomputed(uint32_t T, uint32_t Reader) const {
    uint32_t P = G.TensorProducer[T];
    return Recompute && P != ~0u && isForwardInstance(P) &&
           isBackwardInstance(Reader) && Place[P] == Place[Reader];
  }
  /// The backward task at \p Dev's position \p Pos is done: its
  /// recomputed activations and its micro-batch's stash go.
  void finishRecomputedTask(unsigned Dev, uint32_t Pos, SimResult &R);
  std::vector<uint32_t> DevFirst;
  std::vector<unsigned> StageOf;
  /// Nothing is in flight but instances wait on schedules that wait on
  /// each other: every idle device starts its first ready instance.
  /// Whether one did.
  bool startOutOfOrder(SimResult &R);
  /// Per tensor, the devices other than its home that read it, ascending:
  /// RemoteDevs[RemoteBegin[T]..[T + 1]) (placeTensors() finds them once
  /// per run; makeAvailable() sends to them). A stamp per device marks
  /// those found for the tensor at hand.
  std::vector<uint32_t> RemoteBegin, RemoteDevs;
  std::vector<uint32_t> DevStamp;
  uint32_t Stamp = 0;
  std::vector<uint8_t> Busy;
  std::vector<double> ChannelFree;
  std::vector<uint64_t> Live;
  /// The time of the event being handled (for memory samples).
  double Clock = 0;
  /// Records device \p Dev's live bytes now, when recording.
  void noteMemory(unsigned Dev, SimResult &R);
  /// Shared groups. Per group: busy devices. Per device: the running op,
  /// its work left (seconds at full speed) at LastUpdate, when it started,
  /// and a generation that marks its end event; an end event of an older
  /// generation is stale (the op's end moved).
  std::vector<int> GroupOf;
  std::vector<std::vector<unsigned>> GroupDevices;
  std::vector<std::vector<double>> GroupSpeed;
  std::vector<unsigned> GroupBusy;
  std::vector<uint32_t> RunningOp, Generation;
  std::vector<double> WorkLeft, LastUpdate, StartedAt;
  /// Per device: the rate its running op has progressed at since
  /// LastUpdate, and whether an op runs (Busy stays set while a finished
  /// op's device looks at its queue).
  std::vector<double> Rate;
  std::vector<uint8_t> Running;
  /// Transfers whose ends lose speed: whether any route has such ends;
  /// per route, the speed its source and destination keep; per device,
  /// the transfers in flight it sends and receives, and the lowest speed
  /// among the routes of each.
  bool LoadsEnds = false;
  std::vector<double> RouteSendSpeed, RouteRecvSpeed;
  std::vector<unsigned> Sending, Receiving;
  std::vector<double> SendSpeed, RecvSpeed;
  /// Replicas (PipelinePlan::Replicas > 1 with gradients to all-reduce):
  /// per tensor its bucket or ~0u; per bucket its device, bytes, the
  /// gradients still to come, and its tensors
  /// (BucketTensors[BucketBegin[B]..[B + 1])); per device, when its last
  /// bucket ends, and its all-reduce costs (computed on first use).
  bool Reduce = false;
  std::vector<uint32_t> GradBucket, BucketDev, BucketLeft, BucketBegin,
      BucketTensors;
  std::vector<uint64_t> BucketSize;
  std::vector<double> CommFree;
  std::vector<std::vector<CollectiveCost>> DevCosts;
  /// Per device while buckets are filled: its open bucket, how many it
  /// has and its last; per bucket, the device's next bucket; per device,
  /// the bucket whose turn it is to start (~0u: all started).
  std::vector<uint32_t> OpenBucket, BucketsOf, LastBucket, BucketNext, Turn;
  /// Per device: the shared groups of its copies in the other replicas
  /// (which run its ops when it does, so their groups are busy then);
  /// per device, the copy its all-reduces load as their other end (~0u:
  /// none); per bucket, whether its all-reduce loads its ends now.
  std::vector<std::vector<unsigned>> CopyGroups;
  std::vector<uint32_t> CommPeer;
  std::vector<uint8_t> BucketLoading;
  /// Bucket \p B's all-reduce loads (\p Delta = +1) or stops loading
  /// (-1) its device as a transfer from it to its peer would.
  void loadBucket(uint32_t B, int Delta, double Now);
  /// Fills the buckets of the placement.
  void formBuckets(SimResult &R);
  /// Gradient \p T was made on \p Dev: when it was its bucket's last, the
  /// device's full buckets start, in turn.
  void arriveGradient(uint32_t T, unsigned Dev, double Now, SimResult &R);
  /// Starts bucket \p B's all-reduce.
  void startBucket(uint32_t B, double Now, SimResult &R);
  /// Bucket \p B's all-reduce ended: its gradients are there.
  void finishBucket(uint32_t B, double Now, SimResult &R);
  /// What made each op start: the op or transfer it waited for last.
  std::vector<uint32_t> WaitedOn;
  std::vector<double> ReadyTime;
};

/// Lower bounds on the step time of any placement of \p G.
struct LowerBounds {
  /// Longest path with every op on its fastest device, no communication.
  double CriticalPath = 0;
  /// Sum over ops of their fastest time, divided by the number of devices.
  double Work = 0;
  /// The ops' work split fractionally over the device types, each type's
  /// share at most its devices' worth, within memory
  /// (computeHeterogeneousWorkBound()); 0 when nothing fits.
  double HeterogeneousWork = 0;
  /// The critical path coupled with the devices' capacity: the largest
  /// head + work / rate + tail over sets of ops that start late and end
  /// early (computeHeadWorkTailBound()).
  double HeadWorkTail = 0;
  /// The step cut where the graph narrows to one op, each segment's
  /// least time bounded by a mixed-integer relaxation (CBC, within a time
  /// limit; computeSegmentBound()); 0 unless asked for or without CBC.
  double Segments = 0;
  /// The segments it cut the step into, and those whose least time its
  /// program settled exactly (one op, or CBC proved it optimal).
  unsigned SegmentCount = 0, SegmentsExact = 0;
  double best() const {
    return std::max(std::max(std::max(CriticalPath, Work),
                             std::max(HeterogeneousWork, HeadWorkTail)),
                    Segments);
  }
};
LowerBounds computeLowerBounds(const SimGraph &G);

/// What computeSegmentBound() did.
struct SegmentBoundInfo {
  /// Segments, those whose least time is known exactly (one op, or CBC
  /// proved its program optimal), and the seconds taken.
  unsigned Segments = 0, Exact = 0;
  double Seconds = 0;
};

/// A lower bound on the step of any placement of \p G (lib/Sim/
/// SegmentBound.cpp derives it): the sum, over the segments between the
/// critical path's ops that every op it waits for precedes or follows, of
/// CBC's bound on a mixed-integer relaxation of the segment (placement,
/// transfers at the idle routes' times, each device running its ops one
/// at a time), within about \p Seconds in all. 0 without CBC
/// (hasSegmentBoundSolver()) or when \p Seconds is not positive.
double computeSegmentBound(const SimGraph &G, double Seconds,
                           SegmentBoundInfo *Info = nullptr);
bool hasSegmentBoundSolver();

/// max over sets S of ops of min head + W(S) / R + min tail, where heads
/// and tails are longest paths at the ops' fastest times without
/// transfers, W(S) is S's fastest work and R the work the devices do per
/// second in those units; lib/Sim/PathBound.cpp derives it. At least the
/// critical path and work / devices; 0 when an op has no finite time.
double computeHeadWorkTailBound(const SimGraph &G);

/// The smallest T such that the ops can be split, fractionally, over the
/// cluster's device types with no type busier than T times its devices
/// (less what shared groups within it lose to contention), where each op
/// goes only to types whose memory holds it while it runs and each
/// type's devices hold the bytes the simulator keeps there all step (ops'
/// persistent bytes, weights and inputs at their first reader). A linear
/// program (GLPK) over classes of interchangeable ops; lib/Sim/WorkBound.cpp
/// derives it. 0 when no placement fits or the solver fails.
double computeHeterogeneousWorkBound(const SimGraph &G);

/// The device of replica \p Replica's copy of \p Dev under \p Plan: the
/// device of Dev's type whose index among that type's devices is Dev's
/// plus Replica times the stride (PipelinePlan::ReplicaStride, or the
/// type's devices over PipelinePlan::Replicas), or ~0u when the type has
/// no such device.
unsigned getReplicaDevice(const Cluster &C, const PipelinePlan &Plan,
                          unsigned Dev, unsigned Replica);

/// The devices among \p Candidates that replica 0 may use under \p Plan:
/// those whose index j among their type's devices has j / stride a
/// multiple of the replicas and a copy in every replica (every device of
/// the type with one replica).
std::vector<unsigned> getReplicaGroup(const Cluster &C,
                                      const PipelinePlan &Plan,
                                      llvm::ArrayRef<unsigned> Candidates);

/// Checks the devices \p Placement uses under \p Plan's replicas: each
/// has a copy in every replica, and no copy is a device replica 0 uses
/// or another replica's copy. Errors start with \p Who, name the device
/// and say which devices replica 0 may use.
llvm::Error checkReplicaDevices(const Cluster &C, const PipelinePlan &Plan,
                                llvm::ArrayRef<uint32_t> Placement,
                                llvm::StringRef Who = "");

/// The device index of every op from its `device` annotation. Errors name
/// ops without one or with a device the cluster lacks.
llvm::Expected<std::vector<uint32_t>> getPlacement(const Graph &G,
                                                   const Cluster &C);

} // namespace dp

#endif // DP_SIM_SIMULATOR_H
