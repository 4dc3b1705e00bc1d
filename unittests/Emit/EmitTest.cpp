//===- EmitTest.cpp - Ops mapped to the user's model, split, scheduled ----===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "DiagnosticsTestUtil.h"

#include "dp/Emit/Emit.h"
#include "dp/Emit/EmitPass.h"
#include "dp/Emit/PlacedModel.h"
#include "dp/Emit/Schedule.h"
#include "dp/IR/TextFormat.h"
#include "dp/Import/ONNXImporter.h"
#include "dp/Sim/SimulatePass.h"
#include "dp/Sim/StepSimulation.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include "onnx/onnx_pb.h"

#include "gtest/gtest.h"

#include <map>
#include <random>

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

/// Records the step simulation the analyses hold after the passes before.
struct RecordStep {
  std::vector<const StepSimulation *> *Seen;
  static llvm::StringRef name() { return "record-step"; }
  static GraphChange changes() { return GraphChange::None; }
  llvm::Error run(Graph &, PassContext &Ctx) {
    Seen->push_back(Ctx.Analyses.get<StepSimulation>());
    return llvm::Error::success();
  }
};

TEST(EmitPass, UsesTheStepSimulateSimulated) {
  Graph G = parse(R"(dp.graph @g {
  input %x : f32[1]
  op @a = Op(%x) -> (%y : f32[1]) [device = "d0", time.t = 1.0]
  op @b = Op(%y) -> (%z : f32[1]) [device = "d1", time.t = 2.0]
  output %z
})");
  Cluster C = makeCluster(2);
  llvm::SmallString<64> Dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("emit-test", Dir));
  llvm::Expected<EmitOptions> Opts =
      EmitPass::parseOptions({{"format", "json"}, {"out", (Dir + "/g").str()}});
  ASSERT_TRUE(bool(Opts)) << llvm::toString(Opts.takeError());
  std::vector<const StepSimulation *> Seen;
  PassManager PM;
  PM.addPass(SimulatePass());
  PM.addPass(RecordStep{&Seen});
  PM.addPass(EmitPass(std::move(*Opts)));
  PM.addPass(RecordStep{&Seen});
  PassContext Ctx;
  Ctx.TheCluster = &C;
  ASSERT_FALSE(bool(PM.run(G, Ctx)));
  ASSERT_EQ(Seen.size(), 2u);
  ASSERT_NE(Seen[0], nullptr);
  // emit simulated nothing again: the step is the one simulate stored.
  EXPECT_EQ(Seen[1], Seen[0]);
  EXPECT_EQ(Seen[0]->Result.StepTime,
            G.getAnnotations().get("step_time_s")->getFloat());
  llvm::sys::fs::remove_directories(Dir);
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

TEST(Split, SegmentsRunInOrder) {
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

  // d0 -> d1 -> d0 -> d1 -> d2: each return to a device is a new segment.
  ASSERT_EQ(Split->Segments.size(), 5u);
  std::vector<unsigned> Devs, Index;
  std::vector<std::vector<unsigned>> Nodes, After;
  for (const SplitModel::Segment &Seg : Split->Segments) {
    Devs.push_back(Seg.Device);
    Index.push_back(Seg.IndexOnDevice);
    Nodes.push_back(Seg.Nodes);
    After.emplace_back(Seg.After.begin(), Seg.After.end());
  }
  EXPECT_EQ(Devs, (std::vector<unsigned>{0, 1, 0, 1, 2}));
  EXPECT_EQ(Index, (std::vector<unsigned>{0, 0, 1, 1, 0}));
  EXPECT_EQ(Nodes,
            (std::vector<std::vector<unsigned>>{{0}, {1}, {2}, {3}, {4}}));
  EXPECT_EQ(After,
            (std::vector<std::vector<unsigned>>{{}, {0}, {0, 1}, {2}, {0, 3}}));

  // Run the segments in order: every input is a graph input or an output
  // of an earlier segment, and every node is in one segment, unchanged.
  const onnx::GraphProto &OG = PM->getModel().graph();
  std::map<std::string, unsigned> NodeIndex;
  for (int I = 0; I != OG.node_size(); ++I)
    NodeIndex[OG.node(I).SerializeAsString()] = I;
  std::vector<int> SegmentOf(OG.node_size(), -1);
  llvm::StringMap<unsigned> MadeBy;
  for (unsigned K = 0; K != Split->Segments.size(); ++K) {
    const onnx::ModelProto &M = *Split->Models[K];
    EXPECT_FALSE(bool(checkONNXModel(M, "segment")));
    for (const onnx::ValueInfoProto &VI : M.graph().input()) {
      if (VI.name() == "x")
        continue;
      auto It = MadeBy.find(VI.name());
      ASSERT_NE(It, MadeBy.end()) << VI.name();
      EXPECT_TRUE(llvm::is_contained(After[K], It->second)) << VI.name();
    }
    for (const onnx::ValueInfoProto &VI : M.graph().output())
      EXPECT_TRUE(MadeBy.try_emplace(VI.name(), K).second) << VI.name();
    for (const onnx::NodeProto &N : M.graph().node()) {
      auto It = NodeIndex.find(N.SerializeAsString());
      ASSERT_NE(It, NodeIndex.end()) << N.name();
      EXPECT_EQ(SegmentOf[It->second], -1) << N.name();
      SegmentOf[It->second] = K;
    }
  }
  for (int I = 0; I != OG.node_size(); ++I)
    EXPECT_NE(SegmentOf[I], -1) << OG.node(I).op_type();
  // Graph outputs stay where they are made.
  EXPECT_EQ(MadeBy.lookup("y1"), 3u);
  EXPECT_EQ(MadeBy.lookup("y2"), 4u);

  std::vector<std::string> Names;
  std::vector<std::vector<unsigned>> To;
  for (const SegmentTensor &X : Split->Transfers) {
    EXPECT_EQ(X.Bytes, llvm::Optional<uint64_t>(256));
    EXPECT_EQ(X.From, unsigned(SegmentOf[X.ProducerNode]));
    Names.push_back(X.Name);
    To.emplace_back(X.To.begin(), X.To.end());
  }
  EXPECT_EQ(Names, (std::vector<std::string>{"ta", "tb", "tc", "y1"}));
  EXPECT_EQ(To, (std::vector<std::vector<unsigned>>{{1, 2, 4}, {2}, {3}, {4}}));
}

// A graph output whose type has no shape fails the checker, which names
// neither the tensor nor a node: the error names both.
TEST(Split, CheckerErrorNamesTheTensorAndNode) {
  onnx::ModelProto M;
  M.set_ir_version(8);
  M.add_opset_import()->set_version(17);
  onnx::GraphProto &G = *M.mutable_graph();
  G.set_name("g");
  onnx::ValueInfoProto &X = *G.add_input();
  X.set_name("x");
  X.mutable_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::FLOAT);
  X.mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->add_dim()
      ->set_dim_value(2);
  onnx::NodeProto &N = *G.add_node();
  N.set_name("relu0");
  N.set_op_type("Relu");
  N.add_input("x");
  N.add_output("y");
  onnx::ValueInfoProto &Y = *G.add_output();
  Y.set_name("y");
  Y.mutable_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::FLOAT);
  std::vector<dp::test::Diag> Diags =
      dp::test::collectErrors(checkONNXModel(M, "the submodel of segment 1"));
  ASSERT_EQ(Diags.size(), 1u);
  EXPECT_EQ(Diags[0].Loc.Node, "relu0");
  EXPECT_EQ(Diags[0].Loc.Tensor, "y");
  EXPECT_NE(Diags[0].Message.find("the submodel of segment 1 fails the ONNX "
                                  "checker"),
            std::string::npos)
      << Diags[0].Message;
  EXPECT_NE(Diags[0].Message.find("has no shape"), std::string::npos)
      << Diags[0].Message;
  // With the shape, the model passes.
  Y.mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->add_dim()
      ->set_dim_value(2);
  llvm::Error E = checkONNXModel(M, "segment");
  EXPECT_FALSE(bool(E)) << llvm::toString(std::move(E));
}

TEST(Split, SortsUnsortedNodes) {
  // import-onnx sorts nodes that ONNX wants sorted; split sorts them too,
  // so that every segment passes the checker.
  const char *const Unsorted = R"(
<ir_version: 8, opset_import: ["" : 17]>
unsorted (float[64] x) => (float[64] y) {
  tb = Neg(ta)
  ta = Relu(x)
  y = Abs(tb)
}
)";
  MemoryBufferRef Buffer(Unsorted, "unsorted.onnx");
  llvm::Expected<Graph> G = importONNX(Buffer);
  ASSERT_TRUE(bool(G)) << llvm::toString(G.takeError());
  Cluster C = makeCluster(2);
  for (OpId O = 0, E = G->getNumOps(); O != E; ++O) {
    Op &Node = G->getOp(O);
    Node.Annotations.set(
        "device", Attribute::getString(Node.Type == "Neg" ? "d1" : "d0"));
    Node.Annotations.set("time.t", Attribute::getFloat(1e-3));
  }
  llvm::Expected<PlacedStep> S = PlacedStep::simulate(*G, C);
  ASSERT_TRUE(bool(S)) << llvm::toString(S.takeError());
  llvm::Expected<PlacedModel> PM = PlacedModel::build(Buffer, *S);
  ASSERT_TRUE(bool(PM)) << llvm::toString(PM.takeError());
  llvm::Expected<SplitModel> Split = PM->split();
  ASSERT_TRUE(bool(Split)) << llvm::toString(Split.takeError());
  ASSERT_EQ(Split->Segments.size(), 3u);
  std::vector<std::vector<unsigned>> Nodes;
  for (unsigned K = 0; K != Split->Segments.size(); ++K) {
    EXPECT_FALSE(bool(checkONNXModel(*Split->Models[K], "segment")));
    Nodes.push_back(Split->Segments[K].Nodes);
  }
  EXPECT_EQ(Nodes, (std::vector<std::vector<unsigned>>{{1}, {0}, {2}}));
}

/// The segments of \p Devices and \p Producers, checked: every tensor that
/// crosses segments goes to a higher level and a later segment, and each
/// segment holds one device's nodes.
Segmentation segmentAndCheck(ArrayRef<unsigned> Devices,
                             ArrayRef<std::vector<unsigned>> Producers) {
  Segmentation Segs = computeSegments(Devices, Producers);
  EXPECT_EQ(Segs.SegmentOf.size(), Devices.size());
  for (unsigned K = 0; K + 1 < Segs.getNumSegments(); ++K)
    EXPECT_LE(Segs.Level[K], Segs.Level[K + 1]);
  std::vector<bool> Used(Segs.getNumSegments());
  for (unsigned I = 0; I != Devices.size(); ++I) {
    unsigned K = Segs.SegmentOf[I];
    Used[K] = true;
    EXPECT_EQ(Segs.Device[K], Devices[I]) << "node " << I;
    for (unsigned P : Producers[I]) {
      unsigned From = Segs.SegmentOf[P];
      if (From == K)
        continue;
      EXPECT_LT(From, K) << "node " << P << " -> " << I;
      EXPECT_LT(Segs.Level[From], Segs.Level[K]) << "node " << P << " -> " << I;
    }
  }
  for (unsigned K = 0; K != Used.size(); ++K)
    EXPECT_TRUE(Used[K]) << "segment " << K << " is empty";
  return Segs;
}

TEST(Segments, ReturnsToADeviceStartNewSegments) {
  // a (d0) -> b (d1) -> c (d0): three segments.
  Segmentation Segs = segmentAndCheck({0, 1, 0}, {{}, {0}, {1}});
  EXPECT_EQ(Segs.SegmentOf, (std::vector<unsigned>{0, 1, 2}));
  EXPECT_EQ(Segs.Device, (std::vector<unsigned>{0, 1, 0}));
}

TEST(Segments, IndependentNodesJoinTheLowestSegment) {
  // d0: a, then c after b on d1; d is independent of everything: it joins
  // d0's first segment, not the one after b.
  Segmentation Segs = segmentAndCheck({0, 1, 0, 0, 1}, {{}, {0}, {1}, {}, {2}});
  EXPECT_EQ(Segs.SegmentOf, (std::vector<unsigned>{0, 1, 2, 0, 3}));
}

TEST(Segments, UnreadSegmentsRiseInsteadOfSplitting) {
  // a on d0 is read by nobody yet when c on d0 needs to run after b on
  // d1: a's segment rises above b's, and d0 has one segment.
  Segmentation Segs = segmentAndCheck({0, 1, 0}, {{}, {}, {0, 1}});
  EXPECT_EQ(Segs.getNumSegments(), 2u);
  EXPECT_EQ(Segs.SegmentOf, (std::vector<unsigned>{1, 0, 1}));
}

TEST(Segments, NodesReadByOneLaterSegmentMoveThere) {
  // k (d0, a constant) is read only by d (d0), which must run after b on
  // d1: k moves into d's segment instead of being sent to it.
  Segmentation Segs = segmentAndCheck({0, 0, 1, 0}, {{}, {}, {1}, {0, 2}});
  EXPECT_EQ(Segs.SegmentOf, (std::vector<unsigned>{2, 0, 1, 2}));
}

TEST(Segments, RandomGraphsGiveADag) {
  std::mt19937 Rng(7);
  for (unsigned Trial = 0; Trial != 200; ++Trial) {
    unsigned N = 1 + Rng() % 60, D = 1 + Rng() % 4;
    std::vector<unsigned> Devices(N);
    std::vector<std::vector<unsigned>> Producers(N);
    for (unsigned I = 0; I != N; ++I) {
      // Runs of one device, as placers make them, with some noise.
      Devices[I] = I && Rng() % 4 ? Devices[I - 1] : Rng() % D;
      for (unsigned P = 0; P != I; ++P)
        if (Rng() % 8 == 0 || (P + 1 == I && Rng() % 2))
          Producers[I].push_back(P);
    }
    segmentAndCheck(Devices, Producers);
  }
}

using Afters = std::vector<llvm::SmallVector<unsigned, 4>>;

/// "F0 B0 ...": \p Order in short.
std::string formatOrder(ArrayRef<ScheduleItem> Order) {
  std::string Out;
  for (const ScheduleItem &Item : Order)
    Out += (Out.empty() ? "" : " ") +
           std::string(Item.Kind == ScheduleItemKind::Forward ? "F" : "B") +
           std::to_string(Item.Segment);
  return Out;
}

/// Checks that \p Order holds every item once and is a linear extension of
/// the dependencies of the segments \p After gives.
void checkLinearExtension(const Afters &After, bool Training,
                          ArrayRef<ScheduleItem> Order) {
  unsigned N = After.size();
  ASSERT_EQ(Order.size(), Training ? 2 * N : N);
  std::vector<int> Fwd(N, -1), Bwd(N, -1);
  for (unsigned P = 0; P != Order.size(); ++P) {
    ASSERT_LT(Order[P].Segment, N);
    std::vector<int> &Of =
        Order[P].Kind == ScheduleItemKind::Forward ? Fwd : Bwd;
    int &Slot = Of[Order[P].Segment];
    EXPECT_EQ(Slot, -1) << "item " << P << " twice";
    Slot = P;
  }
  for (unsigned K = 0; K != N; ++K) {
    for (unsigned J : After[K]) {
      EXPECT_LT(Fwd[J], Fwd[K]) << "forward " << J << " before forward " << K;
      if (Training) {
        EXPECT_LT(Bwd[K], Bwd[J])
            << "backward " << K << " before backward " << J;
      }
    }
    if (Training) {
      EXPECT_LT(Fwd[K], Bwd[K]) << "forward " << K << " before its backward";
    }
  }
}

TEST(Schedule, KeysThatContradictTheDependenciesStillGiveAnOrder) {
  // 0 -> {1, 2} -> 3, and 4 alone. The forward keys fall along every
  // dependency and the backward keys rise along every backward one, as if
  // each item had started before the items it waits for.
  Afters After = {{}, {0}, {0}, {1, 2}, {}};
  std::vector<double> Fwd = {10, 9, 8, 7, -1};
  std::vector<double> Bwd = {-5, -4, -3, -2, -100};
  std::vector<ScheduleItem> Order = orderScheduleItems(After, Fwd, Bwd);
  checkLinearExtension(After, /*Training=*/true, Order);
  // Among the ready items, the smallest key: B4 as soon as F4 is done, F2
  // before F1, B1 before B2.
  EXPECT_EQ(formatOrder(Order), "F4 B4 F0 F2 F1 F3 B3 B1 B2 B0");

  std::vector<ScheduleItem> Inference = orderScheduleItems(After, Fwd, {});
  checkLinearExtension(After, /*Training=*/false, Inference);
  EXPECT_EQ(formatOrder(Inference), "F4 F0 F2 F1 F3");
}

TEST(Schedule, TiesGoForwardFirstThenBySegment) {
  // With equal keys, F1 comes before B0 (ready once F0 is done), and B0
  // before B1.
  Afters After = {{}, {}};
  std::vector<ScheduleItem> Order = orderScheduleItems(After, {0, 0}, {0, 0});
  checkLinearExtension(After, /*Training=*/true, Order);
  EXPECT_EQ(formatOrder(Order), "F0 F1 B0 B1");
}

TEST(Schedule, RandomKeysGiveALinearExtension) {
  std::mt19937 Rng(11);
  for (unsigned Trial = 0; Trial != 300; ++Trial) {
    unsigned N = 1 + Rng() % 30;
    Afters After(N);
    for (unsigned K = 0; K != N; ++K)
      for (unsigned J = 0; J != K; ++J)
        if (Rng() % 4 == 0)
          After[K].push_back(J);
    std::vector<double> Fwd(N), Bwd(N);
    for (unsigned K = 0; K != N; ++K) {
      // Few distinct values, so that ties are common.
      Fwd[K] = double(Rng() % 5) - 2;
      Bwd[K] = double(Rng() % 5) - 2;
    }
    bool Training = Trial % 2;
    std::vector<ScheduleItem> Order = orderScheduleItems(
        After, Fwd, Training ? ArrayRef<double>(Bwd) : ArrayRef<double>());
    checkLinearExtension(After, Training, Order);
    if (::testing::Test::HasFailure())
      break;
  }
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
