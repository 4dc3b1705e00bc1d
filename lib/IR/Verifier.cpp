//===- Verifier.cpp - Checking the IR invariants --------------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/IR/Verifier.h"
#include "dp/IR/Graph.h"
#include "dp/Support/Diagnostics.h"

#include "llvm/ADT/DenseSet.h"

using namespace llvm;

namespace dp {


static void verifyTensorType(ErrorList &EC, StringRef Node,
                             const Tensor &T) {
  if (T.Type.DType == DTypeKind::Undefined) {
    EC.add(makeTensorError(Node, T.Name, "tensor has no element type"));
    return;
  }
  if (!T.Type.isStatic()) {
    EC.add(makeTensorError(Node, T.Name, "tensor has no static shape"));
    return;
  }
  if (!T.Type.getNumElements() ||
      (getDTypeSize(T.Type.DType) && !T.Type.getSizeInBytes()))
    EC.add(makeTensorError(Node, T.Name,
                           "tensor size overflows a 64-bit byte count"));
}

Error verifyGraph(const Graph &G) {
  ErrorList EC;
  if (G.getName().empty())
    EC.add(makeError("the graph has no name"));

  // Graph inputs and weights.
  for (TensorId T : G.getInputs()) {
    const Tensor &Tn = G.getTensor(T);
    if (Tn.Kind != TensorKind::Input || Tn.Producer != NoId)
      EC.add(makeTensorError("", Tn.Name, "graph input is not an input"));
    verifyTensorType(EC, "", Tn);
  }
  for (TensorId T : G.getWeights()) {
    const Tensor &Tn = G.getTensor(T);
    if (Tn.Kind != TensorKind::Weight || Tn.Producer != NoId)
      EC.add(makeTensorError("", Tn.Name, "weight is not a weight"));
    verifyTensorType(EC, "", Tn);
  }

  // Ops: topological order, result ownership, types.
  std::vector<SmallVector<Use, 2>> ExpectedUses(G.getNumTensors());
  for (OpId O = 0, E = G.getNumOps(); O != E; ++O) {
    const Op &Node = G.getOp(O);
    if (Node.Type.empty())
      EC.add(makeNodeError(Node.Name, "op has no type"));
    if (G.lookupOp(Node.Name) != O)
      EC.add(makeNodeError(Node.Name, "op name is not unique"));
    for (unsigned I = 0, NE = Node.Operands.size(); I != NE; ++I) {
      TensorId T = Node.Operands[I];
      if (T == NoId)
        continue;
      if (T >= G.getNumTensors()) {
        EC.add(makeNodeError(Node.Name,
                             "operand " + Twine(I) + " does not exist"));
        continue;
      }
      ExpectedUses[T].push_back(Use{O, I});
      const Tensor &Tn = G.getTensor(T);
      if (Tn.Kind == TensorKind::Activation &&
          (Tn.Producer == NoId || Tn.Producer >= O))
        EC.add(makeTensorError(
            Node.Name, Tn.Name,
            "operand is not produced by an earlier op (ops must be in "
            "topological order; the graph may have a cycle)"));
    }
    for (unsigned I = 0, NE = Node.Results.size(); I != NE; ++I) {
      TensorId T = Node.Results[I];
      if (T == NoId)
        continue;
      const Tensor &Tn = G.getTensor(T);
      if (Tn.Kind != TensorKind::Activation || Tn.Producer != O ||
          Tn.ResultIndex != I)
        EC.add(makeTensorError(Node.Name, Tn.Name,
                               "result is not owned by this op"));
      verifyTensorType(EC, Node.Name, Tn);
    }
  }

  // Every tensor is declared once, and its use list matches the operands.
  std::vector<unsigned> Declared(G.getNumTensors(), 0);
  for (ArrayRef<TensorId> Decls : {G.getInputs(), G.getWeights()})
    for (TensorId T : Decls)
      if (T < G.getNumTensors())
        ++Declared[T];
  for (TensorId T = 0, E = G.getNumTensors(); T != E; ++T) {
    const Tensor &Tn = G.getTensor(T);
    if (Tn.Kind != TensorKind::Activation && Declared[T] != 1)
      EC.add(makeTensorError("", Tn.Name,
                             Tn.Kind == TensorKind::Input
                                 ? "input tensor is not declared once as a "
                                   "graph input"
                                 : "weight tensor is not declared once as a "
                                   "weight"));
    StringRef Producer =
        Tn.Producer == NoId || Tn.Producer >= G.getNumOps()
            ? StringRef()
            : G.getOp(Tn.Producer).Name;
    if (G.lookupTensor(Tn.Name) != T)
      EC.add(makeTensorError(Producer, Tn.Name, "tensor name is not unique"));
    if (Tn.Kind == TensorKind::Activation &&
        (Tn.Producer >= G.getNumOps() ||
         Tn.ResultIndex >= G.getOp(Tn.Producer).Results.size() ||
         G.getOp(Tn.Producer).Results[Tn.ResultIndex] != T))
      EC.add(makeTensorError(Producer, Tn.Name,
                             "tensor is not a result of its producer"));
    if (ArrayRef<Use>(Tn.Uses) != ArrayRef<Use>(ExpectedUses[T]))
      EC.add(makeTensorError(Producer, Tn.Name,
                             "use list does not match the operands of ops"));
  }

  DenseSet<TensorId> Seen;
  for (TensorId T : G.getOutputs()) {
    if (T >= G.getNumTensors()) {
      EC.add(makeError("graph output does not exist"));
      continue;
    }
    if (!Seen.insert(T).second)
      EC.add(makeTensorError("", G.getTensor(T).Name,
                             "tensor is a graph output twice"));
  }
  return EC.take();
}

} // namespace dp
