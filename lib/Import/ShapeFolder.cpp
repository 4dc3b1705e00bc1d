//===- ShapeFolder.cpp - Shape subgraphs evaluated at import --------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "ShapeFolder.h"
#include "dp/Import/ONNXWalk.h"
#include "dp/Support/Diagnostics.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/Twine.h"

#include "onnx/onnx_pb.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

using namespace llvm;

namespace dp {

using TP = onnx::TensorProto;

//===----------------------------------------------------------------------===//
// Values
//===----------------------------------------------------------------------===//

static bool isRealType(int32_t T) {
  return T == TP::FLOAT || T == TP::DOUBLE;
}

static bool isIntType(int32_t T) {
  switch (T) {
  case TP::INT8:
  case TP::INT16:
  case TP::INT32:
  case TP::INT64:
  case TP::UINT8:
  case TP::UINT16:
  case TP::UINT32:
  case TP::UINT64:
  case TP::BOOL:
    return true;
  default:
    return false;
  }
}

static bool isHandledType(int32_t T) { return isRealType(T) || isIntType(T); }

bool FoldValue::isReal() const { return isRealType(ElemType); }

/// The number of elements of \p Dims, or -1 when over MaxFoldElements or
/// negative.
static int64_t countElements(ArrayRef<int64_t> Dims) {
  int64_t N = 1;
  for (int64_t D : Dims) {
    if (D < 0)
      return -1;
    if (D == 0)
      return 0;
    if (N > MaxFoldElements / D)
      return -1;
    N *= D;
  }
  return N;
}

int64_t FoldValue::getNumElements() const { return countElements(Dims); }

static FoldValue makeValue(int32_t Type, ArrayRef<int64_t> Dims) {
  FoldValue V;
  V.ElemType = Type;
  V.Dims.assign(Dims.begin(), Dims.end());
  int64_t N = countElements(Dims);
  assert(N >= 0 && "checked by the caller");
  if (isRealType(Type))
    V.Reals.assign(N, 0.0);
  else
    V.Ints.assign(N, 0);
  return V;
}

/// Stores \p X into element \p I of \p V, converted to V's type (integers
/// truncated toward zero and wrapped to their width, booleans 0 or 1).
static void store(FoldValue &V, int64_t I, double X) {
  if (V.isReal()) {
    V.Reals[I] = V.ElemType == TP::FLOAT ? double(float(X)) : X;
    return;
  }
  V.Ints[I] = V.ElemType == TP::BOOL ? X != 0 : int64_t(X);
}

static int64_t wrapInt(int32_t Type, int64_t X) {
  switch (Type) {
  case TP::BOOL:
    return X != 0;
  case TP::INT8:
    return int8_t(X);
  case TP::UINT8:
    return uint8_t(X);
  case TP::INT16:
    return int16_t(X);
  case TP::UINT16:
    return uint16_t(X);
  case TP::INT32:
    return int32_t(X);
  case TP::UINT32:
    return uint32_t(X);
  default:
    return X;
  }
}

static void storeInt(FoldValue &V, int64_t I, int64_t X) {
  if (V.isReal())
    V.Reals[I] = double(X);
  else
    V.Ints[I] = wrapInt(V.ElemType, X);
}

template <typename T>
static bool readRaw(const std::string &Raw, int64_t N, FoldValue &V) {
  if (Raw.size() != size_t(N) * sizeof(T))
    return false;
  for (int64_t I = 0; I != N; ++I) {
    T X;
    std::memcpy(&X, Raw.data() + I * sizeof(T), sizeof(T));
    if (V.isReal())
      V.Reals[I] = double(X);
    else
      V.Ints[I] = int64_t(X);
  }
  return true;
}

template <typename Field>
static bool readField(const Field &F, int64_t N, FoldValue &V) {
  if (F.size() != N)
    return false;
  for (int64_t I = 0; I != N; ++I) {
    if (V.isReal())
      V.Reals[I] = double(F.Get(I));
    else
      V.Ints[I] = wrapInt(V.ElemType, int64_t(F.Get(I)));
  }
  return true;
}

Optional<FoldValue> readTensorValue(const TP &T) {
  if (!isHandledType(T.data_type()) ||
      T.data_location() == TP::EXTERNAL || T.has_segment())
    return None;
  SmallVector<int64_t, 4> Dims(T.dims().begin(), T.dims().end());
  int64_t N = countElements(Dims);
  if (N < 0)
    return None;
  FoldValue V = makeValue(T.data_type(), Dims);
  bool OK;
  if (T.has_raw_data()) {
    const std::string &Raw = T.raw_data();
    switch (T.data_type()) {
    case TP::FLOAT:
      OK = readRaw<float>(Raw, N, V);
      break;
    case TP::DOUBLE:
      OK = readRaw<double>(Raw, N, V);
      break;
    case TP::INT8:
      OK = readRaw<int8_t>(Raw, N, V);
      break;
    case TP::UINT8:
    case TP::BOOL:
      OK = readRaw<uint8_t>(Raw, N, V);
      break;
    case TP::INT16:
      OK = readRaw<int16_t>(Raw, N, V);
      break;
    case TP::UINT16:
      OK = readRaw<uint16_t>(Raw, N, V);
      break;
    case TP::INT32:
      OK = readRaw<int32_t>(Raw, N, V);
      break;
    case TP::UINT32:
      OK = readRaw<uint32_t>(Raw, N, V);
      break;
    case TP::INT64:
      OK = readRaw<int64_t>(Raw, N, V);
      break;
    default: // UINT64
      OK = readRaw<uint64_t>(Raw, N, V);
      break;
    }
  } else {
    switch (T.data_type()) {
    case TP::FLOAT:
      OK = readField(T.float_data(), N, V);
      break;
    case TP::DOUBLE:
      OK = readField(T.double_data(), N, V);
      break;
    case TP::INT64:
      OK = readField(T.int64_data(), N, V);
      break;
    case TP::UINT32:
    case TP::UINT64:
      OK = readField(T.uint64_data(), N, V);
      break;
    default:
      OK = readField(T.int32_data(), N, V);
      break;
    }
  }
  if (!OK)
    return None;
  return V;
}

void writeTensorValue(const FoldValue &V, TP &T) {
  T.clear_raw_data();
  T.clear_float_data();
  T.clear_double_data();
  T.clear_int32_data();
  T.clear_int64_data();
  T.clear_uint64_data();
  T.clear_dims();
  T.set_data_type(V.ElemType);
  for (int64_t D : V.Dims)
    T.add_dims(D);
  int64_t N = V.getNumElements();
  for (int64_t I = 0; I != N; ++I) {
    switch (V.ElemType) {
    case TP::FLOAT:
      T.add_float_data(float(V.Reals[I]));
      break;
    case TP::DOUBLE:
      T.add_double_data(V.Reals[I]);
      break;
    case TP::INT64:
      T.add_int64_data(V.Ints[I]);
      break;
    case TP::UINT32:
    case TP::UINT64:
      T.add_uint64_data(uint64_t(V.Ints[I]));
      break;
    default:
      T.add_int32_data(int32_t(V.Ints[I]));
      break;
    }
  }
}

//===----------------------------------------------------------------------===//
// Evaluation
//===----------------------------------------------------------------------===//

namespace {

/// Row-major strides of \p Dims.
SmallVector<int64_t, 4> stridesOf(ArrayRef<int64_t> Dims) {
  SmallVector<int64_t, 4> S(Dims.size(), 1);
  for (int I = int(Dims.size()) - 2; I >= 0; --I)
    S[I] = S[I + 1] * Dims[I + 1];
  return S;
}

/// Splits flat index \p Flat of a tensor of \p Dims into \p Index.
void unflatten(int64_t Flat, ArrayRef<int64_t> Dims,
               SmallVectorImpl<int64_t> &Index) {
  Index.resize(Dims.size());
  for (int I = int(Dims.size()) - 1; I >= 0; --I) {
    Index[I] = Dims[I] ? Flat % Dims[I] : 0;
    Flat = Dims[I] ? Flat / Dims[I] : 0;
  }
}

/// The flat index in a tensor of \p Dims, broadcast to the out index
/// \p Index (right-aligned, size-1 dimensions repeated).
int64_t broadcastIndex(ArrayRef<int64_t> Index, ArrayRef<int64_t> Dims) {
  int64_t Flat = 0;
  size_t Offset = Index.size() - Dims.size();
  for (size_t I = 0; I != Dims.size(); ++I)
    Flat = Flat * Dims[I] + (Dims[I] == 1 ? 0 : Index[Offset + I]);
  return Flat;
}

Error foldError(const Twine &Msg) {
  return createStringError(inconvertibleErrorCode(), Msg);
}

/// Numpy's multidirectional broadcast of \p Shapes.
Expected<SmallVector<int64_t, 4>>
broadcastShapes(ArrayRef<ArrayRef<int64_t>> Shapes) {
  size_t Rank = 0;
  for (ArrayRef<int64_t> S : Shapes)
    Rank = std::max(Rank, S.size());
  SmallVector<int64_t, 4> Out(Rank, 1);
  for (ArrayRef<int64_t> S : Shapes) {
    size_t Offset = Rank - S.size();
    for (size_t I = 0; I != S.size(); ++I) {
      int64_t &O = Out[Offset + I];
      if (S[I] == O || S[I] == 1)
        continue;
      if (O != 1)
        return foldError("shapes cannot be broadcast together (dimension " +
                         Twine(S[I]) + " against " + Twine(O) + ")");
      O = S[I];
    }
  }
  return Out;
}

class Evaluator {
public:
  Evaluator(const onnx::NodeProto &N, int Opset,
            ArrayRef<const FoldValue *> Inputs,
            ArrayRef<const std::vector<int64_t> *> InputDims,
            std::vector<FoldValue> &Results)
      : N(N), Op(N.op_type()), Opset(Opset), Inputs(Inputs),
        InputDims(InputDims), Results(Results) {}

  Expected<bool> run();

private:
  const onnx::AttributeProto *attr(StringRef Name) const {
    for (const onnx::AttributeProto &A : N.attribute())
      if (A.name() == Name)
        return &A;
    return nullptr;
  }
  int64_t intAttr(StringRef Name, int64_t Default) const {
    const onnx::AttributeProto *A = attr(Name);
    return A ? A->i() : Default;
  }
  bool has(unsigned I) const {
    return int(I) < N.input_size() && !N.input(I).empty();
  }
  /// Input \p I's value, or null when absent or unknown.
  const FoldValue *in(unsigned I) const {
    return I < Inputs.size() ? Inputs[I] : nullptr;
  }
  /// Whether every present input has a value.
  bool allKnown() const {
    for (int I = 0; I != N.input_size(); ++I)
      if (has(I) && !in(I))
        return false;
    return true;
  }
  /// A result of \p Dims, or None when it would be too large.
  Optional<FoldValue> result(int32_t Type, ArrayRef<int64_t> Dims) const {
    if (countElements(Dims) < 0)
      return None;
    return makeValue(Type, Dims);
  }
  /// Reads an integer list from attribute \p Name (opsets before
  /// \p InputSince) or from input \p Input; None when unknown, an empty
  /// optional when absent.
  bool readInts(StringRef Name, int InputSince, unsigned Input,
                Optional<std::vector<int64_t>> &Out) const {
    Out = None;
    if (Opset < InputSince) {
      if (const onnx::AttributeProto *A = attr(Name))
        Out = std::vector<int64_t>(A->ints().begin(), A->ints().end());
      return true;
    }
    if (!has(Input))
      return true;
    const FoldValue *V = in(Input);
    if (!V)
      return false;
    std::vector<int64_t> L;
    for (int64_t I = 0, E = V->getNumElements(); I != E; ++I)
      L.push_back(V->integer(I));
    Out = std::move(L);
    return true;
  }
  Expected<int64_t> normalizeAxis(int64_t Axis, int64_t Rank) const {
    if (Axis < -Rank || Axis >= std::max<int64_t>(Rank, 1))
      return foldError(Op + ": axis " + Twine(Axis) +
                       " is out of range for rank " + Twine(Rank));
    return Axis < 0 ? Axis + Rank : Axis;
  }

  Expected<bool> constant();
  Expected<bool> shape();
  Expected<bool> cast();
  Expected<bool> unary();
  Expected<bool> nary();
  Expected<bool> where();
  Expected<bool> gather();
  Expected<bool> slice();
  Expected<bool> concat();
  Expected<bool> unsqueeze(bool Squeeze);
  Expected<bool> reshape();
  Expected<bool> flatten();
  Expected<bool> transpose();
  Expected<bool> expand();
  Expected<bool> tile();
  Expected<bool> range();
  Expected<bool> constantOfShape();
  Expected<bool> reduce();
  Expected<bool> split();

  /// Sets the single result.
  bool done(FoldValue V) {
    Results.assign(1, std::move(V));
    return true;
  }

  const onnx::NodeProto &N;
  StringRef Op;
  int Opset;
  ArrayRef<const FoldValue *> Inputs;
  ArrayRef<const std::vector<int64_t> *> InputDims;
  std::vector<FoldValue> &Results;
};

Expected<bool> Evaluator::constant() {
  if (const onnx::AttributeProto *A = attr("value")) {
    Optional<FoldValue> V = readTensorValue(A->t());
    return V ? done(std::move(*V)) : false;
  }
  FoldValue V;
  if (const onnx::AttributeProto *A = attr("value_int")) {
    V.ElemType = TP::INT64;
    V.Ints = {A->i()};
  } else if (const onnx::AttributeProto *A = attr("value_ints")) {
    V.ElemType = TP::INT64;
    V.Ints.assign(A->ints().begin(), A->ints().end());
    V.Dims = {int64_t(V.Ints.size())};
  } else if (const onnx::AttributeProto *A = attr("value_float")) {
    V.ElemType = TP::FLOAT;
    V.Reals = {A->f()};
  } else if (const onnx::AttributeProto *A = attr("value_floats")) {
    V.ElemType = TP::FLOAT;
    V.Reals.assign(A->floats().begin(), A->floats().end());
    V.Dims = {int64_t(V.Reals.size())};
  } else {
    return false;
  }
  if (V.getNumElements() < 0)
    return false;
  return done(std::move(V));
}

Expected<bool> Evaluator::shape() {
  const std::vector<int64_t> *Dims =
      InputDims.empty() ? nullptr : InputDims[0];
  if (!Dims)
    return false;
  int64_t Rank = Dims->size();
  if (Op == "Size") {
    int64_t Count = 1;
    for (int64_t D : *Dims) {
      if (D && Count > std::numeric_limits<int64_t>::max() / D)
        return foldError("Size: the element count overflows 64 bits");
      Count *= D;
    }
    FoldValue V = makeValue(TP::INT64, {});
    V.Ints[0] = Count;
    return done(std::move(V));
  }
  int64_t Start = 0, End = Rank;
  if (Opset >= 15) {
    Start = intAttr("start", 0);
    End = intAttr("end", Rank);
    auto Clamp = [&](int64_t X) {
      if (X < 0)
        X += Rank;
      return std::min(std::max<int64_t>(X, 0), Rank);
    };
    Start = Clamp(Start);
    End = Clamp(End);
  }
  FoldValue V = makeValue(TP::INT64, {std::max<int64_t>(End - Start, 0)});
  for (int64_t I = Start; I < End; ++I)
    V.Ints[I - Start] = (*Dims)[I];
  return done(std::move(V));
}

Expected<bool> Evaluator::cast() {
  const FoldValue *X = in(0);
  int64_t To = intAttr("to", 0);
  if (!X || !isHandledType(To))
    return false;
  Optional<FoldValue> V = result(To, X->Dims);
  if (!V)
    return false;
  for (int64_t I = 0, E = X->getNumElements(); I != E; ++I) {
    if (X->isReal() && !isRealType(To)) {
      double R = X->Reals[I];
      if (!std::isfinite(R) || std::fabs(R) > 9.2e18)
        return false; // Not a value a shape subgraph makes.
      storeInt(*V, I, To == TP::BOOL ? R != 0 : int64_t(R));
    } else if (X->isReal()) {
      store(*V, I, X->Reals[I]);
    } else {
      storeInt(*V, I, X->Ints[I]);
    }
  }
  return done(std::move(*V));
}

Expected<bool> Evaluator::unary() {
  const FoldValue *X = in(0);
  if (!X)
    return false;
  FoldValue V = *X;
  for (int64_t I = 0, E = X->getNumElements(); I != E; ++I) {
    if (X->isReal()) {
      double R = X->Reals[I];
      double Out = StringSwitch<double>(Op)
                       .Case("Neg", -R)
                       .Case("Abs", std::fabs(R))
                       .Case("Floor", std::floor(R))
                       .Case("Ceil", std::ceil(R))
                       .Case("Round", std::nearbyint(R))
                       .Case("Sqrt", std::sqrt(R))
                       .Case("Reciprocal", 1 / R)
                       .Case("Sign", R > 0 ? 1 : R < 0 ? -1 : 0)
                       .Case("Relu", R > 0 ? R : 0)
                       .Default(R);
      if (Op == "Not")
        return false;
      store(V, I, Out);
      continue;
    }
    int64_t A = X->Ints[I];
    if (Op == "Sqrt" || Op == "Reciprocal")
      return false;
    int64_t Out = StringSwitch<int64_t>(Op)
                      .Case("Neg", -A)
                      .Case("Abs", A < 0 ? -A : A)
                      .Case("Sign", A > 0 ? 1 : A < 0 ? -1 : 0)
                      .Case("Relu", A > 0 ? A : 0)
                      .Case("Not", !A)
                      .Default(A);
    storeInt(V, I, Out);
  }
  return done(std::move(V));
}

/// \p Op (an elementwise op of nary()) on reals: Acc op B, or None for an
/// op that does not fold on reals.
static Optional<double> combineReal(StringRef Op, double Acc, double B) {
  if (Op == "Add" || Op == "Sum")
    return Acc + B;
  if (Op == "Sub")
    return Acc - B;
  if (Op == "Mul")
    return Acc * B;
  if (Op == "Div")
    return Acc / B;
  if (Op == "Mod")
    return std::fmod(Acc, B);
  if (Op == "Pow")
    return std::pow(Acc, B);
  if (Op == "Min")
    return std::min(Acc, B);
  if (Op == "Max")
    return std::max(Acc, B);
  if (Op == "Equal")
    return double(Acc == B);
  if (Op == "Less")
    return double(Acc < B);
  if (Op == "Greater")
    return double(Acc > B);
  if (Op == "LessOrEqual")
    return double(Acc <= B);
  if (Op == "GreaterOrEqual")
    return double(Acc >= B);
  return None;
}

/// \p Op on 64-bit integers, wrapping like the runtimes: Acc op B (B is
/// not 0 for Div and Mod; \p FMod is Mod's fmod attribute), or None for an
/// op or a negative power that does not fold.
static Optional<int64_t> combineInt(StringRef Op, int64_t Acc, int64_t B,
                                    bool FMod) {
  if (Op == "Add" || Op == "Sum")
    return int64_t(uint64_t(Acc) + uint64_t(B));
  if (Op == "Sub")
    return int64_t(uint64_t(Acc) - uint64_t(B));
  if (Op == "Mul")
    return int64_t(uint64_t(Acc) * uint64_t(B));
  if (Op == "Div")
    return (Acc == std::numeric_limits<int64_t>::min() && B == -1) ? Acc
                                                                   : Acc / B;
  if (Op == "Mod") {
    int64_t R = (B == -1) ? 0 : Acc % B;
    if (!FMod && R != 0 && ((R < 0) != (B < 0)))
      R += B;
    return R;
  }
  if (Op == "Pow") {
    if (B < 0)
      return None;
    int64_t P = 1;
    for (int64_t J = 0; J != B && J != 64; ++J)
      P = int64_t(uint64_t(P) * uint64_t(Acc));
    return P;
  }
  if (Op == "Min")
    return std::min(Acc, B);
  if (Op == "Max")
    return std::max(Acc, B);
  if (Op == "Equal")
    return int64_t(Acc == B);
  if (Op == "Less")
    return int64_t(Acc < B);
  if (Op == "Greater")
    return int64_t(Acc > B);
  if (Op == "LessOrEqual")
    return int64_t(Acc <= B);
  if (Op == "GreaterOrEqual")
    return int64_t(Acc >= B);
  if (Op == "And")
    return int64_t(Acc && B);
  if (Op == "Or")
    return int64_t(Acc || B);
  if (Op == "Xor")
    return int64_t(bool(Acc) != bool(B));
  return None;
}

/// Elementwise ops of two or more inputs with broadcasting: arithmetic,
/// comparisons, logic, Min/Max/Sum.
Expected<bool> Evaluator::nary() {
  if (!allKnown() || N.input_size() < 1)
    return false;
  SmallVector<ArrayRef<int64_t>, 4> Shapes;
  SmallVector<const FoldValue *, 4> Xs;
  for (int I = 0; I != N.input_size(); ++I) {
    if (!has(I))
      return false;
    Xs.push_back(in(I));
    Shapes.push_back(in(I)->Dims);
  }
  if (Op != "Pow" && Op != "BitShift")
    for (const FoldValue *X : Xs)
      if (X->ElemType != Xs[0]->ElemType)
        return foldError(Op + ": inputs of different element types");
  Expected<SmallVector<int64_t, 4>> OutDims = broadcastShapes(Shapes);
  if (!OutDims)
    return foldError(Op + ": " + toString(OutDims.takeError()));
  static const StringRef Comparisons[] = {"Equal", "Less", "Greater",
                                          "LessOrEqual", "GreaterOrEqual"};
  bool Compare = is_contained(Comparisons, StringRef(Op));
  Optional<FoldValue> V =
      result(Compare ? int32_t(TP::BOOL) : Xs[0]->ElemType, *OutDims);
  if (!V)
    return false;
  bool Real = Xs[0]->isReal();
  bool FMod = intAttr("fmod", 0);
  SmallVector<int64_t, 4> Index;
  for (int64_t I = 0, E = V->getNumElements(); I != E; ++I) {
    unflatten(I, *OutDims, Index);
    const FoldValue &A = *Xs[0];
    int64_t IA = broadcastIndex(Index, A.Dims);
    if (Real) {
      double Acc = A.Reals[IA];
      for (unsigned K = 1; K != Xs.size(); ++K) {
        Optional<double> R = combineReal(
            Op, Acc, Xs[K]->real(broadcastIndex(Index, Xs[K]->Dims)));
        if (!R)
          return false;
        Acc = *R;
      }
      store(*V, I, Acc);
      continue;
    }
    int64_t Acc = A.Ints[IA];
    for (unsigned K = 1; K != Xs.size(); ++K) {
      const FoldValue &BV = *Xs[K];
      if (BV.isReal())
        return false;
      int64_t B = BV.Ints[broadcastIndex(Index, BV.Dims)];
      if ((Op == "Div" || Op == "Mod") && B == 0)
        return foldError(Op + ": division by zero");
      Optional<int64_t> R = combineInt(Op, Acc, B, FMod);
      if (!R)
        return false;
      Acc = *R;
    }
    storeInt(*V, I, Acc);
  }
  return done(std::move(*V));
}

Expected<bool> Evaluator::where() {
  if (!allKnown() || N.input_size() != 3)
    return false;
  const FoldValue &C = *in(0), &X = *in(1), &Y = *in(2);
  if (X.ElemType != Y.ElemType)
    return foldError("Where: inputs of different element types");
  Expected<SmallVector<int64_t, 4>> OutDims =
      broadcastShapes({C.Dims, X.Dims, Y.Dims});
  if (!OutDims)
    return foldError("Where: " + toString(OutDims.takeError()));
  Optional<FoldValue> V = result(X.ElemType, *OutDims);
  if (!V)
    return false;
  SmallVector<int64_t, 4> Index;
  for (int64_t I = 0, E = V->getNumElements(); I != E; ++I) {
    unflatten(I, *OutDims, Index);
    bool Cond = C.integer(broadcastIndex(Index, C.Dims));
    const FoldValue &From = Cond ? X : Y;
    int64_t J = broadcastIndex(Index, From.Dims);
    if (V->isReal())
      V->Reals[I] = From.Reals[J];
    else
      V->Ints[I] = From.Ints[J];
  }
  return done(std::move(*V));
}

/// Copies element \p From of \p X into element \p To of \p V.
void copyElement(const FoldValue &X, int64_t From, FoldValue &V, int64_t To) {
  if (V.isReal())
    V.Reals[To] = X.Reals[From];
  else
    V.Ints[To] = X.Ints[From];
}

Expected<bool> Evaluator::gather() {
  const FoldValue *X = in(0), *Idx = in(1);
  if (!X || !Idx)
    return false;
  int64_t Rank = X->Dims.size();
  if (Rank == 0)
    return foldError("Gather: the data is a scalar");
  Expected<int64_t> Axis = normalizeAxis(intAttr("axis", 0), Rank);
  if (!Axis)
    return Axis.takeError();
  SmallVector<int64_t, 4> OutDims(X->Dims.begin(), X->Dims.begin() + *Axis);
  OutDims.append(Idx->Dims.begin(), Idx->Dims.end());
  OutDims.append(X->Dims.begin() + *Axis + 1, X->Dims.end());
  Optional<FoldValue> V = result(X->ElemType, OutDims);
  if (!V)
    return false;
  int64_t Size = X->Dims[*Axis];
  int64_t Outer = 1, Inner = 1;
  for (int64_t I = 0; I != *Axis; ++I)
    Outer *= X->Dims[I];
  for (int64_t I = *Axis + 1; I != Rank; ++I)
    Inner *= X->Dims[I];
  int64_t NumIdx = Idx->getNumElements(), Out = 0;
  for (int64_t O = 0; O != Outer; ++O)
    for (int64_t K = 0; K != NumIdx; ++K) {
      int64_t J = Idx->integer(K);
      if (J < -Size || J >= Size)
        return foldError("Gather: index " + Twine(J) +
                         " is out of range for dimension " + Twine(*Axis) +
                         " of size " + Twine(Size));
      if (J < 0)
        J += Size;
      for (int64_t In = 0; In != Inner; ++In)
        copyElement(*X, (O * Size + J) * Inner + In, *V, Out++);
    }
  return done(std::move(*V));
}

Expected<bool> Evaluator::slice() {
  const FoldValue *X = in(0);
  if (!X)
    return false;
  int64_t Rank = X->Dims.size();
  Optional<std::vector<int64_t>> Starts, Ends, Axes, Steps;
  if (!readInts("starts", 10, 1, Starts) || !readInts("ends", 10, 2, Ends) ||
      !readInts("axes", 10, 3, Axes) || !readInts("steps", 10, 4, Steps))
    return false;
  if (!Starts || !Ends || Starts->size() != Ends->size())
    return foldError("Slice: starts and ends must have the same length");
  size_t K = Starts->size();
  if ((Axes && Axes->size() != K) || (Steps && Steps->size() != K))
    return foldError("Slice: axes and steps must have the length of starts");
  SmallVector<int64_t, 4> Begin(Rank, 0), Step(Rank, 1);
  SmallVector<int64_t, 4> OutDims(X->Dims.begin(), X->Dims.end());
  SmallVector<bool, 4> Seen(Rank, false);
  for (size_t I = 0; I != K; ++I) {
    Expected<int64_t> Axis =
        normalizeAxis(Axes ? (*Axes)[I] : int64_t(I), Rank);
    if (!Axis)
      return Axis.takeError();
    if (Seen[*Axis])
      return foldError("Slice: axis " + Twine(*Axis) + " is given twice");
    Seen[*Axis] = true;
    int64_t D = X->Dims[*Axis], S = Steps ? (*Steps)[I] : 1;
    if (S == 0)
      return foldError("Slice: a step is 0");
    int64_t B = (*Starts)[I], E = (*Ends)[I];
    if (B < 0)
      B = B < -D ? -1 : B + D; // Stays below 0 only if before the start.
    if (E < 0)
      E = E < -D ? -1 : E + D;
    int64_t Count;
    if (S > 0) {
      B = std::min(std::max<int64_t>(B, 0), D);
      E = std::min(std::max<int64_t>(E, 0), D);
      Count = E > B ? (E - B + S - 1) / S : 0;
    } else {
      B = std::min(std::max<int64_t>(B, -1), D - 1);
      E = std::min(std::max<int64_t>(E, -1), D - 1);
      Count = B > E ? (B - E + (-S) - 1) / (-S) : 0;
    }
    Begin[*Axis] = B;
    Step[*Axis] = S;
    OutDims[*Axis] = Count;
  }
  Optional<FoldValue> V = result(X->ElemType, OutDims);
  if (!V)
    return false;
  SmallVector<int64_t, 4> Strides = stridesOf(X->Dims), Index;
  for (int64_t I = 0, E = V->getNumElements(); I != E; ++I) {
    unflatten(I, OutDims, Index);
    int64_t From = 0;
    for (int64_t A = 0; A != Rank; ++A)
      From += (Begin[A] + Index[A] * Step[A]) * Strides[A];
    copyElement(*X, From, *V, I);
  }
  return done(std::move(*V));
}

Expected<bool> Evaluator::concat() {
  if (!allKnown() || N.input_size() == 0)
    return false;
  const FoldValue &First = *in(0);
  int64_t Rank = First.Dims.size();
  Expected<int64_t> Axis = normalizeAxis(intAttr("axis", 0), Rank);
  if (!Axis)
    return Axis.takeError();
  SmallVector<int64_t, 4> OutDims(First.Dims.begin(), First.Dims.end());
  OutDims[*Axis] = 0;
  SmallVector<const FoldValue *, 4> Parts;
  for (int I = 0; I != N.input_size(); ++I) {
    if (!has(I))
      continue;
    const FoldValue &P = *in(I);
    if (P.ElemType != First.ElemType || int64_t(P.Dims.size()) != Rank)
      return foldError("Concat: inputs differ in element type or rank");
    for (int64_t A = 0; A != Rank; ++A)
      if (A != *Axis && P.Dims[A] != First.Dims[A])
        return foldError("Concat: input " + Twine(I) + " has dimension " +
                         Twine(A) + " of " + Twine(P.Dims[A]) + ", not " +
                         Twine(First.Dims[A]));
    OutDims[*Axis] += P.Dims[*Axis];
    Parts.push_back(&P);
  }
  Optional<FoldValue> V = result(First.ElemType, OutDims);
  if (!V)
    return false;
  int64_t Outer = 1;
  for (int64_t A = 0; A != *Axis; ++A)
    Outer *= OutDims[A];
  int64_t Out = 0;
  for (int64_t O = 0; O != Outer; ++O)
    for (const FoldValue *P : Parts) {
      int64_t Chunk = Outer ? P->getNumElements() / Outer : 0;
      for (int64_t J = 0; J != Chunk; ++J)
        copyElement(*P, O * Chunk + J, *V, Out++);
    }
  return done(std::move(*V));
}

Expected<bool> Evaluator::unsqueeze(bool Squeeze) {
  const FoldValue *X = in(0);
  if (!X)
    return false;
  Optional<std::vector<int64_t>> Axes;
  if (!readInts("axes", 13, 1, Axes))
    return false;
  FoldValue V = *X;
  int64_t Rank = X->Dims.size();
  if (Squeeze) {
    SmallVector<bool, 4> Drop(Rank, !Axes);
    if (!Axes) {
      for (int64_t A = 0; A != Rank; ++A)
        Drop[A] = X->Dims[A] == 1;
    } else {
      for (int64_t A : *Axes) {
        Expected<int64_t> Axis = normalizeAxis(A, Rank);
        if (!Axis)
          return Axis.takeError();
        if (X->Dims[*Axis] != 1)
          return foldError("Squeeze: dimension " + Twine(*Axis) + " is " +
                           Twine(X->Dims[*Axis]) + ", not 1");
        Drop[*Axis] = true;
      }
    }
    V.Dims.clear();
    for (int64_t A = 0; A != Rank; ++A)
      if (!Drop[A])
        V.Dims.push_back(X->Dims[A]);
    return done(std::move(V));
  }
  if (!Axes)
    return foldError("Unsqueeze: no axes");
  int64_t OutRank = Rank + Axes->size();
  SmallVector<bool, 4> New(OutRank, false);
  for (int64_t A : *Axes) {
    Expected<int64_t> Axis = normalizeAxis(A, OutRank);
    if (!Axis)
      return Axis.takeError();
    if (New[*Axis])
      return foldError("Unsqueeze: axis " + Twine(*Axis) + " is given twice");
    New[*Axis] = true;
  }
  V.Dims.clear();
  for (int64_t A = 0, J = 0; A != OutRank; ++A)
    V.Dims.push_back(New[A] ? 1 : X->Dims[J++]);
  return done(std::move(V));
}

Expected<bool> Evaluator::reshape() {
  const FoldValue *X = in(0), *S = in(1);
  if (!X || !S)
    return false;
  bool AllowZero = intAttr("allowzero", 0);
  SmallVector<int64_t, 4> Dims;
  int Infer = -1;
  int64_t Known = 1;
  for (int64_t I = 0, E = S->getNumElements(); I != E; ++I) {
    int64_t D = S->integer(I);
    if (D == 0 && !AllowZero) {
      if (I >= int64_t(X->Dims.size()))
        return foldError("Reshape: dimension " + Twine(I) +
                         " copies an input dimension that does not exist");
      D = X->Dims[I];
    }
    if (D == -1) {
      if (Infer >= 0)
        return foldError("Reshape: more than one dimension is -1");
      Infer = I;
      Dims.push_back(1);
      continue;
    }
    if (D < 0)
      return foldError("Reshape: dimension " + Twine(I) + " is negative (" +
                       Twine(D) + ")");
    Dims.push_back(D);
    Known *= D;
  }
  int64_t Count = X->getNumElements();
  if (Infer >= 0) {
    if (Known == 0 || Count % Known)
      return foldError("Reshape: " + Twine(Count) +
                       " elements do not fit the new shape");
    Dims[Infer] = Count / Known;
  } else if (Known != Count) {
    return foldError("Reshape: " + Twine(Count) + " elements cannot take a "
                     "shape of " + Twine(Known));
  }
  FoldValue V = *X;
  V.Dims = Dims;
  return done(std::move(V));
}

Expected<bool> Evaluator::flatten() {
  const FoldValue *X = in(0);
  if (!X)
    return false;
  int64_t Rank = X->Dims.size();
  int64_t Axis = intAttr("axis", 1);
  if (Axis < -Rank || Axis > Rank)
    return foldError("Flatten: axis " + Twine(Axis) + " is out of range");
  if (Axis < 0)
    Axis += Rank;
  int64_t Outer = 1;
  for (int64_t A = 0; A != Axis; ++A)
    Outer *= X->Dims[A];
  FoldValue V = *X;
  V.Dims = {Outer, Outer ? X->getNumElements() / Outer : 0};
  return done(std::move(V));
}

Expected<bool> Evaluator::transpose() {
  const FoldValue *X = in(0);
  if (!X)
    return false;
  int64_t Rank = X->Dims.size();
  SmallVector<int64_t, 4> Perm;
  if (const onnx::AttributeProto *A = attr("perm"))
    Perm.assign(A->ints().begin(), A->ints().end());
  else
    for (int64_t I = Rank - 1; I >= 0; --I)
      Perm.push_back(I);
  if (int64_t(Perm.size()) != Rank)
    return foldError("Transpose: perm has " + Twine(Perm.size()) +
                     " entries for rank " + Twine(Rank));
  SmallVector<int64_t, 4> OutDims;
  SmallVector<bool, 4> Used(Rank, false);
  for (int64_t P : Perm) {
    if (P < 0 || P >= Rank || Used[P])
      return foldError("Transpose: perm is not a permutation");
    Used[P] = true;
    OutDims.push_back(X->Dims[P]);
  }
  FoldValue V = *X;
  V.Dims = OutDims;
  SmallVector<int64_t, 4> Strides = stridesOf(X->Dims), Index;
  for (int64_t I = 0, E = V.getNumElements(); I != E; ++I) {
    unflatten(I, OutDims, Index);
    int64_t From = 0;
    for (int64_t A = 0; A != Rank; ++A)
      From += Index[A] * Strides[Perm[A]];
    copyElement(*X, From, V, I);
  }
  return done(std::move(V));
}

Expected<bool> Evaluator::expand() {
  const FoldValue *X = in(0), *S = in(1);
  if (!X || !S)
    return false;
  SmallVector<int64_t, 4> Shape;
  for (int64_t I = 0, E = S->getNumElements(); I != E; ++I) {
    int64_t D = S->integer(I);
    if (D < 0)
      return foldError("Expand: dimension " + Twine(I) + " is negative (" +
                       Twine(D) + ")");
    Shape.push_back(D);
  }
  Expected<SmallVector<int64_t, 4>> OutDims =
      broadcastShapes({ArrayRef<int64_t>(X->Dims), Shape});
  if (!OutDims)
    return foldError("Expand: " + toString(OutDims.takeError()));
  Optional<FoldValue> V = result(X->ElemType, *OutDims);
  if (!V)
    return false;
  SmallVector<int64_t, 4> Index;
  for (int64_t I = 0, E = V->getNumElements(); I != E; ++I) {
    unflatten(I, *OutDims, Index);
    copyElement(*X, broadcastIndex(Index, X->Dims), *V, I);
  }
  return done(std::move(*V));
}

Expected<bool> Evaluator::tile() {
  const FoldValue *X = in(0), *R = in(1);
  if (!X || !R)
    return false;
  int64_t Rank = X->Dims.size();
  if (R->getNumElements() != Rank)
    return foldError("Tile: " + Twine(R->getNumElements()) +
                     " repeats for rank " + Twine(Rank));
  SmallVector<int64_t, 4> OutDims;
  for (int64_t A = 0; A != Rank; ++A) {
    int64_t K = R->integer(A);
    if (K < 0)
      return foldError("Tile: repeat " + Twine(A) + " is negative");
    if (X->Dims[A] && K > MaxFoldElements)
      return false;
    OutDims.push_back(X->Dims[A] * K);
  }
  Optional<FoldValue> V = result(X->ElemType, OutDims);
  if (!V)
    return false;
  SmallVector<int64_t, 4> Strides = stridesOf(X->Dims), Index;
  for (int64_t I = 0, E = V->getNumElements(); I != E; ++I) {
    unflatten(I, OutDims, Index);
    int64_t From = 0;
    for (int64_t A = 0; A != Rank; ++A)
      From += (Index[A] % X->Dims[A]) * Strides[A];
    copyElement(*X, From, *V, I);
  }
  return done(std::move(*V));
}

Expected<bool> Evaluator::range() {
  const FoldValue *S = in(0), *L = in(1), *D = in(2);
  if (!S || !L || !D)
    return false;
  if (S->getNumElements() != 1 || L->getNumElements() != 1 ||
      D->getNumElements() != 1)
    return foldError("Range: start, limit and delta must be scalars");
  int64_t Count;
  if (S->isReal()) {
    double Start = S->Reals[0], Limit = L->real(0), Delta = D->real(0);
    if (Delta == 0)
      return foldError("Range: delta is 0");
    double C = std::ceil((Limit - Start) / Delta);
    if (!std::isfinite(C) || C >= double(MaxFoldElements))
      return false;
    Count = std::max<int64_t>(int64_t(C), 0);
    FoldValue V = makeValue(S->ElemType, {Count});
    for (int64_t I = 0; I != Count; ++I)
      store(V, I, Start + I * Delta);
    return done(std::move(V));
  }
  __int128 Start = S->Ints[0], Limit = L->integer(0), Delta = D->integer(0);
  if (Delta == 0)
    return foldError("Range: delta is 0");
  __int128 C = Delta > 0 ? (Limit > Start ? (Limit - Start + Delta - 1) / Delta
                                           : 0)
                         : (Start > Limit
                                ? (Start - Limit + (-Delta) - 1) / (-Delta)
                                : 0);
  if (C > MaxFoldElements)
    return false;
  Count = int64_t(C);
  FoldValue V = makeValue(S->ElemType, {Count});
  for (int64_t I = 0; I != Count; ++I)
    storeInt(V, I, int64_t(Start + I * Delta));
  return done(std::move(V));
}

Expected<bool> Evaluator::constantOfShape() {
  const FoldValue *S = in(0);
  if (!S)
    return false;
  SmallVector<int64_t, 4> Dims;
  for (int64_t I = 0, E = S->getNumElements(); I != E; ++I) {
    int64_t D = S->integer(I);
    if (D < 0)
      return foldError("ConstantOfShape: dimension " + Twine(I) +
                       " is negative (" + Twine(D) + ")");
    Dims.push_back(D);
  }
  FoldValue Fill;
  Fill.ElemType = TP::FLOAT;
  Fill.Reals = {0.0};
  if (const onnx::AttributeProto *A = attr("value")) {
    Optional<FoldValue> F = readTensorValue(A->t());
    if (!F || F->getNumElements() != 1)
      return false;
    Fill = std::move(*F);
  }
  Optional<FoldValue> V = result(Fill.ElemType, Dims);
  if (!V)
    return false;
  for (int64_t I = 0, E = V->getNumElements(); I != E; ++I)
    copyElement(Fill, 0, *V, I);
  return done(std::move(*V));
}

Expected<bool> Evaluator::reduce() {
  const FoldValue *X = in(0);
  if (!X)
    return false;
  int InputSince = Op == "ReduceSum" ? 13 : 18;
  Optional<std::vector<int64_t>> Axes;
  if (!readInts("axes", InputSince, 1, Axes))
    return false;
  int64_t Rank = X->Dims.size();
  bool KeepDims = intAttr("keepdims", 1);
  if ((!Axes || Axes->empty()) && intAttr("noop_with_empty_axes", 0))
    return done(*X);
  SmallVector<bool, 4> Reduced(Rank, !Axes || Axes->empty());
  if (Axes)
    for (int64_t A : *Axes) {
      Expected<int64_t> Axis = normalizeAxis(A, Rank);
      if (!Axis)
        return Axis.takeError();
      Reduced[*Axis] = true;
    }
  SmallVector<int64_t, 4> OutDims, KeptDims;
  for (int64_t A = 0; A != Rank; ++A) {
    KeptDims.push_back(Reduced[A] ? 1 : X->Dims[A]);
    if (!Reduced[A] || KeepDims)
      OutDims.push_back(KeptDims.back());
  }
  int64_t Count = X->getNumElements();
  if ((Op == "ReduceMax" || Op == "ReduceMin") && Count == 0)
    return foldError(Op + ": reduces an empty tensor");
  Optional<FoldValue> V = result(X->ElemType, OutDims);
  if (!V)
    return false;
  int64_t Out = V->getNumElements();
  std::vector<double> Acc(Out, Op == "ReduceProd" ? 1.0 : 0.0);
  std::vector<int64_t> IAcc(Out, Op == "ReduceProd" ? 1 : 0);
  std::vector<bool> Seen(Out, false);
  SmallVector<int64_t, 4> Index;
  for (int64_t I = 0; I != Count; ++I) {
    unflatten(I, X->Dims, Index);
    int64_t To = 0;
    for (int64_t A = 0; A != Rank; ++A)
      To = To * KeptDims[A] + (Reduced[A] ? 0 : Index[A]);
    if (X->isReal()) {
      double R = X->Reals[I];
      double &T = Acc[To];
      if (Op == "ReduceSum" || Op == "ReduceMean")
        T += R;
      else if (Op == "ReduceProd")
        T *= R;
      else if (Op == "ReduceMax")
        T = Seen[To] ? std::max(T, R) : R;
      else
        T = Seen[To] ? std::min(T, R) : R;
    } else {
      int64_t R = X->Ints[I];
      int64_t &T = IAcc[To];
      if (Op == "ReduceSum" || Op == "ReduceMean")
        T = int64_t(uint64_t(T) + uint64_t(R));
      else if (Op == "ReduceProd")
        T = int64_t(uint64_t(T) * uint64_t(R));
      else if (Op == "ReduceMax")
        T = Seen[To] ? std::max(T, R) : R;
      else
        T = Seen[To] ? std::min(T, R) : R;
    }
    Seen[To] = true;
  }
  int64_t PerOut = Out ? Count / Out : 0;
  for (int64_t I = 0; I != Out; ++I) {
    if (X->isReal())
      store(*V, I, Op == "ReduceMean" ? Acc[I] / PerOut : Acc[I]);
    else if (Op == "ReduceMean")
      return false;
    else
      storeInt(*V, I, IAcc[I]);
  }
  return done(std::move(*V));
}

Expected<bool> Evaluator::split() {
  const FoldValue *X = in(0);
  if (!X)
    return false;
  int64_t Rank = X->Dims.size();
  Expected<int64_t> Axis = normalizeAxis(intAttr("axis", 0), Rank);
  if (!Axis)
    return Axis.takeError();
  Optional<std::vector<int64_t>> Sizes;
  if (!readInts("split", 13, 1, Sizes))
    return false;
  int64_t D = X->Dims[*Axis], Parts = N.output_size();
  if (!Sizes) {
    int64_t Chunk = Parts ? (D + Parts - 1) / Parts : 0;
    if (Opset < 18 && Parts && D % Parts)
      return foldError("Split: dimension " + Twine(D) +
                       " does not split into " + Twine(Parts) +
                       " equal parts");
    Sizes = std::vector<int64_t>();
    for (int64_t P = 0, Left = D; P != Parts; ++P) {
      Sizes->push_back(std::min(Chunk, Left));
      Left -= Sizes->back();
    }
  }
  int64_t Total = 0;
  for (int64_t S : *Sizes) {
    if (S < 0)
      return foldError("Split: a part has a negative size");
    Total += S;
  }
  if (int64_t(Sizes->size()) != Parts || Total != D)
    return foldError("Split: the parts do not add up to dimension " +
                     Twine(D));
  SmallVector<int64_t, 4> Strides = stridesOf(X->Dims), Index;
  Results.clear();
  int64_t Offset = 0;
  for (int64_t S : *Sizes) {
    SmallVector<int64_t, 4> OutDims(X->Dims.begin(), X->Dims.end());
    OutDims[*Axis] = S;
    FoldValue V = makeValue(X->ElemType, OutDims);
    for (int64_t I = 0, E = V.getNumElements(); I != E; ++I) {
      unflatten(I, OutDims, Index);
      Index[*Axis] += Offset;
      int64_t From = 0;
      for (int64_t A = 0; A != Rank; ++A)
        From += Index[A] * Strides[A];
      copyElement(*X, From, V, I);
    }
    Results.push_back(std::move(V));
    Offset += S;
  }
  return true;
}

Expected<bool> Evaluator::run() {
  if (!N.domain().empty() && N.domain() != "ai.onnx")
    return false;
  if (Op == "Constant")
    return constant();
  if (Op == "Shape" || Op == "Size")
    return shape();
  // Every other op needs its inputs' values.
  if (!allKnown())
    return false;
  for (const FoldValue *V : Inputs)
    if (V && V->getNumElements() < 0)
      return false;
  if (Op == "Identity") {
    return done(*in(0));
  }
  if (Op == "Cast")
    return cast();
  static const StringRef Unary[] = {"Neg",  "Abs",        "Floor", "Ceil",
                                    "Round", "Sqrt",      "Reciprocal",
                                    "Sign", "Relu",       "Not"};
  static const StringRef Nary[] = {
      "Add",  "Sub",     "Mul",         "Div",           "Mod",  "Pow",
      "Min",  "Max",     "Sum",         "Equal",         "Less", "Greater",
      "LessOrEqual",     "GreaterOrEqual", "And",        "Or",   "Xor"};
  if (is_contained(Unary, StringRef(Op)))
    return unary();
  if (is_contained(Nary, StringRef(Op)))
    return nary();
  return StringSwitch<std::function<Expected<bool>()>>(Op)
      .Case("Where", [&] { return where(); })
      .Case("Gather", [&] { return gather(); })
      .Case("Slice", [&] { return slice(); })
      .Case("Concat", [&] { return concat(); })
      .Case("Unsqueeze", [&] { return unsqueeze(false); })
      .Case("Squeeze", [&] { return unsqueeze(true); })
      .Case("Reshape", [&] { return reshape(); })
      .Case("Flatten", [&] { return flatten(); })
      .Case("Transpose", [&] { return transpose(); })
      .Case("Expand", [&] { return expand(); })
      .Case("Tile", [&] { return tile(); })
      .Case("Range", [&] { return range(); })
      .Case("ConstantOfShape", [&] { return constantOfShape(); })
      .Cases("ReduceSum", "ReduceProd", "ReduceMax", "ReduceMin",
             "ReduceMean", [&] { return reduce(); })
      .Case("Split", [&] { return split(); })
      .Default([] { return Expected<bool>(false); })();
}

} // namespace

Expected<FoldValue> parseFoldValue(int32_t ElemType, ArrayRef<int64_t> Dims,
                                   StringRef Text) {
  if (!isHandledType(ElemType))
    return foldError("its element type (" + Twine(ElemType) +
                     ") cannot be bound");
  if (countElements(Dims) != 1)
    return foldError("it must have one element");
  FoldValue V = makeValue(ElemType, Dims);
  if (Text == "true" || Text == "false") {
    storeInt(V, 0, Text == "true");
    return V;
  }
  int64_t I;
  double D;
  if (!V.isReal()) {
    if (!to_integer(Text, I, 10))
      return foldError("it holds integers, and '" + Text + "' is not one");
    if (wrapInt(ElemType, I) != I)
      return foldError("'" + Text + "' does not fit its element type");
    storeInt(V, 0, I);
    return V;
  }
  if (Text.getAsDouble(D) || !std::isfinite(D))
    return foldError("'" + Text + "' is not a finite number");
  store(V, 0, D);
  return V;
}

Expected<bool> evaluateNode(const onnx::NodeProto &N, int Opset,
                            ArrayRef<const FoldValue *> Inputs,
                            ArrayRef<const std::vector<int64_t> *> InputDims,
                            std::vector<FoldValue> &Results) {
  Results.clear();
  Expected<bool> R = Evaluator(N, Opset, Inputs, InputDims, Results).run();
  if (!R || !*R)
    return R;
  // One result per output; a value over the limit is not folded.
  if (int(Results.size()) != N.output_size())
    return false;
  for (const FoldValue &V : Results)
    if (V.getNumElements() < 0)
      return false;
  return true;
}

//===----------------------------------------------------------------------===//
// The folder
//===----------------------------------------------------------------------===//

namespace {
/// The types of a graph's values as inference left them, gathered when
/// first needed: most graphs fold nothing.
class LazyTypes {
public:
  explicit LazyTypes(const onnx::GraphProto &G) : G(G) {}

  const onnx::TypeProto *lookup(StringRef Name) {
    if (!HaveTypes) {
      HaveTypes = true;
      Types = getInferredTypes(G);
    }
    return Types.lookup(Name);
  }

private:
  const onnx::GraphProto &G;
  StringMap<const onnx::TypeProto *> Types;
  bool HaveTypes = false;
};

/// What folding one node reads and makes, kept from node to node.
struct FoldScratch {
  std::vector<const FoldValue *> Ins;
  std::vector<const std::vector<int64_t> *> InDims;
  std::vector<FoldValue> Results;
  std::vector<std::vector<int64_t>> ValueDims;
};
} // namespace

/// Evaluates node \p N on the known \p Values into \p S.Results; false when
/// it cannot be folded yet.
static Expected<bool> foldNode(const onnx::NodeProto &N, int Opset,
                               const StringMap<FoldValue> &Values,
                               LazyTypes &Types, FoldScratch &S) {
  S.Ins.clear();
  S.InDims.clear();
  S.ValueDims.assign(N.input_size(), {});
  // Only Shape and Size read their input's dimensions.
  bool NeedDims = N.op_type() == "Shape" || N.op_type() == "Size";
  for (int K = 0; K != N.input_size(); ++K) {
    auto V = Values.find(N.input(K));
    S.Ins.push_back(V == Values.end() ? nullptr : &V->second);
    S.InDims.push_back(nullptr);
    if (!NeedDims)
      continue;
    if (V != Values.end()) {
      S.ValueDims[K].assign(V->second.Dims.begin(), V->second.Dims.end());
      S.InDims.back() = &S.ValueDims[K];
    } else if (const onnx::TypeProto *T = Types.lookup(N.input(K))) {
      if (getStaticDims(T, S.ValueDims[K]))
        S.InDims.back() = &S.ValueDims[K];
    }
  }
  if (N.op_type() != "CastLike" || N.input_size() != 2 || !S.Ins[0])
    return evaluateNode(N, Opset, S.Ins, S.InDims, S.Results);
  // CastLike needs only the element type of its second input: folded as
  // the Cast to that type.
  const onnx::TypeProto *T = Types.lookup(N.input(1));
  if (!T || !T->has_tensor_type() || !T->tensor_type().elem_type())
    return false;
  onnx::NodeProto AsCast;
  AsCast.set_op_type("Cast");
  AsCast.add_input(N.input(0));
  AsCast.add_output(N.output(0));
  onnx::AttributeProto *To = AsCast.add_attribute();
  To->set_name("to");
  To->set_type(onnx::AttributeProto::INT);
  To->set_i(T->tensor_type().elem_type());
  return evaluateNode(AsCast, Opset, S.Ins, S.InDims, S.Results);
}

void ShapeFolder::readOwnInitializers() {
  NumOwnInitializers = G.initializer_size();
  Done.assign(G.node_size(), false);
  for (const TP &T : G.initializer())
    if (!Unknown.contains(T.name()))
      if (Optional<FoldValue> V = readTensorValue(T))
        Values[T.name()] = std::move(*V);
}

bool ShapeFolder::giveNewValues(
    const DenseSet<StringRef> &New,
    function_ref<const onnx::TypeProto *(StringRef)> TypeOf) {
  bool Useful = false;
  DenseSet<StringRef> Given;
  for (int I = 0, E = G.node_size(); I != E; ++I) {
    if (Done[I])
      continue;
    const onnx::NodeProto &N = G.node(I);
    bool Reads = false;
    for (const std::string &In : N.input()) {
      if (!New.contains(In))
        continue;
      Reads = true;
      if (!Given.insert(Values.find(In)->first()).second)
        continue;
      TP *T = G.add_initializer();
      T->set_name(In);
      writeTensorValue(Values[In], *T);
      Added.push_back(In);
    }
    if (!Reads)
      continue;
    std::vector<int64_t> Scratch;
    for (const std::string &Out : N.output()) {
      const onnx::TypeProto *T = Out.empty() ? nullptr : TypeOf(Out);
      if (!Out.empty() && !getStaticDims(T, Scratch))
        Useful = true;
    }
  }
  return Useful;
}

Expected<bool> ShapeFolder::run() {
  if (NumOwnInitializers < 0)
    readOwnInitializers();
  // Bound inputs reach their readers' inference with the first values.
  DenseSet<StringRef> New;
  for (const std::string &Name : Bound)
    New.insert(Values.find(Name)->first());
  Bound.clear();
  LazyTypes Types(G);

  FoldScratch S;
  ErrorList Errs;
  for (int I = 0, E = G.node_size(); I != E; ++I) {
    if (Done[I])
      continue;
    const onnx::NodeProto &N = G.node(I);
    Expected<bool> Folded = foldNode(N, Opset, Values, Types, S);
    if (!Folded) {
      Errs.add(makeNodeError(N.name(), "cannot fold this shape computation: " +
                                           toString(Folded.takeError())));
      Done[I] = true;
      continue;
    }
    if (!*Folded || any_of(N.output(), [&](const std::string &Out) {
          return Unknown.contains(Out);
        }))
      continue;
    Done[I] = true;
    for (int K = 0; K != N.output_size(); ++K) {
      if (N.output(K).empty())
        continue;
      auto It = Values.insert({N.output(K), std::move(S.Results[K])}).first;
      New.insert(It->first());
    }
  }
  if (Error E = Errs.take())
    return std::move(E);
  if (New.empty())
    return false;
  // The folded values' types are exact: readers inferred next see them.
  // (A bound input has its type already.)
  StringMap<onnx::ValueInfoProto *> Infos = getValueInfos();
  for (StringRef Name : New)
    if (!Inputs.contains(Name))
      recordType(Infos, Name, Values.find(Name)->second);

  // Give inference the new values its unfolded readers need.
  return giveNewValues(New, [&](StringRef Name) { return Types.lookup(Name); });
}

StringMap<onnx::ValueInfoProto *> ShapeFolder::getValueInfos() {
  StringMap<onnx::ValueInfoProto *> Infos;
  for (auto &VI : *G.mutable_value_info())
    Infos[VI.name()] = &VI;
  for (auto &VI : *G.mutable_output())
    Infos[VI.name()] = &VI;
  return Infos;
}

void ShapeFolder::recordType(StringMap<onnx::ValueInfoProto *> &Infos,
                             StringRef Name, const FoldValue &V) {
  onnx::ValueInfoProto *&VI = Infos[Name];
  if (!VI) {
    VI = G.add_value_info();
    VI->set_name(Name.str());
  }
  auto *TT = VI->mutable_type()->mutable_tensor_type();
  TT->set_elem_type(V.ElemType);
  auto *Shape = TT->mutable_shape();
  Shape->clear_dim();
  for (int64_t D : V.Dims)
    Shape->add_dim()->set_dim_value(D);
}

void ShapeFolder::finish() {
  if (NumOwnInitializers < 0)
    return;
  G.mutable_initializer()->DeleteSubrange(
      NumOwnInitializers, G.initializer_size() - NumOwnInitializers);
  StringMap<onnx::ValueInfoProto *> Infos = getValueInfos();
  DenseSet<StringRef> Own;
  for (const TP &T : G.initializer())
    Own.insert(T.name());
  for (const onnx::NodeProto &N : G.node())
    for (const std::string &Out : N.output()) {
      auto V = Values.find(Out);
      if (Out.empty() || V == Values.end() || Own.contains(Out))
        continue;
      recordType(Infos, Out, V->second);
    }
}

} // namespace dp
