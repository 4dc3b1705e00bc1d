//===- BaechiPlacer.cpp - Baechi's m-TOPO, m-ETF and m-SCT ----------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Baechi's three memory-constrained placers (Jeon et al., SoCC 2020):
/// m-TOPO fills devices in topological order, m-ETF list-schedules with
/// Earliest Task First, and m-SCT list-schedules with the favourite
/// children chosen by the LP relaxation of the small-communication-times
/// scheduling problem (solved with GLPK). docs/placers.md describes them.
///
//===----------------------------------------------------------------------===//

#include "Baechi.h"
#include "Placers.h"
#include "dp/Support/Diagnostics.h"
#include "dp/Support/Format.h"
#include "dp/Support/GLPK.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <tuple>

using namespace llvm;

namespace dp {
namespace baechi {

static constexpr double Inf = std::numeric_limits<double>::infinity();
static constexpr uint32_t NoDevice = ~0u;

namespace {

/// The dataflow of a problem's ops in flat arrays: the distinct tensors
/// each op reads, the ops each op must wait for (the homes of its inputs),
/// and the tensors each unit reads from other units.
struct DataFlow {
  /// Distinct tensors op O reads: In[InBegin[O]..InBegin[O + 1]).
  std::vector<uint32_t> InBegin, In;
  /// The ops that wait for op O: Succ[SuccBegin[O]..SuccBegin[O + 1]).
  std::vector<uint32_t> SuccBegin, Succ;
  /// Per op: how many distinct ops it waits for.
  std::vector<uint32_t> NumPreds;
  /// Per tensor: its producer, or for weights and inputs its first reader
  /// (where the simulator keeps it); NoId when nothing reads it.
  std::vector<uint32_t> HomeOp;
  std::vector<uint64_t> Bytes;
  std::vector<uint8_t> Produced;
  /// Distinct tensors unit U reads from other units:
  /// Ext[ExtBegin[U]..ExtBegin[U + 1]).
  std::vector<uint32_t> ExtBegin, Ext;
  /// The other units that read the tensors whose home is in unit U, as
  /// (tensor, reader) pairs grouped by tensor:
  /// Out[OutBegin[U]..OutBegin[U + 1]).
  std::vector<uint32_t> OutBegin;
  std::vector<std::pair<uint32_t, uint32_t>> Out;

  explicit DataFlow(const PlacementProblem &P);

  ArrayRef<uint32_t> inputs(unsigned O) const {
    return makeArrayRef(In).slice(InBegin[O], InBegin[O + 1] - InBegin[O]);
  }
  ArrayRef<uint32_t> successors(unsigned O) const {
    return makeArrayRef(Succ).slice(SuccBegin[O],
                                    SuccBegin[O + 1] - SuccBegin[O]);
  }
  ArrayRef<uint32_t> external(unsigned U) const {
    return makeArrayRef(Ext).slice(ExtBegin[U], ExtBegin[U + 1] - ExtBegin[U]);
  }
  ArrayRef<std::pair<uint32_t, uint32_t>> readers(unsigned U) const {
    return makeArrayRef(Out).slice(OutBegin[U], OutBegin[U + 1] - OutBegin[U]);
  }
};

} // namespace

DataFlow::DataFlow(const PlacementProblem &P) {
  const Graph &G = P.getGraph();
  unsigned N = G.getNumOps(), NT = G.getNumTensors();
  HomeOp.assign(NT, NoId);
  Bytes.assign(NT, 0);
  Produced.assign(NT, 0);
  for (TensorId T = 0; T != NT; ++T) {
    const Tensor &Tn = G.getTensor(T);
    Bytes[T] = Tn.Type.getSizeInBytes().getValueOr(0);
    Produced[T] = Tn.Producer != NoId;
    if (Tn.Producer != NoId)
      HomeOp[T] = Tn.Producer;
    else if (!Tn.Uses.empty())
      HomeOp[T] = Tn.Uses.front().User;
  }

  // Inputs and predecessors, deduplicated with per-op stamps.
  InBegin.assign(N + 1, 0);
  NumPreds.assign(N, 0);
  std::vector<uint32_t> Preds, PredsBegin(N + 1, 0);
  std::vector<uint32_t> TensorStamp(NT, NoId), OpStamp(N, NoId);
  for (OpId O = 0; O != N; ++O) {
    for (TensorId T : G.getOp(O).Operands) {
      if (T == NoId || TensorStamp[T] == O)
        continue;
      TensorStamp[T] = O;
      In.push_back(T);
      uint32_t H = HomeOp[T];
      if (H == O || OpStamp[H] == O)
        continue;
      // Ops are stored in topological order and a weight's home is its
      // first reader, so every predecessor comes earlier.
      assert(H < O && "predecessors come first");
      OpStamp[H] = O;
      Preds.push_back(H);
    }
    InBegin[O + 1] = In.size();
    PredsBegin[O + 1] = Preds.size();
    NumPreds[O] = PredsBegin[O + 1] - PredsBegin[O];
  }
  SuccBegin.assign(N + 1, 0);
  for (uint32_t H : Preds)
    ++SuccBegin[H + 1];
  for (unsigned O = 0; O != N; ++O)
    SuccBegin[O + 1] += SuccBegin[O];
  Succ.resize(Preds.size());
  std::vector<uint32_t> Fill(SuccBegin.begin(), SuccBegin.end() - 1);
  for (OpId O = 0; O != N; ++O)
    for (unsigned I = PredsBegin[O]; I != PredsBegin[O + 1]; ++I)
      Succ[Fill[Preds[I]]++] = O;

  // Tensors each unit reads from other units.
  unsigned NU = P.getNumUnits();
  ExtBegin.assign(NU + 1, 0);
  std::fill(TensorStamp.begin(), TensorStamp.end(), NoId);
  for (unsigned U = 0; U != NU; ++U) {
    for (uint32_t O : P.getUnitOps(U))
      for (uint32_t T : inputs(O)) {
        if (TensorStamp[T] == U || P.getUnitOf(HomeOp[T]) == U)
          continue;
        TensorStamp[T] = U;
        Ext.push_back(T);
      }
    ExtBegin[U + 1] = Ext.size();
  }
  // The same pairs from the side of the tensors' homes, in tensor order.
  std::vector<std::pair<uint32_t, uint32_t>> Pairs;
  for (unsigned U = 0; U != NU; ++U)
    for (uint32_t T : external(U))
      Pairs.emplace_back(T, U);
  llvm::sort(Pairs);
  OutBegin.assign(NU + 1, 0);
  for (const auto &[T, U] : Pairs)
    ++OutBegin[P.getUnitOf(HomeOp[T]) + 1];
  for (unsigned U = 0; U != NU; ++U)
    OutBegin[U + 1] += OutBegin[U];
  Out.resize(Pairs.size());
  std::vector<uint32_t> Next(OutBegin.begin(), OutBegin.end() - 1);
  for (const auto &TU : Pairs)
    Out[Next[P.getUnitOf(HomeOp[TU.first])]++] = TU;
}

namespace {

/// What a Baechi placer counts on each device. A unit fits on a device
/// when its memory estimate there fits in what is free: its
/// PlacementProblem::getUnitMemory and a copy of every tensor it reads
/// from another unit, unless the tensor's home unit is already on the
/// device.
///
/// Under the static estimate placing the unit takes all of that for the
/// whole step; placing the home unit on a device where its results were
/// reserved as copies frees them.
///
/// Under the schedule estimate the placer also says when each op runs
/// (ran()), and a result is freed, with its copies, once its last reader
/// has run (one that nothing reads once it is made); weights, graph inputs
/// and persistent bytes stay. With ops placed at once (m-TOPO) placing a
/// unit takes its whole estimate, and its ops run right after; with ops
/// run one by one (the list schedules) placing a unit takes its weights,
/// inputs and persistent bytes, and each op takes its results and the
/// copies it reads when it runs (which can find the unit's device full:
/// scheduleList then schedules again with units taken whole).
class MemoryModel {
public:
  enum class Ops { AtPlacement, OneByOne };

  MemoryModel(const PlacementProblem &P, const DataFlow &F,
              MemoryEstimate Estimate, Ops When)
      : P(P), F(F), D(P.getNumDevices()), OneByOne(When == Ops::OneByOne),
        UnitDevice(P.getNumUnits(), NoDevice), Used(D, 0),
        Reserved(F.Bytes.size() * D, 0),
        NeedCache(size_t(P.getNumUnits()) * D, 0),
        NeedVersion(P.getNumUnits(), ~0u) {
    if (Estimate != MemoryEstimate::Schedule) {
      OneByOne = false;
      return;
    }
    const Graph &G = P.getGraph();
    ReadersLeft.assign(F.Bytes.size(), 0);
    for (unsigned O = 0, N = G.getNumOps(); O != N; ++O)
      for (uint32_t T : F.inputs(O))
        ++ReadersLeft[T];
    Read.resize(F.Bytes.size());
    for (size_t T = 0, E = Read.size(); T != E; ++T)
      Read[T] = ReadersLeft[T] != 0;
    if (!OneByOne)
      return;
    // What stays: the unit's estimate but its results.
    Fixed.resize(P.getNumUnits());
    for (unsigned U = 0, NU = P.getNumUnits(); U != NU; ++U) {
      uint64_t Results = 0;
      for (uint32_t O : P.getUnitOps(U))
        for (TensorId T : G.getOp(O).Results)
          if (T != NoId)
            Results += F.Bytes[T];
      Fixed[U] = P.getUnitMemory(U) - std::min(P.getUnitMemory(U), Results);
    }
  }

  uint32_t getDevice(unsigned U) const { return UnitDevice[U]; }
  ArrayRef<uint32_t> getPlacement() const { return UnitDevice; }

  /// Bytes unit \p U would add to device \p Dev if placed there.
  uint64_t getNeed(unsigned U, unsigned Dev) const {
    if (NeedVersion[U] != Version) {
      NeedVersion[U] = Version;
      for (unsigned I = 0; I != D; ++I)
        NeedCache[size_t(U) * D + I] = computeNeed(U, I, /*Commit=*/false);
    }
    return NeedCache[size_t(U) * D + Dev];
  }

  uint64_t getFree(unsigned Dev) const {
    uint64_t Cap = P.getDeviceCapacity(Dev);
    return Cap - std::min(Cap, Used[Dev]);
  }
  bool fits(unsigned U, unsigned Dev) const {
    return getNeed(U, Dev) <= getFree(Dev);
  }

  void place(unsigned U, unsigned Dev) {
    assert(UnitDevice[U] == NoDevice && "a unit is placed once");
    assert(fits(U, Dev) && "placed where it fits");
    if (OneByOne)
      Used[Dev] += Fixed[U];
    else
      Used[Dev] += computeNeed(U, Dev, /*Commit=*/true);
    UnitDevice[U] = Dev;
    ++Version;
    // Results whose readers all ran before their producer's unit was
    // placed (units in a cycle of groups) go now.
    if (!ReadersLeft.empty() && !OneByOne)
      for (uint32_t O : P.getUnitOps(U))
        for (TensorId T : P.getGraph().getOp(O).Results)
          if (T != NoId && Read[T] && !ReadersLeft[T])
            release(T);
  }

  /// Op \p O has run (been scheduled) on its unit's device: under the
  /// schedule estimate, run one by one, it takes its results and the
  /// copies it reads there, and returns false when they do not fit; then
  /// its results that nothing reads and those it was the last reader of
  /// are freed, as the simulator frees them.
  bool ran(unsigned O) {
    if (ReadersLeft.empty())
      return true;
    const Op &Node = P.getGraph().getOp(O);
    unsigned Dev = UnitDevice[P.getUnitOf(O)];
    if (OneByOne) {
      for (TensorId T : Node.Results)
        if (T != NoId)
          Used[Dev] += F.Bytes[T];
      for (uint32_t T : F.inputs(O)) {
        uint8_t &Copy = Reserved[size_t(T) * D + Dev];
        if (Copy || UnitDevice[P.getUnitOf(F.HomeOp[T])] == Dev)
          continue;
        Copy = 1;
        Used[Dev] += F.Bytes[T];
        ++Version;
      }
      if (Used[Dev] > P.getDeviceCapacity(Dev))
        return false;
    }
    for (TensorId T : Node.Results)
      if (T != NoId && !Read[T])
        release(T);
    for (uint32_t T : F.inputs(O)) {
      assert(ReadersLeft[T] && "an op runs once");
      if (--ReadersLeft[T] == 0 &&
          UnitDevice[P.getUnitOf(F.HomeOp[T])] != NoDevice)
        release(T);
    }
    return true;
  }

  /// The error for unit \p U, which fits on none of \p Devices: the
  /// largest room one of them has for it, net of the copies it would read
  /// there.
  Error makeNoFit(StringRef Algo, unsigned U,
                  const DeviceTiers &Devices) const {
    uint64_t Largest = 0;
    unsigned Roomiest = NoDevice;
    for (const std::vector<unsigned> *Tier : {&Devices.First, &Devices.Spill})
      for (unsigned Dev : *Tier) {
        uint64_t Free = getFree(Dev), Own = P.getUnitMemory(U);
        uint64_t Need = getNeed(U, Dev);
        uint64_t Room = Need > Own
                            ? (Free > Need - Own ? Free - (Need - Own) : 0)
                            : Free + (Own - Need);
        if (Roomiest == NoDevice || Room > Largest) {
          Largest = Room;
          Roomiest = Dev;
        }
      }
    return makeNoFitError(P, Algo, U, Largest, Roomiest);
  }

private:
  /// The bytes device \p Dev gains when unit \p U goes there; with
  /// \p Commit, reserves and frees the copies.
  uint64_t computeNeed(unsigned U, unsigned Dev, bool Commit) const {
    uint64_t Need = P.getUnitMemory(U);
    for (uint32_t T : F.external(U)) {
      uint8_t &Copy = Reserved[size_t(T) * D + Dev];
      uint32_t Home = UnitDevice[P.getUnitOf(F.HomeOp[T])];
      // Run one by one, an op reserves its copies when it runs, and a
      // tensor whose home is not placed yet may come to this device.
      if (Copy || Home == Dev || (OneByOne && Home == NoDevice))
        continue;
      Need += F.Bytes[T];
      if (Commit)
        Copy = 1;
    }
    // Its results need no copy where it is; each is counted in the unit's
    // estimate, so Need stays positive.
    uint32_t LastFreed = NoId;
    for (const auto &[T, Reader] : F.readers(U)) {
      uint8_t &Copy = Reserved[size_t(T) * D + Dev];
      if (T == LastFreed || !Copy || UnitDevice[Reader] != Dev)
        continue;
      LastFreed = T;
      assert(Need >= F.Bytes[T] && "results are in the unit's estimate");
      Need -= F.Bytes[T];
      if (Commit)
        Copy = 0;
    }
    return Need;
  }

  /// Frees produced tensor \p T (its readers have all run, which happens
  /// once) on its home device and wherever a copy of it is.
  void release(uint32_t T) {
    if (!F.Produced[T])
      return;
    uint64_t Bytes = F.Bytes[T];
    unsigned Home = UnitDevice[P.getUnitOf(F.HomeOp[T])];
    assert(Used[Home] >= Bytes && "a result is counted where it is made");
    Used[Home] -= Bytes;
    for (unsigned Dev = 0; Dev != D; ++Dev) {
      uint8_t &Copy = Reserved[size_t(T) * D + Dev];
      if (!Copy)
        continue;
      assert(Used[Dev] >= Bytes && "a copy is counted where it is");
      Used[Dev] -= Bytes;
      Copy = 0;
      // getNeed counts the copies a unit would need.
      ++Version;
    }
  }

  const PlacementProblem &P;
  const DataFlow &F;
  unsigned D;
  bool OneByOne;
  std::vector<uint32_t> UnitDevice;
  std::vector<uint64_t> Used;
  /// Per (tensor, device): a copy is reserved there.
  mutable std::vector<uint8_t> Reserved;
  /// getNeed per (unit, device), valid while NeedVersion[U] == Version.
  mutable std::vector<uint64_t> NeedCache;
  mutable std::vector<unsigned> NeedVersion;
  unsigned Version = 0;
  /// Under the schedule estimate: per tensor, the ops that read it and
  /// have not run, and whether any op reads it.
  std::vector<uint32_t> ReadersLeft;
  std::vector<uint8_t> Read;
  /// Run one by one: per unit, its estimate but its results.
  std::vector<uint64_t> Fixed;
};

} // namespace

Expected<DeviceTiers> selectDevices(const Cluster &C, StringRef Algo,
                                    DeviceSetKind Which) {
  DeviceTiers T;
  bool All = Which == DeviceSetKind::All;
  for (unsigned Dev = 0, E = C.getNumDevices(); Dev != E; ++Dev) {
    bool IsCPU = C.getDeviceType(Dev).Kind == DeviceKind::CPU;
    (All || !IsCPU ? T.First : T.Spill).push_back(Dev);
  }
  if (!T.First.empty()) {
    if (Which == DeviceSetKind::GPUs)
      T.Spill.clear();
    return T;
  }
  if (Which == DeviceSetKind::GPUs)
    return makeError("place{algo=" + Algo + "}: cluster '" + C.getName() +
                     "' has only CPUs (devices=auto or devices=all uses "
                     "them)");
  std::swap(T.First, T.Spill);
  return T;
}

//===----------------------------------------------------------------------===//
// m-TOPO
//===----------------------------------------------------------------------===//

Expected<std::vector<uint32_t>> placeTopo(const PlacementProblem &P,
                                          const DeviceTiers &Devices,
                                          bool Uniform, MemoryEstimate Memory) {
  DataFlow F(P);
  MemoryModel M(P, F, Memory, MemoryModel::Ops::AtPlacement);
  auto Place = [&](unsigned U, unsigned Dev) {
    M.place(U, Dev);
    for (uint32_t O : P.getUnitOps(U))
      M.ran(O); // Ops run at placement always fit.
  };
  unsigned NU = P.getNumUnits(), D = P.getNumDevices();

  // Caps: each device's fair share of memory and of compute time, shares
  // in proportion to the device's speed on the whole graph, plus the
  // largest unit so that the devices together always hold every unit.
  std::vector<double> MemCap(D, Inf), WorkCap(D, Inf);
  if (Uniform) {
    std::vector<double> Work(D, 0.0), MaxTime(D, 0.0);
    double TotalMem = 0, MaxMem = 0;
    for (unsigned U = 0; U != NU; ++U) {
      TotalMem += double(P.getUnitMemory(U));
      MaxMem = std::max(MaxMem, double(P.getUnitMemory(U)));
      for (unsigned Dev : Devices.First) {
        Work[Dev] += P.getUnitTime(U, Dev);
        MaxTime[Dev] = std::max(MaxTime[Dev], P.getUnitTime(U, Dev));
      }
    }
    bool AllTimed =
        all_of(Devices.First, [&](unsigned Dev) { return Work[Dev] > 0; });
    auto Speed = [&](unsigned Dev) { return AllTimed ? 1 / Work[Dev] : 1.0; };
    double SumSpeed = 0;
    for (unsigned Dev : Devices.First)
      SumSpeed += Speed(Dev);
    for (unsigned Dev : Devices.First) {
      double Share = Speed(Dev) / SumSpeed;
      MemCap[Dev] = TotalMem * Share + MaxMem;
      WorkCap[Dev] = Work[Dev] * Share + MaxTime[Dev];
    }
  }

  ArrayRef<uint32_t> Order = P.getTopologicalOrder();
  unsigned Next = 0;
  for (unsigned Dev : Devices.First) {
    double Mem = 0, Work = 0;
    for (; Next != NU; ++Next) {
      unsigned U = Order[Next];
      if (!M.fits(U, Dev))
        break;
      double Need = double(M.getNeed(U, Dev));
      double Time = P.getUnitTime(U, Dev);
      if (Mem + Need > MemCap[Dev] || Work + Time > WorkCap[Dev])
        break;
      Place(U, Dev);
      Mem += Need;
      Work += Time;
    }
  }
  // What the caps left over goes to the first device with room.
  for (; Next != NU; ++Next) {
    unsigned U = Order[Next];
    unsigned Dev = NoDevice;
    for (const std::vector<unsigned> *Tier : {&Devices.First, &Devices.Spill})
      for (unsigned I : *Tier)
        if (Dev == NoDevice && M.fits(U, I))
          Dev = I;
    if (Dev == NoDevice)
      return M.makeNoFit("m-topo", U, Devices);
    Place(U, Dev);
  }
  return M.getPlacement().vec();
}

//===----------------------------------------------------------------------===//
// m-ETF and m-SCT list scheduling
//===----------------------------------------------------------------------===//

namespace {

/// One (op, device) pair the scheduler may pick.
struct Candidate {
  double Start;
  uint32_t Unit, Op, Device, ReadyIndex;
  bool operator<(const Candidate &O) const {
    return std::tie(Start, Unit, Op, Device) <
           std::tie(O.Start, O.Unit, O.Op, O.Device);
  }
};

class ListScheduler {
public:
  ListScheduler(const PlacementProblem &P, StringRef Algo,
                const DeviceTiers &Devices, ArrayRef<uint32_t> FavouriteChild,
                MemoryEstimate Memory, MemoryModel::Ops When);
  Expected<Schedule> run();
  /// Whether run() failed at an op of a placed unit that did not fit on
  /// the unit's device when it ran (ops run one by one).
  bool deadEnded() const { return DeadEnd; }

private:
  double getDataReady(unsigned Op, unsigned Dev, bool Commit);
  Error collectCandidates();
  Error commit(const Candidate &C);

  const PlacementProblem &P;
  StringRef Algo;
  const DeviceTiers &Devices;
  ArrayRef<uint32_t> FavouriteChild;
  DataFlow F;
  MemoryModel M;
  unsigned D;
  /// Routes by (source, destination): channels, latency, seconds per byte.
  std::vector<uint32_t> RouteBegin, RouteChannels;
  std::vector<double> RouteLatency, RouteSecondsPerByte;
  std::vector<double> ChannelFree, DeviceFree;
  /// Per (tensor, device): when a copy arrives there, or -1.
  std::vector<double> Arrival;
  std::vector<uint32_t> OpDevice, Pending, Ready;
  /// Per device: the unplaced favourite child it waits for, or NoUnit;
  /// and, in the current step, when that child could start there (Inf
  /// when it has no ready op that would go there).
  std::vector<uint32_t> WaitsFor;
  std::vector<double> WaitStart;
  std::vector<Candidate> Candidates;
  SmallVector<std::pair<uint32_t, double>, 8> Undo;
  Schedule S;
  bool DeadEnd = false;
};

} // namespace

ListScheduler::ListScheduler(const PlacementProblem &P, StringRef Algo,
                             const DeviceTiers &Devices,
                             ArrayRef<uint32_t> FavouriteChild,
                             MemoryEstimate Memory, MemoryModel::Ops When)
    : P(P), Algo(Algo), Devices(Devices), FavouriteChild(FavouriteChild), F(P),
      M(P, F, Memory, When), D(P.getNumDevices()) {
  const Cluster &C = P.getCluster();
  RouteBegin.push_back(0);
  for (unsigned Src = 0; Src != D; ++Src)
    for (unsigned Dst = 0; Dst != D; ++Dst) {
      append_range(RouteChannels, C.getRoute(Src, Dst));
      RouteBegin.push_back(RouteChannels.size());
      bool Same = Src == Dst;
      RouteLatency.push_back(Same ? 0 : C.getRouteLatency(Src, Dst));
      RouteSecondsPerByte.push_back(Same ? 0
                                         : 1 / C.getRouteBandwidth(Src, Dst));
    }
  ChannelFree.assign(C.getNumChannels(), 0.0);
  DeviceFree.assign(D, 0.0);
  unsigned N = P.getGraph().getNumOps(), NU = P.getNumUnits();
  Arrival.assign(F.Bytes.size() * D, -1.0);
  OpDevice.assign(N, NoDevice);
  Pending = F.NumPreds;
  for (unsigned O = 0; O != N; ++O)
    if (!Pending[O])
      Ready.push_back(O);
  assert((FavouriteChild.empty() || FavouriteChild.size() == NU) &&
         "a favourite child per unit");
  WaitsFor.assign(D, NoUnit);
  WaitStart.assign(D, Inf);
  S.UnitDevice.assign(NU, NoDevice);
  S.Start.assign(N, 0.0);
  S.End.assign(N, 0.0);
}

/// When every input of \p Op can be on \p Dev: transfers not yet made start
/// once their tensor is ready and every channel of their route is free,
/// as in the simulator. Without \p Commit, the channels are left as they
/// were.
double ListScheduler::getDataReady(unsigned Op, unsigned Dev, bool Commit) {
  double Ready = 0;
  Undo.clear();
  for (uint32_t T : F.inputs(Op)) {
    uint32_t Home = F.HomeOp[T];
    if (Home == Op)
      continue;
    unsigned From = OpDevice[Home];
    assert(From != NoDevice && "inputs come from scheduled ops");
    double Avail = F.Produced[T] ? S.End[Home] : 0.0;
    if (From == Dev) {
      Ready = std::max(Ready, Avail);
      continue;
    }
    double &Arrived = Arrival[size_t(T) * D + Dev];
    if (Arrived >= 0) {
      Ready = std::max(Ready, Arrived);
      continue;
    }
    unsigned Pair = From * D + Dev;
    ArrayRef<uint32_t> Route =
        makeArrayRef(RouteChannels)
            .slice(RouteBegin[Pair], RouteBegin[Pair + 1] - RouteBegin[Pair]);
    double Start = Avail;
    for (uint32_t Ch : Route)
      Start = std::max(Start, ChannelFree[Ch]);
    double End = Start + RouteLatency[Pair] +
                 double(F.Bytes[T]) * RouteSecondsPerByte[Pair];
    for (uint32_t Ch : Route) {
      if (!Commit)
        Undo.emplace_back(Ch, ChannelFree[Ch]);
      ChannelFree[Ch] = End;
    }
    if (Commit)
      Arrived = End;
    Ready = std::max(Ready, End);
  }
  for (const auto &[Ch, Time] : reverse(Undo))
    ChannelFree[Ch] = Time;
  return Ready;
}

/// Each ready op with its device (its unit's, or the best one with room)
/// and its start time there; and, for each waiting device, when its
/// favourite child could start there.
Error ListScheduler::collectCandidates() {
  Candidates.clear();
  std::fill(WaitStart.begin(), WaitStart.end(), Inf);
  for (unsigned I = 0, E = Ready.size(); I != E; ++I) {
    uint32_t Op = Ready[I], U = P.getUnitOf(Op);
    auto StartOn = [&](unsigned Dev) {
      return std::max(getDataReady(Op, Dev, false), DeviceFree[Dev]);
    };
    auto Add = [&](unsigned Dev, double Start) {
      Candidates.push_back(Candidate{Start, U, Op, Dev, I});
      if (WaitsFor[Dev] == U)
        WaitStart[Dev] = std::min(WaitStart[Dev], Start);
    };
    if (M.getDevice(U) != NoDevice) {
      Add(M.getDevice(U), StartOn(M.getDevice(U)));
      continue;
    }
    // Of the devices with room, the one where the op ends first (then
    // starts first, then comes first): on identical devices that is where
    // it starts first, as in ETF; a device that starts it early but runs it
    // much slower (a CPU beside GPUs) does not win by starting early.
    unsigned Best = NoDevice;
    double BestStart = 0, BestEnd = 0;
    for (const std::vector<unsigned> *Tier : {&Devices.First, &Devices.Spill}) {
      for (unsigned Dev : *Tier) {
        if (!M.fits(U, Dev))
          continue;
        double Start = StartOn(Dev);
        double End = Start + P.getSimGraph().getOpTime(Op, Dev);
        if (Best == NoDevice || End < BestEnd ||
            (End == BestEnd && Start < BestStart)) {
          Best = Dev;
          BestStart = Start;
          BestEnd = End;
        }
      }
      if (Best != NoDevice)
        break;
    }
    if (Best == NoDevice)
      return M.makeNoFit(Algo, U, Devices);
    Add(Best, BestStart);
  }
  return Error::success();
}

Error ListScheduler::commit(const Candidate &C) {
  unsigned Op = C.Op, U = C.Unit, Dev = C.Device;
  bool Backfill =
      WaitsFor[Dev] != NoUnit && WaitsFor[Dev] != U && WaitStart[Dev] != Inf;
  if (M.getDevice(U) == NoDevice) {
    M.place(U, Dev);
    S.UnitDevice[U] = Dev;
    for (uint32_t &R : WaitsFor)
      if (R == U)
        R = NoUnit;
  }
  double Start = std::max(getDataReady(Op, Dev, true), DeviceFree[Dev]);
  double End = Start + P.getSimGraph().getOpTime(Op, Dev);
  S.Start[Op] = Start;
  S.End[Op] = End;
  S.Makespan = std::max(S.Makespan, End);
  DeviceFree[Dev] = End;
  OpDevice[Op] = Dev;
  if (!M.ran(Op)) {
    // scheduleList schedules again another way (never reported).
    DeadEnd = true;
    return makeError("place{algo=" + Algo + "}: op '" +
                     P.getGraph().getOp(Op).Name +
                     "' does not fit on its unit's device when it runs");
  }
  // The device now waits for the favourite child of its last op's unit,
  // unless the op only filled time while it waited for another child.
  if (!FavouriteChild.empty() && !Backfill) {
    uint32_t Child = FavouriteChild[U];
    WaitsFor[Dev] =
        Child != NoUnit && M.getDevice(Child) == NoDevice ? Child : NoUnit;
  }
  Ready[C.ReadyIndex] = Ready.back();
  Ready.pop_back();
  for (uint32_t Next : F.successors(Op))
    if (--Pending[Next] == 0)
      Ready.push_back(Next);
  return Error::success();
}

Expected<Schedule> ListScheduler::run() {
  while (!Ready.empty()) {
    if (Error E = collectCandidates())
      return std::move(E);
    const Candidate *Best = nullptr;
    for (const Candidate &C : Candidates) {
      // A device waiting for a favourite child only runs what ends before
      // the child can start.
      uint32_t Waits = WaitsFor[C.Device];
      if (Waits != NoUnit && Waits != C.Unit && WaitStart[C.Device] != Inf &&
          C.Start + P.getSimGraph().getOpTime(C.Op, C.Device) >
              WaitStart[C.Device])
        continue;
      if (!Best || C < *Best)
        Best = &C;
    }
    assert(Best && "the child a device waits for is a candidate itself");
    if (Error E = commit(*Best))
      return std::move(E);
  }
  assert(all_of(S.UnitDevice, [](uint32_t Dev) { return Dev != NoDevice; }) &&
         "every unit has an op");
  return std::move(S);
}

Expected<Schedule> scheduleList(const PlacementProblem &P, StringRef Algo,
                                const DeviceTiers &Devices,
                                ArrayRef<uint32_t> FavouriteChild,
                                MemoryEstimate Memory) {
  using Ops = MemoryModel::Ops;
  if (Memory == MemoryEstimate::Static)
    return ListScheduler(P, Algo, Devices, FavouriteChild, Memory,
                         Ops::AtPlacement)
        .run();
  // Ops one by one hold the least, but a unit placed early can find its
  // device full when a later op of it runs. Then units take their whole
  // estimate when placed, as m-TOPO's do, which cannot end so; and should
  // that find no room where the static estimate did, the static one.
  ListScheduler OneByOne(P, Algo, Devices, FavouriteChild, Memory,
                         Ops::OneByOne);
  Expected<Schedule> S = OneByOne.run();
  if (S || !OneByOne.deadEnded())
    return S;
  consumeError(S.takeError());
  S = ListScheduler(P, Algo, Devices, FavouriteChild, Memory, Ops::AtPlacement)
          .run();
  if (S)
    return S;
  consumeError(S.takeError());
  return ListScheduler(P, Algo, Devices, FavouriteChild, MemoryEstimate::Static,
                       Ops::AtPlacement)
      .run();
}

//===----------------------------------------------------------------------===//
// The favourite-child LP of m-SCT
//===----------------------------------------------------------------------===//

/// Solves the LP of one window: nodes \p Nodes (local ids 0..K-1 with
/// times \p Time), edges \p Edges between them. Returns x per edge, or an
/// empty vector when GLPK finds no optimum.
static std::vector<double>
solveWindow(ArrayRef<double> Time, ArrayRef<LPEdge> Edges, double &Makespan) {
  unsigned K = Time.size(), E = Edges.size();
  GLPKProblem Prob;
  glp_prob *LP = Prob.get();
  glp_set_obj_dir(LP, GLP_MIN);
  // Columns: x_1..x_E, s_1..s_K, w (GLPK counts from 1).
  glp_add_cols(LP, E + K + 1);
  for (unsigned I = 0; I != E; ++I)
    glp_set_col_bnds(LP, 1 + I, GLP_DB, 0.0, 1.0);
  for (unsigned I = 0; I != K; ++I)
    glp_set_col_bnds(LP, 1 + E + I, GLP_LO, 0.0, 0.0);
  int W = E + K + 1;
  glp_set_col_bnds(LP, W, GLP_LO, 0.0, 0.0);
  glp_set_obj_coef(LP, W, 1.0);

  std::vector<unsigned> OutDeg(K, 0), InDeg(K, 0);
  for (const LPEdge &Ed : Edges) {
    ++OutDeg[Ed.From];
    ++InDeg[Ed.To];
  }
  std::vector<int> Rows, Cols;
  std::vector<double> Vals;
  // GLPK's index arrays start at 1.
  Rows.push_back(0);
  Cols.push_back(0);
  Vals.push_back(0);
  int Row = 0;
  auto AddRow = [&](int Type, double Bound) {
    Row = glp_add_rows(LP, 1);
    glp_set_row_bnds(LP, Row, Type, Bound, Bound);
  };
  auto Set = [&](int Col, double V) {
    Rows.push_back(Row);
    Cols.push_back(Col);
    Vals.push_back(V);
  };
  // s_i + p_i + c_e x_e <= s_j.
  for (unsigned I = 0; I != E; ++I) {
    const LPEdge &Ed = Edges[I];
    AddRow(GLP_UP, -Time[Ed.From]);
    Set(1 + E + Ed.From, 1.0);
    Set(1 + E + Ed.To, -1.0);
    if (Ed.Cost != 0)
      Set(1 + I, Ed.Cost);
  }
  // At most one favourite child and one favourite parent per node:
  // sum x >= degree - 1.
  std::vector<SmallVector<unsigned, 4>> Out(K), In(K);
  for (unsigned I = 0; I != E; ++I) {
    Out[Edges[I].From].push_back(I);
    In[Edges[I].To].push_back(I);
  }
  for (unsigned V = 0; V != K; ++V)
    for (const auto *Adj : {&Out[V], &In[V]}) {
      if (Adj->size() < 2)
        continue;
      AddRow(GLP_LO, double(Adj->size() - 1));
      for (unsigned I : *Adj)
        Set(1 + I, 1.0);
    }
  // s_i + p_i <= w for the sinks (the others end before their children).
  for (unsigned V = 0; V != K; ++V) {
    if (OutDeg[V])
      continue;
    AddRow(GLP_UP, -Time[V]);
    Set(1 + E + V, 1.0);
    Set(W, -1.0);
  }
  glp_load_matrix(LP, Rows.size() - 1, Rows.data(), Cols.data(), Vals.data());
  glp_scale_prob(LP, GLP_SF_AUTO);
  glp_adv_basis(LP, 0);

  glp_smcp Parm;
  glp_init_smcp(&Parm);
  Parm.msg_lev = GLP_MSG_OFF;
  if (glp_simplex(LP, &Parm) != 0 || glp_get_status(LP) != GLP_OPT)
    return {};
  Makespan = glp_get_obj_val(LP);
  std::vector<double> X(E);
  for (unsigned I = 0; I != E; ++I)
    X[I] = glp_get_col_prim(LP, 1 + I);

  // Among the optimal solutions, the one that pays the least
  // communication: its x are a better guide off the critical path, where
  // the makespan alone leaves them arbitrary.
  glp_set_col_bnds(LP, W, GLP_DB, 0.0, Makespan * (1 + 1e-9) + 1e-12);
  glp_set_obj_coef(LP, W, 0.0);
  for (unsigned I = 0; I != E; ++I)
    glp_set_obj_coef(LP, 1 + I, Edges[I].Cost);
  if (glp_simplex(LP, &Parm) == 0 && glp_get_status(LP) == GLP_OPT)
    for (unsigned I = 0; I != E; ++I)
      X[I] = glp_get_col_prim(LP, 1 + I);
  return X;
}

namespace {
/// Chains contracted into their first node. A chain edge is favourite in
/// every optimal solution (its x only appears in its own precedence
/// constraint), so chains contract into their first node, which takes
/// their total time.
struct ChainContraction {
  /// Per node: the first node of its chain.
  std::vector<uint32_t> Head;
  /// Per chain head: the chain's total time.
  std::vector<double> ChainTime;
  /// Per edge: whether it joins two nodes of a chain.
  std::vector<uint8_t> IsChain;
};
} // namespace

/// Contracts the chains of the DAG, recording their edges as favourite in
/// \p Child.
static ChainContraction contractChains(ArrayRef<double> NodeTime,
                                       ArrayRef<LPEdge> Edges,
                                       ArrayRef<uint32_t> Order,
                                       std::vector<uint32_t> &Child) {
  unsigned N = NodeTime.size();
  std::vector<unsigned> OutDeg(N, 0), InDeg(N, 0);
  for (const LPEdge &E : Edges) {
    ++OutDeg[E.From];
    ++InDeg[E.To];
  }
  ChainContraction CC;
  CC.Head.resize(N);
  CC.ChainTime.assign(NodeTime.begin(), NodeTime.end());
  CC.IsChain.assign(Edges.size(), 0);
  std::vector<uint32_t> InEdge(N, NoUnit);
  for (unsigned I = 0, E = Edges.size(); I != E; ++I)
    InEdge[Edges[I].To] = I;
  for (uint32_t V : Order) {
    CC.Head[V] = V;
    if (InDeg[V] != 1)
      continue;
    unsigned I = InEdge[V];
    uint32_t Parent = Edges[I].From;
    if (OutDeg[Parent] != 1)
      continue;
    CC.IsChain[I] = 1;
    Child[Parent] = V;
    CC.Head[V] = CC.Head[Parent];
    CC.ChainTime[CC.Head[V]] += NodeTime[V];
  }
  return CC;
}

/// Solves the LP of one window with the figures scaled near 1 (GLPK's
/// tolerances are relative); the x of its edges, empty when it failed, and
/// the unscaled relaxed makespan in \p Makespan.
static std::vector<double> solveScaledWindow(std::vector<double> Time,
                                             std::vector<LPEdge> Local,
                                             double &Makespan) {
  double Scale = 0;
  for (double T : Time)
    Scale = std::max(Scale, T);
  for (const LPEdge &E : Local)
    Scale = std::max(Scale, E.Cost);
  if (!(Scale > 0))
    Scale = 1;
  for (double &T : Time)
    T /= Scale;
  for (LPEdge &E : Local)
    E.Cost /= Scale;
  Makespan = 0;
  std::vector<double> X = solveWindow(Time, Local, Makespan);
  Makespan *= Scale;
  return X;
}

/// Solves one LP per window of \p Limit consecutive nodes of the
/// contracted graph (\p Nodes, by \p LocalId), over the edges of
/// \p EdgeIds that stay in a window; the x of every edge, 1 where no LP
/// gave one.
static std::vector<double>
solveWindows(ArrayRef<LPEdge> Edges, ArrayRef<unsigned> EdgeIds,
             const ChainContraction &CC, ArrayRef<uint32_t> Nodes,
             ArrayRef<uint32_t> LocalId, unsigned Limit, FavouriteChildren &R) {
  std::vector<double> X(Edges.size(), 1.0);
  auto LocalOf = [&](uint32_t V) { return LocalId[CC.Head[V]]; };
  std::vector<std::vector<unsigned>> WindowEdges((Nodes.size() + Limit - 1) /
                                                 Limit);
  for (unsigned I : EdgeIds) {
    unsigned A = LocalOf(Edges[I].From), B = LocalOf(Edges[I].To);
    if (A / Limit == B / Limit)
      WindowEdges[A / Limit].push_back(I);
  }
  for (unsigned Win = 0, NW = WindowEdges.size(); Win != NW; ++Win) {
    if (WindowEdges[Win].empty())
      continue;
    unsigned First = Win * Limit;
    unsigned K = std::min<unsigned>(Limit, Nodes.size() - First);
    std::vector<double> Time(K);
    for (unsigned I = 0; I != K; ++I)
      Time[I] = CC.ChainTime[Nodes[First + I]];
    std::vector<LPEdge> Local;
    for (unsigned I : WindowEdges[Win])
      Local.push_back(LPEdge{LocalOf(Edges[I].From) - First,
                             LocalOf(Edges[I].To) - First, Edges[I].Cost});
    double Makespan;
    std::vector<double> LocalX =
        solveScaledWindow(std::move(Time), std::move(Local), Makespan);
    ++R.NumLPs;
    if (LocalX.empty())
      continue;
    R.RelaxedMakespan = std::max(R.RelaxedMakespan, Makespan);
    for (unsigned I = 0, E = LocalX.size(); I != E; ++I)
      X[WindowEdges[Win][I]] = LocalX[I];
  }
  return X;
}

/// Rounding: edges at or under the threshold, smallest x first (then the
/// heavier edge, then the first), keeping one child per parent and one
/// parent per child.
static void roundFavourites(ArrayRef<LPEdge> Edges, ArrayRef<unsigned> EdgeIds,
                            ArrayRef<uint8_t> IsChain, ArrayRef<double> X,
                            double Threshold, std::vector<uint32_t> &Child) {
  std::vector<unsigned> Cands;
  for (unsigned I : EdgeIds)
    if (X[I] <= Threshold + 1e-9)
      Cands.push_back(I);
  llvm::sort(Cands, [&](unsigned A, unsigned B) {
    return std::make_tuple(X[A], -Edges[A].Cost, A) <
           std::make_tuple(X[B], -Edges[B].Cost, B);
  });
  std::vector<uint8_t> HasParent(Child.size(), 0);
  for (unsigned I = 0, E = Edges.size(); I != E; ++I)
    if (IsChain[I])
      HasParent[Edges[I].To] = 1;
  for (unsigned I : Cands) {
    uint32_t From = Edges[I].From, To = Edges[I].To;
    if (Child[From] != NoUnit || HasParent[To])
      continue;
    Child[From] = To;
    HasParent[To] = 1;
  }
}

FavouriteChildren solveFavouriteChildren(ArrayRef<double> NodeTime,
                                         ArrayRef<LPEdge> Edges,
                                         ArrayRef<uint32_t> Order,
                                         double Threshold, unsigned NodeLimit) {
  unsigned N = NodeTime.size();
  FavouriteChildren R;
  R.Child.assign(N, NoUnit);
#ifndef NDEBUG
  std::vector<uint32_t> Position(N);
  for (unsigned I = 0; I != N; ++I)
    Position[Order[I]] = I;
  for (const LPEdge &E : Edges)
    assert(Position[E.From] < Position[E.To] && "edges follow the order");
#endif
  ChainContraction CC = contractChains(NodeTime, Edges, Order, R.Child);

  // The contracted graph: chain heads with an edge, in order.
  std::vector<uint32_t> LocalId(N, NoUnit), Nodes;
  std::vector<unsigned> EdgeIds;
  for (unsigned I = 0, E = Edges.size(); I != E; ++I)
    if (!CC.IsChain[I]) {
      EdgeIds.push_back(I);
      LocalId[CC.Head[Edges[I].From]] = LocalId[CC.Head[Edges[I].To]] = 0;
    }
  for (uint32_t V : Order)
    if (LocalId[V] != NoUnit) {
      LocalId[V] = Nodes.size();
      Nodes.push_back(V);
    }
  R.LPNodes = Nodes.size();
  R.LPEdges = EdgeIds.size();
  if (EdgeIds.empty())
    return R;

  std::vector<double> X = solveWindows(Edges, EdgeIds, CC, Nodes, LocalId,
                                       std::max(NodeLimit, 1u), R);
  roundFavourites(Edges, EdgeIds, CC.IsChain, X, Threshold, R.Child);
  return R;
}

FavouriteChildren computeUnitFavourites(const PlacementProblem &P,
                                        double Threshold, unsigned NodeLimit) {
  unsigned NU = P.getNumUnits(), D = P.getNumDevices();
  const Cluster &C = P.getCluster();
  std::vector<double> Time(NU, Inf);
  for (unsigned U = 0; U != NU; ++U)
    for (unsigned Dev = 0; Dev != D; ++Dev)
      Time[U] = std::min(Time[U], P.getUnitTime(U, Dev));
  // The average route between two distinct devices.
  double Latency = 0, SecondsPerByte = 0;
  unsigned Pairs = 0;
  for (unsigned Src = 0; Src != D; ++Src)
    for (unsigned Dst = 0; Dst != D; ++Dst)
      if (Src != Dst) {
        Latency += C.getRouteLatency(Src, Dst);
        SecondsPerByte += 1 / C.getRouteBandwidth(Src, Dst);
        ++Pairs;
      }
  if (Pairs) {
    Latency /= Pairs;
    SecondsPerByte /= Pairs;
  }
  std::vector<LPEdge> Edges;
  for (const UnitEdge &E : P.getForwardEdges())
    Edges.push_back(
        LPEdge{E.From, E.To, Latency + double(E.Bytes) * SecondsPerByte});
  return solveFavouriteChildren(Time, Edges, P.getTopologicalOrder(), Threshold,
                                NodeLimit);
}

} // namespace baechi

//===----------------------------------------------------------------------===//
// The placers of Placers.def
//===----------------------------------------------------------------------===//

using namespace baechi;

namespace {
/// The options of m-TOPO, m-ETF and m-SCT (each declares its own).
struct BaechiOptions {
  DeviceSetKind Devices = DeviceSetKind::Auto;
  MemoryEstimate Memory = MemoryEstimate::Schedule;
  /// m-TOPO: Baechi's uniform variant (fair shares), else fill each
  /// device to its capacity.
  bool Uniform = true;
  /// m-SCT: the most LP nodes (after chain contraction) in one LP.
  unsigned LPLimit = 1000;
  /// m-SCT: edges with x at most this become favourites.
  double Threshold = 0.5;
};
} // namespace

static bool isFraction(double X) { return X >= 0 && X <= 1; }

static void declareDevices(OptionTable &T, BaechiOptions &O) {
  T.choice<DeviceSetKind>("devices", O.Devices, BaechiDeviceSetNames);
}

static void declareMemory(OptionTable &T, BaechiOptions &O) {
  T.choice<MemoryEstimate>("memory", O.Memory, MemoryEstimateNames);
}

static void declareTopoOptions(OptionTable &T, BaechiOptions &O) {
  declareDevices(T, O);
  T.flag("uniform", O.Uniform);
  declareMemory(T, O);
}

static void declareEtfOptions(OptionTable &T, BaechiOptions &O) {
  declareDevices(T, O);
  declareMemory(T, O);
}

static void declareSctOptions(OptionTable &T, BaechiOptions &O) {
  declareDevices(T, O);
  T.integer("lp-limit", O.LPLimit)
      .number("threshold", O.Threshold, "X", "a number in [0, 1]", isFraction);
  declareMemory(T, O);
}

static Expected<std::vector<uint32_t>> runMTopo(const PlacementProblem &P,
                                                const PlaceOptions &,
                                                const BaechiOptions &O) {
  Expected<DeviceTiers> Devices =
      selectDevices(P.getCluster(), "m-topo", O.Devices);
  if (!Devices)
    return Devices.takeError();
  return placeTopo(P, *Devices, O.Uniform, O.Memory);
}

/// The list schedule of \p Algo on the devices O.Devices selects: m-ETF's,
/// or with \p Favourites m-SCT's, whose devices wait for the favourite
/// child (O.Threshold, O.LPLimit) of their last op.
static Expected<std::vector<uint32_t>>
placeByListSchedule(const PlacementProblem &P, StringRef Algo,
                    const BaechiOptions &O, bool Favourites) {
  Expected<DeviceTiers> Devices =
      selectDevices(P.getCluster(), Algo, O.Devices);
  if (!Devices)
    return Devices.takeError();
  FavouriteChildren Fav;
  if (Favourites)
    Fav = computeUnitFavourites(P, O.Threshold, O.LPLimit);
  Expected<Schedule> S = scheduleList(P, Algo, *Devices, Fav.Child, O.Memory);
  if (!S)
    return S.takeError();
  return std::move(S->UnitDevice);
}

static Expected<std::vector<uint32_t>> runMEtf(const PlacementProblem &P,
                                               const PlaceOptions &,
                                               const BaechiOptions &O) {
  return placeByListSchedule(P, "m-etf", O, /*Favourites=*/false);
}

static Expected<std::vector<uint32_t>> runMSct(const PlacementProblem &P,
                                               const PlaceOptions &,
                                               const BaechiOptions &O) {
  return placeByListSchedule(P, "m-sct", O, /*Favourites=*/true);
}

DP_DEFINE_PLACER(placeMTopo, describeMTopo, declareTopoOptions, runMTopo)
DP_DEFINE_PLACER(placeMEtf, describeMEtf, declareEtfOptions, runMEtf)
DP_DEFINE_PLACER(placeMSct, describeMSct, declareSctOptions, runMSct)

} // namespace dp
