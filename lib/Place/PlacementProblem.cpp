//===- PlacementProblem.cpp - What placers work on ------------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "Placers.h"
#include "dp/Colocate/Colocate.h"
#include "dp/IR/Annotations.h"
#include "dp/IR/Grouping.h"
#include "dp/Place/Placer.h"
#include "dp/Support/Diagnostics.h"
#include "dp/Support/Format.h"

#include "llvm/ADT/DenseMap.h"

#include <algorithm>
#include <limits>
#include <queue>

using namespace llvm;

namespace dp {

/// Dense unit ids in order of each unit's first op: from `group`
/// annotations when every op has one, else from colocate hints.
static std::vector<uint32_t> computeUnits(const Graph &G) {
  unsigned N = G.getNumOps();
  bool AllGrouped = N > 0;
  for (OpId O = 0; O != N && AllGrouped; ++O)
    AllGrouped = bool(ann::get(G.getOp(O), ann::Group));
  if (!AllGrouped)
    return getHintClasses(G).GroupOf;
  std::vector<uint32_t> Key(N);
  DenseMap<int64_t, uint32_t> Dense;
  for (OpId O = 0; O != N; ++O) {
    int64_t Group = *ann::get(G.getOp(O), ann::Group);
    Key[O] = Dense.try_emplace(Group, Dense.size()).first->second;
  }
  return Key;
}

Expected<PlacementProblem> PlacementProblem::build(const Graph &G,
                                                   const Cluster &C) {
  return build(G, C, computeUnits(G));
}

Expected<PlacementProblem>
PlacementProblem::build(const Graph &G, const Cluster &C,
                        std::vector<uint32_t> UnitOf) {
  assert(UnitOf.size() == G.getNumOps() && "one unit per op");
  Expected<SimGraph> SG = SimGraph::build(G, C);
  if (!SG)
    return SG.takeError();
  PlacementProblem P;
  P.G = &G;
  P.C = &C;
  P.SG = std::make_unique<SimGraph>(std::move(*SG));
  P.Sim = std::make_unique<Simulator>(*P.SG);
  P.Result = std::make_unique<SimResult>();
  P.Scratch = std::make_unique<std::vector<uint32_t>>(G.getNumOps());

  unsigned N = G.getNumOps(), D = C.getNumDevices();
  P.UnitOf = std::move(UnitOf);
  unsigned U = 0;
  for (uint32_t Unit : P.UnitOf)
    U = std::max(U, Unit + 1);
  P.UnitOpsBegin.assign(U + 1, 0);
  for (uint32_t Unit : P.UnitOf)
    ++P.UnitOpsBegin[Unit + 1];
  for (unsigned I = 0; I != U; ++I)
    P.UnitOpsBegin[I + 1] += P.UnitOpsBegin[I];
  P.UnitOps.resize(N);
  std::vector<uint32_t> Fill(P.UnitOpsBegin.begin(), P.UnitOpsBegin.end() - 1);
  for (OpId O = 0; O != N; ++O)
    P.UnitOps[Fill[P.UnitOf[O]]++] = O;

  P.UnitTime.assign(size_t(U) * D, 0.0);
  P.UnitMemory.assign(U, 0);
  std::vector<uint64_t> OpMemory = getOpMemory(G);
  for (OpId O = 0; O != N; ++O) {
    unsigned Unit = P.UnitOf[O];
    for (unsigned Dev = 0; Dev != D; ++Dev)
      P.UnitTime[size_t(Unit) * D + Dev] += P.SG->getOpTime(O, Dev);
    P.UnitMemory[Unit] += OpMemory[O];
  }
  P.Edges = getGroupEdges(G, P.UnitOf);

  // Topological order of units; units are numbered by first op, so the
  // smallest ready unit keeps graph order, and a cycle among groups is
  // broken at its smallest unit.
  GroupAdjacency Succ =
      GroupAdjacency::build(U, P.Edges, /*Out=*/true, /*In=*/false);
  std::vector<unsigned> Pending(U, 0);
  for (const UnitEdge &E : P.Edges)
    ++Pending[E.To];
  std::priority_queue<uint32_t, std::vector<uint32_t>, std::greater<uint32_t>>
      Ready;
  std::vector<bool> Done(U, false);
  for (unsigned I = 0; I != U; ++I)
    if (!Pending[I])
      Ready.push(I);
  unsigned NextCycleBreak = 0;
  while (P.TopoOrder.size() != U) {
    if (Ready.empty()) {
      while (Done[NextCycleBreak])
        ++NextCycleBreak;
      Pending[NextCycleBreak] = 0;
      Ready.push(NextCycleBreak);
    }
    uint32_t X = Ready.top();
    Ready.pop();
    if (Done[X])
      continue;
    Done[X] = true;
    P.TopoOrder.push_back(X);
    for (uint32_t Y : Succ[X])
      if (!Done[Y] && Pending[Y] && --Pending[Y] == 0)
        Ready.push(Y);
  }
  return std::move(P);
}

std::string PlacementProblem::describeUnit(unsigned U) const {
  ArrayRef<uint32_t> Ops = getUnitOps(U);
  std::string First = G->getOp(Ops.front()).Name.str();
  if (Ops.size() == 1)
    return "op '" + First + "'";
  return "group " + std::to_string(U) + " ('" + First + "' and " +
         std::to_string(Ops.size() - 1) + " more ops)";
}

std::vector<UnitEdge> PlacementProblem::getForwardEdges() const {
  std::vector<uint32_t> Position(getNumUnits());
  for (unsigned I = 0, E = TopoOrder.size(); I != E; ++I)
    Position[TopoOrder[I]] = I;
  std::vector<UnitEdge> Forward;
  for (const UnitEdge &E : Edges)
    if (Position[E.From] < Position[E.To])
      Forward.push_back(E);
  return Forward;
}

std::vector<uint32_t>
PlacementProblem::expand(ArrayRef<uint32_t> UnitPlacement) const {
  assert(UnitPlacement.size() == getNumUnits() && "one device per unit");
  std::vector<uint32_t> Ops(UnitOf.size());
  for (size_t O = 0, E = UnitOf.size(); O != E; ++O)
    Ops[O] = UnitPlacement[UnitOf[O]];
  return Ops;
}

const SimResult &
PlacementProblem::simulate(ArrayRef<uint32_t> UnitPlacement) const {
  assert(UnitPlacement.size() == getNumUnits() && "one device per unit");
  std::vector<uint32_t> &Ops = *Scratch;
  for (size_t O = 0, E = UnitOf.size(); O != E; ++O)
    Ops[O] = UnitPlacement[UnitOf[O]];
  Sim->run(Ops, *Result);
  return *Result;
}

/// What might fit instead of a placement by \p Algo where \p Unit fits
/// nowhere: a cluster with more memory when the unit or the step's weights
/// and persistent state are larger than the cluster can hold, else placers
/// and plans that hold less at once.
static std::string suggestFit(const PlacementProblem &P, StringRef Algo,
                              unsigned Unit) {
  const Graph &G = P.getGraph();
  uint64_t Largest = 0, Total = 0;
  for (unsigned Dev = 0, D = P.getNumDevices(); Dev != D; ++Dev) {
    Largest = std::max(Largest, P.getDeviceCapacity(Dev));
    Total += P.getDeviceCapacity(Dev);
  }
  uint64_t Need = P.getUnitMemory(Unit);
  ArrayRef<uint32_t> Ops = P.getUnitOps(Unit);
  if (Need > Largest && Ops.size() == 1)
    return "; it would fit only on a device of at least " + formatBytes(Need) +
           " (a cluster with more memory per device)";
  uint64_t Fixed = getHeldBytes(G);
  if (Fixed > Total)
    return "; the step's weights and persistent state alone take " +
           formatBytes(Fixed) + ", more than the " + formatBytes(Total) +
           " of all devices together: it needs a cluster with more memory";
  std::string Tries;
  if (Need > Largest)
    Tries = "smaller groups (the unit has " + std::to_string(Ops.size()) +
            " ops; a finer colocate{}), ";
  if (Algo != "anneal")
    Tries += "place{algo=anneal} (it searches with the simulator's memory), ";
  if (any_of(G.ops(), [](const Op &O) {
        return ann::get(O, ann::Phase).getValueOr("") == "backward";
      }))
    Tries += "a pipeline that holds fewer activations at once "
             "(pipeline{microbatches=M,recompute=true} before "
             "place{algo=pipeline}, or plan{} to search replicas and "
             "stages), ";
  return "; to fit, try " + Tries +
         "a smaller batch (import-onnx{batch=N}) or a cluster with more "
         "memory";
}

/// "no device can hold U: it needs N, and at most F is free (on D, of its
/// C)", then \p Tail, then what might fit.
static Error makeNoFitMessage(const PlacementProblem &P, StringRef Algo,
                              unsigned Unit, uint64_t LargestFree,
                              unsigned RoomiestDevice, const Twine &Tail) {
  return makeNodeError(
      P.getGraph().getOp(P.getUnitOps(Unit).front()).Name,
      "place{algo=" + Algo + "}: no device can hold " + P.describeUnit(Unit) +
          ": it needs " + formatBytes(P.getUnitMemory(Unit)) +
          ", and at most " + formatBytes(LargestFree) + " is free (on " +
          P.getCluster().getDevices()[RoomiestDevice].Name + ", of its " +
          formatBytes(P.getDeviceCapacity(RoomiestDevice)) + ")" + Tail +
          suggestFit(P, Algo, Unit));
}

Error makeNoFitError(const PlacementProblem &P, StringRef Algo, unsigned Unit,
                     uint64_t LargestFree, unsigned RoomiestDevice) {
  return makeNoFitMessage(P, Algo, Unit, LargestFree, RoomiestDevice, "");
}

/// The no-fit error for a placement the simulator found out of memory:
/// the largest unit on the device that overflows most, and the most a
/// device could have free for it (capacity minus the simulated peak, on
/// its own device not counting the unit's own bytes).
Error makeNoFitErrorFromSim(const PlacementProblem &P, StringRef Algo,
                            ArrayRef<uint32_t> Placement, const SimResult &R) {
  unsigned D = P.getNumDevices();
  unsigned Worst = R.OOMDevice;
  uint64_t WorstOver = 0;
  for (unsigned Dev = 0; Dev != D; ++Dev) {
    uint64_t Cap = P.getDeviceCapacity(Dev);
    if (R.PeakBytes[Dev] > Cap && R.PeakBytes[Dev] - Cap > WorstOver) {
      Worst = Dev;
      WorstOver = R.PeakBytes[Dev] - Cap;
    }
  }
  int Largest = -1;
  for (unsigned U = 0, E = P.getNumUnits(); U != E; ++U)
    if (Placement[U] == Worst &&
        (Largest < 0 || P.getUnitMemory(U) > P.getUnitMemory(Largest)))
      Largest = U;
  assert(Largest >= 0 && "an overflowing device holds a unit");
  uint64_t Need = P.getUnitMemory(Largest);
  // The devices the placement uses, and those it leaves empty.
  std::vector<bool> InUse(D, false);
  for (uint32_t Dev : Placement)
    InUse[Dev] = true;
  uint64_t BestFree = 0;
  unsigned Roomiest = Worst;
  std::string Unused;
  for (unsigned Dev = 0; Dev != D; ++Dev) {
    uint64_t Cap = P.getDeviceCapacity(Dev);
    uint64_t Used = R.PeakBytes[Dev];
    if (Dev == Worst)
      Used -= std::min(Used, Need);
    uint64_t Free = Cap - std::min(Cap, Used);
    if (!InUse[Dev]) {
      // Room the placer did not use: where the unit would fit.
      if (Free >= Need)
        Unused += (Unused.empty() ? "" : ", ") +
                  P.getCluster().getDevices()[Dev].Name + " (" +
                  formatBytes(Free) + ")";
      continue;
    }
    if (Free > BestFree || (Free == BestFree && Dev == Worst)) {
      BestFree = Free;
      Roomiest = Dev;
    }
  }
  std::string Tail;
  if (!Unused.empty())
    Tail = "; the placement leaves unused " + Unused +
           ", where it would fit: a placer or option that uses more devices "
           "(devices=all) would";
  return makeNoFitMessage(P, Algo, Largest, BestFree, Roomiest, Tail);
}

/// \p P with its units merged into at most \p Groups groups by colocate's
/// merge rule (the cheapest group joins the neighbour it exchanges most
/// bytes with), and the group of each of \p P's units.
Expected<std::pair<PlacementProblem, std::vector<uint32_t>>>
mergeUnits(const PlacementProblem &P, unsigned Groups, StringRef Who) {
  const Graph &G = P.getGraph();
  Expected<std::vector<double>> Costs =
      getComputeCosts(G, &P.getCluster(), Who);
  if (!Costs)
    return Costs.takeError();
  Grouping Units;
  Units.NumGroups = P.getNumUnits();
  for (OpId O = 0, E = G.getNumOps(); O != E; ++O)
    Units.GroupOf.push_back(P.getUnitOf(O));
  Grouping Merged = groupByMerge(
      G, *Costs, Groups, std::numeric_limits<double>::infinity(), &Units);
  std::vector<uint32_t> GroupOfUnit(P.getNumUnits());
  for (unsigned U = 0; U != P.getNumUnits(); ++U)
    GroupOfUnit[U] = Merged.GroupOf[P.getUnitOps(U).front()];
  Expected<PlacementProblem> Coarse =
      PlacementProblem::build(G, P.getCluster(), std::move(Merged.GroupOf));
  if (!Coarse)
    return Coarse.takeError();
  return std::make_pair(std::move(*Coarse), std::move(GroupOfUnit));
}

} // namespace dp
