//===- Colocate.cpp - What every colocation strategy uses ----------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/Colocate/Colocate.h"
#include "DisjointSets.h"
#include "dp/Cluster/Cluster.h"
#include "dp/IR/Annotations.h"
#include "dp/Support/Diagnostics.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <limits>

using namespace llvm;

namespace dp {

StringRef getColocateStrategyName(ColocateStrategyKind K) {
  switch (K) {
  case ColocateStrategyKind::TF:
    return "tf";
  case ColocateStrategyKind::Merge:
    return "merge";
  case ColocateStrategyKind::METIS:
    return "metis";
  case ColocateStrategyKind::Scope:
    return "scope";
  }
  llvm_unreachable("unknown colocation strategy");
}

Grouping makeGrouping(ArrayRef<uint32_t> Keys) {
  Grouping Gr;
  Gr.GroupOf.resize(Keys.size());
  // 64-bit keys: no 32-bit value collides with DenseMap's empty key.
  DenseMap<uint64_t, uint32_t> Dense;
  for (size_t I = 0, E = Keys.size(); I != E; ++I)
    Gr.GroupOf[I] = Dense.try_emplace(Keys[I], Dense.size()).first->second;
  Gr.NumGroups = Dense.size();
  return Gr;
}

Grouping getHintClasses(const Graph &G) {
  unsigned N = G.getNumOps();
  DisjointSets Sets(N);
  for (OpId O = 0; O != N; ++O) {
    Optional<StringRef> Hint = ann::get(G.getOp(O), ann::Colocate);
    if (!Hint)
      continue;
    OpId Other = G.lookupOp(*Hint);
    if (Other != NoId)
      Sets.join(O, Other);
  }
  return makeGrouping(Sets.roots());
}

Expected<std::vector<double>> getComputeCosts(const Graph &G, const Cluster *C,
                                              StringRef Who) {
  std::vector<std::string> Keys;
  if (C)
    for (const DeviceType &T : C->getTypes())
      Keys.push_back(T.Name);
  auto IsTime = [](const Attribute &A) {
    return A.getKind() == AttrKind::Float && A.getFloat() >= 0;
  };
  std::vector<double> Costs(G.getNumOps());
  for (OpId O = 0, E = G.getNumOps(); O != E; ++O) {
    const Op &Node = G.getOp(O);
    double Best = std::numeric_limits<double>::infinity();
    bool Complete = true;
    if (C) {
      for (const std::string &Type : Keys) {
        Optional<double> Time = ann::getTime(Node, Type);
        if (!Time || *Time < 0) {
          Complete = false;
          break;
        }
        Best = std::min(Best, *Time);
      }
    } else {
      for (const NamedAttribute &A : Node.Annotations)
        if (ann::isTimeKey(A.Name) && IsTime(A.Value))
          Best = std::min(Best, A.Value.getFloat());
      Complete = Best != std::numeric_limits<double>::infinity();
    }
    if (!Complete)
      return makeNodeError(Node.Name,
                           Who + ": needs costs: run cost-annotate first");
    Costs[O] = Best;
  }
  return std::move(Costs);
}

std::vector<GroupEdge> getGroupEdges(const Graph &G, const Grouping &Gr) {
  DenseMap<uint64_t, uint64_t> EdgeBytes;
  SmallVector<uint32_t, 4> Seen;
  for (const Tensor &Tn : G.tensors()) {
    if (Tn.Uses.empty())
      continue;
    uint64_t Bytes = Tn.Type.getSizeInBytes().getValueOr(0);
    uint32_t From =
        Gr.GroupOf[Tn.Producer != NoId ? Tn.Producer : Tn.Uses.front().User];
    Seen.clear();
    for (const Use &U : Tn.Uses) {
      uint32_t To = Gr.GroupOf[U.User];
      if (To == From || is_contained(Seen, To))
        continue;
      Seen.push_back(To);
      EdgeBytes[(uint64_t(From) << 32) | To] += Bytes;
    }
  }
  std::vector<GroupEdge> Edges;
  Edges.reserve(EdgeBytes.size());
  for (const auto &KV : EdgeBytes)
    Edges.push_back(GroupEdge{uint32_t(KV.first >> 32),
                              uint32_t(KV.first & 0xffffffffu), KV.second});
  llvm::sort(Edges, [](const GroupEdge &A, const GroupEdge &B) {
    return A.From != B.From ? A.From < B.From : A.To < B.To;
  });
  return Edges;
}

std::vector<uint64_t> getOpMemory(const Graph &G) {
  std::vector<uint64_t> Memory(G.getNumOps(), 0);
  for (OpId O = 0, E = G.getNumOps(); O != E; ++O) {
    const Op &Node = G.getOp(O);
    if (Optional<int64_t> Bytes = ann::get(Node, ann::PersistentBytes))
      if (*Bytes > 0)
        Memory[O] += uint64_t(*Bytes);
    for (TensorId T : Node.Results)
      if (T != NoId)
        Memory[O] += G.getTensor(T).Type.getSizeInBytes().getValueOr(0);
  }
  for (const Tensor &Tn : G.tensors())
    if (Tn.Producer == NoId && !Tn.Uses.empty())
      Memory[Tn.Uses.front().User] += Tn.Type.getSizeInBytes().getValueOr(0);
  return Memory;
}

StringRef getNameScope(StringRef Name, unsigned Depth) {
  size_t LastSlash = Name.rfind('/');
  if (LastSlash == StringRef::npos)
    return "";
  StringRef Path = Name.take_front(LastSlash);
  size_t Pos = 0, End = 0;
  for (unsigned Count = 0; Count != Depth; ++Count) {
    while (Pos != Path.size() && Path[Pos] == '/')
      ++Pos;
    if (Pos == Path.size())
      break;
    while (Pos != Path.size() && Path[Pos] != '/')
      ++Pos;
    End = Pos;
  }
  return Path.take_front(End);
}

Expected<Grouping> computeGroups(const Graph &G, const ColocateOptions &Opts,
                                 const Cluster *C, uint64_t Seed) {
  switch (Opts.Strategy) {
  case ColocateStrategyKind::TF:
    return groupByTF(G);
  case ColocateStrategyKind::Scope:
    return groupByScope(G, Opts.Depth);
  case ColocateStrategyKind::Merge:
  case ColocateStrategyKind::METIS:
    break;
  }
  assert(Opts.Groups > 0 && "merge and metis need a group count");
  std::string Who =
      "colocate{strategy=" + getColocateStrategyName(Opts.Strategy).str() + "}";
  Expected<std::vector<double>> Costs = getComputeCosts(G, C, Who);
  if (!Costs)
    return Costs.takeError();
  if (Opts.Strategy == ColocateStrategyKind::METIS)
    return groupByMETIS(G, *Costs, Opts.Groups, Seed);
  double Threshold;
  if (Opts.Threshold) {
    Threshold = *Opts.Threshold;
  } else {
    double Total = 0;
    for (double T : *Costs)
      Total += T;
    Threshold = Total / (4.0 * Opts.Groups);
  }
  return groupByMerge(G, *Costs, Opts.Groups, Threshold);
}

} // namespace dp
