//===- Simulator.cpp - Event-driven step-time simulator -------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/Sim/Simulator.h"
#include "dp/IR/Annotations.h"
#include "dp/Support/Diagnostics.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <limits>

using namespace llvm;

namespace dp {

static constexpr uint32_t None = ~0u;
static constexpr uint64_t TransferTag = uint64_t(1) << 63;
/// With TransferTag: the transfer begins (its route was busy when it was
/// requested) rather than ends.
static constexpr uint64_t TransferStartTag = uint64_t(1) << 62;
/// Without TransferTag: an all-reduce bucket ends, or with
/// TransferStartTag starts loading its ends (an op's end event holds the
/// op and its device's generation, which stays below this).
static constexpr uint64_t CollectiveTag = uint64_t(1) << 61;
/// A State of a (tensor, device): in flight over a route whose ends it
/// slows (beside 0 absent, 1 in flight, 2 present).
static constexpr uint8_t Loading = 3;
/// Transfer records keep devices in 16 bits.
static constexpr unsigned MaxDevices = 65535;

//===----------------------------------------------------------------------===//
// SimGraph
//===----------------------------------------------------------------------===//

Expected<SimGraph> SimGraph::build(const Graph &G, const Cluster &C) {
  if (C.getNumDevices() > MaxDevices)
    return makeError("the simulator supports clusters of at most " +
                     Twine(MaxDevices) + " devices; '" + C.getName() +
                     "' has " + Twine(C.getNumDevices()));
  SimGraph S;
  S.C = &C;
  S.NumOps = S.NumPlacedOps = G.getNumOps();
  S.NumDevices = C.getNumDevices();
  S.NumTensors = G.getNumTensors();
  unsigned D = S.NumDevices;

  // Costs: one annotation per device type, looked up once per op.
  std::vector<std::string> Keys, SharedKeys;
  for (const DeviceType &T : C.getTypes()) {
    Keys.push_back(ann::getTimeKey(T.Name));
    SharedKeys.push_back(ann::getSharedTimeKey(T.Name));
  }
  S.Time.resize(size_t(S.NumOps) * D);
  S.OpWorkspace.assign(S.NumOps, 0);
  S.OpPersistent.assign(S.NumOps, 0);
  ErrorList Errs;
  std::vector<double> TypeTime(Keys.size());
  for (OpId O = 0; O != S.NumOps; ++O) {
    const Op &Node = G.getOp(O);
    bool Ok = true;
    for (unsigned K = 0, E = Keys.size(); K != E; ++K) {
      const Attribute *A = Node.Annotations.get(Keys[K]);
      if (!A || A->getKind() != AttrKind::Float || !(A->getFloat() >= 0)) {
        Errs.add(makeNodeError(Node.Name, "no cost for device type '" +
                                              C.getTypes()[K].Name +
                                              "' (annotation " + Keys[K] +
                                              "); run cost-annotate first"));
        Ok = false;
        break;
      }
      TypeTime[K] = A->getFloat();
    }
    if (!Ok)
      continue;
    for (unsigned Dev = 0; Dev != D; ++Dev)
      S.Time[size_t(O) * D + Dev] = TypeTime[C.getDevices()[Dev].Type];
    S.setSharedScales(O, Node, SharedKeys);
    auto Bytes = [&](const ann::Key<int64_t> &K) -> uint64_t {
      Optional<int64_t> N = ann::get(Node, K);
      return N && *N > 0 ? uint64_t(*N) : 0;
    };
    S.OpWorkspace[O] = Bytes(ann::WorkspaceBytes);
    S.OpPersistent[O] = Bytes(ann::PersistentBytes);
  }
  if (Error E = Errs.take())
    return std::move(E);
  for (const SharedGroup &Grp : C.getSharedGroups())
    S.GroupCapacity.push_back(Grp.getCapacity());
  if (!S.SharedScale.empty())
    S.computeGroupCapacities();

  // Tensors.
  S.TensorBytes.resize(S.NumTensors);
  S.TensorProducer.resize(S.NumTensors);
  S.TensorKeep.assign(S.NumTensors, 0);
  for (TensorId T = 0; T != S.NumTensors; ++T) {
    const Tensor &Tn = G.getTensor(T);
    S.TensorBytes[T] = Tn.Type.getSizeInBytes().getValueOr(0);
    S.TensorProducer[T] = Tn.Producer == NoId ? None : Tn.Producer;
    S.TensorKeep[T] = Tn.Kind != TensorKind::Activation;
  }
  for (TensorId T : G.getOutputs())
    S.TensorKeep[T] = 1;

  // Dataflow, deduplicated: an op reading a tensor twice waits for it once.
  S.OpInputsBegin.assign(S.NumOps + 1, 0);
  S.OpResultsBegin.assign(S.NumOps + 1, 0);
  for (OpId O = 0; O != S.NumOps; ++O) {
    const Op &Node = G.getOp(O);
    unsigned First = S.OpInputs.size();
    for (TensorId T : Node.Operands)
      if (T != NoId && std::find(S.OpInputs.begin() + First, S.OpInputs.end(),
                                 T) == S.OpInputs.end())
        S.OpInputs.push_back(T);
    S.OpInputsBegin[O + 1] = S.OpInputs.size();
    for (TensorId T : Node.Results)
      if (T != NoId)
        S.OpResults.push_back(T);
    S.OpResultsBegin[O + 1] = S.OpResults.size();
  }
  if ((S.Plan = getPipelinePlan(G)))
    S.expandMicroBatches(G, *S.Plan);
  S.buildConsumers();
  return std::move(S);
}

void SimGraph::buildConsumers() {
  std::vector<uint32_t> NumConsumers(NumTensors, 0);
  for (uint32_t T : OpInputs)
    ++NumConsumers[T];
  ConsumersBegin.assign(NumTensors + 1, 0);
  for (uint32_t T = 0; T != NumTensors; ++T)
    ConsumersBegin[T + 1] = ConsumersBegin[T] + NumConsumers[T];
  Consumers.resize(ConsumersBegin.back());
  std::vector<uint32_t> Fill(ConsumersBegin.begin(), ConsumersBegin.end() - 1);
  for (uint32_t O = 0; O != NumOps; ++O)
    for (unsigned I = OpInputsBegin[O]; I != OpInputsBegin[O + 1]; ++I)
      Consumers[Fill[OpInputs[I]]++] = O;
  SourceTensors.clear();
  SourceOps.clear();
  for (uint32_t T = 0; T != NumTensors; ++T)
    if (TensorProducer[T] == None && NumConsumers[T])
      SourceTensors.push_back(T);
  for (uint32_t O = 0; O != NumOps; ++O)
    if (OpInputsBegin[O] == OpInputsBegin[O + 1])
      SourceOps.push_back(O);
}

void SimGraph::expandMicroBatches(const Graph &G, const PipelinePlan &P) {
  unsigned M = P.MicroBatches, N = NumOps, D = NumDevices;
  // Updates run once, on the accumulated gradients; every other op once
  // per micro-batch. Instances: micro-batch 0's ops in graph order, then
  // micro-batch 1's, ..., then the updates: a topological order.
  std::vector<uint8_t> Once(N), Backward(N);
  std::vector<uint32_t> Rank(N);
  unsigned PerMB = 0, NumOnce = 0;
  for (OpId O = 0; O != N; ++O) {
    StringRef Phase = ann::getString(G.getOp(O), ann::Phase);
    Once[O] = Phase == "update";
    Backward[O] = Phase == "backward";
    Rank[O] = Once[O] ? NumOnce++ : PerMB++;
  }
  auto Inst = [&](uint32_t O, unsigned K) {
    return Once[O] ? M * PerMB + Rank[O] : K * PerMB + Rank[O];
  };
  // Tensors: one per micro-batch when a per-micro-batch op makes them or
  // they are graph inputs (each micro-batch its slice of the batch); weights
  // and what the updates make, once.
  std::vector<uint8_t> TOnce(NumTensors), Accumulates(NumTensors);
  std::vector<uint32_t> TRank(NumTensors);
  unsigned TPer = 0, TNumOnce = 0;
  for (uint32_t T = 0; T != NumTensors; ++T) {
    uint32_t Producer = TensorProducer[T];
    TOnce[T] = Producer != None ? Once[Producer]
                                : G.getTensor(T).Kind != TensorKind::Input;
    TRank[T] = TOnce[T] ? TNumOnce++ : TPer++;
  }
  auto TInst = [&](uint32_t T, unsigned K) {
    return TOnce[T] ? M * TPer + TRank[T] : K * TPer + TRank[T];
  };
  // What an update reads from a micro-batch's ops is a gradient that
  // accumulates: micro-batch k's instance also reads k - 1's.
  for (OpId O = 0; O != N; ++O)
    if (Once[O])
      for (unsigned I = OpInputsBegin[O]; I != OpInputsBegin[O + 1]; ++I)
        if (uint32_t T = OpInputs[I]; !TOnce[T] && TensorProducer[T] != None)
          Accumulates[T] = 1;

  unsigned NI = M * PerMB + NumOnce, NT = M * TPer + TNumOnce;
  std::vector<uint32_t> Order(NI);
  FirstInstance.resize(N);
  for (OpId O = 0; O != N; ++O)
    FirstInstance[O] = Inst(O, 0);
  for (OpId O = 0; O != N; ++O)
    for (unsigned K = 0, E = Once[O] ? 1 : M; K != E; ++K)
      Order[Inst(O, K)] = O;
  std::vector<double> NewTime(size_t(NI) * D), NewShared;
  if (!SharedScale.empty())
    NewShared.resize(size_t(NI) * D);
  std::vector<uint64_t> NewWorkspace(NI), NewPersistent(NI);
  std::vector<uint32_t> NewInputsBegin(NI + 1, 0), NewInputs;
  std::vector<uint32_t> NewResultsBegin(NI + 1, 0), NewResults;
  std::vector<uint64_t> NewBytes(NT);
  std::vector<uint32_t> NewProducer(NT, None);
  std::vector<uint8_t> NewKeep(NT);
  BaseOp.resize(NI);
  BaseTensor.resize(NT);
  InstMicroBatch.resize(NI);
  InstTask.resize(NI);
  for (uint32_t T = 0; T != NumTensors; ++T)
    for (unsigned K = 0, E = TOnce[T] ? 1 : M; K != E; ++K) {
      BaseTensor[TInst(T, K)] = T;
      NewBytes[TInst(T, K)] = TensorBytes[T];
      NewKeep[TInst(T, K)] = TensorKeep[T];
    }
  for (uint32_t I = 0; I != NI; ++I) {
    uint32_t O = Order[I];
    unsigned K = Once[O] ? M - 1 : I / PerMB;
    BaseOp[I] = O;
    InstMicroBatch[I] = K;
    InstTask[I] = Once[O] ? 2 * M : Backward[O] ? M + K : K;
    std::copy_n(Time.begin() + size_t(O) * D, D,
                NewTime.begin() + size_t(I) * D);
    if (!NewShared.empty())
      std::copy_n(SharedScale.begin() + size_t(O) * D, D,
                  NewShared.begin() + size_t(I) * D);
    NewWorkspace[I] = OpWorkspace[O];
    // State that stays all step (optimizer moments) is there once.
    NewPersistent[I] = Once[O] || K == 0 ? OpPersistent[O] : 0;
    for (unsigned J = OpInputsBegin[O]; J != OpInputsBegin[O + 1]; ++J)
      NewInputs.push_back(TInst(OpInputs[J], K));
    for (unsigned J = OpResultsBegin[O]; J != OpResultsBegin[O + 1]; ++J) {
      uint32_t T = OpResults[J];
      if (!Once[O] && K && Accumulates[T])
        NewInputs.push_back(TInst(T, K - 1));
      NewResults.push_back(TInst(T, K));
      NewProducer[TInst(T, K)] = I;
    }
    NewInputsBegin[I + 1] = NewInputs.size();
    NewResultsBegin[I + 1] = NewResults.size();
  }
  // With replicas, what the updates read from the last micro-batch is
  // all-reduced, in the order of the ops that make it.
  Gradients.clear();
  if (P.Replicas > 1) {
    for (uint32_t T = 0; T != NumTensors; ++T)
      if (Accumulates[T])
        Gradients.push_back(TInst(T, M - 1));
    llvm::sort(Gradients, [&](uint32_t A, uint32_t B) {
      return NewProducer[A] != NewProducer[B] ? NewProducer[A] < NewProducer[B]
                                              : A < B;
    });
  }
  NumOps = NI;
  NumTensors = NT;
  Time = std::move(NewTime);
  SharedScale = std::move(NewShared);
  OpWorkspace = std::move(NewWorkspace);
  OpPersistent = std::move(NewPersistent);
  OpInputsBegin = std::move(NewInputsBegin);
  OpInputs = std::move(NewInputs);
  OpResultsBegin = std::move(NewResultsBegin);
  OpResults = std::move(NewResults);
  TensorBytes = std::move(NewBytes);
  TensorProducer = std::move(NewProducer);
  TensorKeep = std::move(NewKeep);
}

void SimGraph::setSharedScales(unsigned O, const Op &Node,
                               ArrayRef<std::string> SharedKeys) {
  for (unsigned Dev = 0; Dev != NumDevices; ++Dev) {
    int Grp = C->getSharedGroup(Dev);
    if (Grp < 0)
      continue;
    const SharedGroup &SG = C->getSharedGroups()[Grp];
    const Attribute *A =
        Node.Annotations.get(SharedKeys[C->getDevices()[Dev].Type]);
    if (SG.Speed.size() < 2 || !A || A->getKind() != AttrKind::Float)
      continue;
    double Alone = Time[size_t(O) * NumDevices + Dev], Shared = A->getFloat();
    // Under contention an op is no faster than alone: a shared time below
    // the op's own is the machine's drift between the two profiles.
    double Rate2 = Shared > 0 && Alone < Shared ? Alone / Shared : 1.0;
    if (SharedScale.empty())
      SharedScale.assign(size_t(NumOps) * NumDevices, 1.0);
    SharedScale[size_t(O) * NumDevices + Dev] = Rate2 / SG.Speed[1];
  }
}

void SimGraph::computeGroupCapacities() {
  ArrayRef<SharedGroup> Groups = C->getSharedGroups();
  for (unsigned Grp = 0, E = Groups.size(); Grp != E; ++Grp) {
    // The op that loses least to contention bounds what the group can do.
    double Best = 0;
    for (unsigned Op = 0; Op != NumOps; ++Op)
      for (unsigned Dev : Groups[Grp].Devices)
        Best = std::max(Best, SharedScale[size_t(Op) * NumDevices + Dev]);
    ArrayRef<double> Speed = Groups[Grp].Speed;
    double Capacity = 1;
    for (unsigned K = 1, N = Speed.size(); K != N; ++K)
      Capacity =
          std::max(Capacity, double(K + 1) * std::min(1.0, Speed[K] * Best));
    GroupCapacity[Grp] = Capacity;
  }
}

//===----------------------------------------------------------------------===//
// Simulator
//===----------------------------------------------------------------------===//

Simulator::Simulator(const SimGraph &G) : G(G), C(*G.C) {
  unsigned D = G.NumDevices;
  Heap.reserve(G.NumOps + size_t(G.NumTensors) * D + 1);
  Pending.resize(G.NumOps);
  State.resize(size_t(G.NumTensors) * D);
  Uses.resize(size_t(G.NumTensors) * D);
  Home.resize(G.NumTensors);
  QNext.resize(G.NumOps);
  QHead.resize(D);
  QTail.resize(D);
  DevStamp.assign(D, 0);
  RemoteBegin.resize(G.NumTensors + 1);
  RemoteDevs.reserve(G.Consumers.size());
  if (G.Plan) {
    NumTasks = 2 * G.Plan->MicroBatches + 1;
    TaskPos.resize(size_t(D) * NumTasks);
    PosLeft.resize(size_t(D) * NumTasks);
    CurPos.resize(D);
    ReadyHeap.resize(D);
    InstPlace.resize(G.NumOps);
    if (G.Plan->Recompute) {
      PosTask.resize(size_t(D) * NumTasks);
      RecomputeState.resize(size_t(D) * NumTasks);
      Stash.resize(size_t(D) * G.Plan->MicroBatches);
    }
  }
  Reduce = G.Plan && G.Plan->Replicas > 1 && !G.Gradients.empty();
  if (Reduce) {
    GradBucket.assign(G.NumTensors, None);
    CommFree.resize(D);
    DevCosts.resize(D);
  }
  Busy.resize(D);
  ChannelFree.resize(C.getNumChannels());
  Live.resize(D);
  WaitedOn.resize(G.NumOps);
  ReadyTime.resize(G.NumOps);
  GroupOf.assign(D, -1);
  for (const SharedGroup &Grp : C.getSharedGroups()) {
    for (unsigned Dev : Grp.Devices)
      GroupOf[Dev] = GroupDevices.size();
    GroupDevices.push_back(Grp.Devices);
    GroupSpeed.push_back(Grp.Speed);
  }
  RunningOp.resize(D);
  Generation.resize(D);
  WorkLeft.resize(D);
  LastUpdate.resize(D);
  StartedAt.resize(D);
  Rate.assign(D, 1.0);
  Running.resize(D);
  RouteBegin.push_back(0);
  RouteSendSpeed.assign(size_t(D) * D, 1.0);
  RouteRecvSpeed.assign(size_t(D) * D, 1.0);
  SendSpeed.assign(D, 1.0);
  RecvSpeed.assign(D, 1.0);
  ArrayRef<Link> Links = C.getLinks();
  for (unsigned Src = 0; Src != D; ++Src) {
    for (unsigned Dst = 0; Dst != D; ++Dst) {
      ArrayRef<unsigned> Route = C.getRoute(Src, Dst);
      for (unsigned Ch : Route)
        RouteChannels.push_back(Ch);
      RouteBegin.push_back(RouteChannels.size());
      bool Same = Src == Dst;
      RouteLatency.push_back(Same ? 0 : C.getRouteLatency(Src, Dst));
      RouteSecondsPerByte.push_back(Same ? 0
                                         : 1 / C.getRouteBandwidth(Src, Dst));
      if (Route.empty())
        continue;
      // Channel 2L runs over link L.
      double Send = Links[Route.front() / 2].SpeedWhileSending;
      double Recv = Links[Route.back() / 2].SpeedWhileReceiving;
      RouteSendSpeed[size_t(Src) * D + Dst] = Send;
      RouteRecvSpeed[size_t(Src) * D + Dst] = Recv;
      SendSpeed[Src] = std::min(SendSpeed[Src], Send);
      RecvSpeed[Dst] = std::min(RecvSpeed[Dst], Recv);
      LoadsEnds |= Send < 1 || Recv < 1;
    }
  }
  Sending.resize(D);
  Receiving.resize(D);
  // A device whose ops can slow down needs a group: one of its own when
  // it shares nothing.
  if (LoadsEnds)
    for (unsigned Dev = 0; Dev != D; ++Dev)
      if (GroupOf[Dev] < 0 && (SendSpeed[Dev] < 1 || RecvSpeed[Dev] < 1)) {
        GroupOf[Dev] = GroupDevices.size();
        GroupDevices.push_back({Dev});
        GroupSpeed.push_back({1.0});
      }
  GroupBusy.resize(GroupDevices.size());
  // Replicas: a device's copies run its ops when it does, so their shared
  // groups are busy then too; its all-reduces load it as a transfer to a
  // copy would.
  CopyGroups.clear();
  CommPeer.clear();
  if (G.Plan && G.Plan->Replicas > 1) {
    CopyGroups.resize(D);
    CommPeer.assign(D, None);
    for (unsigned Dev = 0; Dev != D; ++Dev)
      for (unsigned Rep = 1; Rep != G.Plan->Replicas; ++Rep) {
        unsigned Copy = getReplicaDevice(C, *G.Plan, Dev, Rep);
        if (Copy == None || Copy == Dev)
          continue;
        if (GroupOf[Copy] >= 0)
          CopyGroups[Dev].push_back(GroupOf[Copy]);
        if (CommPeer[Dev] == None)
          CommPeer[Dev] = Copy;
      }
  }
}

void Simulator::push(double Time, uint64_t Payload) {
  // Sift the hole up from the end.
  Event E{Time, Payload};
  size_t I = Heap.size();
  Heap.emplace_back();
  while (I) {
    size_t Parent = (I - 1) / 2;
    if (!(E < Heap[Parent]))
      break;
    Heap[I] = Heap[Parent];
    I = Parent;
  }
  Heap[I] = E;
}

Simulator::Event Simulator::pop() {
  Event Top = Heap.front();
  Event Last = Heap.back();
  Heap.pop_back();
  size_t N = Heap.size();
  if (!N)
    return Top;
  // Sift the hole down from the root, then place the last event.
  size_t I = 0;
  while (true) {
    size_t Child = 2 * I + 1;
    if (Child >= N)
      break;
    if (Child + 1 < N && Heap[Child + 1] < Heap[Child])
      ++Child;
    if (!(Heap[Child] < Last))
      break;
    Heap[I] = Heap[Child];
    I = Child;
  }
  Heap[I] = Last;
  return Top;
}

void Simulator::noteMemory(unsigned Dev, SimResult &R) {
  if (!Record)
    return;
  if (!R.Memory.empty() && R.Memory.back().Device == Dev &&
      R.Memory.back().Time == Clock)
    R.Memory.back().Bytes = Live[Dev];
  else
    R.Memory.push_back({Clock, Dev, Live[Dev]});
}

void Simulator::allocate(unsigned Dev, uint64_t Bytes, uint32_t Op,
                         SimResult &R) {
  Live[Dev] += Bytes;
  noteMemory(Dev, R);
  if (Live[Dev] > R.PeakBytes[Dev])
    R.PeakBytes[Dev] = Live[Dev];
  uint64_t Capacity = C.getDeviceType(Dev).MemoryBytes;
  if (!R.OOM && Live[Dev] > Capacity) {
    R.OOM = true;
    R.OOMDevice = Dev;
    R.OOMOp = G.getBaseOp(Op);
    R.OOMBytesOver = Live[Dev] - Capacity;
  }
}

void Simulator::release(uint32_t T, unsigned Dev, SimResult &R) {
  if (G.TensorKeep[T] && Dev == Home[T])
    return;
  Live[Dev] -= G.TensorBytes[T];
  noteMemory(Dev, R);
}

double Simulator::getRate(unsigned Dev) const {
  unsigned Grp = GroupOf[Dev];
  unsigned NumBusy = GroupBusy[Grp];
  double R = GroupSpeed[Grp][NumBusy - 1];
  if (NumBusy > 1 && !G.SharedScale.empty())
    R = std::min(
        1.0, R * G.SharedScale[size_t(RunningOp[Dev]) * G.NumDevices + Dev]);
  if (Sending[Dev])
    R *= SendSpeed[Dev];
  if (Receiving[Dev])
    R *= RecvSpeed[Dev];
  return R;
}

/// The end event of the op running on \p Dev, at its current rate; a new
/// generation makes the earlier end events of the device stale.
void Simulator::pushOpEnd(unsigned Dev, double Now) {
  Rate[Dev] = getRate(Dev);
  ++Generation[Dev];
  push(Now + WorkLeft[Dev] / Rate[Dev],
       uint64_t(RunningOp[Dev]) | uint64_t(Generation[Dev]) << 32);
}

void Simulator::rerate(unsigned Dev, double Now) {
  WorkLeft[Dev] =
      std::max(0.0, WorkLeft[Dev] - (Now - LastUpdate[Dev]) * Rate[Dev]);
  LastUpdate[Dev] = Now;
  pushOpEnd(Dev, Now);
}

void Simulator::reshare(unsigned Grp, int Delta, double Now,
                        unsigned Except) {
  GroupBusy[Grp] += Delta;
  for (unsigned Dev : GroupDevices[Grp])
    if (Running[Dev] && Dev != Except)
      rerate(Dev, Now);
}

void Simulator::loadEnds(unsigned Src, unsigned Dst, int Delta, double Now) {
  size_t Pair = size_t(Src) * G.NumDevices + Dst;
  if (RouteSendSpeed[Pair] < 1) {
    bool Was = Sending[Src];
    Sending[Src] += Delta;
    if (bool(Sending[Src]) != Was && Running[Src])
      rerate(Src, Now);
  }
  if (RouteRecvSpeed[Pair] < 1) {
    bool Was = Receiving[Dst];
    Receiving[Dst] += Delta;
    if (bool(Receiving[Dst]) != Was && Running[Dst])
      rerate(Dst, Now);
  }
}

void Simulator::startOp(uint32_t Op, unsigned Dev, double Now, SimResult &R) {
  Busy[Dev] = 1;
  uint64_t Bytes = G.OpWorkspace[Op];
  for (unsigned I = G.OpResultsBegin[Op]; I != G.OpResultsBegin[Op + 1]; ++I)
    Bytes += G.TensorBytes[G.OpResults[I]];
  double Time = G.Time[size_t(Op) * G.NumDevices + Dev];
  // A backward task's first instance recomputes the micro-batch's forward
  // on the device first, and holds its activations until the task ends.
  if (Recompute && isBackwardInstance(Op)) {
    size_t Row = size_t(Dev) * NumTasks;
    uint8_t &St = RecomputeState[Row + TaskPos[Row + G.InstTask[Op]]];
    if (St == 0) {
      St = 1;
      Time += RecomputeTime[Dev];
      Extra[Dev] = RecomputeTime[Dev];
      Bytes += RecomputeBytes[Dev];
    }
  }
  allocate(Dev, Bytes, Op, R);
  if (Record)
    R.Ops[Op].Start = Now;
  StartedAt[Dev] = Now;
  if (!CopyGroups.empty())
    for (unsigned Grp : CopyGroups[Dev])
      reshare(Grp, +1, Now, Dev);
  if (GroupOf[Dev] < 0) {
    push(Now + Time, Op);
    return;
  }
  RunningOp[Dev] = Op;
  WorkLeft[Dev] = Time;
  LastUpdate[Dev] = Now;
  reshare(GroupOf[Dev], +1, Now, Dev);
  Running[Dev] = 1;
  pushOpEnd(Dev, Now);
}

/// Tensor \p T is now on \p Dev: wake its readers there, and if \p Dev is
/// its home, send it to every other device that reads it.
void Simulator::makeAvailable(uint32_t T, unsigned Dev, double Now,
                              SimResult &R) {
  unsigned D = G.NumDevices;
  State[size_t(T) * D + Dev] = 2;
  uint32_t Producer = G.TensorProducer[T];
  for (unsigned I = G.ConsumersBegin[T]; I != G.ConsumersBegin[T + 1]; ++I) {
    uint32_t Op = G.Consumers[I];
    if (Place[Op] != Dev || --Pending[Op])
      continue;
    WaitedOn[Op] = Producer;
    makeReady(Op, Dev, Now, R);
  }
  if (Dev != Home[T])
    return;
  for (unsigned I = RemoteBegin[T]; I != RemoteBegin[T + 1]; ++I) {
    unsigned Dst = RemoteDevs[I];
    if (State[size_t(T) * D + Dst])
      continue;
    State[size_t(T) * D + Dst] = 1;
    uint64_t Bytes = G.TensorBytes[T];
    unsigned Pair = Dev * D + Dst;
    const uint32_t *First = RouteChannels.data() + RouteBegin[Pair];
    const uint32_t *Last = RouteChannels.data() + RouteBegin[Pair + 1];
    double Start = Now;
    for (const uint32_t *Ch = First; Ch != Last; ++Ch)
      Start = std::max(Start, ChannelFree[*Ch]);
    double End = Start + RouteLatency[Pair] +
                 double(Bytes) * RouteSecondsPerByte[Pair];
    for (const uint32_t *Ch = First; Ch != Last; ++Ch) {
      ChannelFree[*Ch] = End;
      R.ChannelBytes[*Ch] += Bytes;
    }
    R.TransferBytes += Bytes;
    ++R.NumTransfers;
    allocate(Dst, Bytes, Producer == None ? 0 : Producer, R);
    if (Record)
      R.Transfers.push_back(
          TransferRecord{T, uint16_t(Dev), uint16_t(Dst), Start, End});
    push(End, TransferTag | (uint64_t(T) * D + Dst));
    // A transfer that takes no time loads nothing (its start event would
    // come after its end at the same time).
    if (LoadsEnds && End > Start &&
        (RouteSendSpeed[Pair] < 1 || RouteRecvSpeed[Pair] < 1)) {
      if (Start > Now) {
        push(Start, TransferTag | TransferStartTag | (uint64_t(T) * D + Dst));
      } else {
        State[size_t(T) * D + Dst] = Loading;
        loadEnds(Dev, Dst, +1, Now);
      }
    }
  }
}

void Simulator::makeReady(uint32_t Op, unsigned Dev, double Now, SimResult &R) {
  ReadyTime[Op] = Now;
  if (!NumTasks) {
    if (!Busy[Dev]) {
      startOp(Op, Dev, Now, R);
      return;
    }
    QNext[Op] = None;
    if (QTail[Dev] == None)
      QHead[Dev] = Op;
    else
      QNext[QTail[Dev]] = Op;
    QTail[Dev] = Op;
    return;
  }
  std::vector<ReadyEntry> &H = ReadyHeap[Dev];
  uint32_t Pos = TaskPos[size_t(Dev) * NumTasks + G.InstTask[Op]];
  H.push_back({uint64_t(Pos) << 32 | Arrivals++, Op});
  std::push_heap(H.begin(), H.end(), std::greater<ReadyEntry>());
  if (Busy[Dev])
    return;
  uint32_t Next = takeNext(Dev, /*AnyTask=*/false);
  if (Next != None)
    startOp(Next, Dev, Now, R);
}

uint32_t Simulator::takeNext(unsigned Dev, bool AnyTask) {
  if (!NumTasks) {
    uint32_t Op = QHead[Dev];
    if (Op != None && (QHead[Dev] = QNext[Op]) == None)
      QTail[Dev] = None;
    return Op;
  }
  std::vector<ReadyEntry> &H = ReadyHeap[Dev];
  if (H.empty() || (!AnyTask && uint32_t(H.front().Key >> 32) != CurPos[Dev]))
    return None;
  std::pop_heap(H.begin(), H.end(), std::greater<ReadyEntry>());
  uint32_t Op = H.back().Op;
  H.pop_back();
  return Op;
}

void Simulator::orderTasks() {
  unsigned D = G.NumDevices;
  // Stages: the devices with instances, in the order of their first op.
  computeStageDevices(GraphPlace, D, DevFirst, StageOf);
  unsigned Stages = StageOf.size();
  for (unsigned S = 0; S != Stages; ++S) {
    unsigned Dev = StageOf[S];
    for (unsigned Task = 0; Task != NumTasks; ++Task)
      TaskPos[size_t(Dev) * NumTasks + Task] =
          getStageTaskPosition(*G.Plan, S, Stages, Task);
  }
  std::fill(PosLeft.begin(), PosLeft.end(), 0);
  for (uint32_t Op = 0; Op != G.NumOps; ++Op) {
    size_t Row = size_t(Place[Op]) * NumTasks;
    ++PosLeft[Row + TaskPos[Row + G.InstTask[Op]]];
  }
  for (unsigned Dev = 0; Dev != D; ++Dev) {
    unsigned Pos = 0;
    while (Pos != NumTasks && !PosLeft[size_t(Dev) * NumTasks + Pos])
      ++Pos;
    CurPos[Dev] = Pos;
    ReadyHeap[Dev].clear();
  }
  Arrivals = 0;
  Recompute = G.Plan->Recompute;
  if (!Recompute)
    return;
  // Micro-batch 0's forward instances are task 0; every micro-batch's are
  // alike.
  RecomputeTime.assign(D, 0.0);
  RecomputeBytes.assign(D, 0);
  Extra.assign(D, 0.0);
  HasBackward.assign(D, 0);
  std::fill(RecomputeState.begin(), RecomputeState.end(), 0);
  for (std::vector<uint32_t> &List : Stash)
    List.clear();
  for (size_t I = 0, E = size_t(D) * NumTasks; I != E; ++I)
    PosTask[I / NumTasks * NumTasks + TaskPos[I]] = uint32_t(I % NumTasks);
  for (uint32_t Op = 0; Op != G.NumOps; ++Op) {
    unsigned Dev = Place[Op];
    if (G.InstTask[Op] == 0)
      RecomputeTime[Dev] += G.Time[size_t(Op) * D + Dev];
    HasBackward[Dev] |= isBackwardInstance(Op);
  }
}

void Simulator::finishRecomputedTask(unsigned Dev, uint32_t Pos, SimResult &R) {
  uint8_t &St = RecomputeState[size_t(Dev) * NumTasks + Pos];
  if (St != 1)
    return;
  St = 2;
  Live[Dev] -= RecomputeBytes[Dev];
  noteMemory(Dev, R);
  unsigned M = G.Plan->MicroBatches, D = G.NumDevices;
  uint32_t Task = PosTask[size_t(Dev) * NumTasks + Pos];
  for (uint32_t T : Stash[size_t(Dev) * M + (Task - M)])
    if (--Uses[size_t(T) * D + Dev] == 0)
      release(T, Dev, R);
}

void Simulator::reset(SimResult &R) {
  unsigned D = G.NumDevices;
  Heap.clear();
  std::fill(State.begin(), State.end(), 0);
  std::fill(Uses.begin(), Uses.end(), 0);
  std::fill(QHead.begin(), QHead.end(), None);
  std::fill(QTail.begin(), QTail.end(), None);
  std::fill(Busy.begin(), Busy.end(), 0);
  std::fill(ChannelFree.begin(), ChannelFree.end(), 0.0);
  std::fill(Live.begin(), Live.end(), 0);
  std::fill(GroupBusy.begin(), GroupBusy.end(), 0);
  std::fill(Generation.begin(), Generation.end(), 0);
  std::fill(Running.begin(), Running.end(), 0);
  std::fill(Sending.begin(), Sending.end(), 0);
  std::fill(Receiving.begin(), Receiving.end(), 0);
  R.StepTime = 0;
  R.OOM = false;
  R.OOMDevice = 0;
  R.OOMOp = 0;
  R.OOMBytesOver = 0;
  R.BusyTime.assign(D, 0.0);
  R.PeakBytes.assign(D, 0);
  R.OpCount.assign(D, 0);
  R.ChannelBytes.assign(C.getNumChannels(), 0);
  R.TransferBytes = 0;
  R.NumTransfers = 0;
  R.OutOfOrder = 0;
  R.AllReduceTime.assign(Reduce ? D : 0, 0.0);
  R.NumBuckets = 0;
  R.AllReduceBytes = 0;
  R.Collectives.clear();
  R.Transfers.clear();
  R.CriticalPath.clear();
  R.Memory.clear();
  R.InstanceOp.clear();
  R.InstanceMicroBatch.clear();
  R.InstanceTensor.clear();
  if (Record)
    R.Ops.assign(G.NumOps, OpInterval());
  if (Record && G.Plan) {
    R.InstanceOp = G.BaseOp;
    R.InstanceMicroBatch = G.InstMicroBatch;
    R.InstanceTensor = G.BaseTensor;
  }

  for (uint32_t Op = 0; Op != G.NumOps; ++Op) {
    assert(Place[Op] < D && "device out of range");
    Pending[Op] = G.OpInputsBegin[Op + 1] - G.OpInputsBegin[Op];
    WaitedOn[Op] = None;
    ++R.OpCount[Place[Op]];
  }
  if (NumTasks)
    orderTasks();
}

void Simulator::stashAndCount(uint32_t T, bool Recomputed) {
  unsigned D = G.NumDevices, M = G.Plan->MicroBatches;
  uint32_t Producer = G.TensorProducer[T];
  if (Recomputed && G.InstTask[Producer] == 0)
    RecomputeBytes[Home[T]] += G.TensorBytes[T];
  // A copy that another device's forward reads is that device's stage
  // input: it stays there until the micro-batch's backward there is done,
  // which recomputes from it.
  unsigned MB = G.InstTask[Producer];
  for (unsigned I = G.ConsumersBegin[T], E = G.ConsumersBegin[T + 1]; I != E;
       ++I) {
    uint32_t Reader = G.Consumers[I];
    unsigned Dev = Place[Reader];
    if (Dev == Home[T] || !isForwardInstance(Reader) || !HasBackward[Dev])
      continue;
    std::vector<uint32_t> &List = Stash[size_t(Dev) * M + MB];
    if (!List.empty() && List.back() == T)
      continue;
    List.push_back(T);
    ++Uses[size_t(T) * D + Dev];
  }
}

void Simulator::placeTensors() {
  unsigned D = G.NumDevices;
  RemoteDevs.clear();
  for (uint32_t T = 0; T != G.NumTensors; ++T) {
    unsigned Begin = G.ConsumersBegin[T], End = G.ConsumersBegin[T + 1];
    uint32_t Producer = G.TensorProducer[T];
    Home[T] = Producer != None ? Place[Producer]
              : Begin != End   ? Place[G.Consumers[Begin]]
                               : 0;
    RemoteBegin[T] = RemoteDevs.size();
    bool Remote = false;
    bool Recomputed = false;
    for (unsigned I = Begin; I != End; ++I) {
      uint32_t Reader = G.Consumers[I];
      unsigned Dev = Place[Reader];
      if (readsRecomputed(T, Reader)) {
        Recomputed = true;
        continue;
      }
      ++Uses[size_t(T) * D + Dev];
      Remote |= Dev != Home[T];
    }
    if (Recompute && Producer != None && isForwardInstance(Producer))
      stashAndCount(T, Recomputed);
    // Most tensors stay on their device; the others are sent in device
    // order, once per device.
    if (!Remote)
      continue;
    if (++Stamp == 0) { // Wrapped: old stamps could match again.
      std::fill(DevStamp.begin(), DevStamp.end(), 0);
      Stamp = 1;
    }
    for (unsigned I = Begin; I != End; ++I) {
      unsigned Dev = Place[G.Consumers[I]];
      if (Dev != Home[T] && DevStamp[Dev] != Stamp) {
        DevStamp[Dev] = Stamp;
        RemoteDevs.push_back(Dev);
      }
    }
    std::sort(RemoteDevs.begin() + RemoteBegin[T], RemoteDevs.end());
    Uses[size_t(T) * D + Home[T]] += RemoteDevs.size() - RemoteBegin[T];
  }
  RemoteBegin[G.NumTensors] = RemoteDevs.size();
}

// What startStep() allocates before the step, by the op that puts it on
// its device (a source tensor's home is its first reader's device).
std::vector<uint64_t> getResidentBytes(const SimGraph &G) {
  std::vector<uint64_t> Bytes(G.OpPersistent);
  for (uint32_t T : G.SourceTensors)
    Bytes[G.Consumers[G.ConsumersBegin[T]]] += G.TensorBytes[T];
  return Bytes;
}

void Simulator::startStep(SimResult &R) {
  // Persistent bytes first: they are there before the step starts.
  for (uint32_t Op = 0; Op != G.NumOps; ++Op)
    if (G.OpPersistent[Op])
      allocate(Place[Op], G.OpPersistent[Op], Op, R);
  for (uint32_t T : G.SourceTensors)
    allocate(Home[T], G.TensorBytes[T], G.Consumers[G.ConsumersBegin[T]], R);
  for (uint32_t T : G.SourceTensors)
    makeAvailable(T, Home[T], 0.0, R);
  for (uint32_t Op : G.SourceOps)
    makeReady(Op, Place[Op], 0.0, R);
}

void Simulator::finishTransfer(uint64_t Key, double Now, SimResult &R) {
  unsigned D = G.NumDevices;
  uint32_t T = uint32_t(Key / D);
  unsigned Dst = unsigned(Key % D);
  if (State[Key] == Loading)
    loadEnds(Home[T], Dst, -1, Now);
  makeAvailable(T, Dst, Now, R);
  // The copy at home has one transfer fewer to serve.
  if (--Uses[size_t(T) * D + Home[T]] == 0)
    release(T, Home[T], R);
}

void Simulator::finishOp(uint32_t Op, unsigned Dev, double Now, SimResult &R) {
  unsigned D = G.NumDevices;
  R.BusyTime[Dev] +=
      GroupOf[Dev] < 0 ? G.Time[size_t(Op) * D + Dev] : Now - StartedAt[Dev];
  if (Recompute) {
    if (GroupOf[Dev] < 0)
      R.BusyTime[Dev] += Extra[Dev];
    Extra[Dev] = 0;
  }
  if (Record)
    R.Ops[Op].End = Now;
  Live[Dev] -= G.OpWorkspace[Op];
  noteMemory(Dev, R);
  for (unsigned I = G.OpResultsBegin[Op]; I != G.OpResultsBegin[Op + 1]; ++I) {
    uint32_t T = G.OpResults[I];
    if (Reduce && GradBucket[T] != None)
      arriveGradient(T, Dev, Now, R);
    else
      makeAvailable(T, Dev, Now, R);
    if (Uses[size_t(T) * D + Dev] == 0)
      release(T, Dev, R); // Nothing reads it.
  }
  for (unsigned I = G.OpInputsBegin[Op]; I != G.OpInputsBegin[Op + 1]; ++I) {
    uint32_t T = G.OpInputs[I];
    if (readsRecomputed(T, Op))
      continue;
    if (--Uses[size_t(T) * D + Dev] == 0)
      release(T, Dev, R);
  }
  if (NumTasks) {
    size_t Row = size_t(Dev) * NumTasks;
    uint32_t Pos = TaskPos[Row + G.InstTask[Op]];
    if (--PosLeft[Row + Pos] == 0 && Recompute)
      finishRecomputedTask(Dev, Pos, R);
    uint32_t &Cur = CurPos[Dev];
    while (Cur != NumTasks && !PosLeft[Row + Cur])
      ++Cur;
  }
  uint32_t Next = takeNext(Dev, /*AnyTask=*/false);
  if (Next == None) {
    Busy[Dev] = 0;
    return;
  }
  if (ReadyTime[Next] < Now)
    WaitedOn[Next] = Op; // It waited for the device, not for data.
  startOp(Next, Dev, Now, R);
}

void Simulator::formBuckets(SimResult &R) {
  // Each device fills its buckets in the order of the ops that make the
  // gradients (the backward's order in the graph; DDP assigns its buckets
  // once, in the reverse order of the parameters): a bucket closes once
  // it holds its cap, 1 MiB for a device's first (DDP's rule).
  unsigned D = G.NumDevices;
  std::vector<uint32_t> &Open = OpenBucket;
  Open.assign(D, None);
  BucketsOf.assign(D, 0);
  Turn.assign(D, None);
  LastBucket.assign(D, None);
  BucketDev.clear();
  BucketSize.clear();
  BucketNext.clear();
  for (uint32_t T : G.Gradients) {
    unsigned Dev = Home[T];
    uint32_t &B = Open[Dev];
    if (B == None) {
      B = BucketDev.size();
      BucketDev.push_back(Dev);
      BucketSize.push_back(0);
      BucketNext.push_back(None);
      if (BucketsOf[Dev]++ == 0)
        Turn[Dev] = B;
      else
        BucketNext[LastBucket[Dev]] = B;
      LastBucket[Dev] = B;
    }
    GradBucket[T] = B;
    BucketSize[B] += G.TensorBytes[T];
    uint64_t Cap =
        BucketsOf[Dev] == 1
            ? std::min(PipelinePlan::FirstBucketBytes, G.Plan->BucketBytes)
            : G.Plan->BucketBytes;
    if (BucketSize[B] >= Cap)
      B = None;
  }
  unsigned NB = BucketDev.size();
  BucketLeft.assign(NB, 0);
  BucketLoading.assign(NB, 0);
  for (uint32_t T : G.Gradients)
    ++BucketLeft[GradBucket[T]];
  BucketBegin.assign(NB + 1, 0);
  for (unsigned B = 0; B != NB; ++B)
    BucketBegin[B + 1] = BucketBegin[B] + BucketLeft[B];
  BucketTensors.resize(G.Gradients.size());
  std::vector<uint32_t> Fill(BucketBegin.begin(), BucketBegin.end() - 1);
  for (uint32_t T : G.Gradients)
    BucketTensors[Fill[GradBucket[T]]++] = T;
  std::fill(CommFree.begin(), CommFree.end(), 0.0);
  R.NumBuckets = NB;
  for (uint64_t Bytes : BucketSize)
    R.AllReduceBytes += Bytes;
}

void Simulator::arriveGradient(uint32_t T, unsigned Dev, double Now,
                               SimResult &R) {
  uint32_t B = GradBucket[T];
  if (--BucketLeft[B])
    return;
  // Buckets start in turn, as DDP launches them: a full bucket waits for
  // the device's earlier ones to start.
  Dev = BucketDev[B];
  for (uint32_t Next = Turn[Dev]; Next != None && !BucketLeft[Next];
       Next = Turn[Dev]) {
    startBucket(Next, Now, R);
    Turn[Dev] = BucketNext[Next];
  }
}

void Simulator::startBucket(uint32_t B, double Now, SimResult &R) {
  unsigned Dev = BucketDev[B];
  std::vector<CollectiveCost> &Costs = DevCosts[Dev];
  if (Costs.empty()) {
    std::vector<unsigned> Copies;
    for (unsigned Rep = 0; Rep != G.Plan->Replicas; ++Rep)
      if (unsigned Copy = getReplicaDevice(C, *G.Plan, Dev, Rep); Copy != None)
        Copies.push_back(Copy);
    Costs = getAllReduceCosts(C, Copies);
    if (Costs.empty()) // No other replica has a copy: nothing to reduce.
      Costs.emplace_back();
  }
  const CollectiveCost &Cost = pickAllReduce(Costs, BucketSize[B]);
  double Start = std::max(Now, CommFree[Dev]);
  for (unsigned Ch : Cost.Channels)
    Start = std::max(Start, ChannelFree[Ch]);
  double End = Start + Cost.getTime(BucketSize[B]);
  for (unsigned Ch : Cost.Channels)
    ChannelFree[Ch] = End;
  CommFree[Dev] = End;
  R.AllReduceTime[Dev] += End - Start;
  if (LoadsEnds && End > Start && CommPeer[Dev] != None) {
    if (Start > Now)
      push(Start, CollectiveTag | TransferStartTag | B);
    else
      loadBucket(B, +1, Now);
  }
  if (Record)
    R.Collectives.push_back(CollectiveRecord{
        Dev, BucketSize[B],
        std::vector<uint32_t>(BucketTensors.begin() + BucketBegin[B],
                              BucketTensors.begin() + BucketBegin[B + 1]),
        Cost.Algorithm, Start, End});
  push(End, CollectiveTag | B);
}

void Simulator::loadBucket(uint32_t B, int Delta, double Now) {
  if ((Delta > 0) == bool(BucketLoading[B]))
    return;
  BucketLoading[B] = Delta > 0;
  unsigned Dev = BucketDev[B];
  loadEnds(Dev, CommPeer[Dev], Delta, Now);
}

void Simulator::finishBucket(uint32_t B, double Now, SimResult &R) {
  loadBucket(B, -1, Now);
  for (unsigned I = BucketBegin[B]; I != BucketBegin[B + 1]; ++I)
    makeAvailable(BucketTensors[I], BucketDev[B], Now, R);
}

bool Simulator::startOutOfOrder(SimResult &R) {
  bool Started = false;
  for (unsigned Dev = 0, D = G.NumDevices; Dev != D; ++Dev) {
    if (Busy[Dev])
      continue;
    uint32_t Op = takeNext(Dev, /*AnyTask=*/true);
    if (Op == None)
      continue;
    ++R.OutOfOrder;
    startOp(Op, Dev, Clock, R);
    Started = true;
  }
  return Started;
}

void Simulator::run(ArrayRef<uint32_t> Placement, SimResult &R,
                    bool RecordTimeline) {
  assert(Placement.size() == G.NumPlacedOps && "one device per graph op");
  Place = GraphPlace = Placement;
  if (!G.BaseOp.empty()) {
    for (uint32_t Op = 0; Op != G.NumOps; ++Op)
      InstPlace[Op] = Placement[G.BaseOp[Op]];
    Place = InstPlace;
  }
  Record = RecordTimeline;
  Clock = 0;
  reset(R);
  // Homes and the uses that keep each copy alive: its readers on that
  // device, plus (at home) one per device it is sent to.
  placeTensors();
  if (Reduce)
    formBuckets(R);
  startStep(R);

  uint32_t LastOp = None;
  while (true) {
    if (Heap.empty() && !(NumTasks && startOutOfOrder(R)))
      break;
    Event E = pop();
    double Now = E.Time;
    Clock = Now;
    if (E.Payload & CollectiveTag && !(E.Payload & TransferTag)) {
      uint32_t B = uint32_t(E.Payload & ~(CollectiveTag | TransferStartTag));
      if (E.Payload & TransferStartTag)
        loadBucket(B, +1, Now);
      else
        finishBucket(B, Now, R);
      continue;
    }
    if (E.Payload & TransferTag) {
      uint64_t Key = E.Payload & ~(TransferTag | TransferStartTag);
      if (!(E.Payload & TransferStartTag)) {
        finishTransfer(Key, Now, R);
        continue;
      }
      State[Key] = Loading;
      loadEnds(Home[Key / G.NumDevices], unsigned(Key % G.NumDevices), +1, Now);
      continue;
    }
    uint32_t Op = uint32_t(E.Payload);
    unsigned Dev = Place[Op];
    if (GroupOf[Dev] >= 0) {
      if (uint32_t(E.Payload >> 32) != Generation[Dev])
        continue; // The op's end has moved since.
      // The device stays busy until its queue is looked at below: readers
      // woken here on it must queue, not start.
      Running[Dev] = 0;
      reshare(GroupOf[Dev], -1, Now, Dev);
    }
    if (!CopyGroups.empty())
      for (unsigned Grp : CopyGroups[Dev])
        reshare(Grp, -1, Now, Dev);
    if (Now >= R.StepTime) {
      R.StepTime = Now;
      LastOp = Op;
    }
    finishOp(Op, Dev, Now, R);
  }

  if (Record && LastOp != None) {
    for (uint32_t Op = LastOp; Op != None; Op = WaitedOn[Op])
      R.CriticalPath.push_back(Op);
    std::reverse(R.CriticalPath.begin(), R.CriticalPath.end());
  }
}

//===----------------------------------------------------------------------===//
// Lower bounds and placements
//===----------------------------------------------------------------------===//

LowerBounds computeLowerBounds(const SimGraph &G) {
  LowerBounds LB;
  unsigned D = G.getNumDevices();
  std::vector<double> Finish(G.getNumOps(), 0.0);
  std::vector<double> TensorReady(G.TensorBytes.size(), 0.0);
  double Work = 0;
  for (uint32_t Op = 0; Op != G.getNumOps(); ++Op) {
    double Fastest = std::numeric_limits<double>::infinity();
    for (unsigned Dev = 0; Dev != D; ++Dev)
      Fastest = std::min(Fastest, G.getTime(Op, Dev));
    double Start = 0;
    for (unsigned I = G.OpInputsBegin[Op]; I != G.OpInputsBegin[Op + 1]; ++I)
      Start = std::max(Start, TensorReady[G.OpInputs[I]]);
    Finish[Op] = Start + Fastest;
    for (unsigned I = G.OpResultsBegin[Op]; I != G.OpResultsBegin[Op + 1];
         ++I)
      TensorReady[G.OpResults[I]] = Finish[Op];
    LB.CriticalPath = std::max(LB.CriticalPath, Finish[Op]);
    Work += Fastest;
  }
  // Devices of a shared group do at most the group's capacity together.
  const Cluster &C = G.getCluster();
  double Capacity = D;
  for (unsigned Grp = 0, E = C.getSharedGroups().size(); Grp != E; ++Grp)
    Capacity -=
        C.getSharedGroups()[Grp].Devices.size() - G.getGroupCapacity(Grp);
  LB.Work = D ? Work / Capacity : 0;
  LB.HeterogeneousWork = computeHeterogeneousWorkBound(G);
  LB.HeadWorkTail = computeHeadWorkTailBound(G);
  return LB;
}

Expected<std::vector<uint32_t>> getPlacement(const Graph &G,
                                             const Cluster &C) {
  std::vector<uint32_t> Placement(G.getNumOps());
  ErrorList Errs;
  for (OpId O = 0, E = G.getNumOps(); O != E; ++O) {
    const Op &Node = G.getOp(O);
    Optional<StringRef> Name = ann::get(Node, ann::Device);
    if (!Name) {
      Errs.add(makeNodeError(Node.Name, "op has no device: run place "
                                        "first"));
      continue;
    }
    int Dev = C.lookupDevice(*Name);
    if (Dev < 0) {
      Errs.add(makeNodeError(Node.Name, "device '" + Name->str() +
                                            "' is not in cluster '" +
                                            C.getName() + "'"));
      continue;
    }
    Placement[O] = Dev;
  }
  if (Error E = Errs.take())
    return std::move(E);
  return std::move(Placement);
}

//===----------------------------------------------------------------------===//
// Replicas
//===----------------------------------------------------------------------===//

/// Dev's index among the devices of its type, and how many that type has.
static std::pair<unsigned, unsigned> getTypeIndex(const Cluster &C,
                                                  unsigned Dev) {
  unsigned Type = C.getDevices()[Dev].Type, Index = 0, Count = 0;
  for (unsigned D = 0, E = C.getNumDevices(); D != E; ++D)
    if (C.getDevices()[D].Type == Type) {
      Index += D < Dev;
      ++Count;
    }
  return {Index, Count};
}

static unsigned getReplicaStride(const PipelinePlan &Plan, unsigned Count) {
  return Plan.ReplicaStride ? Plan.ReplicaStride : Count / Plan.Replicas;
}

unsigned getReplicaDevice(const Cluster &C, const PipelinePlan &Plan,
                          unsigned Dev, unsigned Replica) {
  if (Replica == 0)
    return Dev;
  auto [Index, Count] = getTypeIndex(C, Dev);
  unsigned Stride = getReplicaStride(Plan, Count);
  uint64_t Target = Index + uint64_t(Replica) * Stride;
  if (!Stride || Target >= Count)
    return None;
  unsigned Type = C.getDevices()[Dev].Type;
  for (unsigned D = 0, E = C.getNumDevices(); D != E; ++D)
    if (C.getDevices()[D].Type == Type && Target-- == 0)
      return D;
  return None;
}

std::vector<unsigned> getReplicaGroup(const Cluster &C,
                                      const PipelinePlan &Plan,
                                      ArrayRef<unsigned> Candidates) {
  std::vector<unsigned> Group;
  for (unsigned Dev : Candidates) {
    auto [Index, Count] = getTypeIndex(C, Dev);
    unsigned Stride = getReplicaStride(Plan, Count);
    if (Plan.Replicas <= 1 ||
        (Stride && (Index / Stride) % Plan.Replicas == 0 &&
         Index + uint64_t(Plan.Replicas - 1) * Stride < Count))
      Group.push_back(Dev);
  }
  return Group;
}

Error checkReplicaDevices(const Cluster &C, const PipelinePlan &Plan,
                          ArrayRef<uint32_t> Placement, StringRef Who) {
  if (Plan.Replicas <= 1)
    return Error::success();
  std::vector<uint8_t> Used(C.getNumDevices());
  for (uint32_t Dev : Placement)
    Used[Dev] = 1;
  std::vector<unsigned> All;
  for (unsigned D = 0, E = C.getNumDevices(); D != E; ++D)
    All.push_back(D);
  auto Allowed = [&] {
    std::string Names;
    for (unsigned D : getReplicaGroup(C, Plan, All))
      Names += (Names.empty() ? "" : ", ") + C.getDevices()[D].Name;
    return "replica 0 may use " + (Names.empty() ? "no device" : Names);
  };
  std::vector<int> Owner(C.getNumDevices(), -1);
  for (unsigned Dev = 0, E = C.getNumDevices(); Dev != E; ++Dev)
    if (Used[Dev])
      Owner[Dev] = Dev;
  for (unsigned Dev = 0, E = C.getNumDevices(); Dev != E; ++Dev) {
    if (!Used[Dev])
      continue;
    const std::string &Name = C.getDevices()[Dev].Name;
    if (unsigned Count = getTypeIndex(C, Dev).second; Count < Plan.Replicas)
      return makeError(Who + "replicas=" + Twine(Plan.Replicas) +
                       " is more than the " + Twine(Count) +
                       " devices of type '" + C.getDeviceType(Dev).Name +
                       "' (of device '" + Name + "') on '" + C.getName() + "'");
    for (unsigned Rep = 1; Rep != Plan.Replicas; ++Rep) {
      unsigned Copy = getReplicaDevice(C, Plan, Dev, Rep);
      if (Copy == None)
        return makeError(Who + "replicas=" + Twine(Plan.Replicas) +
                         ": device '" + Name + "' has no copy in replica " +
                         Twine(Rep) + " on '" + C.getName() + "' (" +
                         Allowed() + ")");
      if (Owner[Copy] >= 0)
        return makeError(Who + "replicas=" + Twine(Plan.Replicas) +
                         ": replica " + Twine(Rep) + "'s copy of device '" +
                         Name + "' is '" + C.getDevices()[Copy].Name +
                         "', which " +
                         (Used[Copy] ? "replica 0 uses too"
                                     : "holds another device's copy") +
                         " (" + Allowed() + ")");
      Owner[Copy] = Dev;
    }
  }
  return Error::success();
}

} // namespace dp
