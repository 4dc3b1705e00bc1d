//===- GraphTest.cpp - dp::Graph construction -----------------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/IR/Graph.h"

#include "gtest/gtest.h"

using namespace dp;

namespace {

/// x -> Relu -> y -> (Add y, w) -> z
Graph makeSmallGraph() {
  Graph G;
  G.setName("small");
  G.setOpset("", 17);
  TensorId X = G.addInput("x", TensorType(DTypeKind::F32, {2, 3}));
  TensorId W = G.addWeight("w", TensorType(DTypeKind::F32, {3}));
  OpId Relu = G.addOp("relu", "", "Relu", {X},
                      {{"y", TensorType(DTypeKind::F32, {2, 3})}});
  TensorId Y = G.getOp(Relu).Results[0];
  OpId Add = G.addOp("add", "", "Add", {Y, W},
                     {{"z", TensorType(DTypeKind::F32, {2, 3})}});
  G.addOutput(G.getOp(Add).Results[0]);
  return G;
}

TEST(GraphTest, BuildsUseListsAndProducers) {
  Graph G = makeSmallGraph();
  ASSERT_EQ(G.getNumOps(), 2u);
  ASSERT_EQ(G.getNumTensors(), 4u);
  TensorId Y = G.lookupTensor("y");
  ASSERT_NE(Y, NoId);
  EXPECT_EQ(G.getTensor(Y).Producer, G.lookupOp("relu"));
  EXPECT_EQ(G.getTensor(Y).Kind, TensorKind::Activation);
  ASSERT_EQ(G.getTensor(Y).Uses.size(), 1u);
  EXPECT_EQ(G.getTensor(Y).Uses[0].User, G.lookupOp("add"));
  EXPECT_EQ(G.getTensor(Y).Uses[0].Operand, 0u);
  TensorId W = G.lookupTensor("w");
  EXPECT_EQ(G.getTensor(W).Kind, TensorKind::Weight);
  EXPECT_EQ(G.getTensor(W).Uses[0].Operand, 1u);
  EXPECT_EQ(G.lookupTensor("nope"), NoId);
  EXPECT_EQ(G.lookupOp("nope"), NoId);
}

TEST(GraphTest, NamesSurviveMoves) {
  Graph G = makeSmallGraph();
  llvm::StringRef Name = G.getOp(0).Name;
  Graph Moved = std::move(G);
  EXPECT_EQ(Name, "relu");
  EXPECT_EQ(Moved.getOp(0).Name.data(), Name.data());
  EXPECT_EQ(Moved.lookupOp("add"), 1u);
}

TEST(GraphTest, OptionalOperandsAndResults) {
  Graph G;
  G.setName("opt");
  TensorId X = G.addInput("x", TensorType(DTypeKind::F32, {4}));
  OpId O = G.addOp("drop", "", "Dropout", {X, NoId},
                   {{"y", TensorType(DTypeKind::F32, {4})}, {"", {}}});
  EXPECT_EQ(G.getOp(O).Operands[1], NoId);
  EXPECT_EQ(G.getOp(O).Results[1], NoId);
  EXPECT_EQ(G.getTensor(X).Uses.size(), 1u);
}

TEST(GraphTest, SizesAndOverflow) {
  TensorType T(DTypeKind::F16, {2, 3, 4});
  EXPECT_EQ(*T.getNumElements(), 24);
  EXPECT_EQ(*T.getSizeInBytes(), 48);
  TensorType Scalar(DTypeKind::I64, {});
  EXPECT_EQ(*Scalar.getSizeInBytes(), 8);
  TensorType Huge(DTypeKind::F32, {int64_t(1) << 62, 4});
  EXPECT_FALSE(Huge.getNumElements().hasValue());
  TensorType Big(DTypeKind::F64, {int64_t(1) << 61});
  EXPECT_TRUE(Big.getNumElements().hasValue());
  EXPECT_FALSE(Big.getSizeInBytes().hasValue());
  TensorType Strings(DTypeKind::String, {3});
  EXPECT_FALSE(Strings.getSizeInBytes().hasValue());
}

TEST(GraphTest, AttributeListsStaySorted) {
  AttributeList L;
  L.set("pads", Attribute::getInts({1, 1}));
  L.set("axis", Attribute::getInt(1));
  L.set("mode", Attribute::getString("constant"));
  std::vector<std::string> Names;
  for (const NamedAttribute &A : L)
    Names.push_back(A.Name);
  EXPECT_EQ(Names, (std::vector<std::string>{"axis", "mode", "pads"}));
  L.set("axis", Attribute::getInt(2));
  EXPECT_EQ(L.get("axis")->getInt(), 2);
  EXPECT_TRUE(L.erase("mode"));
  EXPECT_FALSE(L.erase("mode"));
  EXPECT_EQ(L.size(), 2u);
}

} // namespace
