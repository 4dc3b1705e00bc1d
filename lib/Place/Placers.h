//===- Placers.h - The placer functions of Placers.def ----------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#ifndef DP_LIB_PLACE_PLACERS_H
#define DP_LIB_PLACE_PLACERS_H

#include "dp/Place/Placer.h"
#include "dp/Support/EnumNames.h"
#include "dp/Support/Options.h"

#include "llvm/ADT/SmallVector.h"

#include <memory>

namespace dp {

#define PLACER(NAME, FUNCTION, OPTIONS, DESCRIPTION)                           \
  llvm::Expected<std::vector<uint32_t>> FUNCTION(const PlacementProblem &P,    \
                                                 const PlaceOptions &Opts);    \
  PlacerOptionTable OPTIONS(llvm::StringRef Algo);
#define LEARNED_PLACER(NAME, ID, PARAMS, DESCRIPTION)                          \
  llvm::Expected<std::vector<uint32_t>> place##ID(const PlacementProblem &P,   \
                                                  const PlaceOptions &Opts);
#include "Placers.def"

/// Declares a placer's options on \p T, bound to the fields of \p O.
template <typename OptionsT>
using DeclarePlacerOptions = void (*)(OptionTable &T, OptionsT &O);

/// "place{algo=<Algo>}": how a placer's option errors start.
std::string getPlacerWho(llvm::StringRef Algo);

/// The table of the options \p Declare declares, bound to options it owns
/// (a placer's DescribePlacerFn returns it).
template <typename OptionsT>
PlacerOptionTable bindPlacerOptions(llvm::StringRef Algo,
                                    DeclarePlacerOptions<OptionsT> Declare) {
  auto O = std::make_shared<OptionsT>();
  PlacerOptionTable T{O, OptionTable(getPlacerWho(Algo))};
  Declare(T.Table, *O);
  return T;
}

/// The placer's own options of \p Opts (Opts.Extra, for Opts.Algo), read
/// by the table \p Declare declares: the defaults where not given.
template <typename OptionsT>
llvm::Expected<OptionsT>
parsePlacerOptions(const PlaceOptions &Opts,
                   DeclarePlacerOptions<OptionsT> Declare) {
  OptionsT O;
  OptionTable T(getPlacerWho(Opts.Algo));
  Declare(T, O);
  if (llvm::Error E = T.parse(Opts.Extra))
    return OptionError::toLocated(std::move(E));
  return std::move(O);
}

/// What a placer with options of its own runs once they are read: \p O,
/// from Opts.Extra; \p Opts for the options every placer takes.
template <typename OptionsT>
using PlaceWithOptionsFn = llvm::Expected<std::vector<uint32_t>> (*)(
    const PlacementProblem &P, const PlaceOptions &Opts, const OptionsT &O);

/// Runs \p Place with the options of \p Opts that \p Declare declares
/// (parsePlacerOptions's error where they do not parse).
template <typename OptionsT>
llvm::Expected<std::vector<uint32_t>>
runWithPlacerOptions(const PlacementProblem &P, const PlaceOptions &Opts,
                     DeclarePlacerOptions<OptionsT> Declare,
                     PlaceWithOptionsFn<OptionsT> Place) {
  llvm::Expected<OptionsT> O = parsePlacerOptions(Opts, Declare);
  if (!O)
    return O.takeError();
  return Place(P, Opts, *O);
}

/// Defines the FUNCTION and OPTIONS of a Placers.def record whose placer
/// \p PLACE (a PlaceWithOptionsFn) takes the options \p DECLARE declares:
/// OPTIONS is their table (bindPlacerOptions), and FUNCTION reads them
/// and runs PLACE with them (runWithPlacerOptions).
#define DP_DEFINE_PLACER(FUNCTION, OPTIONS, DECLARE, PLACE)                    \
  PlacerOptionTable OPTIONS(llvm::StringRef Algo) {                            \
    return bindPlacerOptions(Algo, DECLARE);                                   \
  }                                                                            \
  llvm::Expected<std::vector<uint32_t>> FUNCTION(const PlacementProblem &P,    \
                                                 const PlaceOptions &Opts) {   \
    return runWithPlacerOptions(P, Opts, DECLARE, PLACE);                      \
  }

/// The `devices=` option of the placers that take it: the GPUs (or, for
/// Baechi's placers, every device that is not a CPU), every device, or
/// (Baechi's) the GPUs with the CPUs for what fits on none of them.
enum class DeviceSetKind { Auto, GPUs, All };
/// devices=gpus|all (pipeline, metis, scotch).
constexpr EnumEntry<DeviceSetKind> ComputeDeviceSetNames[] = {
    {"gpus", DeviceSetKind::GPUs}, {"all", DeviceSetKind::All}};

/// \p P with its units merged into at most \p Groups groups by colocate's
/// merge rule (the cheapest group joins the neighbour it exchanges most
/// bytes with), and the group of each of \p P's units. \p Who names the
/// caller in errors.
llvm::Expected<std::pair<PlacementProblem, std::vector<uint32_t>>>
mergeUnits(const PlacementProblem &P, unsigned Groups, llvm::StringRef Who);

/// The placers that do not search (no budget): the baselines that seed
/// anneal and warm-start mip.
std::vector<const PlacerInfo *> getBaselinePlacers();

/// The fastest placement that fits among those of \p Seeds (the first on
/// ties), run with \p Opts's seed; searching seeds get the given budget.
struct BestSeed {
  std::vector<uint32_t> Placement; ///< empty: none fits
  double StepTime = 0;
  llvm::StringRef Placer;
  uint64_t Evaluations = 0; ///< the budget given to searching seeds
};
BestSeed runSeeds(const PlacementProblem &P,
                  llvm::ArrayRef<const PlacerInfo *> Seeds,
                  const PlaceOptions &Opts, double SearchSeconds,
                  uint64_t SearchEvaluations);

} // namespace dp

#endif // DP_LIB_PLACE_PLACERS_H
