//===- PlacedStep.cpp - A simulated placement and its user's view --------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/Emit/Emit.h"
#include "dp/IR/Annotations.h"
#include "dp/Sim/StepSimulation.h"
#include "dp/Support/Diagnostics.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
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
