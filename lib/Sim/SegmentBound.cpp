//===- SegmentBound.cpp - Cut the step at its narrow points, bound each ---===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
//
// The step is a chain of segments wherever the graph narrows to one op:
// an op v that every op of interest either precedes or follows (a cut).
// Between two consecutive cuts u and v, the ops that follow u and precede
// v (v included) all start after u ends and end when v ends at the
// latest, so in any placement and schedule the step lasts at least the
// sum, over the segments, of the least time in which a segment's ops can
// run after its first cut. Ops in no segment are left out, which only
// lowers the sum.
//
// Which ops: those the critical path's last op waits for (the optimizer's
// other updates, which nothing waits for, are left out), that also follow
// its first op (constants, and the loss's seed, which depend on nothing,
// are left out). The cuts are the critical path's ops that all of those
// precede or follow.
//
// Each segment's least time is bounded from below by a mixed-integer
// program, a relaxation of the simulator (CBC, within a share of the
// time limit; its best bound counts whatever its status):
//
//   x[j][d] in {0,1}  op j on device d; sum_d x[j][d] = 1
//   e[j] = s[j] + sum_d t_d(j) x[j][d]  (its time on d)
//   y[p][j] >= x[p][d] - x[j][d]  (every d): p, j on different devices
//   s[j] >= e[p] + T(p, j) y[p][j]  every edge p -> j in the segment, T
//                     the least idle-route transfer time of its bytes
//   s[j] >= sum_{i < j} t_d(i) x[i][d] - M (1 - x[j][d])  every d: j's
//                     ancestors in the segment that share its device ran
//                     there, one at a time, before it
//   c >= e[j]; minimize c
//
// with times from the first cut's end, which is a job of no time whose
// device is chosen too. The simulator runs an op on a device for at least
// its time, one op at a time, and a result reaches another device no
// earlier than its idle route allows, so each of its schedules restricted
// to a segment is a solution of that program: the program's optimum, and
// CBC's bound on it, is at most the segment's part of the step. The
// program leaves out link contention, memory, and the ops on a device
// that do not precede one another. Since T is the least over routes, the
// program does not tell devices of one type apart; the first cut goes on
// the first device of each type only.
//
//===----------------------------------------------------------------------===//

#include "BoundHelpers.h"
#include "dp/Sim/Simulator.h"

#include "llvm/ADT/ArrayRef.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>

using namespace llvm;

#ifdef DP_HAVE_CBC
#include "dp/Support/CBC.h"
#endif

namespace dp {

namespace {

/// The largest segment given to the solver; a larger one counts its
/// critical path only.
constexpr unsigned MaxSegmentOps = 400;

/// The ops of interest, the cuts, and the segments between them.
struct Segments {
  /// Per segment, its ops in topological (id) order, the last being the
  /// cut that ends it unless it is the last segment; and the cut before
  /// it, or ~0u for the first.
  std::vector<std::vector<uint32_t>> Ops;
  std::vector<uint32_t> Before;
};

class Decomposer {
public:
  explicit Decomposer(const SimGraph &G, const std::vector<double> &Fastest)
      : Fastest(Fastest), N(G.getNumOps()) {
    Preds.resize(N);
    Succs.resize(N);
    for (uint32_t Op = 0; Op != N; ++Op) {
      for (uint32_t T : G.getInputs(Op))
        if (uint32_t P = G.getProducer(T); P != ~0u)
          Preds[Op].push_back(P);
      std::sort(Preds[Op].begin(), Preds[Op].end());
      Preds[Op].erase(std::unique(Preds[Op].begin(), Preds[Op].end()),
                      Preds[Op].end());
      for (uint32_t P : Preds[Op])
        Succs[P].push_back(Op);
    }
  }

  Segments run() {
    Segments S;
    std::vector<uint32_t> Path = criticalPath();
    if (Path.empty())
      return S;
    // Of interest: ancestors of the path's last op that follow its first.
    std::vector<uint8_t> All(N, 1), In(N);
    std::vector<uint32_t> Up(N, ~0u), Down(N, ~0u);
    grow(Path.back(), Preds, All, Up, 0);
    grow(Path.front(), Succs, All, Down, 0);
    unsigned Count = 0;
    for (uint32_t Op = 0; Op != N; ++Op)
      Count += In[Op] = Up[Op] != ~0u && Down[Op] != ~0u;
    // A path op is a cut when its ancestors and descendants among those of
    // interest, itself included, are all of them. Along the path the
    // ancestors only grow and the descendants only shrink, so one search
    // each way, resumed from op to op, counts them all: O(ops + edges).
    // Join[op]: the first path position whose ancestors include op.
    std::vector<uint32_t> Join(N, ~0u);
    std::vector<unsigned> Below(Path.size()), Above(Path.size());
    unsigned Seen = 0;
    for (size_t I = 0; I != Path.size(); ++I) {
      Seen += grow(Path[I], Preds, In, Join, uint32_t(I));
      Below[I] = Seen;
    }
    std::vector<uint32_t> Reached(N, ~0u);
    Seen = 0;
    for (size_t I = Path.size(); I-- != 0;) {
      Seen += grow(Path[I], Succs, In, Reached, uint32_t(I));
      Above[I] = Seen;
    }
    std::vector<size_t> Cuts; // path positions
    for (size_t I = 0; I != Path.size(); ++I)
      if (Below[I] + Above[I] == Count + 1)
        Cuts.push_back(I);
    // Segment k: the ops that join the ancestors after cut k-1, up to cut
    // k (the rest, for the last). Every op of interest joins them, by the
    // path's last op at the latest.
    std::vector<std::vector<uint32_t>> Ops(Cuts.size() + 1);
    for (uint32_t Op = 0; Op != N; ++Op)
      if (In[Op])
        Ops[std::lower_bound(Cuts.begin(), Cuts.end(), size_t(Join[Op])) -
            Cuts.begin()]
            .push_back(Op);
    for (size_t K = 0; K != Ops.size(); ++K) {
      if (Ops[K].empty())
        continue;
      S.Ops.push_back(std::move(Ops[K]));
      S.Before.push_back(K ? Path[Cuts[K - 1]] : ~0u);
    }
    return S;
  }

  const std::vector<std::vector<uint32_t>> &getPreds() const { return Preds; }

private:
  /// Marks \p From and the unmarked ops it reaches along \p Edges within
  /// \p In with \p Mark; returns how many it marked.
  unsigned grow(uint32_t From, const std::vector<std::vector<uint32_t>> &Edges,
                const std::vector<uint8_t> &In, std::vector<uint32_t> &Marks,
                uint32_t Mark) const {
    if (Marks[From] != ~0u)
      return 0;
    unsigned Count = 1;
    Marks[From] = Mark;
    std::vector<uint32_t> Stack{From};
    while (!Stack.empty()) {
      uint32_t Op = Stack.back();
      Stack.pop_back();
      for (uint32_t Next : Edges[Op])
        if (In[Next] && Marks[Next] == ~0u) {
          Marks[Next] = Mark;
          ++Count;
          Stack.push_back(Next);
        }
    }
    return Count;
  }

  /// The longest path at the ops' fastest times without transfers.
  std::vector<uint32_t> criticalPath() const {
    std::vector<double> Finish(N, 0.0);
    std::vector<uint32_t> From(N, ~0u);
    uint32_t Last = ~0u;
    for (uint32_t Op = 0; Op != N; ++Op) {
      double Start = 0;
      for (uint32_t P : Preds[Op])
        if (From[Op] == ~0u || Finish[P] > Start) {
          Start = Finish[P];
          From[Op] = P;
        }
      Finish[Op] = Start + Fastest[Op];
      if (Last == ~0u || Finish[Op] > Finish[Last])
        Last = Op;
    }
    std::vector<uint32_t> Path;
    for (uint32_t Op = Last; Op != ~0u; Op = From[Op])
      Path.push_back(Op);
    std::reverse(Path.begin(), Path.end());
    return Path;
  }

  const std::vector<double> &Fastest;
  uint32_t N;
  std::vector<std::vector<uint32_t>> Preds, Succs;
};

/// The longest path through \p Ops (topologically ordered) at the
/// fastest times: what a segment counts without the solver.
double segmentPath(ArrayRef<uint32_t> Ops,
                   const std::vector<std::vector<uint32_t>> &Preds,
                   const std::vector<double> &Fastest) {
  std::vector<double> Finish(Ops.size());
  double Longest = 0;
  for (size_t I = 0; I != Ops.size(); ++I) {
    double Start = 0;
    for (uint32_t P : Preds[Ops[I]]) {
      auto It = std::lower_bound(Ops.begin(), Ops.begin() + I, P);
      if (It != Ops.begin() + I && *It == P)
        Start = std::max(Start, Finish[It - Ops.begin()]);
    }
    Finish[I] = Start + Fastest[Ops[I]];
    Longest = std::max(Longest, Finish[I]);
  }
  return Longest;
}

#ifdef DP_HAVE_CBC
/// CBC's bound on one segment's program (module comment), in seconds.
class SegmentProgram {
public:
  SegmentProgram(const SimGraph &G,
                 const std::vector<std::vector<uint32_t>> &Preds)
      : G(G), Preds(Preds), D(G.getNumDevices()), Transfer(G.getCluster()) {
    const Cluster &C = G.getCluster();
    // The first device of each type: where the first cut may go.
    for (unsigned Dev = 0; Dev != D; ++Dev) {
      bool First = true;
      for (unsigned Other = 0; Other != Dev; ++Other)
        First &= C.getDevices()[Other].Type != C.getDevices()[Dev].Type;
      if (First)
        Representatives.push_back(Dev);
    }
  }

  /// The bound for \p Ops after the cut \p Before (~0u: none), within
  /// \p Seconds; \p Solved says whether CBC proved it optimal.
  double solve(ArrayRef<uint32_t> Ops, uint32_t Before, double Seconds,
               bool &Solved) {
    // Times in microseconds: the solver's tolerances are absolute.
    const double Scale = 1e6;
    CBCProgram Program;
    auto Col = [&](double Lo, double Hi, double Obj, bool Int) {
      return Program.addColumn(Lo, Hi, Obj, Int);
    };
    auto Row = [&](ArrayRef<int> Idx, ArrayRef<double> Co, char Sense,
                   double Rhs) { Program.addRow(Idx, Co, Sense, Rhs); };
    // Jobs: the cut before (of no time), then the segment's ops.
    std::vector<uint32_t> Jobs;
    if (Before != ~0u)
      Jobs.push_back(Before);
    Jobs.insert(Jobs.end(), Ops.begin(), Ops.end());
    size_t J = Jobs.size(), First = Before != ~0u;
    auto Index = [&](uint32_t Op) -> int {
      auto It = std::lower_bound(Jobs.begin() + First, Jobs.end(), Op);
      if (It != Jobs.end() && *It == Op)
        return int(It - Jobs.begin());
      return Before == Op ? 0 : -1;
    };
    // A device on which an op has no finite time does not take it.
    auto Runs = [&](size_t I, unsigned Dev) {
      return I < First || std::isfinite(G.getTime(Jobs[I], Dev));
    };
    auto Time = [&](size_t I, unsigned Dev) {
      return I < First || !Runs(I, Dev) ? 0.0 : G.getTime(Jobs[I], Dev) * Scale;
    };
    // No start in an optimal solution exceeds every op's slowest time plus
    // every edge's transfer, one after another.
    double Horizon = 0;
    for (size_t I = First; I != J; ++I) {
      double Slowest = 0;
      for (unsigned Dev = 0; Dev != D; ++Dev)
        Slowest = std::max(Slowest, Time(I, Dev));
      Horizon += Slowest;
      for (uint32_t P : Preds[Jobs[I]])
        if (Index(P) >= 0)
          Horizon += transferTime(P, Jobs[I]) * Scale;
    }
    std::vector<std::vector<int>> X(J, std::vector<int>(D));
    std::vector<int> S(J);
    for (size_t I = 0; I != J; ++I) {
      for (unsigned Dev = 0; Dev != D; ++Dev) {
        bool Allowed = Runs(I, Dev) &&
                       (I >= First || std::count(Representatives.begin(),
                                                 Representatives.end(), Dev));
        X[I][Dev] = Col(0, Allowed ? 1 : 0, 0, true);
      }
      S[I] = Col(0, I < First ? 0 : Horizon, 0, false);
      std::vector<int> Idx(X[I]);
      Row(Idx, std::vector<double>(D, 1.0), 'E', 1);
    }
    int C = Col(0, Horizon * 2, 1, false);
    for (size_t I = First; I != J; ++I) {
      // c >= s + sum_d t_d x_d.
      std::vector<int> Idx{C, S[I]};
      std::vector<double> Co{1, -1};
      for (unsigned Dev = 0; Dev != D; ++Dev) {
        Idx.push_back(X[I][Dev]);
        Co.push_back(-Time(I, Dev));
      }
      Row(Idx, Co, 'G', 0);
      // Edges from the segment's ops and the cut before.
      uint32_t Op = Jobs[I];
      for (uint32_t P : Preds[Op]) {
        int Pi = Index(P);
        if (Pi < 0)
          continue;
        double T = transferTime(P, Op) * Scale;
        int Y = Col(0, 1, 0, false);
        for (unsigned Dev = 0; Dev != D; ++Dev)
          Row({Y, X[Pi][Dev], X[I][Dev]}, {1, -1, 1}, 'G', 0);
        // s_j >= s_p + sum_d t_d(p) x_pd + T y.
        std::vector<int> E{S[I], S[Pi], Y};
        std::vector<double> Ec{1, -1, -T};
        for (unsigned Dev = 0; Dev != D; ++Dev) {
          E.push_back(X[Pi][Dev]);
          Ec.push_back(-Time(Pi, Dev));
        }
        Row(E, Ec, 'G', 0);
      }
      // s_j >= sum_{i anc j} t_d(i) x_id - M (1 - x_jd).
      std::vector<uint8_t> Anc = ancestors(Jobs, First, I);
      for (unsigned Dev = 0; Dev != D; ++Dev) {
        std::vector<int> Idx{S[I]};
        std::vector<double> Co{1};
        double Big = 0;
        for (size_t A = First; A != I; ++A)
          if (Anc[A] && Time(A, Dev) > 0) {
            Idx.push_back(X[A][Dev]);
            Co.push_back(-Time(A, Dev));
            Big += Time(A, Dev);
          }
        if (Idx.size() == 1)
          continue;
        Idx.push_back(X[I][Dev]);
        Co.push_back(-Big);
        Row(Idx, Co, 'G', -Big);
      }
    }
    Program.load();
    Cbc_Model *M = Program.get();
    Cbc_setMaximumSeconds(M, std::max(Seconds, 0.01));
    Cbc_setParameter(M, "threads", "1");
    Cbc_solve(M);
    Solved = Cbc_isProvenOptimal(M);
    // A program with no solution (it always has one) or a failed solve
    // bounds nothing.
    bool Failed = Cbc_isProvenInfeasible(M) || Cbc_isAbandoned(M);
    double Bound = Cbc_getBestPossibleObjValue(M);
    if (Failed || !std::isfinite(Bound) || Bound < 0 || Bound > 2 * Horizon) {
      Solved = false;
      return 0;
    }
    // Shave what the solver's tolerances (1e-6 on integrality, 1e-7 on
    // rows, against big-M terms of up to the segment's work) may have
    // added.
    return std::max(0.0, Bound * (1 - 1e-5) - 1e-4) / Scale;
  }

private:
  double transferTime(uint32_t Producer, uint32_t Consumer) const {
    // The largest tensor the consumer reads from the producer: the whole
    // of it crosses the route if they are apart.
    uint64_t Bytes = 0;
    bool Any = false;
    for (uint32_t T : G.getInputs(Consumer))
      if (G.getProducer(T) == Producer) {
        Bytes = std::max(Bytes, G.getBytes(T));
        Any = true;
      }
    return Any ? Transfer(Bytes) : 0;
  }

  /// Which jobs before \p I (from \p First on) are ancestors of job I.
  std::vector<uint8_t> ancestors(const std::vector<uint32_t> &Jobs,
                                 size_t First, size_t I) const {
    std::vector<uint8_t> Anc(Jobs.size());
    std::vector<size_t> Stack{I};
    while (!Stack.empty()) {
      size_t K = Stack.back();
      Stack.pop_back();
      for (uint32_t P : Preds[Jobs[K]]) {
        auto It = std::lower_bound(Jobs.begin() + First, Jobs.end(), P);
        if (It == Jobs.end() || *It != P)
          continue;
        size_t Pi = It - Jobs.begin();
        if (!Anc[Pi]) {
          Anc[Pi] = 1;
          Stack.push_back(Pi);
        }
      }
    }
    return Anc;
  }

  const SimGraph &G;
  const std::vector<std::vector<uint32_t>> &Preds;
  unsigned D;
  LeastTransfer Transfer;
  std::vector<unsigned> Representatives;
};
#endif // DP_HAVE_CBC

} // namespace

bool hasSegmentBoundSolver() {
#ifdef DP_HAVE_CBC
  return true;
#else
  return false;
#endif
}

double computeSegmentBound(const SimGraph &G, double Seconds,
                           SegmentBoundInfo *Info) {
  SegmentBoundInfo Local;
  SegmentBoundInfo &I = Info ? *Info : Local;
  I = SegmentBoundInfo();
  unsigned N = G.getNumOps(), D = G.getNumDevices();
  if (!hasSegmentBoundSolver() || !(Seconds > 0) || !N || !D)
    return 0;
  auto Start = std::chrono::steady_clock::now();
  std::vector<double> Fastest;
  if (!getFastestTimes(G, Fastest))
    return 0;
  Decomposer Dec(G, Fastest);
  Segments S = Dec.run();
  I.Segments = S.Ops.size();
  double Bound = 0;
#ifdef DP_HAVE_CBC
  SegmentProgram Program(G, Dec.getPreds());
  auto Elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         Start)
        .count();
  };
  // Per segment, its best bound so far: its critical path to begin with.
  std::vector<double> Best(S.Ops.size());
  std::vector<size_t> Open; // segments the solver takes, not yet exact
  for (size_t K = 0; K != S.Ops.size(); ++K) {
    const std::vector<uint32_t> &Ops = S.Ops[K];
    Best[K] = segmentPath(Ops, Dec.getPreds(), Fastest) * (1 - 1e-9);
    if (Ops.size() == 1)
      ++I.Exact;
    else if (Ops.size() <= MaxSegmentOps)
      Open.push_back(K);
  }
  // Two rounds: half the time in equal shares, then what is left in equal
  // shares to the segments not solved exactly, in a larger share each.
  for (int Round = 0; Round != 2 && !Open.empty(); ++Round) {
    double Budget = (Round == 0 ? Seconds / 2 : Seconds) - Elapsed();
    std::vector<size_t> Unsolved;
    for (size_t J = 0; J != Open.size(); ++J) {
      size_t K = Open[J];
      double Share = std::max(0.0, Budget) / double(Open.size() - J);
      double RoundStart = Elapsed();
      bool Solved = false;
      double B = Program.solve(S.Ops[K], S.Before[K], Share, Solved);
      Budget -= Elapsed() - RoundStart;
      Best[K] = std::max(Best[K], B);
      if (Solved)
        ++I.Exact;
      else
        Unsolved.push_back(K);
    }
    Open = std::move(Unsolved);
  }
  for (double B : Best)
    Bound += B;
#endif
  I.Seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - Start)
          .count();
  return Bound * (1 - 1e-9);
}

} // namespace dp
