//===- Graph.cpp - The dp graph IR ----------------------------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/IR/Graph.h"

#include <algorithm>

using namespace llvm;

namespace dp {

void Graph::setOpset(StringRef Domain, int64_t Version) {
  auto It = std::lower_bound(
      Opsets.begin(), Opsets.end(), Domain,
      [](const OpsetImport &O, StringRef D) { return O.Domain < D; });
  if (It != Opsets.end() && It->Domain == Domain) {
    It->Version = Version;
    return;
  }
  Opsets.insert(It, OpsetImport{Domain.str(), Version});
}

void Graph::reserve(size_t NumOps, size_t NumTensors) {
  Ops.reserve(NumOps);
  OpByName.reserve(NumOps);
  Tensors.reserve(NumTensors);
  TensorByName.reserve(NumTensors);
}

TensorId Graph::addTensor(StringRef N, TensorType T, TensorKind K) {
  assert(!N.empty() && "tensors need a name");
  TensorId Id = Tensors.size();
  StringRef Saved = Strings->Names.save(N);
  bool Inserted = TensorByName.try_emplace(Saved, Id).second;
  (void)Inserted;
  assert(Inserted && "tensor name already in use");
  Tensors.emplace_back();
  Tensor &New = Tensors.back();
  New.Name = Saved;
  New.Type = std::move(T);
  New.Kind = K;
  return Id;
}

TensorId Graph::addInput(StringRef N, TensorType T) {
  TensorId Id = addTensor(N, std::move(T), TensorKind::Input);
  Inputs.push_back(Id);
  return Id;
}

TensorId Graph::addWeight(StringRef N, TensorType T) {
  TensorId Id = addTensor(N, std::move(T), TensorKind::Weight);
  Weights.push_back(Id);
  return Id;
}

OpId Graph::addOp(StringRef N, StringRef Domain, StringRef Type,
                  ArrayRef<TensorId> Operands, ArrayRef<ResultSpec> Results,
                  AttributeList Attrs) {
  assert(!N.empty() && "ops need a name");
  OpId Id = Ops.size();
  StringRef Saved = Strings->Names.save(N);
  bool Inserted = OpByName.try_emplace(Saved, Id).second;
  (void)Inserted;
  assert(Inserted && "op name already in use");
  Ops.emplace_back();
  {
    Op &New = Ops.back();
    New.Name = Saved;
    New.SourceName = New.Name;
    New.Domain = save(Domain);
    New.Type = save(Type);
    New.Operands.assign(Operands.begin(), Operands.end());
    New.Attrs = std::move(Attrs);
  }
  for (unsigned I = 0, E = Operands.size(); I != E; ++I) {
    if (Operands[I] == NoId)
      continue;
    assert(Operands[I] < Tensors.size() && "operand does not exist");
    Tensors[Operands[I]].Uses.push_back(Use{Id, I});
  }
  // Results are added after the op so that the op's fields above stay put
  // while the tensor array grows.
  SmallVector<TensorId, 2> ResultIds;
  for (unsigned I = 0, E = Results.size(); I != E; ++I) {
    if (Results[I].Name.empty()) {
      ResultIds.push_back(NoId);
      continue;
    }
    TensorId T = addTensor(Results[I].Name, Results[I].Type,
                           TensorKind::Activation);
    Tensors[T].Producer = Id;
    Tensors[T].ResultIndex = I;
    ResultIds.push_back(T);
  }
  Ops[Id].Results = std::move(ResultIds);
  return Id;
}

const TensorType *getOperandType(const Graph &G, const Op &O, unsigned I) {
  if (I >= O.Operands.size() || O.Operands[I] == NoId)
    return nullptr;
  return &G.getTensor(O.Operands[I]).Type;
}

const TensorType *getResultType(const Graph &G, const Op &O, unsigned I) {
  if (I >= O.Results.size() || O.Results[I] == NoId)
    return nullptr;
  return &G.getTensor(O.Results[I]).Type;
}

std::string Graph::getQualifiedType(OpId O) const {
  const Op &Node = Ops[O];
  if (Node.Domain.empty())
    return Node.Type.str();
  return (Node.Domain + "::" + Node.Type).str();
}

} // namespace dp
