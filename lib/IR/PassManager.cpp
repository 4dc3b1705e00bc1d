//===- PassManager.cpp - Passes over a dp::Graph --------------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/IR/PassManager.h"
#include "dp/IR/Graph.h"
#include "dp/IR/Verifier.h"
#include "dp/Support/Diagnostics.h"

using namespace llvm;

namespace dp {

Error PassManager::run(Graph &G, PassContext &Ctx) {
  std::vector<std::unique_ptr<Timer>> PassTimers;
  for (auto &P : Passes) {
    Optional<TimeRegion> Region;
    if (Timers) {
      PassTimers.push_back(
          std::make_unique<Timer>(P->name(), P->name(), *Timers));
      Region.emplace(*PassTimers.back());
    }
    auto Before = Ctx.Analyses.snapshot();
    if (Error E = P->run(G, Ctx))
      return E;
    if (!P->preservesAnalyses())
      Ctx.Analyses.drop(Before);
    Region.reset();
    if (!VerifyEach)
      continue;
    if (Error E = verifyGraph(G))
      return joinErrors(makeError("the graph is malformed after pass '" +
                                  P->name() + "'"),
                        std::move(E));
  }
  return Error::success();
}

std::vector<std::pair<std::string, const void *>>
AnalysisCache::snapshot() const {
  std::vector<std::pair<std::string, const void *>> Out;
  for (const auto &KV : Results)
    Out.emplace_back(KV.first().str(), KV.second.get());
  return Out;
}

void AnalysisCache::drop(
    const std::vector<std::pair<std::string, const void *>> &Before) {
  for (const auto &[Key, Result] : Before) {
    auto It = Results.find(Key);
    if (It != Results.end() && It->second.get() == Result)
      Results.erase(It);
  }
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
