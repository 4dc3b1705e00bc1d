//===- dp/IR/Annotations.h - The annotations passes exchange ----*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Typed access to the annotations one pass writes and another reads
/// (docs/IR.md lists them, with who sets each): a pass reads `device`,
/// `group`, `colocate`, ... through these keys instead of looking up a
/// string and checking the attribute's kind by hand. A missing annotation,
/// or one of another kind, reads as None.
///
///   if (Optional<int64_t> Group = ann::get(Op, ann::Group)) ...
///   ann::set(Op, ann::Device, "gpu:0");
///   ann::getTime(Op, "p100")      // time.p100
///
//===----------------------------------------------------------------------===//

#ifndef DP_IR_ANNOTATIONS_H
#define DP_IR_ANNOTATIONS_H

#include "dp/IR/Graph.h"

#include "llvm/ADT/Optional.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>

namespace dp {
namespace ann {

/// An annotation's name and the type of its value: llvm::StringRef (a
/// string attribute), int64_t (an integer) or double (a float).
template <typename T> struct Key { llvm::StringLiteral Name; };

// On ops.
/// The op's device (place, simulate{placement=}, import of a placed model).
inline constexpr Key<llvm::StringRef> Device{"device"};
/// The group colocate put the op in.
inline constexpr Key<int64_t> Group{"group"};
/// The op this one should share a device with (training-graph).
inline constexpr Key<llvm::StringRef> Colocate{"colocate"};
/// forward, loss, backward or update (training-graph).
inline constexpr Key<llvm::StringRef> Phase{"phase"};
/// The LSTM/GRU/RNN op a cell op was unrolled from, and its time step.
inline constexpr Key<llvm::StringRef> RNN{"rnn"};
inline constexpr Key<int64_t> Timestep{"timestep"};
/// The user's ONNX node an op computes part of, when it is not that node.
inline constexpr Key<llvm::StringRef> Node{"node"};
/// 1 when import folded every result of the op (a shape computation).
inline constexpr Key<int64_t> Folded{"folded"};
/// A Loop's folded trip count.
inline constexpr Key<int64_t> TripCount{"trip_count"};
/// Trailing operands a control-flow body reads from the enclosing graph.
inline constexpr Key<int64_t> ImplicitOperands{"implicit_operands"};
/// Bytes that stay on the op's device for the whole step, and scratch
/// bytes it needs while it runs (cost-annotate).
inline constexpr Key<int64_t> PersistentBytes{"persistent_bytes"};
inline constexpr Key<int64_t> WorkspaceBytes{"workspace_bytes"};

// On the graph.
/// The placer that chose the devices ("file" for simulate{placement=}).
inline constexpr Key<llvm::StringRef> Placer{"placer"};
/// The number of groups colocate made.
inline constexpr Key<int64_t> Groups{"groups"};
/// The global batch import-onnx{batch=} set the model's batch dimensions
/// to (absent when the model's own shapes fix it).
inline constexpr Key<int64_t> Batch{"batch"};
/// The micro-batches one step runs (import-onnx{microbatches=}): the graph
/// is one micro-batch's step, imported at the global batch over this.
inline constexpr Key<int64_t> MicroBatches{"microbatches"};
/// The graph inputs import-onnx{microbatches=} divided, with their batch
/// axes: "NAME:AXIS,NAME:AXIS" (inputs it reads whole are not named).
inline constexpr Key<llvm::StringRef> BatchAxes{"batch_axes"};
/// The pipeline schedule of the micro-batches, "gpipe" or "1f1b" (the
/// pipeline pass; docs/transforms.md).
inline constexpr Key<llvm::StringRef> Schedule{"schedule"};
/// 1 when each stage recomputes its forward activations before a
/// micro-batch's backward instead of keeping them (the pipeline pass's
/// recompute=true; docs/simulator.md).
inline constexpr Key<int64_t> Recompute{"recompute"};
/// Data-parallel replicas of the step (import-onnx{replicas=}, the
/// pipeline pass): the graph is one replica's micro-batch, imported at the
/// global batch over replicas times micro-batches; each replica runs the
/// placed step on its own devices and the gradients are all-reduced.
inline constexpr Key<int64_t> Replicas{"replicas"};
/// How far apart, in devices of one type, a device and its next replica's
/// copy are (0, the default: the type's devices over the replicas, so
/// each replica has a contiguous block).
inline constexpr Key<int64_t> ReplicaStride{"replica_stride"};
/// The gradient all-reduce's bucket size in bytes (default 25 MiB, as
/// DDP's bucket_cap_mb).
inline constexpr Key<int64_t> BucketBytes{"bucket_bytes"};

namespace detail {
template <typename T> constexpr AttrKind getKind();
template <> constexpr AttrKind getKind<llvm::StringRef>() {
  return AttrKind::String;
}
template <> constexpr AttrKind getKind<int64_t>() { return AttrKind::Int; }
template <> constexpr AttrKind getKind<double>() { return AttrKind::Float; }

template <typename T> T read(const Attribute &A);
template <> inline llvm::StringRef read(const Attribute &A) {
  return A.getString();
}
template <> inline int64_t read(const Attribute &A) { return A.getInt(); }
template <> inline double read(const Attribute &A) { return A.getFloat(); }

inline Attribute make(llvm::StringRef V) {
  return Attribute::getString(V.str());
}
inline Attribute make(int64_t V) { return Attribute::getInt(V); }
inline Attribute make(double V) { return Attribute::getFloat(V); }
} // namespace detail

/// The value of \p K in \p L, or None when it is missing or of another kind.
template <typename T>
llvm::Optional<T> get(const AttributeList &L, const Key<T> &K) {
  const Attribute *A = L.get(K.Name);
  if (!A || A->getKind() != detail::getKind<T>())
    return llvm::None;
  return detail::read<T>(*A);
}
template <typename T> llvm::Optional<T> get(const Op &O, const Key<T> &K) {
  return get(O.Annotations, K);
}
template <typename T> llvm::Optional<T> get(const Graph &G, const Key<T> &K) {
  return get(G.getAnnotations(), K);
}

/// A string annotation's value, or "" when it has none.
inline llvm::StringRef getString(const Op &O, const Key<llvm::StringRef> &K) {
  return get(O, K).getValueOr(llvm::StringRef());
}

template <typename T, typename V>
void set(AttributeList &L, const Key<T> &K, const V &Value) {
  L.set(K.Name, detail::make(T(Value)));
}
template <typename T, typename V>
void set(Op &O, const Key<T> &K, const V &Value) {
  set(O.Annotations, K, Value);
}
template <typename T, typename V>
void set(Graph &G, const Key<T> &K, const V &Value) {
  set(G.getAnnotations(), K, Value);
}

/// The name of the time annotation of device type \p Type: "time.<Type>".
inline std::string getTimeKey(llvm::StringRef Type) {
  return ("time." + Type).str();
}
/// The name of the shared time annotation of device type \p Type:
/// "time_shared.<Type>", the op's time while every device of its shared
/// group runs ops (cost-annotate's shared-profile=).
inline std::string getSharedTimeKey(llvm::StringRef Type) {
  return ("time_shared." + Type).str();
}
/// Whether \p Name is the name of a time annotation.
inline bool isTimeKey(llvm::StringRef Name) { return Name.startswith("time."); }
/// The op's compute time on device type \p Type (cost-annotate), or None.
inline llvm::Optional<double> getTime(const Op &O, llvm::StringRef Type) {
  const Attribute *A = O.Annotations.get(getTimeKey(Type));
  if (!A || A->getKind() != AttrKind::Float)
    return llvm::None;
  return A->getFloat();
}

} // namespace ann
} // namespace dp

#endif // DP_IR_ANNOTATIONS_H
