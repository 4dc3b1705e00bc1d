//===- ShapeFolder.h - Shape subgraphs evaluated at import ------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Evaluates, at import time, the parts of an ONNX graph whose values depend
/// only on constants, small integer initializers and static shapes: the
/// Shape -> Gather/Slice -> Concat -> Reshape chains that exporters write
/// for dynamic shapes. Once the user has fixed the symbolic dimensions,
/// every such value is a compile-time constant.
///
/// The folder works on the importer's working copy of the model, between
/// rounds of ONNX shape inference: each round's static shapes let it fold
/// more (a Shape of a tensor whose shape is now known), and each folded
/// value is given to the next round as an initializer, which every op's
/// inference function reads (Reshape's shape, Expand's, Slice's starts,
/// Pad's pads, Resize's sizes, Range's bounds, ...). finish() removes those
/// initializers again and records the folded tensors' types, so the graph
/// dp builds has the model's own nodes and tensors.
///
/// Values are folded up to MaxFoldElements elements; larger results (a
/// ConstantOfShape of an activation's size) are left to inference, whose
/// shape they still get from their folded inputs. A fold that divides by
/// zero, indexes out of range or makes a negative dimension is an error at
/// its node.
///
//===----------------------------------------------------------------------===//

#ifndef DP_LIB_IMPORT_SHAPEFOLDER_H
#define DP_LIB_IMPORT_SHAPEFOLDER_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace onnx {
class GraphProto;
class NodeProto;
class TensorProto;
class TypeProto;
class ValueInfoProto;
} // namespace onnx

namespace dp {

/// The most elements a folded value may have.
constexpr int64_t MaxFoldElements = 1 << 16;

/// A tensor value known at import time. Integer and boolean element types
/// keep their values in Ints, floating-point ones in Reals.
struct FoldValue {
  /// An onnx::TensorProto::DataType.
  int32_t ElemType = 0;
  llvm::SmallVector<int64_t, 4> Dims;
  std::vector<int64_t> Ints;
  std::vector<double> Reals;

  bool isReal() const;
  int64_t getNumElements() const;
  /// Element \p I as a double or as an integer, whatever the type.
  double real(int64_t I) const { return isReal() ? Reals[I] : double(Ints[I]); }
  int64_t integer(int64_t I) const {
    return isReal() ? int64_t(Reals[I]) : Ints[I];
  }
};

/// Reads \p T's values; None for element types the folder does not handle
/// (strings, 16-bit floats, complex) and for data stored outside the file.
llvm::Optional<FoldValue> readTensorValue(const onnx::TensorProto &T);
/// Writes \p V into \p T (name untouched).
void writeTensorValue(const FoldValue &V, onnx::TensorProto &T);

/// Reads \p Text (a number, true or false) as the value of a tensor of
/// type \p ElemType and shape \p Dims, which must have one element. The
/// error says why it cannot, without naming the tensor.
llvm::Expected<FoldValue> parseFoldValue(int32_t ElemType,
                                         llvm::ArrayRef<int64_t> Dims,
                                         llvm::StringRef Text);

/// Evaluates node \p N of opset \p Opset on \p Inputs (one per input of the
/// node, null where a value is not known). Returns true with \p Results set
/// (one per output) when it folded the node, false when it cannot (an op
/// it does not evaluate, an unknown input, a result over MaxFoldElements),
/// and an error, without the node's name, when the values are invalid.
/// \p InputDims gives, per input, its static shape when known (for Shape
/// and Size, which need no value); null where unknown.
llvm::Expected<bool>
evaluateNode(const onnx::NodeProto &N, int Opset,
             llvm::ArrayRef<const FoldValue *> Inputs,
             llvm::ArrayRef<const std::vector<int64_t> *> InputDims,
             std::vector<FoldValue> &Results);

/// Folds the shape subgraphs of a graph between rounds of shape inference
/// (see the file comment).
class ShapeFolder {
public:
  ShapeFolder(onnx::GraphProto &G, int Opset) : G(G), Opset(Opset) {}

  /// Folds every node it newly can, given the graph's current types.
  /// Returns whether a new value reaches a node whose results do not all
  /// have static shapes yet (another round of inference may give them).
  /// Errors are located at their nodes.
  llvm::Expected<bool> run();

  /// Removes the initializers run() added and gives each folded tensor a
  /// type in the graph's value_info.
  void finish();

  /// Tensor \p Name's value is not what the model holds (zeros standing in
  /// for external data): never fold it or what reads it.
  void markUnknown(llvm::StringRef Name) { Unknown.insert(Name); }

  /// Graph input \p Name holds \p V in every step the user runs: fold
  /// what reads it. Call before the first run().
  void bind(llvm::StringRef Name, FoldValue V) {
    Values[Name] = std::move(V);
    Bound.push_back(Name.str());
    Inputs.insert(Name);
  }

  /// Whether tensor \p Name was folded.
  bool isFolded(llvm::StringRef Name) const {
    return Values.count(Name) && !Inputs.contains(Name);
  }
  /// Tensor \p Name's value, when folded or bound; else null.
  const FoldValue *getValue(llvm::StringRef Name) const {
    auto It = Values.find(Name);
    return It == Values.end() ? nullptr : &It->second;
  }

private:
  /// Reads the values of the graph's own initializers (the first run).
  void readOwnInitializers();
  /// Adds as initializers the \p New values that unfolded nodes read, for
  /// inference; returns whether one of those nodes has a result whose
  /// shape, by \p TypeOf, is not static yet.
  bool giveNewValues(
      const llvm::DenseSet<llvm::StringRef> &New,
      llvm::function_ref<const onnx::TypeProto *(llvm::StringRef)> TypeOf);
  /// The graph's value_info and output entries by name.
  llvm::StringMap<onnx::ValueInfoProto *> getValueInfos();
  /// Gives tensor \p Name the exact type of \p V.
  void recordType(llvm::StringMap<onnx::ValueInfoProto *> &Infos,
                  llvm::StringRef Name, const FoldValue &V);

  onnx::GraphProto &G;
  int Opset;
  llvm::StringMap<FoldValue> Values;
  llvm::StringSet<> Unknown;
  /// Inputs bound by bind(), and those not yet given to inference.
  llvm::StringSet<> Inputs;
  std::vector<std::string> Bound;
  /// Nodes already folded, by index.
  std::vector<bool> Done;
  /// Names of the initializers run() added, in order (they follow the
  /// model's own initializers).
  std::vector<std::string> Added;
  int NumOwnInitializers = -1;
};

} // namespace dp

#endif // DP_LIB_IMPORT_SHAPEFOLDER_H
