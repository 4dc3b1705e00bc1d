//===- dp/IR/Graph.h - The dp graph IR --------------------------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// dp::Graph is the one in-memory IR every pass works on: ops and the
/// tensors that flow between them, stored in flat arrays indexed by OpId and
/// TensorId so that hot loops (the simulator, cost lookups) can keep their
/// own data in parallel arrays.
///
/// Invariants (checked by verifyGraph):
/// - op and tensor names are unique;
/// - every tensor is a graph input, a weight, or the result of exactly one
///   op, and has an element type and a static shape;
/// - ops are stored in a topological order: every operand of an op is a
///   graph input, a weight, or a result of an earlier op;
/// - the use lists of tensors match the operands of ops.
///
/// Weights (ONNX initializers) are known by type only: dp never reads
/// weight bytes, since placement needs shapes, not values.
///
//===----------------------------------------------------------------------===//

#ifndef DP_IR_GRAPH_H
#define DP_IR_GRAPH_H

#include "dp/IR/Attribute.h"
#include "dp/IR/Types.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Allocator.h"
#include "llvm/Support/StringSaver.h"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace dp {

using OpId = uint32_t;
using TensorId = uint32_t;

/// Marks an absent optional operand or result (ONNX's empty name) and the
/// producer of tensors that no op produces.
constexpr uint32_t NoId = ~0u;

enum class TensorKind : uint8_t {
  /// A graph input: fed by the user at every step.
  Input,
  /// A weight (ONNX initializer): persistent, known by type only.
  Weight,
  /// The result of an op.
  Activation,
};

/// One use of a tensor: operand \c Operand of op \c User.
struct Use {
  OpId User;
  unsigned Operand;
  bool operator==(const Use &O) const {
    return User == O.User && Operand == O.Operand;
  }
};

struct Tensor {
  llvm::StringRef Name;
  TensorType Type;
  TensorKind Kind = TensorKind::Activation;
  /// The op whose result this is, or NoId for inputs and weights.
  OpId Producer = NoId;
  /// Which result of Producer this is.
  unsigned ResultIndex = 0;
  /// Uses in op order, then operand order.
  llvm::SmallVector<Use, 2> Uses;
};

struct Op {
  /// Unique within the graph; the ONNX node name when that is non-empty and
  /// unique, otherwise a stable generated name.
  llvm::StringRef Name;
  /// The node's name in the user's ONNX model ("" if it had none), kept for
  /// mapping results back; equal to Name for most ops.
  llvm::StringRef SourceName;
  /// Operator domain ("" is the default ONNX domain) and type ("Conv").
  llvm::StringRef Domain;
  llvm::StringRef Type;
  /// Operands and results in order; NoId for an absent optional one.
  llvm::SmallVector<TensorId, 4> Operands;
  llvm::SmallVector<TensorId, 2> Results;
  /// The ONNX attributes.
  AttributeList Attrs;
  /// Facts later passes attach (cost, group, device, ...).
  AttributeList Annotations;
};

/// An opset import: a domain and its version.
struct OpsetImport {
  std::string Domain;
  int64_t Version = 0;
  bool operator==(const OpsetImport &O) const {
    return Domain == O.Domain && Version == O.Version;
  }
};

class Graph {
public:
  Graph() : Strings(std::make_unique<StringStorage>()) {}
  Graph(const Graph &) = delete;
  Graph &operator=(const Graph &) = delete;
  Graph(Graph &&) = default;
  Graph &operator=(Graph &&) = default;

  //===--- Whole-graph properties --------------------------------------===//

  llvm::StringRef getName() const { return Name; }
  void setName(llvm::StringRef N) { Name = N.str(); }

  /// Opset imports, sorted by domain.
  llvm::ArrayRef<OpsetImport> getOpsets() const { return Opsets; }
  /// Adds or replaces the version of \p Domain.
  void setOpset(llvm::StringRef Domain, int64_t Version);

  AttributeList &getAnnotations() { return Annotations; }
  const AttributeList &getAnnotations() const { return Annotations; }

  /// True when the graph has no ops, tensors or opsets.
  bool empty() const {
    return Ops.empty() && Tensors.empty() && Opsets.empty();
  }

  //===--- Tensors ------------------------------------------------------===//

  size_t getNumTensors() const { return Tensors.size(); }
  Tensor &getTensor(TensorId T) { return Tensors[T]; }
  const Tensor &getTensor(TensorId T) const { return Tensors[T]; }
  llvm::ArrayRef<Tensor> tensors() const { return Tensors; }

  /// Returns the tensor named \p N or NoId.
  TensorId lookupTensor(llvm::StringRef N) const {
    auto It = TensorByName.find(N);
    return It == TensorByName.end() ? NoId : It->second;
  }

  /// Adds a graph input or a weight. The name must be unused.
  TensorId addInput(llvm::StringRef N, TensorType T);
  TensorId addWeight(llvm::StringRef N, TensorType T);

  /// Graph inputs, weights and outputs in their declared order.
  llvm::ArrayRef<TensorId> getInputs() const { return Inputs; }
  llvm::ArrayRef<TensorId> getWeights() const { return Weights; }
  llvm::ArrayRef<TensorId> getOutputs() const { return Outputs; }
  void addOutput(TensorId T) { Outputs.push_back(T); }

  //===--- Ops ----------------------------------------------------------===//

  size_t getNumOps() const { return Ops.size(); }
  Op &getOp(OpId O) { return Ops[O]; }
  const Op &getOp(OpId O) const { return Ops[O]; }
  llvm::ArrayRef<Op> ops() const { return Ops; }

  /// Returns the op named \p N or NoId.
  OpId lookupOp(llvm::StringRef N) const {
    auto It = OpByName.find(N);
    return It == OpByName.end() ? NoId : It->second;
  }

  /// A result to create with an op: its name (empty for an absent optional
  /// result) and type.
  struct ResultSpec {
    llvm::StringRef Name;
    TensorType Type;
  };

  /// Appends an op. \p Name must be unused, operands must exist (or be
  /// NoId), result names must be unused. Returns the new op's id; its
  /// results are new Activation tensors.
  OpId addOp(llvm::StringRef Name, llvm::StringRef Domain,
             llvm::StringRef Type, llvm::ArrayRef<TensorId> Operands,
             llvm::ArrayRef<ResultSpec> Results, AttributeList Attrs = {});

  /// Sets the ONNX source name of \p O (defaults to its name).
  void setSourceName(OpId O, llvm::StringRef N) { Ops[O].SourceName = save(N); }

  /// Returns "Domain::Type", or "Type" in the default domain.
  std::string getQualifiedType(OpId O) const;

  /// Reserves room for \p NumOps ops and \p NumTensors tensors.
  void reserve(size_t NumOps, size_t NumTensors);

  /// Copies \p S into storage owned by the graph.
  llvm::StringRef save(llvm::StringRef S) { return Strings->Saver.save(S); }

private:
  TensorId addTensor(llvm::StringRef N, TensorType T, TensorKind K);

  std::string Name;
  std::vector<OpsetImport> Opsets;
  AttributeList Annotations;

  std::vector<Op> Ops;
  std::vector<Tensor> Tensors;
  llvm::SmallVector<TensorId, 4> Inputs;
  std::vector<TensorId> Weights;
  llvm::SmallVector<TensorId, 4> Outputs;
  /// Keys are the names saved in Strings.
  llvm::DenseMap<llvm::StringRef, TensorId> TensorByName;
  llvm::DenseMap<llvm::StringRef, OpId> OpByName;

  /// Names live here; held by pointer so that moving a Graph keeps every
  /// StringRef into it valid.
  struct StringStorage {
    llvm::BumpPtrAllocator Alloc;
    /// Op and tensor names, unique by construction: no lookup needed.
    llvm::StringSaver Names{Alloc};
    /// Everything else (op types, domains), shared between ops.
    llvm::UniqueStringSaver Saver{Alloc};
  };
  std::unique_ptr<StringStorage> Strings;
};

/// The type of operand \p I of \p O, or null when \p O has no such operand
/// or it is absent.
const TensorType *getOperandType(const Graph &G, const Op &O, unsigned I);
/// The type of result \p I of \p O, or null likewise.
const TensorType *getResultType(const Graph &G, const Op &O, unsigned I);

} // namespace dp

#endif // DP_IR_GRAPH_H
