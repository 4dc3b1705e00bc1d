//===- PathBound.cpp - The head, work and tail bound ----------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
//
// A bound that couples the critical path with the devices' capacity and
// with the transfers that joins and forks force (the head-tail and
// energetic reasoning of scheduling theory).
//
// Heads and tails. head(v) bounds from below when v can start in any
// placement, tail(v) how long the step lasts after v ends; ops take their
// fastest time. A transfer of B bytes takes at least the smallest route
// latency plus B over the largest route bandwidth. For an op w with
// predecessors p, each p either shares w's device or not. One that does
// not makes w wait for p's end and the transfer of what w reads from it;
// those that do run on w's device, one at a time, before w, so for each
// head h the ones with heads >= h end no earlier than h plus their times
// (a single machine with release dates). head(w) is the least, over the
// choices, of the largest of these; choosing by a threshold on what the
// remote ones cost covers every choice, as keeping more on the device
// never lowers its part. tail(w) is the same over w's successors (their
// tails as delivery times). With one predecessor this is the longest path.
//
// Then, for every op v, step >= head(v) + time(v) + tail(v). And for a set
// S of ops, with a the smallest head and b the smallest tail in S: no op
// of S starts before a, the last of them to end ends at some f with the
// step lasting until at least f + b, and between a and f the devices did
// S's work, so
//
//   step >= a + W(S) / R + b,
//
// W(S) being S's work at the ops' fastest times and R the work the devices
// can do per second in those units: each device contributes its best speed
// relative to the fastest device over any op (1 for the fastest type, less
// for a device slower on every op), and a shared group at most its
// capacity times its best member's.
//
// dp takes the best over the sets S(a, b) = {v : head(v) >= a and tail(v)
// >= b}, for every head a and tail b that some op has: ops are added in
// decreasing head, and a segment tree over the tails holds, per b,
// b + W(S(a, b)) / R, with range additions and a maximum over the tails
// the added ops reach (those sets are not empty). With a = b = 0 this is
// work / R, at least work / devices. O(n log n), and O(k^2) for an op of k
// predecessors or successors up to MaxJoin of them.
//
//===----------------------------------------------------------------------===//

#include "BoundHelpers.h"
#include "dp/Sim/Simulator.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace dp {

namespace {
/// Maximum over a range of values under additions to ranges.
class MaxAddTree {
public:
  explicit MaxAddTree(const std::vector<double> &Init) : N(Init.size()) {
    Size = 1;
    while (Size < N)
      Size *= 2;
    Max.assign(2 * Size, -std::numeric_limits<double>::infinity());
    Add.assign(2 * Size, 0.0);
    std::copy(Init.begin(), Init.end(), Max.begin() + Size);
    for (size_t I = Size - 1; I != 0; --I)
      Max[I] = std::max(Max[2 * I], Max[2 * I + 1]);
  }
  /// Adds \p V to every value in [0, Last].
  void addPrefix(size_t Last, double V) { add(1, 0, Size - 1, Last, V); }
  /// The largest value in [0, Last].
  double maxPrefix(size_t Last) const { return max(1, 0, Size - 1, Last); }

private:
  void add(size_t Node, size_t Lo, size_t Hi, size_t Last, double V) {
    if (Lo > Last)
      return;
    if (Hi <= Last) {
      Max[Node] += V;
      Add[Node] += V;
      return;
    }
    size_t Mid = (Lo + Hi) / 2;
    add(2 * Node, Lo, Mid, Last, V);
    add(2 * Node + 1, Mid + 1, Hi, Last, V);
    Max[Node] = std::max(Max[2 * Node], Max[2 * Node + 1]) + Add[Node];
  }
  double max(size_t Node, size_t Lo, size_t Hi, size_t Last) const {
    if (Lo > Last)
      return -std::numeric_limits<double>::infinity();
    if (Hi <= Last)
      return Max[Node];
    size_t Mid = (Lo + Hi) / 2;
    return std::max(max(2 * Node, Lo, Mid, Last),
                    max(2 * Node + 1, Mid + 1, Hi, Last)) +
           Add[Node];
  }

  size_t N, Size;
  std::vector<double> Max, Add;
};

/// A predecessor of an op (for its head) or a successor (for its tail).
struct Neighbour {
  uint32_t Op;
  /// Its head (or tail), its fastest time, and the op's head (or tail)
  /// through it if the two are on different devices.
  double Key, Time, Remote;
};

/// Beyond this many neighbours an op's bound is the plain longest path.
constexpr size_t MaxJoin = 256;

/// A lower bound on an op's head from its predecessors (or on its tail
/// from its successors): the least, over which of them share its device,
/// of the bound that choice forces. Those on other devices give their
/// Remote. Those on its device run there one at a time before it (after
/// it, for tails), so for each key k the ones with keys >= k take at least
/// k plus their times. Putting a neighbour on another device never helps
/// once the largest Remote there is fixed, so trying the neighbours in
/// decreasing Remote as the first on other devices covers every choice.
double joinBound(std::vector<Neighbour> &Ns) {
  // One entry per neighbour: its largest transfer.
  std::sort(Ns.begin(), Ns.end(), [](const Neighbour &A, const Neighbour &B) {
    return A.Op != B.Op ? A.Op < B.Op : A.Remote > B.Remote;
  });
  Ns.erase(std::unique(Ns.begin(), Ns.end(),
                       [](const Neighbour &A, const Neighbour &B) {
                         return A.Op == B.Op;
                       }),
           Ns.end());
  double Path = 0;
  for (const Neighbour &N : Ns)
    Path = std::max(Path, N.Key + N.Time);
  if (Ns.size() < 2 || Ns.size() > MaxJoin)
    return Path;
  std::sort(Ns.begin(), Ns.end(), [](const Neighbour &A, const Neighbour &B) {
    return A.Remote > B.Remote;
  });
  // Local: the neighbours on the op's device, by increasing key.
  std::vector<std::pair<double, double>> Local;
  double Best = std::numeric_limits<double>::infinity();
  for (size_t I = 0; I <= Ns.size(); ++I) {
    double Serial = 0, Sum = 0;
    for (size_t J = Local.size(); J-- != 0;) {
      Sum += Local[J].second;
      Serial = std::max(Serial, Local[J].first + Sum);
    }
    double Away = I != Ns.size() ? Ns[I].Remote : 0;
    Best = std::min(Best, std::max(Serial, Away));
    if (Serial >= Away || I == Ns.size())
      break; // more on the device only adds
    std::pair<double, double> Next{Ns[I].Key, Ns[I].Time};
    Local.insert(std::upper_bound(Local.begin(), Local.end(), Next), Next);
  }
  return std::max(Path, Best);
}
} // namespace

double computeHeadWorkTailBound(const SimGraph &G) {
  unsigned NumOps = G.getNumOps(), D = G.getNumDevices();
  if (!NumOps || !D)
    return 0;
  // Fastest times, and each device's best speed relative to them.
  std::vector<double> Fastest, Speed(D, 0.0);
  if (!getFastestTimes(G, Fastest))
    return 0;
  for (uint32_t Op = 0; Op != NumOps; ++Op) {
    double F = Fastest[Op];
    for (unsigned Dev = 0; Dev != D; ++Dev) {
      double T = G.getTime(Op, Dev);
      Speed[Dev] = std::max(Speed[Dev], T > 0 ? F / T : 1.0);
    }
  }
  const Cluster &C = G.getCluster();
  double Rate = 0;
  for (unsigned Dev = 0; Dev != D; ++Dev)
    if (C.getSharedGroup(Dev) < 0)
      Rate += Speed[Dev];
  for (unsigned GrpIdx = 0, E = C.getSharedGroups().size(); GrpIdx != E;
       ++GrpIdx) {
    const SharedGroup &Grp = C.getSharedGroups()[GrpIdx];
    double Best = 0, Sum = 0;
    for (unsigned Dev : Grp.Devices) {
      Best = std::max(Best, Speed[Dev]);
      Sum += Speed[Dev];
    }
    Rate += std::min(Sum, Best * G.getGroupCapacity(GrpIdx));
  }
  if (!(Rate > 0))
    return 0;

  // Heads in op order (ops are topologically ordered), tails in reverse,
  // each counting what transfers a join or a fork must pay.
  LeastTransfer Transfer(C);
  std::vector<double> Head(NumOps, 0.0), Tail(NumOps, 0.0);
  std::vector<Neighbour> Ns;
  for (uint32_t Op = 0; Op != NumOps; ++Op) {
    Ns.clear();
    for (unsigned I = G.OpInputsBegin[Op]; I != G.OpInputsBegin[Op + 1]; ++I) {
      uint32_t Tensor = G.OpInputs[I], P = G.TensorProducer[Tensor];
      if (P != ~0u)
        Ns.push_back({P, Head[P], Fastest[P],
                      Head[P] + Fastest[P] + Transfer(G.TensorBytes[Tensor])});
    }
    Head[Op] = joinBound(Ns);
  }
  for (uint32_t Op = NumOps; Op-- != 0;) {
    Ns.clear();
    for (unsigned I = G.OpResultsBegin[Op]; I != G.OpResultsBegin[Op + 1];
         ++I) {
      uint32_t Tensor = G.OpResults[I];
      double Move = Transfer(G.TensorBytes[Tensor]);
      for (unsigned J = G.ConsumersBegin[Tensor];
           J != G.ConsumersBegin[Tensor + 1]; ++J) {
        uint32_t Reader = G.Consumers[J];
        Ns.push_back({Reader, Tail[Reader], Fastest[Reader],
                      Move + Fastest[Reader] + Tail[Reader]});
      }
    }
    Tail[Op] = joinBound(Ns);
  }

  // The distinct tails, ascending, and each op's rank among them.
  std::vector<double> Tails(Tail);
  std::sort(Tails.begin(), Tails.end());
  Tails.erase(std::unique(Tails.begin(), Tails.end()), Tails.end());
  MaxAddTree Tree(Tails);
  std::vector<uint32_t> ByHead(NumOps);
  std::iota(ByHead.begin(), ByHead.end(), 0);
  std::sort(ByHead.begin(), ByHead.end(),
            [&](uint32_t A, uint32_t B) { return Head[A] > Head[B]; });
  double Bound = 0;
  for (uint32_t Op = 0; Op != NumOps; ++Op)
    Bound = std::max(Bound, Head[Op] + Fastest[Op] + Tail[Op]);
  size_t Reach = 0; // the largest tail rank of an added op
  for (size_t I = 0; I != NumOps;) {
    double A = Head[ByHead[I]];
    for (; I != NumOps && Head[ByHead[I]] == A; ++I) {
      uint32_t Op = ByHead[I];
      size_t Rank = std::lower_bound(Tails.begin(), Tails.end(), Tail[Op]) -
                    Tails.begin();
      Tree.addPrefix(Rank, Fastest[Op] / Rate);
      Reach = std::max(Reach, Rank);
    }
    Bound = std::max(Bound, A + Tree.maxPrefix(Reach));
  }
  // The sums above round; shave what they may have added.
  return Bound * (1 - 1e-9);
}

} // namespace dp
