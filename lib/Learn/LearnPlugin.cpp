//===- LearnPlugin.cpp - Loading the learned placers' plugin --------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// dp's side of dpLearnPlugin.so (dp/Learn/Plugin.h): finds and loads it
/// once, checks that it was built with this dp, and turns its results and
/// errors back into dp's.
///
//===----------------------------------------------------------------------===//

#include "PluginABI.h"
#include "dp/Learn/Plugin.h"
#include "dp/Support/Diagnostics.h"
#include "dp/Support/Format.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/DynamicLibrary.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"

#include <cmath>
#include <vector>

using namespace dp;
using namespace llvm;

static constexpr const char PluginName[] = "dpLearnPlugin.so";

/// Where to look for the plugin, in order (dp/Learn/Plugin.h).
static std::vector<std::string> getPluginCandidates() {
  std::vector<std::string> Paths;
  if (Optional<std::string> Env = sys::Process::GetEnv("DP_LEARN_PLUGIN"))
    if (!Env->empty())
      return {*Env};
  static int Anchor;
  std::string Exe = sys::fs::getMainExecutable(nullptr, &Anchor);
  if (!Exe.empty()) {
    SmallString<256> P(sys::path::parent_path(sys::path::parent_path(Exe)));
    sys::path::append(P, "lib", "dp", PluginName);
    Paths.push_back(std::string(P));
  }
  if (Paths.empty() || Paths.front() != DP_LEARN_PLUGIN_BUILD_PATH)
    Paths.push_back(DP_LEARN_PLUGIN_BUILD_PATH);
  return Paths;
}

namespace {
/// The loaded plugin, or why it could not be loaded.
struct LoadedPlugin {
  const LearnPluginABI *ABI = nullptr;
  std::string Problem;
};
} // namespace

static LoadedPlugin loadPlugin() {
  LoadedPlugin L;
  std::vector<std::string> Candidates = getPluginCandidates();
  std::string Path;
  for (const std::string &C : Candidates)
    if (sys::fs::exists(C)) {
      Path = C;
      break;
    }
  if (Path.empty()) {
    L.Problem = "the learned placers' plugin " + std::string(PluginName) +
                " is not installed (looked for " + join(Candidates, ", ") +
                "; DP_LEARN_PLUGIN names another path)";
    return L;
  }
  std::string Err;
  sys::DynamicLibrary Lib =
      sys::DynamicLibrary::getPermanentLibrary(Path.c_str(), &Err);
  if (!Lib.isValid()) {
    L.Problem = "cannot load the learned placers' plugin " + Path + ": " + Err;
    return L;
  }
  using GetABIFn = const LearnPluginABI *(*)();
  auto GetABI =
      reinterpret_cast<GetABIFn>(Lib.getAddressOfSymbol("dpGetLearnPluginABI"));
  const LearnPluginABI *ABI = GetABI ? GetABI() : nullptr;
  if (!ABI) {
    L.Problem = Path + " is not dp's learned placers' plugin";
    return L;
  }
  if (ABI->Version != LearnPluginABI::CurrentVersion ||
      ABI->SizeOfTask != sizeof(LearnTask) ||
      ABI->SizeOfOptions != sizeof(SearchOptions) ||
      ABI->SizeOfResult != sizeof(SearchResult)) {
    L.Problem = "the learned placers' plugin " + Path +
                " was built for another version of dp";
    return L;
  }
  L.ABI = ABI;
  return L;
}

Expected<SearchResult>
dp::runLearnedPlacer(StringRef Algo, const LearnTask &T, const SearchOptions &S,
                     ArrayRef<std::pair<std::string, std::string>> Options) {
  static const LoadedPlugin Plugin = loadPlugin();
  if (!Plugin.ABI)
    return makeError("place{algo=" + Algo + "}: " + Plugin.Problem);
  SearchResult R;
  std::vector<std::pair<DiagLocation, std::string>> Errors;
  if (Plugin.ABI->Search(Algo.str().c_str(), T, S, Options.data(),
                         Options.size(), R, Errors))
    return std::move(R);
  Error All = Error::success();
  for (auto &[Loc, Message] : Errors)
    All = joinErrors(std::move(All),
                     make_error<LocatedError>(std::move(Loc), Message));
  if (!All)
    return makeError("place{algo=" + Algo + "}: failed without a message");
  return std::move(All);
}

void dp::writeCurveCSV(raw_ostream &OS, ArrayRef<CurvePoint> Curve) {
  OS << "samples,seconds,best_seconds,sample_seconds,flops,training_flops\n";
  for (const CurvePoint &P : Curve) {
    OS << P.Samples << ',';
    writeDouble(OS, P.Seconds);
    OS << ',';
    if (std::isfinite(P.BestSeconds))
      writeDouble(OS, P.BestSeconds);
    OS << ',';
    writeDouble(OS, P.SampleSeconds);
    for (double F : {P.Flops, P.TrainingFlops}) {
      OS << ',';
      if (F >= 0)
        writeDouble(OS, F);
    }
    OS << '\n';
  }
}
