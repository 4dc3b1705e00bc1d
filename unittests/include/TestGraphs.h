//===- TestGraphs.h - Small graphs and clusters built in tests -*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Graphs built op by op with given times, star clusters of identical
/// devices, and the placement problem of the two: what the placer and
/// simulator tests build their cases from.
///
//===----------------------------------------------------------------------===//

#ifndef DP_UNITTESTS_TESTGRAPHS_H
#define DP_UNITTESTS_TESTGRAPHS_H

#include "dp/IR/Annotations.h"
#include "dp/Place/Placer.h"

#include "DiagnosticsTestUtil.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include "gtest/gtest.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dp {
namespace test {

/// \p NumGPUs devices "gpu:I" of type "t" with \p Memory bytes each (and,
/// with \p WithCPU, a last device "cpu:0" of type "c" with \p CPUMemory
/// bytes), each joined to one switch by a link of \p Bandwidth bytes/s
/// without latency: a transfer between two devices takes bytes /
/// Bandwidth.
inline Cluster makeStarCluster(unsigned NumGPUs, uint64_t Memory,
                               double Bandwidth, bool WithCPU,
                               uint64_t CPUMemory) {
  DeviceType T;
  T.Name = "t";
  T.PeakFlops[unsigned(DTypeKind::F32)] = 1e12;
  T.MemoryBandwidth = 1e11;
  T.MemoryBytes = Memory;
  DeviceType C = T;
  C.Name = "c";
  C.Kind = DeviceKind::CPU;
  C.MemoryBytes = CPUMemory;
  std::vector<Device> Devs;
  for (unsigned I = 0; I != NumGPUs; ++I)
    Devs.push_back({"gpu:" + std::to_string(I), 0});
  if (WithCPU)
    Devs.push_back({"cpu:0", 1});
  std::vector<Link> Links;
  for (unsigned I = 0; I != Devs.size(); ++I)
    Links.push_back(
        {"l" + std::to_string(I), I, unsigned(Devs.size()), Bandwidth, 0});
  return llvm::cantFail(Cluster::create("test", {T, C}, Devs, {"sw"}, Links));
}

/// Builds graphs op by op: f32 vector results "<op>.<I>", times on type
/// "t", and on the CPU type "c" \c CPUFactor times as long.
class GraphBuilder {
public:
  explicit GraphBuilder(double CPUFactor = 10) : CPUFactor(CPUFactor) {
    G.setName("g");
  }

  TensorId input(llvm::StringRef Name, int64_t Elements = 1) {
    return G.addInput(Name, TensorType(DTypeKind::F32, {Elements}));
  }
  TensorId weight(llvm::StringRef Name, int64_t Elements) {
    return G.addWeight(Name, TensorType(DTypeKind::F32, {Elements}));
  }
  /// An op of type \p Type taking \p Seconds with one result of
  /// \p Elements floats.
  OpId op(llvm::StringRef Name, double Seconds,
          llvm::ArrayRef<TensorId> Operands, int64_t Elements = 1,
          llvm::StringRef Type = "Op") {
    return op(Name, Seconds, Operands, llvm::ArrayRef<int64_t>(Elements), Type);
  }
  /// An op with results of the given element counts.
  OpId op(llvm::StringRef Name, double Seconds,
          llvm::ArrayRef<TensorId> Operands, llvm::ArrayRef<int64_t> Elements,
          llvm::StringRef Type = "Op") {
    std::vector<std::string> Names; // the specs refer to them
    for (unsigned I = 0; I != Elements.size(); ++I)
      Names.push_back(Name.str() + "." + std::to_string(I));
    std::vector<Graph::ResultSpec> Results;
    for (unsigned I = 0; I != Elements.size(); ++I)
      Results.push_back({Names[I], TensorType(DTypeKind::F32, {Elements[I]})});
    OpId O = G.addOp(Name, "", Type, Operands, Results);
    annotate(O, "time.t", Attribute::getFloat(Seconds));
    annotate(O, "time.c", Attribute::getFloat(CPUFactor * Seconds));
    return O;
  }
  TensorId result(OpId O, unsigned I = 0) { return G.getOp(O).Results[I]; }
  void annotate(OpId O, llvm::StringRef Key, Attribute A) {
    G.getOp(O).Annotations.set(Key, std::move(A));
  }
  void persistent(OpId O, int64_t Bytes) {
    annotate(O, "persistent_bytes", Attribute::getInt(Bytes));
  }

  Graph G;
  double CPUFactor;
};

/// A graph built op by op, with each op's phase (training-graph's
/// annotation) and device.
struct PlacedGraph {
  GraphBuilder B;
  std::vector<uint32_t> Placement;

  OpId add(const std::string &Name, double Seconds, llvm::ArrayRef<TensorId> In,
           llvm::ArrayRef<int64_t> Out, llvm::StringRef Phase, unsigned Dev) {
    OpId O = B.op(Name, Seconds, In, Out);
    ann::set(B.G.getOp(O), ann::Phase, Phase);
    Placement.push_back(Dev);
    return O;
  }
};

/// The placement problem of \p G on \p C; fails the test if it fails.
inline PlacementProblem buildProblem(const Graph &G, const Cluster &C) {
  llvm::Expected<PlacementProblem> P = PlacementProblem::build(G, C);
  EXPECT_TRUE(bool(P)) << describe(collectErrors(P.takeError()));
  return std::move(*P);
}

} // namespace test
} // namespace dp

#endif // DP_UNITTESTS_TESTGRAPHS_H
