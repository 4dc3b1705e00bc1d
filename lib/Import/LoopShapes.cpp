//===- LoopShapes.cpp - Shapes of Loop results ----------------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "LoopShapes.h"
#include "ShapeFolder.h"
#include "dp/Import/ONNXWalk.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"

#include "onnx/onnx_pb.h"

#include <vector>

using namespace llvm;

namespace dp {

namespace {

onnx::TypeProto makeTensorType(int32_t ElemType, ArrayRef<int64_t> Dims) {
  onnx::TypeProto T;
  auto *TT = T.mutable_tensor_type();
  TT->set_elem_type(ElemType);
  auto *Shape = TT->mutable_shape();
  for (int64_t D : Dims)
    Shape->add_dim()->set_dim_value(D);
  return T;
}

/// The trip count of Loop \p L when it surely runs it all: a known trip
/// count, a true condition on entry, and a body that passes a true
/// condition on (through Identity nodes: the condition it is given, a
/// constant, or a folded value of the main graph).
Optional<int64_t> getFullTripCount(const onnx::NodeProto &L,
                                   const onnx::GraphProto &Body,
                                   const LoopShapeContext &Ctx) {
  const FoldValue *Trips =
      L.input(0).empty() ? nullptr : Ctx.ValueOf(L.input(0));
  if (!Trips || Trips->getNumElements() != 1 || Trips->integer(0) < 0)
    return None;
  auto IsTrue = [&](StringRef Name) {
    const FoldValue *V = Ctx.ValueOf(Name);
    return V && V->getNumElements() == 1 && V->integer(0) != 0;
  };
  bool EntersTrue = L.input(1).empty() || IsTrue(L.input(1));
  StringMap<const onnx::NodeProto *> Producers;
  for (const onnx::NodeProto &N : Body.node())
    for (const std::string &Out : N.output())
      Producers[Out] = &N;
  std::string Cond = Body.output(0).name();
  for (int Steps = 0; Steps != Body.node_size() + 1; ++Steps) {
    if (Cond == Body.input(1).name())
      return EntersTrue ? Optional<int64_t>(Trips->integer(0)) : None;
    const onnx::NodeProto *P = Producers.lookup(Cond);
    if (!P)
      return IsTrue(Cond) ? Optional<int64_t>(Trips->integer(0)) : None;
    if (P->op_type() == "Identity" && P->input_size() == 1) {
      Cond = P->input(0);
      continue;
    }
    std::vector<FoldValue> Values;
    if (P->op_type() != "Constant")
      return None;
    Expected<bool> Folded = evaluateNode(*P, 1, {}, {}, Values);
    if (!Folded) {
      consumeError(Folded.takeError());
      return None;
    }
    if (*Folded && Values.size() == 1 && Values[0].getNumElements() == 1 &&
        Values[0].integer(0) != 0)
      return Trips->integer(0);
    return None;
  }
  return None;
}

/// The types of Loop \p L's results that inferring its body with the
/// carried values' entry shapes gives, by result (an empty type where
/// none); false when the body cannot be inferred.
bool inferLoop(const onnx::ModelProto &M, const onnx::NodeProto &L,
               const onnx::GraphProto &Body, const LoopShapeContext &Ctx,
               std::vector<onnx::TypeProto> &Results) {
  int Carried = L.input_size() - 2;
  if (Carried < 0 || Body.input_size() != 2 + Carried ||
      Body.output_size() < 1 + Carried)
    return false;
  // The body on its own, its inputs typed as the Loop feeds them and what
  // it reads from the main graph given as inputs (or, when folded, values).
  onnx::ModelProto Alone;
  Alone.set_ir_version(M.ir_version());
  *Alone.mutable_opset_import() = M.opset_import();
  onnx::GraphProto &G = *Alone.mutable_graph();
  G = Body;
  G.clear_value_info();
  for (onnx::ValueInfoProto &Out : *G.mutable_output())
    Out.mutable_type()->mutable_tensor_type()->clear_shape();
  *G.mutable_input(0)->mutable_type() =
      makeTensorType(onnx::TensorProto::INT64, {});
  *G.mutable_input(1)->mutable_type() =
      makeTensorType(onnx::TensorProto::BOOL, {});
  std::vector<int64_t> Dims;
  for (int K = 0; K != Carried; ++K) {
    const onnx::TypeProto *T = Ctx.TypeOf(L.input(2 + K));
    if (!getStaticDims(T, Dims))
      return false;
    *G.mutable_input(2 + K)->mutable_type() = *T;
  }
  std::vector<StringRef> Outer;
  DenseSet<StringRef> Seen;
  collectOuterReads(Body, Outer, Seen, {});
  for (StringRef Name : Outer) {
    if (const FoldValue *V = Ctx.ValueOf(Name)) {
      onnx::TensorProto *T = G.add_initializer();
      T->set_name(Name.str());
      writeTensorValue(*V, *T);
      continue;
    }
    const onnx::TypeProto *T = Ctx.TypeOf(Name);
    if (!getStaticDims(T, Dims))
      return false;
    onnx::ValueInfoProto *VI = G.add_input();
    VI->set_name(Name.str());
    *VI->mutable_type() = *T;
  }
  if (!Ctx.Infer(Alone))
    return false;

  Results.assign(L.output_size(), onnx::TypeProto());
  std::vector<int64_t> Entry;
  for (int K = 0; K != Carried && K != L.output_size(); ++K) {
    const onnx::TypeProto &Out = G.output(1 + K).type();
    if (getStaticDims(&Out, Dims) &&
        getStaticDims(Ctx.TypeOf(L.input(2 + K)), Entry) && Dims == Entry)
      Results[K] = Out;
  }
  Optional<int64_t> Trips = getFullTripCount(L, Body, Ctx);
  for (int S = Carried; Trips && S < L.output_size() && 1 + S < G.output_size();
       ++S) {
    const onnx::TypeProto &Out = G.output(1 + S).type();
    if (!getStaticDims(&Out, Dims))
      continue;
    Dims.insert(Dims.begin(), *Trips);
    Results[S] = makeTensorType(Out.tensor_type().elem_type(), Dims);
  }
  return true;
}

} // namespace

int inferLoopShapes(onnx::ModelProto &M, const LoopShapeContext &Ctx,
                    StringSet<> &Done) {
  onnx::GraphProto &G = *M.mutable_graph();
  std::vector<std::pair<std::string, onnx::TypeProto>> Found;
  std::vector<int64_t> Dims;
  std::vector<onnx::TypeProto> Results;
  for (const onnx::NodeProto &L : G.node()) {
    if (L.op_type() != "Loop" ||
        !(L.domain().empty() || L.domain() == "ai.onnx") ||
        L.output_size() == 0 || Done.contains(L.output(0)))
      continue;
    auto Missing = [&](const std::string &Out) {
      return !Out.empty() && !getStaticDims(Ctx.TypeOf(Out), Dims);
    };
    if (none_of(L.output(), Missing)) {
      Done.insert(L.output(0));
      continue;
    }
    const onnx::GraphProto *Body = nullptr;
    forEachBody(L, [&](const onnx::GraphProto &B) { Body = &B; });
    if (!Body || !inferLoop(M, L, *Body, Ctx, Results))
      continue;
    bool All = true;
    for (int I = 0; I != L.output_size(); ++I) {
      if (!Missing(L.output(I)))
        continue;
      if (Results[I].has_tensor_type())
        Found.emplace_back(L.output(I), Results[I]);
      else
        All = false;
    }
    if (All)
      Done.insert(L.output(0));
  }
  if (Found.empty())
    return 0;
  StringMap<onnx::ValueInfoProto *> Infos;
  for (onnx::ValueInfoProto &VI : *G.mutable_value_info())
    Infos[VI.name()] = &VI;
  for (onnx::ValueInfoProto &VI : *G.mutable_output())
    Infos[VI.name()] = &VI;
  for (auto &[Name, Type] : Found) {
    onnx::ValueInfoProto *&VI = Infos[Name];
    if (!VI) {
      VI = G.add_value_info();
      VI->set_name(Name);
    }
    *VI->mutable_type() = std::move(Type);
  }
  return Found.size();
}

} // namespace dp
