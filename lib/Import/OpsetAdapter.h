//===- OpsetAdapter.h - Opsets 18-21 read as opset 17 -----------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// dp checks and infers models with libonnx 1.12, which knows IR versions
/// up to 8 and the default domain's opsets up to 17. Current exporters
/// write IR 9 or 10 and opsets 18 to 21. Most ops did not change after
/// opset 17, or changed only by taking more element types; the ones whose
/// signature changed are rewritten, node by node and under the node's own
/// name, into their opset-17 form (docs/import-onnx.md lists them):
///
/// - Reduce{L1,L2,LogSum,LogSumExp,Max,Mean,Min,Prod,SumSquare} (18): the
///   axes input, which must be a constant, becomes the attribute;
///   noop_with_empty_axes with no axes makes the node an Identity;
/// - Split (18): num_outputs is dropped (opset 17 splits equally into the
///   outputs);
/// - Resize (18, 19): antialias is dropped (it changes values, not shapes),
///   keep_aspect_ratio_policy "stretch" is dropped, the
///   "half_pixel_symmetric" mode is read as "half_pixel";
/// - Pad (18, 19): an absent or empty axes input is dropped; "wrap" mode
///   is kept (the shape is the same);
/// - Cast, CastLike (19): saturate is dropped; AveragePool (19): unit
///   dilations are dropped; LpPool (18): a false ceil_mode is dropped;
///   QuantizeLinear, DequantizeLinear (19, 21): default output_dtype,
///   block_size and saturate are dropped.
///
/// GroupNormalization, Mish and Gelu are expanded into opset-17 ops
/// (expandNewOps). Anything else that opset 17 cannot say (an op added
/// after it, such as Col2Im or CenterCropPad, a float8 or 4-bit tensor,
/// computed reduce axes, Pad axes, Resize axes) is an error naming the node,
/// the op and the opset.
///
//===----------------------------------------------------------------------===//

#ifndef DP_LIB_IMPORT_OPSETADAPTER_H
#define DP_LIB_IMPORT_OPSETADAPTER_H

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include "onnx/onnx_pb.h"

#include <string>
#include <vector>

namespace dp {

/// The newest IR version and default-domain opset that import-onnx reads.
constexpr int MaxReadIRVersion = 10;
constexpr int MaxReadOpset = 21;
/// What libonnx 1.12 checks and infers.
constexpr int MaxLibONNXIRVersion = 8;
constexpr int MaxLibONNXOpset = 17;

/// What expandNewOps did to the main graph, per node.
struct Expansions {
  /// The name of the user's node each node comes from, empty for the
  /// user's own nodes (in: as before the expansion).
  std::vector<std::string> Origins;
  /// Whether each node is a helper node of an expansion.
  std::vector<bool> Helpers;
  /// The nodes expanded, by their first output (the last node of the
  /// expansion computes it).
  llvm::StringMap<onnx::NodeProto> Originals;
};

/// Replaces, in models of opsets 18 to 21, the nodes of ops added after
/// opset 17 that opset-17 ops compute by those ops, for libonnx's checker
/// and inference: GroupNormalization (18; scale and bias per group before
/// opset 21, per channel from it), Mish (18) and Gelu (20, exact or tanh).
/// The last node of each expansion keeps the node's name and output. A
/// node without the op's inputs is left for the adapter to report.
/// \p Main, when given, records the expansions of the main graph.
void expandNewOps(onnx::ModelProto &M, Expansions *Main = nullptr);

/// Rewrites \p M, whose nodes carry their unique names already, into IR 8
/// and opset 17 where it is newer (see the file comment). Errors name the
/// nodes, or \p File for the model's versions.
llvm::Error adaptToOpset17(onnx::ModelProto &M, llvm::StringRef File);

} // namespace dp

#endif // DP_LIB_IMPORT_OPSETADAPTER_H
