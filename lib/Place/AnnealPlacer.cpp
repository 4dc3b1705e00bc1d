//===- AnnealPlacer.cpp - Simulated annealing over unit moves -------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Local search scored by the simulator: start from the fastest placement
/// that fits among those of every other placer, then move units (alone or
/// as a run of consecutive units) to other devices and swap the devices of
/// two units, accepting a worse step time with the Metropolis probability
/// of a geometrically cooling temperature. The best placement seen is
/// returned, so the result is never slower than its seed. docs/placers.md
/// states the neighbourhood and the schedule.
///
/// With curve=FILE the search records a point per scored placement (the
/// place pass writes them, as for the learned placers); on a terminal it
/// says how far it got at most once a second.
///
//===----------------------------------------------------------------------===//

#include "Placers.h"
#include "dp/Support/Diagnostics.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <random>

using namespace llvm;

namespace dp {

namespace {
/// A unit's device before a move, to undo it.
struct UnitMove {
  uint32_t Unit, From;
};

/// The annealing state: the current placement, per unit and per op (what
/// the simulator reads), and the moves of the step being tried.
class AnnealState {
public:
  AnnealState(const PlacementProblem &P, ArrayRef<uint32_t> Start)
      : P(P), Sim(P.getSimGraph()), Units(Start.begin(), Start.end()),
        Ops(P.expand(Start)) {}

  const PlacementProblem &P;
  Simulator Sim;
  SimResult R;
  std::vector<uint32_t> Units, Ops;
  SmallVector<UnitMove, 64> Trial;

  void move(uint32_t U, uint32_t Dev) {
    Trial.push_back({U, Units[U]});
    set(U, Dev);
  }
  void undo() {
    for (const UnitMove &M : reverse(Trial))
      set(M.Unit, M.From);
    Trial.clear();
  }
  const SimResult &simulate(bool Record = false) {
    Sim.run(Ops, R, Record);
    return R;
  }

private:
  void set(uint32_t U, uint32_t Dev) {
    Units[U] = Dev;
    for (uint32_t O : P.getUnitOps(U))
      Ops[O] = Dev;
  }
};
} // namespace

static constexpr StringLiteral Algo = "anneal";

/// Temperature at the start and at the end of the budget, relative to the
/// current step time: a move 0.3 % slower is accepted with probability
/// 1/e at first, one 0.001 % slower at the end. (Hotter starts did worse
/// on the bundled models: the seeds are good, and the budget is short.)
static constexpr double StartTemperature = 3e-3, EndTemperature = 1e-5;
/// The time budget without seconds=.
static constexpr double DefaultSeconds = 10;

/// Bytes over capacity summed over devices, each relative to its capacity.
static double getRelativeOverflow(const PlacementProblem &P,
                                  const SimResult &R) {
  double Over = 0;
  for (unsigned Dev = 0, E = P.getNumDevices(); Dev != E; ++Dev) {
    uint64_t Cap = P.getDeviceCapacity(Dev);
    if (R.PeakBytes[Dev] > Cap)
      Over += double(R.PeakBytes[Dev] - Cap) / double(Cap);
  }
  return Over;
}

/// What the search minimizes: the step time, multiplied up by how far the
/// step overflows device memory (only while no placement fits).
static double getCost(const PlacementProblem &P, const SimResult &R) {
  if (!R.OOM)
    return R.StepTime;
  return R.StepTime * (1 + 10 * getRelativeOverflow(P, R));
}

namespace {
struct AnnealOptions {
  /// The placers seeds= names; empty: every placer that does not search
  /// itself.
  std::vector<const PlacerInfo *> Seeds;
};
} // namespace

/// Reads seeds=A:B:... (any placer but anneal, learned ones included).
static Error parseSeeds(StringRef List, AnnealOptions &O) {
  SmallVector<StringRef, 8> Names;
  List.split(Names, ':', -1, /*KeepEmpty=*/false);
  O.Seeds.clear();
  for (StringRef Name : Names) {
    const PlacerInfo *Info = lookupPlacer(Name);
    if (!Info || Info->Name == Algo) {
      std::string Known;
      for (const PlacerInfo &I : getPlacers())
        if (I.Name != Algo)
          Known += (Known.empty() ? "" : ", ") + I.Name.str();
      return makeError("'" + Name +
                       "' cannot seed the search (seeds= takes placers "
                       "separated by ':' among " +
                       Known + ")");
    }
    O.Seeds.push_back(Info);
  }
  return Error::success();
}

static void declareOptions(OptionTable &T, AnnealOptions &O) {
  T.custom(
      "seeds", "NAME:NAME...",
      [&O](StringRef List) { return parseSeeds(List, O); },
      [&O] {
        std::string List;
        for (const PlacerInfo *Info : O.Seeds)
          List += (List.empty() ? "" : ":") + Info->Name.str();
        return List.empty() ? std::vector<std::string>()
                            : std::vector<std::string>{List};
      });
}

/// The placers that seed the search: those of seeds=, or every placer that
/// does not search itself.
static SmallVector<const PlacerInfo *, 8>
getSeedPlacers(const AnnealOptions &O) {
  SmallVector<const PlacerInfo *, 8> Seeds(O.Seeds.begin(), O.Seeds.end());
  if (Seeds.empty())
    for (const PlacerInfo *Info : getBaselinePlacers())
      Seeds.push_back(Info);
  return Seeds;
}

/// Contiguous runs of the topological order over all devices, each with a
/// share of the static memory estimate proportional to its capacity: the
/// start when no seed placement fits.
static std::vector<uint32_t> spreadByMemory(const PlacementProblem &P) {
  ArrayRef<uint32_t> Order = P.getTopologicalOrder();
  unsigned D = P.getNumDevices();
  double Total = 0, Capacity = 0;
  for (uint32_t U : Order)
    Total += double(P.getUnitMemory(U));
  for (unsigned Dev = 0; Dev != D; ++Dev)
    Capacity += double(P.getDeviceCapacity(Dev));
  std::vector<uint32_t> Placement(Order.size());
  unsigned Dev = 0;
  double Seen = 0, Limit = Total * double(P.getDeviceCapacity(0)) / Capacity;
  for (uint32_t U : Order) {
    Seen += double(P.getUnitMemory(U));
    while (Dev + 1 < D && Seen > Limit) {
      ++Dev;
      Limit += Total * double(P.getDeviceCapacity(Dev)) / Capacity;
    }
    Placement[U] = Dev;
  }
  return Placement;
}

/// Where the search records its curve: only when a file asks for it (a
/// point per scored placement is many points).
static std::vector<CurvePoint> *getCurve(const PlaceOptions &Opts) {
  return Opts.CurveFile.empty() ? nullptr : Opts.Curve;
}

/// Where the search says how far it got: a terminal only, where a line a
/// second helps someone waiting; a log gets nothing.
static raw_ostream *getProgress(const PlaceOptions &Opts) {
  return Opts.Progress && Opts.Progress->is_displayed() ? Opts.Progress
                                                        : nullptr;
}

/// A point of the curve after \p Samples placements, the best that fits
/// costing \p BestCost (none yet: \p Fits is false).
static CurvePoint makeCurvePoint(uint64_t Samples, double Seconds,
                                 double BestCost, bool Fits,
                                 double SampleSeconds) {
  CurvePoint Point;
  Point.Samples = Samples;
  Point.Seconds = Seconds;
  Point.BestSeconds = Fits ? BestCost : std::numeric_limits<double>::infinity();
  Point.SampleSeconds = SampleSeconds;
  return Point;
}

namespace {
/// The search from a seed placement: the clock and the evaluation budget,
/// the random source, the critical units, and the best placement seen.
class AnnealSearch {
public:
  AnnealSearch(const PlacementProblem &P, const PlaceOptions &Opts,
               std::vector<uint32_t> Seed, double SeedCost, bool Fits)
      : P(P), N(P.getNumUnits()), D(P.getNumDevices()), Edges(P.getEdges()),
        Order(P.getTopologicalOrder()),
        Nbrs(GroupAdjacency::build(N, Edges, /*Out=*/true, /*In=*/true)),
        Pos(N), MaxRun(std::max(2u, N / (2 * D))), Start(Clock::now()),
        Seconds(Opts.Seconds > 0 ? Opts.Seconds : DefaultSeconds),
        MaxEvals(Opts.Evaluations), S(P, Seed), Cost(SeedCost), Rng(Opts.Seed),
        CriticalStamp(N, 0), Best(std::move(Seed)), BestCost(SeedCost),
        Fits(Fits), Curve(getCurve(Opts)), Scored(Opts.Scored),
        Progress(getProgress(Opts)) {
    for (unsigned I = 0; I != N; ++I)
      Pos[Order[I]] = I;
  }

  /// Searches until the budget is spent; the best placement seen.
  Expected<std::vector<uint32_t>> run();

private:
  using Clock = std::chrono::steady_clock;

  double getElapsed() const {
    return std::chrono::duration<double>(Clock::now() - Start).count();
  }
  uint64_t uniform(uint64_t Bound) {
    return std::uniform_int_distribution<uint64_t>(0, Bound - 1)(Rng);
  }
  uint32_t pickOtherDevice(uint32_t Dev) {
    uint32_t To = uniform(D - 1);
    return To >= Dev ? To + 1 : To;
  }
  void refreshCritical();
  /// Records the placement just scored (\p R), once the best was updated,
  /// on the curve and the progress line.
  void noteEvaluation(const SimResult &R);
  void printProgress(bool Final);
  std::pair<uint32_t, uint32_t> pickMove();
  void swapUnits(uint32_t U, uint32_t To);
  void moveRun(uint32_t U, uint32_t To);
  void tryStep(double Temperature);

  const PlacementProblem &P;
  unsigned N, D;
  ArrayRef<UnitEdge> Edges;
  ArrayRef<uint32_t> Order;
  GroupAdjacency Nbrs;
  /// Each unit's place in Order.
  std::vector<uint32_t> Pos;
  /// Runs of up to this many consecutive units move together.
  unsigned MaxRun;

  // The budget is the search's: the seed placers had their own.
  Clock::time_point Start;
  double Seconds;
  uint64_t MaxEvals;

  AnnealState S;
  double Cost;
  std::mt19937_64 Rng;
  std::uniform_real_distribution<double> Unit01{0.0, 1.0};

  // Units holding the ops of the current placement's critical path,
  // refreshed (a recorded simulation, counted as an evaluation) at most
  // every RefreshEvery evaluations after the current placement changed.
  static constexpr uint64_t RefreshEvery = 32;
  std::vector<uint32_t> Critical, CriticalStamp;
  uint32_t Stamp = 0;
  bool Stale = true;
  uint64_t Evals = 0, LastRefresh = 0;

  std::vector<uint32_t> Best;
  double BestCost;
  bool Fits;

  std::vector<CurvePoint> *Curve;
  uint64_t *Scored;
  llvm::raw_ostream *Progress;
  double LastPrinted = -1;
};
} // namespace

void AnnealSearch::noteEvaluation(const SimResult &R) {
  if (Scored)
    *Scored = Evals;
  if (Curve)
    Curve->push_back(
        makeCurvePoint(Evals, getElapsed(), BestCost, Fits, R.StepTime));
  printProgress(/*Final=*/false);
}

void AnnealSearch::printProgress(bool Final) {
  if (!Progress)
    return;
  double Now = getElapsed();
  if (!Final && (Now < 1.0 || Now - LastPrinted < 1.0))
    return;
  LastPrinted = Now;
  *Progress << formatv("{0}: {1} placements scored ({2:f0}/s), best ", Algo,
                       Evals, Now > 0 ? double(Evals) / Now : 0.0);
  if (Fits)
    *Progress << formatv("{0:f2} ms", BestCost * 1e3);
  else
    *Progress << "none fits";
  *Progress << formatv(", {0:f1} of {1:f1} s\n", Now, Seconds);
  Progress->flush();
}

void AnnealSearch::refreshCritical() {
  const SimResult &R = S.simulate(/*Record=*/true);
  ++Evals;
  LastRefresh = Evals;
  Stale = false;
  Critical.clear();
  ++Stamp;
  for (uint32_t I : R.CriticalPath) {
    uint32_t U = P.getUnitOf(R.getOp(I));
    if (CriticalStamp[U] != Stamp) {
      CriticalStamp[U] = Stamp;
      Critical.push_back(U);
    }
  }
}

/// Picks a unit and a device to send it to.
std::pair<uint32_t, uint32_t> AnnealSearch::pickMove() {
  uint32_t U, To;
  double Pick = Unit01(Rng);
  if (Pick < 0.4 && !Critical.empty()) {
    U = Critical[uniform(Critical.size())];
    unsigned Degree = Nbrs.getDegree(U);
    uint32_t Toward = Degree ? S.Units[Nbrs[U][uniform(Degree)]] : S.Units[U];
    To = Toward != S.Units[U] && Unit01(Rng) < 0.5
             ? Toward
             : pickOtherDevice(S.Units[U]);
  } else if (Pick < 0.7 && !Edges.empty()) {
    // Pull one end of a cut edge to the other's device; else anywhere.
    const UnitEdge &E = Edges[uniform(Edges.size())];
    bool Flip = uniform(2);
    U = Flip ? E.From : E.To;
    uint32_t Other = Flip ? E.To : E.From;
    To = S.Units[Other] != S.Units[U] ? S.Units[Other]
                                      : pickOtherDevice(S.Units[U]);
  } else {
    U = uniform(N);
    To = pickOtherDevice(S.Units[U]);
  }
  return {U, To};
}

/// Moves \p U to \p To and swaps it with a unit there, if one is found
/// soon; rather one with a neighbour on U's device.
void AnnealSearch::swapUnits(uint32_t U, uint32_t To) {
  uint32_t From = S.Units[U];
  int Partner = -1;
  for (unsigned Try = 0; Try != 16; ++Try) {
    uint32_t V = uniform(N);
    if (S.Units[V] != To)
      continue;
    if (Partner < 0)
      Partner = V;
    if (any_of(Nbrs[V], [&](uint32_t W) { return S.Units[W] == From; })) {
      Partner = V;
      break;
    }
  }
  if (Partner >= 0)
    S.move(Partner, From);
  S.move(U, To);
}

/// Moves to \p To a run of consecutive units in topological order, those on
/// U's device, starting or ending at \p U.
void AnnealSearch::moveRun(uint32_t U, uint32_t To) {
  uint32_t From = S.Units[U];
  unsigned Len = 2 + uniform(MaxRun - 1);
  bool Forward = uniform(2);
  for (unsigned K = 0; K != Len; ++K) {
    int64_t I = Forward ? int64_t(Pos[U]) + K : int64_t(Pos[U]) - K;
    if (I < 0 || I >= int64_t(N))
      break;
    uint32_t V = Order[I];
    if (S.Units[V] == From)
      S.move(V, To);
  }
}

/// Makes one move, simulates it, and keeps or undoes it.
void AnnealSearch::tryStep(double Temperature) {
  auto [U, To] = pickMove();
  double Kind = Unit01(Rng);
  if (Kind < 0.2)
    swapUnits(U, To);
  else if (Kind < 0.5)
    moveRun(U, To);
  else
    S.move(U, To);

  const SimResult &R = S.simulate();
  ++Evals;
  if (Fits && R.OOM) {
    S.undo();
    return;
  }
  double NewCost = getCost(P, R);
  double Delta = (NewCost - Cost) / Cost;
  if (Delta > 0 && Unit01(Rng) >= std::exp(-Delta / Temperature)) {
    S.undo();
    return;
  }
  S.Trial.clear();
  Cost = NewCost;
  Stale = true;
  // Any placement that fits beats every one that does not; once one
  // fits, placements that do not are rejected above.
  bool Better = R.OOM ? NewCost < BestCost : !Fits || NewCost < BestCost;
  if (!Better)
    return;
  Fits = !R.OOM;
  Best = S.Units;
  BestCost = NewCost;
}

Expected<std::vector<uint32_t>> AnnealSearch::run() {
  while (true) {
    if (MaxEvals && Evals >= MaxEvals)
      break;
    double Progress =
        MaxEvals ? double(Evals) / double(MaxEvals) : getElapsed() / Seconds;
    if (getElapsed() >= Seconds || Progress >= 1)
      break;
    double Temperature = StartTemperature *
                         std::pow(EndTemperature / StartTemperature, Progress);
    if (Stale && (Evals == 0 || Evals - LastRefresh >= RefreshEvery))
      refreshCritical();
    else
      tryStep(Temperature);
    noteEvaluation(S.R);
  }
  if (LastPrinted >= 0)
    printProgress(/*Final=*/true);
  if (!Fits)
    return makeNoFitErrorFromSim(P, Algo, Best, P.simulate(Best));
  return std::move(Best);
}

BestSeed runSeeds(const PlacementProblem &P, ArrayRef<const PlacerInfo *> Seeds,
                  const PlaceOptions &Opts, double SearchSeconds,
                  uint64_t SearchEvaluations) {
  BestSeed Best;
  for (const PlacerInfo *Info : Seeds) {
    PlaceOptions SeedOpts;
    SeedOpts.Algo = Info->Name.str();
    SeedOpts.Seed = Opts.Seed;
    if (Info->Searches) {
      SeedOpts.Seconds = SearchSeconds;
      SeedOpts.Evaluations = SearchEvaluations;
      Best.Evaluations += SearchEvaluations;
    }
    Expected<std::vector<uint32_t>> Placement = Info->Run(P, SeedOpts);
    if (!Placement) {
      consumeError(Placement.takeError());
      continue;
    }
    const SimResult &R = P.simulate(*Placement);
    if (R.OOM || (!Best.Placement.empty() && R.StepTime >= Best.StepTime))
      continue;
    Best.Placement = std::move(*Placement);
    Best.StepTime = R.StepTime;
    Best.Placer = Info->Name;
  }
  return Best;
}

std::vector<const PlacerInfo *> getBaselinePlacers() {
  std::vector<const PlacerInfo *> Baselines;
  for (const PlacerInfo &Info : getPlacers())
    if (!Info.Searches)
      Baselines.push_back(&Info);
  return Baselines;
}

static Expected<std::vector<uint32_t>>
placeByAnnealing(const PlacementProblem &P, const PlaceOptions &Opts,
                 const AnnealOptions &O) {
  SmallVector<const PlacerInfo *, 8> Seeds = getSeedPlacers(O);

  // Seeds that search themselves (a learned placer named in seeds=) share
  // half of anneal's budget, seconds= and evals= alike; the search anneals
  // in what they leave.
  unsigned Searching =
      count_if(Seeds, [](const PlacerInfo *Info) { return Info->Searches; });
  double Seconds = Opts.Seconds > 0 ? Opts.Seconds : DefaultSeconds;
  auto Began = std::chrono::steady_clock::now();

  BestSeed Seed =
      runSeeds(P, Seeds, Opts, Seconds / 2 / std::max(1u, Searching),
               Opts.Evaluations / 2 / std::max(1u, Searching));
  uint64_t SeedEvals = Seed.Evaluations;
  std::vector<uint32_t> Best = std::move(Seed.Placement);
  double BestCost = Seed.StepTime;
  bool Fits = !Best.empty();
  if (!Fits) {
    Best = spreadByMemory(P);
    BestCost = getCost(P, P.simulate(Best));
  }
  PlaceOptions Left = Opts;
  Left.Seconds = Seconds - std::chrono::duration<double>(
                               std::chrono::steady_clock::now() - Began)
                               .count();
  if (Opts.Evaluations)
    Left.Evaluations = Opts.Evaluations - SeedEvals;
  // Nothing to search: no choice, a step that takes no time, or no budget
  // left after the seeds.
  if (P.getNumUnits() == 0 || P.getNumDevices() < 2 || BestCost <= 0 ||
      Left.Seconds <= 0) {
    // The curve is the seed alone.
    if (std::vector<CurvePoint> *Curve = getCurve(Opts))
      Curve->push_back(
          makeCurvePoint(0, Seconds - Left.Seconds, BestCost, Fits, BestCost));
    if (!Fits)
      return makeNoFitErrorFromSim(P, Algo, Best, P.simulate(Best));
    return std::move(Best);
  }
  return AnnealSearch(P, Left, std::move(Best), BestCost, Fits).run();
}

DP_DEFINE_PLACER(placeAnneal, describeAnneal, declareOptions, placeByAnnealing)

} // namespace dp
