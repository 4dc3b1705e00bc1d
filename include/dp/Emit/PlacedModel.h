//===- dp/Emit/PlacedModel.h - The user's model, placed ---------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The user's ONNX model with the device of each of its nodes, written as
/// the model itself with the placement recorded in its metadata
/// (emit{format=onnx}), or as one submodel per device with the tensors
/// that cross devices as their inputs and outputs (emit{format=split}).
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

/// A tensor that one device sends to others in the split model.
struct CrossDeviceTensor {
  std::string Name;
  /// The node that produces it, by index in the model.
  unsigned ProducerNode = 0;
  unsigned From = 0;
  /// The devices that read it, ascending.
  llvm::SmallVector<unsigned, 2> To;
  /// Its size, when its type is static.
  llvm::Optional<uint64_t> Bytes;
};

/// One submodel per device that runs nodes, and what crosses between them.
struct SplitModel {
  struct Part {
    unsigned Device = 0;
    std::unique_ptr<onnx::ModelProto> Model;
  };
  /// By device.
  std::vector<Part> Parts;
  /// In the order the model's nodes produce them.
  std::vector<CrossDeviceTensor> Transfers;

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

  /// The model with the placement recorded in its metadata: `dp.placement`
  /// (node name to device name, JSON) and `dp.cluster`.
  std::unique_ptr<onnx::ModelProto> makePlacedModel() const;

  /// One submodel per device that runs nodes: its nodes in model order,
  /// the initializers they read, graph inputs and tensors from other
  /// devices as inputs, graph outputs and tensors for other devices as
  /// outputs.
  llvm::Expected<SplitModel> split() const;

private:
  PlacedModel();

  const PlacedStep *S = nullptr;
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

/// Writes the manifest of a split model: its parts (device, file, inputs,
/// outputs) and the tensors that cross devices (name, producer node,
/// devices, bytes, order). \p Files are the parts' file names.
void writeSplitManifest(llvm::raw_ostream &OS, const PlacedStep &S,
                        const PlacedModel &PM, const SplitModel &Split,
                        llvm::ArrayRef<std::string> Files);

} // namespace dp

#endif // DP_EMIT_PLACEDMODEL_H
