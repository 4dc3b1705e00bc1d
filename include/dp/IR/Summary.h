//===- dp/IR/Summary.h - A human summary of a graph -------------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The "print-summary" pass writes what a graph holds for a person to
/// read: op and tensor counts, weight and activation bytes, the most
/// frequent op types, and the graph's inputs and outputs.
///
//===----------------------------------------------------------------------===//

#ifndef DP_IR_SUMMARY_H
#define DP_IR_SUMMARY_H

#include "dp/IR/PassManager.h"

namespace dp {

class Graph;

/// Writes the summary of \p G to \p OS.
void printGraphSummary(llvm::raw_ostream &OS, const Graph &G);

/// Writes the summary to the pipeline's report stream.
class SummaryPass {
public:
  static llvm::StringRef name() { return "print-summary"; }
  static bool preservesAnalyses() { return true; }
  llvm::Error run(Graph &G, PassContext &Ctx);
};

} // namespace dp

#endif // DP_IR_SUMMARY_H
