//===- OpCostTest.cpp - FLOP and byte counts, roofline times --------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "CostTestUtil.h"

#include "dp/Cost/OpCost.h"
#include "dp/Transforms/BackwardRules.h"

#include "gtest/gtest.h"

using namespace llvm;
using namespace dp;
using namespace dp::test;

namespace {

AttributeList attrs(std::vector<std::pair<std::string, Attribute>> KVs) {
  AttributeList L;
  for (auto &[K, V] : KVs)
    L.set(K, V);
  return L;
}

OpWork work(Graph &G, OpId O) { return estimateWork(G, O); }

TEST(OpCostTest, MatMul) {
  Graph G;
  OpId O =
      addOp(G, "MatMul", {f32({64, 128}), f32({128, 256})}, {f32({64, 256})});
  OpWork W = work(G, O);
  EXPECT_EQ(W.Kind, OpCostKind::Gemm);
  EXPECT_EQ(W.Flops, 2.0 * 64 * 128 * 256);
  EXPECT_EQ(W.Bytes, 4.0 * (64 * 128 + 128 * 256 + 64 * 256));
  EXPECT_EQ(W.Launches, 1);
  EXPECT_TRUE(W.Note.empty());
}

TEST(OpCostTest, BatchedAndVectorMatMul) {
  Graph G;
  OpId B = addOp(G, "MatMul", {f32({8, 64, 128}), f32({128, 32})},
                 {f32({8, 64, 32})}, {}, "", "b");
  EXPECT_EQ(work(G, B).Flops, 2.0 * 8 * 64 * 128 * 32);
  OpId V = addOp(G, "MatMul", {f32({128}), f32({128, 32})}, {f32({32})}, {}, "",
                 "v");
  EXPECT_EQ(work(G, V).Flops, 2.0 * 128 * 32);
}

TEST(OpCostTest, GemmWithTransposeAndBias) {
  Graph G;
  OpId O = addOp(G, "Gemm", {f32({128, 64}), f32({256, 128}), f32({256})},
                 {f32({64, 256})},
                 attrs({{"transA", Attribute::getInt(1)},
                        {"transB", Attribute::getInt(1)}}));
  EXPECT_EQ(work(G, O).Flops, 2.0 * 64 * 256 * 128 + 64 * 256);
}

TEST(OpCostTest, ConvWithStridesAndBias) {
  // ResNet's stem: 7x7, stride 2, 3 -> 64 channels on 224x224.
  Graph G;
  OpId O =
      addOp(G, "Conv", {f32({1, 3, 224, 224}), f32({64, 3, 7, 7}), f32({64})},
            {f32({1, 64, 112, 112})},
            attrs({{"strides", Attribute::getInts({2, 2})},
                   {"pads", Attribute::getInts({3, 3, 3, 3})}}));
  OpWork W = work(G, O);
  EXPECT_EQ(W.Kind, OpCostKind::Conv);
  EXPECT_EQ(W.Flops, 2.0 * 64 * 112 * 112 * 3 * 49 + 64 * 112 * 112);
  EXPECT_EQ(W.Bytes, 4.0 * (3 * 224 * 224 + 64 * 3 * 49 + 64 + 64 * 112 * 112));
}

TEST(OpCostTest, GroupedAndDilatedConv) {
  // Depthwise: 32 groups of one channel each.
  Graph G;
  OpId D = addOp(G, "Conv", {f32({1, 32, 56, 56}), f32({32, 1, 3, 3})},
                 {f32({1, 32, 56, 56})},
                 attrs({{"group", Attribute::getInt(32)},
                        {"pads", Attribute::getInts({1, 1, 1, 1})}}),
                 "", "dw");
  EXPECT_EQ(work(G, D).Flops, 2.0 * 32 * 56 * 56 * 9);
  // Dilation 2 widens the window to 5x5 but keeps 9 taps.
  OpId Dil =
      addOp(G, "Conv", {f32({1, 8, 20, 20}), f32({16, 8, 3, 3})},
            {f32({1, 16, 16, 16})},
            attrs({{"dilations", Attribute::getInts({2, 2})}}), "", "dil");
  EXPECT_EQ(work(G, Dil).Flops, 2.0 * 16 * 16 * 16 * 8 * 9);
}

TEST(OpCostTest, ConvTranspose) {
  // Every input element is scattered over M/group * k*k outputs.
  Graph G;
  OpId O = addOp(G, "ConvTranspose", {f32({1, 16, 8, 8}), f32({16, 8, 4, 4})},
                 {f32({1, 8, 18, 18})},
                 attrs({{"strides", Attribute::getInts({2, 2})}}));
  EXPECT_EQ(work(G, O).Flops, 2.0 * 16 * 8 * 8 * 8 * 16);
}

TEST(OpCostTest, Einsum) {
  Graph G;
  OpId O =
      addOp(G, "Einsum", {f32({2, 3, 4}), f32({2, 4, 5})}, {f32({2, 3, 5})},
            attrs({{"equation", Attribute::getString("bij,bjk->bik")}}));
  EXPECT_EQ(work(G, O).Flops, 2.0 * 2 * 3 * 4 * 5);
  OpId Bad = addOp(G, "Einsum", {f32({2, 3})}, {f32({2, 3})},
                   attrs({{"equation", Attribute::getString("ij,jk->ik")}}), "",
                   "bad");
  OpWork W = work(G, Bad);
  EXPECT_EQ(W.Kind, OpCostKind::Unknown);
  EXPECT_NE(W.Note.find("cannot analyse the Einsum"), std::string::npos);
}

TEST(OpCostTest, WholeSequenceRecurrentOps) {
  const double T = 10, B = 4, I = 32, H = 64;
  Graph G;
  OpId L =
      addOp(G, "LSTM", {f32({10, 4, 32}), f32({1, 256, 32}), f32({1, 256, 64})},
            {f32({10, 1, 4, 64})}, {}, "", "lstm");
  OpWork W = work(G, L);
  EXPECT_EQ(W.Kind, OpCostKind::Recurrent);
  EXPECT_EQ(W.Flops, T * (2 * B * 4 * H * (I + H) + B * H * 32));
  EXPECT_EQ(W.Launches, T);
  // The recurrent weights are read at every step.
  EXPECT_EQ(W.Bytes, 4 * (10 * 4 * 32 + 256 * 32 + 256 * 64 + 10 * 4 * 64) +
                         9 * 4 * 256 * 64);
  // Bidirectional GRU, batch-first layout.
  OpId Gr =
      addOp(G, "GRU", {f32({4, 10, 32}), f32({2, 192, 32}), f32({2, 192, 64})},
            {f32({4, 10, 2, 64})}, attrs({{"layout", Attribute::getInt(1)}}),
            "", "gru");
  EXPECT_EQ(work(G, Gr).Flops, 2 * T * (2 * B * 3 * H * (I + H) + B * H * 23));
}

TEST(OpCostTest, Pooling) {
  Graph G;
  OpId M = addOp(G, "MaxPool", {f32({1, 64, 112, 112})}, {f32({1, 64, 56, 56})},
                 attrs({{"kernel_shape", Attribute::getInts({3, 3})},
                        {"strides", Attribute::getInts({2, 2})}}),
                 "", "max");
  EXPECT_EQ(work(G, M).Flops, 9.0 * 64 * 56 * 56);
  EXPECT_EQ(work(G, M).Kind, OpCostKind::Pooling);
  OpId Gl = addOp(G, "GlobalAveragePool", {f32({1, 2048, 7, 7})},
                  {f32({1, 2048, 1, 1})}, {}, "", "gap");
  EXPECT_EQ(work(G, Gl).Flops, 2048.0 * 49);
}

TEST(OpCostTest, Normalizations) {
  Graph G;
  OpId BN =
      addOp(G, "BatchNormalization",
            {f32({8, 16, 4, 4}), f32({16}), f32({16}), f32({16}), f32({16})},
            {f32({8, 16, 4, 4})}, {}, "", "bn");
  EXPECT_EQ(work(G, BN).Flops, 2.0 * 8 * 16 * 16);
  OpId BNT =
      addOp(G, "BatchNormalization",
            {f32({8, 16, 4, 4}), f32({16}), f32({16}), f32({16}), f32({16})},
            {f32({8, 16, 4, 4}), f32({16}), f32({16})},
            attrs({{"training_mode", Attribute::getInt(1)}}), "", "bnt");
  EXPECT_EQ(work(G, BNT).Flops, 8.0 * 8 * 16 * 16);
  OpId LN = addOp(G, "LayerNormalization",
                  {f32({8, 128, 768}), f32({768}), f32({768})},
                  {f32({8, 128, 768})}, {}, "", "ln");
  EXPECT_EQ(work(G, LN).Flops, 8.0 * 8 * 128 * 768);
  EXPECT_EQ(work(G, LN).Kind, OpCostKind::Normalization);
}

TEST(OpCostTest, ElementwiseBroadcastBytes) {
  // [64,1] + [1,128] -> [64,128]: each input is read at its own size.
  Graph G;
  OpId O = addOp(G, "Add", {f32({64, 1}), f32({1, 128})}, {f32({64, 128})});
  OpWork W = work(G, O);
  EXPECT_EQ(W.Kind, OpCostKind::Elementwise);
  EXPECT_EQ(W.Flops, 64.0 * 128);
  EXPECT_EQ(W.Bytes, 4.0 * (64 + 128 + 64 * 128));
}

TEST(OpCostTest, ElementwiseFlopsPerElement) {
  Graph G;
  OpId Tanh = addOp(G, "Tanh", {f32({100})}, {f32({100})}, {}, "", "t");
  EXPECT_EQ(work(G, Tanh).Flops, 400);
  OpId Gelu = addOp(G, "Gelu", {f32({100})}, {f32({100})}, {}, "", "g");
  EXPECT_EQ(work(G, Gelu).Flops, 800);
  OpId Cast = addOp(G, "Cast", {f32({100})},
                    {TensorType(DTypeKind::F16, {100})}, {}, "", "c");
  EXPECT_EQ(work(G, Cast).Flops, 0);
  EXPECT_EQ(work(G, Cast).Bytes, 600);
  // Sum of n inputs: n-1 additions per element; the same tensor twice is
  // read once.
  TensorId X = G.addInput("x", f32({10}));
  OpId Sum = G.addOp("sum", "", "Sum", {X, X, X}, {{"s", f32({10})}});
  EXPECT_EQ(work(G, Sum).Flops, 20);
  EXPECT_EQ(work(G, Sum).Bytes, 80);
}

TEST(OpCostTest, SoftmaxAndReductions) {
  Graph G;
  OpId S =
      addOp(G, "Softmax", {f32({32, 1000})}, {f32({32, 1000})}, {}, "", "s");
  EXPECT_EQ(work(G, S).Flops, 8.0 * 32000);
  EXPECT_EQ(work(G, S).Kind, OpCostKind::Softmax);
  OpId R =
      addOp(G, "ReduceMean", {f32({32, 1000})}, {f32({32, 1})}, {}, "", "r");
  EXPECT_EQ(work(G, R).Flops, 32000);
  EXPECT_EQ(work(G, R).Kind, OpCostKind::Reduction);
  OpId A = addOp(G, "ArgMax", {f32({32, 1000})},
                 {TensorType(DTypeKind::I64, {32, 1})}, {}, "", "a");
  EXPECT_EQ(work(G, A).Flops, 32000);
}

TEST(OpCostTest, GatherAndScatter) {
  Graph G;
  OpId O =
      addOp(G, "Gather", {f32({1000, 64}), TensorType(DTypeKind::I64, {32})},
            {f32({32, 64})}, {}, "", "gather");
  OpWork W = work(G, O);
  EXPECT_EQ(W.Kind, OpCostKind::Indexing);
  EXPECT_EQ(W.Flops, 0);
  // The gathered rows, the indices and the result; not the whole table.
  EXPECT_EQ(W.Bytes, 32 * 8 + 2 * 4 * 32 * 64);
  OpId S =
      addOp(G, "ScatterND",
            {f32({100, 8}), TensorType(DTypeKind::I64, {10, 1}), f32({10, 8})},
            {f32({100, 8})},
            attrs({{"reduction", Attribute::getString("add")}}), "", "scatter");
  EXPECT_EQ(work(G, S).Flops, 80);
  EXPECT_EQ(work(G, S).Bytes, 4 * 800 + 80 + 4 * 80 + 4 * 800);
}

TEST(OpCostTest, DataMovementViewsAndMetadata) {
  Graph G;
  OpId R = addOp(G, "Reshape", {f32({8, 64}), TensorType(DTypeKind::I64, {2})},
                 {f32({64, 8})}, {}, "", "reshape");
  EXPECT_EQ(work(G, R).Kind, OpCostKind::View);
  EXPECT_EQ(work(G, R).Bytes, 0);
  OpId T = addOp(G, "Transpose", {f32({8, 64})}, {f32({64, 8})}, {}, "", "t");
  EXPECT_EQ(work(G, T).Kind, OpCostKind::DataMovement);
  EXPECT_EQ(work(G, T).Bytes, 2 * 4 * 512);
  EXPECT_EQ(work(G, T).Flops, 0);
  OpId S = addOp(G, "Slice",
                 {f32({8, 64}), TensorType(DTypeKind::I64, {1}),
                  TensorType(DTypeKind::I64, {1})},
                 {f32({8, 16})}, {}, "", "slice");
  EXPECT_EQ(work(G, S).Bytes, 2 * 4 * 128);
  OpId C = addOp(G, "Concat", {f32({8, 16}), f32({8, 48})}, {f32({8, 64})}, {},
                 "", "concat");
  EXPECT_EQ(work(G, C).Bytes, 2 * 4 * 512);
  OpId Sh = addOp(G, "Shape", {f32({8, 64})}, {TensorType(DTypeKind::I64, {2})},
                  {}, "", "shape");
  EXPECT_EQ(work(G, Sh).Kind, OpCostKind::Metadata);
  EXPECT_EQ(work(G, Sh).Bytes, 0);
  OpId Rz =
      addOp(G, "Resize", {f32({1, 3, 8, 8})}, {f32({1, 3, 16, 16})},
            attrs({{"mode", Attribute::getString("linear")}}), "", "resize");
  EXPECT_EQ(work(G, Rz).Flops, 4.0 * 3 * 256);
}

TEST(OpCostTest, ControlFlowFromBodySummary) {
  GraphSummary Body;
  Body.Nodes = 3;
  Body.Inputs = 2;
  Body.Outputs = 2;
  Body.OpCounts = {{"Add", 2}, {"Relu", 1}};
  Graph G;
  // Scan over 5 steps of the first scan input ([5, 16] along axis 0).
  OpId S =
      addOp(G, "Scan", {f32({16}), f32({5, 16})}, {f32({16}), f32({5, 16})},
            attrs({{"body", Attribute::getGraph(Body)},
                   {"num_scan_inputs", Attribute::getInt(1)}}),
            "", "scan");
  OpWork W = work(G, S);
  EXPECT_EQ(W.Kind, OpCostKind::ControlFlow);
  EXPECT_EQ(W.Launches, 15);
  EXPECT_EQ(W.Flops, 15.0 * 80);
  EXPECT_EQ(W.Bytes, 15.0 * 3 * 80 * 4);
  // If: the longer branch, once.
  GraphSummary Then = Body, Else = Body;
  Else.Nodes = 7;
  OpId If = addOp(G, "If", {TensorType(DTypeKind::Bool, {})}, {f32({4})},
                  attrs({{"then_branch", Attribute::getGraph(Then)},
                         {"else_branch", Attribute::getGraph(Else)}}),
                  "", "if");
  EXPECT_EQ(work(G, If).Launches, 7);
  // Loop with a scan output: its first dimension is the trip count.
  OpId Lp = addOp(G, "Loop",
                  {TensorType(DTypeKind::I64, {}),
                   TensorType(DTypeKind::Bool, {}), f32({4})},
                  {f32({4}), f32({6, 4})},
                  attrs({{"body", Attribute::getGraph(Body)}}), "", "loop");
  EXPECT_EQ(work(G, Lp).Launches, 18);
  // Without one the trip count is unknown.
  OpId Lq = addOp(G, "Loop",
                  {TensorType(DTypeKind::I64, {}),
                   TensorType(DTypeKind::Bool, {}), f32({4})},
                  {f32({4})}, attrs({{"body", Attribute::getGraph(Body)}}), "",
                  "loop2");
  EXPECT_EQ(work(G, Lq).Launches, 3);
  EXPECT_NE(work(G, Lq).Note.find("trip count unknown"), std::string::npos);
}

TEST(OpCostTest, OptimizerUpdates) {
  Graph G;
  TensorId W = G.addWeight("w", f32({256, 256}));
  TensorId Gr = G.addInput("g", f32({256, 256}));
  AttributeList A;
  A.set("state_copies", Attribute::getInt(2));
  OpId O = G.addOp("w/update", "dp", "AdamUpdate", {W, Gr},
                   {{"w/updated", f32({256, 256})}}, A);
  OpWork Wk = work(G, O);
  const double Bytes = 4.0 * 256 * 256;
  EXPECT_EQ(Wk.Kind, OpCostKind::Update);
  EXPECT_EQ(Wk.Bytes, 7 * Bytes);
  EXPECT_EQ(Wk.PersistentBytes, uint64_t(2 * Bytes));
  EXPECT_EQ(Wk.Flops, 12.0 * 256 * 256);
  EXPECT_TRUE(isUpdateOp(G.getOp(O)));
  OpId S = G.addOp("w/sgd", "dp", "SGDUpdate", {W, Gr},
                   {{"w/sgd.out", f32({256, 256})}});
  EXPECT_EQ(work(G, S).Bytes, 3 * Bytes);
  EXPECT_EQ(work(G, S).PersistentBytes, 0u);
}

TEST(OpCostTest, UnknownOpsAreElementwise) {
  Graph G;
  OpId O = addOp(G, "FancyOp", {f32({10})}, {f32({10}), f32({5})}, {},
                 "com.example");
  OpWork W = work(G, O);
  EXPECT_EQ(W.Kind, OpCostKind::Unknown);
  EXPECT_EQ(W.Flops, 15);
  EXPECT_EQ(W.Bytes, 4 * 25);
  EXPECT_EQ(W.Note, "unknown op kind: treated as elementwise");
}

TEST(OpCostTest, RooflineTimes) {
  Cluster C = makeTestCluster();
  const DeviceType &GPU = C.getTypes()[0], &CPU = C.getTypes()[1];
  Graph G;
  // Compute-bound: 4.19 MFLOP at 70% of 1 TFLOP/s, plus 10 us launch.
  OpId MM = addOp(G, "MatMul", {f32({64, 128}), f32({128, 256})},
                  {f32({64, 256})}, {}, "", "mm");
  EXPECT_DOUBLE_EQ(getRooflineTime(work(G, MM), GPU),
                   2.0 * 64 * 128 * 256 / (1e12 * 0.7) + 1e-5);
  EXPECT_DOUBLE_EQ(getRooflineTime(work(G, MM), CPU),
                   2.0 * 64 * 128 * 256 / (1e11 * 0.8) + 1e-6);
  // Memory-bound: 3 x 4 MiB at 80% of 100 GB/s.
  OpId Add = addOp(G, "Add", {f32({1024, 1024}), f32({1024, 1024})},
                   {f32({1024, 1024})}, {}, "", "add");
  EXPECT_DOUBLE_EQ(getRooflineTime(work(G, Add), GPU),
                   3 * 4.0 * 1024 * 1024 / (1e11 * 0.8) + 1e-5);
  // Tiny: the launch overhead is nearly all of it.
  OpId Tiny = addOp(G, "Relu", {f32({4})}, {f32({4})}, {}, "", "tiny");
  double T = getRooflineTime(work(G, Tiny), GPU);
  EXPECT_DOUBLE_EQ(T, 32 / (1e11 * 0.8) + 1e-5);
  EXPECT_LT(T - 1e-5, 0.001 * T);
  // Views pay a tenth of a launch.
  OpId V = addOp(G, "Flatten", {f32({4, 4})}, {f32({16})}, {}, "", "view");
  EXPECT_DOUBLE_EQ(getRooflineTime(work(G, V), GPU), 1e-6);
  // f16 uses the f16 peak.
  OpId H = addOp(G, "MatMul",
                 {TensorType(DTypeKind::F16, {256, 256}),
                  TensorType(DTypeKind::F16, {256, 256})},
                 {TensorType(DTypeKind::F16, {256, 256})}, {}, "", "h");
  EXPECT_DOUBLE_EQ(getRooflineTime(work(G, H), GPU),
                   2.0 * 256 * 256 * 256 / (4e12 * 0.7) + 1e-5);
}

TEST(OpCostTest, EfficiencyTableIsSane) {
  for (unsigned K = 0; K != NumOpCostKinds; ++K) {
    const CostKindInfo &I = getCostKindInfo(OpCostKind(K));
    EXPECT_EQ(unsigned(I.Kind), K);
    for (Efficiency E : {I.GPU, I.CPU}) {
      EXPECT_GT(E.Compute, 0);
      EXPECT_LE(E.Compute, 1);
      EXPECT_GT(E.Memory, 0);
      EXPECT_LE(E.Memory, 1);
    }
    EXPECT_GE(I.LaunchFraction, 0);
    EXPECT_LE(I.LaunchFraction, 1);
  }
  EXPECT_EQ(getEfficiency(OpCostKind::Gemm, DeviceKind::Accelerator).Compute,
            getCostKindInfo(OpCostKind::Gemm).GPU.Compute);
}

TEST(OpCostTest, ClassifyOps) {
  EXPECT_EQ(classifyOp("", "Conv"), OpCostKind::Conv);
  EXPECT_EQ(classifyOp("ai.onnx", "Relu"), OpCostKind::Elementwise);
  EXPECT_EQ(classifyOp("dp", "ConvGrad"), OpCostKind::Conv);
  EXPECT_EQ(classifyOp("dp", "MomentumUpdate"), OpCostKind::Update);
  EXPECT_EQ(classifyOp("com.example", "Conv"), OpCostKind::Unknown);
  EXPECT_EQ(classifyOp("", "Frobnicate"), OpCostKind::Unknown);
}

// The training-graph pass's backward rules carry cost multiples too
// (docs/transforms.md); the cost model's must be the same.
TEST(OpCostTest, BackwardMultiplesAgreeWithTrainingGraphRules) {
  for (const BackwardRule &R : getBackwardRules()) {
    if (R.Kind == BackwardKind::None)
      continue;
    if (R.Kind == BackwardKind::Generic) {
      EXPECT_EQ(getBackwardMultiple("", "NoSuchOp"), R.CostMultiple);
      EXPECT_EQ(getBackwardMultiple("com.example", "Conv"), R.CostMultiple);
      continue;
    }
    EXPECT_EQ(getBackwardMultiple("", R.Type), R.CostMultiple) << R.Type.str();
  }
  for (StringRef T : getKnownOpTypes()) {
    const BackwardRule &R = getBackwardRule("", T);
    if (R.Kind != BackwardKind::None) {
      EXPECT_EQ(getBackwardMultiple("", T), R.CostMultiple) << T.str();
    }
  }
  EXPECT_EQ(getBackwardMultiple("", "MatMul"), 2);
  EXPECT_EQ(getBackwardMultiple("", "Relu"), 1);
  EXPECT_EQ(getBackwardMultiple("", "Softmax"), 1);
  EXPECT_EQ(getBackwardMultiple("", "LayerNormalization"), 2);
}

} // namespace
