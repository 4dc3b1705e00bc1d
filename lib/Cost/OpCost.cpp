//===- OpCost.cpp - Analytical (roofline) op costs ------------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
//
// FLOP and byte formulas per op kind, and the table of efficiency factors.
// docs/cost.md documents every figure here; keep the two in step.
//
//===----------------------------------------------------------------------===//

#include "dp/Cost/OpCost.h"
#include "OpAttributes.h"
#include "dp/IR/Annotations.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"

#include <algorithm>
#include <cmath>

using namespace llvm;

namespace dp {

//===----------------------------------------------------------------------===//
// The table of efficiency factors and backward multiples
//===----------------------------------------------------------------------===//

// One row per OpCostKind, in enum order: GPU {compute, memory}, CPU
// {compute, memory}, launch fraction. docs/cost.md ("Efficiency factors")
// explains each figure.
// clang-format off
static const CostKindInfo CostKindTable[] = {
  {OpCostKind::Gemm,          "gemm",          {0.70, 0.75}, {0.80, 0.60}, 1.0},
  {OpCostKind::Conv,          "conv",          {0.60, 0.75}, {0.60, 0.60}, 1.0},
  {OpCostKind::Recurrent,     "recurrent",     {0.40, 0.60}, {0.50, 0.50}, 1.0},
  {OpCostKind::Pooling,       "pooling",       {0.30, 0.70}, {0.30, 0.60}, 1.0},
  {OpCostKind::Normalization, "normalization", {0.30, 0.65}, {0.30, 0.55}, 1.0},
  {OpCostKind::Softmax,       "softmax",       {0.30, 0.65}, {0.30, 0.55}, 1.0},
  {OpCostKind::Reduction,     "reduction",     {0.30, 0.65}, {0.30, 0.55}, 1.0},
  {OpCostKind::Elementwise,   "elementwise",   {0.50, 0.80}, {0.50, 0.70}, 1.0},
  {OpCostKind::Indexing,      "indexing",      {0.20, 0.40}, {0.20, 0.40}, 1.0},
  {OpCostKind::DataMovement,  "data-movement", {0.50, 0.70}, {0.50, 0.60}, 1.0},
  {OpCostKind::View,          "view",          {1.00, 1.00}, {1.00, 1.00}, 0.1},
  {OpCostKind::Metadata,      "metadata",      {1.00, 1.00}, {1.00, 1.00}, 0.1},
  {OpCostKind::ControlFlow,   "control-flow",  {0.30, 0.60}, {0.30, 0.50}, 1.0},
  {OpCostKind::Update,        "update",        {0.50, 0.80}, {0.50, 0.70}, 1.0},
  {OpCostKind::Unknown,       "unknown",       {0.50, 0.80}, {0.50, 0.70}, 1.0},
};
// clang-format on
static_assert(std::size(CostKindTable) == NumOpCostKinds,
              "one row per OpCostKind");

const CostKindInfo &getCostKindInfo(OpCostKind K) {
  const CostKindInfo &Info = CostKindTable[unsigned(K)];
  assert(Info.Kind == K && "CostKindTable is out of enum order");
  return Info;
}

StringRef getOpCostKindName(OpCostKind K) { return getCostKindInfo(K).Name; }

Efficiency getEfficiency(OpCostKind K, DeviceKind D) {
  const CostKindInfo &Info = getCostKindInfo(K);
  return D == DeviceKind::CPU ? Info.CPU : Info.GPU;
}

//===----------------------------------------------------------------------===//
// Op types
//===----------------------------------------------------------------------===//

namespace {
/// What the model knows of one op type (include/dp/IR/Ops.def).
struct OpTypeInfo {
  OpCostKind Kind;
  /// FLOPs per output element of elementwise ops, per input element of
  /// reductions and normalizations (unused by the kinds with formulas of
  /// their own). A transcendental function counts 4.
  double FlopsPerElement;
  /// The cost of the op's backward op (dp::<Type>Grad) as a multiple of
  /// the op's own: that of its backward rule.
  double BackwardMultiple;
};
} // namespace

/// The backward multiple of op types without a rule of their own: that of
/// the training-graph pass's generic rule.
static constexpr double DefaultBackwardMultiple = 2.0;

// The op registry's cost classes and backward multiples (the latter those
// of the training-graph pass's rules; CostTests checks that the two
// agree). Ops without a formula have the kind Unknown.
#define COST(KIND, FLOPS) OpCostKind::KIND, FLOPS
#define NO_COST OpCostKind::Unknown, 0
#define GRAD(DIFF, SAVED_OPERANDS, SAVED_RESULTS, MULTIPLE) MULTIPLE
#define GRAD_OF(DIFF, SAVED_OPERANDS, SAVED_RESULTS, MULTIPLE, DIFF_RESULTS)   \
  MULTIPLE
#define NO_GRAD DefaultBackwardMultiple
#define GENERIC_GRAD DefaultBackwardMultiple
static const std::pair<StringRef, OpTypeInfo> ONNXOpTypes[] = {
#define OP(NAME, COST, BACKWARD, ONEDNN, FEATURE, OPSET, RUNTIME)              \
  {NAME, {COST, BACKWARD}},
#include "dp/IR/Ops.def"
};

// Optimizer updates of the "dp" domain (they have no backward).
static const std::pair<StringRef, OpTypeInfo> UpdateOpTypes[] = {
#define DP_OP(NAME, COST, FEATURE) {NAME, {COST, DefaultBackwardMultiple}},
#include "dp/IR/Ops.def"
};
#undef COST
#undef NO_COST
#undef GRAD
#undef GRAD_OF
#undef NO_GRAD
#undef GENERIC_GRAD

static const OpTypeInfo *lookupOpType(StringRef Domain, StringRef Type) {
  static const StringMap<OpTypeInfo> ONNXMap = [] {
    StringMap<OpTypeInfo> M;
    for (const auto &[Name, Info] : ONNXOpTypes)
      M.try_emplace(Name, Info);
    return M;
  }();
  if (Domain.empty() || Domain == "ai.onnx") {
    auto It = ONNXMap.find(Type);
    return It == ONNXMap.end() ? nullptr : &It->second;
  }
  if (Domain == "dp")
    for (const auto &[Name, Info] : UpdateOpTypes)
      if (Name == Type)
        return &Info;
  return nullptr;
}

OpCostKind classifyOp(StringRef Domain, StringRef Type) {
  if (const OpTypeInfo *Info = lookupOpType(Domain, Type))
    return Info->Kind;
  // A backward op has the kind of its forward op.
  if (Domain == "dp" && Type.endswith("Grad") && Type.size() > 4)
    return classifyOp("", Type.drop_back(4));
  return OpCostKind::Unknown;
}

double getBackwardMultiple(StringRef Domain, StringRef ForwardType) {
  const OpTypeInfo *Info = lookupOpType(Domain, ForwardType);
  return Info ? Info->BackwardMultiple : DefaultBackwardMultiple;
}

ArrayRef<StringRef> getKnownOpTypes() {
  static const std::vector<StringRef> Types = [] {
    std::vector<StringRef> V;
    for (const auto &[Name, Info] : ONNXOpTypes)
      if (Info.Kind != OpCostKind::Unknown)
        V.push_back(Name);
    llvm::sort(V);
    return V;
  }();
  return Types;
}

bool isBackwardOp(const Op &O) {
  return O.Domain == "dp" && O.Type.endswith("Grad") && O.Type.size() > 4;
}

bool isUpdateOp(const Op &O) {
  const OpTypeInfo *Info = lookupOpType(O.Domain, O.Type);
  return Info && Info->Kind == OpCostKind::Update;
}

//===----------------------------------------------------------------------===//
// Work estimates
//===----------------------------------------------------------------------===//

static double numElements(const TensorType *T) {
  return T ? double(T->getNumElements().getValueOr(0)) : 0;
}

static double numBytes(const TensorType *T) {
  return T ? double(T->getSizeInBytes().getValueOr(0)) : 0;
}

static double product(ArrayRef<int64_t> Dims) {
  double P = 1;
  for (int64_t D : Dims)
    P *= double(std::max<int64_t>(D, 0));
  return P;
}

/// \p Measure summed over the present tensors of \p Ts, in order; with
/// \p Distinct, a tensor listed twice counts once.
static double sumOver(const Graph &G, ArrayRef<TensorId> Ts,
                      double (*Measure)(const TensorType *),
                      bool Distinct = false) {
  SmallSet<TensorId, 4> Seen;
  double Sum = 0;
  for (TensorId T : Ts)
    if (T != NoId && (!Distinct || Seen.insert(T).second))
      Sum += Measure(&G.getTensor(T).Type);
  return Sum;
}

/// Bytes of every distinct operand (an operand used twice is read once).
static double operandBytes(const Graph &G, const Op &O) {
  return sumOver(G, O.Operands, numBytes, /*Distinct=*/true);
}

static double resultBytes(const Graph &G, const Op &O) {
  return sumOver(G, O.Results, numBytes);
}

static double resultElements(const Graph &G, const Op &O) {
  return sumOver(G, O.Results, numElements);
}

static unsigned numPresent(ArrayRef<TensorId> Ts) {
  return count_if(Ts, [](TensorId T) { return T != NoId; });
}

static bool isFloatType(DTypeKind K) {
  return K == DTypeKind::F32 || K == DTypeKind::F16 || K == DTypeKind::BF16 ||
         K == DTypeKind::F64;
}

/// The element type of the arithmetic: the first floating-point operand's,
/// else the first operand's, else the first result's.
static DTypeKind getComputeType(const Graph &G, const Op &O) {
  for (TensorId T : O.Operands)
    if (T != NoId && isFloatType(G.getTensor(T).Type.DType))
      return G.getTensor(T).Type.DType;
  for (TensorId T : O.Operands)
    if (T != NoId)
      return G.getTensor(T).Type.DType;
  for (TensorId T : O.Results)
    if (T != NoId)
      return G.getTensor(T).Type.DType;
  return DTypeKind::F32;
}

/// Elementwise over the results: one FLOP per result element.
static void setElementwiseFallback(const Graph &G, const Op &O, OpWork &W,
                                   const Twine &Note) {
  W.Kind = OpCostKind::Unknown;
  W.Flops = resultElements(G, O);
  W.Bytes = operandBytes(G, O) + resultBytes(G, O);
  W.Launches = 1;
  W.Note = Note.str();
}

static void estimateGemm(const Graph &G, const Op &O, OpWork &W) {
  const TensorType *Y = getResultType(G, O, 0);
  if (O.Type == "Einsum") {
    const Attribute *Eq = O.Attrs.get("equation");
    std::vector<ArrayRef<int64_t>> Shapes;
    for (TensorId T : O.Operands)
      if (T != NoId)
        Shapes.push_back(G.getTensor(T).Type.Dims);
    Expected<EinsumEquation> Parsed =
        Eq && Eq->getKind() == AttrKind::String
            ? parseEinsumEquation(Eq->getString(), Shapes.size())
            : Expected<EinsumEquation>(createStringError(
                  inconvertibleErrorCode(), "it has no equation"));
    Expected<double> Flops = Parsed ? countEinsumFlops(*Parsed, Shapes)
                                    : Expected<double>(Parsed.takeError());
    if (!Flops) {
      setElementwiseFallback(G, O, W,
                             "cannot analyse the Einsum (" +
                                 toString(Flops.takeError()) +
                                 "): treated as elementwise");
      return;
    }
    W.Flops = *Flops;
    return;
  }
  // A is operand 0 (QLinearMatMul too); K is its last dimension, or its
  // first for Gemm with transA.
  const TensorType *A = getOperandType(G, O, 0);
  if (!A || A->getRank() == 0 || !Y) {
    setElementwiseFallback(G, O, W,
                           "malformed " + O.Type + ": treated as elementwise");
    return;
  }
  double K = double(A->Dims.back());
  if (O.Type == "Gemm" && getIntAttr(O, "transA", 0) && A->getRank() == 2)
    K = double(A->Dims[0]);
  W.Flops = 2 * numElements(Y) * K;
  if (O.Type == "Gemm" && getOperandType(G, O, 2))
    W.Flops += numElements(Y);
}

static void estimateConv(const Graph &G, const Op &O, OpWork &W) {
  bool QLinear = O.Type == "QLinearConv";
  const TensorType *X = getOperandType(G, O, 0);
  const TensorType *Wt = getOperandType(G, O, QLinear ? 3 : 1);
  const TensorType *B =
      O.Type == "ConvInteger" ? nullptr : getOperandType(G, O, QLinear ? 8 : 2);
  const TensorType *Y = getResultType(G, O, 0);
  if (!X || !Wt || !Y || Wt->getRank() < 2) {
    setElementwiseFallback(G, O, W,
                           "malformed " + O.Type + ": treated as elementwise");
    return;
  }
  // Every output element of Conv takes (C/group) * prod(kernel) multiply-
  // adds: the product of W's dimensions after the first. ConvTranspose
  // scatters each input element over (M/group) * prod(kernel) outputs.
  // Strides, dilations, padding and groups are all in the shapes.
  double PerElement = 2 * product(ArrayRef<int64_t>(Wt->Dims).drop_front());
  double Driving = O.Type == "ConvTranspose" ? numElements(X) : numElements(Y);
  W.Flops = PerElement * Driving;
  if (B)
    W.Flops += numElements(Y);
}

// Elementwise FLOPs per hidden unit and time step besides the two matrix
// products: bias adds (2 per gate), gate activations (4 each), and the
// cell/hidden state update. docs/cost.md derives them.
static double getRecurrentCellFlops(StringRef Type) {
  if (Type == "LSTM")
    return 2 * 4 + 4 * 5 + 4;
  if (Type == "GRU")
    return 2 * 3 + 4 * 3 + 5;
  return 2 * 1 + 4 * 1;
}

static void estimateRecurrent(const Graph &G, const Op &O, OpWork &W) {
  const TensorType *X = getOperandType(G, O, 0);
  const TensorType *Wt = getOperandType(G, O, 1);
  const TensorType *R = getOperandType(G, O, 2);
  if (!X || !Wt || !R || X->getRank() != 3 || Wt->getRank() != 3 ||
      R->getRank() != 3) {
    setElementwiseFallback(G, O, W,
                           "malformed " + O.Type + ": treated as elementwise");
    return;
  }
  unsigned Gates = O.Type == "LSTM" ? 4 : O.Type == "GRU" ? 3 : 1;
  bool BatchFirst = getIntAttr(O, "layout", 0) == 1;
  double Seq = double(X->Dims[BatchFirst ? 1 : 0]);
  double Batch = double(X->Dims[BatchFirst ? 0 : 1]);
  double Input = double(X->Dims[2]);
  double Hidden = double(R->Dims[2]);
  double Dirs = double(Wt->Dims[0]);
  double PerStep = 2 * Batch * Gates * Hidden * (Input + Hidden) +
                   Batch * Hidden * getRecurrentCellFlops(O.Type);
  W.Flops = Seq * Dirs * PerStep;
  // The recurrent weights are read again at every step.
  W.Bytes += std::max(Seq - 1, 0.0) * numBytes(R);
  W.Launches = std::max(Seq * Dirs, 1.0);
}

static void estimatePooling(const Graph &G, const Op &O, OpWork &W,
                            double PerElement) {
  const TensorType *X = getOperandType(G, O, 0);
  if (O.Type.startswith("Global")) {
    W.Flops = PerElement * numElements(X);
    return;
  }
  const Attribute *Kernel = O.Attrs.get("kernel_shape");
  double Window = Kernel && Kernel->getKind() == AttrKind::Ints
                      ? product(Kernel->getInts())
                      : 1;
  W.Flops = PerElement * Window * numElements(getResultType(G, O, 0));
}

static void estimateIndexing(const Graph &G, const Op &O, OpWork &W,
                             double PerElement) {
  if (O.Type.startswith("Gather")) {
    // Reads the gathered elements and the indices, writes the result.
    W.Flops = 0;
    W.Bytes = numBytes(getOperandType(G, O, 1)) + 2 * resultBytes(G, O);
    return;
  }
  if (O.Type.startswith("Scatter")) {
    bool Reduces = getStringAttr(O, "reduction", "none") != "none";
    W.Flops = Reduces ? numElements(getOperandType(G, O, 2)) : 0;
    return;
  }
  W.Flops = PerElement * numElements(getOperandType(G, O, 0));
}

static void estimateDataMovement(const Graph &G, const Op &O, OpWork &W) {
  if (O.Type == "Slice") {
    // Reads only what it writes.
    W.Bytes = 2 * resultBytes(G, O);
    return;
  }
  if (O.Type == "Resize" || O.Type == "Upsample" || O.Type == "GridSample") {
    // GridSample interpolates at each output element as Resize does.
    StringRef Mode = getStringAttr(
        O, "mode", O.Type == "GridSample" ? "bilinear" : "nearest");
    double PerElement = Mode == "linear" || Mode == "bilinear" ? 4
                        : Mode == "cubic" || Mode == "bicubic" ? 16
                                                               : 0;
    W.Flops = PerElement * numElements(getResultType(G, O, 0));
  }
}

/// The first GraphSummary of attribute \p Name, or null.
static const GraphSummary *getBody(const Op &O, StringRef Name) {
  const Attribute *A = O.Attrs.get(Name);
  if (!A || A->getKind() != AttrKind::Graph)
    return nullptr;
  return &A->getGraphSummaries().front();
}

static void estimateControlFlow(const Graph &G, const Op &O, OpWork &W) {
  int64_t Implicit = 0;
  if (Optional<int64_t> N = ann::get(O, ann::ImplicitOperands))
    Implicit = *N;
  unsigned Explicit =
      unsigned(std::max<int64_t>(int64_t(O.Operands.size()) - Implicit, 0));
  double Nodes = 0, Iterations = 1;
  if (O.Type == "If") {
    // The longer branch.
    for (StringRef Name : {"then_branch", "else_branch"})
      if (const GraphSummary *S = getBody(O, Name))
        Nodes = std::max(Nodes, double(S->Nodes));
  } else if (const GraphSummary *Body = getBody(O, "body")) {
    Nodes = double(Body->Nodes);
    if (O.Type == "Scan") {
      // Iterations: the scan axis of the first scan input.
      int64_t NumScanInputs = getIntAttr(O, "num_scan_inputs", 0);
      int64_t First = int64_t(Explicit) - NumScanInputs;
      int64_t Axis = 0;
      if (const Attribute *A = O.Attrs.get("scan_input_axes"))
        if (A->getKind() == AttrKind::Ints && !A->getInts().empty())
          Axis = A->getInts().front();
      const TensorType *In = First >= 0 ? getOperandType(G, O, First) : nullptr;
      if (In && Axis < 0)
        Axis += In->getRank();
      if (In && Axis >= 0 && Axis < int64_t(In->getRank()))
        Iterations = double(In->Dims[Axis]);
    } else {
      // Loop: operands M, cond and N loop-carried values; its results are
      // the N final values and then the scan outputs, whose first
      // dimension is the trip count.
      unsigned Carried = Explicit >= 2 ? Explicit - 2 : 0;
      const TensorType *ScanOut = getResultType(G, O, Carried);
      Optional<int64_t> Trips = ann::get(O, ann::TripCount);
      if (ScanOut && ScanOut->getRank() > 0) {
        Iterations = double(ScanOut->Dims[0]);
      } else if (Trips) {
        // Import folded M: the loop runs at most that often.
        Iterations = double(*Trips);
      } else {
        W.Note = "Loop trip count unknown: costed as one iteration";
      }
    }
  }
  // Each body node executed counts as an elementwise op over the largest
  // result of the control-flow op (at least one element) reading two
  // operands and writing one result of that size.
  double Elements = 1, ElementBytes = 4;
  for (TensorId T : O.Results) {
    if (T == NoId)
      continue;
    const TensorType &Ty = G.getTensor(T).Type;
    if (numElements(&Ty) > Elements) {
      Elements = numElements(&Ty);
      ElementBytes = std::max(getDTypeSize(Ty.DType), 1u);
    }
  }
  double Executed = Nodes * Iterations;
  W.Flops = Executed * Elements;
  W.Bytes = Executed * 3 * Elements * ElementBytes;
  W.Launches = Executed;
}

static void estimateUpdate(const Graph &G, const Op &O, OpWork &W,
                           double PerElement) {
  // The weight: the first weight operand, else operand 0.
  const TensorType *Weight = getOperandType(G, O, 0);
  for (TensorId T : O.Operands)
    if (T != NoId && G.getTensor(T).Kind == TensorKind::Weight) {
      Weight = &G.getTensor(T).Type;
      break;
    }
  double WeightBytes = numBytes(Weight), Elements = numElements(Weight);
  double States =
      double(std::max<int64_t>(getIntAttr(O, "state_copies", 0), 0));
  W.Flops = PerElement * Elements;
  // Reads weight, gradient and state; writes weight and state. Mixed
  // precision keeps the state and an f32 master copy of the weight, which
  // the update reads and writes too.
  if (getIntAttr(O, "master_weights", 0) == 1) {
    double StateBytes = (States + 1) * 4 * Elements;
    W.Bytes = 3 * WeightBytes + 2 * StateBytes;
    W.PersistentBytes = uint64_t(StateBytes);
    return;
  }
  W.Bytes = (3 + 2 * States) * WeightBytes;
  W.PersistentBytes = uint64_t(States * WeightBytes);
}

OpWork estimateWork(const Graph &G, OpId Id) {
  const Op &O = G.getOp(Id);
  OpWork W;
  W.ComputeType = getComputeType(G, O);
  const OpTypeInfo *Info = lookupOpType(O.Domain, O.Type);
  if (!Info || Info->Kind == OpCostKind::Unknown) {
    setElementwiseFallback(G, O, W,
                           isBackwardOp(O)
                               ? "backward op without its forward op: "
                                 "treated as elementwise"
                               : "unknown op kind: treated as elementwise");
    return W;
  }
  W.Kind = Info->Kind;
  W.Bytes = operandBytes(G, O) + resultBytes(G, O);
  const TensorType *X = getOperandType(G, O, 0);
  switch (Info->Kind) {
  case OpCostKind::Gemm:
    estimateGemm(G, O, W);
    break;
  case OpCostKind::Conv:
    estimateConv(G, O, W);
    break;
  case OpCostKind::Recurrent:
    estimateRecurrent(G, O, W);
    break;
  case OpCostKind::Pooling:
    estimatePooling(G, O, W, Info->FlopsPerElement);
    break;
  case OpCostKind::Normalization: {
    double PerElement = Info->FlopsPerElement;
    if (O.Type == "BatchNormalization" &&
        (getIntAttr(O, "training_mode", 0) || numPresent(O.Results) > 1))
      PerElement = 8;
    if (O.Type == "LRN")
      PerElement = 2 * double(getIntAttr(O, "size", 1)) + 6;
    W.Flops = PerElement * numElements(X);
    break;
  }
  case OpCostKind::Softmax:
    W.Flops = Info->FlopsPerElement * numElements(X);
    break;
  case OpCostKind::Reduction:
    if (O.Type == "TopK") {
      // A partial sort: log2(k) comparisons per input element.
      const TensorType *Y = getResultType(G, O, 0);
      int64_t Axis = getIntAttr(O, "axis", -1);
      double K = 2;
      if (Y && Axis < 0)
        Axis += Y->getRank();
      if (Y && Axis >= 0 && Axis < int64_t(Y->getRank()))
        K = std::max(double(Y->Dims[Axis]), 2.0);
      W.Flops = std::log2(K) * numElements(X);
      break;
    }
    W.Flops = Info->FlopsPerElement * numElements(X);
    break;
  case OpCostKind::Elementwise: {
    // Variadic ops (Sum, Max, Min, Mean) combine n inputs with n-1
    // operations per element; others apply one.
    double Ops = 1;
    if (O.Type == "Sum" || O.Type == "Max" || O.Type == "Min" ||
        O.Type == "Mean")
      Ops = std::max(double(numPresent(O.Operands)) - 1, 0.0);
    W.Flops = Info->FlopsPerElement * Ops * numElements(getResultType(G, O, 0));
    break;
  }
  case OpCostKind::Indexing:
    estimateIndexing(G, O, W, Info->FlopsPerElement);
    break;
  case OpCostKind::DataMovement:
    estimateDataMovement(G, O, W);
    break;
  case OpCostKind::View:
  case OpCostKind::Metadata:
    W.Bytes = 0;
    break;
  case OpCostKind::ControlFlow:
    estimateControlFlow(G, O, W);
    break;
  case OpCostKind::Update:
    estimateUpdate(G, O, W, Info->FlopsPerElement);
    break;
  case OpCostKind::Unknown:
    llvm_unreachable("unknown ops have no OpTypeInfo");
  }
  return W;
}

double getRooflineTime(const OpWork &W, const DeviceType &T) {
  const CostKindInfo &Info = getCostKindInfo(W.Kind);
  Efficiency E = T.Kind == DeviceKind::CPU ? Info.CPU : Info.GPU;
  double Compute = 0, Memory = 0;
  if (W.Flops > 0)
    Compute = W.Flops / (T.getPeakFlops(W.ComputeType) * E.Compute);
  if (W.Bytes > 0)
    Memory = W.Bytes / (T.MemoryBandwidth * E.Memory);
  return std::max(Compute, Memory) +
         W.Launches * Info.LaunchFraction * T.LaunchOverhead;
}

//===----------------------------------------------------------------------===//
// Einsum
//===----------------------------------------------------------------------===//

/// Einsum problems become notes on the op, not user errors: plain text.
static Error makeEinsumError(const Twine &Msg) {
  return createStringError(inconvertibleErrorCode(), Msg);
}

/// Parses one term: letters and at most one "..." (kept as '.').
static Expected<std::string> parseEinsumTerm(StringRef Term) {
  std::string Labels;
  bool HasEllipsis = false;
  for (size_t I = 0; I < Term.size(); ++I) {
    char C = Term[I];
    if (isAlpha(C)) {
      Labels += C;
      continue;
    }
    if (Term.substr(I).startswith("...") && !HasEllipsis) {
      HasEllipsis = true;
      Labels += '.';
      I += 2;
      continue;
    }
    return makeEinsumError("invalid Einsum term '" + Term + "'");
  }
  return Labels;
}

Expected<EinsumEquation> parseEinsumEquation(StringRef Equation,
                                             unsigned NumOperands) {
  std::string Compact;
  for (char C : Equation)
    if (!isSpace(C))
      Compact += C;
  StringRef Text = Compact;
  auto [Lhs, Rhs] = Text.split("->");
  bool Explicit = Text.contains("->");
  SmallVector<StringRef, 4> Terms;
  Lhs.split(Terms, ',');
  if (Terms.size() != NumOperands)
    return makeEinsumError("Einsum equation '" + Equation + "' has " +
                           Twine(Terms.size()) + " input terms for " +
                           Twine(NumOperands) + " operands");
  EinsumEquation Eq;
  for (StringRef T : Terms) {
    Expected<std::string> Labels = parseEinsumTerm(T);
    if (!Labels)
      return Labels.takeError();
    Eq.Inputs.push_back(std::move(*Labels));
  }
  if (Explicit) {
    Expected<std::string> Labels = parseEinsumTerm(Rhs);
    if (!Labels)
      return Labels.takeError();
    for (size_t I = 0; I < Labels->size(); ++I) {
      char C = (*Labels)[I];
      if (StringRef(*Labels).substr(I + 1).contains(C))
        return makeEinsumError("Einsum output repeats '" + Twine(C) + "'");
      if (none_of(Eq.Inputs, [&](const std::string &In) {
            return In.find(C) != std::string::npos;
          }))
        return makeEinsumError("Einsum output label '" + Twine(C) +
                               "' is in no input");
    }
    Eq.Output = std::move(*Labels);
    return Eq;
  }
  // Implicit output: the ellipsis, then the labels used once, sorted.
  unsigned Counts[128] = {};
  bool AnyEllipsis = false;
  for (const std::string &In : Eq.Inputs)
    for (char C : In) {
      if (C == '.')
        AnyEllipsis = true;
      else
        ++Counts[unsigned(C)];
    }
  if (AnyEllipsis)
    Eq.Output += '.';
  for (unsigned C = 0; C != 128; ++C)
    if (Counts[C] == 1)
      Eq.Output += char(C);
  return Eq;
}

Expected<double> countEinsumFlops(const EinsumEquation &Eq,
                                  ArrayRef<ArrayRef<int64_t>> Shapes) {
  if (Shapes.size() != Eq.Inputs.size())
    return makeEinsumError("Einsum has " + Twine(Shapes.size()) +
                           " operands for " + Twine(Eq.Inputs.size()) +
                           " terms");
  int64_t Sizes[128];
  std::fill(std::begin(Sizes), std::end(Sizes), -1);
  // The ellipsis dimensions broadcast against each other, right-aligned.
  SmallVector<int64_t, 4> EllipsisDims;
  bool AnyEllipsis = false;
  for (unsigned I = 0, E = Shapes.size(); I != E; ++I) {
    StringRef Term = Eq.Inputs[I];
    ArrayRef<int64_t> Shape = Shapes[I];
    bool HasEllipsis = Term.contains('.');
    size_t NumLabels = Term.size() - (HasEllipsis ? 1 : 0);
    if (HasEllipsis ? Shape.size() < NumLabels : Shape.size() != NumLabels)
      return makeEinsumError("Einsum term '" + Term + "' does not match rank " +
                             Twine(Shape.size()));
    size_t NumEllipsis = Shape.size() - NumLabels;
    size_t Dim = 0;
    for (char C : Term) {
      if (C == '.') {
        AnyEllipsis = true;
        ArrayRef<int64_t> Part = Shape.slice(Dim, NumEllipsis);
        if (Part.size() > EllipsisDims.size())
          EllipsisDims.insert(EllipsisDims.begin(),
                              Part.size() - EllipsisDims.size(), 1);
        for (size_t J = 0; J != Part.size(); ++J) {
          int64_t &Have = EllipsisDims[EllipsisDims.size() - Part.size() + J];
          if (Have != Part[J] && Have != 1 && Part[J] != 1)
            return makeEinsumError(
                "Einsum ellipsis dimensions do not broadcast");
          Have = std::max(Have, Part[J]);
        }
        Dim += NumEllipsis;
        continue;
      }
      int64_t &Size = Sizes[unsigned(C)];
      if (Size >= 0 && Size != Shape[Dim])
        return makeEinsumError("Einsum label '" + Twine(C) + "' has sizes " +
                               Twine(Size) + " and " + Twine(Shape[Dim]));
      Size = Shape[Dim++];
    }
  }
  double Space = product(EllipsisDims);
  bool Summed = AnyEllipsis && !StringRef(Eq.Output).contains('.') &&
                product(EllipsisDims) > 1;
  for (unsigned C = 0; C != 128; ++C) {
    if (Sizes[C] < 0)
      continue;
    Space *= double(Sizes[C]);
    if (!StringRef(Eq.Output).contains(char(C)))
      Summed = true;
  }
  double PerPoint = double(Eq.Inputs.size() - 1) + (Summed ? 1 : 0);
  return Space * PerPoint;
}

} // namespace dp
