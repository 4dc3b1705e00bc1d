//===- ImportBench.cpp - Import speed against protobuf parsing ------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Generates an ONNX model with N nodes (default 100,000: chains of
/// MatMul/Add/Relu/LayerNormalization blocks with weights, the shape mix of
/// a transformer MLP) and measures, in one run:
///
///   protobuf-parse   ModelProto::ParseFromArray alone
///   import-onnx      dp's whole import: parse, checker, shape inference,
///                    building the dp::Graph
///
/// and prints nodes/s of each and their ratio. Usage:
///
///   dp-bench-import [--nodes=N] [benchmark flags]
///   dp-bench-import [--nodes=N] --write-model=FILE   (writes the model only)
///
//===----------------------------------------------------------------------===//

#include "dp/Import/ONNXImporter.h"

#include "BenchReporter.h"

#include "onnx/onnx_pb.h"

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <string>

namespace {

int64_t NumNodes = 100000;
const char *WriteModel = nullptr;

/// Builds the model: blocks of 4 nodes, each block
///   h = Relu(Add(MatMul(x, W_i), b_i)); x' = LayerNormalization(h, g_i, b'_i)
/// with its weights stored as external data (the bytes never exist).
std::string makeModel(int64_t Nodes) {
  onnx::ModelProto M;
  M.set_ir_version(8);
  M.set_producer_name("dp-bench-import");
  auto *Opset = M.add_opset_import();
  Opset->set_domain("");
  Opset->set_version(17);
  onnx::GraphProto *G = M.mutable_graph();
  G->set_name("bench");
  auto AddValueInfo = [](google::protobuf::RepeatedPtrField<
                             onnx::ValueInfoProto> *List,
                         const std::string &Name,
                         std::initializer_list<int64_t> Dims) {
    onnx::ValueInfoProto *VI = List->Add();
    VI->set_name(Name);
    auto *TT = VI->mutable_type()->mutable_tensor_type();
    TT->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t D : Dims)
      TT->mutable_shape()->add_dim()->set_dim_value(D);
  };
  auto AddWeight = [&](const std::string &Name,
                       std::initializer_list<int64_t> Dims) {
    onnx::TensorProto *T = G->add_initializer();
    T->set_name(Name);
    T->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t D : Dims)
      T->add_dims(D);
    T->set_data_location(onnx::TensorProto::EXTERNAL);
    auto *Loc = T->add_external_data();
    Loc->set_key("location");
    Loc->set_value("bench.weights");
  };
  auto AddNode = [&](const char *Type, std::initializer_list<std::string> In,
                     const std::string &Out) {
    onnx::NodeProto *N = G->add_node();
    N->set_op_type(Type);
    N->set_name(Out);
    for (const std::string &I : In)
      N->add_input(I);
    N->add_output(Out);
    return N;
  };
  AddValueInfo(G->mutable_input(), "x0", {8, 64});
  std::string X = "x0";
  for (int64_t B = 0; B * 4 < Nodes; ++B) {
    std::string S = std::to_string(B);
    AddWeight("w" + S, {64, 64});
    AddWeight("b" + S, {64});
    AddWeight("g" + S, {64});
    AddWeight("beta" + S, {64});
    AddNode("MatMul", {X, "w" + S}, "mm" + S);
    AddNode("Add", {"mm" + S, "b" + S}, "add" + S);
    AddNode("Relu", {"add" + S}, "relu" + S);
    onnx::NodeProto *LN =
        AddNode("LayerNormalization", {"relu" + S, "g" + S, "beta" + S},
                "ln" + S);
    auto *Axis = LN->add_attribute();
    Axis->set_name("axis");
    Axis->set_type(onnx::AttributeProto::INT);
    Axis->set_i(-1);
    X = "ln" + S;
  }
  AddValueInfo(G->mutable_output(), X, {8, 64});
  std::string Bytes;
  M.SerializeToString(&Bytes);
  return Bytes;
}

const std::string &model() {
  static const std::string Bytes = makeModel(NumNodes);
  return Bytes;
}

void BM_ProtobufParse(benchmark::State &State) {
  const std::string &Bytes = model();
  for (auto _ : State) {
    onnx::ModelProto M;
    bool Ok = M.ParseFromArray(Bytes.data(), int(Bytes.size()));
    benchmark::DoNotOptimize(Ok);
  }
  State.counters["nodes/s"] = benchmark::Counter(
      double(NumNodes), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_ImportONNX(benchmark::State &State) {
  const std::string &Bytes = model();
  for (auto _ : State) {
    auto G = dp::importONNX(llvm::MemoryBufferRef(Bytes, "bench.onnx"));
    if (!G) {
      State.SkipWithError(llvm::toString(G.takeError()).c_str());
      break;
    }
    benchmark::DoNotOptimize(G->getNumOps());
  }
  State.counters["nodes/s"] = benchmark::Counter(
      double(NumNodes), benchmark::Counter::kIsIterationInvariantRate);
}

/// Prints the usual table, then the ratio of the two benchmarks' times.
class RatioReporter : public dp::SecondsReporter {
public:
  void Finalize() override {
    ConsoleReporter::Finalize();
    const double *Parse = seconds("BM_ProtobufParse");
    const double *Import = seconds("BM_ImportONNX");
    if (!Parse || !Import)
      return;
    std::printf("\nnodes: %lld, model bytes: %zu\n", (long long)NumNodes,
                model().size());
    std::printf("protobuf parse: %10.0f nodes/s\n", NumNodes / *Parse);
    std::printf("import-onnx:    %10.0f nodes/s  (target >= 1000000)\n",
                NumNodes / *Import);
    std::printf("import / parse time ratio: %.1fx\n", *Import / *Parse);
  }
};

} // namespace

int main(int argc, char **argv) {
  // Our own flag first; the rest goes to Google Benchmark.
  std::vector<char *> Args;
  for (int I = 0; I != argc; ++I) {
    if (std::strncmp(argv[I], "--nodes=", 8) == 0) {
      NumNodes = std::atoll(argv[I] + 8);
      continue;
    }
    if (std::strncmp(argv[I], "--write-model=", 14) == 0) {
      WriteModel = argv[I] + 14;
      continue;
    }
    Args.push_back(argv[I]);
  }
  if (WriteModel) {
    // For `dp-opt -time-passes -disable-output FILE`, which times import's
    // phases one by one.
    std::FILE *F = std::fopen(WriteModel, "wb");
    if (!F || std::fwrite(model().data(), 1, model().size(), F) !=
                  model().size()) {
      std::fprintf(stderr, "dp-bench-import: cannot write %s\n", WriteModel);
      return 1;
    }
    std::fclose(F);
    return 0;
  }
  int ArgCount = int(Args.size());
  benchmark::Initialize(&ArgCount, Args.data());
  benchmark::RegisterBenchmark("BM_ProtobufParse", BM_ProtobufParse)
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("BM_ImportONNX", BM_ImportONNX)
      ->Unit(benchmark::kMillisecond);
  RatioReporter Reporter;
  benchmark::RunSpecifiedBenchmarks(&Reporter);
  benchmark::Shutdown();
  return 0;
}
