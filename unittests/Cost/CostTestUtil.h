//===- CostTestUtil.h - Graphs and clusters for the cost tests --*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Builds one-op graphs and small clusters with round figures for the cost
/// model's unit tests.
///
//===----------------------------------------------------------------------===//

#ifndef DP_UNITTESTS_COST_COSTTESTUTIL_H
#define DP_UNITTESTS_COST_COSTTESTUTIL_H

#include "dp/Cluster/Cluster.h"
#include "dp/IR/Graph.h"

#include "gtest/gtest.h"

#include <string>
#include <utility>
#include <vector>

namespace dp {
namespace test {

inline TensorType f32(std::vector<int64_t> Dims) {
  return TensorType(DTypeKind::F32, Dims);
}

/// Adds inputs named "in0", "in1", ... (a null type leaves the operand
/// absent) and one op "op" with results "out0", ...; returns the op.
inline OpId addOp(Graph &G, llvm::StringRef Type,
                  std::vector<llvm::Optional<TensorType>> Operands,
                  std::vector<TensorType> Results, AttributeList Attrs = {},
                  llvm::StringRef Domain = "", llvm::StringRef Name = "op") {
  std::vector<TensorId> Ops;
  for (auto &T : Operands) {
    if (!T) {
      Ops.push_back(NoId);
      continue;
    }
    std::string N = (Name + ".in" + llvm::Twine(Ops.size())).str();
    Ops.push_back(G.addInput(N, *T));
  }
  std::vector<std::string> Names;
  for (size_t I = 0; I != Results.size(); ++I)
    Names.push_back((Name + ".out" + llvm::Twine(I)).str());
  std::vector<Graph::ResultSpec> Specs;
  for (size_t I = 0; I != Results.size(); ++I)
    Specs.push_back({Names[I], Results[I]});
  return G.addOp(Name, Domain, Type, Ops, Specs, std::move(Attrs));
}

/// A GPU type "g" (1 TFLOP/s f32, 100 GB/s, 10 us launch) and a CPU type
/// "c" (100 GFLOP/s, 20 GB/s, 1 us launch), one device each.
inline Cluster makeTestCluster() {
  DeviceType GPU;
  GPU.Name = "g";
  GPU.Kind = DeviceKind::GPU;
  GPU.PeakFlops[unsigned(DTypeKind::F32)] = 1e12;
  GPU.PeakFlops[unsigned(DTypeKind::F16)] = 4e12;
  GPU.MemoryBandwidth = 1e11;
  GPU.MemoryBytes = uint64_t(16) << 30;
  GPU.LaunchOverhead = 1e-5;
  DeviceType CPU;
  CPU.Name = "c";
  CPU.Kind = DeviceKind::CPU;
  CPU.PeakFlops[unsigned(DTypeKind::F32)] = 1e11;
  CPU.MemoryBandwidth = 2e10;
  CPU.MemoryBytes = uint64_t(64) << 30;
  CPU.LaunchOverhead = 1e-6;
  Link L;
  L.Name = "pcie";
  L.A = 0;
  L.B = 1;
  L.Bandwidth = 1e10;
  llvm::Expected<Cluster> C = Cluster::create(
      "test", {GPU, CPU}, {{"gpu:0", 0}, {"cpu:0", 1}}, {}, {L});
  EXPECT_TRUE(bool(C)) << llvm::toString(C.takeError());
  return std::move(*C);
}

} // namespace test
} // namespace dp

#endif // DP_UNITTESTS_COST_COSTTESTUTIL_H
