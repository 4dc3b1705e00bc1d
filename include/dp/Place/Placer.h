//===- dp/Place/Placer.h - What placers work on -----------------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Placers choose a device for every *unit* of a graph: its colocation
/// groups (the `group` annotation set by the colocate pass) or, when the
/// graph has none, its ops joined by their `colocate` hints (so a backward
/// op always lands with its forward op). A PlacementProblem gives placers
/// what they need about units, in flat arrays: compute time per device,
/// a static memory estimate, the dataflow between units, and the
/// simulator to score a placement with.
///
/// Placers are listed once, in lib/Place/Placers.def.
///
//===----------------------------------------------------------------------===//

#ifndef DP_PLACE_PLACER_H
#define DP_PLACE_PLACER_H

#include "dp/Cluster/Cluster.h"
#include "dp/IR/Graph.h"
#include "dp/IR/Grouping.h"
#include "dp/Learn/Search.h"
#include "dp/Sim/Simulator.h"
#include "dp/Support/Options.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace dp {

/// Data flowing from one unit to another in one step (units are groups).
using UnitEdge = GroupEdge;

class PlacementProblem {
public:
  /// Builds the problem for \p G on \p C; \p G must carry costs
  /// (cost-annotate). Fails like SimGraph::build.
  static llvm::Expected<PlacementProblem> build(const Graph &G,
                                                const Cluster &C);
  /// The problem whose units are \p UnitOf (a dense id per op, numbered in
  /// order of each unit's first op) instead of \p G's groups.
  static llvm::Expected<PlacementProblem>
  build(const Graph &G, const Cluster &C, std::vector<uint32_t> UnitOf);

  const Graph &getGraph() const { return *G; }
  const Cluster &getCluster() const { return *C; }
  const SimGraph &getSimGraph() const { return *SG; }

  unsigned getNumUnits() const { return UnitOpsBegin.size() - 1; }
  unsigned getNumDevices() const { return C->getNumDevices(); }
  /// The ops of unit \p U, in graph order.
  llvm::ArrayRef<uint32_t> getUnitOps(unsigned U) const {
    return llvm::makeArrayRef(UnitOps).slice(
        UnitOpsBegin[U], UnitOpsBegin[U + 1] - UnitOpsBegin[U]);
  }
  unsigned getUnitOf(uint32_t Op) const { return UnitOf[Op]; }
  /// Sum of the unit's op times on device \p Dev.
  double getUnitTime(unsigned U, unsigned Dev) const {
    return UnitTime[size_t(U) * getNumDevices() + Dev];
  }
  /// A static estimate of the bytes the unit keeps on its device: the
  /// weights and inputs it reads first, its ops' persistent bytes, and its
  /// results (as if all were live at once). Placers that check memory
  /// without simulating sum these per device.
  uint64_t getUnitMemory(unsigned U) const { return UnitMemory[U]; }
  uint64_t getDeviceCapacity(unsigned Dev) const {
    return C->getDeviceType(Dev).MemoryBytes;
  }
  /// Dataflow between different units, one edge per ordered pair.
  llvm::ArrayRef<UnitEdge> getEdges() const { return Edges; }
  /// Units in an order in which every unit comes after the units it reads
  /// from, where the unit graph allows (groups may form cycles; those are
  /// broken by each unit's first op).
  llvm::ArrayRef<uint32_t> getTopologicalOrder() const { return TopoOrder; }
  /// The edges that go forward in that order: all of getEdges() but those
  /// that close a cycle of groups.
  std::vector<UnitEdge> getForwardEdges() const;
  /// "group 12 ('conv1' and 34 more ops)" or "op 'conv1'", for errors.
  std::string describeUnit(unsigned U) const;

  /// The op placement of a unit placement.
  std::vector<uint32_t> expand(llvm::ArrayRef<uint32_t> UnitPlacement) const;
  /// Simulates a unit placement (reusing one simulator).
  const SimResult &simulate(llvm::ArrayRef<uint32_t> UnitPlacement) const;

private:
  const Graph *G = nullptr;
  const Cluster *C = nullptr;
  std::unique_ptr<SimGraph> SG;
  std::unique_ptr<Simulator> Sim;
  std::unique_ptr<SimResult> Result;
  std::unique_ptr<std::vector<uint32_t>> Scratch;
  std::vector<uint32_t> UnitOf, UnitOpsBegin, UnitOps, TopoOrder;
  std::vector<double> UnitTime;
  std::vector<uint64_t> UnitMemory;
  std::vector<UnitEdge> Edges;
};

/// Options of place{...}: the common ones, and the placer's own as given.
struct PlaceOptions {
  std::string Algo = "single";
  /// Every decision that is random draws from this seed (dp-opt -seed).
  uint64_t Seed = 0;
  /// Search budget for placers that search: wall seconds and simulator
  /// evaluations (0: the placer's default).
  double Seconds = 0;
  uint64_t Evaluations = 0;
  /// Options only the chosen placer knows, in the order given.
  std::vector<std::pair<std::string, std::string>> Extra;
  /// Searching placers print progress lines here; null: quiet.
  llvm::raw_ostream *Progress = nullptr;
  /// Searching placers that record a search curve store it here (if set).
  std::vector<CurvePoint> *Curve = nullptr;
  /// anneal counts the placements it scored here (if set), curve or not.
  uint64_t *Scored = nullptr;
  /// Where the place pass writes the search curve (CSV); empty: nowhere.
  std::string CurveFile;
};

/// A placer: a device per unit, or an error. A placer returns a placement
/// that fits in memory when it finds one; otherwise an error made with
/// makeNoFitError.
using PlacerFn = llvm::Expected<std::vector<uint32_t>> (*)(
    const PlacementProblem &P, const PlaceOptions &Opts);

/// A placer's own options table, bound to options it owns (at their
/// defaults until the table parses): what place{} checks a pipeline's
/// placer options with, and what -print-passes lists.
struct PlacerOptionTable {
  std::shared_ptr<void> Options;
  OptionTable Table;
};

/// The options table of the placer \p Algo (the function a Placers.def
/// record names); its errors start "place{algo=<Algo>}: ".
using DescribePlacerFn = PlacerOptionTable (*)(llvm::StringRef Algo);

struct PlacerInfo {
  llvm::StringRef Name;
  PlacerFn Run;
  llvm::StringRef Description;
  /// It searches with a budget (SEARCH_PLACER in Placers.def, and the
  /// learned placers).
  bool Searches = false;
  /// Its options, declared once; null for a learned placer, whose plugin
  /// declares them (Params lists its keys, and the plugin checks values).
  DescribePlacerFn DescribeOptions = nullptr;
  /// "key=META,..." of its own options, or "" (-print-passes).
  std::string Params;
  /// "key=value,...": the value each option takes when not given, for
  /// those that have one.
  std::string Defaults;
  /// What its integer and number options take (OptionTable::getRanges).
  std::string Ranges;
};

/// Every placer, in Placers.def order.
llvm::ArrayRef<PlacerInfo> getPlacers();

/// Devices of kind gpu and accel, in cluster order; all devices when the
/// cluster has none.
llvm::SmallVector<unsigned, 8> getComputeDevices(const Cluster &C);
const PlacerInfo *lookupPlacer(llvm::StringRef Name);

/// The error of a placer that found no placement that fits: names the
/// largest unit it could not place and the free memory of the roomiest
/// device, e.g. "place{algo=metis}: no device can hold group 3 ('fc' and 12
/// more ops): it needs 2.1 GiB, and at most 1.0 GiB is free (on gpu:1, of
/// its 12.0 GiB)".
llvm::Error makeNoFitError(const PlacementProblem &P, llvm::StringRef Algo,
                           unsigned Unit, uint64_t LargestFree,
                           unsigned RoomiestDevice);

/// makeNoFitError for a unit placement \p Placement that the simulator
/// (\p R) found out of memory: names the largest unit on the device that
/// overflows most, and the most any device the placement uses could have
/// free for it; then the devices it leaves unused that have room for it
/// ("; the placement leaves unused cpu:0 (512.0 GiB), where it would fit:
/// ...").
llvm::Error makeNoFitErrorFromSim(const PlacementProblem &P,
                                  llvm::StringRef Algo,
                                  llvm::ArrayRef<uint32_t> Placement,
                                  const SimResult &R);

} // namespace dp

#endif // DP_PLACE_PLACER_H
