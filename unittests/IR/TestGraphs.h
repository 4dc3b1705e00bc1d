//===- TestGraphs.h - Graphs shared by the IR unit tests --------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// A graph that uses every feature of the IR (every attribute kind, names
/// that need quoting, absent operands and results, source names), a small
/// one, and a field-by-field comparison of graphs that treats NaN as equal
/// to NaN, for the text and bytecode round-trip tests.
///
//===----------------------------------------------------------------------===//

#ifndef DP_UNITTESTS_IR_TESTGRAPHS_H
#define DP_UNITTESTS_IR_TESTGRAPHS_H

#include "dp/IR/Graph.h"
#include "dp/IR/TextFormat.h"

#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

namespace dp {
namespace unittest {

inline std::string printToString(const Graph &G) {
  std::string S;
  llvm::raw_string_ostream OS(S);
  printGraph(OS, G);
  return OS.str();
}

inline GraphSummary
makeSummary(int64_t Nodes, int64_t Inputs, int64_t Outputs,
            std::vector<std::pair<std::string, int64_t>> OpCounts) {
  GraphSummary S;
  S.Nodes = Nodes;
  S.Inputs = Inputs;
  S.Outputs = Outputs;
  S.OpCounts = std::move(OpCounts);
  return S;
}

/// One attribute of every kind, with the values that are hard to print:
/// extreme integers, 1e-05, infinities, NaN, negative zero, strings with
/// quotes, backslashes, control and non-ASCII bytes, empty lists of every
/// list kind, unknown dims and element types.
inline AttributeList makeEveryAttribute() {
  constexpr double Inf = std::numeric_limits<double>::infinity();
  const double NaN = std::nan("");
  AttributeList L;
  L.set("i", Attribute::getInt(-7));
  L.set("i_max", Attribute::getInt(std::numeric_limits<int64_t>::max()));
  L.set("i_min", Attribute::getInt(std::numeric_limits<int64_t>::min()));
  L.set("f_small", Attribute::getFloat(1e-05));
  L.set("f_inf", Attribute::getFloat(Inf));
  L.set("f_ninf", Attribute::getFloat(-Inf));
  L.set("f_nan", Attribute::getFloat(NaN));
  L.set("f_neg", Attribute::getFloat(-2.5));
  L.set("f_negzero", Attribute::getFloat(-0.0));
  L.set("f_big", Attribute::getFloat(1e300));
  L.set("f_whole", Attribute::getFloat(3.0));
  L.set("s", Attribute::getString("say \"hi\" \\ back\nnew\ttab "
                                  "\xc3\xa9 \x01\x7f\xff"));
  L.set("s_empty", Attribute::getString(""));
  L.set("ints",
        Attribute::getInts({1, -2, 3, std::numeric_limits<int64_t>::min()}));
  L.set("floats", Attribute::getFloats({0.5, -1e-05, Inf, -Inf, NaN}));
  L.set("floats_nan_first", Attribute::getFloats({NaN, 1.0}));
  L.set("floats_inf_first", Attribute::getFloats({Inf}));
  L.set("floats_ninf_first", Attribute::getFloats({-Inf, 2.0}));
  L.set("strings", Attribute::getStrings({"a", "b\"c", "", "\n\\"}));
  L.set("empty_ints", Attribute::getInts({}));
  L.set("empty_floats", Attribute::getFloats({}));
  L.set("empty_strings", Attribute::getStrings({}));
  L.set("empty_tensors", Attribute::getTensors({}));
  L.set("empty_types", Attribute::getTypes({}));
  L.set("empty_graphs", Attribute::getGraphs({}));
  L.set("tensor", Attribute::getTensor(TensorType(DTypeKind::F32, {3, 4})));
  L.set("tensor_scalar", Attribute::getTensor(TensorType(DTypeKind::I64, {})));
  L.set("tensors",
        Attribute::getTensors({TensorType(DTypeKind::F32, {1}),
                               TensorType(DTypeKind::BF16, {2, 2})}));
  L.set("type",
        Attribute::getType(TensorType(DTypeKind::F32, {UnknownDim, 3})));
  L.set("type_undefined",
        Attribute::getType(TensorType(DTypeKind::Undefined, {UnknownDim})));
  L.set("types",
        Attribute::getTypes({TensorType(DTypeKind::I32, {UnknownDim}),
                             TensorType(DTypeKind::Bool, {2, UnknownDim})}));
  L.set("graph", Attribute::getGraph(makeSummary(
                     3, 1, 2, {{"Add", 2}, {"com.microsoft::Attention", 1}})));
  L.set("graphs", Attribute::getGraphs({makeSummary(1, 0, 1, {{"Neg", 1}}),
                                        makeSummary(0, 0, 0, {})}));
  L.set("weird name", Attribute::getInt(1));
  return L;
}

/// A valid graph that uses every feature of the textual form.
inline Graph makeRichGraph() {
  Graph G;
  G.setName("rich \"graph\"");
  G.setOpset("", 17);
  G.setOpset("com.microsoft", 1);
  G.setOpset("my-domain", 3);
  G.getAnnotations().set("seed", Attribute::getInt(42));
  G.getAnnotations().set("cluster", Attribute::getString("2x\"A100\""));
  G.getAnnotations().set("budget ms", Attribute::getFloats({1.5}));

  TensorId X = G.addInput("input.1", TensorType(DTypeKind::F32, {2, 3}));
  TensorId Mask =
      G.addInput("name with spaces", TensorType(DTypeKind::Bool, {2, 3}));
  TensorId Q = G.addInput("quote\"d\\name", TensorType(DTypeKind::I64, {}));
  TensorId W = G.addWeight("onnx::Conv_12", TensorType(DTypeKind::F32, {3, 3}));
  TensorId B =
      G.addWeight("/layer.0/attn/bias", TensorType(DTypeKind::F16, {3}));
  G.addWeight("vocab", TensorType(DTypeKind::String, {4}));

  TensorType T23(DTypeKind::F32, {2, 3});
  OpId MatMul = G.addOp("/layer.0/attn/MatMul", "", "MatMul", {X, W},
                        {{"/layer.0/attn/MatMul_output_0", T23}});
  AttributeList &Annots = G.getOp(MatMul).Annotations;
  Annots.set("device", Attribute::getInt(1));
  Annots.set("group", Attribute::getString("g0"));
  Annots.set("dp.cost", Attribute::getFloat(0.25));
  Annots.set("weird key", Attribute::getInts({}));
  TensorId MM = G.getOp(MatMul).Results[0];

  OpId Every = G.addOp("everything", "", "Custom", {MM, B, NoId, Q},
                       {{"ev", T23}, {"", {}}}, makeEveryAttribute());
  G.setSourceName(Every, "orig/everything:0");
  TensorId Ev = G.getOp(Every).Results[0];

  OpId Gelu = G.addOp("op with spaces \"q\"", "com.microsoft", "FusedGelu",
                      {Ev}, {{"gelu out", T23}});
  G.setSourceName(Gelu, "");
  TensorId GeluOut = G.getOp(Gelu).Results[0];

  OpId Drop = G.addOp("Dropout_3", "", "Dropout", {GeluOut, NoId, NoId},
                      {{"y", T23}, {"", {}}});
  TensorId Y = G.getOp(Drop).Results[0];

  OpId Where = G.addOp("Where_4", "", "Where", {Mask, Y, Ev}, {{"z", T23}});
  TensorId Z = G.getOp(Where).Results[0];

  OpId Custom = G.addOp("custom", "my-domain", "Op.v2-beta", {Z},
                        {{"out", TensorType(DTypeKind::F32, {2, 3})}});
  G.addOutput(G.getOp(Custom).Results[0]);
  G.addOutput(Y);
  G.addOutput(Ev);
  return G;
}

/// x -> Relu -> Mul(_, w) -> y, with a few attributes and annotations:
/// small enough to corrupt every byte of its bytecode.
inline Graph makeSmallGraph() {
  Graph G;
  G.setName("small");
  G.setOpset("", 17);
  G.getAnnotations().set("seed", Attribute::getInt(3));
  TensorId X = G.addInput("x", TensorType(DTypeKind::F32, {2, 3}));
  TensorId W = G.addWeight("w", TensorType(DTypeKind::F32, {3}));
  AttributeList Attrs;
  Attrs.set("alpha", Attribute::getFloat(0.5));
  Attrs.set("body", Attribute::getGraph(
                        makeSummary(2, 1, 1, {{"Abs", 1}, {"Neg", 1}})));
  OpId Relu = G.addOp("relu", "", "Relu", {X},
                      {{"r", TensorType(DTypeKind::F32, {2, 3})}}, Attrs);
  G.getOp(Relu).Annotations.set("device", Attribute::getInt(0));
  OpId Mul = G.addOp("mul", "", "Mul", {G.getOp(Relu).Results[0], W},
                     {{"y", TensorType(DTypeKind::F32, {2, 3})}});
  G.setSourceName(Mul, "Mul_1");
  G.addOutput(G.getOp(Mul).Results[0]);
  return G;
}

inline std::string typeToString(const TensorType &T) {
  std::string S;
  llvm::raw_string_ostream OS(S);
  OS << T;
  return OS.str();
}

/// Whether two doubles are the same value: NaN equals NaN, and -0.0 differs
/// from 0.0.
inline bool isSameDouble(double A, double B) {
  if (std::isnan(A) || std::isnan(B))
    return std::isnan(A) && std::isnan(B);
  return A == B && std::signbit(A) == std::signbit(B);
}

inline bool isSameAttribute(const Attribute &A, const Attribute &B) {
  if (A.getKind() != B.getKind())
    return false;
  if (A.getKind() == AttrKind::Float)
    return isSameDouble(A.getFloat(), B.getFloat());
  if (A.getKind() != AttrKind::Floats)
    return A == B;
  const std::vector<double> &VA = A.getFloats(), &VB = B.getFloats();
  if (VA.size() != VB.size())
    return false;
  for (size_t I = 0, E = VA.size(); I != E; ++I)
    if (!isSameDouble(VA[I], VB[I]))
      return false;
  return true;
}

inline std::string printAttributeToString(const Attribute &A) {
  std::string S;
  llvm::raw_string_ostream OS(S);
  printAttribute(OS, A);
  return OS.str();
}

inline void expectSameAttributes(const AttributeList &A, const AttributeList &B,
                                 const std::string &What) {
  ASSERT_EQ(A.size(), B.size()) << What;
  auto IA = A.begin();
  for (auto IB = B.begin(); IB != B.end(); ++IA, ++IB) {
    EXPECT_EQ(IA->Name, IB->Name) << What;
    EXPECT_TRUE(isSameAttribute(IA->Value, IB->Value))
        << What << ": attribute '" << IA->Name
        << "': " << printAttributeToString(IA->Value) << " vs "
        << printAttributeToString(IB->Value);
  }
}

/// Expects \p Actual to equal \p Expected in every field: name, opsets,
/// annotations, every tensor (name, type, kind, producer, use list), the
/// declared inputs, weights and outputs, and every op.
inline void expectSameGraph(const Graph &Expected, const Graph &Actual) {
  EXPECT_EQ(Expected.getName(), Actual.getName());
  EXPECT_EQ(Expected.getOpsets(), Actual.getOpsets());
  expectSameAttributes(Expected.getAnnotations(), Actual.getAnnotations(),
                       "graph annotations");

  ASSERT_EQ(Expected.getNumTensors(), Actual.getNumTensors());
  for (TensorId T = 0, E = Expected.getNumTensors(); T != E; ++T) {
    const Tensor &TE = Expected.getTensor(T), &TA = Actual.getTensor(T);
    SCOPED_TRACE("tensor " + std::to_string(T) + " '" + TE.Name.str() + "'");
    EXPECT_EQ(TE.Name, TA.Name);
    EXPECT_EQ(TE.Type, TA.Type)
        << typeToString(TE.Type) << " vs " << typeToString(TA.Type);
    EXPECT_EQ(TE.Kind, TA.Kind);
    EXPECT_EQ(TE.Producer, TA.Producer);
    EXPECT_EQ(TE.ResultIndex, TA.ResultIndex);
    EXPECT_EQ(llvm::ArrayRef<Use>(TE.Uses), llvm::ArrayRef<Use>(TA.Uses));
    EXPECT_EQ(Actual.lookupTensor(TE.Name), T);
  }
  EXPECT_EQ(Expected.getInputs(), Actual.getInputs());
  EXPECT_EQ(Expected.getWeights(), Actual.getWeights());
  EXPECT_EQ(Expected.getOutputs(), Actual.getOutputs());

  ASSERT_EQ(Expected.getNumOps(), Actual.getNumOps());
  for (OpId O = 0, E = Expected.getNumOps(); O != E; ++O) {
    const Op &OE = Expected.getOp(O), &OA = Actual.getOp(O);
    SCOPED_TRACE("op " + std::to_string(O) + " '" + OE.Name.str() + "'");
    EXPECT_EQ(OE.Name, OA.Name);
    EXPECT_EQ(OE.SourceName, OA.SourceName);
    EXPECT_EQ(OE.Domain, OA.Domain);
    EXPECT_EQ(OE.Type, OA.Type);
    EXPECT_EQ(llvm::ArrayRef<TensorId>(OE.Operands),
              llvm::ArrayRef<TensorId>(OA.Operands));
    EXPECT_EQ(llvm::ArrayRef<TensorId>(OE.Results),
              llvm::ArrayRef<TensorId>(OA.Results));
    expectSameAttributes(OE.Attrs, OA.Attrs, "attributes");
    expectSameAttributes(OE.Annotations, OA.Annotations, "annotations");
    EXPECT_EQ(Actual.lookupOp(OE.Name), O);
  }
}

} // namespace unittest
} // namespace dp

#endif // DP_UNITTESTS_IR_TESTGRAPHS_H
