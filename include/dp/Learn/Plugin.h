//===- dp/Learn/Plugin.h - Running the learned placers ----------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The learned placers are built on libtorch, whose start-up alone costs
/// a process about 0.4 s. They live in a plugin, dpLearnPlugin.so, which
/// dp loads the first time a learned placer runs; every other run of a
/// dp tool starts without libtorch. The plugin is looked for
///
///   1. at $DP_LEARN_PLUGIN, when that is set;
///   2. at ../lib/dp/dpLearnPlugin.so from the running executable's
///      directory (the build tree's bin/ and an installed prefix's bin/);
///   3. where this build put it (for tools and tests outside bin/).
///
//===----------------------------------------------------------------------===//

#ifndef DP_LEARN_PLUGIN_H
#define DP_LEARN_PLUGIN_H

#include "dp/Learn/Search.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <utility>

namespace dp {

/// Runs the learned placer \p Algo (mars, placeto, colocrl, hierarchical,
/// eagle) from the plugin, loading it on first use. Errors from the
/// placer, or the plugin's absence, are returned as errors.
llvm::Expected<SearchResult>
runLearnedPlacer(llvm::StringRef Algo, const LearnTask &T,
                 const SearchOptions &S,
                 llvm::ArrayRef<std::pair<std::string, std::string>> Options);

/// Writes a search curve as CSV: samples,seconds,best_seconds,sample_seconds.
void writeCurveCSV(llvm::raw_ostream &OS, llvm::ArrayRef<CurvePoint> Curve);

} // namespace dp

#endif // DP_LEARN_PLUGIN_H
