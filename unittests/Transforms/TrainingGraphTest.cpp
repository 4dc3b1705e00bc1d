//===- TrainingGraphTest.cpp - Building one training step -----------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/Transforms/TrainingGraph.h"
#include "dp/IR/Graph.h"
#include "dp/IR/Verifier.h"
#include "dp/Support/Diagnostics.h"

#include "DiagnosticsTestUtil.h"

#include "llvm/ADT/StringMap.h"

#include "gtest/gtest.h"

#include <string>
#include <vector>

using namespace dp;
using namespace dp::test;

namespace {

TensorType f32(std::vector<int64_t> Dims) {
  return TensorType(DTypeKind::F32, Dims);
}

TensorId result(Graph &G, OpId O, unsigned I = 0) {
  return G.getOp(O).Results[I];
}

/// x -> MatMul(w1) -> Add(b1) -> Relu -> MatMul(w2) -> Add(b2) -> y.
Graph buildMLP() {
  Graph G;
  G.setName("mlp");
  G.setOpset("", 17);
  TensorId X = G.addInput("x", f32({8, 16}));
  TensorId W1 = G.addWeight("w1", f32({16, 32}));
  TensorId B1 = G.addWeight("b1", f32({32}));
  TensorId W2 = G.addWeight("w2", f32({32, 10}));
  TensorId B2 = G.addWeight("b2", f32({10}));
  OpId MM1 = G.addOp("mm1", "", "MatMul", {X, W1}, {{"h1", f32({8, 32})}});
  OpId Add1 =
      G.addOp("add1", "", "Add", {result(G, MM1), B1}, {{"a1", f32({8, 32})}});
  OpId Relu =
      G.addOp("relu", "", "Relu", {result(G, Add1)}, {{"r1", f32({8, 32})}});
  OpId MM2 = G.addOp("mm2", "", "MatMul", {result(G, Relu), W2},
                     {{"h2", f32({8, 10})}});
  OpId Add2 =
      G.addOp("add2", "", "Add", {result(G, MM2), B2}, {{"y", f32({8, 10})}});
  G.addOutput(result(G, Add2));
  return G;
}

std::string annotation(const Graph &G, llvm::StringRef Op,
                       llvm::StringRef Name) {
  OpId O = G.lookupOp(Op);
  if (O == NoId)
    return "<no op " + Op.str() + ">";
  const Attribute *A = G.getOp(O).Annotations.get(Name);
  return A ? A->getString() : "<none>";
}

/// Operand or result names of \p Op, "none" for absent ones.
std::vector<std::string> names(const Graph &G, llvm::ArrayRef<TensorId> Ts) {
  std::vector<std::string> N;
  for (TensorId T : Ts)
    N.push_back(T == NoId ? "none" : G.getTensor(T).Name.str());
  return N;
}
std::vector<std::string> operandNames(const Graph &G, llvm::StringRef Op) {
  return names(G, G.getOp(G.lookupOp(Op)).Operands);
}
std::vector<std::string> resultNames(const Graph &G, llvm::StringRef Op) {
  return names(G, G.getOp(G.lookupOp(Op)).Results);
}

using Names = std::vector<std::string>;

void expectVerifies(const Graph &G) {
  llvm::Error Err = verifyGraph(G);
  EXPECT_FALSE(bool(Err)) << llvm::toString(std::move(Err));
}

TEST(TrainingGraphTest, MLP) {
  Graph G = buildMLP();
  ASSERT_FALSE(bool(buildTrainingGraph(G)));
  expectVerifies(G);

  // Phases in order: 5 forward, the loss and its seed, 6 backward (the
  // loss's and the forward ops'), 4 updates.
  std::vector<std::string> Phases;
  for (const Op &O : G.ops())
    Phases.push_back(O.Annotations.get("phase")->getString());
  std::vector<std::string> Want;
  Want.insert(Want.end(), 5, "forward");
  Want.insert(Want.end(), 2, "loss");
  Want.insert(Want.end(), 6, "backward");
  Want.insert(Want.end(), 4, "update");
  EXPECT_EQ(Phases, Want);

  // The loss and its seed.
  EXPECT_EQ(G.getOp(G.lookupOp("loss")).Type, "ReduceSum");
  EXPECT_EQ(operandNames(G, "loss"), Names({"y"}));
  EXPECT_EQ(G.getTensor(G.lookupTensor("loss")).Type, f32({}));
  EXPECT_EQ(resultNames(G, "loss/seed"), Names({"loss/grad"}));

  // Backward ops in reverse order, each colocated with its forward op.
  std::vector<std::string> Backward;
  for (const Op &O : G.ops())
    if (O.Annotations.get("phase")->getString() == "backward") {
      Backward.push_back(O.Name.str());
      EXPECT_EQ(O.Domain, "dp");
      std::string Fwd = llvm::StringRef(O.Name).drop_back(5).str();
      EXPECT_EQ(O.Name.str(), Fwd + "/grad");
      EXPECT_EQ(O.Type.str(), G.getOp(G.lookupOp(Fwd)).Type.str() + "Grad");
      EXPECT_EQ(annotation(G, O.Name, "colocate"), Fwd);
    }
  EXPECT_EQ(Backward, Names({"loss/grad", "add2/grad", "mm2/grad", "relu/grad",
                             "add1/grad", "mm1/grad"}));

  // Operands: result gradients, then what the rule reads.
  EXPECT_EQ(operandNames(G, "add2/grad"), Names({"y/grad"}));
  EXPECT_EQ(resultNames(G, "add2/grad"), Names({"h2/grad", "b2/grad"}));
  EXPECT_EQ(operandNames(G, "mm2/grad"), Names({"h2/grad", "r1", "w2"}));
  EXPECT_EQ(resultNames(G, "mm2/grad"), Names({"r1/grad", "w2/grad"}));
  EXPECT_EQ(operandNames(G, "relu/grad"), Names({"r1/grad", "r1"}));
  EXPECT_EQ(resultNames(G, "relu/grad"), Names({"a1/grad"}));
  EXPECT_EQ(resultNames(G, "mm1/grad"), Names({"x/grad", "w1/grad"}));
  // The ReduceSum's backward op makes the seed of y's shape.
  EXPECT_EQ(G.getQualifiedType(G.lookupOp("loss/grad")), "dp::ReduceSumGrad");
  EXPECT_EQ(operandNames(G, "loss/grad"), Names({"loss/grad"}));
  EXPECT_EQ(resultNames(G, "loss/grad"), Names({"y/grad"}));
  EXPECT_EQ(G.getTensor(G.lookupTensor("y/grad")).Type, f32({8, 10}));
  EXPECT_EQ(annotation(G, "loss/seed", "colocate"), "loss");

  // Gradients have their tensors' types.
  for (const char *T : {"x", "w1", "b1", "h1", "a1", "r1", "w2", "b2", "y"})
    EXPECT_EQ(G.getTensor(G.lookupTensor(std::string(T) + "/grad")).Type,
              G.getTensor(G.lookupTensor(T)).Type)
        << T;

  // One Adam update per weight, colocated with its first reader, whose
  // result is a graph output.
  llvm::StringMap<std::string> Reader = {
      {"w1", "mm1"}, {"b1", "add1"}, {"w2", "mm2"}, {"b2", "add2"}};
  for (const auto &KV : Reader) {
    std::string Op = KV.getKey().str() + "/update";
    OpId U = G.lookupOp(Op);
    ASSERT_NE(U, NoId) << Op;
    EXPECT_EQ(G.getQualifiedType(U), "dp::AdamUpdate");
    EXPECT_EQ(G.getOp(U).Attrs.get("state_copies")->getInt(), 2);
    EXPECT_EQ(annotation(G, Op, "colocate"), KV.getValue());
    EXPECT_EQ(operandNames(G, Op),
              Names({KV.getKey().str(), KV.getKey().str() + "/grad"}));
    EXPECT_EQ(resultNames(G, Op), Names({KV.getKey().str() + "/updated"}));
    EXPECT_TRUE(llvm::is_contained(G.getOutputs(), G.getOp(U).Results[0]));
  }
  EXPECT_EQ(G.getOutputs().size(), 5u);
  EXPECT_TRUE(llvm::any_of(
      G.getOpsets(), [](const OpsetImport &I) { return I.Domain == "dp"; }));
}

TEST(TrainingGraphTest, InputGradientsCanBeOff) {
  Graph G = buildMLP();
  TrainingGraphOptions Opts;
  Opts.InputGradients = false;
  ASSERT_FALSE(bool(buildTrainingGraph(G, Opts)));
  expectVerifies(G);
  EXPECT_EQ(resultNames(G, "mm1/grad"), Names({"none", "w1/grad"}));
  EXPECT_EQ(G.lookupTensor("x/grad"), NoId);
}

TEST(TrainingGraphTest, Optimizers) {
  struct Case {
    OptimizerKind Kind;
    const char *Type;
    int64_t Copies;
  } Cases[] = {{OptimizerKind::SGD, "dp::SGDUpdate", 0},
               {OptimizerKind::Momentum, "dp::MomentumUpdate", 1},
               {OptimizerKind::Adam, "dp::AdamUpdate", 2}};
  for (const Case &C : Cases) {
    Graph G = buildMLP();
    TrainingGraphOptions Opts;
    Opts.Optimizer = C.Kind;
    ASSERT_FALSE(bool(buildTrainingGraph(G, Opts)));
    expectVerifies(G);
    unsigned Updates = 0;
    for (OpId O = 0, E = G.getNumOps(); O != E; ++O) {
      if (annotation(G, G.getOp(O).Name, "phase") != "update")
        continue;
      ++Updates;
      EXPECT_EQ(G.getQualifiedType(O), C.Type);
      EXPECT_EQ(G.getOp(O).Attrs.get("state_copies")->getInt(), C.Copies);
    }
    EXPECT_EQ(Updates, 4u) << C.Type;
  }
}

TEST(TrainingGraphTest, SmallCNN) {
  Graph G;
  G.setName("cnn");
  G.setOpset("", 17);
  TensorId X = G.addInput("x", f32({2, 3, 8, 8}));
  TensorId W = G.addWeight("conv.w", f32({4, 3, 3, 3}));
  TensorId B = G.addWeight("conv.b", f32({4}));
  TensorId FW = G.addWeight("fc.w", f32({64, 10}));
  TensorId FB = G.addWeight("fc.b", f32({10}));
  AttributeList ConvAttrs;
  ConvAttrs.set("pads", Attribute::getInts({1, 1, 1, 1}));
  ConvAttrs.set("kernel_shape", Attribute::getInts({3, 3}));
  OpId Conv = G.addOp("conv", "", "Conv", {X, W, B}, {{"c", f32({2, 4, 8, 8})}},
                      ConvAttrs);
  OpId Relu = G.addOp("relu", "", "Relu", {result(G, Conv)},
                      {{"r", f32({2, 4, 8, 8})}});
  AttributeList PoolAttrs;
  PoolAttrs.set("kernel_shape", Attribute::getInts({2, 2}));
  PoolAttrs.set("strides", Attribute::getInts({2, 2}));
  OpId Pool = G.addOp("pool", "", "MaxPool", {result(G, Relu)},
                      {{"p", f32({2, 4, 4, 4})}}, PoolAttrs);
  // The shape path carries no gradient.
  OpId Shape = G.addOp("shape", "", "Shape", {result(G, Pool)},
                       {{"s", TensorType(DTypeKind::I64, {4})}});
  OpId Flat = G.addOp("flatten", "", "Flatten", {result(G, Pool)},
                      {{"f", f32({2, 64})}});
  OpId Fc = G.addOp("fc", "", "Gemm", {result(G, Flat), FW, FB},
                    {{"y", f32({2, 10})}});
  OpId Arg = G.addOp("argmax", "", "ArgMax", {result(G, Fc)},
                     {{"label", TensorType(DTypeKind::I64, {2, 1})}});
  G.addOutput(result(G, Fc));
  G.addOutput(result(G, Arg));
  G.addOutput(result(G, Shape));
  ASSERT_FALSE(bool(buildTrainingGraph(G)));
  expectVerifies(G);

  // Forward 7, loss 2 (one float output), backward 6, updates 4.
  llvm::StringMap<unsigned> Count;
  for (const Op &O : G.ops())
    ++Count[O.Annotations.get("phase")->getString()];
  EXPECT_EQ(Count["forward"], 7u);
  EXPECT_EQ(Count["loss"], 2u);
  EXPECT_EQ(Count["backward"], 6u);
  EXPECT_EQ(Count["update"], 4u);
  EXPECT_EQ(G.lookupOp("shape/grad"), NoId);
  EXPECT_EQ(G.lookupOp("argmax/grad"), NoId);

  EXPECT_EQ(G.getQualifiedType(G.lookupOp("conv/grad")), "dp::ConvGrad");
  EXPECT_EQ(operandNames(G, "conv/grad"), Names({"c/grad", "x", "conv.w"}));
  EXPECT_EQ(resultNames(G, "conv/grad"),
            Names({"x/grad", "conv.w/grad", "conv.b/grad"}));
  // ONNX attributes are copied.
  EXPECT_EQ(G.getOp(G.lookupOp("conv/grad")).Attrs, ConvAttrs);
  EXPECT_EQ(operandNames(G, "pool/grad"), Names({"p/grad", "r", "p"}));
  EXPECT_EQ(operandNames(G, "fc/grad"), Names({"y/grad", "f", "fc.w"}));
  EXPECT_EQ(operandNames(G, "flatten/grad"), Names({"f/grad"}));
  EXPECT_EQ(annotation(G, "conv.w/update", "colocate"), "conv");
  EXPECT_EQ(annotation(G, "fc.b/update", "colocate"), "fc");
}

TEST(TrainingGraphTest, FanOutIsSummed) {
  Graph G;
  G.setName("fanout");
  G.setOpset("", 17);
  TensorId X = G.addInput("x", f32({4}));
  TensorId W = G.addWeight("w", f32({4}));
  OpId Relu = G.addOp("relu", "", "Relu", {X}, {{"r", f32({4})}});
  TensorId R = result(G, Relu);
  OpId Mul = G.addOp("mul", "", "Mul", {R, W}, {{"y1", f32({4})}});
  OpId Add = G.addOp("add", "", "Add", {R, W}, {{"y2", f32({4})}});
  OpId Sq = G.addOp("square", "", "Mul", {W, W}, {{"y3", f32({4})}});
  G.addOutput(result(G, Mul));
  G.addOutput(result(G, Add));
  G.addOutput(result(G, Sq));
  ASSERT_FALSE(bool(buildTrainingGraph(G)));
  expectVerifies(G);

  // The loss adds the three outputs' sums.
  EXPECT_EQ(G.getOp(G.lookupOp("loss")).Type, "Add");
  EXPECT_EQ(G.getOp(G.lookupOp("y1/loss")).Type, "ReduceSum");

  // r feeds two ops: a Sum with r's producer.
  OpId RSum = G.lookupOp("r/grad/sum");
  ASSERT_NE(RSum, NoId);
  EXPECT_EQ(G.getOp(RSum).Type, "Sum");
  EXPECT_EQ(G.getOp(RSum).Domain, "");
  EXPECT_EQ(operandNames(G, "r/grad/sum").size(), 2u);
  EXPECT_EQ(resultNames(G, "r/grad/sum"), Names({"r/grad"}));
  EXPECT_EQ(annotation(G, "r/grad/sum", "colocate"), "relu");
  EXPECT_EQ(annotation(G, "r/grad/sum", "phase"), "backward");
  EXPECT_EQ(operandNames(G, "relu/grad"), Names({"r/grad", "r"}));

  // w is read four times (twice by square): one Sum of four partials,
  // colocated with w's first reader.
  OpId WSum = G.lookupOp("w/grad/sum");
  ASSERT_NE(WSum, NoId);
  EXPECT_EQ(operandNames(G, "w/grad/sum"),
            Names({"w/grad.0", "w/grad.1", "w/grad.2", "w/grad.3"}));
  EXPECT_EQ(resultNames(G, "square/grad"), Names({"w/grad.0", "w/grad.1"}));
  EXPECT_EQ(annotation(G, "w/grad/sum", "colocate"), "mul");
  EXPECT_EQ(operandNames(G, "w/update"), Names({"w", "w/grad"}));
  EXPECT_EQ(annotation(G, "w/update", "colocate"), "mul");
}

TEST(TrainingGraphTest, GenericRuleForControlFlowAndOtherDomains) {
  Graph G;
  G.setName("generic");
  G.setOpset("", 17);
  G.setOpset("com.example", 1);
  TensorId Cond = G.addInput("cond", TensorType(DTypeKind::Bool, {}));
  TensorId X = G.addInput("x", f32({4}));
  TensorId W = G.addWeight("w", f32({4}));
  OpId Custom =
      G.addOp("custom", "com.example", "Fancy", {X, W}, {{"c", f32({4})}});
  OpId If =
      G.addOp("if", "", "If", {Cond, result(G, Custom), W}, {{"y", f32({4})}});
  G.getOp(If).Annotations.set("implicit_operands", Attribute::getInt(2));
  G.addOutput(result(G, If));
  ASSERT_FALSE(bool(buildTrainingGraph(G)));
  expectVerifies(G);
  EXPECT_EQ(G.getQualifiedType(G.lookupOp("if/grad")), "dp::IfGrad");
  EXPECT_EQ(operandNames(G, "if/grad"), Names({"y/grad", "cond", "c", "w"}));
  EXPECT_EQ(resultNames(G, "if/grad"), Names({"none", "c/grad", "w/grad.0"}));
  EXPECT_EQ(G.getQualifiedType(G.lookupOp("custom/grad")), "dp::FancyGrad");
  EXPECT_EQ(operandNames(G, "custom/grad"), Names({"c/grad", "x", "w"}));
  EXPECT_EQ(resultNames(G, "custom/grad"), Names({"x/grad", "w/grad.1"}));
}

TEST(TrainingGraphTest, NonF32OutputsAreCastForTheLoss) {
  Graph G;
  G.setName("half");
  G.setOpset("", 17);
  TensorId X = G.addInput("x", TensorType(DTypeKind::F16, {4}));
  TensorId W = G.addWeight("w", TensorType(DTypeKind::F16, {4}));
  OpId Mul = G.addOp("mul", "", "Mul", {X, W},
                     {{"y", TensorType(DTypeKind::F16, {4})}});
  G.addOutput(result(G, Mul));
  ASSERT_FALSE(bool(buildTrainingGraph(G)));
  expectVerifies(G);
  EXPECT_EQ(G.getOp(G.lookupOp("loss")).Type, "Cast");
  EXPECT_EQ(G.getTensor(G.lookupTensor("y/loss")).Type,
            TensorType(DTypeKind::F16, {}));
  EXPECT_EQ(G.getTensor(G.lookupTensor("y/grad")).Type,
            TensorType(DTypeKind::F16, {4}));
  EXPECT_EQ(G.getTensor(G.lookupTensor("loss/grad")).Type, f32({}));
}

TEST(TrainingGraphTest, Errors) {
  {
    // No floating-point output.
    Graph G;
    G.setName("ints");
    TensorId X = G.addInput("x", TensorType(DTypeKind::I64, {4}));
    OpId N = G.addOp("neg", "", "Neg", {X},
                     {{"y", TensorType(DTypeKind::I64, {4})}});
    G.addOutput(result(G, N));
    std::vector<Diag> Diags = collectErrors(buildTrainingGraph(G));
    ASSERT_EQ(Diags.size(), 1u);
    EXPECT_EQ(Diags[0].Message,
              "the graph has no floating-point output to build a loss from");
    EXPECT_EQ(G.getOp(0).Annotations.size(), 0u);
  }
  {
    // Nothing to train: the output does not depend on a weight or a
    // floating-point input.
    Graph G;
    G.setName("data");
    TensorId X = G.addInput("x", TensorType(DTypeKind::I64, {4}));
    TensorId W = G.addWeight("w", f32({4}));
    OpId C = G.addOp("cast", "", "Cast", {X}, {{"xf", f32({4})}});
    OpId S = G.addOp("shape", "", "Shape", {W},
                     {{"s", TensorType(DTypeKind::I64, {1})}});
    (void)S;
    G.addOutput(result(G, C));
    std::vector<Diag> Diags = collectErrors(buildTrainingGraph(G));
    ASSERT_EQ(Diags.size(), 1u);
    EXPECT_NE(Diags[0].Message.find("there is nothing to train"),
              std::string::npos);
    EXPECT_EQ(G.getNumOps(), 2u);
  }
  {
    // Twice.
    Graph G = buildMLP();
    ASSERT_FALSE(bool(buildTrainingGraph(G)));
    std::vector<Diag> Diags = collectErrors(buildTrainingGraph(G));
    ASSERT_EQ(Diags.size(), 1u);
    EXPECT_EQ(Diags[0].Loc.Node, "mm1");
  }
}

TEST(TrainingGraphTest, ParseOptions) {
  using KVs = std::vector<std::pair<std::string, std::string>>;
  auto Opts = TrainingGraphPass::parseOptions(
      KVs{{"optimizer", "momentum"}, {"input-grads", "false"}});
  ASSERT_TRUE(bool(Opts));
  EXPECT_EQ(Opts->Optimizer, OptimizerKind::Momentum);
  EXPECT_FALSE(Opts->InputGradients);
  EXPECT_EQ(TrainingGraphPass::parseOptions(KVs{})->Optimizer,
            OptimizerKind::Adam);
  std::vector<Diag> Diags = collectErrors(
      TrainingGraphPass::parseOptions(KVs{{"optimizer", "rmsprop"}})
          .takeError());
  ASSERT_EQ(Diags.size(), 1u);
  EXPECT_EQ(Diags[0].Message, "training-graph: optimizer must be sgd, "
                              "momentum or adam, not 'rmsprop'");
}

} // namespace
