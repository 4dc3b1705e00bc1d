//===- PluginABI.h - Between dp and the learned placers' plugin -*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The one symbol the learned placers' plugin (dpLearnPlugin.so) exports,
/// and what it returns. The plugin carries its own copy of dp's Support
/// library and of LLVM Support, so nothing whose identity matters crosses
/// this line: errors cross as their locations and messages, and files are written by dp, not by
/// the plugin (dp/Learn/Plugin.h). Plain C++ values (the structs of
/// dp/Learn/Search.h, std::string, std::function) cross as they are: both
/// sides are built from the same headers by the same compiler, which the
/// version and the sizes below check.
///
//===----------------------------------------------------------------------===//

#ifndef DP_LIB_LEARN_PLUGINABI_H
#define DP_LIB_LEARN_PLUGINABI_H

#include "dp/Learn/Search.h"
#include "dp/Support/Diagnostics.h"

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace dp {

struct LearnPluginABI {
  /// Bumped whenever this struct or dp/Learn/Search.h changes.
  static constexpr unsigned CurrentVersion = 3;
  unsigned Version;
  size_t SizeOfTask, SizeOfOptions, SizeOfResult;
  /// Runs the learned placer \p Algo. On failure returns false with the
  /// errors, location and message each, in \p Errors.
  bool (*Search)(const char *Algo, const LearnTask &T, const SearchOptions &S,
                 const std::pair<std::string, std::string> *Options,
                 size_t NumOptions, SearchResult &Result,
                 std::vector<std::pair<DiagLocation, std::string>> &Errors);
};

} // namespace dp

/// The plugin's entry point.
extern "C" const dp::LearnPluginABI *dpGetLearnPluginABI();

#endif // DP_LIB_LEARN_PLUGINABI_H
