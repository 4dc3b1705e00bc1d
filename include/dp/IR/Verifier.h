//===- dp/IR/Verifier.h - Checking the IR invariants ------------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Checks the invariants listed in Graph.h. Every broken invariant becomes
/// a located error; all of them are returned together (joinErrors).
///
//===----------------------------------------------------------------------===//

#ifndef DP_IR_VERIFIER_H
#define DP_IR_VERIFIER_H

#include "dp/IR/PassManager.h"

namespace dp {

class Graph;

/// Returns success if \p G satisfies every IR invariant.
llvm::Error verifyGraph(const Graph &G);

/// The "verify" pass: fails the pipeline if the graph is malformed.
class VerifierPass {
public:
  static llvm::StringRef name() { return "verify"; }
  static GraphChange changes() { return GraphChange::None; }
  llvm::Error run(Graph &G, PassContext &Ctx) { return verifyGraph(G); }
};

} // namespace dp

#endif // DP_IR_VERIFIER_H
