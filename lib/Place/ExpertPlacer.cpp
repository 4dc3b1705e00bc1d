//===- ExpertPlacer.cpp - The papers' human-expert placements -------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Generic forms of the hand-made placements the papers compare with:
/// recurrent layers round-robin over the GPUs (GNMT, Placeto's NMT expert),
/// contiguous pipeline stages of equal compute, or the branches of
/// fork-join blocks (Inception's Mixed blocks) across the GPUs. Units then
/// shift to the next device until the simulated step fits in memory.
/// docs/placers.md states the rules precisely.
///
//===----------------------------------------------------------------------===//

#include "Placers.h"
#include "dp/IR/Annotations.h"
#include "dp/Support/Diagnostics.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"

#include <algorithm>
#include <cmath>
#include <numeric>

using namespace llvm;

namespace dp {

namespace {
enum class ExpertModeKind { Auto, Layers, Pipeline, Branches };

struct ExpertOptions {
  ExpertModeKind Mode = ExpertModeKind::Auto;
};

/// The unit graph as a DAG: the edges that go forward in the problem's
/// topological order (the others carry gradients back to forward units).
struct UnitDAG {
  /// Position of each unit in the topological order.
  std::vector<uint32_t> Pos;
  /// Successors of each unit, in topological order.
  GroupAdjacency Succ;
  std::vector<uint32_t> NumPreds;

  ArrayRef<uint32_t> successors(unsigned U) const { return Succ[U]; }
};

/// The recurrent layer of every unit, and whether the unit holds an op of
/// it (or was only attached to it).
struct UnitLayers {
  std::vector<unsigned> Layer;
  std::vector<uint8_t> HoldsLayerOp;
};

/// A unit whose successors run apart and meet again at its immediate
/// post-dominator: a fork, branches, a join.
struct ForkJoinBlock {
  uint32_t Fork = 0, Join = 0;
  std::vector<std::vector<uint32_t>> Branches;
  /// Compute of each branch on the reference device.
  std::vector<double> BranchTime;
};
} // namespace

static constexpr StringLiteral Algo = "expert";

SmallVector<unsigned, 8> getComputeDevices(const Cluster &C) {
  SmallVector<unsigned, 8> Devs;
  for (unsigned D = 0, E = C.getNumDevices(); D != E; ++D)
    if (C.getDeviceType(D).Kind != DeviceKind::CPU)
      Devs.push_back(D);
  if (Devs.empty())
    for (unsigned D = 0, E = C.getNumDevices(); D != E; ++D)
      Devs.push_back(D);
  return Devs;
}

static UnitDAG buildDAG(const PlacementProblem &P) {
  unsigned N = P.getNumUnits();
  UnitDAG G;
  G.Pos.resize(N);
  ArrayRef<uint32_t> Order = P.getTopologicalOrder();
  for (unsigned I = 0; I != N; ++I)
    G.Pos[Order[I]] = I;
  auto Forward = [&](const UnitEdge &E) { return G.Pos[E.From] < G.Pos[E.To]; };
  G.Succ = GroupAdjacency::build(N, P.getEdges(), /*Out=*/true, /*In=*/false,
                                 Forward);
  G.NumPreds.assign(N, 0);
  for (const UnitEdge &E : P.getEdges())
    if (Forward(E))
      ++G.NumPreds[E.To];
  for (unsigned U = 0; U != N; ++U)
    std::sort(G.Succ.Groups.begin() + G.Succ.Begin[U],
              G.Succ.Groups.begin() + G.Succ.Begin[U + 1],
              [&](uint32_t A, uint32_t B) { return G.Pos[A] < G.Pos[B]; });
  return G;
}

//===----------------------------------------------------------------------===//
// Recurrent layers round-robin
//===----------------------------------------------------------------------===//

/// The recurrent layer an op belongs to: its `rnn` annotation, or the op
/// itself when it is a recurrent op that was not unrolled.
static StringRef getLayerName(const Op &O) {
  if (Optional<StringRef> RNN = ann::get(O, ann::RNN))
    return *RNN;
  if (O.Domain.empty() &&
      (O.Type == "LSTM" || O.Type == "GRU" || O.Type == "RNN"))
    return O.Name;
  return "";
}

/// The layer index of every unit, layers numbered by their first op in
/// graph order; empty when the graph has no recurrent layer. A unit with
/// a layer's op belongs to that layer (the first such op decides); other
/// units belong to the last layer whose op precedes their first op in
/// graph order, or to the first layer when none does.
static UnitLayers findUnitLayers(const PlacementProblem &P) {
  const Graph &G = P.getGraph();
  unsigned NumOps = G.getNumOps();
  StringMap<unsigned> Layers;
  std::vector<int> OpLayer(NumOps, -1), Recent(NumOps, -1);
  int Last = -1;
  for (OpId O = 0; O != NumOps; ++O) {
    StringRef Name = getLayerName(G.getOp(O));
    if (!Name.empty()) {
      Last = Layers.try_emplace(Name, Layers.size()).first->second;
      OpLayer[O] = Last;
    }
    Recent[O] = Last;
  }
  UnitLayers Result;
  if (Layers.empty())
    return Result;
  Result.Layer.resize(P.getNumUnits());
  Result.HoldsLayerOp.resize(P.getNumUnits());
  for (unsigned U = 0, E = P.getNumUnits(); U != E; ++U) {
    ArrayRef<uint32_t> Ops = P.getUnitOps(U);
    auto It = find_if(Ops, [&](uint32_t O) { return OpLayer[O] >= 0; });
    int L = It != Ops.end() ? OpLayer[*It] : Recent[Ops.front()];
    Result.Layer[U] = L < 0 ? 0 : unsigned(L);
    Result.HoldsLayerOp[U] = It != Ops.end();
  }
  return Result;
}

//===----------------------------------------------------------------------===//
// Pipeline stages
//===----------------------------------------------------------------------===//

/// The module scope of an op name: "/enc/layer.0/MatMul" -> "/enc/layer.0".
static StringRef getScope(StringRef OpName) {
  size_t Slash = OpName.rfind('/');
  return Slash == StringRef::npos ? StringRef() : OpName.take_front(Slash);
}

/// How many leading '/'-separated components two scopes share.
static unsigned getSharedDepth(StringRef A, StringRef B) {
  unsigned Depth = 0;
  while (!A.empty() && !B.empty()) {
    auto [HeadA, RestA] = A.split('/');
    auto [HeadB, RestB] = B.split('/');
    if (HeadA != HeadB)
      break;
    ++Depth;
    A = RestA;
    B = RestB;
  }
  return Depth;
}

/// Cuts the topological order into one contiguous stage per device, each
/// with the device's share of the compute (by its speed on the whole
/// step), measured on the first device. A cut moves to the scope boundary
/// shared by the fewest scope components among the cuts within 10 % of a
/// stage's compute of the ideal one.
static void placePipeline(const PlacementProblem &P, ArrayRef<unsigned> Devs,
                          std::vector<uint32_t> &Placement) {
  ArrayRef<uint32_t> Order = P.getTopologicalOrder();
  unsigned N = Order.size(), NumDevs = Devs.size();
  std::vector<double> Prefix(N + 1, 0.0);
  for (unsigned I = 0; I != N; ++I)
    Prefix[I + 1] = Prefix[I] + P.getUnitTime(Order[I], Devs[0]);
  double Total = Prefix[N];
  std::vector<double> Speed(NumDevs);
  for (unsigned K = 0; K != NumDevs; ++K) {
    double T = 0;
    for (unsigned U = 0; U != N; ++U)
      T += P.getUnitTime(U, Devs[K]);
    Speed[K] = T > 0 ? 1 / T : 1;
  }
  double SpeedSum = std::accumulate(Speed.begin(), Speed.end(), 0.0);
  const Graph &G = P.getGraph();
  auto ScopeAt = [&](unsigned I) {
    return getScope(G.getOp(P.getUnitOps(Order[I]).front()).Name);
  };
  // Cutting before position 0 or N (an empty stage) is no scope boundary.
  auto DepthAt = [&](unsigned I) {
    return I == 0 || I == N ? ~0u : getSharedDepth(ScopeAt(I - 1), ScopeAt(I));
  };
  double Tolerance = 0.1 * Total / NumDevs;
  std::vector<unsigned> Cut(NumDevs + 1, 0);
  Cut[NumDevs] = N;
  double SpeedBefore = 0;
  for (unsigned K = 1; K != NumDevs; ++K) {
    SpeedBefore += Speed[K - 1];
    double Target = Total * SpeedBefore / SpeedSum;
    unsigned Lo = Cut[K - 1];
    // The cut nearest the target.
    unsigned I = std::lower_bound(Prefix.begin() + Lo, Prefix.end(), Target) -
                 Prefix.begin();
    I = std::min(I, N);
    if (I > Lo && Target - Prefix[I - 1] <= Prefix[I] - Target)
      --I;
    unsigned Best = I;
    unsigned BestDepth = DepthAt(I);
    double BestDist = std::fabs(Prefix[I] - Target);
    for (unsigned J = Lo; J <= N; ++J) {
      double Dist = std::fabs(Prefix[J] - Target);
      if (Prefix[J] > Target + Tolerance)
        break;
      if (Dist > Tolerance)
        continue;
      unsigned Depth = DepthAt(J);
      if (Depth < BestDepth || (Depth == BestDepth && Dist < BestDist)) {
        Best = J;
        BestDepth = Depth;
        BestDist = Dist;
      }
    }
    Cut[K] = Best;
  }
  for (unsigned K = 0; K != NumDevs; ++K)
    for (unsigned I = Cut[K]; I != Cut[K + 1]; ++I)
      Placement[Order[I]] = Devs[K];
}

//===----------------------------------------------------------------------===//
// Branches across devices
//===----------------------------------------------------------------------===//

/// The outermost fork-join blocks of two or more branches. A unit with
/// several successors forks; its immediate post-dominator in the DAG (with
/// a virtual exit after every sink) is the join. A branch is what the
/// fork's successors reach before the join; successors whose reaches
/// overlap form one branch. Forks inside a block's branches are not
/// examined; forks of a single branch are (the block may nest).
static std::vector<ForkJoinBlock> findForkJoinBlocks(const PlacementProblem &P,
                                                     const UnitDAG &G,
                                                     unsigned RefDev) {
  unsigned N = P.getNumUnits();
  ArrayRef<uint32_t> Order = P.getTopologicalOrder();
  const uint32_t Exit = N;
  // Immediate post-dominators, in reverse topological order.
  std::vector<uint32_t> IPDom(N + 1, Exit);
  auto PosOf = [&](uint32_t U) { return U == Exit ? N : G.Pos[U]; };
  for (unsigned I = N; I-- != 0;) {
    unsigned U = Order[I];
    ArrayRef<uint32_t> Succ = G.successors(U);
    if (Succ.empty())
      continue;
    uint32_t Dom = Succ.front();
    for (uint32_t S : Succ.drop_front()) {
      uint32_t A = Dom, B = S;
      while (A != B) {
        if (PosOf(A) < PosOf(B))
          A = IPDom[A];
        else
          B = IPDom[B];
      }
      Dom = A;
    }
    IPDom[U] = Dom;
  }

  std::vector<ForkJoinBlock> Blocks;
  std::vector<uint8_t> InBlock(N, 0);
  // Per unit: the block search that reached it last, and through which
  // successor of the fork (an index into Root).
  std::vector<uint32_t> Stamp(N, ~0u), Reach(N, 0);
  std::vector<uint32_t> Root, Stack;
  for (unsigned I = 0; I != N; ++I) {
    uint32_t F = Order[I];
    ArrayRef<uint32_t> Succ = G.successors(F);
    uint32_t J = IPDom[F];
    if (InBlock[F] || Succ.size() < 2 || J == Exit)
      continue;
    // Union-find over the fork's successors.
    Root.resize(Succ.size());
    std::iota(Root.begin(), Root.end(), 0);
    auto Find = [&](uint32_t X) {
      while (Root[X] != X)
        X = Root[X] = Root[Root[X]];
      return X;
    };
    for (unsigned S = 0; S != Succ.size(); ++S) {
      if (Succ[S] == J)
        continue;
      Stack.assign(1, Succ[S]);
      while (!Stack.empty()) {
        uint32_t U = Stack.back();
        Stack.pop_back();
        if (Stamp[U] == I) {
          uint32_t A = Find(Reach[U]), B = Find(S);
          if (A != B)
            Root[std::max(A, B)] = std::min(A, B);
          continue;
        }
        Stamp[U] = I;
        Reach[U] = S;
        for (uint32_t V : G.successors(U))
          if (V != J)
            Stack.push_back(V);
      }
    }
    ForkJoinBlock B;
    B.Fork = F;
    B.Join = J;
    std::vector<int> BranchOf(Succ.size(), -1);
    // Units in topological order between the fork and the join, so each
    // branch lists its units in order.
    for (unsigned K = I + 1, E = G.Pos[J]; K < E; ++K) {
      uint32_t U = Order[K];
      if (Stamp[U] != I)
        continue;
      uint32_t R = Find(Reach[U]);
      if (BranchOf[R] < 0) {
        BranchOf[R] = B.Branches.size();
        B.Branches.emplace_back();
        B.BranchTime.push_back(0);
      }
      B.Branches[BranchOf[R]].push_back(U);
      B.BranchTime[BranchOf[R]] += P.getUnitTime(U, RefDev);
    }
    if (B.Branches.size() < 2)
      continue;
    for (const auto &Branch : B.Branches)
      for (uint32_t U : Branch)
        InBlock[U] = 1;
    Blocks.push_back(std::move(B));
  }
  return Blocks;
}

/// A block of at least three branches that each carry 10 % or more of the
/// block's branch compute.
static bool isBranchy(const ForkJoinBlock &B) {
  double Total = std::accumulate(B.BranchTime.begin(), B.BranchTime.end(), 0.0);
  unsigned Comparable = count_if(
      B.BranchTime, [&](double T) { return Total > 0 && T >= 0.1 * Total; });
  return Comparable >= 3;
}

/// Whether mode=auto places by branches: the branchy blocks' branches
/// hold at least a quarter of the step's compute.
static bool preferBranches(const PlacementProblem &P,
                           ArrayRef<ForkJoinBlock> Blocks, unsigned RefDev) {
  double Total = 0, Branchy = 0;
  for (unsigned U = 0, E = P.getNumUnits(); U != E; ++U)
    Total += P.getUnitTime(U, RefDev);
  for (const ForkJoinBlock &B : Blocks)
    if (isBranchy(B))
      Branchy += std::accumulate(B.BranchTime.begin(), B.BranchTime.end(), 0.0);
  return Total > 0 && Branchy >= 0.25 * Total;
}

/// Every unit on the first device, except the branches of each block,
/// which go heaviest first to the device where they finish first (longest
/// processing time first), each block on its own. Marks the units placed
/// with a branch in \p InBranch.
static void placeBranches(const PlacementProblem &P, ArrayRef<unsigned> Devs,
                          ArrayRef<ForkJoinBlock> Blocks,
                          std::vector<uint32_t> &Placement,
                          std::vector<uint8_t> &InBranch) {
  std::fill(Placement.begin(), Placement.end(), Devs[0]);
  InBranch.assign(Placement.size(), 0);
  std::vector<double> Load(Devs.size());
  for (const ForkJoinBlock &B : Blocks) {
    std::vector<unsigned> ByTime(B.Branches.size());
    std::iota(ByTime.begin(), ByTime.end(), 0);
    std::stable_sort(ByTime.begin(), ByTime.end(), [&](unsigned X, unsigned Y) {
      return B.BranchTime[X] > B.BranchTime[Y];
    });
    std::fill(Load.begin(), Load.end(), 0.0);
    for (unsigned Br : ByTime) {
      unsigned BestK = 0;
      double BestEnd = 0;
      for (unsigned K = 0; K != Devs.size(); ++K) {
        double End = Load[K];
        for (uint32_t U : B.Branches[Br])
          End += P.getUnitTime(U, Devs[K]);
        if (K == 0 || End < BestEnd) {
          BestK = K;
          BestEnd = End;
        }
      }
      Load[BestK] = BestEnd;
      for (uint32_t U : B.Branches[Br]) {
        Placement[U] = Devs[BestK];
        InBranch[U] = 1;
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

/// Shifts units until the simulated step fits: while a device overflows,
/// the units placed on the one that overflows most move, last in
/// topological order first, to the next device in \p Devs (cyclically),
/// until their static estimate covers the bytes over. A unit moves at
/// most |Devs| - 1 times.
static Error fitInMemory(const PlacementProblem &P, ArrayRef<unsigned> Devs,
                         std::vector<uint32_t> &Placement) {
  constexpr unsigned MaxRounds = 256;
  ArrayRef<uint32_t> Order = P.getTopologicalOrder();
  unsigned NumDevs = Devs.size();
  std::vector<unsigned> Moves(P.getNumUnits(), 0);
  std::vector<int> DevIndex(P.getNumDevices(), -1);
  for (unsigned K = 0; K != NumDevs; ++K)
    DevIndex[Devs[K]] = K;
  for (unsigned Round = 0;; ++Round) {
    const SimResult &R = P.simulate(Placement);
    if (!R.OOM)
      return Error::success();
    int Worst = -1;
    uint64_t Over = 0;
    for (unsigned Dev : Devs) {
      uint64_t Cap = P.getDeviceCapacity(Dev);
      if (R.PeakBytes[Dev] > Cap && R.PeakBytes[Dev] - Cap > Over) {
        Worst = Dev;
        Over = R.PeakBytes[Dev] - Cap;
      }
    }
    if (Worst < 0 || NumDevs == 1 || Round == MaxRounds)
      return makeNoFitErrorFromSim(P, Algo, Placement, R);
    unsigned Next = Devs[(DevIndex[Worst] + 1) % NumDevs];
    uint64_t Moved = 0;
    for (unsigned I = Order.size(); I-- != 0 && Moved < Over;) {
      uint32_t U = Order[I];
      if (Placement[U] != unsigned(Worst) || Moves[U] + 1 >= NumDevs)
        continue;
      Placement[U] = Next;
      ++Moves[U];
      Moved += std::max<uint64_t>(P.getUnitMemory(U), 1);
    }
    if (!Moved)
      return makeNoFitErrorFromSim(P, Algo, Placement, P.simulate(Placement));
  }
}

//===----------------------------------------------------------------------===//
// The placer
//===----------------------------------------------------------------------===//

constexpr EnumEntry<ExpertModeKind> ExpertModeNames[] = {
    {"auto", ExpertModeKind::Auto},
    {"layers", ExpertModeKind::Layers},
    {"pipeline", ExpertModeKind::Pipeline},
    {"branches", ExpertModeKind::Branches}};

static void declareOptions(OptionTable &T, ExpertOptions &O) {
  T.choice<ExpertModeKind>("mode", O.Mode, ExpertModeNames);
}

static Expected<std::vector<uint32_t>> placeByRules(const PlacementProblem &P,
                                                    const PlaceOptions &,
                                                    const ExpertOptions &O) {
  ExpertModeKind Mode = O.Mode;

  unsigned N = P.getNumUnits();
  std::vector<uint32_t> Placement(N, 0);
  if (N == 0)
    return std::move(Placement);
  SmallVector<unsigned, 8> Devs = getComputeDevices(P.getCluster());
  UnitDAG DAG = buildDAG(P);

  UnitLayers Layers;
  if (Mode == ExpertModeKind::Auto || Mode == ExpertModeKind::Layers) {
    Layers = findUnitLayers(P);
    if (Layers.Layer.empty() && Mode == ExpertModeKind::Layers)
      return makeError("place{algo=expert}: mode=layers needs recurrent "
                       "layers (ops annotated rnn by unroll-rnn, or LSTM, "
                       "GRU or RNN ops)");
    if (!Layers.Layer.empty())
      Mode = ExpertModeKind::Layers;
  }
  std::vector<ForkJoinBlock> Blocks;
  if (Mode == ExpertModeKind::Auto || Mode == ExpertModeKind::Branches) {
    Blocks = findForkJoinBlocks(P, DAG, Devs[0]);
    if (Mode == ExpertModeKind::Auto) {
      Mode = preferBranches(P, Blocks, Devs[0]) ? ExpertModeKind::Branches
                                                : ExpertModeKind::Pipeline;
      if (Mode == ExpertModeKind::Branches)
        erase_if(Blocks, [](const ForkJoinBlock &B) { return !isBranchy(B); });
    }
  }

  // Units that the mode placed by default (not with a layer op, not in a
  // branch) and that read nothing from earlier units (constants, lookups
  // of graph inputs and weights) run where their first reader runs.
  std::vector<uint8_t> Anchored;
  switch (Mode) {
  case ExpertModeKind::Layers:
    for (unsigned U = 0; U != N; ++U)
      Placement[U] = Devs[Layers.Layer[U] % Devs.size()];
    Anchored = std::move(Layers.HoldsLayerOp);
    break;
  case ExpertModeKind::Pipeline:
    placePipeline(P, Devs, Placement);
    Anchored.assign(N, 1);
    break;
  case ExpertModeKind::Branches:
    placeBranches(P, Devs, Blocks, Placement, Anchored);
    break;
  case ExpertModeKind::Auto:
    llvm_unreachable("auto resolves to a mode");
  }
  for (unsigned U = 0; U != N; ++U)
    if (!Anchored[U] && !DAG.NumPreds[U] && !DAG.successors(U).empty())
      Placement[U] = Placement[DAG.successors(U).front()];

  if (Error E = fitInMemory(P, Devs, Placement))
    return std::move(E);
  return std::move(Placement);
}

DP_DEFINE_PLACER(placeExpert, describeExpert, declareOptions, placeByRules)

} // namespace dp
