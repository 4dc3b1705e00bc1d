//===- LoopShapes.h - Shapes of Loop results --------------------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// libonnx 1.12 infers a Loop's body with the shapes of the loop-carried
/// values cleared, since an iteration may change them, so a Loop's results
/// get no shape even when its body keeps them (every `for` loop that
/// torch.jit.script exports). dp infers the body again, on its own, with the
/// shapes the carried values enter with:
///
/// - a carried value whose shape the body gives back unchanged keeps it on
///   every iteration: the Loop's result has it;
/// - a scan output, stacked from every iteration, has the trip count as its
///   first dimension when the trip count is known (a constant or folded)
///   and the loop surely runs to it: its condition is true on entry and
///   the body passes on a true condition (the condition it was given, or
///   a constant true).
///
/// Anything else (a shape that changes across iterations, a trip count
/// only known at run time) is left unknown, and the Loop's results keep the
/// error they get.
///
//===----------------------------------------------------------------------===//

#ifndef DP_LIB_IMPORT_LOOPSHAPES_H
#define DP_LIB_IMPORT_LOOPSHAPES_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSet.h"

namespace onnx {
class ModelProto;
class TypeProto;
} // namespace onnx

namespace dp {

struct FoldValue;

/// What inferLoopShapes reads of the importer's state.
struct LoopShapeContext {
  /// The type of a tensor of the main graph, or null.
  llvm::function_ref<const onnx::TypeProto *(llvm::StringRef)> TypeOf;
  /// The folded value of a tensor of the main graph, or null.
  llvm::function_ref<const FoldValue *(llvm::StringRef)> ValueOf;
  /// Runs shape inference on a model; false when it fails.
  llvm::function_ref<bool(onnx::ModelProto &)> Infer;
};

/// Gives the results of the top-level Loops of \p M the shapes described in
/// the file comment, as value_info entries of \p M's graph. Loops whose
/// results all have one are added to \p Done and not looked at again.
/// Returns the number of results given a shape.
int inferLoopShapes(onnx::ModelProto &M, const LoopShapeContext &Ctx,
                    llvm::StringSet<> &Done);

} // namespace dp

#endif // DP_LIB_IMPORT_LOOPSHAPES_H
