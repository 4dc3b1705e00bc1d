//===- dp/Import/ONNXImporter.h - ONNX models to dp::Graph ------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Reads an ONNX model (binary protobuf or ONNX text syntax), checks it with
/// the ONNX checker, infers every shape with ONNX shape inference and builds
/// a dp::Graph in which every tensor has a static shape.
///
/// Weight bytes are never needed: initializers are imported by type, those
/// stored as external data import whether or not the data file exists, and
/// float or large initializers are dropped from the working copy of the
/// model before checking and inference.
///
//===----------------------------------------------------------------------===//

#ifndef DP_IMPORT_ONNXIMPORTER_H
#define DP_IMPORT_ONNXIMPORTER_H

#include "dp/IR/Graph.h"
#include "dp/IR/PassManager.h"
#include "dp/Support/Options.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/Optional.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBufferRef.h"
#include "llvm/Support/Timer.h"

#include <string>
#include <utility>
#include <vector>

namespace onnx {
class GraphProto;
class ModelProto;
} // namespace onnx

namespace dp {

/// The key of the model metadata entry in which a placed model records the
/// device of each node: a JSON object from node names (as getONNXNodeNames
/// gives them) to device names (docs/emit.md). import-onnx sets the
/// `device` annotation of those nodes' ops from it.
constexpr llvm::StringLiteral ONNXPlacementKey = "dp.placement";

struct ImportOptions {
  /// Sets dimension 0 of the graph inputs to this value: of those whose
  /// dimension 0 is symbolic if there are any, else of every input.
  llvm::Optional<int64_t> Batch;
  /// Sets every input dimension named first (an ONNX dim_param) to second.
  std::vector<std::pair<std::string, int64_t>> Dims;
  /// Sets the whole shape of the graph input named first; wins over Batch
  /// and Dims for that input.
  std::vector<std::pair<std::string, std::vector<int64_t>>> Shapes;
  /// Binds the value of the one-element graph input named first to second
  /// (a number, or true/false), so that what the model computes from it at
  /// import time folds (an If on a sample rate takes one branch).
  std::vector<std::pair<std::string, std::string>> Values;
  /// Gives the dimensions of the tensor named first that depend on tensor
  /// values (NonZero's count, NonMaxSuppression's boxes) the upper bound
  /// second, and so every dimension shape inference derived from them: the
  /// graph is then costed and placed at that bound.
  std::vector<std::pair<std::string, int64_t>> Bounds;
  /// Imports one micro-batch of the step: every data input's batch axis
  /// (after the overrides above) is divided by this; one it does not
  /// divide is an error naming the input. The graph records the count
  /// (annotation `microbatches`) when it is above 1.
  int64_t MicroBatches = 1;
  /// Imports one data-parallel replica's share of the batch: the batch
  /// axes are divided by Replicas times MicroBatches. The graph records
  /// it (annotation `replicas`) when it is above 1.
  int64_t Replicas = 1;
  /// The batch axis of the graph input named first (0 for the others).
  std::vector<std::pair<std::string, int64_t>> BatchAxes;

  bool empty() const {
    return !Batch && Dims.empty() && Shapes.empty() && Values.empty() &&
           Bounds.empty() && MicroBatches == 1 && Replicas == 1 &&
           BatchAxes.empty();
  }
};

/// Imports the ONNX model in \p Buffer. Errors are located at the node and
/// tensor they concern; errors that several nodes have are all returned.
/// With \p Timers, the phases (parse, prepare, checker, shape inference,
/// build) are timed there. \p Notes, when given, receives what the import
/// changed in the model that the user should know of (an empty 1-D input
/// of a Concat dropped), one line each.
llvm::Expected<Graph> importONNX(llvm::MemoryBufferRef Buffer,
                                 const ImportOptions &Opts = {},
                                 llvm::TimerGroup *Timers = nullptr,
                                 std::vector<std::string> *Notes = nullptr);

/// Parses the ONNX model in \p Buffer (binary protobuf or ONNX text syntax)
/// into \p Model, without checking it. Errors name the buffer.
llvm::Error readONNXModel(llvm::MemoryBufferRef Buffer,
                          onnx::ModelProto &Model);

/// The unique name dp gives each node of \p G, by node index: a node's own
/// name when it is non-empty and unique in \p G, otherwise
/// "<OpType>_<index>" (or "<name>.<k>" for a repeated name), never a name
/// that another node has. The op that import-onnx makes of a node has
/// this name.
std::vector<std::string> getONNXNodeNames(const onnx::GraphProto &G);

/// Rewrites \p M, a model of IR 9 or 10 or of opsets 18 to 21, into the IR
/// 8, opset 17 form that libonnx 1.12 checks, as import-onnx reads it
/// (docs/import-onnx.md): ops added later expanded, changed signatures
/// adapted. What opset 17 cannot say is an error naming the node (or
/// \p File for the versions).
llvm::Error readAsOpset17(onnx::ModelProto &M, llvm::StringRef File);

/// Drops the empty 1-D constants (weights and Constant results of shape
/// [0]) from the inputs of every Concat of \p G, keeping a Concat's last
/// input when all are such (docs/import-onnx.md); returns the shortened
/// Concats' results. \p Notes, when given, gets a line per Concat.
std::vector<std::string>
dropEmptyConcatInputs(onnx::GraphProto &G,
                      std::vector<std::string> *Notes = nullptr);

/// Clears the declared shapes (value_info and graph outputs) of every
/// tensor of \p G computed from \p From, to be inferred anew; \p Notes,
/// when given, gets a line per graph output whose shape was cleared.
void forgetShapesComputedFrom(onnx::GraphProto &G,
                              llvm::ArrayRef<std::string> From,
                              std::vector<std::string> *Notes = nullptr);

/// Lets the Reshapes and Expands of \p M whose shape constants repeat
/// their input's sizes follow a changed batch, as import-onnx{batch=,
/// microbatches=} does (docs/import-onnx.md): where a size in the shape
/// equals the input's at the same position (at the model's own input
/// shapes), a Reshape's becomes 0 and an Expand's 1. A constant changes
/// only when all its readers are such Reshapes and Expands and agree. Run
/// it before the inputs' shapes change.
void relaxShapeConstants(onnx::ModelProto &M);

/// Drops the shapes recorded in \p G (value_info, and the sizes of the
/// graph outputs, keeping their ranks) after its inputs changed sizes:
/// shape inference recomputes them.
void forgetRecordedShapes(onnx::GraphProto &G);

/// Whether \p Bytes looks like ONNX text syntax rather than a binary
/// protobuf (only printable text in its first bytes).
bool looksLikeONNXText(llvm::StringRef Bytes);

/// The "import-onnx" pass: replaces the (empty) graph by the model read
/// from the pipeline's input.
class ImportONNXPass {
public:
  explicit ImportONNXPass(ImportOptions Opts = {}) : Opts(std::move(Opts)) {}

  static llvm::StringRef name() { return "import-onnx"; }
  llvm::Error run(Graph &G, PassContext &Ctx);
  void printPipeline(llvm::raw_ostream &OS) const;

  /// batch=N, and dim=NAME:N, shape=NAME:D0xD1x..., value=NAME:V and
  /// bound=TENSOR:N (each repeatable), bound to \p O.
  static OptionTable describeOptions(ImportOptions &O);
  static llvm::Expected<ImportOptions> parseOptions(OptionList Options) {
    return parsePassOptions<ImportOptions>(Options, describeOptions);
  }

private:
  ImportOptions Opts;
};

} // namespace dp

#endif // DP_IMPORT_ONNXIMPORTER_H
