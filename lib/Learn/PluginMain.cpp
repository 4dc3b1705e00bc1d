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

#include "FlopCount.h"
#include "PluginABI.h"
#include "dp/Learn/Placers.h"
#include "dp/Support/Diagnostics.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSwitch.h"

#include <c10/util/Exception.h>

#include <exception>
#include <optional>

using namespace dp;
using namespace llvm;

using SearchFn = Expected<SearchResult> (*)(const LearnTask &,
                                            const SearchOptions &,
                                            LearnOptions);

static bool search(const char *Algo, const LearnTask &T, const SearchOptions &S,
                   const std::pair<std::string, std::string> *Options,
                   size_t NumOptions, SearchResult &Result,
                   std::vector<std::pair<DiagLocation, std::string>> &Errors) {
  SearchFn Fn = StringSwitch<SearchFn>(Algo)
#define LEARNED_PLACER(NAME, ID, PARAMS, DESCRIPTION) .Case(NAME, search##ID)
#include "dp/Learn/LearnedPlacers.def"
                    .Default(nullptr);
  if (!Fn) {
    Errors.emplace_back(DiagLocation(),
                        "the learned placers' plugin has no placer '" +
                            std::string(Algo) + "'");
    return false;
  }
  // libtorch reports failures (out of memory, a CUDA error) by throwing;
  // they become the placer's error, not an abort.
  auto Run = [&]() -> Expected<SearchResult> {
    std::string Prefix =
        "place{algo=" + std::string(Algo) + "}: libtorch failed: ";
    try {
      std::optional<learn::FlopCounter> Flops;
      if (S.CountFlops)
        Flops.emplace();
      return Fn(T, S, LearnOptions(Options, NumOptions));
    } catch (const c10::Error &E) {
      return makeError(Prefix + E.what_without_backtrace());
    } catch (const std::exception &E) {
      return makeError(Prefix + E.what());
    }
  };
  Expected<SearchResult> R = Run();
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
  static const LearnPluginABI ABI = {LearnPluginABI::CurrentVersion,
                                     sizeof(LearnTask), sizeof(SearchOptions),
                                     sizeof(SearchResult), search};
  return &ABI;
}
