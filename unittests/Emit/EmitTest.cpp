//===- EmitTest.cpp - Mapping ops to the user's model, and splitting it ---===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/Emit/Emit.h"
#include "dp/Emit/PlacedModel.h"
#include "dp/IR/TextFormat.h"
#include "dp/Import/ONNXImporter.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include "onnx/onnx_pb.h"

#include "gtest/gtest.h"

#include <map>

using namespace dp;
using llvm::ArrayRef;
using llvm::MemoryBufferRef;
using llvm::StringRef;

namespace {

/// \p NumDevices devices "d0".. of one GPU type "t" behind one switch;
/// the last one is a CPU when \p LastIsCPU.
Cluster makeCluster(unsigned NumDevices, bool LastIsCPU = false) {
  std::vector<DeviceType> Types(LastIsCPU ? 2 : 1);
  for (unsigned I = 0; I != Types.size(); ++I) {
    Types[I].Name = I ? "c" : "t";
    Types[I].Kind = I ? DeviceKind::CPU : DeviceKind::GPU;
    Types[I].PeakFlops[unsigned(DTypeKind::F32)] = 1e12;
    Types[I].MemoryBandwidth = 1e11;
    Types[I].MemoryBytes = 1 << 30;
  }
  std::vector<Device> Devs;
  std::vector<Link> Links;
  for (unsigned I = 0; I != NumDevices; ++I) {
    bool CPU = LastIsCPU && I + 1 == NumDevices;
    Devs.push_back({(CPU ? "cpu" : "d") + std::to_string(I), CPU ? 1u : 0u});
    Links.push_back({"l" + std::to_string(I), I, NumDevices, 1e9, 0});
  }
  return llvm::cantFail(Cluster::create("test", Types, Devs, {"sw"}, Links));
}

Graph parse(StringRef Text) {
  llvm::Expected<Graph> G = parseGraph(MemoryBufferRef(Text, "test.dp"));
  EXPECT_TRUE(bool(G)) << llvm::toString(G.takeError());
  return std::move(*G);
}

TEST(ModulePath, TorchScopes) {
  EXPECT_EQ(getModulePath("/layer1/layer1.0/conv1/Conv"), "layer1.0.conv1");
  EXPECT_EQ(getModulePath("/bert/encoder/layer.0/attention/self/MatMul"),
            "bert.encoder.layer.0.attention.self");
  EXPECT_EQ(getModulePath("/encoder/layers.0/LSTM"), "encoder.layers.0");
  EXPECT_EQ(getModulePath("/layer1/layer10/Relu"), "layer1.layer10");
  EXPECT_EQ(getModulePath("/fc/MatMul/grad"), "fc.MatMul");
  EXPECT_EQ(getModulePath("/Add"), "");
  EXPECT_EQ(getModulePath("Conv_3"), "");
  EXPECT_EQ(getModulePath(""), "");
}

TEST(Origins, FollowRNNsAndHints) {
  Graph G = parse(R"(dp.graph @g {
  input %x : f32[1]
  op @fc = Op(%x) -> (%a : f32[1])
  op @lstm/t0 = Op(%a) -> (%b : f32[1]) [rnn = "lstm"]
  op @loss = Op(%b) -> (%l : f32[]) [phase = "loss"]
  op @loss/seed = Op() -> (%s : f32[]) [colocate = "loss", phase = "loss"]
  op @lstm/t0/grad = Op(%s) -> (%gb : f32[1]) [colocate = "lstm/t0"]
  op @fc/grad = Op(%gb) -> (%ga : f32[1]) [colocate = "fc"]
  op @fc/sum = Op(%ga) -> (%gs : f32[1]) [colocate = "fc/grad"]
  op @p = Op(%x) -> (%p1 : f32[1]) [colocate = "q"]
  op @q = Op(%x) -> (%q1 : f32[1]) [colocate = "p"]
  op @gone = Op(%x) -> (%g1 : f32[1]) [colocate = "nowhere"]
  output %gs
})");
  std::vector<StringRef> O = computeOrigins(G);
  std::vector<StringRef> Expected = {"fc", "lstm", "", "", "lstm",
                                     "fc", "fc",   "", "", ""};
  ASSERT_EQ(O.size(), Expected.size());
  for (unsigned I = 0; I != O.size(); ++I)
    EXPECT_EQ(O[I], Expected[I]) << "op " << G.getOp(I).Name.str();
}

TEST(DeviceMap, OutermostModulesOnOneDevice) {
  Graph G = parse(R"(dp.graph @g {
  input %x : f32[1]
  op @/stem/Relu = Op(%x) -> (%a : f32[1]) [device = "d0", time.c = 1.0, time.t = 1.0]
  op @/blocks/blocks.0/mm/Op = Op(%a) -> (%b : f32[1]) [device = "d0", time.c = 1.0, time.t = 1.0]
  op @/blocks/blocks.1/mm/Op = Op(%b) -> (%c : f32[1]) [device = "d1", time.c = 1.0, time.t = 1.0]
  op @/blocks/blocks.1/act/Op = Op(%c) -> (%d : f32[1]) [device = "d1", time.c = 1.0, time.t = 1.0]
  op @/head/A = Op(%d) -> (%e : f32[1]) [device = "d1", time.c = 1.0, time.t = 1.0]
  op @/head/B = Op(%e) -> (%f : f32[1]) [device = "cpu2", time.c = 3.0, time.t = 3.0]
  op @/head/B/grad = Op(%f) -> (%g : f32[1]) [colocate = "/head/B", device = "cpu2", time.c = 3.0, time.t = 3.0]
  output %g
})");
  Cluster C = makeCluster(3, /*LastIsCPU=*/true);
  llvm::Expected<PlacedStep> S = PlacedStep::simulate(G, C);
  ASSERT_TRUE(bool(S)) << llvm::toString(S.takeError());
  DeviceMap Map = computeDeviceMap(*S);
  std::vector<std::pair<std::string, unsigned>> Got;
  for (const DeviceMap::Entry &E : Map.Entries)
    Got.emplace_back(E.Module, E.Device);
  std::vector<std::pair<std::string, unsigned>> Want = {
      {"stem", 0}, {"blocks.0", 0}, {"blocks.1", 1}, {"head", 2}};
  EXPECT_EQ(Got, Want);
  ASSERT_EQ(Map.Warnings.size(), 1u);
  EXPECT_EQ(Map.Warnings[0], "module 'head' is split: 14 % on d1, 86 % on "
                             "cpu2; the device_map puts it on cpu2");

  std::string JSON;
  llvm::raw_string_ostream OS(JSON);
  writeDeviceMap(OS, *S, Map);
  EXPECT_EQ(OS.str(), "{\n  \"stem\": 0,\n  \"blocks.0\": 0,\n  \"blocks.1\": "
                      "1,\n  \"head\": \"cpu\"\n}\n");
}

/// ONNX text syntax: nodes without names, tensors crossing both ways.
const char *const ZigZag = R"(
<ir_version: 8, opset_import: ["" : 17]>
zig (float[64] x) => (float[64] y1, float[64] y2) {
  ta = Relu(x)
  tb = Neg(ta)
  tc = Add(ta, tb)
  y1 = Abs(tc)
  y2 = Mul(y1, ta)
}
)";

TEST(Split, JoinsBackToTheModelsDataflow) {
  MemoryBufferRef Buffer(ZigZag, "zig.onnx");
  llvm::Expected<Graph> G = importONNX(Buffer);
  ASSERT_TRUE(bool(G)) << llvm::toString(G.takeError());
  Cluster C = makeCluster(3);
  const char *const Devices[] = {"d0", "d1", "d0", "d1", "d2"};
  ASSERT_EQ(G->getNumOps(), 5u);
  for (OpId O = 0; O != 5; ++O) {
    G->getOp(O).Annotations.set("device", Attribute::getString(Devices[O]));
    G->getOp(O).Annotations.set("time.t", Attribute::getFloat(1e-3));
  }
  llvm::Expected<PlacedStep> S = PlacedStep::simulate(*G, C);
  ASSERT_TRUE(bool(S)) << llvm::toString(S.takeError());
  llvm::Expected<PlacedModel> PM = PlacedModel::build(Buffer, *S);
  ASSERT_TRUE(bool(PM)) << llvm::toString(PM.takeError());
  llvm::Expected<SplitModel> Split = PM->split();
  ASSERT_TRUE(bool(Split)) << llvm::toString(Split.takeError());
  ASSERT_EQ(Split->Parts.size(), 3u);

  const onnx::GraphProto &OG = PM->getModel().graph();
  // Join: every node of the original in exactly one part, in order.
  std::map<std::string, unsigned> NodeIndex;
  for (int I = 0; I != OG.node_size(); ++I)
    NodeIndex[OG.node(I).SerializeAsString()] = I;
  std::vector<int> PartOf(OG.node_size(), -1);
  for (unsigned P = 0; P != Split->Parts.size(); ++P) {
    const onnx::ModelProto &M = *Split->Parts[P].Model;
    EXPECT_FALSE(bool(checkONNXModel(M, "part")));
    for (const onnx::NodeProto &N : M.graph().node()) {
      auto It = NodeIndex.find(N.SerializeAsString());
      ASSERT_NE(It, NodeIndex.end()) << N.name();
      EXPECT_EQ(PartOf[It->second], -1) << N.name();
      PartOf[It->second] = P;
    }
  }
  for (int I = 0; I != OG.node_size(); ++I)
    EXPECT_NE(PartOf[I], -1) << OG.node(I).op_type();

  // Every edge between parts is a transfer that one part outputs and the
  // other takes as input.
  llvm::StringMap<unsigned> Producer;
  for (int I = 0; I != OG.node_size(); ++I)
    for (const std::string &Out : OG.node(I).output())
      Producer[Out] = I;
  auto Has = [](const auto &List, StringRef Name) {
    for (const onnx::ValueInfoProto &VI : List)
      if (VI.name() == Name)
        return true;
    return false;
  };
  llvm::StringSet<> Crossing;
  for (int I = 0; I != OG.node_size(); ++I) {
    for (const std::string &In : OG.node(I).input()) {
      auto It = Producer.find(In);
      if (It == Producer.end() || PartOf[It->second] == PartOf[I])
        continue;
      Crossing.insert(In);
      const auto &From = Split->Parts[PartOf[It->second]];
      const auto &To = Split->Parts[PartOf[I]];
      EXPECT_TRUE(Has(From.Model->graph().output(), In)) << In;
      EXPECT_TRUE(Has(To.Model->graph().input(), In)) << In;
    }
  }
  EXPECT_EQ(Crossing.size(), Split->Transfers.size());
  std::vector<std::string> Names;
  for (const CrossDeviceTensor &X : Split->Transfers) {
    EXPECT_TRUE(Crossing.contains(X.Name)) << X.Name;
    EXPECT_EQ(X.Bytes, llvm::Optional<uint64_t>(256));
    Names.push_back(X.Name);
  }
  EXPECT_EQ(Names, (std::vector<std::string>{"ta", "tb", "tc", "y1"}));
  // ta goes from d0 to both d1 and d2.
  EXPECT_EQ(Split->Transfers[0].From, 0u);
  EXPECT_EQ(Split->Transfers[0].To, (llvm::SmallVector<unsigned, 2>{1, 2}));
  // Graph outputs stay where they are made.
  EXPECT_TRUE(Has(Split->Parts[1].Model->graph().output(), "y1"));
  EXPECT_TRUE(Has(Split->Parts[2].Model->graph().output(), "y2"));
}

TEST(PlacedModel, RejectsAnotherModel) {
  MemoryBufferRef Buffer(ZigZag, "zig.onnx");
  Graph G = parse(R"(dp.graph @g {
  input %x : f32[1]
  op @other = Op(%x) -> (%a : f32[1]) [device = "d0", time.t = 1.0]
  output %a
})");
  Cluster C = makeCluster(1);
  llvm::Expected<PlacedStep> S = PlacedStep::simulate(G, C);
  ASSERT_TRUE(bool(S)) << llvm::toString(S.takeError());
  llvm::Expected<PlacedModel> PM = PlacedModel::build(Buffer, *S);
  ASSERT_FALSE(bool(PM));
  EXPECT_EQ(llvm::toString(PM.takeError()),
            "zig.onnx: error: emit: node 'Relu_0' and 4 more nodes of the "
            "model have no op in the placed graph; the model must be the "
            "one the graph was imported from");
}

} // namespace
