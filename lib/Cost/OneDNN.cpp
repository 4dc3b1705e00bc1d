//===- OneDNN.cpp - Op times measured with oneDNN -------------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
//
// An op becomes one or more "problems": a oneDNN primitive kind with its
// algorithm, element type, shapes and integer parameters. A problem's
// signature keys the cache, so ops of the same shape anywhere (and in any
// model) share one measurement.
//
// oneDNN's C++ API reports failures as exceptions; they are caught here,
// at the boundary, and become "unsupported" (the caller falls back to the
// roofline). Nothing else in dp sees an exception.
//
//===----------------------------------------------------------------------===//

#include "dp/Cost/OneDNN.h"
#include "OpAttributes.h"
#include "dp/Support/Diagnostics.h"
#include "dp/Support/EnumNames.h"
#include "dp/Support/FileOutput.h"
#include "dp/Support/Format.h"

#include "oneapi/dnnl/dnnl.hpp"
#include "oneapi/dnnl/dnnl_debug.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/xxhash.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <unordered_map>

using namespace llvm;
using dnnl::algorithm;
using dnnl::memory;
using dnnl::prop_kind;

namespace dp {

//===----------------------------------------------------------------------===//
// Problems
//===----------------------------------------------------------------------===//

namespace {
enum class PrimKind : uint8_t {
  ConvFwd,
  ConvBwdData,
  ConvBwdWeights,
  DeconvFwd,
  MatMul,
  Pooling,
  Eltwise,
  Binary,
  Sum,
  Softmax,
  LogSoftmax,
  LayerNorm,
  BatchNorm,
  Reduction,
  LSTM,
  GRU,
  LbrGRU,
  VanillaRNN,
};

/// One primitive to measure. Shapes and Params are laid out per kind:
/// - convolutions: Shapes {src, weights (grouped), dst, bias or {}},
///   Params strides, dilations (0-based), left pads, right pads;
/// - MatMul: Shapes {a, b, c}, Params {transpose a, transpose b};
/// - Pooling: Shapes {src, dst}, Params kernel, strides, dilations, left
///   pads, right pads;
/// - Eltwise, Softmax, LayerNorm, BatchNorm: Shapes {data}, Params {axis}
///   (Softmax) or {training} (BatchNorm);
/// - Binary: Shapes {src0, src1, dst}; Sum: Shapes {src...};
/// - Reduction: Shapes {src, dst}, Alpha is p;
/// - recurrent: Params {T, N, I, H, directions, direction kind}.
struct Problem {
  explicit Problem(PrimKind Kind) : Kind(Kind) {}

  PrimKind Kind;
  memory::data_type DType = memory::data_type::f32;
  algorithm Alg = algorithm::undef;
  float Alpha = 0, Beta = 0;
  std::vector<memory::dims> Shapes;
  std::vector<int64_t> Params;

  std::string getSignature() const;
};
} // namespace

static constexpr EnumEntry<PrimKind> PrimKindNames[] = {
    {"conv_fwd", PrimKind::ConvFwd},
    {"conv_bwd_data", PrimKind::ConvBwdData},
    {"conv_bwd_weights", PrimKind::ConvBwdWeights},
    {"deconv_fwd", PrimKind::DeconvFwd},
    {"matmul", PrimKind::MatMul},
    {"pooling", PrimKind::Pooling},
    {"eltwise", PrimKind::Eltwise},
    {"binary", PrimKind::Binary},
    {"sum", PrimKind::Sum},
    {"softmax", PrimKind::Softmax},
    {"logsoftmax", PrimKind::LogSoftmax},
    {"layer_norm", PrimKind::LayerNorm},
    {"batch_norm", PrimKind::BatchNorm},
    {"reduction", PrimKind::Reduction},
    {"lstm", PrimKind::LSTM},
    {"gru", PrimKind::GRU},
    {"lbr_gru", PrimKind::LbrGRU},
    {"rnn", PrimKind::VanillaRNN},
};

static StringRef getPrimKindName(PrimKind K) {
  return getEnumName<PrimKind>(PrimKindNames, K);
}

std::string Problem::getSignature() const {
  std::string S;
  raw_string_ostream OS(S);
  OS << getPrimKindName(Kind) << ':'
     << dnnl_dt2str(static_cast<dnnl_data_type_t>(DType)) << ':'
     << dnnl_alg_kind2str(static_cast<dnnl_alg_kind_t>(Alg)) << ':';
  writeDouble(OS, Alpha);
  OS << ':';
  writeDouble(OS, Beta);
  OS << ':';
  ListSeparator Shape(";");
  for (const memory::dims &D : Shapes) {
    OS << Shape;
    ListSeparator X("x");
    for (memory::dim V : D)
      OS << X << V;
  }
  OS << ':';
  ListSeparator Comma(",");
  for (int64_t P : Params)
    OS << Comma << P;
  return OS.str();
}

//===----------------------------------------------------------------------===//
// From ops to problems
//===----------------------------------------------------------------------===//

static Optional<memory::data_type> getDnnlType(DTypeKind K) {
  switch (K) {
  case DTypeKind::F32:
    return memory::data_type::f32;
  case DTypeKind::BF16:
    return memory::data_type::bf16;
  case DTypeKind::F16:
    return memory::data_type::f16;
  default:
    return None;
  }
}

static memory::dims toDims(ArrayRef<int64_t> D) {
  return memory::dims(D.begin(), D.end());
}

/// \p D with leading 1s up to rank \p Rank.
static memory::dims padRank(ArrayRef<int64_t> D, size_t Rank) {
  memory::dims R(Rank > D.size() ? Rank - D.size() : 0, 1);
  R.insert(R.end(), D.begin(), D.end());
  return R;
}

/// The ints of \p Name, or \p N copies of \p Default.
static std::vector<int64_t> getInts(const Op &O, StringRef Name, size_t N,
                                    int64_t Default) {
  const Attribute *A = O.Attrs.get(Name);
  if (A && A->getKind() == AttrKind::Ints && A->getInts().size() >= N)
    return A->getInts();
  return std::vector<int64_t>(N, Default);
}

/// Strides, 0-based dilations and the padding oneDNN needs for a sliding
/// window over \p In giving \p Out. The right padding is derived from the
/// shapes, so that ceil_mode and ONNX's floor rounding both agree with
/// oneDNN's shape check.
static void appendWindowParams(const Op &O, ArrayRef<int64_t> In,
                               ArrayRef<int64_t> Out, ArrayRef<int64_t> Kernel,
                               bool Transposed, std::vector<int64_t> &Params) {
  size_t N = In.size();
  std::vector<int64_t> Strides = getInts(O, "strides", N, 1);
  std::vector<int64_t> Dilations = getInts(O, "dilations", N, 1);
  std::vector<int64_t> Pads = getInts(O, "pads", 2 * N, 0);
  StringRef AutoPad = getStringAttr(O, "auto_pad", "NOTSET");
  std::vector<int64_t> Left(N), Right(N);
  for (size_t I = 0; I != N; ++I) {
    int64_t Extent = (Kernel[I] - 1) * Dilations[I] + 1;
    int64_t Covered = Transposed ? (In[I] - 1) * Strides[I] + Extent
                                 : (Out[I] - 1) * Strides[I] + Extent;
    int64_t Total = Transposed ? Covered - Out[I] : Covered - In[I];
    if (AutoPad == "SAME_UPPER" || AutoPad == "SAME_LOWER") {
      Total = std::max<int64_t>(Total, 0);
      Left[I] = AutoPad == "SAME_UPPER" ? Total / 2 : Total - Total / 2;
    } else if (AutoPad == "VALID") {
      Left[I] = 0;
    } else {
      Left[I] = Pads[I];
    }
    Right[I] = Total - Left[I];
  }
  Params.insert(Params.end(), Strides.begin(), Strides.begin() + N);
  for (size_t I = 0; I != N; ++I)
    Params.push_back(Dilations[I] - 1);
  Params.insert(Params.end(), Left.begin(), Left.end());
  Params.insert(Params.end(), Right.begin(), Right.end());
}

namespace {
/// The operand types of a convolution, checked.
struct ConvShapes {
  const TensorType *X, *W, *B, *Y;
};
} // namespace

static Optional<ConvShapes> getConvShapes(const Graph &G, const Op &O) {
  ConvShapes S{getOperandType(G, O, 0), getOperandType(G, O, 1),
               getOperandType(G, O, 2), getResultType(G, O, 0)};
  if (!S.X || !S.W || !S.Y || S.X->getRank() < 3 || S.X->getRank() > 5 ||
      S.W->getRank() != S.X->getRank() || S.Y->getRank() != S.X->getRank())
    return None;
  return S;
}

/// A convolution problem of \p Kind from Conv (or ConvTranspose) op \p O.
static Optional<Problem> getConvolutionProblem(const Graph &G, const Op &O,
                                               PrimKind Kind) {
  Optional<ConvShapes> S = getConvShapes(G, O);
  if (!S)
    return None;
  bool Transposed = O.Type == "ConvTranspose";
  Problem P(Kind);
  int64_t Groups = getIntAttr(O, "group", 1);
  ArrayRef<int64_t> W = S->W->Dims;
  // ONNX weights are [M, C/g, k...] (Conv) or [C, M/g, k...]
  // (ConvTranspose); oneDNN's are [g, OC/g, IC/g, k...].
  int64_t OCPerGroup = Transposed ? W[1] : W[0] / Groups;
  int64_t ICPerGroup = Transposed ? W[0] / Groups : W[1];
  memory::dims Weights;
  if (Groups > 1)
    Weights.push_back(Groups);
  Weights.push_back(Groups > 1 ? OCPerGroup : OCPerGroup * Groups);
  Weights.push_back(ICPerGroup);
  Weights.insert(Weights.end(), W.begin() + 2, W.end());
  P.Shapes = {toDims(S->X->Dims), Weights, toDims(S->Y->Dims),
              S->B ? memory::dims{S->Y->Dims[1]} : memory::dims()};
  appendWindowParams(O, ArrayRef<int64_t>(S->X->Dims).drop_front(2),
                     ArrayRef<int64_t>(S->Y->Dims).drop_front(2),
                     W.drop_front(2), Transposed, P.Params);
  return P;
}

static Optional<Problem> getConvProblem(const Graph &G, const Op &O) {
  return getConvolutionProblem(G, O, PrimKind::ConvFwd);
}

static Optional<Problem> getDeconvProblem(const Graph &G, const Op &O) {
  return getConvolutionProblem(G, O, PrimKind::DeconvFwd);
}

/// The three matrices of a MatMul or Gemm as [batch..., rows, cols], with
/// the transposes Gemm asks for.
static Optional<Problem> getMatMulProblem(const Graph &G, const Op &O) {
  const TensorType *A = getOperandType(G, O, 0);
  const TensorType *B = getOperandType(G, O, 1);
  const TensorType *Y = getResultType(G, O, 0);
  if (!A || !B || !Y || A->getRank() == 0 || B->getRank() == 0)
    return None;
  Problem P(PrimKind::MatMul);
  if (O.Type == "Gemm") {
    if (A->getRank() != 2 || B->getRank() != 2 || Y->getRank() != 2)
      return None;
    P.Shapes = {toDims(A->Dims), toDims(B->Dims), toDims(Y->Dims)};
    // Stored transposed: the logical shapes swap their two dimensions.
    bool TA = getIntAttr(O, "transA", 0), TB = getIntAttr(O, "transB", 0);
    if (TA)
      std::swap(P.Shapes[0][0], P.Shapes[0][1]);
    if (TB)
      std::swap(P.Shapes[1][0], P.Shapes[1][1]);
    P.Params = {TA, TB};
    return P;
  }
  // MatMul: 1-D operands become [1, K] and [K, 1]; batch dimensions
  // broadcast, so every shape is brought to the same rank.
  memory::dims AD = toDims(A->Dims), BD = toDims(B->Dims);
  if (AD.size() == 1)
    AD.insert(AD.begin(), 1);
  if (BD.size() == 1)
    BD.push_back(1);
  size_t Rank = std::max(AD.size(), BD.size());
  AD = padRank(AD, Rank);
  BD = padRank(BD, Rank);
  memory::dims YD(Rank);
  for (size_t I = 0; I + 2 < Rank; ++I)
    YD[I] = std::max(AD[I], BD[I]);
  YD[Rank - 2] = AD[Rank - 2];
  YD[Rank - 1] = BD[Rank - 1];
  P.Shapes = {AD, BD, YD};
  P.Params = {0, 0};
  return P;
}

static Optional<Problem> getPoolingProblem(const Graph &G, const Op &O) {
  const TensorType *X = getOperandType(G, O, 0);
  const TensorType *Y = getResultType(G, O, 0);
  if (!X || !Y || X->getRank() < 3 || X->getRank() > 5 ||
      Y->getRank() != X->getRank())
    return None;
  Problem P(PrimKind::Pooling);
  bool Max = O.Type == "MaxPool" || O.Type == "GlobalMaxPool";
  P.Alg = Max ? algorithm::pooling_max
          : getIntAttr(O, "count_include_pad", 0)
              ? algorithm::pooling_avg_include_padding
              : algorithm::pooling_avg_exclude_padding;
  P.Shapes = {toDims(X->Dims), toDims(Y->Dims)};
  ArrayRef<int64_t> In = ArrayRef<int64_t>(X->Dims).drop_front(2);
  ArrayRef<int64_t> Out = ArrayRef<int64_t>(Y->Dims).drop_front(2);
  std::vector<int64_t> Kernel;
  if (O.Type.startswith("Global")) {
    Kernel.assign(In.begin(), In.end());
    P.Params = Kernel;
    for (unsigned Part = 0; Part != 4; ++Part)
      P.Params.insert(P.Params.end(), In.size(), Part == 0 ? 1 : 0);
    return P;
  }
  Kernel = getInts(O, "kernel_shape", In.size(), 1);
  if (Kernel.size() != In.size())
    return None;
  P.Params = Kernel;
  appendWindowParams(O, In, Out, Kernel, /*Transposed=*/false, P.Params);
  return P;
}

namespace {
/// The oneDNN algorithm that measures an op type, with its alpha and beta;
/// alpha is read from the attribute AlphaAttr when it names one, Alpha
/// being its default.
struct AlgorithmEntry {
  StringRef Type;
  algorithm Alg;
  double Alpha = 0, Beta = 0;
  StringRef AlphaAttr = {};
};
} // namespace

static const AlgorithmEntry EltwiseOps[] = {
    {"Relu", algorithm::eltwise_relu},
    {"LeakyRelu", algorithm::eltwise_relu, 0.01, 0, "alpha"},
    {"Elu", algorithm::eltwise_elu, 1.0, 0, "alpha"},
    {"Tanh", algorithm::eltwise_tanh},
    {"Sigmoid", algorithm::eltwise_logistic},
    {"Exp", algorithm::eltwise_exp},
    {"Log", algorithm::eltwise_log},
    {"Sqrt", algorithm::eltwise_sqrt},
    {"Abs", algorithm::eltwise_abs},
    // eltwise_gelu_tanh with approximate="tanh".
    {"Gelu", algorithm::eltwise_gelu_erf},
    {"Softplus", algorithm::eltwise_soft_relu},
    {"Neg", algorithm::eltwise_linear, -1},
    {"Round", algorithm::eltwise_round},
    {"HardSwish", algorithm::eltwise_hardswish},
    {"Mish", algorithm::eltwise_mish},
    // The bounds are operands whose values dp does not read; the time
    // does not depend on them.
    {"Clip", algorithm::eltwise_clip_v2, 0, 6},
    {"Reciprocal", algorithm::eltwise_pow, 1, -1},
};

static const AlgorithmEntry ReductionOps[] = {
    {"ReduceSum", algorithm::reduction_sum},
    {"ReduceMean", algorithm::reduction_mean},
    {"ReduceMax", algorithm::reduction_max},
    {"ReduceMin", algorithm::reduction_min},
    {"ReduceProd", algorithm::reduction_mul},
    {"ReduceL1", algorithm::reduction_norm_lp_sum, 1},
    {"ReduceL2", algorithm::reduction_norm_lp_sum, 2},
    {"ReduceSumSquare", algorithm::reduction_norm_lp_power_p_sum, 2},
};

/// Sets \p P's algorithm, alpha and beta from \p O's entry in \p Table;
/// false when it has none.
static bool setAlgorithm(ArrayRef<AlgorithmEntry> Table, const Op &O,
                         Problem &P) {
  const AlgorithmEntry *E = find_if(
      Table, [&](const AlgorithmEntry &Entry) { return Entry.Type == O.Type; });
  if (E == Table.end())
    return false;
  P.Alg = E->Alg;
  P.Alpha =
      float(E->AlphaAttr.empty() ? E->Alpha
                                 : getFloatAttr(O, E->AlphaAttr, E->Alpha));
  P.Beta = float(E->Beta);
  return true;
}

static Optional<Problem> getEltwiseProblem(const Graph &G, const Op &O) {
  const TensorType *X = getOperandType(G, O, 0);
  if (!X)
    return None;
  Problem P(PrimKind::Eltwise);
  P.Shapes = {X->Dims.empty() ? memory::dims{1} : toDims(X->Dims)};
  if (!setAlgorithm(EltwiseOps, O, P))
    return None;
  if (O.Type == "Gelu" && getStringAttr(O, "approximate", "none") == "tanh")
    P.Alg = algorithm::eltwise_gelu_tanh;
  return P;
}

static Optional<Problem> getBinaryProblem(const Graph &G, const Op &O) {
  const TensorType *Y = getResultType(G, O, 0);
  if (!Y)
    return None;
  SmallVector<const TensorType *, 4> Ins;
  for (unsigned I = 0, E = O.Operands.size(); I != E; ++I)
    if (const TensorType *T = getOperandType(G, O, I))
      Ins.push_back(T);
  memory::dims YD = Y->Dims.empty() ? memory::dims{1} : toDims(Y->Dims);
  if (O.Type == "Sum" && Ins.size() > 2 &&
      all_of(Ins, [&](const TensorType *T) { return T->Dims == Y->Dims; })) {
    Problem P(PrimKind::Sum);
    for (size_t I = 0; I != Ins.size(); ++I)
      P.Shapes.push_back(YD);
    return P;
  }
  if (Ins.size() != 2)
    return None;
  Problem P(PrimKind::Binary);
  StringRef T = O.Type;
  P.Alg = T == "Add" || T == "Sum" ? algorithm::binary_add
          : T == "Sub"             ? algorithm::binary_sub
          : T == "Mul"             ? algorithm::binary_mul
          : T == "Div"             ? algorithm::binary_div
          : T == "Max"             ? algorithm::binary_max
                                   : algorithm::binary_min;
  memory::dims A = padRank(Ins[0]->Dims, YD.size());
  memory::dims B = padRank(Ins[1]->Dims, YD.size());
  // oneDNN broadcasts its second source only. If the first operand is the
  // broadcast one, the sources swap: the time is the same.
  if (A != YD)
    std::swap(A, B);
  if (A != YD)
    return None;
  P.Shapes = {A, B, YD};
  return P;
}

static int64_t getDefaultOpset(const Graph &G) {
  for (const OpsetImport &I : G.getOpsets())
    if (I.Domain.empty() || I.Domain == "ai.onnx")
      return I.Version;
  return 0;
}

static Optional<Problem> getSoftmaxProblem(const Graph &G, const Op &O) {
  const TensorType *X = getOperandType(G, O, 0);
  if (!X || X->getRank() == 0)
    return None;
  Problem P(O.Type == "Softmax" ? PrimKind::Softmax : PrimKind::LogSoftmax);
  int64_t Rank = X->getRank();
  bool Coerced = getDefaultOpset(G) < 13;
  int64_t Axis = getIntAttr(O, "axis", Coerced ? 1 : -1);
  if (Axis < 0)
    Axis += Rank;
  if (Axis < 0 || Axis >= Rank)
    return None;
  if (Coerced) {
    // Before opset 13 the input is flattened to 2-D at the axis.
    int64_t Rows = 1, Cols = 1;
    for (int64_t I = 0; I != Rank; ++I)
      (I < Axis ? Rows : Cols) *= X->Dims[I];
    P.Shapes = {{Rows, Cols}};
    P.Params = {1};
    return P;
  }
  P.Shapes = {toDims(X->Dims)};
  P.Params = {Axis};
  return P;
}

static Optional<Problem> getNormalizationProblem(const Graph &G, const Op &O) {
  const TensorType *X = getOperandType(G, O, 0);
  if (!X || X->getRank() < 2)
    return None;
  if (O.Type == "BatchNormalization") {
    if (X->getRank() > 5)
      return None;
    Problem P(PrimKind::BatchNorm);
    P.Shapes = {toDims(X->Dims)};
    unsigned Results =
        count_if(O.Results, [](TensorId T) { return T != NoId; });
    P.Params = {getIntAttr(O, "training_mode", 0) || Results > 1};
    return P;
  }
  // LayerNormalization over the dimensions from the axis on, as rows.
  int64_t Rank = X->getRank();
  int64_t Axis = getIntAttr(O, "axis", -1);
  if (Axis < 0)
    Axis += Rank;
  if (Axis < 0 || Axis >= Rank)
    return None;
  int64_t Rows = 1, Cols = 1;
  for (int64_t I = 0; I != Rank; ++I)
    (I < Axis ? Rows : Cols) *= X->Dims[I];
  Problem P(PrimKind::LayerNorm);
  P.Shapes = {{Rows, Cols}};
  return P;
}

/// The reduced shape of \p In (1 where reduced) that gives \p Out: from
/// the axes attribute if present, else by matching the dimensions.
static Optional<memory::dims> getReducedDims(const Op &O, ArrayRef<int64_t> In,
                                             ArrayRef<int64_t> Out) {
  memory::dims D = toDims(In);
  if (const Attribute *A = O.Attrs.get("axes");
      A && A->getKind() == AttrKind::Ints) {
    for (int64_t Axis : A->getInts()) {
      if (Axis < 0)
        Axis += In.size();
      if (Axis < 0 || Axis >= int64_t(In.size()))
        return None;
      D[Axis] = 1;
    }
    return D;
  }
  if (Out.size() == In.size())
    return toDims(Out);
  size_t J = 0;
  for (size_t I = 0; I != In.size(); ++I) {
    if (J < Out.size() && In[I] == Out[J]) {
      ++J;
      continue;
    }
    D[I] = 1;
  }
  if (J != Out.size())
    return None;
  return D;
}

static Optional<Problem> getReductionProblem(const Graph &G, const Op &O) {
  const TensorType *X = getOperandType(G, O, 0);
  const TensorType *Y = getResultType(G, O, 0);
  if (!X || !Y || X->getRank() == 0)
    return None;
  Problem P(PrimKind::Reduction);
  if (!setAlgorithm(ReductionOps, O, P))
    return None;
  Optional<memory::dims> Dst = getReducedDims(O, X->Dims, Y->Dims);
  if (!Dst || *Dst == toDims(X->Dims))
    return None;
  P.Shapes = {toDims(X->Dims), *Dst};
  return P;
}

static Optional<Problem> getRecurrentProblem(const Graph &G, const Op &O) {
  const TensorType *X = getOperandType(G, O, 0);
  const TensorType *W = getOperandType(G, O, 1);
  const TensorType *R = getOperandType(G, O, 2);
  if (!X || !W || !R || X->getRank() != 3 || W->getRank() != 3 ||
      R->getRank() != 3)
    return None;
  Problem P(O.Type == "LSTM"                          ? PrimKind::LSTM
            : O.Type == "RNN"                         ? PrimKind::VanillaRNN
            : getIntAttr(O, "linear_before_reset", 0) ? PrimKind::LbrGRU
                                                      : PrimKind::GRU);
  if (P.Kind == PrimKind::VanillaRNN) {
    P.Alg = algorithm::eltwise_tanh;
    if (const Attribute *A = O.Attrs.get("activations");
        A && A->getKind() == AttrKind::Strings && !A->getStrings().empty()) {
      StringRef Act = A->getStrings().front();
      if (Act.equals_insensitive("Relu"))
        P.Alg = algorithm::eltwise_relu;
      else if (Act.equals_insensitive("Sigmoid"))
        P.Alg = algorithm::eltwise_logistic;
      else if (!Act.equals_insensitive("Tanh"))
        return None;
    }
  }
  bool BatchFirst = getIntAttr(O, "layout", 0) == 1;
  int64_t T = X->Dims[BatchFirst ? 1 : 0], N = X->Dims[BatchFirst ? 0 : 1];
  StringRef Dir = getStringAttr(O, "direction", "forward");
  int64_t DirKind = Dir == "bidirectional" ? 2 : Dir == "reverse" ? 1 : 0;
  P.Params = {T, N, X->Dims[2], R->Dims[2], W->Dims[0], DirKind};
  return P;
}

/// Builds the problem that measures an op, or declines it (None).
using ProblemBuilder = Optional<Problem> (*)(const Graph &G, const Op &O);

/// The problem builder that measures op \p Type: the ONEDNN field of the
/// op registry (include/dp/IR/Ops.def), DNNL(PRIMITIVE) naming
/// get<PRIMITIVE>Problem; null for an op that is not measured.
static ProblemBuilder getProblemBuilder(StringRef Type) {
  static const StringMap<ProblemBuilder> Builders = [] {
    StringMap<ProblemBuilder> M;
#define DNNL(PRIMITIVE) &get##PRIMITIVE##Problem
#define NO_DNNL nullptr
#define OP(NAME, COST, BACKWARD, ONEDNN, FEATURE, OPSET, RUNTIME)              \
  M.try_emplace(NAME, ONEDNN);
#include "dp/IR/Ops.def"
#undef DNNL
#undef NO_DNNL
    return M;
  }();
  auto It = Builders.find(Type);
  return It == Builders.end() ? nullptr : It->second;
}

/// The problems whose times add up to forward op \p O's.
static Optional<std::vector<Problem>> getForwardProblems(const Graph &G,
                                                         const Op &O) {
  if (!O.Domain.empty() && O.Domain != "ai.onnx")
    return None;
  ProblemBuilder Build = getProblemBuilder(O.Type);
  if (!Build)
    return None;
  Optional<Problem> P = Build(G, O);
  if (!P)
    return None;
  // Every float operand and result must have the element type measured.
  const TensorType *First = getOperandType(G, O, 0);
  Optional<memory::data_type> DT = First ? getDnnlType(First->DType) : None;
  if (!DT)
    return None;
  P->DType = *DT;
  return std::vector<Problem>{std::move(*P)};
}

/// The problems of backward op \p B of forward op \p O. B's results are
/// the gradients of O's operands, in order (absent where not needed).
static Optional<std::vector<Problem>>
getBackwardProblems(const Graph &G, const Op &B, const Op &O) {
  Optional<std::vector<Problem>> Fwd = getForwardProblems(G, O);
  if (!Fwd)
    return None;
  auto Computes = [&](unsigned I) {
    return I < B.Results.size() && B.Results[I] != NoId;
  };
  Problem &F = Fwd->front();
  std::vector<Problem> Ps;
  if (F.Kind == PrimKind::ConvFwd) {
    Problem Data = F, Weights = F;
    Data.Kind = PrimKind::ConvBwdData;
    Data.Shapes[3].clear();
    Weights.Kind = PrimKind::ConvBwdWeights;
    if (!Computes(2))
      Weights.Shapes[3].clear();
    if (Computes(0))
      Ps.push_back(std::move(Data));
    if (Computes(1) || Computes(2))
      Ps.push_back(std::move(Weights));
    if (Ps.empty())
      return None;
    return Ps;
  }
  if (F.Kind == PrimKind::MatMul) {
    // dA = dY . B^T and dB = A^T . dY, at the batch shape of Y.
    const memory::dims &A = F.Shapes[0], &B = F.Shapes[1], &Y = F.Shapes[2];
    size_t R = Y.size();
    auto WithBatch = [&](memory::dim Rows, memory::dim Cols) {
      memory::dims D(Y.begin(), Y.end() - 2);
      D.push_back(Rows);
      D.push_back(Cols);
      return D;
    };
    memory::dim M = A[R - 2], K = A[R - 1], N = B[R - 1];
    Problem DA = F, DB = F;
    DA.Shapes = {WithBatch(M, N), WithBatch(N, K), WithBatch(M, K)};
    DB.Shapes = {WithBatch(K, M), WithBatch(M, N), WithBatch(K, N)};
    DA.Params = DB.Params = {0, 0};
    if (Computes(0))
      Ps.push_back(std::move(DA));
    if (Computes(1))
      Ps.push_back(std::move(DB));
    if (Ps.empty())
      return None;
    return Ps;
  }
  return None;
}

//===----------------------------------------------------------------------===//
// Running primitives
//===----------------------------------------------------------------------===//

static memory::dims getPlainStrides(const memory::dims &D) {
  memory::dims S(D.size(), 1);
  for (size_t I = D.size(); I-- > 1;)
    S[I - 1] = S[I] * std::max<memory::dim>(D[I], 1);
  return S;
}

static memory::desc getPlainDesc(const memory::dims &D, memory::data_type DT) {
  return memory::desc(D, DT, getPlainStrides(D));
}

/// Row-major, or with the last two dimensions stored transposed.
static memory::desc getMatrixDesc(const memory::dims &D, memory::data_type DT,
                                  bool Transposed) {
  memory::dims S = getPlainStrides(D);
  if (Transposed) {
    size_t R = D.size();
    S[R - 1] = D[R - 2];
    S[R - 2] = 1;
  }
  return memory::desc(D, DT, S);
}

static memory::desc getAnyDesc(const memory::dims &D, memory::data_type DT) {
  return memory::desc(D, DT, memory::format_tag::any);
}

/// Splits the window parameters of a convolution or pooling problem.
namespace {
struct WindowParams {
  memory::dims Kernel, Strides, Dilations, Left, Right;
};
} // namespace

static WindowParams getWindowParams(const Problem &P, size_t Spatial,
                                    bool HasKernel) {
  WindowParams W;
  auto Take = [&](size_t Part) {
    size_t Start = Part * Spatial;
    return memory::dims(P.Params.begin() + Start,
                        P.Params.begin() + Start + Spatial);
  };
  size_t First = HasKernel ? 1 : 0;
  if (HasKernel)
    W.Kernel = Take(0);
  W.Strides = Take(First);
  W.Dilations = Take(First + 1);
  W.Left = Take(First + 2);
  W.Right = Take(First + 3);
  return W;
}

static dnnl::rnn_direction getDirection(int64_t Kind) {
  return Kind == 2   ? dnnl::rnn_direction::bidirectional_concat
         : Kind == 1 ? dnnl::rnn_direction::unidirectional_right2left
                     : dnnl::rnn_direction::unidirectional_left2right;
}

/// The descriptor of a convolution (forward, backward data or weights)
/// or a deconvolution.
static dnnl::primitive_desc_base
createConvDesc(const Problem &P, const dnnl::primitive_attr &Attr,
               const dnnl::engine &Eng) {
  memory::data_type DT = P.DType;
  const memory::dims &X = P.Shapes[0], &Wt = P.Shapes[1], &Y = P.Shapes[2];
  WindowParams W = getWindowParams(P, X.size() - 2, /*HasKernel=*/false);
  memory::desc Src = getAnyDesc(X, DT), Wei = getAnyDesc(Wt, DT),
               Dst = getAnyDesc(Y, DT);
  memory::desc Bias =
      P.Shapes[3].empty() ? memory::desc() : getPlainDesc(P.Shapes[3], DT);
  if (P.Kind == PrimKind::DeconvFwd) {
    dnnl::deconvolution_forward::desc D(
        prop_kind::forward_inference, algorithm::deconvolution_direct, Src, Wei,
        Bias, Dst, W.Strides, W.Dilations, W.Left, W.Right);
    return dnnl::deconvolution_forward::primitive_desc(D, Attr, Eng);
  }
  bool Fwd = P.Kind == PrimKind::ConvFwd;
  dnnl::convolution_forward::desc FD(
      Fwd ? prop_kind::forward_inference : prop_kind::forward_training,
      algorithm::convolution_direct, Src, Wei, Bias, Dst, W.Strides,
      W.Dilations, W.Left, W.Right);
  if (Fwd)
    return dnnl::convolution_forward::primitive_desc(FD, Attr, Eng);
  dnnl::convolution_forward::primitive_desc Hint(FD, Eng);
  if (P.Kind == PrimKind::ConvBwdData) {
    dnnl::convolution_backward_data::desc D(algorithm::convolution_direct, Src,
                                            Wei, Dst, W.Strides, W.Dilations,
                                            W.Left, W.Right);
    return dnnl::convolution_backward_data::primitive_desc(D, Attr, Eng, Hint);
  }
  dnnl::convolution_backward_weights::desc D(algorithm::convolution_direct, Src,
                                             Wei, Bias, Dst, W.Strides,
                                             W.Dilations, W.Left, W.Right);
  return dnnl::convolution_backward_weights::primitive_desc(D, Attr, Eng, Hint);
}

/// The descriptor of a recurrent layer: LSTM, GRU, linear-before-reset GRU
/// or vanilla RNN.
static dnnl::primitive_desc_base createRNNDesc(const Problem &P,
                                               const dnnl::primitive_attr &Attr,
                                               const dnnl::engine &Eng) {
  memory::data_type DT = P.DType;
  memory::dim T = P.Params[0], N = P.Params[1], I = P.Params[2],
              H = P.Params[3], D = P.Params[4];
  dnnl::rnn_direction Dir = getDirection(P.Params[5]);
  memory::dim Gates = P.Kind == PrimKind::LSTM         ? 4
                      : P.Kind == PrimKind::VanillaRNN ? 1
                                                       : 3;
  memory::dim BiasGates = P.Kind == PrimKind::LbrGRU ? 4 : Gates;
  memory::dim DstWidth =
      Dir == dnnl::rnn_direction::bidirectional_concat ? 2 * H : H;
  memory::desc SrcLayer = getPlainDesc({T, N, I}, DT);
  memory::desc Iter = getPlainDesc({1, D, N, H}, DT);
  memory::desc WLayer = getAnyDesc({1, D, I, Gates, H}, DT);
  memory::desc WIter = getAnyDesc({1, D, H, Gates, H}, DT);
  memory::desc Bias =
      getPlainDesc({1, D, BiasGates, H}, memory::data_type::f32);
  memory::desc DstLayer = getPlainDesc({T, N, DstWidth}, DT);
  const prop_kind Prop = prop_kind::forward_inference;
  if (P.Kind == PrimKind::LSTM) {
    memory::desc IterC = getPlainDesc({1, D, N, H}, memory::data_type::f32);
    dnnl::lstm_forward::desc Desc(Prop, Dir, SrcLayer, Iter, IterC, WLayer,
                                  WIter, Bias, DstLayer, Iter, IterC);
    return dnnl::lstm_forward::primitive_desc(Desc, Attr, Eng);
  }
  if (P.Kind == PrimKind::GRU) {
    dnnl::gru_forward::desc Desc(Prop, Dir, SrcLayer, Iter, WLayer, WIter, Bias,
                                 DstLayer, Iter);
    return dnnl::gru_forward::primitive_desc(Desc, Attr, Eng);
  }
  if (P.Kind == PrimKind::LbrGRU) {
    dnnl::lbr_gru_forward::desc Desc(Prop, Dir, SrcLayer, Iter, WLayer, WIter,
                                     Bias, DstLayer, Iter);
    return dnnl::lbr_gru_forward::primitive_desc(Desc, Attr, Eng);
  }
  dnnl::vanilla_rnn_forward::desc Desc(Prop, P.Alg, Dir, SrcLayer, Iter, WLayer,
                                       WIter, Bias, DstLayer, Iter);
  return dnnl::vanilla_rnn_forward::primitive_desc(Desc, Attr, Eng);
}

/// Creates the primitive descriptor of \p P; throws dnnl::error when
/// oneDNN cannot.
static dnnl::primitive_desc_base createPrimitiveDesc(const Problem &P,
                                                     const dnnl::engine &Eng) {
  dnnl::primitive_attr Attr;
  Attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  memory::data_type DT = P.DType;
  switch (P.Kind) {
  case PrimKind::ConvFwd:
  case PrimKind::ConvBwdData:
  case PrimKind::ConvBwdWeights:
  case PrimKind::DeconvFwd:
    return createConvDesc(P, Attr, Eng);
  case PrimKind::MatMul: {
    dnnl::matmul::desc D(getMatrixDesc(P.Shapes[0], DT, P.Params[0]),
                         getMatrixDesc(P.Shapes[1], DT, P.Params[1]),
                         getPlainDesc(P.Shapes[2], DT));
    return dnnl::matmul::primitive_desc(D, Attr, Eng);
  }
  case PrimKind::Pooling: {
    const memory::dims &X = P.Shapes[0];
    WindowParams W = getWindowParams(P, X.size() - 2, /*HasKernel=*/true);
    dnnl::pooling_v2_forward::desc D(prop_kind::forward_inference, P.Alg,
                                     getPlainDesc(X, DT),
                                     getAnyDesc(P.Shapes[1], DT), W.Strides,
                                     W.Kernel, W.Dilations, W.Left, W.Right);
    return dnnl::pooling_v2_forward::primitive_desc(D, Attr, Eng);
  }
  case PrimKind::Eltwise: {
    dnnl::eltwise_forward::desc D(prop_kind::forward_inference, P.Alg,
                                  getPlainDesc(P.Shapes[0], DT), P.Alpha,
                                  P.Beta);
    return dnnl::eltwise_forward::primitive_desc(D, Attr, Eng);
  }
  case PrimKind::Binary: {
    dnnl::binary::desc D(P.Alg, getPlainDesc(P.Shapes[0], DT),
                         getPlainDesc(P.Shapes[1], DT),
                         getPlainDesc(P.Shapes[2], DT));
    return dnnl::binary::primitive_desc(D, Attr, Eng);
  }
  case PrimKind::Sum: {
    std::vector<memory::desc> Srcs;
    for (const memory::dims &S : P.Shapes)
      Srcs.push_back(getPlainDesc(S, DT));
    return dnnl::sum::primitive_desc(getPlainDesc(P.Shapes[0], DT),
                                     std::vector<float>(Srcs.size(), 1.0f),
                                     Srcs, Eng, Attr);
  }
  case PrimKind::Softmax: {
    dnnl::softmax_forward::desc D(prop_kind::forward_inference,
                                  getPlainDesc(P.Shapes[0], DT),
                                  int(P.Params[0]));
    return dnnl::softmax_forward::primitive_desc(D, Attr, Eng);
  }
  case PrimKind::LogSoftmax: {
    dnnl::logsoftmax_forward::desc D(prop_kind::forward_inference,
                                     getPlainDesc(P.Shapes[0], DT),
                                     int(P.Params[0]));
    return dnnl::logsoftmax_forward::primitive_desc(D, Attr, Eng);
  }
  case PrimKind::LayerNorm: {
    dnnl::layer_normalization_forward::desc D(
        prop_kind::forward_inference, getPlainDesc(P.Shapes[0], DT), 1e-5f,
        dnnl::normalization_flags::use_scale |
            dnnl::normalization_flags::use_shift);
    return dnnl::layer_normalization_forward::primitive_desc(D, Attr, Eng);
  }
  case PrimKind::BatchNorm: {
    bool Training = P.Params[0];
    dnnl::normalization_flags Flags = dnnl::normalization_flags::use_scale |
                                      dnnl::normalization_flags::use_shift;
    if (!Training)
      Flags = Flags | dnnl::normalization_flags::use_global_stats;
    dnnl::batch_normalization_forward::desc D(
        Training ? prop_kind::forward_training : prop_kind::forward_inference,
        getPlainDesc(P.Shapes[0], DT), 1e-5f, Flags);
    return dnnl::batch_normalization_forward::primitive_desc(D, Attr, Eng);
  }
  case PrimKind::Reduction: {
    dnnl::reduction::desc D(P.Alg, getPlainDesc(P.Shapes[0], DT),
                            getPlainDesc(P.Shapes[1], DT), P.Alpha, 0.0f);
    return dnnl::reduction::primitive_desc(D, Attr, Eng);
  }
  case PrimKind::LSTM:
  case PrimKind::GRU:
  case PrimKind::LbrGRU:
  case PrimKind::VanillaRNN:
    return createRNNDesc(P, Attr, Eng);
  }
  llvm_unreachable("unknown PrimKind");
}

/// Every execution argument a primitive of dp's kinds may take.
static const int ExecArgs[] = {
    DNNL_ARG_SRC_0,      DNNL_ARG_SRC_1,      DNNL_ARG_SRC_2,
    DNNL_ARG_DST_0,      DNNL_ARG_DST_1,      DNNL_ARG_DST_2,
    DNNL_ARG_WEIGHTS_0,  DNNL_ARG_WEIGHTS_1,  DNNL_ARG_BIAS,
    DNNL_ARG_MEAN,       DNNL_ARG_VARIANCE,   DNNL_ARG_SCALE,
    DNNL_ARG_SHIFT,      DNNL_ARG_WORKSPACE,  DNNL_ARG_SCRATCHPAD,
    DNNL_ARG_DIFF_SRC_0, DNNL_ARG_DIFF_DST_0, DNNL_ARG_DIFF_WEIGHTS_0,
    DNNL_ARG_DIFF_BIAS,
};

//===----------------------------------------------------------------------===//
// The measurer
//===----------------------------------------------------------------------===//

namespace {
struct CacheEntry {
  double Seconds = 0;
  uint64_t WorkspaceBytes = 0;
};

/// What a cache file holds.
struct CacheContents {
  StringMap<CacheEntry> Entries;
  Optional<double> Bandwidth;
};
} // namespace

static constexpr StringLiteral CacheMagic = "dp-onednn-cache 1";

class OneDNNMeasurer::Impl {
public:
  explicit Impl(OneDNNOptions Opts)
      : Opts(std::move(Opts)), Eng(dnnl::engine::kind::cpu, 0), Strm(Eng) {}

  /// The lines after the magic line that identify this machine.
  std::string getIdentity() const {
    return ("onednn " + getLibraryVersion() + "\ncpu " + getCPUModel() +
            "\nthreads " + Twine(getThreads()) + "\n")
        .str();
  }

  static unsigned getThreads() {
    // oneDNN uses OpenMP, whose default is every core unless
    // OMP_NUM_THREADS says otherwise.
    unsigned N = 0;
    if (Optional<std::string> Env = sys::Process::GetEnv("OMP_NUM_THREADS"))
      to_integer(StringRef(*Env).trim(), N, 10);
    return N ? N : std::max(1u, std::thread::hardware_concurrency());
  }

  /// Parses a cache file; the error says why it is corrupt.
  Expected<CacheContents> parseCache(StringRef Text) const {
    CacheContents C;
    SmallVector<StringRef, 0> Lines;
    Text.split(Lines, '\n');
    std::string Identity = getIdentity();
    StringRef Expected = Identity;
    unsigned LineNo = 0;
    auto Bad = [&](const Twine &Msg) {
      return createStringError(inconvertibleErrorCode(),
                               "line " + Twine(LineNo) + ": " + Msg);
    };
    for (StringRef Line : Lines) {
      ++LineNo;
      if (LineNo == 1) {
        if (Line != CacheMagic)
          return Bad("expected '" + CacheMagic + "'");
        continue;
      }
      if (!Expected.empty()) {
        auto [Want, Rest] = Expected.split('\n');
        if (Line != Want)
          return Bad("expected '" + Want + "'");
        Expected = Rest;
        continue;
      }
      if (Line.empty())
        continue;
      auto [Key, Rest] = Line.split(' ');
      if (Key == "bandwidth") {
        double BW;
        if (!parseDouble(Rest, BW) || !(BW > 0))
          return Bad("expected a positive bandwidth");
        C.Bandwidth = BW;
        continue;
      }
      if (Key != "m")
        return Bad("expected 'm' or 'bandwidth'");
      auto [SecondsText, Rest2] = Rest.split(' ');
      auto [WorkspaceText, Signature] = Rest2.split(' ');
      CacheEntry E;
      if (!parseDouble(SecondsText, E.Seconds) || !(E.Seconds >= 0) ||
          !to_integer(WorkspaceText, E.WorkspaceBytes, 10) || Signature.empty())
        return Bad("expected 'm <seconds> <workspace bytes> <signature>'");
      C.Entries[Signature] = E;
    }
    if (!Expected.empty() || LineNo < 2)
      return Bad("the file ends early");
    return std::move(C);
  }

  /// Loads the cache file; a corrupt one is ignored with a note.
  void loadCache() {
    ErrorOr<std::unique_ptr<MemoryBuffer>> Buf =
        MemoryBuffer::getFile(CachePath, /*IsText=*/true);
    if (!Buf)
      return;
    Expected<CacheContents> C = parseCache((*Buf)->getBuffer());
    if (!C) {
      Notes.push_back("ignored the corrupt oneDNN cache '" + CachePath + "' (" +
                      toString(C.takeError()) + ")");
      // It is rewritten whole at the next save.
      Dirty = true;
      return;
    }
    Cache = std::move(*C);
  }

  Error saveCache() {
    if (!Dirty)
      return Error::success();
    StringRef Dir = sys::path::parent_path(CachePath);
    if (std::error_code EC = sys::fs::create_directories(Dir))
      return makeFileError(Dir, 0, 0,
                           "cannot create the oneDNN cache directory: " +
                               EC.message());
    // Keep what other processes wrote since this one loaded the file.
    if (ErrorOr<std::unique_ptr<MemoryBuffer>> Buf =
            MemoryBuffer::getFile(CachePath, /*IsText=*/true)) {
      if (Expected<CacheContents> Theirs = parseCache((*Buf)->getBuffer())) {
        for (auto &KV : Theirs->Entries)
          Cache.Entries.try_emplace(KV.getKey(), KV.getValue());
        if (!Cache.Bandwidth)
          Cache.Bandwidth = Theirs->Bandwidth;
      } else {
        consumeError(Theirs.takeError());
      }
    }
    std::vector<StringRef> Keys;
    for (auto &KV : Cache.Entries)
      Keys.push_back(KV.getKey());
    llvm::sort(Keys);
    if (Error E = writeFileAtomically(CachePath, [&](raw_ostream &OS) {
          OS << CacheMagic << '\n' << getIdentity();
          if (Cache.Bandwidth) {
            OS << "bandwidth ";
            writeDouble(OS, *Cache.Bandwidth);
            OS << '\n';
          }
          for (StringRef K : Keys) {
            const CacheEntry &E = Cache.Entries[K];
            OS << "m ";
            writeDouble(OS, E.Seconds);
            OS << ' ' << E.WorkspaceBytes << ' ' << K << '\n';
          }
        }))
      return E;
    Dirty = false;
    return Error::success();
  }

  /// Times \p PD: the median of Runs executions after one warm-up.
  Measurement time(const dnnl::primitive_desc_base &PD, unsigned NumSrcs) {
    std::unordered_map<int, memory> Args;
    std::vector<std::pair<int, memory::desc>> Descs;
    uint64_t Total = 0;
    auto Query = [&](int Arg) {
      memory::desc MD = PD.query_md(dnnl::query::exec_arg_md, Arg);
      if (MD.get_size() == 0)
        return;
      Total += MD.get_size();
      Descs.emplace_back(Arg, MD);
    };
    for (int Arg : ExecArgs)
      Query(Arg);
    for (unsigned I = 0; I != NumSrcs; ++I)
      Query(DNNL_ARG_MULTIPLE_SRC + int(I));
    Measurement M;
    if (Total > Opts.MaxBytes) {
      M.Status = MeasureStatusKind::OverLimit;
      return M;
    }
    for (auto &[Arg, MD] : Descs) {
      memory Mem(MD, Eng);
      // Zeros: no denormals or NaNs to slow the arithmetic down.
      std::memset(Mem.get_data_handle(), 0, MD.get_size());
      Args.emplace(Arg, std::move(Mem));
      if (Arg == DNNL_ARG_SCRATCHPAD)
        M.WorkspaceBytes = MD.get_size();
    }
    dnnl::primitive Prim(PD.get());
    Prim.execute(Strm, Args);
    Strm.wait();
    std::vector<double> Times;
    for (unsigned R = 0; R != std::max(Opts.Runs, 1u); ++R) {
      auto Start = std::chrono::steady_clock::now();
      Prim.execute(Strm, Args);
      Strm.wait();
      auto End = std::chrono::steady_clock::now();
      Times.push_back(std::chrono::duration<double>(End - Start).count());
    }
    std::sort(Times.begin(), Times.end());
    size_t N = Times.size();
    M.Seconds = N % 2 ? Times[N / 2] : (Times[N / 2 - 1] + Times[N / 2]) / 2;
    M.Status = MeasureStatusKind::Measured;
    return M;
  }

  /// Measures the problems (or finds them in the cache) and adds their
  /// times up.
  Measurement measureProblems(ArrayRef<Problem> Ps, double RooflineSeconds) {
    Measurement Sum;
    Sum.Status = MeasureStatusKind::Measured;
    for (const Problem &P : Ps) {
      std::string Sig = P.getSignature();
      auto It = Cache.Entries.find(Sig);
      if (It != Cache.Entries.end()) {
        ++NumCacheHits;
        Sum.Seconds += It->second.Seconds;
        Sum.WorkspaceBytes =
            std::max(Sum.WorkspaceBytes, It->second.WorkspaceBytes);
        ++Sum.Primitives;
        continue;
      }
      if (RooflineSeconds > Opts.MeasureLimit)
        return {MeasureStatusKind::OverLimit};
      Measurement M;
      try {
        dnnl::primitive_desc_base PD = createPrimitiveDesc(P, Eng);
        M = time(PD, P.Kind == PrimKind::Sum ? P.Shapes.size() : 0);
      } catch (const dnnl::error &) {
        return {MeasureStatusKind::Unsupported};
      } catch (const std::bad_alloc &) {
        return {MeasureStatusKind::OverLimit};
      }
      if (M.Status != MeasureStatusKind::Measured)
        return M;
      ++NumMeasured;
      Cache.Entries[Sig] = {M.Seconds, M.WorkspaceBytes};
      Dirty = true;
      Sum.Seconds += M.Seconds;
      Sum.WorkspaceBytes = std::max(Sum.WorkspaceBytes, M.WorkspaceBytes);
      ++Sum.Primitives;
    }
    return Sum;
  }

  double getMemoryBandwidth() {
    if (Cache.Bandwidth)
      return *Cache.Bandwidth;
    // An eltwise copy (linear, alpha 1) of 64 MiB of f32 reads and writes
    // 64 MiB each, on every core; the best of 5 is the bandwidth.
    double Best = 0;
    try {
      memory::dims D{int64_t(16) << 20};
      dnnl::eltwise_forward::desc Desc(
          prop_kind::forward_inference, algorithm::eltwise_linear,
          getPlainDesc(D, memory::data_type::f32), 1.0f, 0.0f);
      dnnl::eltwise_forward::primitive_desc PD(Desc, Eng);
      memory Src(PD.src_desc(), Eng), Dst(PD.dst_desc(), Eng);
      std::memset(Src.get_data_handle(), 0, PD.src_desc().get_size());
      std::memset(Dst.get_data_handle(), 0, PD.dst_desc().get_size());
      dnnl::eltwise_forward Prim(PD);
      std::unordered_map<int, memory> Args{{DNNL_ARG_SRC, Src},
                                           {DNNL_ARG_DST, Dst}};
      Prim.execute(Strm, Args);
      Strm.wait();
      for (unsigned R = 0; R != 5; ++R) {
        auto Start = std::chrono::steady_clock::now();
        Prim.execute(Strm, Args);
        Strm.wait();
        double S = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - Start)
                       .count();
        Best = std::max(Best, 2.0 * PD.src_desc().get_size() / S);
      }
    } catch (const dnnl::error &) {
      Best = 0;
    }
    // A machine where even this fails gets a conservative 10 GB/s.
    Cache.Bandwidth = Best > 0 ? Best : 10e9;
    Dirty = true;
    return *Cache.Bandwidth;
  }

  OneDNNOptions Opts;
  dnnl::engine Eng;
  dnnl::stream Strm;
  std::string CachePath;
  CacheContents Cache;
  bool Dirty = false;
  std::vector<std::string> Notes;
  unsigned NumMeasured = 0;
  unsigned NumCacheHits = 0;
};

OneDNNMeasurer::OneDNNMeasurer(std::unique_ptr<Impl> I) : I(std::move(I)) {}
OneDNNMeasurer::~OneDNNMeasurer() = default;

Expected<std::unique_ptr<OneDNNMeasurer>>
OneDNNMeasurer::create(OneDNNOptions Opts) {
  std::string Dir =
      Opts.CacheDir.empty() ? getDefaultCacheDir() : Opts.CacheDir;
  if (Dir.empty())
    return makeError("no directory for the oneDNN cache: set XDG_CACHE_HOME "
                     "or HOME, or pass cache=<dir>");
  std::unique_ptr<Impl> I;
  try {
    I = std::make_unique<Impl>(std::move(Opts));
  } catch (const dnnl::error &E) {
    return makeError(Twine("oneDNN has no CPU engine: ") + E.what());
  }
  // One file per oneDNN version, CPU model and thread count.
  SmallString<256> Path(Dir);
  sys::path::append(Path, "measurements-" +
                              utohexstr(xxHash64(I->getIdentity()),
                                        /*LowerCase=*/true) +
                              ".txt");
  I->CachePath = std::string(Path);
  I->loadCache();
  return std::unique_ptr<OneDNNMeasurer>(new OneDNNMeasurer(std::move(I)));
}

Measurement OneDNNMeasurer::measure(const Graph &G, OpId O,
                                    double RooflineSeconds) {
  Optional<std::vector<Problem>> Ps = getForwardProblems(G, G.getOp(O));
  if (!Ps)
    return {};
  return I->measureProblems(*Ps, RooflineSeconds);
}

Measurement OneDNNMeasurer::measureBackward(const Graph &G, OpId Backward,
                                            OpId Forward,
                                            double RooflineSeconds) {
  Optional<std::vector<Problem>> Ps =
      getBackwardProblems(G, G.getOp(Backward), G.getOp(Forward));
  if (!Ps)
    return {};
  return I->measureProblems(*Ps, RooflineSeconds);
}

double OneDNNMeasurer::getMemoryBandwidth() { return I->getMemoryBandwidth(); }
Error OneDNNMeasurer::saveCache() { return I->saveCache(); }
ArrayRef<std::string> OneDNNMeasurer::getNotes() const { return I->Notes; }
unsigned OneDNNMeasurer::getNumMeasured() const { return I->NumMeasured; }
unsigned OneDNNMeasurer::getNumCacheHits() const { return I->NumCacheHits; }
StringRef OneDNNMeasurer::getCachePath() const { return I->CachePath; }

std::string OneDNNMeasurer::getDefaultCacheDir() {
  SmallString<256> Dir;
  Optional<std::string> XDG = sys::Process::GetEnv("XDG_CACHE_HOME");
  Optional<std::string> Home = sys::Process::GetEnv("HOME");
  if (XDG && !XDG->empty()) {
    Dir = *XDG;
  } else if (Home && !Home->empty()) {
    Dir = *Home;
    sys::path::append(Dir, ".cache");
  } else {
    return "";
  }
  sys::path::append(Dir, "dp", "onednn");
  return std::string(Dir);
}

std::string OneDNNMeasurer::getCPUModel() {
  ErrorOr<std::unique_ptr<MemoryBuffer>> Buf =
      MemoryBuffer::getFileAsStream("/proc/cpuinfo");
  if (!Buf)
    return "unknown";
  SmallVector<StringRef, 0> Lines;
  (*Buf)->getBuffer().split(Lines, '\n');
  for (StringRef Line : Lines) {
    auto [Key, Value] = Line.split(':');
    if (Key.trim() == "model name" && !Value.trim().empty())
      return Value.trim().str();
  }
  return "unknown";
}

std::string OneDNNMeasurer::getLibraryVersion() {
  const dnnl::version_t *V = dnnl::version();
  return (Twine(V->major) + "." + Twine(V->minor) + "." + Twine(V->patch))
      .str();
}

} // namespace dp
