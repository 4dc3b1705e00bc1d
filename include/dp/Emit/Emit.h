//===- dp/Emit/Emit.h - Writing a placed step for other tools ---*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The forms in which emit writes a placed, simulated step (docs/emit.md):
/// placement JSON, a PyTorch device_map, Graphviz, and the human report as
/// text and as a self-contained HTML page. The placed ONNX model and the
/// per-device submodels are in dp/Emit/PlacedModel.h; the Chrome trace is
/// the simulator's (dp/Sim/SimulatePass.h).
///
/// Ops are mapped back to the nodes of the user's model by name: an op of
/// the imported model has its node's name (getONNXNodeNames), an op that
/// unroll-rnn made names its RNN node in `rnn`, and backward and update ops
/// name their forward op in `colocate`. Ops that no node leads to (the loss
/// that training-graph adds) have no node.
///
//===----------------------------------------------------------------------===//

#ifndef DP_EMIT_EMIT_H
#define DP_EMIT_EMIT_H

#include "dp/Cluster/Cluster.h"
#include "dp/IR/Graph.h"
#include "dp/IR/PipelinePlan.h"
#include "dp/Sim/SimulatePass.h"
#include "dp/Sim/Simulator.h"

#include "llvm/ADT/Optional.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace dp {

struct StepSimulation;

/// A placed graph simulated on its cluster: what every emitted form shows.
struct PlacedStep {
  const Graph *G = nullptr;
  const Cluster *C = nullptr;
  /// The device of every op.
  std::vector<uint32_t> Placement;
  /// Compute time of every op on its device.
  std::vector<double> OpTime;
  SimResult Result;
  /// Every op's simulated interval, by op: under a pipeline plan, that of
  /// its instance in micro-batch 0 (an update's only one), where
  /// Result.Ops has every instance.
  std::vector<OpInterval> OpSpans;
  /// The graph's pipeline plan, if it has one, and its stages: the devices
  /// with ops, in the order of their first op (as the simulator orders
  /// them; docs/simulator.md).
  llvm::Optional<PipelinePlan> Plan;
  std::vector<unsigned> Stages;
  LowerBounds Bounds;
  SingleDeviceBaseline Baseline;
  /// The placer's search when this run placed the graph.
  llvm::Optional<PlacementSearch> Search;
  /// The plans the plan pass weighed when this run chose the plan.
  llvm::Optional<PlanSearch> Plans;
  /// For every op, the name of the node of the user's model it comes from,
  /// or "" (see the file comment). Names point into G.
  std::vector<llvm::StringRef> Origin;

  /// Where a node of the user's model runs: the device with most of the
  /// compute of the ops that come from it.
  struct NodePlacement {
    llvm::StringRef Name;
    unsigned Device = 0;
    /// The node's first op.
    OpId FirstOp = 0;
    /// Compute seconds per device, for the devices it uses, by device.
    llvm::SmallVector<std::pair<unsigned, double>, 2> Time;
    bool isSplit() const { return Time.size() > 1; }
  };
  /// The nodes in the order of their first op.
  std::vector<NodePlacement> Nodes;
  /// Index into Nodes by node name.
  llvm::StringMap<unsigned> NodeIndex;

  /// What the reports warn about: nodes and modules split across devices.
  std::vector<std::string> Warnings;
  /// The user's model file the reports name ("" when it came from a
  /// pipe): emit{model=} or the pipeline's input.
  std::string ModelFile;

  /// The step of \p G that \p Sim simulated, mapped to the user's nodes.
  static PlacedStep build(const Graph &G, const StepSimulation &Sim);
  /// Simulates \p G (placed: every op has a `device`) on \p C, then
  /// build(). Fails like SimGraph::build and getPlacement.
  static llvm::Expected<PlacedStep> simulate(const Graph &G, const Cluster &C);
};

/// The node of the user's model each op comes from (PlacedStep::Origin).
std::vector<llvm::StringRef> computeOrigins(const Graph &G);

/// The module path that torch.onnx.export encodes in a node name:
/// "/layer1/layer1.0/conv1/Conv" is "layer1.0.conv1", and
/// "/bert/encoder/layer.0/attention/self/MatMul" is
/// "bert.encoder.layer.0.attention.self". A name without scopes is in the
/// root module "".
std::string getModulePath(llvm::StringRef NodeName);

/// A device_map for accelerate and transformers: module path to a CUDA
/// device index (the device's position among the cluster's GPUs), "cpu",
/// or the device name for other kinds.
///
/// Module paths are those of getModulePath, but for torch's call-site
/// scopes: the second call of module "relu" is scoped "relu_1", and
/// "<name>_<N>" counts as module "<name>" when the model also has scope
/// "<name>" under the same parent and no parameter (an initializer named
/// like a state_dict key, "a.b.weight") is named under "<name>_<N>".
struct DeviceMap {
  struct Entry {
    /// A module path, or a parameter's name.
    std::string Module;
    unsigned Device;
  };
  /// Modules that do not overlap, in the order of their first op: every
  /// module whose compute runs on one device, at the outermost level
  /// where that holds; a module that is split and has no submodules goes
  /// where most of its compute runs. Then, in initializer order, every
  /// parameter that none of those covers (its module has no node, or
  /// only nodes that the listed modules leave out) with the device of
  /// the node that reads it first: its module, or the parameter itself
  /// when a listed module is inside its module. A weight named after the
  /// node that reads it ("<module>.MatMul.B" read by "/<scopes>/MatMul")
  /// is no parameter.
  std::vector<Entry> Entries;
  /// One line per module that had to be split that way.
  std::vector<std::string> Warnings;
};
DeviceMap computeDeviceMap(const PlacedStep &S);

/// The device_map value of device \p Dev: a GPU index, "cpu" or its name.
void writeDeviceMapValue(llvm::json::OStream &J, const Cluster &C,
                         unsigned Dev);

/// Writes {"module.path": device, ...} (computeDeviceMap).
void writeDeviceMap(llvm::raw_ostream &OS, const PlacedStep &S,
                    const DeviceMap &Map);

/// Writes the placement by op ("placement", the form dp-opt -placement=
/// and place{algo=given,file=} read), by node of the user's model, by
/// group, the warnings and the simulator's summary.
void writePlacementJSON(llvm::raw_ostream &OS, const PlacedStep &S);

/// Writes the placed graph in Graphviz's language: one colour per device,
/// colocation groups as clusters, cross-device edges labelled with bytes.
void writeDot(llvm::raw_ostream &OS, const PlacedStep &S);

/// Writes the human report: the simulator's report with the speed-up over
/// the best single device, and the warnings.
void writeReport(llvm::raw_ostream &OS, const PlacedStep &S);

/// Writes the report as one self-contained HTML page: a summary table, an
/// SVG timeline with a lane per device and per busy link, device and link
/// tables, the critical path and the warnings. \p GraphSVG, when not
/// empty, is a rendering of the placed graph (Graphviz SVG) to include.
void writeHTMLReport(llvm::raw_ostream &OS, const PlacedStep &S,
                     llvm::StringRef GraphSVG = "");

} // namespace dp

#endif // DP_EMIT_EMIT_H
