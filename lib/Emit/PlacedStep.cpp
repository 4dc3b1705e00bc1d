//===- PlacedStep.cpp - A simulated placement and its user's view --------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "EmitInternal.h"
#include "dp/Emit/Emit.h"
#include "dp/IR/Annotations.h"
#include "dp/Sim/StepSimulation.h"
#include "dp/Support/Diagnostics.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

using namespace llvm;

namespace dp {

std::vector<StringRef> computeOrigins(const Graph &G) {
  unsigned N = G.getNumOps();
  std::vector<StringRef> Origin(N);
  // 0: not computed, 1: in progress (a colocate cycle), 2: done.
  std::vector<uint8_t> State(N, 0);
  std::vector<OpId> Stack;
  for (OpId Start = 0; Start != N; ++Start) {
    if (State[Start] == 2)
      continue;
    // Follow colocate hints iteratively: hint chains can be long.
    Stack.push_back(Start);
    while (!Stack.empty()) {
      OpId O = Stack.back();
      const Op &Node = G.getOp(O);
      // The user's node an op comes from when it is not the op's own (an
      // inlined branch, an expanded op), or the RNN op it was unrolled from.
      StringRef RNN = ann::getString(Node, ann::Node);
      if (RNN.empty())
        RNN = ann::getString(Node, ann::RNN);
      StringRef Hint = ann::getString(Node, ann::Colocate);
      OpId Target = Hint.empty() ? NoId : G.lookupOp(Hint);
      if (!RNN.empty() || Target == NoId || State[Target] == 1) {
        if (!RNN.empty())
          Origin[O] = RNN;
        else if (!Hint.empty())
          Origin[O] = Target == NoId || State[Target] == 1 ? StringRef()
                                                           : Origin[Target];
        else if (ann::getString(Node, ann::Phase) == "loss")
          Origin[O] = StringRef();
        else
          Origin[O] = Node.Name;
        State[O] = 2;
        Stack.pop_back();
        continue;
      }
      if (State[Target] == 2) {
        Origin[O] = Origin[Target];
        State[O] = 2;
        Stack.pop_back();
        continue;
      }
      State[O] = 1;
      Stack.push_back(Target);
    }
  }
  return Origin;
}

static std::string formatShares(const PlacedStep &S,
                                const PlacedStep::NodePlacement &NP) {
  double Total = 0;
  for (const auto &[Dev, T] : NP.Time)
    Total += T;
  std::string Out;
  for (const auto &[Dev, T] : NP.Time)
    Out += formatv("{0}{1:F0} % on {2}", Out.empty() ? "" : ", ",
                   Total > 0 ? T / Total * 100 : 0, S.C->getDevices()[Dev].Name)
               .str();
  return Out;
}

Expected<PlacedStep> PlacedStep::simulate(const Graph &G, const Cluster &C) {
  Expected<StepSimulation> Sim = simulateStep(G, C);
  if (!Sim)
    return Sim.takeError();
  return build(G, *Sim);
}

PlacedStep PlacedStep::build(const Graph &G, const StepSimulation &Sim) {
  PlacedStep S;
  S.G = &G;
  S.C = Sim.C;
  S.Placement = Sim.Placement;
  S.Result = Sim.Result;
  S.Bounds = Sim.Bounds;
  S.Baseline = computeSingleDeviceBaseline(Sim.SG);
  unsigned N = G.getNumOps();
  S.OpTime.resize(N);
  for (OpId O = 0; O != N; ++O)
    S.OpTime[O] = Sim.SG.getOpTime(O, S.Placement[O]);

  S.Plan = getPipelinePlan(G);
  if (S.Plan) {
    // Instances come micro-batch by micro-batch, updates last: an op's
    // first is micro-batch 0's.
    S.OpSpans.resize(S.Result.Ops.empty() ? 0 : N);
    std::vector<bool> Seen(N);
    for (uint32_t I = 0, E = S.Result.Ops.size(); I != E; ++I)
      if (uint32_t O = S.Result.getOp(I); !Seen[O]) {
        Seen[O] = true;
        S.OpSpans[O] = S.Result.Ops[I];
      }
    std::vector<uint32_t> First;
    computeStageDevices(S.Placement, Sim.C->getNumDevices(), First, S.Stages);
  } else {
    S.OpSpans = S.Result.Ops;
  }

  S.Origin = computeOrigins(G);
  for (OpId O = 0; O != N; ++O) {
    StringRef Name = S.Origin[O];
    if (Name.empty())
      continue;
    auto [It, New] = S.NodeIndex.try_emplace(Name, S.Nodes.size());
    if (New) {
      S.Nodes.emplace_back();
      S.Nodes.back().Name = Name;
      S.Nodes.back().FirstOp = O;
    }
    NodePlacement &NP = S.Nodes[It->second];
    unsigned Dev = S.Placement[O];
    auto *Slot =
        find_if(NP.Time, [&](const auto &P) { return P.first == Dev; });
    if (Slot == NP.Time.end())
      NP.Time.emplace_back(Dev, S.OpTime[O]);
    else
      Slot->second += S.OpTime[O];
  }
  for (NodePlacement &NP : S.Nodes) {
    llvm::sort(NP.Time);
    // Most compute wins; ties go to the device of the node's first op.
    NP.Device = S.Placement[NP.FirstOp];
    double Best = -1;
    for (const auto &[Dev, T] : NP.Time)
      if (T > Best || (T == Best && Dev == S.Placement[NP.FirstOp])) {
        Best = T;
        NP.Device = Dev;
      }
    if (NP.isSplit())
      S.Warnings.push_back(
          "node '" + NP.Name.str() + "' is split: " + formatShares(S, NP) +
          "; it is recorded on " + Sim.C->getDevices()[NP.Device].Name);
  }
  return S;
}

//===----------------------------------------------------------------------===//
// Gradients at the peak
//===----------------------------------------------------------------------===//

namespace {
/// A copy of a weight's gradient on a device, live over [Alloc, Free).
struct GradientCopy {
  unsigned Device;
  double Alloc, Free;
  uint64_t Bytes;
};
} // namespace

/// The weights' gradients: what the update ops read besides the weights,
/// in tensor order.
static std::vector<TensorId> getWeightGradients(const Graph &G) {
  std::vector<bool> Seen(G.getNumTensors());
  std::vector<TensorId> Grads;
  for (const Op &Node : G.ops()) {
    if (ann::getString(Node, ann::Phase) != "update")
      continue;
    for (TensorId T : Node.Operands)
      if (T != NoId && G.getTensor(T).Kind == TensorKind::Activation &&
          G.getTensor(T).Producer != NoId && !Seen[T]) {
        Seen[T] = true;
        Grads.push_back(T);
      }
  }
  llvm::sort(Grads);
  return Grads;
}

/// The most bytes of \p Copies on \p Dev at any moment, counting a copy
/// at the very moments it is made and freed too.
static uint64_t getMostLive(ArrayRef<GradientCopy> Copies, unsigned Dev) {
  std::vector<std::pair<double, int64_t>> Events;
  for (const GradientCopy &C : Copies)
    if (C.Device == Dev) {
      Events.emplace_back(C.Alloc, int64_t(C.Bytes));
      Events.emplace_back(C.Free, -int64_t(C.Bytes));
    }
  // At one time, allocations before frees.
  llvm::sort(Events, [](const auto &A, const auto &B) {
    return A.first != B.first ? A.first < B.first : A.second > B.second;
  });
  int64_t Live = 0, Most = 0;
  for (const auto &[Time, Delta] : Events) {
    Live += Delta;
    Most = std::max(Most, Live);
  }
  return uint64_t(Most);
}

/// Under a pipeline plan the timeline has instances: bounds each device's
/// gradients by every gradient it ever holds, twice on the producer's
/// device when micro-batches accumulate into it (micro-batch k's gradient
/// is made while k - 1's is read).
static void boundPlanGradients(const PlacedStep &S, ArrayRef<TensorId> Grads,
                               ArrayRef<uint32_t> GradIndex, PeakGradients &P) {
  const Graph &G = *S.G;
  const SimResult &R = S.Result;
  unsigned HomeCopies = S.Plan && S.Plan->MicroBatches > 1 ? 2 : 1;
  std::vector<SmallVector<unsigned, 2>> Holders(Grads.size());
  for (unsigned I = 0, E = Grads.size(); I != E; ++I)
    Holders[I].push_back(S.Placement[G.getTensor(Grads[I]).Producer]);
  for (const TransferRecord &Tr : R.Transfers) {
    uint32_t T = R.getTensor(Tr.Tensor);
    if (GradIndex[T] == NoId)
      continue;
    SmallVector<unsigned, 2> &H = Holders[GradIndex[T]];
    if (!is_contained(H, Tr.Dst))
      H.push_back(Tr.Dst);
  }
  for (unsigned I = 0, E = Grads.size(); I != E; ++I) {
    uint64_t Bytes = G.getTensor(Grads[I]).Type.getSizeInBytes().getValueOr(0);
    for (unsigned K = 0; K != Holders[I].size(); ++K)
      P.Bytes[Holders[I][K]] += (K == 0 ? HomeCopies : 1) * Bytes;
  }
}

PeakGradients computePeakGradients(const PlacedStep &S) {
  const Graph &G = *S.G;
  const SimResult &R = S.Result;
  unsigned D = S.C->getNumDevices();
  PeakGradients P;
  P.Bytes.assign(D, 0);
  P.Exact.assign(D, true);
  std::vector<TensorId> Grads = getWeightGradients(G);
  P.Any = !Grads.empty();
  if (!P.Any)
    return P;
  std::vector<uint32_t> GradIndex(G.getNumTensors(), NoId);
  for (unsigned I = 0, E = Grads.size(); I != E; ++I)
    GradIndex[Grads[I]] = I;
  if (S.Plan) {
    boundPlanGradients(S, Grads, GradIndex, P);
    for (unsigned Dev = 0; Dev != D; ++Dev)
      P.Exact[Dev] = !P.Bytes[Dev];
    return P;
  }

  assert(R.Ops.size() == G.getNumOps() && "emit reads a recorded timeline");
  // Every copy of every gradient, as the simulator allocates and frees
  // it: results are allocated when their op starts, a copy is sent when
  // the producer ends, and a copy goes when its device's last reader and,
  // at home, its last transfer are done. Graph outputs stay.
  std::vector<SmallVector<const TransferRecord *, 1>> Sent(Grads.size());
  for (const TransferRecord &Tr : R.Transfers)
    if (GradIndex[Tr.Tensor] != NoId)
      Sent[GradIndex[Tr.Tensor]].push_back(&Tr);
  std::vector<bool> IsOutput(G.getNumTensors());
  for (TensorId T : G.getOutputs())
    IsOutput[T] = true;
  std::vector<GradientCopy> Copies;
  for (unsigned I = 0, E = Grads.size(); I != E; ++I) {
    const Tensor &Tn = G.getTensor(Grads[I]);
    const OpInterval &Made = R.Ops[Tn.Producer];
    uint64_t Bytes = Tn.Type.getSizeInBytes().getValueOr(0);
    auto LastRead = [&](unsigned Dev, double From) {
      for (const Use &U : Tn.Uses)
        if (S.Placement[U.User] == Dev)
          From = std::max(From, R.Ops[U.User].End);
      return From;
    };
    unsigned Home = S.Placement[Tn.Producer];
    double Free = LastRead(Home, Made.End);
    for (const TransferRecord *Tr : Sent[I]) {
      Free = std::max(Free, Tr->End);
      Copies.push_back({Tr->Dst, Made.End, LastRead(Tr->Dst, Made.End), Bytes});
    }
    if (IsOutput[Grads[I]])
      Free = std::numeric_limits<double>::infinity();
    Copies.push_back({Home, Made.Start, Free, Bytes});
  }

  // The first time each device's bytes after that moment (its last sample
  // at the time) are its peak.
  constexpr double Unset = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> PeakTime(D, Unset), LastTime(D, Unset);
  std::vector<uint64_t> LastBytes(D, 0);
  auto Settle = [&](unsigned Dev) {
    if (std::isnan(PeakTime[Dev]) && !std::isnan(LastTime[Dev]) &&
        LastBytes[Dev] == R.PeakBytes[Dev])
      PeakTime[Dev] = LastTime[Dev];
  };
  for (const MemorySample &M : R.Memory) {
    if (M.Time != LastTime[M.Device])
      Settle(M.Device);
    LastTime[M.Device] = M.Time;
    LastBytes[M.Device] = M.Bytes;
  }
  for (unsigned Dev = 0; Dev != D; ++Dev) {
    Settle(Dev);
    if (!R.PeakBytes[Dev])
      continue;
    double T = PeakTime[Dev];
    if (std::isnan(T)) {
      // The peak lasted no time: it is at some moment of one sample's
      // time, which one the samples do not say.
      P.Bytes[Dev] = getMostLive(Copies, Dev);
      P.Exact[Dev] = !P.Bytes[Dev];
      continue;
    }
    for (const GradientCopy &C : Copies)
      if (C.Device == Dev && C.Alloc <= T && T < C.Free)
        P.Bytes[Dev] += C.Bytes;
  }
  return P;
}

//===----------------------------------------------------------------------===//
// device_map
//===----------------------------------------------------------------------===//

std::string getModulePath(StringRef NodeName) {
  if (!NodeName.startswith("/"))
    return "";
  SmallVector<StringRef, 8> Parts;
  NodeName.drop_front().split(Parts, '/');
  Parts.pop_back(); // The op's own name.
  // A container's item is scoped "<container>.<index>" under the container
  // when the container is called (Sequential: "/layer1/layer1.0/"), and
  // alone when it is not (ModuleList: "/encoder/layer.0/").
  SmallVector<StringRef, 8> Path;
  for (StringRef P : Parts) {
    if (P.empty())
      continue;
    if (!Path.empty() && P.startswith(Path.back()) &&
        P.size() > Path.back().size() && P[Path.back().size()] == '.')
      Path.back() = P;
    else
      Path.push_back(P);
  }
  return join(Path, ".");
}

namespace {
/// A module of the tree that the ops' module paths form.
struct ModuleNode {
  std::string Path;
  /// Submodules by name, in order of their first op.
  std::vector<std::pair<std::string, unsigned>> Children;
  /// Compute seconds per device of the module and its submodules.
  std::vector<double> Time;
  OpId FirstOp = NoId;
};
} // namespace

/// When \p Scope is "<name>_<N>", the name torch.onnx.export gives the
/// (N+1)th call of module <name>, returns <name>.
static Optional<StringRef> getCallSiteBase(StringRef Scope) {
  size_t Underscore = Scope.rfind('_');
  if (Underscore == StringRef::npos || Underscore == 0 ||
      Underscore + 1 == Scope.size() ||
      !all_of(Scope.drop_front(Underscore + 1), isDigit))
    return None;
  return Scope.take_front(Underscore);
}

/// Whether \p Name reads as a state_dict key: dotted identifiers, at least
/// two of them ("layer1.0.bn1.weight"; not "onnx::Conv_7" or "/x/Constant").
static bool isStateDictKey(StringRef Name) {
  if (!Name.contains('.'))
    return false;
  SmallVector<StringRef, 8> Parts;
  Name.split(Parts, '.');
  return all_of(Parts, [](StringRef P) {
    return !P.empty() &&
           all_of(P, [](char Ch) { return isAlnum(Ch) || Ch == '_'; });
  });
}

/// Adds \p Path and every module above it to \p Scopes.
static void addScopes(StringSet<> &Scopes, StringRef Path) {
  for (size_t Dot = Path.find('.'); Dot != StringRef::npos;
       Dot = Path.find('.', Dot + 1))
    Scopes.insert(Path.take_front(Dot));
  Scopes.insert(Path);
}

namespace {
/// Maps the module paths of node names to modules: a call-site scope
/// "<name>_<N>" is module "<name>" when the model also has scope "<name>"
/// under the same parent and no parameter is named under "<name>_<N>".
class ModulePaths {
public:
  explicit ModulePaths(const PlacedStep &S) {
    for (TensorId W : S.G->getWeights()) {
      StringRef Name = S.G->getTensor(W).Name;
      if (isStateDictKey(Name))
        addScopes(ParamScopes, Name.rsplit('.').first);
    }
    for (StringRef Origin : S.Origin)
      if (!Origin.empty())
        addScopes(Scopes, getRaw(Origin));
  }

  /// The module of node \p NodeName.
  StringRef get(StringRef NodeName) {
    auto [It, New] = ByNode.try_emplace(NodeName);
    if (!New)
      return It->second;
    StringRef Raw = getRaw(NodeName);
    std::string Path;
    if (!Raw.empty()) {
      SmallVector<StringRef, 8> Parts;
      Raw.split(Parts, '.');
      for (StringRef P : Parts) {
        std::string Here = Path.empty() ? P.str() : Path + "." + P.str();
        if (Optional<StringRef> Base = getCallSiteBase(P)) {
          std::string Called =
              Path.empty() ? Base->str() : Path + "." + Base->str();
          if (Scopes.contains(Called) && !ParamScopes.contains(Here))
            Here = std::move(Called);
        }
        Path = std::move(Here);
      }
    }
    It->second = std::move(Path);
    return It->second;
  }

private:
  StringRef getRaw(StringRef NodeName) {
    auto [It, New] = RawByNode.try_emplace(NodeName);
    if (New)
      It->second = getModulePath(NodeName);
    return It->second;
  }

  StringMap<std::string> RawByNode, ByNode;
  /// Every module path of a node, and every module above one.
  StringSet<> Scopes;
  /// Every module that holds a parameter, and every module above one.
  StringSet<> ParamScopes;
};
} // namespace

/// Adds to \p Map the parameters that no listed module covers (their
/// modules have no node, or only nodes outside them read them): the
/// parameter's module, or the parameter itself when a listed module is
/// inside its module, goes to the device of its first reader's node.
static void coverParameters(const PlacedStep &S, DeviceMap &Map) {
  StringSet<> Listed, Above;
  bool Root = false;
  auto List = [&](StringRef Key) {
    Listed.insert(Key);
    Root |= Key.empty();
    for (size_t Dot = Key.find('.'); Dot != StringRef::npos;
         Dot = Key.find('.', Dot + 1))
      Above.insert(Key.take_front(Dot));
  };
  for (const DeviceMap::Entry &E : Map.Entries)
    List(E.Module);
  auto IsCovered = [&](StringRef Name) {
    if (Root || Listed.contains(Name))
      return true;
    for (size_t Dot = Name.find('.'); Dot != StringRef::npos;
         Dot = Name.find('.', Dot + 1))
      if (Listed.contains(Name.take_front(Dot)))
        return true;
    return false;
  };
  const Graph &G = *S.G;
  for (TensorId W : G.getWeights()) {
    const Tensor &T = G.getTensor(W);
    if (!isStateDictKey(T.Name) || T.Uses.empty() || IsCovered(T.Name))
      continue;
    OpId Reader = T.Uses.front().User;
    StringRef Node = S.Origin[Reader];
    // A weight named after its reader node, "<node's module>.<node's own
    // name>.<input>" (the bundled models name the weights that constant
    // folding made so, "...query.MatMul.B"), is no parameter of the torch
    // model, and "...query.MatMul" no module.
    std::string ReaderPrefix = getModulePath(Node);
    ReaderPrefix += (ReaderPrefix.empty() ? "" : ".") +
                    Node.substr(Node.rfind('/') + 1).str() + ".";
    if (!Node.empty() && T.Name.startswith(ReaderPrefix))
      continue;
    unsigned Dev = S.Placement[Reader];
    auto It = S.NodeIndex.find(Node);
    if (!Node.empty() && It != S.NodeIndex.end())
      Dev = S.Nodes[It->second].Device;
    StringRef Module = T.Name.rsplit('.').first;
    StringRef Key = Above.contains(Module) ? T.Name : Module;
    Map.Entries.push_back({Key.str(), Dev});
    List(Key);
  }
}

DeviceMap computeDeviceMap(const PlacedStep &S) {
  const Cluster &C = *S.C;
  unsigned D = C.getNumDevices();
  ModulePaths Modules(S);
  std::vector<ModuleNode> Tree(1);
  Tree[0].Time.assign(D, 0);
  for (OpId O = 0, E = S.G->getNumOps(); O != E; ++O) {
    if (S.Origin[O].empty())
      continue; // Not part of the user's model (the loss).
    StringRef Path = Modules.get(S.Origin[O]);
    SmallVector<StringRef, 8> Parts;
    if (!Path.empty())
      Path.split(Parts, '.');
    unsigned Cur = 0;
    auto Add = [&](unsigned M) {
      Tree[M].Time[S.Placement[O]] += S.OpTime[O];
      if (Tree[M].FirstOp == NoId)
        Tree[M].FirstOp = O;
    };
    Add(0);
    for (StringRef P : Parts) {
      auto It = find_if(Tree[Cur].Children,
                        [&](const auto &Ch) { return Ch.first == P; });
      unsigned Next;
      if (It != Tree[Cur].Children.end()) {
        Next = It->second;
      } else {
        Next = Tree.size();
        ModuleNode M;
        M.Path =
            Tree[Cur].Path.empty() ? P.str() : Tree[Cur].Path + "." + P.str();
        M.Time.assign(D, 0);
        Tree.push_back(std::move(M));
        Tree[Cur].Children.emplace_back(P.str(), Next);
      }
      Cur = Next;
      Add(Cur);
    }
  }

  DeviceMap Map;
  if (Tree[0].FirstOp == NoId)
    return Map;
  // Depth first, children in order of their first op.
  std::vector<unsigned> Work = {0};
  while (!Work.empty()) {
    unsigned M = Work.back();
    Work.pop_back();
    const ModuleNode &Node = Tree[M];
    unsigned Used = 0, Best = S.Placement[Node.FirstOp];
    for (unsigned Dev = 0; Dev != D; ++Dev) {
      if (Node.Time[Dev] <= 0)
        continue;
      ++Used;
      if (Node.Time[Dev] > Node.Time[Best])
        Best = Dev;
    }
    if (Used > 1 && !Node.Children.empty()) {
      std::vector<unsigned> Kids;
      for (const auto &Ch : Node.Children)
        Kids.push_back(Ch.second);
      llvm::sort(Kids, [&](unsigned A, unsigned B) {
        return Tree[A].FirstOp < Tree[B].FirstOp;
      });
      for (unsigned K : llvm::reverse(Kids))
        Work.push_back(K);
      continue;
    }
    Map.Entries.push_back({Node.Path, Best});
    if (Used <= 1)
      continue;
    double Total = 0;
    for (double T : Node.Time)
      Total += T;
    std::string Shares;
    for (unsigned Dev = 0; Dev != D; ++Dev)
      if (Node.Time[Dev] > 0)
        Shares +=
            formatv("{0}{1:F0} % on {2}", Shares.empty() ? "" : ", ",
                    Node.Time[Dev] / Total * 100, C.getDevices()[Dev].Name)
                .str();
    std::string What =
        Node.Path.empty() ? "the root module" : "module '" + Node.Path + "'";
    Map.Warnings.push_back(What + " is split: " + Shares +
                           "; the device_map puts it on " +
                           C.getDevices()[Best].Name);
  }
  coverParameters(S, Map);
  return Map;
}

} // namespace dp
