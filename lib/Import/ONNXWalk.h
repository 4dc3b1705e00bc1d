//===- ONNXWalk.h - Small walks over ONNX protos ----------------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// What import-onnx's stages all need of a model: its default-domain opset,
/// and the bodies (If branches, Loop and Scan bodies) of a node.
///
//===----------------------------------------------------------------------===//

#ifndef DP_LIB_IMPORT_ONNXWALK_H
#define DP_LIB_IMPORT_ONNXWALK_H

#include "llvm/ADT/STLFunctionalExtras.h"

#include "onnx/onnx_pb.h"

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

} // namespace dp

#endif // DP_LIB_IMPORT_ONNXWALK_H
