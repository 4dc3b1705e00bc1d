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
    if (Error E = P->run(G, Ctx))
      return E;
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

void PassManager::printPipeline(raw_ostream &OS) const {
  for (size_t I = 0, E = Passes.size(); I != E; ++I) {
    if (I)
      OS << ',';
    Passes[I]->printPipeline(OS);
  }
}

} // namespace dp
