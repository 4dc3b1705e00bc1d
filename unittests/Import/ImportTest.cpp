//===- ImportTest.cpp - ONNX models to dp::Graph --------------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/IR/Graph.h"
#include "dp/IR/PassManager.h"
#include "dp/IR/Verifier.h"
#include "dp/Import/ONNXImporter.h"
#include "dp/Support/Diagnostics.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/MemoryBufferRef.h"
#include "llvm/Support/raw_ostream.h"

#include "onnx/onnx_pb.h"

#include "DiagnosticsTestUtil.h"

#include "gtest/gtest.h"

#include <cassert>
#include <string>
#include <vector>

using namespace dp;
using namespace dp::test;

namespace {

//===----------------------------------------------------------------------===//
// Building models
//===----------------------------------------------------------------------===//

constexpr int32_t F32 = onnx::TensorProto::FLOAT;
constexpr int32_t I64 = onnx::TensorProto::INT64;
constexpr int32_t Bool = onnx::TensorProto::BOOL;

onnx::ModelProto makeModel(const std::string &Name) {
  onnx::ModelProto M;
  M.set_ir_version(8);
  M.add_opset_import()->set_version(17);
  M.mutable_graph()->set_name(Name);
  return M;
}

/// Gives \p VI a tensor type; a dimension of UnknownDim has no value.
void setType(onnx::ValueInfoProto *VI, int32_t ElemType,
             llvm::ArrayRef<int64_t> Dims) {
  auto *TT = VI->mutable_type()->mutable_tensor_type();
  TT->set_elem_type(ElemType);
  auto *Shape = TT->mutable_shape();
  for (int64_t D : Dims) {
    auto *Dim = Shape->add_dim();
    if (D != UnknownDim)
      Dim->set_dim_value(D);
  }
}

onnx::ValueInfoProto *addInput(onnx::GraphProto &G, const std::string &Name,
                               int32_t ElemType, llvm::ArrayRef<int64_t> Dims) {
  onnx::ValueInfoProto *VI = G.add_input();
  VI->set_name(Name);
  setType(VI, ElemType, Dims);
  return VI;
}

/// Makes dimension \p Index of \p VI the symbolic dimension \p Param.
void setDimParam(onnx::ValueInfoProto *VI, int Index,
                 const std::string &Param) {
  VI->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(Index)
      ->set_dim_param(Param);
}

void addOutput(onnx::GraphProto &G, const std::string &Name, int32_t ElemType,
               llvm::ArrayRef<int64_t> Dims) {
  onnx::ValueInfoProto *VI = G.add_output();
  VI->set_name(Name);
  setType(VI, ElemType, Dims);
}

onnx::NodeProto *addNode(onnx::GraphProto &G, const std::string &Name,
                         const std::string &OpType,
                         const std::vector<std::string> &Inputs,
                         const std::vector<std::string> &Outputs) {
  onnx::NodeProto *N = G.add_node();
  N->set_name(Name);
  N->set_op_type(OpType);
  for (const std::string &In : Inputs)
    N->add_input(In);
  for (const std::string &Out : Outputs)
    N->add_output(Out);
  return N;
}

onnx::TensorProto *addInitializer(onnx::GraphProto &G, const std::string &Name,
                                  int32_t ElemType,
                                  llvm::ArrayRef<int64_t> Dims) {
  onnx::TensorProto *T = G.add_initializer();
  T->set_name(Name);
  T->set_data_type(ElemType);
  for (int64_t D : Dims)
    T->add_dims(D);
  return T;
}

/// Marks \p T as stored in the file \p Location, which does not exist.
void setExternal(onnx::TensorProto *T, const std::string &Location,
                 int64_t Length) {
  T->set_data_location(onnx::TensorProto::EXTERNAL);
  auto *Loc = T->add_external_data();
  Loc->set_key("location");
  Loc->set_value(Location);
  auto *Len = T->add_external_data();
  Len->set_key("length");
  Len->set_value(std::to_string(Length));
}

std::string serialize(const onnx::ModelProto &M) {
  std::string Bytes;
  EXPECT_TRUE(M.SerializeToString(&Bytes));
  return Bytes;
}

llvm::Expected<Graph> importBytes(llvm::StringRef Bytes,
                                  const ImportOptions &Opts = {}) {
  return importONNX(llvm::MemoryBufferRef(Bytes, "model.onnx"), Opts);
}

llvm::Expected<Graph> importModel(const onnx::ModelProto &M,
                                  const ImportOptions &Opts = {}) {
  std::string Bytes = serialize(M);
  return importBytes(Bytes, Opts);
}


bool contains(llvm::StringRef S, llvm::StringRef Part) {
  return S.contains(Part);
}

/// The type of tensor \p Name of \p G, or an Undefined type if there is no
/// such tensor.
TensorType typeOf(const Graph &G, llvm::StringRef Name) {
  TensorId T = G.lookupTensor(Name);
  if (T == NoId) {
    ADD_FAILURE() << "no tensor '" << Name.str() << "'";
    return TensorType();
  }
  return G.getTensor(T).Type;
}

std::string typeToString(const TensorType &T) {
  std::string S;
  llvm::raw_string_ostream OS(S);
  OS << T;
  return OS.str();
}

#define EXPECT_TYPE(G, Name, Expected)                                         \
  EXPECT_EQ(typeToString(typeOf(G, Name)), Expected) << "tensor " << Name

//===----------------------------------------------------------------------===//
// Weights
//===----------------------------------------------------------------------===//

/// x[2,6] -> MatMul(x, w) -> h, with w stored in a file that does not exist.
onnx::ModelProto makeExternalWeightModel() {
  onnx::ModelProto M = makeModel("external");
  onnx::GraphProto &G = *M.mutable_graph();
  addInput(G, "x", F32, {2, 6});
  setExternal(addInitializer(G, "w", F32, {6, 6}), "missing.weights", 144);
  setExternal(addInitializer(G, "ids", I64, {3}), "missing.weights", 24);
  addNode(G, "mm", "MatMul", {"x", "w"}, {"h"});
  addOutput(G, "h", F32, {UnknownDim, UnknownDim});
  return M;
}

TEST(ImportTest, ExternalFloatWeightImportsWithoutItsFile) {
  llvm::Expected<Graph> G = importModel(makeExternalWeightModel());
  ASSERT_TRUE(bool(G)) << describe(collectErrors(G.takeError()));
  TensorId W = G->lookupTensor("w");
  ASSERT_NE(W, NoId);
  EXPECT_EQ(G->getTensor(W).Kind, TensorKind::Weight);
  EXPECT_TYPE(*G, "w", "f32[6,6]");
  EXPECT_TYPE(*G, "h", "f32[2,6]");
}

/// x[2,6] -> MatMul(x, c) with c a Constant node whose value is stored in
/// a file that does not exist, of element type \p ElemType.
onnx::ModelProto makeExternalConstantModel(int32_t ElemType) {
  onnx::ModelProto M = makeModel("external-constant");
  onnx::GraphProto &G = *M.mutable_graph();
  addInput(G, "x", ElemType, {2, 6});
  onnx::NodeProto *C = addNode(G, "c", "Constant", {}, {"cv"});
  onnx::AttributeProto *A = C->add_attribute();
  A->set_name("value");
  A->set_type(onnx::AttributeProto::TENSOR);
  A->mutable_t()->set_data_type(ElemType);
  A->mutable_t()->add_dims(6);
  A->mutable_t()->add_dims(6);
  setExternal(A->mutable_t(), "missing.weights", 36 * 8);
  addNode(G, "mm", ElemType == F32 ? "MatMul" : "Add", {"x", "cv"}, {"h"});
  addOutput(G, "h", ElemType, {UnknownDim, UnknownDim});
  return M;
}

TEST(ImportTest, ExternalFloatConstantImportsWithoutItsFile) {
  llvm::Expected<Graph> G = importModel(makeExternalConstantModel(F32));
  ASSERT_TRUE(bool(G)) << describe(collectErrors(G.takeError()));
  EXPECT_TYPE(*G, "cv", "f32[6,6]");
  EXPECT_TYPE(*G, "h", "f32[2,6]");
  // Its stand-in zeros are not a value the folder may use.
  OpId C = G->lookupOp("c");
  ASSERT_NE(C, NoId);
  EXPECT_EQ(G->getOp(C).Annotations.get("folded"), nullptr);
}

TEST(ImportTest, ExternalIntegerConstantIsAnError) {
  llvm::Expected<Graph> G = importModel(makeExternalConstantModel(I64));
  ASSERT_FALSE(bool(G));
  std::vector<Diag> Diags = collectErrors(G.takeError());
  ASSERT_EQ(Diags.size(), 1u) << describe(Diags);
  EXPECT_EQ(Diags[0].Loc.Node, "c");
  EXPECT_TRUE(contains(Diags[0].Message, "an integer constant whose data is "
                                         "stored outside the model file"))
      << describe(Diags);
}

TEST(ImportTest, Opset18ReduceAxesInsideAnIfBranchAreRead) {
  // y = If(c) with both branches ReduceMean(x, axes) at opset 18, the axes
  // a Constant of the branch itself.
  onnx::ModelProto M = makeModel("if-reduce");
  M.set_ir_version(9);
  M.mutable_opset_import(0)->set_version(18);
  onnx::GraphProto &G = *M.mutable_graph();
  addInput(G, "x", F32, {2, 3});
  addInput(G, "c", Bool, {});
  onnx::NodeProto *If = addNode(G, "if", "If", {"c"}, {"y"});
  for (const char *Branch : {"then_branch", "else_branch"}) {
    onnx::AttributeProto *A = If->add_attribute();
    A->set_name(Branch);
    A->set_type(onnx::AttributeProto::GRAPH);
    onnx::GraphProto &B = *A->mutable_g();
    B.set_name(Branch);
    onnx::NodeProto *C = addNode(B, std::string(Branch) + ".axes", "Constant",
                                 {}, {std::string(Branch) + ".a"});
    onnx::AttributeProto *V = C->add_attribute();
    V->set_name("value_ints");
    V->set_type(onnx::AttributeProto::INTS);
    V->add_ints(1);
    addNode(B, std::string(Branch) + ".mean", "ReduceMean",
            {"x", std::string(Branch) + ".a"}, {std::string(Branch) + ".y"});
    addOutput(B, std::string(Branch) + ".y", F32, {2, 1});
  }
  addOutput(G, "y", F32, {UnknownDim, UnknownDim});
  llvm::Expected<Graph> Imported = importModel(M);
  ASSERT_TRUE(bool(Imported)) << describe(collectErrors(Imported.takeError()));
  EXPECT_TYPE(*Imported, "y", "f32[2,1]");
}

TEST(ImportTest, ExternalIntegerWeightImportsWithoutItsFile) {
  llvm::Expected<Graph> G = importModel(makeExternalWeightModel());
  ASSERT_TRUE(bool(G)) << describe(collectErrors(G.takeError()));
  TensorId Ids = G->lookupTensor("ids");
  ASSERT_NE(Ids, NoId);
  EXPECT_EQ(G->getTensor(Ids).Kind, TensorKind::Weight);
  EXPECT_TYPE(*G, "ids", "i64[3]");
  ASSERT_EQ(G->getWeights().size(), 2u);
  EXPECT_EQ(G->getWeights()[0], G->lookupTensor("w"));
  EXPECT_EQ(G->getWeights()[1], Ids);
}

TEST(ImportTest, FloatWeightWithRawDataHasItsShape) {
  onnx::ModelProto M = makeModel("raw");
  onnx::GraphProto &G = *M.mutable_graph();
  addInput(G, "x", F32, {2, 3});
  float Values[6] = {1, 2, 3, 4, 5, 6};
  addInitializer(G, "w", F32, {2, 3})
      ->set_raw_data(
          std::string(reinterpret_cast<const char *>(Values), sizeof(Values)));
  addNode(G, "add", "Add", {"x", "w"}, {"y"});
  addOutput(G, "y", F32, {UnknownDim, UnknownDim});
  llvm::Expected<Graph> Imported = importModel(M);
  ASSERT_TRUE(bool(Imported)) << describe(collectErrors(Imported.takeError()));
  EXPECT_EQ(Imported->getTensor(Imported->lookupTensor("w")).Kind,
            TensorKind::Weight);
  EXPECT_TYPE(*Imported, "w", "f32[2,3]");
  EXPECT_TYPE(*Imported, "y", "f32[2,3]");
}

/// x[2,6] -> Reshape(x, shape) -> y, shape an int64 initializer [2,3,2].
onnx::ModelProto makeReshapeModel(bool RawData) {
  onnx::ModelProto M = makeModel("reshape");
  onnx::GraphProto &G = *M.mutable_graph();
  addInput(G, "x", F32, {2, 6});
  onnx::TensorProto *Shape = addInitializer(G, "shape", I64, {3});
  int64_t Values[3] = {2, 3, 2};
  if (RawData) {
    Shape->set_raw_data(
        std::string(reinterpret_cast<const char *>(Values), sizeof(Values)));
  } else {
    for (int64_t V : Values)
      Shape->add_int64_data(V);
  }
  addNode(G, "reshape", "Reshape", {"x", "shape"}, {"y"});
  addOutput(G, "y", F32, {UnknownDim, UnknownDim, UnknownDim});
  return M;
}

TEST(ImportTest, IntegerInitializerValuesReachShapeInference) {
  llvm::Expected<Graph> G = importModel(makeReshapeModel(/*RawData=*/false));
  ASSERT_TRUE(bool(G)) << describe(collectErrors(G.takeError()));
  EXPECT_TYPE(*G, "y", "f32[2,3,2]");
  EXPECT_TYPE(*G, "shape", "i64[3]");
  EXPECT_EQ(G->getTensor(G->lookupTensor("shape")).Kind, TensorKind::Weight);
}

TEST(ImportTest, RawIntegerInitializerValuesReachShapeInference) {
  llvm::Expected<Graph> G = importModel(makeReshapeModel(/*RawData=*/true));
  ASSERT_TRUE(bool(G)) << describe(collectErrors(G.takeError()));
  EXPECT_TYPE(*G, "y", "f32[2,3,2]");
}

//===----------------------------------------------------------------------===//
// batch= and dim= overrides
//===----------------------------------------------------------------------===//

/// x[N, seq, 16] -> Relu -> y, with a float weight w[16] added to it.
onnx::ModelProto makeSymbolicModel() {
  onnx::ModelProto M = makeModel("symbolic");
  onnx::GraphProto &G = *M.mutable_graph();
  onnx::ValueInfoProto *X = addInput(G, "x", F32, {1, 1, 16});
  setDimParam(X, 0, "N");
  setDimParam(X, 1, "seq");
  float Values[16] = {};
  addInitializer(G, "w", F32, {16})
      ->set_raw_data(
          std::string(reinterpret_cast<const char *>(Values), sizeof(Values)));
  addNode(G, "relu", "Relu", {"x"}, {"r"});
  addNode(G, "add", "Add", {"r", "w"}, {"y"});
  addOutput(G, "y", F32, {UnknownDim, UnknownDim, UnknownDim});
  return M;
}

TEST(ImportTest, SymbolicDimensionWithoutOverrideIsAnError) {
  llvm::Expected<Graph> G = importModel(makeSymbolicModel());
  ASSERT_FALSE(bool(G));
  std::vector<Diag> Diags = collectErrors(G.takeError());
  ASSERT_EQ(Diags.size(), 1u) << describe(Diags);
  EXPECT_EQ(Diags[0].Loc.Tensor, "x");
  // Every symbolic dimension of the tensor, in one message.
  EXPECT_TRUE(
      contains(Diags[0].Message,
               "dimension 0 ('N') and dimension 1 ('seq') are "
               "symbolic; set them with import-onnx{dim=N:N,dim=seq:N}"))
      << describe(Diags);
}

TEST(ImportTest, BatchAndDimOverridesMakeShapesStatic) {
  ImportOptions Opts;
  Opts.Batch = 8;
  Opts.Dims.emplace_back("seq", 128);
  llvm::Expected<Graph> G = importModel(makeSymbolicModel(), Opts);
  ASSERT_TRUE(bool(G)) << describe(collectErrors(G.takeError()));
  EXPECT_TYPE(*G, "x", "f32[8,128,16]");
  EXPECT_TYPE(*G, "r", "f32[8,128,16]");
  EXPECT_TYPE(*G, "y", "f32[8,128,16]");
}

TEST(ImportTest, BatchOverrideLeavesWeightsAlone) {
  ImportOptions Opts;
  Opts.Batch = 8;
  Opts.Dims.emplace_back("seq", 128);
  llvm::Expected<Graph> G = importModel(makeSymbolicModel(), Opts);
  ASSERT_TRUE(bool(G)) << describe(collectErrors(G.takeError()));
  EXPECT_TYPE(*G, "w", "f32[16]");
}

TEST(ImportTest, BatchOverrideReplacesAStaticFirstDimension) {
  onnx::ModelProto M = makeModel("static");
  onnx::GraphProto &G = *M.mutable_graph();
  addInput(G, "x", F32, {1, 4});
  addNode(G, "relu", "Relu", {"x"}, {"y"});
  addOutput(G, "y", F32, {1, 4});
  ImportOptions Opts;
  Opts.Batch = 3;
  llvm::Expected<Graph> Imported = importModel(M, Opts);
  ASSERT_TRUE(bool(Imported)) << describe(collectErrors(Imported.takeError()));
  EXPECT_TYPE(*Imported, "x", "f32[3,4]");
  EXPECT_TYPE(*Imported, "y", "f32[3,4]");
}

TEST(ImportTest, DimOverrideOfANameNoInputHasIsAnError) {
  ImportOptions Opts;
  Opts.Batch = 8;
  Opts.Dims.emplace_back("seq", 128);
  Opts.Dims.emplace_back("nope", 3);
  llvm::Expected<Graph> G = importModel(makeSymbolicModel(), Opts);
  ASSERT_FALSE(bool(G));
  std::vector<Diag> Diags = collectErrors(G.takeError());
  ASSERT_EQ(Diags.size(), 1u) << describe(Diags);
  EXPECT_TRUE(contains(Diags[0].Message, "dimension named 'nope'"))
      << describe(Diags);
}

//===----------------------------------------------------------------------===//
// Node order
//===----------------------------------------------------------------------===//

TEST(ImportTest, NodesAreImportedInTopologicalOrder) {
  onnx::ModelProto M = makeModel("order");
  onnx::GraphProto &G = *M.mutable_graph();
  addInput(G, "x", F32, {4});
  addNode(G, "third", "Abs", {"b"}, {"c"});
  addNode(G, "second", "Neg", {"a"}, {"b"});
  addNode(G, "first", "Relu", {"x"}, {"a"});
  addNode(G, "side", "Sigmoid", {"x"}, {"d"});
  addOutput(G, "c", F32, {4});
  addOutput(G, "d", F32, {4});
  llvm::Expected<Graph> Imported = importModel(M);
  ASSERT_TRUE(bool(Imported)) << describe(collectErrors(Imported.takeError()));
  std::vector<std::string> Names;
  for (const Op &O : Imported->ops())
    Names.push_back(O.Name.str());
  // Kahn's algorithm taking the first ready node in file order.
  EXPECT_EQ(Names,
            (std::vector<std::string>{"first", "second", "third", "side"}));
  llvm::Error Err = verifyGraph(*Imported);
  EXPECT_FALSE(bool(Err)) << llvm::toString(std::move(Err));
}

/// n1: Relu(t2) -> t1 and n2: Neg(t1) -> t2, after \p Before nodes that read
/// the cycle.
onnx::ModelProto makeCycleModel(bool WithNodeBefore) {
  onnx::ModelProto M = makeModel("cycle");
  onnx::GraphProto &G = *M.mutable_graph();
  addInput(G, "x", F32, {4});
  if (WithNodeBefore)
    addNode(G, "after", "Abs", {"t1"}, {"t3"});
  addNode(G, "n1", "Relu", {"t2"}, {"t1"});
  addNode(G, "n2", "Neg", {"t1"}, {"t2"});
  addOutput(G, "t2", F32, {4});
  return M;
}

TEST(ImportTest, CycleIsAnErrorNamingANodeOnIt) {
  llvm::Expected<Graph> G = importModel(makeCycleModel(false));
  ASSERT_FALSE(bool(G));
  std::vector<Diag> Diags = collectErrors(G.takeError());
  ASSERT_EQ(Diags.size(), 1u) << describe(Diags);
  EXPECT_TRUE(Diags[0].Loc.Node == "n1" || Diags[0].Loc.Node == "n2")
      << describe(Diags);
  EXPECT_TRUE(contains(Diags[0].Message, "cycle")) << describe(Diags);
  EXPECT_TRUE(contains(Diags[0].Message, "'n1'")) << describe(Diags);
  EXPECT_TRUE(contains(Diags[0].Message, "'n2'")) << describe(Diags);
}

TEST(ImportTest, CycleErrorSkipsNodesThatOnlyReadTheCycle) {
  llvm::Expected<Graph> G = importModel(makeCycleModel(true));
  ASSERT_FALSE(bool(G));
  std::vector<Diag> Diags = collectErrors(G.takeError());
  ASSERT_EQ(Diags.size(), 1u) << describe(Diags);
  EXPECT_TRUE(Diags[0].Loc.Node == "n1" || Diags[0].Loc.Node == "n2")
      << describe(Diags);
  EXPECT_FALSE(contains(Diags[0].Message, "'after'")) << describe(Diags);
}

TEST(ImportTest, UnnamedNodesGetStableUniqueNames) {
  onnx::ModelProto M = makeModel("names");
  onnx::GraphProto &G = *M.mutable_graph();
  addInput(G, "x", F32, {4});
  addNode(G, "", "Relu", {"x"}, {"a"});
  addNode(G, "dup", "Neg", {"a"}, {"b"});
  addNode(G, "dup", "Abs", {"b"}, {"c"});
  addOutput(G, "c", F32, {4});
  llvm::Expected<Graph> Imported = importModel(M);
  ASSERT_TRUE(bool(Imported)) << describe(collectErrors(Imported.takeError()));
  ASSERT_EQ(Imported->getNumOps(), 3u);
  EXPECT_EQ(Imported->getOp(0).Name, "Relu_0");
  EXPECT_EQ(Imported->getOp(0).SourceName, "");
  EXPECT_EQ(Imported->getOp(1).Name, "dup");
  EXPECT_EQ(Imported->getOp(1).SourceName, "dup");
  EXPECT_EQ(Imported->getOp(2).Name, "dup.1");
  EXPECT_EQ(Imported->getOp(2).SourceName, "dup");
}

// Generated names never take an explicit name, even one the model repeats:
// the unnamed Relu at index 0 must not be called "Relu_0" when two nodes
// the user named "Relu_0" exist.
TEST(ImportTest, GeneratedNamesNeverTakeAnExplicitName) {
  onnx::ModelProto M = makeModel("names");
  onnx::GraphProto &G = *M.mutable_graph();
  addInput(G, "x", F32, {4});
  addNode(G, "", "Relu", {"x"}, {"a"});
  addNode(G, "Relu_0", "Neg", {"a"}, {"b"});
  addNode(G, "Relu_0", "Abs", {"b"}, {"c"});
  addOutput(G, "c", F32, {4});
  llvm::Expected<Graph> Imported = importModel(M);
  ASSERT_TRUE(bool(Imported)) << describe(collectErrors(Imported.takeError()));
  ASSERT_EQ(Imported->getNumOps(), 3u);
  EXPECT_EQ(Imported->getOp(0).SourceName, "");
  EXPECT_NE(Imported->getOp(0).Name.str(), "Relu_0");
}

//===----------------------------------------------------------------------===//
// Control flow
//===----------------------------------------------------------------------===//

/// if c then Neg(Relu(x)) else Abs(x), both branches reading x from the
/// enclosing graph.
onnx::ModelProto makeIfModel() {
  onnx::ModelProto M = makeModel("cf");
  onnx::GraphProto &G = *M.mutable_graph();
  addInput(G, "c", Bool, {});
  addInput(G, "x", F32, {4});
  onnx::NodeProto *If = addNode(G, "if", "If", {"c"}, {"y"});

  onnx::AttributeProto *Then = If->add_attribute();
  Then->set_name("then_branch");
  Then->set_type(onnx::AttributeProto::GRAPH);
  onnx::GraphProto &TG = *Then->mutable_g();
  TG.set_name("then");
  addNode(TG, "", "Relu", {"x"}, {"t0"});
  addNode(TG, "", "Neg", {"t0"}, {"t1"});
  addOutput(TG, "t1", F32, {4});

  onnx::AttributeProto *Else = If->add_attribute();
  Else->set_name("else_branch");
  Else->set_type(onnx::AttributeProto::GRAPH);
  onnx::GraphProto &EG = *Else->mutable_g();
  EG.set_name("else");
  addNode(EG, "", "Abs", {"x"}, {"e0"});
  addOutput(EG, "e0", F32, {4});

  addOutput(G, "y", F32, {4});
  return M;
}

TEST(ImportTest, OuterTensorsReadByBranchesBecomeExtraOperands) {
  llvm::Expected<Graph> G = importModel(makeIfModel());
  ASSERT_TRUE(bool(G)) << describe(collectErrors(G.takeError()));
  OpId If = G->lookupOp("if");
  ASSERT_NE(If, NoId);
  const Op &Node = G->getOp(If);
  ASSERT_EQ(Node.Operands.size(), 2u);
  EXPECT_EQ(Node.Operands[0], G->lookupTensor("c"));
  EXPECT_EQ(Node.Operands[1], G->lookupTensor("x"));
  const Attribute *Implicit = Node.Annotations.get("implicit_operands");
  ASSERT_NE(Implicit, nullptr);
  EXPECT_EQ(*Implicit, Attribute::getInt(1));
  EXPECT_TYPE(*G, "y", "f32[4]");
  llvm::Error Err = verifyGraph(*G);
  EXPECT_FALSE(bool(Err)) << llvm::toString(std::move(Err));
}

TEST(ImportTest, BranchesAreKeptAsGraphSummaries) {
  llvm::Expected<Graph> G = importModel(makeIfModel());
  ASSERT_TRUE(bool(G)) << describe(collectErrors(G.takeError()));
  const Op &Node = G->getOp(G->lookupOp("if"));
  const Attribute *Then = Node.Attrs.get("then_branch");
  ASSERT_NE(Then, nullptr);
  ASSERT_EQ(Then->getKind(), AttrKind::Graph);
  const GraphSummary &S = Then->getGraphSummaries().front();
  EXPECT_EQ(S.Nodes, 2);
  EXPECT_EQ(S.Inputs, 0);
  EXPECT_EQ(S.Outputs, 1);
  EXPECT_EQ(S.OpCounts, (std::vector<std::pair<std::string, int64_t>>{
                            {"Neg", 1}, {"Relu", 1}}));
  const Attribute *Else = Node.Attrs.get("else_branch");
  ASSERT_NE(Else, nullptr);
  ASSERT_EQ(Else->getKind(), AttrKind::Graph);
  EXPECT_EQ(Else->getGraphSummaries().front().Nodes, 1);
}

TEST(ImportTest, IfIsOrderedAfterTheProducerOfATensorItsBranchReads) {
  onnx::ModelProto M = makeModel("late");
  onnx::GraphProto &G = *M.mutable_graph();
  addInput(G, "c", Bool, {});
  addInput(G, "x", F32, {4});
  onnx::NodeProto *If = addNode(G, "if", "If", {"c"}, {"y"});
  for (const char *Branch : {"then_branch", "else_branch"}) {
    onnx::AttributeProto *A = If->add_attribute();
    A->set_name(Branch);
    A->set_type(onnx::AttributeProto::GRAPH);
    onnx::GraphProto &BG = *A->mutable_g();
    BG.set_name(Branch);
    std::string Out = std::string(Branch) + "_out";
    addNode(BG, "", "Neg", {"r"}, {Out});
    addOutput(BG, Out, F32, {4});
  }
  addNode(G, "relu", "Relu", {"x"}, {"r"});
  addOutput(G, "y", F32, {4});
  llvm::Expected<Graph> Imported = importModel(M);
  ASSERT_TRUE(bool(Imported)) << describe(collectErrors(Imported.takeError()));
  ASSERT_EQ(Imported->getNumOps(), 2u);
  EXPECT_EQ(Imported->getOp(0).Name, "relu");
  EXPECT_EQ(Imported->getOp(1).Name, "if");
  EXPECT_EQ(llvm::ArrayRef<TensorId>(Imported->getOp(1).Operands),
            llvm::makeArrayRef(
                {Imported->lookupTensor("c"), Imported->lookupTensor("r")}));
}

//===----------------------------------------------------------------------===//
// Reading the file
//===----------------------------------------------------------------------===//

const char *const TextModel = "<ir_version: 8, opset_import: [\"\" : 17]>\n"
                              "g (float[4] x) => (float[4] y) {\n"
                              "  y = Relu(x)\n"
                              "}\n";

TEST(ImportTest, LooksLikeONNXTextTellsTextFromBinary) {
  EXPECT_FALSE(looksLikeONNXText(serialize(makeIfModel())));
  EXPECT_TRUE(looksLikeONNXText(TextModel));
  EXPECT_FALSE(looksLikeONNXText(""));
}

TEST(ImportTest, ImportsONNXTextSyntax) {
  llvm::Expected<Graph> G = importBytes(TextModel);
  ASSERT_TRUE(bool(G)) << describe(collectErrors(G.takeError()));
  EXPECT_EQ(G->getName(), "g");
  ASSERT_EQ(G->getNumOps(), 1u);
  EXPECT_EQ(G->getOp(0).Type, "Relu");
  EXPECT_TYPE(*G, "y", "f32[4]");
}

TEST(ImportTest, ONNXTextSyntaxErrorHasALineAndColumn) {
  llvm::Expected<Graph> G =
      importBytes("<ir_version: 8, opset_import: [\"\" : 17]>\n"
                  "g (float[4] x) => (float[4] y) {\n"
                  "  y = Relu(x\n"
                  "}\n");
  ASSERT_FALSE(bool(G));
  std::vector<Diag> Diags = collectErrors(G.takeError());
  ASSERT_EQ(Diags.size(), 1u) << describe(Diags);
  EXPECT_EQ(Diags[0].Loc.File, "model.onnx");
  EXPECT_GT(Diags[0].Loc.Line, 0u) << describe(Diags);
  EXPECT_TRUE(contains(Diags[0].Message, "invalid ONNX text"))
      << describe(Diags);
}

TEST(ImportTest, EmptyBufferIsAnError) {
  llvm::Expected<Graph> G = importBytes("");
  ASSERT_FALSE(bool(G));
  std::vector<Diag> Diags = collectErrors(G.takeError());
  ASSERT_EQ(Diags.size(), 1u) << describe(Diags);
  EXPECT_EQ(Diags[0].Loc.File, "model.onnx");
  EXPECT_TRUE(contains(Diags[0].Message, "empty")) << describe(Diags);
}

TEST(ImportTest, TruncatedBufferIsAnError) {
  std::string Bytes = serialize(makeIfModel());
  llvm::Expected<Graph> G =
      importBytes(llvm::StringRef(Bytes).take_front(Bytes.size() / 2));
  ASSERT_FALSE(bool(G));
  std::vector<Diag> Diags = collectErrors(G.takeError());
  ASSERT_EQ(Diags.size(), 1u) << describe(Diags);
  EXPECT_EQ(Diags[0].Loc.File, "model.onnx");
  EXPECT_TRUE(contains(Diags[0].Message, "protobuf parsing failed"))
      << describe(Diags);
}

TEST(ImportTest, ModelWithoutGraphIsAnError) {
  onnx::ModelProto M;
  M.set_ir_version(8);
  llvm::Expected<Graph> G = importModel(M);
  ASSERT_FALSE(bool(G));
  std::vector<Diag> Diags = collectErrors(G.takeError());
  ASSERT_EQ(Diags.size(), 1u) << describe(Diags);
  EXPECT_TRUE(contains(Diags[0].Message, "no graph")) << describe(Diags);
}

/// Sets the hidden -onnx-skip-node-checks for one scope.
class SkipNodeChecks {
public:
  SkipNodeChecks() : Opt(getOpt()) { Opt.setValue(true); }
  ~SkipNodeChecks() { Opt.setValue(false); }

private:
  static llvm::cl::opt<bool> &getOpt() {
    llvm::cl::Option *O =
        llvm::cl::getRegisteredOptions().lookup("onnx-skip-node-checks");
    assert(O && "the import library registers -onnx-skip-node-checks");
    return *static_cast<llvm::cl::opt<bool> *>(O);
  }
  llvm::cl::opt<bool> &Opt;
};

TEST(ImportTest, CrashInLibonnxInferenceFailsTheNodeAndImportGoesOn) {
  // An AveragePool with a stride of 0: libonnx 1.12's inference divides by
  // it (SIGFPE) unless dp's check of the node reports it first.
  const char *Crashing = "<ir_version: 8, opset_import: [\"\" : 17]>\n"
                         "g (float[1, 2, 3, 6] x) => (float[1, 2, 2, 6] y) {\n"
                         "  y = AveragePool<kernel_shape = [2, 1], "
                         "strides = [0, 1]>(x)\n"
                         "}\n";
  SkipNodeChecks Skip;
  for (int Round = 0; Round != 3; ++Round) {
    llvm::Expected<Graph> Bad = importBytes(Crashing);
    ASSERT_FALSE(bool(Bad));
    std::vector<Diag> Diags = collectErrors(Bad.takeError());
    ASSERT_EQ(Diags.size(), 1u) << describe(Diags);
    EXPECT_EQ(Diags[0].Loc.Node, "AveragePool_0") << describe(Diags);
    EXPECT_TRUE(contains(Diags[0].Message,
                         "libonnx's AveragePool shape inference crashed"))
        << describe(Diags);
    llvm::Expected<Graph> Good = importBytes(TextModel);
    ASSERT_TRUE(bool(Good)) << describe(collectErrors(Good.takeError()));
    EXPECT_TYPE(*Good, "y", "f32[4]");
  }
}

//===----------------------------------------------------------------------===//
// The import-onnx pass
//===----------------------------------------------------------------------===//

using KeyValues = std::vector<std::pair<std::string, std::string>>;

TEST(ImportPassTest, ParseOptionsAcceptsBatchAndDim) {
  llvm::Expected<ImportOptions> Opts = ImportONNXPass::parseOptions(
      KeyValues{{"batch", "8"}, {"dim", "seq:128"}});
  ASSERT_TRUE(bool(Opts)) << llvm::toString(Opts.takeError());
  ASSERT_TRUE(Opts->Batch.hasValue());
  EXPECT_EQ(*Opts->Batch, 8);
  EXPECT_EQ(Opts->Dims,
            (std::vector<std::pair<std::string, int64_t>>{{"seq", 128}}));
}

TEST(ImportPassTest, ParseOptionsAcceptsRepeatedDims) {
  llvm::Expected<ImportOptions> Opts = ImportONNXPass::parseOptions(
      KeyValues{{"dim", "seq:128"}, {"dim", "heads:12"}});
  ASSERT_TRUE(bool(Opts)) << llvm::toString(Opts.takeError());
  EXPECT_FALSE(Opts->Batch.hasValue());
  EXPECT_EQ(Opts->Dims, (std::vector<std::pair<std::string, int64_t>>{
                            {"seq", 128}, {"heads", 12}}));
}

/// The message of the one error \p KVs give, or "" if they parse.
std::string parseOptionsError(const KeyValues &KVs) {
  llvm::Expected<ImportOptions> Opts = ImportONNXPass::parseOptions(KVs);
  if (Opts) {
    ADD_FAILURE() << "the options parsed";
    return "";
  }
  std::vector<Diag> Diags = collectErrors(Opts.takeError());
  EXPECT_EQ(Diags.size(), 1u) << describe(Diags);
  return Diags.empty() ? "" : Diags[0].Message;
}

TEST(ImportPassTest, ParseOptionsRejectsZeroBatch) {
  std::string Message = parseOptionsError({{"batch", "0"}});
  EXPECT_TRUE(contains(Message, "batch must be a positive integer, not '0'"))
      << Message;
}

TEST(ImportPassTest, ParseOptionsRejectsNonNumericBatch) {
  std::string Message = parseOptionsError({{"batch", "x"}});
  EXPECT_TRUE(contains(Message, "not 'x'")) << Message;
}

TEST(ImportPassTest, ParseOptionsRejectsDimWithoutSize) {
  std::string Message = parseOptionsError({{"dim", "seq"}});
  EXPECT_TRUE(contains(Message, "NAME:N")) << Message;
}

TEST(ImportPassTest, ParseOptionsRejectsDimWithoutName) {
  std::string Message = parseOptionsError({{"dim", ":4"}});
  EXPECT_TRUE(contains(Message, "NAME:N")) << Message;
}

TEST(ImportPassTest, ParseOptionsRejectsUnknownKeys) {
  std::string Message = parseOptionsError({{"batch", "8"}, {"size", "3"}});
  EXPECT_TRUE(contains(Message, "unknown option 'size'")) << Message;
}

TEST(ImportPassTest, PrintsItsOptions) {
  ImportOptions Opts;
  Opts.Batch = 8;
  Opts.Dims.emplace_back("seq", 128);
  std::string S;
  llvm::raw_string_ostream OS(S);
  ImportONNXPass(Opts).printPipeline(OS);
  EXPECT_EQ(OS.str(), "import-onnx{batch=8,dim=seq:128}");
}

TEST(ImportPassTest, ReadsThePipelineInput) {
  std::string Bytes = serialize(makeIfModel());
  PassContext Ctx;
  Ctx.Input = llvm::MemoryBufferRef(Bytes, "model.onnx");
  PassManager PM;
  PM.addPass(ImportONNXPass());
  PM.setVerifyEach(true);
  Graph G;
  llvm::Error Err = PM.run(G, Ctx);
  ASSERT_FALSE(bool(Err)) << describe(collectErrors(std::move(Err)));
  EXPECT_EQ(G.getName(), "cf");
  EXPECT_NE(G.lookupOp("if"), NoId);
}

TEST(ImportPassTest, RefusesAGraphThatIsAlreadyThere) {
  std::string Bytes = serialize(makeIfModel());
  PassContext Ctx;
  Ctx.Input = llvm::MemoryBufferRef(Bytes, "model.onnx");
  Graph G;
  G.setName("existing");
  G.addInput("x", TensorType(DTypeKind::F32, {1}));
  ImportONNXPass P;
  std::vector<Diag> Diags = collectErrors(P.run(G, Ctx));
  ASSERT_EQ(Diags.size(), 1u) << describe(Diags);
  EXPECT_TRUE(contains(Diags[0].Message, "already dp IR")) << describe(Diags);
  EXPECT_EQ(G.getName(), "existing");
}

} // namespace
