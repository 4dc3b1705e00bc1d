//===- dp/Cost/OpCost.h - Analytical (roofline) op costs --------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The analytical cost model: what one execution of an op does (FLOPs,
/// bytes moved to and from memory, kernel launches), and how long that
/// takes on a device type by the roofline
///
///   time = max(flops / (peak(dtype) * eff_compute),
///              bytes / (bandwidth * eff_memory))
///          + launches * launch_fraction * launch_overhead
///
/// with efficiency factors per kind of kernel (OpCostKind) and device kind.
/// The factors are kept in one table, getCostKindInfo(); docs/cost.md gives the
/// reasoning behind each figure and the FLOP and byte formula of every op kind.
/// Backward ops of training graphs cost a multiple of their forward op
/// (getBackwardMultiple()).
///
//===----------------------------------------------------------------------===//

#ifndef DP_COST_OPCOST_H
#define DP_COST_OPCOST_H

#include "dp/Cluster/Cluster.h"
#include "dp/IR/Graph.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dp {

/// The kind of kernel an op runs, which decides how close to the device's
/// peaks it gets.
enum class OpCostKind : uint8_t {
  /// Matrix products: MatMul, Gemm, Einsum.
  Gemm,
  /// Convolutions: Conv, ConvTranspose.
  Conv,
  /// Whole-sequence recurrent ops: LSTM, GRU, RNN.
  Recurrent,
  /// MaxPool, AveragePool, Global*Pool, LpPool.
  Pooling,
  /// BatchNormalization, LayerNormalization, InstanceNormalization, ...
  Normalization,
  /// Softmax, LogSoftmax, softmax cross-entropy.
  Softmax,
  /// Reduce*, ArgMax, ArgMin, TopK.
  Reduction,
  /// One output element from the same element of each input: Add, Relu,
  /// Cast, ... (with broadcasting), and Sum.
  Elementwise,
  /// Gather, GatherElements, GatherND, Scatter*: irregular accesses.
  Indexing,
  /// Copies that move data without arithmetic: Transpose, Concat, Split,
  /// Slice, Pad, Expand, Tile, Resize, ...
  DataMovement,
  /// Zero-copy views: Reshape, Flatten, Squeeze, Unsqueeze, Identity.
  View,
  /// Ops whose result is known without touching data: Shape, Size,
  /// Constant.
  Metadata,
  /// If, Loop, Scan: costed from their body summaries.
  ControlFlow,
  /// Optimizer updates of training graphs (dp::SGDUpdate, ...).
  Update,
  /// Ops the model does not know: costed as elementwise over the results.
  Unknown,
};

constexpr unsigned NumOpCostKinds = unsigned(OpCostKind::Unknown) + 1;

/// How close a kind of kernel gets to a device's peaks.
struct Efficiency {
  /// Fraction of the peak FLOP/s reached.
  double Compute;
  /// Fraction of the memory bandwidth reached.
  double Memory;
};

/// Everything the cost model assumes about one OpCostKind.
struct CostKindInfo {
  OpCostKind Kind;
  /// Short name used in docs and notes ("gemm", "data-movement").
  llvm::StringRef Name;
  /// Efficiencies on GPUs (and accelerators) and on CPUs.
  Efficiency GPU;
  Efficiency CPU;
  /// Fraction of the device's launch overhead one execution pays: 1 for a
  /// kernel, less for ops that launch none and only cost the framework's
  /// dispatch.
  double LaunchFraction;
};

/// The one table of efficiency factors.
const CostKindInfo &getCostKindInfo(OpCostKind K);
llvm::StringRef getOpCostKindName(OpCostKind K);
/// The factors for device kind \p D (accelerators use the GPU figures).
Efficiency getEfficiency(OpCostKind K, DeviceKind D);

/// The cost of the backward op of an op of type \p ForwardType in
/// \p Domain, as a multiple of the forward op's (docs/cost.md, "Backward
/// cost multiples"): 2 for matrix products, convolutions and
/// normalizations, 1 for most elementwise, pooling and data-movement ops,
/// 2 (the generic rule's) for ops without a backward rule of their own.
double getBackwardMultiple(llvm::StringRef Domain, llvm::StringRef ForwardType);

/// The default-domain op types the model has formulas for, sorted.
llvm::ArrayRef<llvm::StringRef> getKnownOpTypes();

/// The kind of op \p Type in \p Domain ("" is ONNX's default domain; the
/// training ops are in "dp"). Unknown for ops the model does not know.
OpCostKind classifyOp(llvm::StringRef Domain, llvm::StringRef Type);

/// The work of one execution of an op.
struct OpWork {
  OpCostKind Kind = OpCostKind::Unknown;
  /// Floating-point operations (a multiply-add is 2).
  double Flops = 0;
  /// Bytes read from and written to device memory.
  double Bytes = 0;
  /// Kernels launched (1 for most ops; a control-flow op launches one per
  /// body node and iteration, a recurrent op one per time step).
  double Launches = 1;
  /// The element type whose peak FLOP/s applies.
  DTypeKind ComputeType = DTypeKind::F32;
  /// Bytes that stay allocated for the whole step (optimizer state).
  uint64_t PersistentBytes = 0;
  /// Set when the estimate rests on an assumption worth telling the user,
  /// e.g. "unknown op kind: treated as elementwise".
  std::string Note;
};

/// Estimates the work of op \p O of \p G from its type, attributes and
/// the static shapes of its operands and results. Never fails: what the
/// model cannot analyse is treated as elementwise and says so in Note.
OpWork estimateWork(const Graph &G, OpId O);

/// The roofline time of \p W on device type \p T, in seconds, launch
/// overhead included.
double getRooflineTime(const OpWork &W, const DeviceType &T);

/// Whether \p O is a backward op of a training graph: domain "dp" and a
/// type "<ForwardType>Grad".
bool isBackwardOp(const Op &O);
/// Whether \p O is an optimizer update of a training graph.
bool isUpdateOp(const Op &O);

//===----------------------------------------------------------------------===//
// Einsum
//===----------------------------------------------------------------------===//

/// A parsed Einsum equation. Labels are letters; an ellipsis is kept as the
/// single character '.'.
struct EinsumEquation {
  std::vector<std::string> Inputs;
  /// The output labels; for an implicit equation (no "->"), the ellipsis
  /// and then the labels used once, in alphabetical order.
  std::string Output;
};

/// Parses \p Equation for \p NumOperands operands ("ij,jk->ik",
/// "...ij,...jk", "bhqd,bhkd->bhqk").
llvm::Expected<EinsumEquation> parseEinsumEquation(llvm::StringRef Equation,
                                                   unsigned NumOperands);

/// FLOPs of evaluating \p Eq naively on operands of shapes \p Shapes: for
/// every point of the joint index space, one multiply per extra operand
/// and one add if some label is summed over. Fails when a label's sizes
/// disagree or a rank does not match.
llvm::Expected<double>
countEinsumFlops(const EinsumEquation &Eq,
                 llvm::ArrayRef<llvm::ArrayRef<int64_t>> Shapes);

} // namespace dp

#endif // DP_COST_OPCOST_H
