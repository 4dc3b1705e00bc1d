//===- GraphBuilder.h - Ops whose result types are known --------*- C++ -*-===//
//-*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Helpers private to the Transforms library.
///
/// OpBuilder appends ops to a graph under names that are unique, computing
/// the static type of every result itself: transforms run after ONNX shape
/// inference and must leave a graph in which every tensor has a static
/// shape. It knows the few ONNX ops the transforms create and writes them
/// in the form of the graph's opset (axes as inputs from opset 13, ...).
///
/// GraphRebuilder copies a graph op by op into a new one, so that a
/// transform can replace ops (the dp::Graph API appends but never deletes
/// or rewires).
///
//===----------------------------------------------------------------------===//

#ifndef DP_LIB_TRANSFORMS_GRAPHBUILDER_H
#define DP_LIB_TRANSFORMS_GRAPHBUILDER_H

#include "dp/IR/Graph.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"

#include <map>
#include <string>
#include <vector>

namespace dp {
namespace transforms {

/// Whether \p K is a floating-point element type (f16, bf16, f32, f64).
bool isFloatDType(DTypeKind K);

/// The version of the default ONNX domain that \p G imports, or \p Default
/// when it imports none.
int64_t getONNXOpsetVersion(const Graph &G, int64_t Default = 17);

/// Appends ops to a graph. Op and tensor names are made unique in the graph
/// and in an optional reserved graph (the one a rebuilt graph is copied
/// from, whose names arrive later) by appending ".1", ".2", ...
class OpBuilder {
public:
  explicit OpBuilder(Graph &G, const Graph *Reserved = nullptr);

  Graph &getGraph() { return G; }
  const TensorType &getType(TensorId T) const { return G.getTensor(T).Type; }

  /// Set on every op created.
  AttributeList Annotations;
  /// Set instead of Annotations on the shared constants getAxes() and
  /// getScalar() create.
  AttributeList ConstantAnnotations;
  /// Shared constants are named "<ConstantPrefix>/<what>".
  std::string ConstantPrefix;
  /// Forgets the shared constants (for a new ConstantPrefix).
  void clearConstants() { Constants.clear(); }

  /// Returns \p Base, or \p Base followed by ".N", unused as an op name.
  std::string makeOpName(const llvm::Twine &Base) const;
  /// Returns \p Base, or \p Base followed by ".N", unused as a tensor name.
  std::string makeTensorName(const llvm::Twine &Base) const;

  /// Appends an op named after \p Name in \p Domain. Its results have
  /// \p ResultTypes and are named \p ResultNames where given (exactly, so
  /// the names must be free), else after \p Name: \p Name for a single
  /// result, "<Name>.<k>" for several. A ResultTypes entry with an
  /// Undefined element type is an absent result.
  OpId create(const llvm::Twine &Name, llvm::StringRef Domain,
              llvm::StringRef Type, llvm::ArrayRef<TensorId> Operands,
              llvm::ArrayRef<TensorType> ResultTypes, AttributeList Attrs = {},
              llvm::ArrayRef<std::string> ResultNames = {});

  /// Appends a default-domain op with one result; returns the result.
  TensorId createOne(const llvm::Twine &Name, llvm::StringRef Type,
                     llvm::ArrayRef<TensorId> Operands, TensorType ResultType,
                     AttributeList Attrs = {}, llvm::StringRef ResultName = "");

  //===--- ONNX ops, result types computed ------------------------------===//

  /// MatMul of a [..., M, K] and a [K, N] (or [..., K, N]) tensor.
  TensorId matMul(const llvm::Twine &Name, TensorId A, TensorId B);
  /// Add, Sub, Mul, ... with multidirectional broadcasting.
  TensorId binary(llvm::StringRef Type, const llvm::Twine &Name, TensorId A,
                  TensorId B);
  /// Sigmoid, Tanh, Relu, ...: the result has the operand's type.
  TensorId unary(llvm::StringRef Type, const llvm::Twine &Name, TensorId X);
  TensorId transpose(const llvm::Twine &Name, TensorId X,
                     llvm::ArrayRef<int64_t> Perm);
  /// Splits \p X along \p Axis into \p N equal parts.
  llvm::SmallVector<TensorId, 4> split(const llvm::Twine &Name, TensorId X,
                                       int64_t Axis, unsigned N);
  TensorId squeeze(const llvm::Twine &Name, TensorId X,
                   llvm::ArrayRef<int64_t> Axes);
  TensorId unsqueeze(const llvm::Twine &Name, TensorId X,
                     llvm::ArrayRef<int64_t> Axes,
                     llvm::StringRef ResultName = "");
  TensorId concat(const llvm::Twine &Name, llvm::ArrayRef<TensorId> Xs,
                  int64_t Axis, llvm::StringRef ResultName = "");
  /// Clip(X, Min, Max) with scalar bounds.
  TensorId clip(const llvm::Twine &Name, TensorId X, double Min, double Max);

  /// A shared i64[N] Constant holding \p Axes.
  TensorId getAxes(llvm::ArrayRef<int64_t> Axes);
  /// A shared scalar Constant of element type \p DType holding \p V (a
  /// Constant with value_float, then a Cast for other types).
  TensorId getScalar(double V, DTypeKind DType);

private:
  Graph &G;
  const Graph *Reserved;
  int64_t Opset;
  /// Shared constants by what they hold.
  std::map<std::string, TensorId> Constants;
};

/// Copies a graph into a new one op by op: the name, opsets, annotations,
/// inputs and weights when constructed, each op copyOp() is given (with its
/// operands mapped to the new graph), and the outputs in finish().
class GraphRebuilder {
public:
  explicit GraphRebuilder(const Graph &Old);

  const Graph &getOld() const { return Old; }
  Graph &getNew() { return New; }

  /// The new tensor that stands for \p OldT (NoId for NoId).
  TensorId map(TensorId OldT) const { return OldT == NoId ? NoId : Map[OldT]; }
  /// Makes \p NewT stand for \p OldT.
  void setMapping(TensorId OldT, TensorId NewT) { Map[OldT] = NewT; }

  /// Appends a copy of old op \p O: same name, type, attributes,
  /// annotations, source name and result names.
  void copyOp(OpId O);

  /// Adds the outputs and returns the new graph.
  Graph finish();

private:
  const Graph &Old;
  Graph New;
  std::vector<TensorId> Map;
};

} // namespace transforms
} // namespace dp

#endif // DP_LIB_TRANSFORMS_GRAPHBUILDER_H
