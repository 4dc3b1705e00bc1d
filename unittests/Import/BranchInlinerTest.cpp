//===- BranchInlinerTest.cpp - Decided Ifs replaced by their branch -------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "BranchInliner.h"

#include "onnx/defs/parser.h"
#include "onnx/onnx_pb.h"

#include "gtest/gtest.h"

#include <string>
#include <vector>

using namespace dp;

namespace {

onnx::GraphProto parse(const char *Text) {
  onnx::GraphProto G;
  onnx::Status S = onnx::OnnxParser::Parse(G, Text);
  EXPECT_TRUE(S.IsOK()) << S.ErrorMessage();
  return G;
}

/// "Op(in, ...) -> out, ..." for each node, in order.
std::vector<std::string> describe(const onnx::GraphProto &G) {
  std::vector<std::string> Out;
  for (const onnx::NodeProto &N : G.node()) {
    std::string S = N.op_type() + "(";
    for (int I = 0; I != N.input_size(); ++I)
      S += (I ? ", " : "") + N.input(I);
    S += ") ->";
    for (const std::string &O : N.output())
      S += " " + O;
    Out.push_back(S);
  }
  return Out;
}

// The then branch defines k, which the graph defines too: the branch's k
// is renamed, in the branch and in the body of the If nested in it, which
// reads it from the enclosing scope.
const char *ClashText = R"(
g (float[2] x, bool c) => (float[2] y) {
  k = Relu(x)
  y = If (c) <
    then_branch = t () => (float[2] a) {
      k = Sigmoid(x)
      w = Constant <value = float[2] {1.0, 2.0}> ()
      a = If (c) <
        then_branch = t2 () => (float[2] p) { p = Add(k, w) },
        else_branch = e2 () => (float[2] q) { q = Neg(k) }
      >
    },
    else_branch = e () => (float[2] b) { b = Identity(k) }
  >
  z = Neg(k)
}
)";

TEST(BranchInliner, RenamesTheBranchsClashingNames) {
  onnx::GraphProto G = parse(ClashText);
  BranchDecisions Decided;
  Decided["y"] = true;
  EXPECT_EQ(inlineDecidedBranches(G, Decided), 1);
  std::vector<std::string> Expected = {
      "Relu(x) -> k", "Sigmoid(x) -> k.inlined1", "Constant() -> w",
      "If(c) -> a",   "Identity(a) -> y",         "Neg(k) -> z",
  };
  EXPECT_EQ(describe(G), Expected);
  // The nested If's bodies read the renamed k.
  const onnx::NodeProto &Nested = G.node(3);
  EXPECT_EQ(Nested.attribute(0).g().node(0).input(0), "k.inlined1");
  EXPECT_EQ(Nested.attribute(1).g().node(0).input(0), "k.inlined1");
}

TEST(BranchInliner, InlinesNestedDecisionsAndTheElseBranch) {
  onnx::GraphProto G = parse(ClashText);
  BranchDecisions Decided;
  Decided["y"] = true;
  Decided["a"] = false;
  EXPECT_EQ(inlineDecidedBranches(G, Decided), 2);
  std::vector<std::string> Expected = {
      "Relu(x) -> k",         "Sigmoid(x) -> k.inlined1", "Constant() -> w",
      "Neg(k.inlined1) -> q", "Identity(q) -> a",         "Identity(a) -> y",
      "Neg(k) -> z",
  };
  EXPECT_EQ(describe(G), Expected);

  onnx::GraphProto Else = parse(ClashText);
  Decided.clear();
  Decided["y"] = false;
  EXPECT_EQ(inlineDecidedBranches(Else, Decided), 1);
  std::vector<std::string> ElseExpected = {
      "Relu(x) -> k",
      "Identity(k) -> b",
      "Identity(b) -> y",
      "Neg(k) -> z",
  };
  EXPECT_EQ(describe(Else), ElseExpected);
}

TEST(BranchInliner, MovesTheBranchsInitializersAndNamesTheOutputs) {
  onnx::GraphProto G = parse(R"(
g (float[2] x, bool c) => (float[2] y, float[2] y2) {
  y, y2 = If (c) <
    then_branch = t () => (float[2] a, float[2] x) <float[2] w = {1.0, 2.0}> {
      a = Add(x, w)
    },
    else_branch = e () => (float[2] b, float[2] x) { b = Neg(x) }
  >
}
)");
  G.mutable_node(0)->set_name("/decoder/If");
  BranchDecisions Decided;
  Decided["y"] = true;
  EXPECT_EQ(inlineDecidedBranches(G, Decided), 1);
  ASSERT_EQ(G.initializer_size(), 1);
  EXPECT_EQ(G.initializer(0).name(), "w");
  std::vector<std::string> Expected = {
      "Add(x, w) -> a",
      "Identity(a) -> y",
      // A branch output read from the enclosing scope.
      "Identity(x) -> y2",
  };
  EXPECT_EQ(describe(G), Expected);
  EXPECT_EQ(G.node(1).name(), "/decoder/If/then_branch/output_0");
  EXPECT_EQ(G.node(2).name(), "/decoder/If/then_branch/output_1");
}

TEST(BranchInliner, LeavesUndecidedIfsAlone) {
  onnx::GraphProto G = parse(ClashText);
  std::string Before = G.SerializeAsString();
  BranchDecisions Decided;
  EXPECT_EQ(inlineDecidedBranches(G, Decided), 0);
  Decided["z"] = true; // Not an If.
  Decided["a"] = true; // Nested in an If that is not decided.
  EXPECT_EQ(inlineDecidedBranches(G, Decided), 0);
  EXPECT_EQ(G.SerializeAsString(), Before);
}

} // namespace
