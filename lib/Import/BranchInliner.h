//===- BranchInliner.h - If nodes replaced by their branch ------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// An If whose condition is known at import time (folded from constants,
/// static shapes, or an input value the user bound with
/// import-onnx{value=}) always runs the same branch: the importer replaces
/// the If with that branch's nodes, so that placement sees the ops that run
/// instead of one control-flow op with two bodies, and shapes that differed
/// between the branches become static.
///
/// Decisions are keyed by the If's first output name, which inlining never
/// changes: the branch's outputs reach the If's outputs through Identity
/// nodes, and the branch's own names are kept unless they clash with a name
/// of the enclosing graph.
///
//===----------------------------------------------------------------------===//

#ifndef DP_LIB_IMPORT_BRANCHINLINER_H
#define DP_LIB_IMPORT_BRANCHINLINER_H

#include "llvm/ADT/StringMap.h"

#include <string>
#include <vector>

namespace onnx {
class GraphProto;
class NodeProto;
} // namespace onnx

namespace dp {

/// The branch each decided If takes (true: then_branch), by the If's first
/// output name.
using BranchDecisions = llvm::StringMap<bool>;

/// The key under which \p N's decision is kept; empty when \p N is not an
/// If that can be decided (no outputs, no condition).
llvm::StringRef getBranchKey(const onnx::NodeProto &N);

/// Replaces every top-level If of \p G that \p Decided names by the nodes of
/// the branch it takes, the branch's initializers joining \p G's. Ifs
/// inside the inlined branches are inlined too when decided. Returns the
/// number of Ifs inlined.
///
/// \p Origins, when given, holds per node of \p G the name of the node of
/// the user's graph it comes from, empty for the user's own nodes; it is
/// kept in step: a node of an inlined branch comes from the If's origin,
/// or from the If.
int inlineDecidedBranches(onnx::GraphProto &G, const BranchDecisions &Decided,
                          std::vector<std::string> *Origins = nullptr);

} // namespace dp

#endif // DP_LIB_IMPORT_BRANCHINLINER_H
