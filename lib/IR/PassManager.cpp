//===- PassManager.cpp - Passes over a dp::Graph --------------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/IR/PassManager.h"
#include "dp/IR/Graph.h"
#include "dp/IR/TextFormat.h"
#include "dp/IR/Verifier.h"
#include "dp/Support/Diagnostics.h"

using namespace llvm;

namespace dp {

/// The pass's own verification: the IR invariants, and that it changed
/// only what it declares.
static Error verifyAfter(const Graph &G, const detail::PassConcept &P,
                         const GraphParts &Before) {
  if (Error E = verifyGraph(G))
    return joinErrors(
        makeError("the graph is malformed after pass '" + P.name() + "'"),
        std::move(E));
  GraphChange Undeclared = GraphParts::of(G).differences(Before) & ~P.changes();
  if (Undeclared != GraphChange::None)
    return makeError("pass '" + P.name() + "' changed the graph's " +
                     describeChange(Undeclared) +
                     ", but declares that it changes " +
                     describeChange(P.changes()));
  return Error::success();
}

Error PassManager::run(Graph &G, PassContext &Ctx) {
  std::vector<std::unique_ptr<Timer>> PassTimers;
  for (auto &P : Passes) {
    Optional<GraphParts> Before;
    if (VerifyEach)
      Before = GraphParts::of(G);
    Optional<TimeRegion> Region;
    if (Timers) {
      PassTimers.push_back(
          std::make_unique<Timer>(P->name(), P->name(), *Timers));
      Region.emplace(*PassTimers.back());
    }
    auto Stored = Ctx.Analyses.snapshot();
    if (Error E = P->run(G, Ctx))
      return E;
    Ctx.Analyses.drop(Stored, P->changes());
    Region.reset();
    if (VerifyEach)
      if (Error E = verifyAfter(G, *P, *Before))
        return E;
  }
  return Error::success();
}

GraphChange getAnnotationPart(StringRef Name, bool OnGraph) {
  if (OnGraph) {
    if (Name == "step_time_s" || Name == "lower_bound_s" || Name == "oom")
      return GraphChange::None;
    if (Name == "placer")
      return GraphChange::Devices;
    if (Name == "cluster")
      return GraphChange::Costs;
    if (Name == "groups")
      return GraphChange::Groups;
    return GraphChange::Structure;
  }
  if (Name == "device")
    return GraphChange::Devices;
  if (Name == "group")
    return GraphChange::Groups;
  if (Name.startswith("time.") || Name.startswith("time_shared.") ||
      Name == "flops" || Name == "output_bytes" || Name == "persistent_bytes" ||
      Name == "workspace_bytes" || Name == "cost_source" || Name == "cost_note")
    return GraphChange::Costs;
  return GraphChange::Structure;
}

std::string describeChange(GraphChange C) {
  static constexpr std::pair<GraphChange, StringLiteral> Names[] = {
      {GraphChange::Devices, "devices"},
      {GraphChange::Costs, "costs"},
      {GraphChange::Groups, "groups"},
      {GraphChange::Structure, "structure"}};
  std::string Out;
  for (const auto &[Part, Name] : Names)
    if ((C & Part) != GraphChange::None)
      Out += (Out.empty() ? "" : ", ") + Name.str();
  return Out.empty() ? "nothing" : Out;
}

GraphParts GraphParts::of(const Graph &G) {
  GraphParts Parts;
  raw_string_ostream Devices(Parts.Devices), Costs(Parts.Costs),
      Groups(Parts.Groups), Structure(Parts.Structure);
  auto Write = [&](const AttributeList &Annotations, bool OnGraph) {
    for (const NamedAttribute &A : Annotations) {
      GraphChange Part = getAnnotationPart(A.Name, OnGraph);
      if (Part == GraphChange::None)
        continue;
      raw_ostream &OS = Part == GraphChange::Devices  ? Devices
                        : Part == GraphChange::Costs  ? Costs
                        : Part == GraphChange::Groups ? Groups
                                                      : Structure;
      OS << A.Name << '=';
      printAttribute(OS, A.Value);
      OS << ' ';
    }
  };
  for (const Op &O : G.ops()) {
    for (raw_ostream *OS : {&Devices, &Costs, &Groups, &Structure})
      *OS << '\n' << O.Name << ": ";
    Structure << O.Domain << "::" << O.Type << " (";
    for (TensorId T : O.Operands)
      Structure << T << ' ';
    Structure << ") -> (";
    for (TensorId T : O.Results)
      Structure << T << ' ';
    Structure << ") ";
    for (const NamedAttribute &A : O.Attrs) {
      Structure << A.Name << '=';
      printAttribute(Structure, A.Value);
      Structure << ' ';
    }
    Write(O.Annotations, /*OnGraph=*/false);
  }
  Structure << "\ngraph " << G.getName() << ": ";
  for (const OpsetImport &I : G.getOpsets())
    Structure << I.Domain << '@' << I.Version << ' ';
  for (const Tensor &T : G.tensors()) {
    Structure << T.Name << ':' << int(T.Kind) << ':';
    printTensorType(Structure, T.Type);
    Structure << ' ';
  }
  for (ArrayRef<TensorId> List :
       {G.getInputs(), G.getWeights(), G.getOutputs()}) {
    Structure << '|';
    for (TensorId T : List)
      Structure << T << ' ';
  }
  Write(G.getAnnotations(), /*OnGraph=*/true);
  for (raw_string_ostream *OS : {&Devices, &Costs, &Groups, &Structure})
    OS->flush();
  return Parts;
}

GraphChange GraphParts::differences(const GraphParts &Other) const {
  GraphChange Out = GraphChange::None;
  if (Devices != Other.Devices)
    Out |= GraphChange::Devices;
  if (Costs != Other.Costs)
    Out |= GraphChange::Costs;
  if (Groups != Other.Groups)
    Out |= GraphChange::Groups;
  if (Structure != Other.Structure)
    Out |= GraphChange::Structure;
  return Out;
}

std::vector<std::pair<std::string, const void *>>
AnalysisCache::snapshot() const {
  std::vector<std::pair<std::string, const void *>> Out;
  for (const auto &KV : Results)
    Out.emplace_back(KV.first().str(), KV.second.Value.get());
  return Out;
}

void AnalysisCache::drop(
    const std::vector<std::pair<std::string, const void *>> &Before,
    GraphChange Changed) {
  for (const auto &[Key, Result] : Before) {
    auto It = Results.find(Key);
    if (It != Results.end() && It->second.Value.get() == Result &&
        (It->second.DependsOn & Changed) != GraphChange::None)
      Results.erase(It);
  }
}

void AnalysisCache::invalidate(GraphChange Changed) {
  std::vector<std::string> Stale;
  for (const auto &KV : Results)
    if ((KV.second.DependsOn & Changed) != GraphChange::None)
      Stale.push_back(KV.first().str());
  for (const std::string &Key : Stale)
    Results.erase(Key);
}

bool PassManager::setDriverOption(StringRef Key, StringRef Value) {
  bool Taken = false;
  for (auto &P : Passes)
    Taken |= P->setDriverOption(Key, Value);
  return Taken;
}

void PassManager::printPipeline(raw_ostream &OS) const {
  for (size_t I = 0, E = Passes.size(); I != E; ++I) {
    if (I)
      OS << ',';
    Passes[I]->printPipeline(OS);
  }
}

} // namespace dp
