//===- PluginMain.cpp - The learned placers' plugin -----------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The entry point of dpLearnPlugin.so: runs a learned placer by name.
///
//===----------------------------------------------------------------------===//

#include "PluginABI.h"
#include "dp/Learn/Placers.h"
#include "dp/Support/Diagnostics.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSwitch.h"

using namespace dp;
using namespace llvm;

using SearchFn = Expected<SearchResult> (*)(const LearnTask &,
                                            const SearchOptions &,
                                            LearnOptions);

static bool search(const char *Algo, const LearnTask &T,
                   const SearchOptions &S,
                   const std::pair<std::string, std::string> *Options,
                   size_t NumOptions, SearchResult &Result,
                   std::vector<std::pair<DiagLocation, std::string>> &Errors) {
  SearchFn Fn = StringSwitch<SearchFn>(Algo)
                    .Case("mars", searchMars)
                    .Case("placeto", searchPlaceto)
                    .Case("colocrl", searchColocRL)
                    .Case("hierarchical", searchHierarchical)
                    .Case("eagle", searchEAGLE)
                    .Default(nullptr);
  if (!Fn) {
    Errors.emplace_back(DiagLocation(),
                        "the learned placers' plugin has no placer '" +
                            std::string(Algo) + "'");
    return false;
  }
  Expected<SearchResult> R = Fn(T, S, LearnOptions(Options, NumOptions));
  if (!R) {
    handleAllErrors(
        R.takeError(),
        [&](const LocatedError &E) {
          Errors.emplace_back(E.getLocation(), E.getMessage().str());
        },
        [&](const ErrorInfoBase &E) {
          Errors.emplace_back(DiagLocation(), E.message());
        });
    return false;
  }
  Result = std::move(*R);
  return true;
}

extern "C" __attribute__((visibility("default"))) const LearnPluginABI *
dpGetLearnPluginABI() {
  static const LearnPluginABI ABI = {
      LearnPluginABI::CurrentVersion, sizeof(LearnTask),
      sizeof(SearchOptions), sizeof(SearchResult), search};
  return &ABI;
}
