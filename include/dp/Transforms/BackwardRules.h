//===- dp/Transforms/BackwardRules.h - How ops are differentiated -*- C++ -*-=//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The backward rule of each forward op kind: which of its operands get a
/// gradient, which forward tensors its backward op (dp::<Type>Grad) reads,
/// and what that backward op costs as a multiple of the forward op: the
/// BACKWARD field of the op registry (include/dp/IR/Ops.def). The
/// training-graph pass builds backward ops from these rules; the cost model
/// reads the multiples from the registry too (docs/transforms.md lists them
/// all, under "Backward cost multiples").
///
//===----------------------------------------------------------------------===//

#ifndef DP_TRANSFORMS_BACKWARDRULES_H
#define DP_TRANSFORMS_BACKWARDRULES_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>

namespace dp {

/// A set of operand or result indices: bit I for index I, or every index.
class IndexSet {
public:
  constexpr IndexSet() = default;
  constexpr IndexSet(std::initializer_list<unsigned> Indices) {
    for (unsigned I : Indices)
      Bits |= uint64_t(1) << I;
  }
  static constexpr IndexSet all() {
    IndexSet S;
    S.All = true;
    return S;
  }

  constexpr bool contains(unsigned I) const {
    return All || (I < 64 && ((Bits >> I) & 1));
  }
  constexpr bool isAll() const { return All; }
  constexpr bool empty() const { return !All && !Bits; }
  /// The indices in the set below 64, for printing.
  uint64_t getBits() const { return Bits; }

private:
  uint64_t Bits = 0;
  bool All = false;
};

enum class BackwardKind : uint8_t {
  /// The op has no gradient (Shape, comparisons, Constant, ...):
  /// gradients stop there.
  None,
  /// The op has a rule of its own.
  Listed,
  /// Control flow (If, Loop, Scan), ops of other domains and unknown ops:
  /// every operand gets a gradient and the backward op reads them all.
  Generic,
};

struct BackwardRule {
  /// The forward op type ("Conv"); empty for the generic rule.
  llvm::StringRef Type;
  BackwardKind Kind = BackwardKind::Generic;
  /// Operands that get a gradient (when floating-point and on a path from
  /// a weight or a differentiable input).
  IndexSet DiffOperands;
  /// Results whose gradients flow back (others, like a Dropout mask or
  /// saved statistics, get none).
  IndexSet DiffResults;
  /// Forward operands and results the backward op reads, in this order
  /// after the result gradients.
  IndexSet SavedOperands;
  IndexSet SavedResults;
  /// The backward op's cost as a multiple of the forward op's.
  double CostMultiple = 0;
};

/// The rule of ops of type \p Type in \p Domain ("" or "ai.onnx" for the
/// default domain): a listed rule, a None rule, or the generic rule.
const BackwardRule &getBackwardRule(llvm::StringRef Domain,
                                    llvm::StringRef Type);

/// Every rule of the default domain, None and Listed ones, sorted by op
/// type; then the generic rule (empty Type) last.
llvm::ArrayRef<BackwardRule> getBackwardRules();

} // namespace dp

#endif // DP_TRANSFORMS_BACKWARDRULES_H
