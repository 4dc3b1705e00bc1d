//===- ColocatePass.cpp - The colocate pass -------------------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/Colocate/Colocate.h"
#include "dp/IR/Annotations.h"
#include "dp/Support/Diagnostics.h"
#include "dp/Support/Format.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"

#include <limits>

using namespace llvm;

namespace dp {

void printColocatePipeline(raw_ostream &OS, const ColocateOptions &Opts) {
  OS << "colocate{strategy=" << getColocateStrategyName(Opts.Strategy);
  switch (Opts.Strategy) {
  case ColocateStrategyKind::TF:
    break;
  case ColocateStrategyKind::Merge:
    OS << "{groups=" << Opts.Groups;
    if (Opts.Threshold) {
      OS << ",threshold=";
      writeDouble(OS, *Opts.Threshold);
    }
    OS << '}';
    break;
  case ColocateStrategyKind::METIS:
    OS << "{groups=" << Opts.Groups << '}';
    break;
  case ColocateStrategyKind::Scope:
    OS << "{depth=" << Opts.Depth << '}';
    break;
  }
  OS << '}';
}

/// Parses a positive integer that fits METIS's 32-bit idx_t.
static bool parseCount(StringRef S, unsigned &N) {
  return to_integer(S, N, 10) && N > 0 &&
         N <= unsigned(std::numeric_limits<int32_t>::max());
}

/// Parses the value of strategy=: "NAME" or "NAME{key=value,...}".
static Error parseStrategy(StringRef Value, ColocateOptions &Opts) {
  size_t Brace = Value.find('{');
  StringRef Name = Value.substr(0, Brace).trim();
  StringRef Rest = Value.substr(Brace);
  if (Name == "tf")
    Opts.Strategy = ColocateStrategyKind::TF;
  else if (Name == "merge")
    Opts.Strategy = ColocateStrategyKind::Merge;
  else if (Name == "metis")
    Opts.Strategy = ColocateStrategyKind::METIS;
  else if (Name == "scope")
    Opts.Strategy = ColocateStrategyKind::Scope;
  else
    return makeError("colocate: unknown strategy '" + Name +
                     "' (available: tf, merge, metis, scope)");

  std::string Who = ("colocate{strategy=" + Name + "}").str();
  SmallVector<StringRef, 4> Items;
  if (!Rest.empty()) {
    if (!Rest.endswith("}"))
      return makeError(Who + ": expected '}' to end the options of '" + Name +
                       "', not '" + Rest + "'");
    StringRef Inner = Rest.drop_front().drop_back();
    if (!Inner.trim().empty())
      Inner.split(Items, ',');
  }
  StringRef Known;
  switch (Opts.Strategy) {
  case ColocateStrategyKind::TF:
    Known = "it takes none";
    break;
  case ColocateStrategyKind::Merge:
    Known = "expected groups= or threshold=";
    break;
  case ColocateStrategyKind::METIS:
    Known = "expected groups=";
    break;
  case ColocateStrategyKind::Scope:
    Known = "expected depth=";
    break;
  }
  bool HasGroups = false;
  for (StringRef Item : Items) {
    auto [Key, Val] = Item.split('=');
    Key = Key.trim();
    Val = Val.trim();
    if (!Item.contains('=') || Key.empty() || Val.empty())
      return makeError(Who + ": expected key=value, not '" + Item.trim() + "'");
    bool TakesGroups = Opts.Strategy == ColocateStrategyKind::Merge ||
                       Opts.Strategy == ColocateStrategyKind::METIS;
    if (Key == "groups" && TakesGroups) {
      if (!parseCount(Val, Opts.Groups))
        return makeError(Who + ": groups must be a positive integer, not '" +
                         Val + "'");
      HasGroups = true;
      continue;
    }
    if (Key == "threshold" && Opts.Strategy == ColocateStrategyKind::Merge) {
      double S;
      if (!parseDouble(Val, S) || !(S > 0))
        return makeError(Who +
                         ": threshold must be a positive number of seconds, "
                         "not '" +
                         Val + "'");
      Opts.Threshold = S;
      continue;
    }
    if (Key == "depth" && Opts.Strategy == ColocateStrategyKind::Scope) {
      if (!parseCount(Val, Opts.Depth))
        return makeError(Who + ": depth must be a positive integer, not '" +
                         Val + "'");
      continue;
    }
    return makeError(Who + ": unknown option '" + Key + "' (" + Known + ")");
  }
  if ((Opts.Strategy == ColocateStrategyKind::Merge ||
       Opts.Strategy == ColocateStrategyKind::METIS) &&
      !HasGroups)
    return makeError(Who + ": groups= is required (e.g. strategy=" + Name +
                     "{groups=64})");
  return Error::success();
}

Expected<ColocateOptions>
ColocatePass::parseOptions(ArrayRef<std::pair<std::string, std::string>> KVs) {
  ColocateOptions Opts;
  bool HasStrategy = false;
  for (const auto &[Key, Value] : KVs) {
    if (Key != "strategy")
      return makeError("colocate: unknown option '" + Key +
                       "' (expected strategy=)");
    if (HasStrategy)
      return makeError("colocate: strategy= is given twice");
    HasStrategy = true;
    if (Error E = parseStrategy(Value, Opts))
      return std::move(E);
  }
  return Opts;
}

static std::string formatShare(double Part, double Total) {
  std::string S;
  raw_string_ostream OS(S);
  OS << format("%.1f", Total > 0 ? 100 * Part / Total : 0.0) << " %";
  return S;
}

/// "colocate{...}: 412 groups from 1688 ops; largest group 'x' (35 ops):
/// 12.3 % of compute, 8.1 % of memory". The largest group is the one with
/// the most compute (the most ops when the graph has no costs); memory is
/// the static estimate of getOpMemory.
static void printReport(raw_ostream &OS, const Graph &G, const Grouping &Gr,
                        const ColocateOptions &Opts, const Cluster *C) {
  printColocatePipeline(OS, Opts);
  unsigned N = G.getNumOps();
  OS << ": " << Gr.NumGroups << (Gr.NumGroups == 1 ? " group" : " groups")
     << " from " << N << (N == 1 ? " op" : " ops");
  if (!Gr.NumGroups) {
    OS << '\n';
    return;
  }
  Expected<std::vector<double>> Costs = getComputeCosts(G, C, "colocate");
  bool HasCosts = bool(Costs);
  if (!HasCosts)
    consumeError(Costs.takeError());
  std::vector<uint64_t> OpMemory = getOpMemory(G);
  std::vector<double> Compute(Gr.NumGroups, 0);
  std::vector<uint64_t> Memory(Gr.NumGroups, 0);
  std::vector<unsigned> Size(Gr.NumGroups, 0);
  std::vector<OpId> First(Gr.NumGroups, NoId);
  double TotalCompute = 0, TotalMemory = 0;
  for (OpId O = 0; O != N; ++O) {
    uint32_t X = Gr.GroupOf[O];
    if (HasCosts) {
      Compute[X] += (*Costs)[O];
      TotalCompute += (*Costs)[O];
    }
    Memory[X] += OpMemory[O];
    TotalMemory += double(OpMemory[O]);
    ++Size[X];
    if (First[X] == NoId)
      First[X] = O;
  }
  uint32_t Largest = 0;
  for (uint32_t X = 1; X != Gr.NumGroups; ++X)
    if (HasCosts ? Compute[X] > Compute[Largest] : Size[X] > Size[Largest])
      Largest = X;
  // A group is named by its first op, or by its scope under scope{}.
  StringRef Label = G.getOp(First[Largest]).Name;
  if (Opts.Strategy == ColocateStrategyKind::Scope) {
    for (OpId O = First[Largest]; O != N; ++O) {
      const Op &Node = G.getOp(O);
      StringRef Scope = getNameScope(
          Node.SourceName.empty() ? Node.Name : Node.SourceName, Opts.Depth);
      if (Gr.GroupOf[O] == Largest && !Scope.empty()) {
        Label = Scope;
        break;
      }
    }
  }
  OS << "; largest group '" << Label << "' (" << Size[Largest]
     << (Size[Largest] == 1 ? " op" : " ops") << "): ";
  if (HasCosts)
    OS << formatShare(Compute[Largest], TotalCompute) << " of compute, ";
  OS << formatShare(double(Memory[Largest]), TotalMemory) << " of memory\n";
}

Error ColocatePass::run(Graph &G, PassContext &Ctx) {
  Expected<Grouping> Gr = computeGroups(G, Opts, Ctx.TheCluster, Ctx.Seed);
  if (!Gr)
    return Gr.takeError();
  for (OpId O = 0, E = G.getNumOps(); O != E; ++O)
    ann::set(G.getOp(O), ann::Group, int64_t(Gr->GroupOf[O]));
  ann::set(G, ann::Groups, int64_t(Gr->NumGroups));
  if (Ctx.Report)
    printReport(*Ctx.Report, G, *Gr, Opts, Ctx.TheCluster);
  return Error::success();
}

} // namespace dp
