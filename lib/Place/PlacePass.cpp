//===- PlacePass.cpp - The place pass -------------------------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/Place/PlacePass.h"
#include "Placers.h"
#include "dp/IR/Annotations.h"
#include "dp/Learn/Plugin.h"
#include "dp/Sim/StepSimulation.h"
#include "dp/Support/Diagnostics.h"
#include "dp/Support/FileOutput.h"
#include "dp/Support/Format.h"

#include "llvm/ADT/StringExtras.h"

#include <chrono>
#include <cmath>

using namespace llvm;

namespace dp {

std::string getPlacerWho(StringRef Algo) {
  return ("place{algo=" + Algo + "}").str();
}

/// A placer whose options \p Describe declares.
static PlacerInfo makePlacerInfo(StringRef Name, PlacerFn Run,
                                 DescribePlacerFn Describe,
                                 StringRef Description, bool Searches) {
  PlacerOptionTable T = Describe(Name);
  return {Name,
          Run,
          Description,
          Searches,
          Describe,
          T.Table.getUsage(),
          T.Table.getDefaults(),
          T.Table.getRanges()};
}

ArrayRef<PlacerInfo> getPlacers() {
  static const PlacerInfo Placers[] = {
#define PLACER(NAME, FUNCTION, OPTIONS, DESCRIPTION)                           \
  makePlacerInfo(NAME, FUNCTION, OPTIONS, DESCRIPTION, false),
#define SEARCH_PLACER(NAME, FUNCTION, OPTIONS, DESCRIPTION)                    \
  makePlacerInfo(NAME, FUNCTION, OPTIONS, DESCRIPTION, true),
// The learned placers' defaults are their own (docs/placers/*.md).
#define LEARNED_PLACER(NAME, ID, PARAMS, DESCRIPTION)                          \
  PlacerInfo{NAME, place##ID, DESCRIPTION, true, nullptr, PARAMS, "", ""},
#include "Placers.def"
  };
  return Placers;
}

const PlacerInfo *lookupPlacer(StringRef Name) {
  for (const PlacerInfo &P : getPlacers())
    if (P.Name == Name)
      return &P;
  return nullptr;
}

/// The option names in a Params string such as "device=NAME,groups=N".
static SmallVector<StringRef, 4> getParamNames(StringRef Params) {
  SmallVector<StringRef, 4> Items, Names;
  Params.split(Items, ',', -1, /*KeepEmpty=*/false);
  for (StringRef Item : Items)
    Names.push_back(Item.split('=').first.trim());
  return Names;
}

/// Checks the placer options \p Extra for \p Placer: each is one it takes
/// (else \p T's error, which lists them), and their values are what its
/// table declares (a learned placer's plugin checks its own).
static Error checkPlacerOptions(const OptionTable &T, const PlacerInfo &Placer,
                                OptionList Extra) {
  SmallVector<StringRef, 4> Known = getParamNames(Placer.Params);
  for (const auto &KV : Extra) {
    if (is_contained(Known, KV.first))
      continue;
    std::string Unknown =
        "unknown option '" + KV.first + "' for algo=" + Placer.Name.str();
    if (Placer.Params.empty())
      return T.makeError(Unknown +
                         " (it takes none besides seconds= and evals=)");
    SmallVector<StringRef, 4> Params;
    StringRef(Placer.Params).split(Params, ',');
    std::vector<std::string> Expected{"algo=", "seconds=", "evals="};
    Expected.insert(Expected.end(), Params.begin(), Params.end());
    return T.makeError(Unknown + " (expected " + formatList(Expected) + ")");
  }
  if (!Placer.DescribeOptions)
    return Error::success();
  return Placer.DescribeOptions(Placer.Name).Table.parse(Extra);
}

Error PlacePass::run(Graph &G, PassContext &Ctx) {
  if (!Ctx.TheCluster)
    return makeError("place needs a cluster: pass -cluster=<preset|file>");
  const Cluster &C = *Ctx.TheCluster;
  const PlacerInfo *Placer = lookupPlacer(Opts.Algo);
  assert(Placer && "parseOptions accepts known placers only");
  auto Start = std::chrono::steady_clock::now();
  Expected<PlacementProblem> P = PlacementProblem::build(G, C);
  if (!P)
    return P.takeError();
  PlaceOptions Run = Opts;
  Run.Seed = Ctx.Seed;
  Run.Progress = Ctx.Progress;
  std::vector<CurvePoint> Curve;
  Run.Curve = &Curve;
  uint64_t Scored = 0;
  Run.Scored = &Scored;
  Expected<std::vector<uint32_t>> Units = Placer->Run(*P, Run);
  if (!Units)
    return Units.takeError();
  if (!Opts.CurveFile.empty()) {
    if (Curve.empty())
      return makeError(
          (CurveFromDriver ? "-curve=" : "place{curve=}: ") + Opts.CurveFile +
          ": place{algo=" + Opts.Algo +
          "} records no search curve (anneal and the learned placers do)");
    if (Error E = writeFileAtomically(
            Opts.CurveFile, [&](raw_ostream &OS) { writeCurveCSV(OS, Curve); }))
      return E;
  }
  assert(Units->size() == P->getNumUnits() && "a device per unit");
  std::vector<uint32_t> Placement = P->expand(*Units);
  // Only the pipeline placer knows of replicas; the others must have
  // kept to replica 0's devices.
  if (const Optional<PipelinePlan> &Plan = P->getSimGraph().getPlan())
    if (Error E = checkReplicaDevices(C, *Plan, Placement,
                                      "place{algo=" + Opts.Algo + "}: "))
      return E;
  // anneal counts what it scored; a learned placer's curve does.
  Ctx.Analyses.set(PlacementSearch{
      std::chrono::duration<double>(std::chrono::steady_clock::now() - Start)
          .count(),
      std::max<uint64_t>(Scored, Curve.empty() ? 0 : Curve.back().Samples)});
  for (OpId O = 0, E = G.getNumOps(); O != E; ++O)
    ann::set(G.getOp(O), ann::Device,
             StringRef(C.getDevices()[Placement[O]].Name));
  ann::set(G, ann::Placer, StringRef(Opts.Algo));
  return Error::success();
}

void PlacePass::printPipeline(raw_ostream &OS) const {
  OS << name() << "{algo=" << Opts.Algo;
  if (Opts.Seconds > 0) {
    OS << ",seconds=";
    writeDouble(OS, Opts.Seconds);
  }
  if (Opts.Evaluations)
    OS << ",evals=" << Opts.Evaluations;
  for (const auto &[Key, Value] : Opts.Extra)
    OS << ',' << Key << '=' << Value;
  if (!Opts.CurveFile.empty() && !CurveFromDriver)
    OS << ",curve=" << Opts.CurveFile;
  OS << '}';
}

bool PlacePass::setDriverOption(StringRef Key, StringRef Value) {
  if (Key != "curve")
    return false;
  // The pipeline's own option wins.
  if (Opts.CurveFile.empty()) {
    Opts.CurveFile = Value.str();
    CurveFromDriver = true;
  }
  return true;
}

OptionTable PlacePass::describeOptions(PlaceOptions &O) {
  OptionTable T(name().str());
  T.custom(
       "algo", "NAME",
       [&O](StringRef Value) -> Error {
         if (!lookupPlacer(Value)) {
           std::string Names;
           for (const PlacerInfo &P : getPlacers())
             Names += (Names.empty() ? "" : ", ") + P.Name.str();
           return makeError("unknown algo '" + Value +
                            "' (available: " + Names + ")");
         }
         O.Algo = Value.str();
         return Error::success();
       },
       [&O] { return std::vector<std::string>{O.Algo}; })
      .number("seconds", O.Seconds, "S", "a positive, finite number",
              isPositiveFinite)
      .integer("evals", O.Evaluations, uint64_t(1),
               std::numeric_limits<uint64_t>::max())
      .text("curve", O.CurveFile, "FILE")
      // The placer's own options, checked once the placer is known.
      .otherKeys("...",
                 [&O](StringRef Key, StringRef Value) {
                   O.Extra.emplace_back(Key.str(), Value.str());
                   return Error::success();
                 })
      .check([&O](const OptionTable &T) {
        return checkPlacerOptions(T, *lookupPlacer(O.Algo), O.Extra);
      });
  return T;
}

} // namespace dp
