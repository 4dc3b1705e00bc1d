//===- dp/Emit/PlacedModel.h - The user's model, placed ---------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The user's ONNX model with the device of each of its nodes, written as
/// the model itself with the placement recorded in its metadata
/// (emit{format=onnx}), or cut into segments, each a run of one device's
/// nodes that runs as a whole, with the tensors that cross segments as
/// their inputs and outputs (emit{format=split}). Both forms carry the
/// same segments and the order a runtime runs them in (dp/Emit/Schedule.h).
/// docs/emit.md describes both forms.
///
//===----------------------------------------------------------------------===//

#ifndef DP_EMIT_PLACEDMODEL_H
#define DP_EMIT_PLACEDMODEL_H

#include "dp/Emit/Emit.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/Optional.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBufferRef.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <string>
#include <vector>

namespace onnx {
class ModelProto;
} // namespace onnx

namespace dp {

struct StepSchedule;

/// How the nodes of a placed model are cut into segments: runs of one
/// device's nodes that can each run as a whole (one session), in an order
/// in which every segment runs after the segments whose tensors it reads.
///
/// Every segment has a level, and every tensor that one segment makes and
/// another reads goes from a lower level to a higher one, so the segments
/// form a DAG and any order by level is a run order. Nodes are taken in
/// topological order. A node on device d needs a segment on d whose level
/// is above that of every other segment it reads from. It joins the lowest
/// such segment on d; when there is none, d's latest segment is raised to
/// the level needed if every segment that reads from it is above that
/// level, and otherwise a new segment on d starts at that level, so each
/// device's segments are created in level order. Then a node all of whose
/// readers are in one other segment of its device, above every segment it
/// reads from, moves there (constants, shape computations), and segments
/// left empty are dropped. docs/emit.md says more.
struct Segmentation {
  /// By segment, in run order: ascending level, then device.
  std::vector<unsigned> Device;
  std::vector<unsigned> Level;
  /// By node: the segment it runs in.
  std::vector<unsigned> SegmentOf;

  unsigned getNumSegments() const { return Device.size(); }
};

/// Cuts nodes into segments (see Segmentation). \p NodeDevices is the
/// device of every node, \p Producers the nodes whose tensors each node
/// reads; every producer must come before its reader.
Segmentation computeSegments(llvm::ArrayRef<unsigned> NodeDevices,
                             llvm::ArrayRef<std::vector<unsigned>> Producers);

/// A tensor that one segment of a split model makes and others read.
struct SegmentTensor {
  std::string Name;
  /// The node that produces it, by index in the model.
  unsigned ProducerNode = 0;
  /// The segment that makes it, and the segments that read it, ascending.
  unsigned From = 0;
  llvm::SmallVector<unsigned, 2> To;
  /// Its size, when its type is static.
  llvm::Optional<uint64_t> Bytes;
};

/// The model's nodes cut into segments (Segmentation), and the tensors
/// that pass between them: what split() makes one submodel of each, and
/// what the schedule (dp/Emit/Schedule.h) orders.
struct ModelSegments {
  struct Segment {
    unsigned Device = 0;
    /// Its position among its device's segments (0 for the first).
    unsigned IndexOnDevice = 0;
    /// Its nodes, by index in the model, in the order the split runs
    /// them: the model's when its nodes are sorted (as ONNX wants),
    /// otherwise the model's where the dataflow allows.
    std::vector<unsigned> Nodes;
    /// The segments whose tensors it reads, ascending; all before it.
    llvm::SmallVector<unsigned, 4> After;
  };
  /// In run order.
  std::vector<Segment> Segments;
  /// In the order the model's nodes produce them.
  std::vector<SegmentTensor> Transfers;
};

/// The model cut into segments, one submodel each.
struct SplitModel : ModelSegments {
  /// By segment.
  std::vector<std::unique_ptr<onnx::ModelProto>> Models;

  SplitModel();
  SplitModel(SplitModel &&);
  ~SplitModel();
};

class PlacedModel {
public:
  /// Reads the ONNX model in \p Model, the one the graph of \p S was
  /// imported from, and maps its nodes to the ops of \p S. Fails when a
  /// node has no op or an op names a node that the model lacks (another
  /// model was given).
  static llvm::Expected<PlacedModel> build(llvm::MemoryBufferRef Model,
                                           const PlacedStep &S);

  PlacedModel(PlacedModel &&);
  ~PlacedModel();

  const onnx::ModelProto &getModel() const { return *Model; }
  /// The unique name and the device of every node, by node index.
  llvm::ArrayRef<std::string> getNodeNames() const { return NodeNames; }
  llvm::ArrayRef<unsigned> getNodeDevices() const { return NodeDevices; }

  /// The model with the placement and the schedule recorded in its
  /// metadata: `dp.placement` (node name to device name, JSON),
  /// `dp.cluster`, `dp.schedule` (\p Segs, the segments of segment(), and
  /// the order of \p Schedule) and `dp.predicted` (the simulated step).
  std::unique_ptr<onnx::ModelProto>
  makePlacedModel(const ModelSegments &Segs,
                  const StepSchedule &Schedule) const;

  /// Cuts the model's nodes into segments (Segmentation) and finds the
  /// tensors that cross them, without making submodels. Fails when the
  /// model's nodes form a cycle; \p Format names the format that needed
  /// the segments in that error.
  llvm::Expected<ModelSegments> segment(llvm::StringRef Format) const;

  /// One submodel per segment of \p Segs (from segment()): its nodes in
  /// that order, the initializers they read, graph inputs and tensors from
  /// earlier segments as inputs, graph outputs and tensors that other
  /// segments read as outputs. Fails when a tensor that crosses segments
  /// has no known type.
  llvm::Expected<SplitModel> split(const ModelSegments &Segs) const;
  /// segment(), then split() of its segments.
  llvm::Expected<SplitModel> split() const;

private:
  PlacedModel();

  const PlacedStep *S = nullptr;
  /// The model's file, for errors.
  std::string File;
  std::unique_ptr<onnx::ModelProto> Model;
  std::vector<std::string> NodeNames;
  std::vector<unsigned> NodeDevices;
};

/// Runs the ONNX checker on \p M, as if its external data were present
/// (those initializers are checked as graph inputs of their type).
/// \p What names the model in errors.
llvm::Error checkONNXModel(const onnx::ModelProto &M, llvm::StringRef What);

/// Writes \p M as binary protobuf.
llvm::Error writeONNXModel(llvm::StringRef Path, const onnx::ModelProto &M);

/// Writes the manifest of a split model: its segments in run order (index,
/// device, file, nodes, inputs, outputs, the segments it runs after), the
/// tensors that cross segments (name, producer node, segments, devices,
/// bytes, order), and the order of \p Schedule's items. \p Files are the
/// segments' file names.
void writeSplitManifest(llvm::raw_ostream &OS, const PlacedStep &S,
                        const PlacedModel &PM, const SplitModel &Split,
                        llvm::ArrayRef<std::string> Files,
                        const StepSchedule &Schedule);

} // namespace dp

#endif // DP_EMIT_PLACEDMODEL_H
