//===- MIPPlacer.cpp - Placement and schedule as one integer program (CBC) ===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
//
// place{algo=mip}: from the best baseline placement, levels of 16, 32, ...
// groups (up to groups=) of units that the best placement so far puts on
// one device are placed, and their jobs ordered per device, by a
// mixed-integer program in the manner of Pesto (Hafeez et al., Middleware
// 2021), solved by CBC within seconds=. The jobs are the graph's ops,
// each on its group's device (schedule=ops, and schedule=auto where that
// program has at most MaxOpRows constraints), or the groups as blocks
// (schedule=groups), or runs of one group's ops in a topological order
// (schedule=segments); auto takes the finest whose program is small:
//
//   x[g][d] in {0,1}   group g on device d (0 where the bytes g keeps on
//                      a device all step exceed d's memory)
//   s[j] >= 0          job j's start; p_d(j) its time on d, g(j) its group
//   sum_d x[g][d] = 1
//   sum_g kept(g) x[g][d] <= capacity(d)
//   s[k] >= s[j] + sum_d p_d(j) x[g(j)][d]
//               + t_e(a, b) (x[g(j)][a] + x[g(k)][b] - 1)
//                      every edge e = (j, k) (for groups: forward in
//                      topological order), every a != b, t_e the
//                      idle-route transfer time of e's bytes from a to b
//                      (and once with no transfer term; only that one
//                      where j and k share a group)
//   for j, k with no path between them, o[j][k] in {0,1}, and for every d
//   (or once, with p summed over d, where they share a group):
//     s[k] >= s[j] + p_d(j) - 2H (1 - o) - 2H (2 - x[g(j)][d] - x[g(k)][d])
//     s[j] >= s[k] + p_d(k) - 2H o       - 2H (2 - x[g(j)][d] - x[g(k)][d])
//   c >= s[j] + sum_d p_d(j) x[g(j)][d];  minimize c
//
// H is a horizon no schedule of the model needs to exceed. The model is
// the simulator's without link contention or memory over time, so its
// optimum is not the simulated step: CBC's best solution and the others
// it saved are simulated at every level, and the placer returns the best
// simulated placement that fits, never slower than the warm start (which
// is each level's first solution: for ops, its simulated schedule).
// docs/placers.md ("mip") says more.
//
//===----------------------------------------------------------------------===//

#include "Placers.h"
#include "dp/Sim/SimulatePass.h"
#include "dp/Support/Diagnostics.h"
#include "dp/Support/Options.h"

#include "llvm/ADT/BitVector.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <set>
#include <tuple>

#ifdef DP_HAVE_CBC
#include "dp/Support/CBC.h"
#endif

using namespace llvm;

namespace dp {

static constexpr StringRef Algo = "mip";
/// The first level's groups (docs/placers/mip.md); the most groups a level
/// has is groups= (256 by default, MIPOptions).
static constexpr unsigned FirstGroups = 16;
static constexpr double DefaultSeconds = 60;
/// Larger programs are refused: CBC overruns seconds= on large ones (one
/// of a million rows took 243 s with seconds=60; docs/placers.md, "mip").
static constexpr double MaxModelRows = 2e6;
/// schedule=auto schedules ops where their program has at most this many
/// constraints, else groups (docs/placers.md, "mip").
static constexpr double MaxOpRows = 1e5;
/// Beyond this many ops schedule=auto schedules groups without counting
/// the ops' program: it would exceed MaxOpRows unless nearly every pair of
/// ops is ordered by a path. And beyond MaxJobs no program is built: which
/// job reaches which is a jobs x jobs bit matrix.
static constexpr unsigned MaxAutoOps = 3000, MaxJobs = 20000;

/// What a level's program schedules (schedule=).
enum class ScheduleKind : uint8_t { Auto, Ops, Segments, Groups };
static constexpr EnumEntry<ScheduleKind> ScheduleNames[] = {
    {"auto", ScheduleKind::Auto},
    {"ops", ScheduleKind::Ops},
    {"segments", ScheduleKind::Segments},
    {"groups", ScheduleKind::Groups},
};

namespace {
struct MIPOptions {
  /// The most groups a level has.
  unsigned Groups = 256;
  ScheduleKind Schedule = ScheduleKind::Auto;
};
} // namespace

static void declareOptions(OptionTable &T, MIPOptions &O) {
  T.integer("groups", O.Groups)
      .choice<ScheduleKind>("schedule", O.Schedule, ScheduleNames);
}

#ifdef DP_HAVE_CBC
namespace {

/// Groups of \p P's units for one level: units on the same device of
/// \p Placement joined along their heaviest edges, then neighbours in
/// topological order on one device, until at most \p Groups remain (or
/// no two groups share a device). The group of each unit, dense.
std::vector<uint32_t> groupOnDevices(const PlacementProblem &P,
                                     ArrayRef<uint32_t> Placement,
                                     unsigned Groups) {
  unsigned U = P.getNumUnits();
  std::vector<uint32_t> Parent(U);
  for (unsigned I = 0; I != U; ++I)
    Parent[I] = I;
  auto Find = [&](uint32_t X) {
    while (Parent[X] != X)
      X = Parent[X] = Parent[Parent[X]];
    return X;
  };
  unsigned Count = U;
  std::vector<UnitEdge> Edges(P.getEdges().begin(), P.getEdges().end());
  std::stable_sort(
      Edges.begin(), Edges.end(),
      [](const UnitEdge &A, const UnitEdge &B) { return A.Bytes > B.Bytes; });
  for (const UnitEdge &E : Edges) {
    if (Count <= Groups)
      break;
    if (Placement[E.From] != Placement[E.To])
      continue;
    uint32_t A = Find(E.From), B = Find(E.To);
    if (A != B) {
      Parent[std::max(A, B)] = std::min(A, B);
      --Count;
    }
  }
  std::vector<uint32_t> Last(P.getNumDevices(), ~0u);
  for (uint32_t Unit : P.getTopologicalOrder()) {
    if (Count <= Groups)
      break;
    uint32_t &L = Last[Placement[Unit]];
    uint32_t A = Find(Unit);
    if (L != ~0u && Find(L) != A) {
      uint32_t B = Find(L);
      Parent[std::max(A, B)] = std::min(A, B);
      --Count;
    }
    L = Unit;
  }
  std::vector<uint32_t> Dense(U, ~0u), GroupOf(U);
  uint32_t Next = 0;
  for (unsigned I = 0; I != U; ++I) {
    uint32_t R = Find(I);
    if (Dense[R] == ~0u)
      Dense[R] = Next++;
    GroupOf[I] = Dense[R];
  }
  return GroupOf;
}

/// What one level's program schedules: jobs (the level's groups, or the
/// graph's ops), the group each belongs to (placed as one), their times,
/// the edges between them (forward in job order), and the warm start's
/// start times.
struct Jobs {
  unsigned N = 0;
  std::vector<uint32_t> Group, Order;
  std::vector<double> Time; ///< Time[J * devices + Dev]
  std::vector<UnitEdge> Edges;
  std::vector<double> Begin;
  double getTime(unsigned J, unsigned Dev, unsigned D) const {
    return Time[size_t(J) * D + Dev];
  }
};

/// The bytes each op sends the ops that read its results, one edge per
/// pair (getGroupEdges with one group per op). Weights and graph inputs
/// make none: the simulator sends them from the start of the step, so
/// they order no op after another.
std::vector<UnitEdge> getDataEdges(const Graph &G) {
  std::vector<uint32_t> Self(G.getNumOps());
  for (OpId O = 0, E = G.getNumOps(); O != E; ++O)
    Self[O] = O;
  return getGroupEdges(G, Self, /*ActivationsOnly=*/true);
}

/// Start times of the jobs in the model, each group on its device of
/// \p Start: jobs in \p J's order, each as soon as its inputs have arrived
/// and its device is free.
std::vector<double> listSchedule(const Jobs &J, const Cluster &C,
                                 ArrayRef<uint32_t> Start) {
  unsigned D = C.getNumDevices();
  std::vector<double> Begin(J.N, 0), End(J.N, 0), Free(D, 0);
  std::vector<std::vector<const UnitEdge *>> In(J.N);
  for (const UnitEdge &E : J.Edges)
    In[E.To].push_back(&E);
  for (uint32_t U : J.Order) {
    unsigned Dev = Start[J.Group[U]];
    double T = Free[Dev];
    for (const UnitEdge *E : In[U])
      T = std::max(T, End[E->From] + C.getTransferTime(Start[J.Group[E->From]],
                                                       Dev, E->Bytes));
    Begin[U] = T;
    End[U] = T + J.getTime(U, Dev, D);
    Free[Dev] = End[U];
  }
  return Begin;
}

/// The level's groups as jobs: a group runs as one block, after the
/// groups whose results it reads, in topological order (an edge that
/// closes a cycle of groups is dropped), from the model's schedule of
/// \p Start.
Jobs groupJobs(const PlacementProblem &Q, ArrayRef<uint32_t> Start) {
  Jobs J;
  unsigned D = Q.getNumDevices();
  J.N = Q.getNumUnits();
  J.Group.resize(J.N);
  for (unsigned U = 0; U != J.N; ++U)
    J.Group[U] = U;
  J.Order.assign(Q.getTopologicalOrder().begin(),
                 Q.getTopologicalOrder().end());
  J.Time.resize(size_t(J.N) * D);
  for (unsigned U = 0; U != J.N; ++U)
    for (unsigned Dev = 0; Dev != D; ++Dev)
      J.Time[size_t(U) * D + Dev] = Q.getUnitTime(U, Dev);
  std::vector<uint32_t> Position(J.N), UnitOf(Q.getGraph().getNumOps());
  for (unsigned I = 0; I != J.N; ++I)
    Position[J.Order[I]] = I;
  for (OpId O = 0, E = UnitOf.size(); O != E; ++O)
    UnitOf[O] = Q.getUnitOf(O);
  for (const UnitEdge &E :
       getGroupEdges(Q.getGraph(), UnitOf, /*ActivationsOnly=*/true))
    if (Position[E.From] < Position[E.To])
      J.Edges.push_back(E);
  J.Begin = listSchedule(J, Q.getCluster(), Start);
  return J;
}

/// Runs of ops of one group as jobs (segments): the ops in a topological
/// order that keeps to the last op's group while it has ops ready, cut
/// wherever the group changes. Each segment runs as one block; as the
/// order is topological, a segment's inputs come from earlier segments
/// only, so no edge is dropped (unlike groupJobs) and a group's forward
/// and backward ops are separate jobs.
Jobs segmentJobs(const PlacementProblem &Q, ArrayRef<uint32_t> Start) {
  const Graph &G = Q.getGraph();
  unsigned N = G.getNumOps(), D = Q.getNumDevices();
  std::vector<UnitEdge> OpEdges = getDataEdges(G);
  std::vector<unsigned> Pending(N, 0);
  std::vector<std::vector<uint32_t>> Succ(N);
  for (const UnitEdge &E : OpEdges) {
    ++Pending[E.To];
    Succ[E.From].push_back(E.To);
  }
  std::vector<std::set<uint32_t>> ReadyIn(Q.getNumUnits());
  std::set<uint32_t> Ready;
  for (uint32_t O = 0; O != N; ++O)
    if (!Pending[O]) {
      Ready.insert(O);
      ReadyIn[Q.getUnitOf(O)].insert(O);
    }
  Jobs J;
  std::vector<uint32_t> SegmentOf(N);
  uint32_t Group = ~0u;
  while (!Ready.empty()) {
    uint32_t O = Group != ~0u && !ReadyIn[Group].empty()
                     ? *ReadyIn[Group].begin()
                     : *Ready.begin();
    Ready.erase(O);
    ReadyIn[Q.getUnitOf(O)].erase(O);
    if (Q.getUnitOf(O) != Group) { // a new segment
      Group = Q.getUnitOf(O);
      J.Group.push_back(Group);
      J.Order.push_back(J.N);
      J.Time.resize(J.Time.size() + D, 0.0);
      ++J.N;
    }
    SegmentOf[O] = J.N - 1;
    for (unsigned Dev = 0; Dev != D; ++Dev)
      J.Time[size_t(J.N - 1) * D + Dev] += Q.getSimGraph().getOpTime(O, Dev);
    for (uint32_t V : Succ[O])
      if (--Pending[V] == 0) {
        Ready.insert(V);
        ReadyIn[Q.getUnitOf(V)].insert(V);
      }
  }
  J.Edges = getGroupEdges(G, SegmentOf, /*ActivationsOnly=*/true);
  J.Begin = listSchedule(J, Q.getCluster(), Start);
  return J;
}

/// The graph's ops as jobs, each placed with its group: an op waits for
/// the ops whose results it reads (weights and inputs are on their device
/// from the start), so no edge is dropped and ops of different groups
/// interleave on a device as the simulator runs them. The start times are
/// the simulated step's of \p Start, a solution of the program (transfers
/// there take at least their idle-route time).
Jobs opJobs(const PlacementProblem &Q, ArrayRef<uint32_t> Start) {
  Jobs J;
  const Graph &G = Q.getGraph();
  const SimGraph &SG = Q.getSimGraph();
  unsigned D = Q.getNumDevices();
  J.N = G.getNumOps();
  J.Group.resize(J.N);
  J.Order.resize(J.N);
  J.Time.resize(size_t(J.N) * D);
  for (OpId O = 0; O != J.N; ++O) {
    J.Group[O] = Q.getUnitOf(O);
    J.Order[O] = O; // ops are in topological order
    for (unsigned Dev = 0; Dev != D; ++Dev)
      J.Time[size_t(O) * D + Dev] = SG.getOpTime(O, Dev);
  }
  J.Edges = getDataEdges(G);
  std::vector<uint32_t> Placement = Q.expand(Start);
  Simulator Sim(SG);
  SimResult R;
  Sim.run(Placement, R, /*RecordTimeline=*/true);
  // An op's first instance, under a pipeline plan.
  J.Begin.assign(J.N, std::numeric_limits<double>::infinity());
  for (uint32_t I = 0, E = R.Ops.size(); I != E; ++I)
    J.Begin[R.getOp(I)] = std::min(J.Begin[R.getOp(I)], R.Ops[I].Start);
  return J;
}

/// What one level's program gave.
struct LevelResult {
  std::vector<uint32_t> Device; ///< per group; empty: no solution
  /// The other placements among CBC's saved solutions, best first.
  std::vector<std::vector<uint32_t>> Others;
  bool Optimal = false;
  double Objective = 0, Bound = 0; ///< the model's step and bound, seconds
  unsigned Columns = 0;
  uint64_t Rows = 0;
  double StartViolation = 0; ///< the start's worst row shortfall
};

/// Which jobs of \p J reach which, along its edges.
std::vector<BitVector> getReaches(const Jobs &J) {
  std::vector<BitVector> Reaches(J.N, BitVector(J.N));
  std::vector<std::vector<uint32_t>> Succ(J.N);
  for (const UnitEdge &E : J.Edges)
    Succ[E.From].push_back(E.To);
  for (auto It = J.Order.rbegin(); It != J.Order.rend(); ++It)
    for (uint32_t V : Succ[*It]) {
      Reaches[*It].set(V);
      Reaches[*It] |= Reaches[V];
    }
  return Reaches;
}

/// The constraints of the program for \p J over \p NG groups and \p D
/// devices, counted before it is built.
double countRows(const Jobs &J, ArrayRef<BitVector> Reaches, unsigned NG,
                 unsigned D) {
  ArrayRef<uint32_t> Grp = J.Group;
  double Rows = 2.0 * NG + D + J.N;
  for (unsigned U = 0; U != J.N; ++U)
    for (unsigned V = U + 1; V != J.N; ++V)
      if (!Reaches[U][V] && !Reaches[V][U])
        Rows += Grp[U] == Grp[V] ? 2 : 2 * D;
  for (const UnitEdge &E : J.Edges)
    Rows += Grp[E.From] == Grp[E.To] ? 1 : 1 + D * (D - 1);
  return Rows;
}

/// The mean over \p J's jobs of their fastest time (1 when that is 0):
/// the program's unit of time.
double getTimeScale(const Jobs &J, unsigned D) {
  double Scale = 0;
  for (unsigned U = 0; U != J.N; ++U) {
    double Fastest = std::numeric_limits<double>::infinity();
    for (unsigned Dev = 0; Dev != D; ++Dev)
      Fastest = std::min(Fastest, J.getTime(U, Dev, D));
    Scale += Fastest;
  }
  return Scale > 0 ? Scale / J.N : 1;
}

/// Every job at its slowest and every edge's worst move, in units of
/// \p Scale: no start or end in the program lies beyond it.
double getHorizon(const Jobs &J, const Cluster &C, double Scale) {
  unsigned D = C.getNumDevices();
  double Horizon = 0;
  for (unsigned U = 0; U != J.N; ++U) {
    double Slowest = 0;
    for (unsigned Dev = 0; Dev != D; ++Dev)
      Slowest = std::max(Slowest, J.getTime(U, Dev, D));
    Horizon += Slowest;
  }
  for (const UnitEdge &E : J.Edges) {
    double Worst = 0;
    for (unsigned A = 0; A != D; ++A)
      for (unsigned B = 0; B != D; ++B)
        Worst = std::max(Worst, C.getTransferTime(A, B, E.Bytes));
    Horizon += Worst;
  }
  return Horizon / Scale;
}

/// One level's program: columns x[g][d] (group g on device d), s[j] (job
/// j's start), the makespan, and o (u before v) for each pair of jobs that
/// no path orders, added in that order with the rows, as CBC's search
/// depends on it.
class LevelProgram {
public:
  LevelProgram(const PlacementProblem &Q, const Jobs &J,
               ArrayRef<BitVector> Reaches, double Scale, double Horizon)
      : Q(Q), C(Q.getCluster()), J(J), Reaches(Reaches), Grp(J.Group), N(J.N),
        NG(Q.getNumUnits()), D(Q.getNumDevices()), Scale(Scale),
        Horizon(Horizon), X(size_t(NG) * D, -1), S(N) {}

  /// Adds every column and row.
  void build();
  /// Loads the program with \p Start (a device per group, the jobs at
  /// J.Begin) as CBC's start; its worst row shortfall.
  double loadStart(ArrayRef<uint32_t> Start);
  /// Solves the loaded program within \p Seconds (none: infinite) and
  /// \p Nodes branch-and-bound nodes (0: no limit) into \p R.
  void solve(double Seconds, uint64_t Nodes, LevelResult &R);

private:
  /// Job U's time on Dev, in program units.
  double T(unsigned U, unsigned Dev) const {
    return J.getTime(U, Dev, D) / Scale;
  }
  /// x of job U's group on device Dev.
  int XOf(unsigned U, unsigned Dev) const { return X[Grp[U] * D + Dev]; }
  void addPlacementRows(ArrayRef<double> Resident);
  void addPrecedence(const UnitEdge &E, int A, int B, double Delay);
  void addPrecedences();
  void addOrders();
  void addMakespanRows();
  std::vector<uint32_t> readDevices(const double *Values) const;

  const PlacementProblem &Q;
  const Cluster &C;
  const Jobs &J;
  ArrayRef<BitVector> Reaches;
  ArrayRef<uint32_t> Grp;
  unsigned N, NG, D;
  double Scale, Horizon;
  CBCProgram Model;
  std::vector<int> X, S;
  int Makespan = -1;
  std::vector<std::tuple<unsigned, unsigned, int>> Pairs;
};

void LevelProgram::build() {
  // Memory, in capacities: what stays on a device all step (activations
  // come and go; the simulator checks them).
  std::vector<double> Resident(NG, 0);
  const SimGraph &SG = Q.getSimGraph();
  std::vector<uint64_t> OpBytes = getResidentBytes(SG);
  for (uint32_t I = 0, E = OpBytes.size(); I != E; ++I)
    Resident[Q.getUnitOf(SG.getBaseOp(I))] += double(OpBytes[I]);
  for (unsigned U = 0; U != NG; ++U)
    for (unsigned Dev = 0; Dev != D; ++Dev) {
      bool Fits = Resident[U] <= double(Q.getDeviceCapacity(Dev));
      X[U * D + Dev] = Model.addColumn(0, Fits ? 1 : 0, 0, true);
    }
  for (unsigned U = 0; U != N; ++U)
    S[U] = Model.addColumn(0, Horizon, 0, false);
  Makespan = Model.addColumn(0, Horizon, 1, false);
  addPlacementRows(Resident);
  addPrecedences();
  addOrders();
  addMakespanRows();
}

/// One device per group, and each device's resident bytes within its
/// capacity.
void LevelProgram::addPlacementRows(ArrayRef<double> Resident) {
  for (unsigned U = 0; U != NG; ++U) { // one device each: >= 1 and <= 1
    std::vector<int> Cols;
    for (unsigned Dev = 0; Dev != D; ++Dev)
      Cols.push_back(X[U * D + Dev]);
    Model.addRow(Cols, std::vector<double>(D, 1.0), 'G', 1);
    Model.addRow(Cols, std::vector<double>(D, -1.0), 'G', -1);
  }
  for (unsigned Dev = 0; Dev != D; ++Dev) { // memory, in capacities
    std::vector<int> Cols;
    std::vector<double> Coefs;
    double Capacity = double(Q.getDeviceCapacity(Dev));
    for (unsigned U = 0; U != NG; ++U)
      if (Resident[U] > 0) {
        Cols.push_back(X[U * D + Dev]);
        Coefs.push_back(-Resident[U] / Capacity);
      }
    if (!Cols.empty())
      Model.addRow(Cols, Coefs, 'G', -1);
  }
}

// s[v] - s[u] - sum_d p_d(u) x[u][d] (- t x[u][a] - t x[v][b]) >= (-t).
void LevelProgram::addPrecedence(const UnitEdge &E, int A, int B,
                                 double Delay) {
  std::vector<int> Cols{S[E.To], S[E.From]};
  std::vector<double> Coefs{1, -1};
  for (unsigned Dev = 0; Dev != D; ++Dev) {
    double Coef = -T(E.From, Dev) - (int(Dev) == A ? Delay : 0);
    Cols.push_back(XOf(E.From, Dev));
    Coefs.push_back(Coef);
  }
  if (B >= 0) {
    Cols.push_back(XOf(E.To, B));
    Coefs.push_back(-Delay);
  }
  Model.addRow(Cols, Coefs, 'G', B >= 0 ? -Delay : 0);
}

/// A job starts after each job it reads from ends, plus the transfer when
/// their groups are on different devices.
void LevelProgram::addPrecedences() {
  for (const UnitEdge &E : J.Edges) {
    addPrecedence(E, -1, -1, 0);
    if (Grp[E.From] == Grp[E.To])
      continue; // one device: no transfer
    for (unsigned A = 0; A != D; ++A)
      for (unsigned B = 0; B != D; ++B)
        if (A != B && C.getTransferTime(A, B, E.Bytes) > 0)
          addPrecedence(E, int(A), int(B),
                        C.getTransferTime(A, B, E.Bytes) / Scale);
  }
}

/// Two jobs that no path orders do not overlap on one device.
void LevelProgram::addOrders() {
  // Starts lie in [0, H] and times are at most H: a term of 2H frees a
  // pair's ordering constraint whenever one of its conditions is off.
  double BigM = 2 * Horizon;
  for (unsigned U = 0; U != N; ++U)
    for (unsigned V = U + 1; V != N; ++V) {
      if (Reaches[U][V] || Reaches[V][U])
        continue;
      int O = Model.addColumn(0, 1, 0, true); // 1: u before v
      Pairs.emplace_back(U, V, O);
      if (Grp[U] == Grp[V]) { // one device, whichever it is
        // s[v] >= s[u] + sum_d p_d(u) x[g][d] - M (1 - o).
        std::vector<int> Cols{S[V], S[U], O};
        std::vector<double> Before{1, -1, -BigM}, After{-1, 1, BigM};
        for (unsigned Dev = 0; Dev != D; ++Dev) {
          Cols.push_back(XOf(U, Dev));
          Before.push_back(-T(U, Dev));
        }
        Model.addRow(Cols, Before, 'G', -BigM);
        // s[u] >= s[v] + sum_d p_d(v) x[g][d] - M o.
        for (unsigned Dev = 0; Dev != D; ++Dev) {
          Cols[3 + Dev] = XOf(V, Dev);
          After.push_back(-T(V, Dev));
        }
        Model.addRow(Cols, After, 'G', 0);
        continue;
      }
      for (unsigned Dev = 0; Dev != D; ++Dev) {
        int XU = XOf(U, Dev), XV = XOf(V, Dev);
        // s[v] >= s[u] + p_d(u) - M (1 - o) - M (2 - x[u][d] - x[v][d]):
        // s[v] - s[u] - M o - M x[u][d] - M x[v][d] >= p_d(u) - 3M.
        Model.addRow({S[V], S[U], O, XU, XV}, {1, -1, -BigM, -BigM, -BigM}, 'G',
                     T(U, Dev) - 3 * BigM);
        // s[u] >= s[v] + p_d(v) - M o - M (2 - x[u][d] - x[v][d]).
        Model.addRow({S[U], S[V], O, XU, XV}, {1, -1, BigM, -BigM, -BigM}, 'G',
                     T(V, Dev) - 2 * BigM);
      }
    }
}

/// The makespan is at least every job's end.
void LevelProgram::addMakespanRows() {
  for (unsigned U = 0; U != N; ++U) {
    std::vector<int> Cols{Makespan, S[U]};
    std::vector<double> Coefs{1, -1};
    for (unsigned Dev = 0; Dev != D; ++Dev) {
      Cols.push_back(XOf(U, Dev));
      Coefs.push_back(-T(U, Dev));
    }
    Model.addRow(Cols, Coefs, 'G', 0);
  }
}

double LevelProgram::loadStart(ArrayRef<uint32_t> Start) {
  std::vector<int> Idx;
  std::vector<double> Val;
  double End = 0;
  for (unsigned U = 0; U != NG; ++U)
    for (unsigned Dev = 0; Dev != D; ++Dev) {
      Idx.push_back(X[U * D + Dev]);
      Val.push_back(Start[U] == Dev ? 1 : 0);
    }
  for (unsigned U = 0; U != N; ++U) {
    Idx.push_back(S[U]);
    Val.push_back(J.Begin[U] / Scale);
    End = std::max(End, J.Begin[U] / Scale + T(U, Start[Grp[U]]));
  }
  for (const auto &[U, V, O] : Pairs) {
    // u first when it starts first, or at once and ends first (an op of
    // no time that ran just before the other).
    double EndU = J.Begin[U] + J.getTime(U, Start[Grp[U]], D),
           EndV = J.Begin[V] + J.getTime(V, Start[Grp[V]], D);
    bool First =
        J.Begin[U] != J.Begin[V] ? J.Begin[U] < J.Begin[V] : EndU <= EndV;
    Idx.push_back(O);
    Val.push_back(First ? 1 : 0);
  }
  Idx.push_back(Makespan);
  Val.push_back(End);
  Model.load();
  Cbc_setMIPStartI(Model.get(), int(Idx.size()), Idx.data(), Val.data());
  std::vector<double> All(size_t(Model.getNumColumns()), 0);
  for (size_t I = 0; I != Idx.size(); ++I)
    All[Idx[I]] = Val[I];
  return Model.getViolation(All);
}

/// The device of each group in the solution \p Values.
std::vector<uint32_t> LevelProgram::readDevices(const double *Values) const {
  std::vector<uint32_t> Device(NG, 0);
  for (unsigned U = 0; U != NG; ++U)
    for (unsigned Dev = 0; Dev != D; ++Dev)
      if (Values[X[U * D + Dev]] > 0.5)
        Device[U] = Dev;
  return Device;
}

void LevelProgram::solve(double Seconds, uint64_t Nodes, LevelResult &R) {
  R.Columns = unsigned(Model.getNumColumns());
  R.Rows = Model.getNumRows();
  if (std::isfinite(Seconds))
    Cbc_setMaximumSeconds(Model.get(), Seconds);
  if (Nodes)
    Cbc_setMaximumNodes(Model.get(), int(std::min<uint64_t>(Nodes, INT32_MAX)));
  // CBC 2.10's preprocessing crashes (CglPreProcess::postProcess) when
  // the time limit stops a search of a few thousand columns; without it
  // the search runs on the program as built.
  Cbc_setParameter(Model.get(), "preprocess", "off");
  Cbc_setParameter(Model.get(), "maxSavedSolutions", "16");
  Cbc_solve(Model.get());
  const double *Sol = Cbc_bestSolution(Model.get()); // null: none feasible
  if (!Sol)
    return;
  R.Optimal = Cbc_isProvenOptimal(Model.get());
  R.Objective = Cbc_getObjValue(Model.get()) * Scale;
  R.Bound = std::max(0.0, Cbc_getBestPossibleObjValue(Model.get()) * Scale);
  R.Device = readDevices(Sol);
  for (int I = 0, E = Cbc_numberSavedSolutions(Model.get()); I != E; ++I) {
    std::vector<uint32_t> Other =
        readDevices(Cbc_savedSolution(Model.get(), I));
    if (Other != R.Device && !is_contained(R.Others, Other))
      R.Others.push_back(std::move(Other));
  }
}

/// Builds the program for the jobs \p J of \p Q's groups and solves it
/// within \p Seconds (none: infinite) and \p Nodes branch-and-bound nodes
/// (0: no limit) from \p Start (a device per group), or fails if the
/// program would exceed \p RowLimit constraints.
Expected<LevelResult> solveLevel(const PlacementProblem &Q, const Jobs &J,
                                 ArrayRef<uint32_t> Start, double Seconds,
                                 uint64_t Nodes, StringRef Who,
                                 double RowLimit) {
  unsigned N = J.N, NG = Q.getNumUnits(), D = Q.getNumDevices();
  if (N > MaxJobs)
    return makeError(Who + ": " + Twine(N) + " jobs to order, more than " +
                     Twine(MaxJobs) + "; schedule groups (schedule=groups)");
  std::vector<BitVector> Reaches = getReaches(J);
  double Rows = countRows(J, Reaches, NG, D);
  if (Rows > RowLimit)
    return makeError(Who + ": " + Twine(NG) + " groups give a program of " +
                     Twine(uint64_t(Rows)) + " constraints, more than " +
                     Twine(uint64_t(RowLimit)) + "; give fewer groups");
  // Times in units of the mean job's fastest time.
  double Scale = getTimeScale(J, D);
  double Horizon = getHorizon(J, Q.getCluster(), Scale);
  // Beyond 1e9 mean jobs' times, big-M terms swamp the solver's
  // tolerances (and CLP stops the process on some such programs).
  if (!std::isfinite(Scale) || !(Horizon <= 1e9))
    return makeError(Who + ": the groups' times span too wide a range for "
                           "the program (more than 1e9 times the mean "
                           "group's)");
  if (Horizon <= 0) { // nothing takes time: the start is optimal
    LevelResult R;
    R.Device.assign(Start.begin(), Start.end());
    R.Optimal = true;
    return R;
  }
  LevelProgram Program(Q, J, Reaches, Scale, Horizon);
  Program.build();
  LevelResult R;
  R.StartViolation = Program.loadStart(Start);
  Program.solve(Seconds, Nodes, R);
  return R;
}

/// The problem whose units are \p GroupOf's groups of \p P's units;
/// renumbers \p GroupOf as the problem numbers its units.
Expected<PlacementProblem> groupProblem(const PlacementProblem &P,
                                        std::vector<uint32_t> &GroupOf) {
  const Graph &G = P.getGraph();
  std::vector<uint32_t> OpGroup(G.getNumOps()), Dense(P.getNumUnits(), ~0u);
  uint32_t Next = 0;
  for (OpId O = 0, E = G.getNumOps(); O != E; ++O) {
    uint32_t Grp = GroupOf[P.getUnitOf(O)];
    if (Dense[Grp] == ~0u)
      Dense[Grp] = Next++;
    OpGroup[O] = Dense[Grp];
  }
  for (uint32_t &Grp : GroupOf)
    Grp = Dense[Grp];
  return PlacementProblem::build(G, P.getCluster(), std::move(OpGroup));
}

/// Solves the level of \p Q's groups (a level of \p P) from \p Start:
/// with the jobs \p Schedule names, or for auto the finest whose program
/// stays within MaxOpRows (groups at any size). \p Kind is set to the
/// jobs solved.
Expected<LevelResult>
solveLevelJobs(const PlacementProblem &P, const PlacementProblem &Q,
               ArrayRef<uint32_t> Start, ScheduleKind Schedule, double Time,
               uint64_t Nodes, StringRef Who, ScheduleKind &Kind) {
  Kind = Schedule;
  for (ScheduleKind K :
       {ScheduleKind::Ops, ScheduleKind::Segments, ScheduleKind::Groups}) {
    if (Schedule != ScheduleKind::Auto && Schedule != K)
      continue;
    if (Schedule == ScheduleKind::Auto && K == ScheduleKind::Ops &&
        P.getGraph().getNumOps() > MaxAutoOps)
      continue;
    Kind = K;
    bool Fallback = Schedule == ScheduleKind::Auto && K != ScheduleKind::Groups;
    Jobs J = K == ScheduleKind::Ops        ? opJobs(Q, Start)
             : K == ScheduleKind::Segments ? segmentJobs(Q, Start)
                                           : groupJobs(Q, Start);
    Expected<LevelResult> Result = solveLevel(
        Q, J, Start, Time, Nodes, Who, Fallback ? MaxOpRows : MaxModelRows);
    if (Result || !Fallback)
      return Result;
    consumeError(Result.takeError()); // too large: coarser jobs
  }
  llvm_unreachable("groups are always tried");
}

/// CBC's best solution and the others it saved, each simulated as a
/// placement of \p P's units.
struct SolutionsTried {
  std::vector<uint32_t> Fastest; ///< the fastest that fits; empty: none
  double FastestStep = 0;
  /// The simulated step of CBC's best, and whether it overflows.
  double Model = 0;
  bool ModelOOM = false;
  unsigned Tried = 0;
};

/// Simulates \p R's solutions, a device per group of \p GroupOf: the
/// fastest that fits counts (the model has no link contention, so its
/// order among them is not the simulator's).
SolutionsTried trySolutions(const PlacementProblem &P,
                            ArrayRef<uint32_t> GroupOf, const LevelResult &R) {
  SolutionsTried T;
  unsigned Units = P.getNumUnits();
  std::vector<uint32_t> Placement(Units);
  for (unsigned I = 0; I <= R.Others.size(); ++I) {
    ArrayRef<uint32_t> Device = I ? R.Others[I - 1] : R.Device;
    for (unsigned U = 0; U != Units; ++U)
      Placement[U] = Device[GroupOf[U]];
    const SimResult &Sim = P.simulate(Placement);
    ++T.Tried;
    if (!I) {
      T.Model = Sim.StepTime;
      T.ModelOOM = Sim.OOM;
    }
    if (Sim.OOM || (!T.Fastest.empty() && Sim.StepTime >= T.FastestStep))
      continue;
    T.Fastest = Placement;
    T.FastestStep = Sim.StepTime;
  }
  return T;
}

/// The progress line's start for a level of \p Groups groups: "16 groups,
/// ops scheduled (716 columns, 6046 rows, start inside): ".
std::string describeLevel(unsigned Groups, ScheduleKind Kind,
                          const LevelResult &R) {
  return (Twine(Groups) + " groups, " +
          getEnumName<ScheduleKind>(ScheduleNames, Kind) + " scheduled (" +
          Twine(R.Columns) + " columns, " + Twine(R.Rows) + " rows, start " +
          (R.StartViolation > 1e-6 ? "outside" : "inside") + "): ")
      .str();
}

/// The rest of the line for a level that found solutions \p T.
std::string describeSolutions(const LevelResult &R, const SolutionsTried &T,
                              bool Better) {
  return ((R.Optimal ? "optimal" : "stopped") + Twine(", model step ") +
          formatSeconds(R.Objective) + ", model bound " +
          formatSeconds(R.Bound) + "; simulated " + formatSeconds(T.Model) +
          (T.ModelOOM ? " (out of memory)" : "") +
          (T.Tried > 1
               ? ", the fastest of its " + Twine(T.Tried) +
                     " solutions that fits " +
                     (T.Fastest.empty() ? Twine("none")
                                        : Twine(formatSeconds(T.FastestStep)))
               : Twine()) +
          (Better ? ", the best so far" : ""))
      .str();
}

} // namespace
#endif

static Expected<std::vector<uint32_t>> placeByProgram(const PlacementProblem &P,
                                                      const PlaceOptions &Opts,
                                                      const MIPOptions &O) {
  std::string Who = getPlacerWho(Algo);
#ifndef DP_HAVE_CBC
  return makeError(Who + ": unavailable: dp was built without CBC "
                         "(coinor-libcbc-dev); install it and reconfigure");
#else
  // evals= alone bounds each level's branch-and-bound nodes and sets no
  // time limit, so that a run is reproducible; seconds= bounds the time.
  uint64_t Nodes = Opts.Evaluations;
  double Seconds = Opts.Seconds > 0 ? Opts.Seconds
                   : Nodes          ? std::numeric_limits<double>::infinity()
                                    : DefaultSeconds;
  auto Began = std::chrono::steady_clock::now();
  auto Left = [&] {
    return Seconds - std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - Began)
                         .count();
  };
  auto Say = [&](const Twine &Line) {
    if (Opts.Progress)
      *Opts.Progress << "mip: " << Line << '\n';
  };

  // The warm start: the best baseline placement that fits; when none
  // does, the levels start from every unit on the first device.
  BestSeed Warm = runSeeds(P, getBaselinePlacers(), Opts, 0, 0);
  std::vector<uint32_t> Best = Warm.Placement;
  double BestStep = Warm.StepTime;
  bool Fits = !Best.empty();
  Say(Fits ? "warm start " + formatSeconds(BestStep) + " (" +
                 Warm.Placer.str() + ")"
           : Twine("no baseline placement fits"));
  if (!Fits)
    Best.assign(P.getNumUnits(), 0);
  unsigned Units = P.getNumUnits();
  if (Units == 0 || P.getNumDevices() < 2) {
    if (!Fits)
      return makeNoFitErrorFromSim(P, Algo, Best, P.simulate(Best));
    return std::move(Best);
  }

  // Levels: FirstGroups groups, then twice as many, up to groups= (and
  // the units); each from the best placement so far, with half the time
  // left (the last with all of it).
  unsigned First = std::min({FirstGroups, O.Groups, Units}),
           Top = std::min(O.Groups, Units);
  for (unsigned Groups = First;; Groups = std::min(2 * Groups, Top)) {
    double Budget = Left();
    if (Budget <= 0)
      break;
    bool Last = Groups == Top;
    std::vector<uint32_t> GroupOf = groupOnDevices(P, Best, Groups);
    Expected<PlacementProblem> Q = groupProblem(P, GroupOf);
    if (!Q)
      return Q.takeError();
    std::vector<uint32_t> Start(Q->getNumUnits());
    for (unsigned U = 0; U != Units; ++U)
      Start[GroupOf[U]] = Best[U];
    ScheduleKind Kind;
    Expected<LevelResult> R = solveLevelJobs(
        P, *Q, Start, O.Schedule, Last ? Budget : Budget / 2, Nodes, Who, Kind);
    if (!R) {
      if (Groups == First)
        return R.takeError();
      Say(toString(R.takeError()) + "; stopping at the last level");
      break;
    }
    std::string Line = describeLevel(Q->getNumUnits(), Kind, *R);
    if (R->Device.empty()) {
      Say(Line + "CBC found no solution");
    } else {
      SolutionsTried T = trySolutions(P, GroupOf, *R);
      bool Better = !T.Fastest.empty() && (!Fits || T.FastestStep < BestStep);
      Say(Line + describeSolutions(*R, T, Better));
      if (Better) {
        Best = std::move(T.Fastest);
        BestStep = T.FastestStep;
        Fits = true;
      }
    }
    if (Last)
      break;
  }
  if (!Fits)
    return makeNoFitErrorFromSim(P, Algo, Best, P.simulate(Best));
  return std::move(Best);
#endif
}

DP_DEFINE_PLACER(placeMIP, describeMIP, declareOptions, placeByProgram)

} // namespace dp
