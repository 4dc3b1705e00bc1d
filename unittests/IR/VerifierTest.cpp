//===- VerifierTest.cpp - Checking the IR invariants ----------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/IR/Verifier.h"
#include "dp/IR/Graph.h"
#include "dp/IR/PassManager.h"
#include "dp/Support/Diagnostics.h"

#include "llvm/Support/raw_ostream.h"

#include "DiagnosticsTestUtil.h"

#include "gtest/gtest.h"

#include <string>
#include <vector>

using namespace dp;
using namespace dp::test;

namespace {

std::vector<Diag> verifyErrors(const Graph &G) {
  return collectErrors(verifyGraph(G));
}


/// Whether some error is about \p Node and \p Tensor and mentions \p Text.
bool hasError(const std::vector<Diag> &Diags, llvm::StringRef Node,
              llvm::StringRef Tensor, llvm::StringRef Text) {
  for (const Diag &D : Diags)
    if (D.Loc.Node == Node && D.Loc.Tensor == Tensor &&
        llvm::StringRef(D.Message).contains(Text))
      return true;
  return false;
}

/// x -> relu -> r -> add(r, w) -> s -> neg -> out
Graph makeChain() {
  Graph G;
  G.setName("chain");
  G.setOpset("", 17);
  TensorType T(DTypeKind::F32, {2, 3});
  TensorId X = G.addInput("x", T);
  TensorId W = G.addWeight("w", TensorType(DTypeKind::F32, {3}));
  OpId Relu = G.addOp("relu", "", "Relu", {X}, {{"r", T}});
  OpId Add =
      G.addOp("add", "", "Add", {G.getOp(Relu).Results[0], W}, {{"s", T}});
  OpId Neg = G.addOp("neg", "", "Neg", {G.getOp(Add).Results[0]}, {{"out", T}});
  G.addOutput(G.getOp(Neg).Results[0]);
  return G;
}

TensorId tensor(const Graph &G, llvm::StringRef Name) {
  TensorId T = G.lookupTensor(Name);
  EXPECT_NE(T, NoId) << Name.str();
  return T;
}

//===----------------------------------------------------------------------===//
// verifyGraph
//===----------------------------------------------------------------------===//

TEST(VerifierTest, ValidGraphVerifies) {
  std::vector<Diag> Diags = verifyErrors(makeChain());
  EXPECT_TRUE(Diags.empty()) << describe(Diags);
}

TEST(VerifierTest, OperandProducedByALaterOpIsReported) {
  Graph G = makeChain();
  TensorId X = tensor(G, "x"), S = tensor(G, "s");
  // relu reads s, which add (after it) produces; the use lists follow.
  G.getOp(G.lookupOp("relu")).Operands[0] = S;
  G.getTensor(X).Uses.clear();
  G.getTensor(S).Uses.insert(G.getTensor(S).Uses.begin(),
                             Use{G.lookupOp("relu"), 0});
  std::vector<Diag> Diags = verifyErrors(G);
  ASSERT_EQ(Diags.size(), 1u) << describe(Diags);
  EXPECT_EQ(Diags[0].Loc.Node, "relu");
  EXPECT_EQ(Diags[0].Loc.Tensor, "s");
  EXPECT_TRUE(llvm::StringRef(Diags[0].Message).contains("topological order"))
      << Diags[0].Message;
}

TEST(VerifierTest, OpReadingItsOwnResultIsReported) {
  Graph G = makeChain();
  TensorId S = tensor(G, "s"), W = tensor(G, "w");
  OpId Add = G.lookupOp("add");
  G.getOp(Add).Operands[1] = S;
  G.getTensor(W).Uses.clear();
  G.getTensor(S).Uses.insert(G.getTensor(S).Uses.begin(), Use{Add, 1});
  std::vector<Diag> Diags = verifyErrors(G);
  ASSERT_EQ(Diags.size(), 1u) << describe(Diags);
  EXPECT_TRUE(hasError(Diags, "add", "s", "earlier op")) << describe(Diags);
}

TEST(VerifierTest, MissingUseIsReported) {
  Graph G = makeChain();
  G.getTensor(tensor(G, "r")).Uses.clear();
  std::vector<Diag> Diags = verifyErrors(G);
  ASSERT_EQ(Diags.size(), 1u) << describe(Diags);
  EXPECT_TRUE(hasError(Diags, "relu", "r", "use list")) << describe(Diags);
}

TEST(VerifierTest, ExtraUseIsReported) {
  Graph G = makeChain();
  G.getTensor(tensor(G, "w")).Uses.push_back(Use{G.lookupOp("neg"), 0});
  std::vector<Diag> Diags = verifyErrors(G);
  ASSERT_EQ(Diags.size(), 1u) << describe(Diags);
  EXPECT_TRUE(hasError(Diags, "", "w", "use list")) << describe(Diags);
}

TEST(VerifierTest, UseWithTheWrongOperandIndexIsReported) {
  Graph G = makeChain();
  G.getTensor(tensor(G, "r")).Uses[0].Operand = 1;
  std::vector<Diag> Diags = verifyErrors(G);
  ASSERT_EQ(Diags.size(), 1u) << describe(Diags);
  EXPECT_TRUE(hasError(Diags, "relu", "r", "use list")) << describe(Diags);
}

TEST(VerifierTest, UndefinedElementTypeIsReported) {
  Graph G = makeChain();
  G.getTensor(tensor(G, "s")).Type.DType = DTypeKind::Undefined;
  std::vector<Diag> Diags = verifyErrors(G);
  ASSERT_EQ(Diags.size(), 1u) << describe(Diags);
  EXPECT_TRUE(hasError(Diags, "add", "s", "no element type"))
      << describe(Diags);
}

TEST(VerifierTest, NonStaticInputIsReported) {
  Graph G = makeChain();
  G.getTensor(tensor(G, "x")).Type.Dims[0] = UnknownDim;
  std::vector<Diag> Diags = verifyErrors(G);
  ASSERT_EQ(Diags.size(), 1u) << describe(Diags);
  EXPECT_TRUE(hasError(Diags, "", "x", "no static shape")) << describe(Diags);
}

TEST(VerifierTest, NonStaticResultIsReported) {
  Graph G = makeChain();
  G.getTensor(tensor(G, "out")).Type.Dims[1] = UnknownDim;
  std::vector<Diag> Diags = verifyErrors(G);
  ASSERT_EQ(Diags.size(), 1u) << describe(Diags);
  EXPECT_TRUE(hasError(Diags, "neg", "out", "no static shape"))
      << describe(Diags);
}

TEST(VerifierTest, ElementCountOverflowIsReported) {
  Graph G = makeChain();
  G.getTensor(tensor(G, "w")).Type =
      TensorType(DTypeKind::F32, {int64_t(1) << 62, 4});
  std::vector<Diag> Diags = verifyErrors(G);
  ASSERT_EQ(Diags.size(), 1u) << describe(Diags);
  EXPECT_TRUE(hasError(Diags, "", "w", "overflows")) << describe(Diags);
}

TEST(VerifierTest, ByteSizeOverflowIsReported) {
  Graph G = makeChain();
  G.getTensor(tensor(G, "out")).Type =
      TensorType(DTypeKind::F64, {int64_t(1) << 61});
  std::vector<Diag> Diags = verifyErrors(G);
  ASSERT_EQ(Diags.size(), 1u) << describe(Diags);
  EXPECT_TRUE(hasError(Diags, "neg", "out", "overflows")) << describe(Diags);
}

TEST(VerifierTest, StringTensorsHaveNoByteSizeToOverflow) {
  Graph G = makeChain();
  G.getTensor(tensor(G, "w")).Type =
      TensorType(DTypeKind::String, {int64_t(1) << 61});
  std::vector<Diag> Diags = verifyErrors(G);
  EXPECT_TRUE(Diags.empty()) << describe(Diags);
}

TEST(VerifierTest, DuplicateOutputIsReported) {
  Graph G = makeChain();
  G.addOutput(tensor(G, "out"));
  std::vector<Diag> Diags = verifyErrors(G);
  ASSERT_EQ(Diags.size(), 1u) << describe(Diags);
  EXPECT_TRUE(hasError(Diags, "", "out", "output twice")) << describe(Diags);
}

TEST(VerifierTest, OutputThatDoesNotExistIsReported) {
  Graph G = makeChain();
  G.addOutput(TensorId(G.getNumTensors() + 5));
  std::vector<Diag> Diags = verifyErrors(G);
  ASSERT_EQ(Diags.size(), 1u) << describe(Diags);
  EXPECT_TRUE(hasError(Diags, "", "", "does not exist")) << describe(Diags);
}

TEST(VerifierTest, OperandThatDoesNotExistIsReported) {
  Graph G = makeChain();
  OpId Neg = G.lookupOp("neg");
  G.getOp(Neg).Operands[0] = TensorId(G.getNumTensors() + 5);
  G.getTensor(tensor(G, "s")).Uses.clear();
  std::vector<Diag> Diags = verifyErrors(G);
  ASSERT_EQ(Diags.size(), 1u) << describe(Diags);
  EXPECT_TRUE(hasError(Diags, "neg", "", "operand 0 does not exist"))
      << describe(Diags);
}

TEST(VerifierTest, ResultIndexMismatchIsReported) {
  Graph G = makeChain();
  G.getTensor(tensor(G, "s")).ResultIndex = 1;
  std::vector<Diag> Diags = verifyErrors(G);
  EXPECT_TRUE(hasError(Diags, "add", "s", "not owned by this op"))
      << describe(Diags);
  EXPECT_TRUE(hasError(Diags, "add", "s", "not a result of its producer"))
      << describe(Diags);
  EXPECT_EQ(Diags.size(), 2u) << describe(Diags);
}

TEST(VerifierTest, WeightThatIsNotAWeightIsReported) {
  Graph G = makeChain();
  G.getTensor(tensor(G, "w")).Kind = TensorKind::Input;
  std::vector<Diag> Diags = verifyErrors(G);
  ASSERT_EQ(Diags.size(), 1u) << describe(Diags);
  EXPECT_TRUE(hasError(Diags, "", "w", "weight is not a weight"))
      << describe(Diags);
}

// Every tensor of kind Input or Weight must be declared as one (Graph.h:
// "every tensor is a graph input, a weight, or the result of exactly one
// op"); otherwise its text would use %r without declaring it.
TEST(VerifierTest, UndeclaredInputIsReported) {
  Graph G = makeChain();
  // r stops being relu's result and claims to be a graph input, but it is
  // not one of the graph's declared inputs.
  TensorId R = tensor(G, "r");
  G.getOp(G.lookupOp("relu")).Results[0] = NoId;
  G.getTensor(R).Kind = TensorKind::Input;
  G.getTensor(R).Producer = NoId;
  std::vector<Diag> Diags = verifyErrors(G);
  ASSERT_EQ(Diags.size(), 1u) << describe(Diags);
  EXPECT_EQ(Diags[0].Loc.Tensor, "r");
}

// As above, for a tensor of kind Weight.
TEST(VerifierTest, UndeclaredWeightIsReported) {
  Graph G = makeChain();
  TensorId R = tensor(G, "r");
  G.getOp(G.lookupOp("relu")).Results[0] = NoId;
  G.getTensor(R).Kind = TensorKind::Weight;
  G.getTensor(R).Producer = NoId;
  std::vector<Diag> Diags = verifyErrors(G);
  ASSERT_EQ(Diags.size(), 1u) << describe(Diags);
  EXPECT_EQ(Diags[0].Loc.Tensor, "r");
}

TEST(VerifierTest, DuplicateTensorNameIsReported) {
  Graph G = makeChain();
  // Tensor s, produced by add, takes the name of r.
  G.getTensor(tensor(G, "s")).Name = G.getTensor(tensor(G, "r")).Name;
  std::vector<Diag> Diags = verifyErrors(G);
  ASSERT_EQ(Diags.size(), 1u) << describe(Diags);
  EXPECT_TRUE(hasError(Diags, "add", "r", "tensor name is not unique"))
      << describe(Diags);
}

TEST(VerifierTest, DuplicateOpNameIsReported) {
  Graph G = makeChain();
  G.getOp(G.lookupOp("neg")).Name = G.getOp(G.lookupOp("relu")).Name;
  std::vector<Diag> Diags = verifyErrors(G);
  ASSERT_EQ(Diags.size(), 1u) << describe(Diags);
  EXPECT_TRUE(hasError(Diags, "relu", "", "op name is not unique"))
      << describe(Diags);
}

TEST(VerifierTest, OpWithoutTypeIsReported) {
  Graph G = makeChain();
  G.getOp(G.lookupOp("add")).Type = "";
  std::vector<Diag> Diags = verifyErrors(G);
  ASSERT_EQ(Diags.size(), 1u) << describe(Diags);
  EXPECT_TRUE(hasError(Diags, "add", "", "no type")) << describe(Diags);
}

TEST(VerifierTest, GraphWithoutNameIsReported) {
  Graph G = makeChain();
  G.setName("");
  std::vector<Diag> Diags = verifyErrors(G);
  ASSERT_EQ(Diags.size(), 1u) << describe(Diags);
  EXPECT_TRUE(hasError(Diags, "", "", "no name")) << describe(Diags);
}

TEST(VerifierTest, IndependentErrorsAreReportedTogether) {
  Graph G = makeChain();
  G.getTensor(tensor(G, "x")).Type.Dims[0] = UnknownDim;
  G.addOutput(tensor(G, "out"));
  std::vector<Diag> Diags = verifyErrors(G);
  EXPECT_EQ(Diags.size(), 2u) << describe(Diags);
  EXPECT_TRUE(hasError(Diags, "", "x", "no static shape")) << describe(Diags);
  EXPECT_TRUE(hasError(Diags, "", "out", "output twice")) << describe(Diags);
}

TEST(VerifierTest, LongErrorListsAreCapped) {
  Graph G;
  G.setName("many");
  for (unsigned I = 0; I != 30; ++I)
    G.addInput("x" + std::to_string(I), TensorType(DTypeKind::Undefined, {}));
  std::vector<Diag> Diags = verifyErrors(G);
  ASSERT_EQ(Diags.size(), 21u) << describe(Diags);
  EXPECT_EQ(Diags[0].Loc.Tensor, "x0");
  EXPECT_EQ(Diags[19].Loc.Tensor, "x19");
  EXPECT_EQ(Diags[20].Message, "10 more errors not shown");
}

//===----------------------------------------------------------------------===//
// The pass manager's -verify-each
//===----------------------------------------------------------------------===//

/// Leaves the graph alone.
class NoOpPass {
public:
  static llvm::StringRef name() { return "test-no-op"; }
  llvm::Error run(Graph &G, PassContext &Ctx) { return llvm::Error::success(); }
};

/// Breaks the use list of tensor "r".
class BreakUseListPass {
public:
  static llvm::StringRef name() { return "test-break-use-list"; }
  llvm::Error run(Graph &G, PassContext &Ctx) {
    G.getTensor(G.lookupTensor("r")).Uses.clear();
    return llvm::Error::success();
  }
};

/// Fails without touching the graph.
class FailingPass {
public:
  static llvm::StringRef name() { return "test-fail"; }
  llvm::Error run(Graph &G, PassContext &Ctx) {
    return makeNodeError("relu", "test failure");
  }
};

/// Counts how often it runs.
class CountingPass {
public:
  explicit CountingPass(unsigned &Runs) : Runs(&Runs) {}
  static llvm::StringRef name() { return "test-count"; }
  llvm::Error run(Graph &G, PassContext &Ctx) {
    ++*Runs;
    return llvm::Error::success();
  }
  void printPipeline(llvm::raw_ostream &OS) const {
    OS << name() << "{runs=" << *Runs << '}';
  }

private:
  unsigned *Runs;
};

TEST(PassManagerTest, VerifyEachNamesThePassThatBrokeTheGraph) {
  Graph G = makeChain();
  unsigned Runs = 0;
  PassManager PM;
  PM.addPass(NoOpPass());
  PM.addPass(BreakUseListPass());
  PM.addPass(CountingPass(Runs));
  PM.setVerifyEach(true);
  PassContext Ctx;
  std::vector<Diag> Diags = collectErrors(PM.run(G, Ctx));
  ASSERT_EQ(Diags.size(), 2u) << describe(Diags);
  EXPECT_EQ(Diags[0].Message,
            "the graph is malformed after pass 'test-break-use-list'");
  EXPECT_TRUE(hasError(Diags, "relu", "r", "use list")) << describe(Diags);
  EXPECT_EQ(Runs, 0u) << "the pipeline went on after the broken graph";
}

TEST(PassManagerTest, VerifyEachAcceptsPassesThatKeepTheGraphValid) {
  Graph G = makeChain();
  unsigned Runs = 0;
  PassManager PM;
  PM.addPass(NoOpPass());
  PM.addPass(CountingPass(Runs));
  PM.setVerifyEach(true);
  PassContext Ctx;
  llvm::Error Err = PM.run(G, Ctx);
  EXPECT_FALSE(bool(Err)) << llvm::toString(std::move(Err));
  EXPECT_EQ(Runs, 1u);
}

TEST(PassManagerTest, WithoutVerifyEachPassesRunOnABrokenGraph) {
  Graph G = makeChain();
  unsigned Runs = 0;
  PassManager PM;
  PM.addPass(BreakUseListPass());
  PM.addPass(CountingPass(Runs));
  PassContext Ctx;
  llvm::Error Err = PM.run(G, Ctx);
  EXPECT_FALSE(bool(Err)) << llvm::toString(std::move(Err));
  EXPECT_EQ(Runs, 1u);
  EXPECT_FALSE(verifyErrors(G).empty());
}

TEST(PassManagerTest, VerifyPassFailsThePipeline) {
  Graph G = makeChain();
  PassManager PM;
  PM.addPass(BreakUseListPass());
  PM.addPass(VerifierPass());
  PassContext Ctx;
  std::vector<Diag> Diags = collectErrors(PM.run(G, Ctx));
  ASSERT_EQ(Diags.size(), 1u) << describe(Diags);
  EXPECT_TRUE(hasError(Diags, "relu", "r", "use list")) << describe(Diags);
}

TEST(PassManagerTest, PipelineStopsAtTheFirstFailingPass) {
  Graph G = makeChain();
  unsigned Runs = 0;
  PassManager PM;
  PM.addPass(FailingPass());
  PM.addPass(CountingPass(Runs));
  PM.setVerifyEach(true);
  PassContext Ctx;
  std::vector<Diag> Diags = collectErrors(PM.run(G, Ctx));
  ASSERT_EQ(Diags.size(), 1u) << describe(Diags);
  EXPECT_TRUE(hasError(Diags, "relu", "", "test failure")) << describe(Diags);
  EXPECT_EQ(Runs, 0u);
}

TEST(PassManagerTest, PrintsPipelineWithPassOptions) {
  unsigned Runs = 3;
  PassManager PM;
  PM.addPass(NoOpPass());
  PM.addPass(CountingPass(Runs));
  PM.addPass(VerifierPass());
  std::string S;
  llvm::raw_string_ostream OS(S);
  PM.printPipeline(OS);
  EXPECT_EQ(OS.str(), "test-no-op,test-count{runs=3},verify");
  ASSERT_EQ(PM.size(), 3u);
  EXPECT_EQ(PM.getPassName(1), "test-count");
}

} // namespace
