//===- dp/Transforms/TrainingGraph.h - One training step --------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The "training-graph" pass turns a forward graph into one training step,
/// which is what the placement papers place: the forward ops, a loss, a
/// backward op per differentiated forward op, and an optimizer update per
/// weight. docs/transforms.md states the contract the result follows
/// (names, operands, annotations `phase` and `colocate`); cost models and
/// placers rely on it.
///
//===----------------------------------------------------------------------===//

#ifndef DP_TRANSFORMS_TRAININGGRAPH_H
#define DP_TRANSFORMS_TRAININGGRAPH_H

#include "dp/IR/PassManager.h"
#include "dp/Support/Options.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/Optional.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <utility>

namespace dp {

class Graph;

enum class OptimizerKind : uint8_t {
  /// Plain SGD: no state.
  SGD,
  /// SGD with momentum: one velocity per weight element.
  Momentum,
  /// Adam: first and second moments per weight element.
  Adam,
};

/// "sgd", "momentum", "adam".
llvm::StringRef getOptimizerName(OptimizerKind K);
llvm::Optional<OptimizerKind> parseOptimizerName(llvm::StringRef Name);
/// The update op's type: "SGDUpdate", "MomentumUpdate", "AdamUpdate".
llvm::StringRef getOptimizerUpdateType(OptimizerKind K);
/// Copies of a weight the optimizer keeps as state (0, 1, 2).
unsigned getOptimizerStateCopies(OptimizerKind K);

struct TrainingGraphOptions {
  OptimizerKind Optimizer = OptimizerKind::Adam;
  /// Whether floating-point graph inputs are differentiated like weights
  /// (their gradients computed), or treated as data that needs none.
  bool InputGradients = true;
  /// Mixed precision: the optimizer keeps an f32 master copy of each
  /// 16-bit (f16, bf16) weight and its state in f32 (attribute
  /// `master_weights` of the update op): Adam's 16 bytes per parameter
  /// with the weight and its gradient. Auto: for 16-bit weights.
  enum class MasterWeightsKind : uint8_t { Auto, On, Off };
  MasterWeightsKind MasterWeights = MasterWeightsKind::Auto;
};

/// Adds the loss, backward and update ops to the forward graph \p G. Fails,
/// leaving \p G unchanged, when it has no floating-point output, when no
/// weight or differentiable input reaches the loss, or when it already is
/// a training graph.
llvm::Error buildTrainingGraph(Graph &G, const TrainingGraphOptions &Opts = {});

/// The "training-graph" pass.
class TrainingGraphPass {
public:
  explicit TrainingGraphPass(TrainingGraphOptions Opts = {}) : Opts(Opts) {}

  static llvm::StringRef name() { return "training-graph"; }
  /// Builds the step; warns on the report when the forward graph's
  /// BatchNorm was folded by its export (describeFoldedBatchNorm).
  llvm::Error run(Graph &G, PassContext &Ctx);
  void printPipeline(llvm::raw_ostream &OS) const;

  /// optimizer=sgd|momentum|adam, input-grads=true|false and
  /// master-weights=auto|true|false, bound to \p O.
  static OptionTable describeOptions(TrainingGraphOptions &O);
  static llvm::Expected<TrainingGraphOptions> parseOptions(OptionList Options) {
    return parsePassOptions<TrainingGraphOptions>(Options, describeOptions);
  }

private:
  TrainingGraphOptions Opts;
};

} // namespace dp

#endif // DP_TRANSFORMS_TRAININGGRAPH_H
