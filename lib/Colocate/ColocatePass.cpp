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

/// The options inside strategy=NAME{...} of strategy \p K, bound to \p O.
static OptionTable describeStrategy(ColocateStrategyKind K,
                                    ColocateOptions &O) {
  OptionTable T(
      ("colocate{strategy=" + getColocateStrategyName(K) + "}").str());
  // Counts fit METIS's 32-bit idx_t.
  unsigned MaxCount = unsigned(std::numeric_limits<int32_t>::max());
  bool TakesGroups =
      K == ColocateStrategyKind::Merge || K == ColocateStrategyKind::METIS;
  if (TakesGroups)
    T.integer("groups", O.Groups, 1u, MaxCount)
        .printAlways()
        .check([K](const OptionTable &T) -> Error {
          if (T.wasGiven("groups"))
            return Error::success();
          return T.makeError("groups= is required (e.g. strategy=" +
                             getColocateStrategyName(K) + "{groups=64})");
        });
  if (K == ColocateStrategyKind::Merge)
    T.number("threshold", O.Threshold, "S", "a positive number of seconds",
             [](double S) { return S > 0; });
  if (K == ColocateStrategyKind::Scope)
    T.integer("depth", O.Depth, 1u, MaxCount, "D").printAlways();
  return T;
}

/// "NAME{key=value,...}" for strategy=.
static std::string printStrategy(const ColocateOptions &Opts) {
  ColocateOptions Copy = Opts, Defaults;
  std::string S;
  raw_string_ostream OS(S);
  OS << getColocateStrategyName(Opts.Strategy);
  describeStrategy(Opts.Strategy, Copy)
      .printChanged(OS, describeStrategy(Opts.Strategy, Defaults));
  return OS.str();
}

/// Parses the value of strategy=: "NAME" or "NAME{key=value,...}".
static Error parseStrategy(StringRef Value, ColocateOptions &O) {
  size_t Brace = Value.find('{');
  StringRef Name = Value.substr(0, Brace).trim();
  StringRef Rest = Value.substr(Brace);
  Optional<ColocateStrategyKind> K = parseColocateStrategyName(Name);
  if (!K)
    return makeError("unknown strategy '" + Name +
                     "' (available: " + listColocateStrategyNames() + ")");
  O = ColocateOptions();
  O.Strategy = *K;
  OptionTable T = describeStrategy(*K, O);
  if (!Rest.empty() && !Rest.endswith("}"))
    return T.makeError("expected '}' to end the options of '" + Name +
                       "', not '" + Rest + "'");
  Expected<std::vector<std::pair<std::string, std::string>>> Options =
      splitOptionList(T.getWho(),
                      Rest.empty() ? Rest : Rest.drop_front().drop_back());
  if (!Options)
    return Options.takeError();
  return T.parse(*Options);
}

/// strategy='s syntax: "tf|merge{groups=N,threshold=S}|...".
static std::string getStrategyUsage() {
  std::string S;
  for (ColocateStrategyKind K :
       {ColocateStrategyKind::TF, ColocateStrategyKind::Merge,
        ColocateStrategyKind::METIS, ColocateStrategyKind::Scope}) {
    ColocateOptions O;
    std::string Inner = describeStrategy(K, O).getUsage();
    S += (S.empty() ? "" : "|") + getColocateStrategyName(K).str() +
         (Inner.empty() ? "" : "{" + Inner + "}");
  }
  return S;
}

OptionTable ColocatePass::describeOptions(ColocateOptions &O) {
  OptionTable T(name().str());
  T.custom(
       "strategy", getStrategyUsage(),
       [&O](StringRef Value) { return parseStrategy(Value, O); },
       [&O] { return std::vector<std::string>{printStrategy(O)}; })
      .printAlways();
  return T;
}

void printColocatePipeline(raw_ostream &OS, const ColocateOptions &Opts) {
  printPassOptions(OS, ColocatePass::name(), Opts,
                   ColocatePass::describeOptions);
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
  // TensorFlow's rule gathers a forward-only graph whose results flow to
  // one output into one group: every placer then uses one device.
  double Share = HasCosts && TotalCompute > 0 ? Compute[Largest] / TotalCompute
                                              : double(Size[Largest]) / N;
  bool Training = any_of(G.ops(), [](const Op &Node) {
    return ann::get(Node, ann::Phase).getValueOr("") == "backward";
  });
  if (Opts.Strategy == ColocateStrategyKind::TF && !Training && N > 1 &&
      Share > 0.5) {
    printColocatePipeline(OS, Opts);
    OS << ": warning: one group holds " << formatShare(Share, 1.0)
       << " of the compute, so placers will put it on one device: "
          "TensorFlow's rule joins a group to the one group that reads its "
          "results, which gathers a graph without a backward pass into "
          "few groups (ColocRL applies it to training steps, whose "
          "gradients keep groups apart); for an inference graph use "
          "strategy=merge{groups=N} or no colocate\n";
  }
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
