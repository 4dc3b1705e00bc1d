//===- Colocate.cpp - What every colocation strategy uses ----------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/Colocate/Colocate.h"
#include "dp/Cluster/Cluster.h"
#include "dp/IR/Annotations.h"
#include "dp/Support/Diagnostics.h"
#include "dp/Support/EnumNames.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <limits>

using namespace llvm;

namespace dp {

static constexpr EnumEntry<ColocateStrategyKind> StrategyNames[] = {
    {"tf", ColocateStrategyKind::TF},
    {"merge", ColocateStrategyKind::Merge},
    {"metis", ColocateStrategyKind::METIS},
    {"scope", ColocateStrategyKind::Scope},
};

StringRef getColocateStrategyName(ColocateStrategyKind K) {
  return getEnumName<ColocateStrategyKind>(StrategyNames, K);
}

Optional<ColocateStrategyKind> parseColocateStrategyName(StringRef Name) {
  return parseEnumName<ColocateStrategyKind>(StrategyNames, Name);
}

std::string listColocateStrategyNames() {
  return listEnumNames<ColocateStrategyKind>(StrategyNames, ", ");
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
