//===- GraphBuilder.cpp - Creating ops whose result types are known -------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "GraphBuilder.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <cassert>

using namespace llvm;

namespace dp {
namespace transforms {

bool isFloatDType(DTypeKind K) {
  return K == DTypeKind::F32 || K == DTypeKind::F16 || K == DTypeKind::BF16 ||
         K == DTypeKind::F64;
}

int64_t getONNXOpsetVersion(const Graph &G, int64_t Default) {
  for (const OpsetImport &I : G.getOpsets())
    if (I.Domain.empty() || I.Domain == "ai.onnx")
      return I.Version;
  return Default;
}

OpBuilder::OpBuilder(Graph &G, const Graph *Reserved)
    : G(G), Reserved(Reserved), Opset(getONNXOpsetVersion(G)) {}

/// \p Base, or the first of "<Base>.1", "<Base>.2", ... that \p IsFree.
static std::string makeUniqueName(const Twine &Base,
                                  function_ref<bool(StringRef)> IsFree) {
  std::string Name = Base.str();
  if (IsFree(Name))
    return Name;
  for (unsigned I = 1;; ++I) {
    std::string Candidate = Name + "." + std::to_string(I);
    if (IsFree(Candidate))
      return Candidate;
  }
}

std::string OpBuilder::makeOpName(const Twine &Base) const {
  return makeUniqueName(Base, [&](StringRef N) {
    return G.lookupOp(N) == NoId &&
           (!Reserved || Reserved->lookupOp(N) == NoId);
  });
}

std::string OpBuilder::makeTensorName(const Twine &Base) const {
  return makeUniqueName(Base, [&](StringRef N) {
    return G.lookupTensor(N) == NoId &&
           (!Reserved || Reserved->lookupTensor(N) == NoId);
  });
}

OpId OpBuilder::create(const Twine &Name, StringRef Domain, StringRef Type,
                       ArrayRef<TensorId> Operands,
                       ArrayRef<TensorType> ResultTypes, AttributeList Attrs,
                       ArrayRef<std::string> ResultNames) {
  std::string OpName = makeOpName(Name);
  // The result names must outlive addOp's ResultSpecs.
  std::vector<std::string> Names(ResultTypes.size());
  SmallVector<Graph::ResultSpec, 4> Specs;
  for (unsigned I = 0, E = ResultTypes.size(); I != E; ++I) {
    if (ResultTypes[I].DType == DTypeKind::Undefined) {
      Specs.push_back({StringRef(), TensorType()});
      continue;
    }
    if (I < ResultNames.size() && !ResultNames[I].empty()) {
      assert(G.lookupTensor(ResultNames[I]) == NoId &&
             "a result name given explicitly is already in use");
      Names[I] = ResultNames[I];
    } else {
      Names[I] = E == 1 ? makeTensorName(OpName)
                        : makeTensorName(OpName + "." + Twine(I));
    }
    Specs.push_back({Names[I], ResultTypes[I]});
  }
  OpId O = G.addOp(OpName, Domain, Type, Operands, Specs, std::move(Attrs));
  G.getOp(O).Annotations = Annotations;
  return O;
}

TensorId OpBuilder::createOne(const Twine &Name, StringRef Type,
                              ArrayRef<TensorId> Operands,
                              TensorType ResultType, AttributeList Attrs,
                              StringRef ResultName) {
  std::string RN = ResultName.str();
  OpId O = create(Name, "", Type, Operands, {ResultType}, std::move(Attrs),
                  ArrayRef<std::string>(RN));
  return G.getOp(O).Results[0];
}

static int64_t normalizeAxis(int64_t Axis, unsigned Rank) {
  return Axis < 0 ? Axis + Rank : Axis;
}

/// Multidirectional (numpy) broadcasting of two static shapes.
static SmallVector<int64_t, 4> broadcastShapes(ArrayRef<int64_t> A,
                                               ArrayRef<int64_t> B) {
  size_t Rank = std::max(A.size(), B.size());
  SmallVector<int64_t, 4> Out(Rank, 1);
  for (size_t I = 0; I != Rank; ++I) {
    int64_t DA = I < Rank - A.size() ? 1 : A[I - (Rank - A.size())];
    int64_t DB = I < Rank - B.size() ? 1 : B[I - (Rank - B.size())];
    assert((DA == DB || DA == 1 || DB == 1) && "shapes do not broadcast");
    Out[I] = DA == 1 ? DB : DA;
  }
  return Out;
}

TensorId OpBuilder::matMul(const Twine &Name, TensorId A, TensorId B) {
  const TensorType &TA = getType(A), &TB = getType(B);
  assert(TA.getRank() >= 2 && TB.getRank() >= 2 && "MatMul of vectors");
  assert(TA.Dims.back() == TB.Dims[TB.getRank() - 2] &&
         "MatMul operands do not agree");
  ArrayRef<int64_t> BatchA = makeArrayRef(TA.Dims).drop_back(2);
  ArrayRef<int64_t> BatchB = makeArrayRef(TB.Dims).drop_back(2);
  SmallVector<int64_t, 4> Dims = broadcastShapes(BatchA, BatchB);
  Dims.push_back(TA.Dims[TA.getRank() - 2]);
  Dims.push_back(TB.Dims.back());
  return createOne(Name, "MatMul", {A, B}, TensorType(TA.DType, Dims));
}

TensorId OpBuilder::binary(StringRef Type, const Twine &Name, TensorId A,
                           TensorId B) {
  const TensorType &TA = getType(A), &TB = getType(B);
  assert(TA.DType == TB.DType && "binary op of mixed element types");
  return createOne(Name, Type, {A, B},
                   TensorType(TA.DType, broadcastShapes(TA.Dims, TB.Dims)));
}

TensorId OpBuilder::unary(StringRef Type, const Twine &Name, TensorId X) {
  return createOne(Name, Type, {X}, getType(X));
}

TensorId OpBuilder::transpose(const Twine &Name, TensorId X,
                              ArrayRef<int64_t> Perm) {
  const TensorType &TX = getType(X);
  assert(Perm.size() == TX.getRank() && "bad permutation");
  SmallVector<int64_t, 4> Dims;
  for (int64_t P : Perm)
    Dims.push_back(TX.Dims[P]);
  AttributeList Attrs;
  Attrs.set("perm", Attribute::getInts(Perm.vec()));
  return createOne(Name, "Transpose", {X}, TensorType(TX.DType, Dims),
                   std::move(Attrs));
}

SmallVector<TensorId, 4> OpBuilder::split(const Twine &Name, TensorId X,
                                          int64_t Axis, unsigned N) {
  TensorType Part = getType(X);
  Axis = normalizeAxis(Axis, Part.getRank());
  assert(Part.Dims[Axis] % N == 0 && "uneven split");
  Part.Dims[Axis] /= N;
  AttributeList Attrs;
  Attrs.set("axis", Attribute::getInt(Axis));
  // Equal parts: opset 18 wants the count, earlier opsets infer it from
  // the number of results.
  if (Opset >= 18)
    Attrs.set("num_outputs", Attribute::getInt(N));
  std::vector<TensorType> Types(N, Part);
  OpId O = create(Name, "", "Split", {X}, Types, std::move(Attrs));
  return SmallVector<TensorId, 4>(G.getOp(O).Results.begin(),
                                  G.getOp(O).Results.end());
}

TensorId OpBuilder::squeeze(const Twine &Name, TensorId X,
                            ArrayRef<int64_t> Axes) {
  const TensorType &TX = getType(X);
  SmallVector<bool, 4> Drop(TX.getRank(), false);
  for (int64_t A : Axes) {
    A = normalizeAxis(A, TX.getRank());
    assert(TX.Dims[A] == 1 && "squeezing a dimension that is not 1");
    Drop[A] = true;
  }
  SmallVector<int64_t, 4> Dims;
  for (unsigned I = 0, E = TX.getRank(); I != E; ++I)
    if (!Drop[I])
      Dims.push_back(TX.Dims[I]);
  TensorType Result(TX.DType, Dims);
  if (Opset >= 13)
    return createOne(Name, "Squeeze", {X, getAxes(Axes)}, Result);
  AttributeList Attrs;
  Attrs.set("axes", Attribute::getInts(Axes.vec()));
  return createOne(Name, "Squeeze", {X}, Result, std::move(Attrs));
}

TensorId OpBuilder::unsqueeze(const Twine &Name, TensorId X,
                              ArrayRef<int64_t> Axes, StringRef ResultName) {
  const TensorType &TX = getType(X);
  unsigned Rank = TX.getRank() + Axes.size();
  SmallVector<bool, 4> IsNew(Rank, false);
  for (int64_t A : Axes)
    IsNew[normalizeAxis(A, Rank)] = true;
  SmallVector<int64_t, 4> Dims;
  unsigned Next = 0;
  for (unsigned I = 0; I != Rank; ++I)
    Dims.push_back(IsNew[I] ? 1 : TX.Dims[Next++]);
  TensorType Result(TX.DType, Dims);
  if (Opset >= 13)
    return createOne(Name, "Unsqueeze", {X, getAxes(Axes)}, Result, {},
                     ResultName);
  AttributeList Attrs;
  Attrs.set("axes", Attribute::getInts(Axes.vec()));
  return createOne(Name, "Unsqueeze", {X}, Result, std::move(Attrs),
                   ResultName);
}

TensorId OpBuilder::concat(const Twine &Name, ArrayRef<TensorId> Xs,
                           int64_t Axis, StringRef ResultName) {
  assert(!Xs.empty() && "Concat of nothing");
  TensorType Result = getType(Xs.front());
  Axis = normalizeAxis(Axis, Result.getRank());
  for (TensorId X : Xs.drop_front())
    Result.Dims[Axis] += getType(X).Dims[Axis];
  AttributeList Attrs;
  Attrs.set("axis", Attribute::getInt(Axis));
  return createOne(Name, "Concat", Xs, Result, std::move(Attrs), ResultName);
}

TensorId OpBuilder::clip(const Twine &Name, TensorId X, double Min,
                         double Max) {
  const TensorType &TX = getType(X);
  if (Opset < 11) {
    AttributeList Attrs;
    Attrs.set("min", Attribute::getFloat(Min));
    Attrs.set("max", Attribute::getFloat(Max));
    return createOne(Name, "Clip", {X}, TX, std::move(Attrs));
  }
  TensorId Lo = getScalar(Min, TX.DType), Hi = getScalar(Max, TX.DType);
  return createOne(Name, "Clip", {X, Lo, Hi}, getType(X));
}

/// Creates a shared constant with ConstantAnnotations.
template <typename Fn>
static TensorId withConstantAnnotations(OpBuilder &B, Fn Create) {
  AttributeList Saved = B.Annotations;
  B.Annotations = B.ConstantAnnotations;
  TensorId T = Create();
  B.Annotations = std::move(Saved);
  return T;
}

TensorId OpBuilder::getAxes(ArrayRef<int64_t> Axes) {
  std::string What = "axes";
  for (int64_t A : Axes)
    What += "_" + std::to_string(A);
  auto It = Constants.find(What);
  if (It != Constants.end())
    return It->second;
  TensorId T = withConstantAnnotations(*this, [&] {
    AttributeList Attrs;
    Attrs.set("value_ints", Attribute::getInts(Axes.vec()));
    return createOne(ConstantPrefix + "/" + What, "Constant", {},
                     TensorType(DTypeKind::I64, {int64_t(Axes.size())}),
                     std::move(Attrs));
  });
  Constants[What] = T;
  return T;
}

TensorId OpBuilder::getScalar(double V, DTypeKind DType) {
  SmallString<32> What;
  raw_svector_ostream(What) << "scalar_" << V << "_" << getDTypeName(DType);
  auto It = Constants.find(std::string(What));
  if (It != Constants.end())
    return It->second;
  TensorId T = withConstantAnnotations(*this, [&] {
    AttributeList Attrs;
    Attrs.set("value_float", Attribute::getFloat(V));
    std::string Base = ConstantPrefix + "/scalar";
    TensorId F32 = createOne(Base, "Constant", {},
                             TensorType(DTypeKind::F32, {}), std::move(Attrs));
    if (DType == DTypeKind::F32)
      return F32;
    AttributeList CastAttrs;
    CastAttrs.set("to", Attribute::getInt(int64_t(DType)));
    return createOne(Base + "/cast", "Cast", {F32}, TensorType(DType, {}),
                     std::move(CastAttrs));
  });
  Constants[std::string(What)] = T;
  return T;
}

GraphRebuilder::GraphRebuilder(const Graph &Old)
    : Old(Old), Map(Old.getNumTensors(), NoId) {
  New.setName(Old.getName());
  for (const OpsetImport &I : Old.getOpsets())
    New.setOpset(I.Domain, I.Version);
  New.getAnnotations() = Old.getAnnotations();
  New.reserve(Old.getNumOps(), Old.getNumTensors());
  for (TensorId T : Old.getInputs())
    Map[T] = New.addInput(Old.getTensor(T).Name, Old.getTensor(T).Type);
  for (TensorId T : Old.getWeights())
    Map[T] = New.addWeight(Old.getTensor(T).Name, Old.getTensor(T).Type);
}

void GraphRebuilder::copyOp(OpId O) {
  const Op &From = Old.getOp(O);
  SmallVector<TensorId, 4> Operands;
  for (TensorId T : From.Operands)
    Operands.push_back(map(T));
  SmallVector<Graph::ResultSpec, 2> Results;
  for (TensorId T : From.Results) {
    if (T == NoId) {
      Results.push_back({StringRef(), TensorType()});
      continue;
    }
    Results.push_back({Old.getTensor(T).Name, Old.getTensor(T).Type});
  }
  OpId NewO = New.addOp(From.Name, From.Domain, From.Type, Operands, Results,
                        From.Attrs);
  Op &To = New.getOp(NewO);
  To.Annotations = From.Annotations;
  New.setSourceName(NewO, From.SourceName);
  for (unsigned I = 0, E = From.Results.size(); I != E; ++I)
    if (From.Results[I] != NoId)
      Map[From.Results[I]] = New.getOp(NewO).Results[I];
}

Graph GraphRebuilder::finish() {
  for (TensorId T : Old.getOutputs()) {
    assert(Map[T] != NoId && "an output was never defined");
    New.addOutput(Map[T]);
  }
  return std::move(New);
}

} // namespace transforms
} // namespace dp
