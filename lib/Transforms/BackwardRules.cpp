//===- BackwardRules.cpp - How ops are differentiated ---------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
//
// The table of backward rules. docs/transforms.md shows it to users (the
// TransformsTests unit test checks that the two agree).
//
//===----------------------------------------------------------------------===//

#include "dp/Transforms/BackwardRules.h"

#include "llvm/ADT/STLExtras.h"

#include <vector>

using namespace llvm;

namespace dp {

using Idx = IndexSet;

static BackwardRule listed(StringRef Type, Idx Diff, Idx SavedOperands,
                           Idx SavedResults, double Multiple,
                           Idx DiffResults = Idx::all()) {
  BackwardRule R;
  R.Type = Type;
  R.Kind = BackwardKind::Listed;
  R.DiffOperands = Diff;
  R.DiffResults = DiffResults;
  R.SavedOperands = SavedOperands;
  R.SavedResults = SavedResults;
  R.CostMultiple = Multiple;
  return R;
}

static BackwardRule none(StringRef Type) {
  BackwardRule R;
  R.Type = Type;
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

static std::vector<BackwardRule> makeRules() {
  const Idx All = Idx::all(), No;
  std::vector<BackwardRule> Rules = {
      // Matrix products and convolutions: dX and dW, each about the
      // forward's FLOPs.
      listed("MatMul", {0, 1}, {0, 1}, No, 2.0),
      listed("Gemm", {0, 1, 2}, {0, 1}, No, 2.0),
      listed("Conv", {0, 1, 2}, {0, 1}, No, 2.0),
      listed("ConvTranspose", {0, 1, 2}, {0, 1}, No, 2.0),
      listed("Einsum", All, All, No, 2.0),
      // Recurrent ops left whole: backpropagation through time.
      listed("LSTM", {0, 1, 2, 3, 5, 6, 7}, All, All, 2.0),
      listed("GRU", {0, 1, 2, 3, 5}, All, All, 2.0),
      listed("RNN", {0, 1, 2, 3, 5}, All, All, 2.0),

      // Elementwise binary and variadic ops.
      listed("Add", {0, 1}, No, No, 1.0),
      listed("Sub", {0, 1}, No, No, 1.0),
      listed("Mul", {0, 1}, {0, 1}, No, 2.0),
      listed("Div", {0, 1}, {0, 1}, No, 2.0),
      listed("Pow", {0, 1}, {0, 1}, {0}, 2.0),
      listed("PRelu", {0, 1}, {0, 1}, No, 2.0),
      listed("Max", All, All, {0}, 1.0),
      listed("Min", All, All, {0}, 1.0),
      listed("Sum", All, No, No, 1.0),
      listed("Mean", All, No, No, 1.0),
      listed("Where", {1, 2}, {0}, No, 1.0),
      listed("Mod", {0}, No, No, 1.0),

      // Elementwise unary ops, reading their result...
      listed("Relu", {0}, No, {0}, 1.0),
      listed("Sigmoid", {0}, No, {0}, 1.0),
      listed("Tanh", {0}, No, {0}, 1.0),
      listed("Exp", {0}, No, {0}, 1.0),
      listed("Sqrt", {0}, No, {0}, 1.0),
      listed("Reciprocal", {0}, No, {0}, 1.0),
      // ... or their input...
      listed("LeakyRelu", {0}, {0}, No, 1.0),
      listed("Elu", {0}, {0}, No, 1.0),
      listed("Selu", {0}, {0}, No, 1.0),
      listed("Celu", {0}, {0}, No, 1.0),
      listed("ThresholdedRelu", {0}, {0}, No, 1.0),
      listed("HardSigmoid", {0}, {0}, No, 1.0),
      listed("HardSwish", {0}, {0}, No, 1.0),
      listed("Gelu", {0}, {0}, No, 2.0),
      listed("Erf", {0}, {0}, No, 2.0),
      listed("Log", {0}, {0}, No, 1.0),
      listed("Abs", {0}, {0}, No, 1.0),
      listed("Softplus", {0}, {0}, No, 2.0),
      listed("Softsign", {0}, {0}, No, 2.0),
      listed("Mish", {0}, {0}, No, 2.0),
      listed("Shrink", {0}, {0}, No, 1.0),
      listed("Sin", {0}, {0}, No, 1.0),
      listed("Cos", {0}, {0}, No, 1.0),
      listed("Tan", {0}, {0}, No, 2.0),
      listed("Asin", {0}, {0}, No, 2.0),
      listed("Acos", {0}, {0}, No, 2.0),
      listed("Atan", {0}, {0}, No, 2.0),
      listed("Sinh", {0}, {0}, No, 1.0),
      listed("Cosh", {0}, {0}, No, 1.0),
      listed("Asinh", {0}, {0}, No, 2.0),
      listed("Acosh", {0}, {0}, No, 2.0),
      listed("Atanh", {0}, {0}, No, 2.0),
      listed("Clip", {0}, {0, 1, 2}, No, 1.0),
      // ... or nothing.
      listed("Neg", {0}, No, No, 1.0),
      listed("Identity", {0}, No, No, 1.0),
      listed("Cast", {0}, No, No, 1.0),
      listed("CastLike", {0}, No, No, 1.0),
      listed("Dropout", {0}, No, {1}, 1.0, {0}),

      // Normalizations: a reduction for the statistics' gradients, then an
      // elementwise pass.
      listed("BatchNormalization", {0, 1, 2}, {0, 1, 3, 4}, No, 2.0, {0}),
      listed("LayerNormalization", {0, 1, 2}, {0, 1}, {1, 2}, 2.0, {0}),
      listed("InstanceNormalization", {0, 1, 2}, {0, 1}, No, 2.0),
      listed("GroupNormalization", {0, 1, 2}, {0, 1}, No, 2.0),
      listed("LpNormalization", {0}, {0}, {0}, 2.0),
      listed("MeanVarianceNormalization", {0}, {0}, {0}, 2.0),
      listed("LRN", {0}, {0}, {0}, 2.0),
      listed("Softmax", {0}, No, {0}, 1.0),
      listed("LogSoftmax", {0}, No, {0}, 1.0),

      // Reductions: a broadcast of the result's gradient (axes read as
      // data), masked or scaled by the input for some.
      listed("ReduceSum", {0}, {1}, No, 1.0),
      listed("ReduceMean", {0}, {1}, No, 1.0),
      listed("ReduceMax", {0}, {0, 1}, {0}, 1.0),
      listed("ReduceMin", {0}, {0, 1}, {0}, 1.0),
      listed("ReduceProd", {0}, {0, 1}, {0}, 2.0),
      listed("ReduceL1", {0}, {0, 1}, No, 1.0),
      listed("ReduceL2", {0}, {0, 1}, {0}, 1.0),
      listed("ReduceSumSquare", {0}, {0, 1}, No, 1.0),
      listed("ReduceLogSum", {0}, {1}, {0}, 1.0),
      listed("ReduceLogSumExp", {0}, {0, 1}, {0}, 1.0),
      listed("CumSum", {0}, {1}, No, 1.0),

      // Pooling.
      listed("MaxPool", {0}, {0}, {0, 1}, 1.0, {0}),
      listed("AveragePool", {0}, No, No, 1.0),
      listed("GlobalAveragePool", {0}, No, No, 1.0),
      listed("GlobalMaxPool", {0}, {0}, {0}, 1.0),
      listed("LpPool", {0}, {0}, {0}, 1.0),
      listed("GlobalLpPool", {0}, {0}, {0}, 1.0),
      listed("MaxUnpool", {0}, {1}, No, 1.0),
      listed("MaxRoiPool", {0}, {0, 1}, {0}, 1.0),
      listed("RoiAlign", {0}, {1, 2}, No, 1.0),

      // Data movement: the gradient moves back the way the data came;
      // index and shape operands are read, never differentiated.
      listed("Reshape", {0}, No, No, 1.0),
      listed("Flatten", {0}, No, No, 1.0),
      listed("Squeeze", {0}, No, No, 1.0),
      listed("Unsqueeze", {0}, No, No, 1.0),
      listed("Transpose", {0}, No, No, 1.0),
      listed("Expand", {0}, No, No, 1.0),
      listed("Concat", All, No, No, 1.0),
      listed("Split", {0}, No, No, 1.0),
      listed("Slice", {0}, {1, 2, 3, 4}, No, 1.0),
      listed("Gather", {0}, {1}, No, 1.0),
      listed("GatherElements", {0}, {1}, No, 1.0),
      listed("GatherND", {0}, {1}, No, 1.0),
      listed("Scatter", {0, 2}, {1}, No, 1.0),
      listed("ScatterElements", {0, 2}, {1}, No, 1.0),
      listed("ScatterND", {0, 2}, {1}, No, 1.0),
      listed("Pad", {0}, {1, 3}, No, 1.0),
      listed("Tile", {0}, {1}, No, 1.0),
      listed("Resize", {0}, {1, 2, 3}, No, 1.0),
      listed("Upsample", {0}, {1}, No, 1.0),
      listed("DepthToSpace", {0}, No, No, 1.0),
      listed("SpaceToDepth", {0}, No, No, 1.0),
      listed("Compress", {0}, {1}, No, 1.0),
      listed("TopK", {0}, No, {1}, 1.0, {0}),
      listed("ReverseSequence", {0}, {1}, No, 1.0),
      listed("Trilu", {0}, {1}, No, 1.0),

      // No gradient: integer, boolean or piecewise-constant results,
      // shapes, constants and random numbers.
      none("And"),
      none("ArgMax"),
      none("ArgMin"),
      none("Bernoulli"),
      none("BitShift"),
      none("BitwiseAnd"),
      none("BitwiseNot"),
      none("BitwiseOr"),
      none("BitwiseXor"),
      none("Ceil"),
      none("Constant"),
      none("ConstantOfShape"),
      none("ConvInteger"),
      none("DequantizeLinear"),
      none("DynamicQuantizeLinear"),
      none("Equal"),
      none("EyeLike"),
      none("Floor"),
      none("Greater"),
      none("GreaterOrEqual"),
      none("Hardmax"),
      none("IsInf"),
      none("IsNaN"),
      none("Less"),
      none("LessOrEqual"),
      none("MatMulInteger"),
      none("Multinomial"),
      none("NonMaxSuppression"),
      none("NonZero"),
      none("Not"),
      none("OneHot"),
      none("Or"),
      none("QLinearConv"),
      none("QLinearMatMul"),
      none("QuantizeLinear"),
      none("RandomNormal"),
      none("RandomNormalLike"),
      none("RandomUniform"),
      none("RandomUniformLike"),
      none("Range"),
      none("Round"),
      none("Shape"),
      none("Sign"),
      none("Size"),
      none("StringNormalizer"),
      none("TfIdfVectorizer"),
      none("Unique"),
      none("Xor"),
  };
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
