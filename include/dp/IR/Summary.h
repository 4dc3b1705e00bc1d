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

#include <string>

namespace dp {

class Graph;

/// Writes the summary of \p G to \p OS.
void printGraphSummary(llvm::raw_ostream &OS, const Graph &G);

/// Whether \p G looks exported with BatchNorm folded into its convolutions
/// (torch.onnx.export's default, TrainingMode.EVAL, does): it has
/// Conv ops and no BatchNormalization, and some Conv's weight or bias has
/// a name the exporter made ("onnx::Conv_497") instead of a parameter's.
/// If so, says what it saw ("24 Conv weights and biases (of 20 Convs)
/// are the exporter's constants ('onnx::Conv_497', ...) and no
/// BatchNormalization is left"), else "".
std::string describeFoldedBatchNorm(const Graph &G);

/// Writes the summary to the pipeline's report stream.
class SummaryPass {
public:
  static llvm::StringRef name() { return "print-summary"; }
  static GraphChange changes() { return GraphChange::None; }
  llvm::Error run(Graph &G, PassContext &Ctx);
};

} // namespace dp

#endif // DP_IR_SUMMARY_H
