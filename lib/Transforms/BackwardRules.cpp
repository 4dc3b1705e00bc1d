//===- BackwardRules.cpp - How ops are differentiated ---------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
//
// The backward rules of include/dp/IR/Ops.def. docs/transforms.md shows
// them to users (the TransformsTests unit test checks that the two agree).
//
//===----------------------------------------------------------------------===//

#include "dp/Transforms/BackwardRules.h"

#include "llvm/ADT/STLExtras.h"

#include <vector>

using namespace llvm;

namespace dp {

using Idx = IndexSet;

static BackwardRule listed(Idx Diff, Idx SavedOperands, Idx SavedResults,
                           double Multiple, Idx DiffResults = Idx::all()) {
  BackwardRule R;
  R.Kind = BackwardKind::Listed;
  R.DiffOperands = Diff;
  R.DiffResults = DiffResults;
  R.SavedOperands = SavedOperands;
  R.SavedResults = SavedResults;
  R.CostMultiple = Multiple;
  return R;
}

static BackwardRule none() {
  BackwardRule R;
  R.Kind = BackwardKind::None;
  return R;
}

static BackwardRule makeGenericRule() {
  BackwardRule R;
  R.Kind = BackwardKind::Generic;
  R.DiffOperands = Idx::all();
  R.DiffResults = Idx::all();
  R.SavedOperands = Idx::all();
  R.CostMultiple = 2.0;
  return R;
}

static BackwardRule named(StringRef Type, BackwardRule R) {
  R.Type = Type;
  return R;
}

static std::vector<BackwardRule> makeRules() {
  // The registry's rules, less its GENERIC_GRAD records: getBackwardRule
  // gives the generic rule to every op without a rule of its own.
#define IDX(...) Idx{__VA_ARGS__}
#define IDX_ALL Idx::all()
#define GRAD(DIFF, SAVED_OPERANDS, SAVED_RESULTS, MULTIPLE)                    \
  listed(DIFF, SAVED_OPERANDS, SAVED_RESULTS, MULTIPLE)
#define GRAD_OF(DIFF, SAVED_OPERANDS, SAVED_RESULTS, MULTIPLE, DIFF_RESULTS)   \
  listed(DIFF, SAVED_OPERANDS, SAVED_RESULTS, MULTIPLE, DIFF_RESULTS)
#define NO_GRAD none()
#define GENERIC_GRAD makeGenericRule()
  std::vector<BackwardRule> Rules = {
#define OP(NAME, COST, BACKWARD, ONEDNN, FEATURE, OPSET, RUNTIME)              \
  named(NAME, BACKWARD),
#include "dp/IR/Ops.def"
  };
#undef IDX
#undef IDX_ALL
#undef GRAD
#undef GRAD_OF
#undef NO_GRAD
#undef GENERIC_GRAD
  llvm::erase_if(Rules, [](const BackwardRule &R) {
    return R.Kind == BackwardKind::Generic;
  });
  llvm::sort(Rules, [](const BackwardRule &A, const BackwardRule &B) {
    return A.Type < B.Type;
  });
  assert(std::adjacent_find(Rules.begin(), Rules.end(),
                            [](const BackwardRule &A, const BackwardRule &B) {
                              return A.Type == B.Type;
                            }) == Rules.end() &&
         "an op type has two rules");
  Rules.push_back(makeGenericRule());
  return Rules;
}

ArrayRef<BackwardRule> getBackwardRules() {
  static const std::vector<BackwardRule> Rules = makeRules();
  return Rules;
}

const BackwardRule &getBackwardRule(StringRef Domain, StringRef Type) {
  ArrayRef<BackwardRule> Rules = getBackwardRules();
  const BackwardRule &Generic = Rules.back();
  if (!Domain.empty() && Domain != "ai.onnx")
    return Generic;
  ArrayRef<BackwardRule> Listed = Rules.drop_back();
  auto It = llvm::partition_point(
      Listed, [&](const BackwardRule &R) { return R.Type < Type; });
  if (It != Listed.end() && It->Type == Type)
    return *It;
  return Generic;
}

} // namespace dp
