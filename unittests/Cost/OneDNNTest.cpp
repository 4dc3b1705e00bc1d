//===- OneDNNTest.cpp - Measurements with oneDNN and their cache ----------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
//
// Shapes are tiny so that measuring costs milliseconds.
//
//===----------------------------------------------------------------------===//

#include "CostTestUtil.h"

#include "dp/Cost/OneDNN.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

using namespace llvm;
using namespace dp;
using namespace dp::test;

namespace {

class OneDNNTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(sys::fs::createUniqueDirectory("dp-onednn-test", Dir));
  }
  void TearDown() override { sys::fs::remove_directories(Dir); }

  std::unique_ptr<OneDNNMeasurer> create(unsigned Runs = 3) {
    OneDNNOptions Opts;
    Opts.Runs = Runs;
    Opts.CacheDir = std::string(Dir);
    Expected<std::unique_ptr<OneDNNMeasurer>> M = OneDNNMeasurer::create(Opts);
    EXPECT_TRUE(bool(M)) << toString(M.takeError());
    return M ? std::move(*M) : nullptr;
  }

  SmallString<128> Dir;
};

AttributeList ints(StringRef Name, std::vector<int64_t> V) {
  AttributeList L;
  L.set(Name, Attribute::getInts(std::move(V)));
  return L;
}

/// One small op of every kind oneDNN measures.
Graph makeGraph() {
  Graph G;
  G.setOpset("", 17);
  addOp(G, "Conv", {f32({1, 4, 8, 8}), f32({8, 4, 3, 3}), f32({8})},
        {f32({1, 8, 8, 8})}, ints("pads", {1, 1, 1, 1}), "", "conv");
  addOp(G, "ConvTranspose", {f32({1, 4, 4, 4}), f32({4, 2, 2, 2})},
        {f32({1, 2, 8, 8})}, ints("strides", {2, 2}), "", "deconv");
  addOp(G, "MatMul", {f32({2, 8, 16}), f32({16, 8})}, {f32({2, 8, 8})}, {}, "",
        "matmul");
  AttributeList Pool = ints("kernel_shape", {2, 2});
  Pool.set("strides", Attribute::getInts({2, 2}));
  addOp(G, "MaxPool", {f32({1, 4, 8, 8})}, {f32({1, 4, 4, 4})}, Pool, "",
        "pool");
  addOp(G, "GlobalAveragePool", {f32({1, 4, 8, 8})}, {f32({1, 4, 1, 1})}, {},
        "", "gap");
  addOp(G, "Relu", {f32({64})}, {f32({64})}, {}, "", "relu");
  addOp(G, "Add", {f32({1, 8}), f32({4, 8})}, {f32({4, 8})}, {}, "", "add");
  addOp(G, "Sum", {f32({4, 8}), f32({4, 8}), f32({4, 8})}, {f32({4, 8})}, {},
        "", "sum");
  addOp(G, "Softmax", {f32({4, 16})}, {f32({4, 16})}, {}, "", "softmax");
  addOp(G, "LayerNormalization", {f32({4, 16}), f32({16}), f32({16})},
        {f32({4, 16})}, {}, "", "ln");
  addOp(G, "BatchNormalization",
        {f32({2, 4, 3, 3}), f32({4}), f32({4}), f32({4}), f32({4})},
        {f32({2, 4, 3, 3})}, {}, "", "bn");
  addOp(G, "ReduceSum", {f32({4, 16})}, {f32({4, 1})}, {}, "", "reduce");
  addOp(G, "LSTM", {f32({3, 2, 8}), f32({1, 32, 8}), f32({1, 32, 8})},
        {f32({3, 1, 2, 8})}, {}, "", "lstm");
  addOp(G, "GRU", {f32({3, 2, 8}), f32({1, 24, 8}), f32({1, 24, 8})},
        {f32({3, 1, 2, 8})}, {}, "", "gru");
  // Nothing oneDNN has.
  addOp(G, "Transpose", {f32({4, 8})}, {f32({8, 4})}, {}, "", "transpose");
  return G;
}

TEST_F(OneDNNTest, MeasuresEveryKindAndCachesIt) {
  Graph G = makeGraph();
  std::map<std::string, double> First;
  {
    std::unique_ptr<OneDNNMeasurer> M = create();
    ASSERT_TRUE(M);
    for (OpId O = 0; O != G.getNumOps(); ++O) {
      Measurement R = M->measure(G, O, 0);
      StringRef Name = G.getOp(O).Name;
      if (Name == "transpose") {
        EXPECT_EQ(R.Status, MeasureStatusKind::Unsupported);
        continue;
      }
      EXPECT_EQ(R.Status, MeasureStatusKind::Measured) << Name.str();
      EXPECT_GT(R.Seconds, 0) << Name.str();
      EXPECT_LT(R.Seconds, 1) << Name.str();
      EXPECT_EQ(R.Primitives, 1u);
      First[Name.str()] = R.Seconds;
    }
    EXPECT_EQ(M->getNumMeasured(), G.getNumOps() - 1);
    EXPECT_EQ(M->getNumCacheHits(), 0u);
    EXPECT_TRUE(M->getNotes().empty());
    ASSERT_FALSE(bool(M->saveCache()));
    EXPECT_TRUE(sys::fs::exists(M->getCachePath()));
  }
  // A second measurer finds everything in the cache: same times, nothing
  // measured.
  std::unique_ptr<OneDNNMeasurer> M = create();
  for (OpId O = 0; O != G.getNumOps(); ++O) {
    Measurement R = M->measure(G, O, 0);
    auto It = First.find(G.getOp(O).Name.str());
    if (It != First.end()) {
      EXPECT_EQ(R.Seconds, It->second) << It->first;
    }
  }
  EXPECT_EQ(M->getNumMeasured(), 0u);
  EXPECT_EQ(M->getNumCacheHits(), G.getNumOps() - 1);
}

TEST_F(OneDNNTest, BackwardOfConvAndMatMul) {
  Graph G = makeGraph();
  std::unique_ptr<OneDNNMeasurer> M = create();
  OpId Conv = G.lookupOp("conv");
  // dX and dW (no bias gradient) of the convolution.
  TensorId Y = G.getOp(Conv).Results[0];
  OpId Grad = G.addOp("conv/grad", "dp", "ConvGrad",
                      {Y, G.getOp(Conv).Operands[0], G.getOp(Conv).Operands[1]},
                      {{"x/grad", f32({1, 4, 8, 8})},
                       {"w/grad", f32({8, 4, 3, 3})},
                       {"", TensorType()}});
  Measurement R = M->measureBackward(G, Grad, Conv, 0);
  EXPECT_EQ(R.Status, MeasureStatusKind::Measured);
  EXPECT_EQ(R.Primitives, 2u);
  EXPECT_GT(R.Seconds, 0);
  // Only dW.
  OpId WOnly = G.addOp("conv/grad2", "dp", "ConvGrad", {Y},
                       {{"", TensorType()}, {"w/grad2", f32({8, 4, 3, 3})}});
  EXPECT_EQ(M->measureBackward(G, WOnly, Conv, 0).Primitives, 1u);
  OpId MM = G.lookupOp("matmul");
  OpId MGrad =
      G.addOp("matmul/grad", "dp", "MatMulGrad", {G.getOp(MM).Results[0]},
              {{"a/grad", f32({2, 8, 16})}, {"b/grad", f32({16, 8})}});
  R = M->measureBackward(G, MGrad, MM, 0);
  EXPECT_EQ(R.Status, MeasureStatusKind::Measured);
  EXPECT_EQ(R.Primitives, 2u);
  OpId Relu = G.lookupOp("relu");
  OpId RGrad = G.addOp("relu/grad", "dp", "ReluGrad",
                       {G.getOp(Relu).Results[0]}, {{"relu/g", f32({64})}});
  EXPECT_EQ(M->measureBackward(G, RGrad, Relu, 0).Status,
            MeasureStatusKind::Unsupported);
}

TEST_F(OneDNNTest, MeasureLimit) {
  Graph G = makeGraph();
  OneDNNOptions Opts;
  Opts.CacheDir = std::string(Dir);
  Opts.MeasureLimit = 1e-3;
  Expected<std::unique_ptr<OneDNNMeasurer>> M = OneDNNMeasurer::create(Opts);
  ASSERT_TRUE(bool(M));
  // An op estimated above the limit is not measured...
  EXPECT_EQ((*M)->measure(G, 0, 2e-3).Status, MeasureStatusKind::OverLimit);
  EXPECT_EQ((*M)->getNumMeasured(), 0u);
  // ... unless it is in the cache.
  EXPECT_EQ((*M)->measure(G, 0, 0).Status, MeasureStatusKind::Measured);
  EXPECT_EQ((*M)->measure(G, 0, 2e-3).Status, MeasureStatusKind::Measured);
}

TEST_F(OneDNNTest, CorruptCacheIsIgnored) {
  std::string Path;
  {
    std::unique_ptr<OneDNNMeasurer> M = create();
    Path = M->getCachePath().str();
  }
  {
    std::error_code EC;
    raw_fd_ostream OS(Path, EC);
    ASSERT_FALSE(EC);
    OS << "dp-onednn-cache 1\nthis is not a cache\n";
  }
  Graph G = makeGraph();
  std::unique_ptr<OneDNNMeasurer> M = create();
  ASSERT_EQ(M->getNotes().size(), 1u);
  EXPECT_EQ(M->getNotes()[0], "ignored the corrupt oneDNN cache '" + Path +
                                  "' (line 2: expected 'onednn " +
                                  OneDNNMeasurer::getLibraryVersion() + "')");
  EXPECT_EQ(M->measure(G, 0, 0).Status, MeasureStatusKind::Measured);
  EXPECT_EQ(M->getNumMeasured(), 1u);
  // Saving replaces the corrupt file with a good one.
  ASSERT_FALSE(bool(M->saveCache()));
  std::unique_ptr<OneDNNMeasurer> Again = create();
  EXPECT_TRUE(Again->getNotes().empty());
  EXPECT_EQ(Again->measure(G, 0, 0).Status, MeasureStatusKind::Measured);
  EXPECT_EQ(Again->getNumCacheHits(), 1u);
}

TEST_F(OneDNNTest, CacheFileFormat) {
  Graph G = makeGraph();
  std::unique_ptr<OneDNNMeasurer> M = create(1);
  M->measure(G, G.lookupOp("relu"), 0);
  double BW = M->getMemoryBandwidth();
  EXPECT_GT(BW, 1e8);
  ASSERT_FALSE(bool(M->saveCache()));
  ErrorOr<std::unique_ptr<MemoryBuffer>> Buf =
      MemoryBuffer::getFile(M->getCachePath());
  ASSERT_TRUE(bool(Buf));
  SmallVector<StringRef, 8> Lines;
  (*Buf)->getBuffer().split(Lines, '\n', -1, /*KeepEmpty=*/false);
  ASSERT_EQ(Lines.size(), 6u);
  EXPECT_EQ(Lines[0], "dp-onednn-cache 1");
  EXPECT_EQ(Lines[1], "onednn " + OneDNNMeasurer::getLibraryVersion());
  EXPECT_EQ(Lines[2], "cpu " + OneDNNMeasurer::getCPUModel());
  EXPECT_TRUE(Lines[3].startswith("threads "));
  EXPECT_TRUE(Lines[4].startswith("bandwidth "));
  EXPECT_TRUE(Lines[5].startswith("m "));
  EXPECT_TRUE(Lines[5].endswith(" eltwise:f32:eltwise_relu:0.0:0.0:64:"))
      << Lines[5].str();
  // The bandwidth is cached too.
  std::unique_ptr<OneDNNMeasurer> Again = create();
  EXPECT_EQ(Again->getMemoryBandwidth(), BW);
}

TEST_F(OneDNNTest, UnwritableCacheIsAnError) {
  OneDNNOptions Opts;
  Opts.CacheDir = "/dev/null/cache";
  Expected<std::unique_ptr<OneDNNMeasurer>> M = OneDNNMeasurer::create(Opts);
  ASSERT_TRUE(bool(M));
  Graph G = makeGraph();
  (*M)->measure(G, G.lookupOp("relu"), 0);
  Error E = (*M)->saveCache();
  ASSERT_TRUE(bool(E));
  EXPECT_NE(toString(std::move(E))
                .find("cannot create the oneDNN cache "
                      "directory"),
            std::string::npos);
}

TEST(OneDNNDefaultsTest, DefaultCacheDir) {
  std::string Dir = OneDNNMeasurer::getDefaultCacheDir();
  if (!Dir.empty()) {
    EXPECT_TRUE(StringRef(Dir).endswith("dp/onednn")) << Dir;
  }
  EXPECT_FALSE(OneDNNMeasurer::getCPUModel().empty());
  EXPECT_EQ(StringRef(OneDNNMeasurer::getLibraryVersion()).count('.'), 2u);
}

} // namespace
