//===- PipelinePlacer.cpp - Pipeline stages cut over the step -------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
//
// place{algo=pipeline}: the units in topological order cut into contiguous
// stages, stage k on the k-th compute device (docs/placers.md, "pipeline").
// balance=time, the default, finds for each stage count the cuts that
// minimize the slowest stage, its time being its units' forward and
// backward time on its device or the transfers over its cut in, under the
// memory the schedule keeps in flight there (1F1B: min(p - k, M)
// micro-batches' saved activations at stage k of p; GPipe: M; recomputing,
// that many micro-batches' stage inputs and one's activations, and the
// backward runs the forward again), by
// bisection on that bottleneck with a greedy fill (the optimal cut for a
// bottleneck takes each stage as far as it goes, PipeDream's and Piper's
// contiguous partitions); the pipelined simulator then picks among them
// and the baselines' cuts, and refines the winner's cut points. The
// baselines of DeepSpeed's partition_method cut into as many stages as
// there are devices: balance=layers (uniform: equal numbers of layers, a
// layer being a unit whose forward ops read weights) and balance=parameters
// (equal weight bytes).
//
//===----------------------------------------------------------------------===//

#include "Placers.h"
#include "dp/IR/Annotations.h"
#include "dp/Place/Placer.h"
#include "dp/Support/Diagnostics.h"
#include "dp/Support/EnumNames.h"
#include "dp/Support/Format.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <chrono>
#include <limits>

using namespace llvm;

namespace dp {

/// The search's default time budget (seconds=).
static constexpr double DefaultSeconds = 30;

namespace {

enum class BalanceKind { Time, Layers, Parameters };

constexpr EnumEntry<BalanceKind> BalanceNames[] = {
    {"time", BalanceKind::Time},
    {"layers", BalanceKind::Layers},
    {"parameters", BalanceKind::Parameters},
};

struct PipelineOptions {
  BalanceKind Balance = BalanceKind::Time;
  /// The stage count; 0: every count up to the devices (auto).
  unsigned Stages = 0;
  DeviceSetKind Devices = DeviceSetKind::GPUs;
};

/// The stage cuts of one problem.
class StageCutter {
public:
  StageCutter(const PlacementProblem &P, ArrayRef<unsigned> Devs,
              BalanceKind Balance);

  /// Cuts into at most \p Stages stages (fewer when fewer do as well):
  /// the first position of each stage, then Order.size().
  std::vector<unsigned> cut(unsigned Stages) const;
  /// The unit placement of \p Cuts.
  std::vector<uint32_t> place(ArrayRef<unsigned> Cuts) const;
  /// The pipelined step \p Cuts would take by the estimate the cuts
  /// minimize: the slowest stage's time per micro-batch times M + p - 1.
  double estimate(ArrayRef<unsigned> Cuts) const;
  /// Why no cut fits, from the simulation of \p Cuts: the device over its
  /// memory by the most, what it holds all step (weights, gradients,
  /// optimizer state) and in flight, and what would help.
  Error noFit(ArrayRef<unsigned> Cuts) const;

private:
  /// Whether the units fit in \p Stages stages of at most \p Limit each;
  /// the cuts in \p Cuts when they do.
  bool fill(double Limit, unsigned Stages, std::vector<unsigned> &Cuts) const;
  /// What position \p I adds to stage \p K.
  double weight(unsigned I, unsigned K) const;
  /// Micro-batches whose activations stage \p K of \p Stages holds at once.
  unsigned inFlight(unsigned K, unsigned Stages) const;

  const PlacementProblem &P;
  ArrayRef<unsigned> Devs;
  BalanceKind Balance;
  ArrayRef<uint32_t> Order;
  Optional<PipelinePlan> Plan;
  /// Per position: layers or parameter bytes (Balance other than Time).
  std::vector<double> Count;
  /// Per position and device type: what the unit's updates save per
  /// micro-batch, (1 - 1/M) of their time: they run once a step, not once
  /// per micro-batch like the rest of the unit's time.
  std::vector<double> UpdateSaving;
  /// Per position and device type, with recomputation: the unit's forward
  /// time, which its backward runs again.
  std::vector<double> RecomputeTime;
  unsigned NumTypes = 0;
  /// Per position: bytes that stay on the device all step, and one
  /// micro-batch's forward results that its backward reads.
  std::vector<uint64_t> Resident, Activations;
  /// Per position I: bytes a cut before I carries (results made before I
  /// and read at or after it).
  std::vector<uint64_t> CutBytes;
  /// A bound every stage fits under: where cut()'s bisection starts.
  double UpperBound = 0;
};

} // namespace

StageCutter::StageCutter(const PlacementProblem &P, ArrayRef<unsigned> Devs,
                         BalanceKind Balance)
    : P(P), Devs(Devs), Balance(Balance), Order(P.getTopologicalOrder()),
      Plan(P.getSimGraph().getPlan()) {
  const Graph &G = P.getGraph();
  unsigned N = Order.size();
  std::vector<unsigned> PosOf(N);
  for (unsigned I = 0; I != N; ++I)
    PosOf[Order[I]] = I;
  Count.assign(N, 0);
  NumTypes = P.getCluster().getTypes().size();
  UpdateSaving.assign(size_t(N) * NumTypes, 0);
  RecomputeTime.assign(size_t(N) * NumTypes, 0);
  bool Recompute = Plan && Plan->Recompute;
  double Share = Plan ? 1 - 1.0 / Plan->MicroBatches : 0;
  std::vector<int> TypeDevice(NumTypes, -1);
  for (unsigned D = 0, E = P.getNumDevices(); D != E; ++D)
    if (TypeDevice[P.getCluster().getDevices()[D].Type] < 0)
      TypeDevice[P.getCluster().getDevices()[D].Type] = D;
  Resident.assign(N, 0);
  Activations.assign(N, 0);
  std::vector<int64_t> Delta(N + 1, 0);
  for (unsigned I = 0; I != N; ++I) {
    uint64_t Results = 0;
    bool Layer = false;
    for (uint32_t O : P.getUnitOps(Order[I])) {
      const Op &Node = G.getOp(O);
      StringRef Phase = ann::getString(Node, ann::Phase);
      bool Forward = Phase.empty() || Phase == "forward" || Phase == "loss";
      if (Forward && Recompute)
        for (unsigned T = 0; T != NumTypes; ++T)
          if (TypeDevice[T] >= 0)
            RecomputeTime[size_t(I) * NumTypes + T] +=
                P.getSimGraph().getOpTime(O, TypeDevice[T]);
      if (Phase == "update" && Share > 0)
        for (unsigned T = 0; T != NumTypes; ++T)
          if (TypeDevice[T] >= 0)
            UpdateSaving[size_t(I) * NumTypes + T] +=
                Share * P.getSimGraph().getOpTime(O, TypeDevice[T]);
      for (TensorId T : Node.Results) {
        if (T == NoId)
          continue;
        const Tensor &Tn = G.getTensor(T);
        uint64_t Bytes = Tn.Type.getSizeInBytes().getValueOr(0);
        Results += Bytes;
        // What a micro-batch in flight keeps: the forward results its
        // backward reads (the rest is freed as the forward goes).
        if (Forward && any_of(Tn.Uses, [&](const Use &U) {
              return ann::getString(G.getOp(U.User), ann::Phase) == "backward";
            }))
          Activations[I] += Bytes;
      }
      if (!Forward)
        continue;
      for (TensorId T : Node.Operands) {
        if (T == NoId || G.getTensor(T).Kind != TensorKind::Weight)
          continue;
        Layer = true;
        if (Balance == BalanceKind::Parameters)
          Count[I] +=
              double(G.getTensor(T).Type.getSizeInBytes().getValueOr(0));
      }
    }
    if (Balance == BalanceKind::Layers)
      Count[I] = Layer;
    uint64_t Memory = P.getUnitMemory(Order[I]);
    Resident[I] = Memory > Results ? Memory - Results : 0;
  }
  // Bytes over each cut: a tensor crosses every cut between its producer's
  // position and its last reader's.
  for (const Tensor &Tn : G.tensors()) {
    if (Tn.Producer == NoId || Tn.Uses.empty())
      continue;
    unsigned From = PosOf[P.getUnitOf(Tn.Producer)], To = From;
    for (const Use &U : Tn.Uses)
      To = std::max(To, PosOf[P.getUnitOf(U.User)]);
    if (To == From)
      continue;
    int64_t Bytes = Tn.Type.getSizeInBytes().getValueOr(0);
    Delta[From + 1] += Bytes;
    Delta[To + 1] -= Bytes;
  }
  CutBytes.assign(N + 1, 0);
  int64_t Running = 0;
  for (unsigned I = 0; I <= N; ++I)
    CutBytes[I] = uint64_t(Running += Delta[I]);
  // Every unit on its slowest device, and a cut's transfers, which can
  // take longer than all the compute.
  for (unsigned I = 0; I != N; ++I) {
    double Most = 0;
    for (unsigned K = 0; K != Devs.size(); ++K)
      Most = std::max(Most, weight(I, K));
    UpperBound += Most;
  }
  if (Balance == BalanceKind::Time)
    for (unsigned I = 1; I < N; ++I)
      for (unsigned K = 1; K < Devs.size(); ++K)
        UpperBound = std::max(
            UpperBound,
            2 * (P.getCluster().getRouteLatency(Devs[K - 1], Devs[K]) +
                 double(CutBytes[I]) /
                     P.getCluster().getRouteBandwidth(Devs[K - 1], Devs[K])));
}

unsigned StageCutter::inFlight(unsigned K, unsigned Stages) const {
  if (!Plan)
    return 1;
  if (Plan->Schedule == PipelineScheduleKind::GPipe)
    return Plan->MicroBatches;
  return std::min(Stages - K, Plan->MicroBatches);
}

double StageCutter::weight(unsigned I, unsigned K) const {
  if (Balance != BalanceKind::Time)
    return Count[I];
  unsigned Type = P.getCluster().getDevices()[Devs[K]].Type;
  return P.getUnitTime(Order[I], Devs[K]) -
         UpdateSaving[size_t(I) * NumTypes + Type] +
         RecomputeTime[size_t(I) * NumTypes + Type];
}

bool StageCutter::fill(double Limit, unsigned Stages,
                       std::vector<unsigned> &Cuts) const {
  const Cluster &C = P.getCluster();
  unsigned N = Order.size();
  Cuts.assign(1, 0);
  unsigned K = 0;
  double Load = 0;
  uint64_t Resident = 0, Active = 0;
  for (unsigned I = 0; I != N; ++I) {
    double W = weight(I, K);
    uint64_t Capacity = P.getDeviceCapacity(Devs[K]);
    // Recomputing, a stage keeps what it receives per micro-batch in
    // flight and one micro-batch's activations, recomputed.
    uint64_t Kept = Plan && Plan->Recompute
                        ? inFlight(K, Stages) * CutBytes[Cuts.back()] + Active +
                              Activations[I]
                        : inFlight(K, Stages) * (Active + Activations[I]);
    bool Fits = Resident + this->Resident[I] + Kept <= Capacity;
    if (I != Cuts.back() && (Load + W > Limit || !Fits)) {
      // The next stage starts here. Its transfers in (activations forward,
      // their gradients back) use the links, not the devices, and overlap
      // other micro-batches' compute: they must fit the bound by
      // themselves.
      if (++K == Stages)
        return false;
      if (Balance == BalanceKind::Time && CutBytes[I]) {
        unsigned A = Devs[K - 1], B = Devs[K];
        if (2 * (C.getRouteLatency(A, B) +
                 double(CutBytes[I]) / C.getRouteBandwidth(A, B)) >
            Limit)
          return false;
      }
      Cuts.push_back(I);
      Load = 0;
      Resident = Active = 0;
      W = weight(I, K);
    }
    Load += W;
    Resident += this->Resident[I];
    Active += Activations[I];
  }
  Cuts.push_back(N);
  return true;
}

std::vector<unsigned> StageCutter::cut(unsigned Stages) const {
  double Hi = UpperBound;
  std::vector<unsigned> Cuts, Best;
  if (!fill(Hi, Stages, Best))
    return {}; // Memory: no cut into this many stages fits.
  double Lo = 0;
  for (unsigned Iter = 0; Iter != 64 && Hi - Lo > 1e-9 * Hi; ++Iter) {
    double Mid = (Lo + Hi) / 2;
    if (fill(Mid, Stages, Cuts)) {
      Hi = Mid;
      Best = Cuts;
    } else {
      Lo = Mid;
    }
  }
  return Best;
}

double StageCutter::estimate(ArrayRef<unsigned> Cuts) const {
  unsigned Stages = Cuts.size() - 1;
  double Slowest = 0;
  for (unsigned K = 0; K != Stages; ++K) {
    double Load = 0;
    for (unsigned I = Cuts[K]; I != Cuts[K + 1]; ++I)
      Load += weight(I, K);
    Slowest = std::max(Slowest, Load);
  }
  return Slowest * ((Plan ? Plan->MicroBatches : 1) + Stages - 1);
}

Error StageCutter::noFit(ArrayRef<unsigned> Cuts) const {
  const Cluster &C = P.getCluster();
  const SimResult &R = P.simulate(place(Cuts));
  unsigned Stages = Cuts.size() - 1, Worst = 0;
  uint64_t WorstOver = 0;
  for (unsigned K = 0; K != Stages; ++K) {
    uint64_t Cap = P.getDeviceCapacity(Devs[K]);
    uint64_t Peak = R.PeakBytes[Devs[K]];
    if (Peak > Cap && Peak - Cap >= WorstOver) {
      WorstOver = Peak - Cap;
      Worst = K;
    }
  }
  uint64_t Held = 0;
  for (unsigned I = Cuts[Worst]; I != Cuts[Worst + 1]; ++I)
    Held += Resident[I];
  unsigned Dev = Devs[Worst];
  uint64_t Peak = R.PeakBytes[Dev];
  std::string Hints;
  if (Plan && !Plan->Recompute)
    Hints += "pipeline{recompute=true} keeps only each stage's inputs per "
             "micro-batch; ";
  if (Plan && Plan->Schedule == PipelineScheduleKind::GPipe)
    Hints += "schedule=1f1b holds p - s micro-batches in flight at stage s "
             "of p, GPipe all of them; ";
  if (Stages < Devs.size() || !Plan)
    Hints += "more stages spread the weights; ";
  Hints += "a cluster with more or larger devices";
  return makeError(
      "place{algo=pipeline}: no cut into stages fits: the best found (" +
      Twine(Stages) + " stage" + (Stages == 1 ? "" : "s") + ") needs " +
      formatBytes(Peak) + " on " + C.getDevices()[Dev].Name + " (stage " +
      Twine(Worst) + ", " + formatBytes(P.getDeviceCapacity(Dev)) +
      "): " + formatBytes(std::min(Held, Peak)) +
      " of weights, gradients and optimizer state held all step, the rest "
      "activations of " +
      Twine(inFlight(Worst, Stages)) + " micro-batch" +
      (inFlight(Worst, Stages) == 1 ? "" : "es") +
      " in flight and transfers; " + Hints);
}

std::vector<uint32_t> StageCutter::place(ArrayRef<unsigned> Cuts) const {
  std::vector<uint32_t> Placement(P.getNumUnits(), Devs[0]);
  for (unsigned K = 0; K + 1 < Cuts.size(); ++K)
    for (unsigned I = Cuts[K]; I != Cuts[K + 1]; ++I)
      Placement[Order[I]] = Devs[K];
  return Placement;
}

/// Moves each cut of \p Cuts earlier or later by a step, halving the step
/// from an eighth of a stage to one unit, while the pipelined simulator
/// finds a faster step that fits: at most \p Budget simulations, and none
/// once \p OutOfTime says the time is up.
static void refineCuts(const PlacementProblem &P, const StageCutter &Cutter,
                       std::vector<unsigned> &Cuts, double &Step,
                       uint64_t Budget, function_ref<bool()> OutOfTime) {
  unsigned Stages = Cuts.size() - 1, N = Cuts.back();
  if (Stages < 2)
    return;
  for (unsigned Delta = std::max(1u, N / Stages / 8); Delta && Budget;
       Delta /= 2) {
    bool Improved = true;
    while (Improved && Budget) {
      Improved = false;
      for (unsigned K = 1; K != Stages && Budget; ++K)
        for (int Dir : {-1, +1}) {
          long Moved = long(Cuts[K]) + Dir * long(Delta);
          // No stage may become empty.
          if (Moved <= long(Cuts[K - 1]) || Moved >= long(Cuts[K + 1]) ||
              !Budget)
            continue;
          if (OutOfTime()) {
            Budget = 0;
            continue;
          }
          std::vector<unsigned> Trial = Cuts;
          Trial[K] = unsigned(Moved);
          --Budget;
          const SimResult &R = P.simulate(Cutter.place(Trial));
          if (!R.OOM && R.StepTime < Step) {
            Cuts = std::move(Trial);
            Step = R.StepTime;
            Improved = true;
          }
        }
    }
  }
}

static void declareOptions(OptionTable &T, PipelineOptions &O) {
  T.choice<BalanceKind>("balance", O.Balance, BalanceNames)
      .autoInteger("stages", O.Stages)
      .choice<DeviceSetKind>("devices", O.Devices, ComputeDeviceSetNames);
}

static Expected<std::vector<uint32_t>> placeStages(const PlacementProblem &P,
                                                   const PlaceOptions &Opts,
                                                   const PipelineOptions &O) {
  const Cluster &C = P.getCluster();
  BalanceKind Balance = O.Balance;
  SmallVector<unsigned, 8> Devs = getComputeDevices(C);
  if (O.Devices == DeviceSetKind::All) {
    Devs.clear();
    for (unsigned D = 0, E = C.getNumDevices(); D != E; ++D)
      Devs.push_back(D);
  }
  // Under data-parallel replicas the stages are replica 0's devices; the
  // others hold its copies.
  if (const Optional<PipelinePlan> &Plan = P.getSimGraph().getPlan();
      Plan && Plan->Replicas > 1) {
    std::vector<unsigned> Group = getReplicaGroup(C, *Plan, Devs);
    if (Group.empty())
      return makeError(
          "place{algo=pipeline}: replicas=" + Twine(Plan->Replicas) +
          " is more than the " + Twine(Devs.size()) +
          " devices it can use on '" + C.getName() + "'");
    Devs.assign(Group.begin(), Group.end());
  }
  unsigned MaxStages = Devs.size();
  if (unsigned N = O.Stages) {
    if (N > Devs.size())
      return makeError("place{algo=pipeline}: stages=" + Twine(N) +
                       " is more than the " + Twine(Devs.size()) +
                       " devices it can use on '" + C.getName() + "'");
    MaxStages = N;
  }
  unsigned NumUnits = P.getNumUnits();
  if (NumUnits == 0)
    return std::vector<uint32_t>();
  MaxStages = std::min(MaxStages, NumUnits);

  // The search's budget: seconds= (default DefaultSeconds) bounds its
  // simulations by time, half of it for the candidates below, and evals=
  // (default 400) the refinement's by count. Graphs whose simulations take
  // milliseconds never reach the time budget, and place alike every run.
  using Clock = std::chrono::steady_clock;
  Clock::time_point Began = Clock::now();
  double Seconds = Opts.Seconds > 0 ? Opts.Seconds : DefaultSeconds;
  auto Spent = [&](double Share) {
    return std::chrono::duration<double>(Clock::now() - Began).count() >
           Share * Seconds;
  };
  auto OutOfTime = [&] { return Spent(1); };
  StageCutter Cutter(P, Devs, Balance);
  // The stage counts tried: with balance=time every count up to 16, then
  // powers of two, and the most; the baselines use every device.
  SmallVector<unsigned, 16> Counts;
  if (Balance != BalanceKind::Time || O.Stages) {
    Counts.push_back(MaxStages);
  } else {
    for (unsigned K = 1; K <= MaxStages; K = K < 16 ? K + 1 : 2 * K)
      Counts.push_back(K);
    if (Counts.back() != MaxStages)
      Counts.push_back(MaxStages);
  }
  // Each candidate cut is simulated with the plan; the fastest that fits
  // wins (ties: the first, fewer stages).
  std::vector<unsigned> BestCuts;
  double BestStep = std::numeric_limits<double>::infinity();
  bool BestFits = false;
  std::vector<uint32_t> Tried;
  auto Score = [&](const std::vector<unsigned> &Cuts) {
    std::vector<uint32_t> Placement = Cutter.place(Cuts);
    if (Placement == Tried)
      return;
    Tried = Placement;
    const SimResult &R = P.simulate(Placement);
    bool Fits = !R.OOM;
    if ((Fits && !BestFits) || (Fits == BestFits && R.StepTime < BestStep)) {
      BestCuts = Cuts;
      BestStep = R.StepTime;
      BestFits = Fits;
    }
  };
  // The simulator scores the counts' cuts best estimate first, the first
  // always, the others while half the time budget is left.
  std::vector<std::pair<double, std::vector<unsigned>>> Candidates;
  for (unsigned K : Counts)
    if (std::vector<unsigned> Cuts = Cutter.cut(K); !Cuts.empty())
      Candidates.emplace_back(Cutter.estimate(Cuts), std::move(Cuts));
  llvm::stable_sort(Candidates, [](const auto &A, const auto &B) {
    return A.first < B.first;
  });
  for (const auto &Candidate : Candidates)
    if (BestCuts.empty() || !Spent(0.5))
      Score(Candidate.second);
  if (Balance == BalanceKind::Time) {
    // The baselines' cuts are candidates too: the estimate above ignores
    // how the stages' transfers and the schedule interleave, which the
    // simulator counts.
    for (BalanceKind Other : {BalanceKind::Layers, BalanceKind::Parameters})
      if (std::vector<unsigned> Cuts =
              StageCutter(P, Devs, Other).cut(MaxStages);
          !Cuts.empty() && (BestCuts.empty() || !Spent(0.5)))
        Score(Cuts);
    if (!BestCuts.empty() && BestFits)
      refineCuts(P, Cutter, BestCuts, BestStep,
                 Opts.Evaluations ? Opts.Evaluations : 400, OutOfTime);
  }
  if (BestCuts.empty()) {
    // No stage count held the memory by the estimate: the simulator's
    // account of an even cut over the most stages says where it
    // overflows.
    std::vector<unsigned> Even;
    for (unsigned K = 0; K <= MaxStages; ++K)
      Even.push_back(unsigned(uint64_t(K) * NumUnits / MaxStages));
    return Cutter.noFit(Even);
  }
  if (!BestFits)
    return Cutter.noFit(BestCuts);
  std::vector<uint32_t> Best = Cutter.place(BestCuts);
  return std::move(Best);
}

DP_DEFINE_PLACER(placePipelineStages, describePipelineStages, declareOptions,
                 placeStages)

} // namespace dp
