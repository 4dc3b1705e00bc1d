//===- ONNXWalk.h - Small walks over ONNX protos ----------------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// What import-onnx's stages and emit need of a model: its default-domain
/// opset, the bodies (If branches, Loop and Scan bodies) of a node, the
/// tensors a body reads from the scopes around it, and tensor types.
///
//===----------------------------------------------------------------------===//

#ifndef DP_IMPORT_ONNXWALK_H
#define DP_IMPORT_ONNXWALK_H

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"

#include "onnx/onnx_pb.h"

#include <cstdint>
#include <vector>

namespace dp {

/// The version of the default domain ("" or "ai.onnx") \p M imports, or 0.
inline int getDefaultOpset(const onnx::ModelProto &M) {
  int Opset = 0;
  for (const auto &O : M.opset_import())
    if (O.domain().empty() || O.domain() == "ai.onnx")
      Opset = O.version();
  return Opset;
}

/// Calls \p Fn on every graph attribute of \p N (not on their nodes' own
/// bodies: \p Fn recurses where it needs to).
inline void forEachBody(onnx::NodeProto &N,
                        llvm::function_ref<void(onnx::GraphProto &)> Fn) {
  for (onnx::AttributeProto &A : *N.mutable_attribute()) {
    if (A.has_g())
      Fn(*A.mutable_g());
    for (onnx::GraphProto &Body : *A.mutable_graphs())
      Fn(Body);
  }
}
inline void forEachBody(const onnx::NodeProto &N,
                        llvm::function_ref<void(const onnx::GraphProto &)> Fn) {
  for (const onnx::AttributeProto &A : N.attribute()) {
    if (A.has_g())
      Fn(A.g());
    for (const onnx::GraphProto &Body : A.graphs())
      Fn(Body);
  }
}

/// Appends to \p Out, in first-use order, the names \p G's nodes (and their
/// nested subgraphs) read from enclosing scopes. \p Local holds the names
/// visible from enclosing subgraphs; \p Seen the names already appended or
/// explicitly read by the node.
inline void collectOuterReads(const onnx::GraphProto &G,
                              std::vector<llvm::StringRef> &Out,
                              llvm::DenseSet<llvm::StringRef> &Seen,
                              llvm::DenseSet<llvm::StringRef> Local) {
  for (const auto &VI : G.input())
    Local.insert(VI.name());
  for (const auto &T : G.initializer())
    Local.insert(T.name());
  for (const onnx::NodeProto &N : G.node()) {
    for (const std::string &In : N.input())
      if (!In.empty() && !Local.contains(In) && Seen.insert(In).second)
        Out.push_back(In);
    for (const onnx::AttributeProto &A : N.attribute()) {
      if (A.has_g())
        collectOuterReads(A.g(), Out, Seen, Local);
      for (const auto &Sub : A.graphs())
        collectOuterReads(Sub, Out, Seen, Local);
    }
    for (const std::string &O : N.output())
      if (!O.empty())
        Local.insert(O);
  }
}

/// The static dimensions of \p T into \p Dims; false when \p T is null, not
/// a tensor, or has a dimension without a (non-negative) size.
inline bool getStaticDims(const onnx::TypeProto *T,
                          std::vector<int64_t> &Dims) {
  if (!T || !T->has_tensor_type() || !T->tensor_type().has_shape())
    return false;
  Dims.clear();
  for (const auto &D : T->tensor_type().shape().dim()) {
    if (!D.has_dim_value() || D.dim_value() < 0)
      return false;
    Dims.push_back(D.dim_value());
  }
  return true;
}

/// The types \p G declares or inference recorded, by tensor name: graph
/// inputs first, then value_info, then outputs (the first one wins).
inline llvm::StringMap<const onnx::TypeProto *>
getDeclaredTypes(const onnx::GraphProto &G) {
  llvm::StringMap<const onnx::TypeProto *> Types;
  for (const auto *VIs : {&G.input(), &G.value_info(), &G.output()})
    for (const onnx::ValueInfoProto &VI : *VIs)
      Types.try_emplace(VI.name(), &VI.type());
  return Types;
}

/// Declares the initializer \p T as an input of \p G, of its element type
/// and shape (so that checking and inference see its type, not bytes).
inline void declareAsInput(onnx::GraphProto &G, const onnx::TensorProto &T) {
  onnx::ValueInfoProto *VI = G.add_input();
  VI->set_name(T.name());
  auto *TT = VI->mutable_type()->mutable_tensor_type();
  TT->set_elem_type(T.data_type());
  auto *Shape = TT->mutable_shape();
  for (int64_t D : T.dims())
    Shape->add_dim()->set_dim_value(D);
}

/// The types of \p G's values as inference left them, by tensor name:
/// value_info over graph inputs (inference may have made an input's shape
/// more static), then outputs not named before.
inline llvm::StringMap<const onnx::TypeProto *>
getInferredTypes(const onnx::GraphProto &G) {
  llvm::StringMap<const onnx::TypeProto *> Types(
      G.input_size() + G.value_info_size() + G.output_size());
  for (const auto *VIs : {&G.input(), &G.value_info()})
    for (const onnx::ValueInfoProto &VI : *VIs)
      Types[VI.name()] = &VI.type();
  for (const onnx::ValueInfoProto &VI : G.output())
    Types.try_emplace(VI.name(), &VI.type());
  return Types;
}

} // namespace dp

#endif // DP_IMPORT_ONNXWALK_H
