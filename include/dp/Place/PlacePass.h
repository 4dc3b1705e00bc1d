//===- dp/Place/PlacePass.h - The place pass --------------------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// `place{algo=NAME,seconds=S,evals=N,<placer options>}` runs a placer of
/// lib/Place/Placers.def on the graph's units (dp/Place/Placer.h) and
/// records each op's device in its `device` annotation, with the graph
/// annotation `placer`; the search time is stored as a PlacementSearch
/// result in PassContext::Analyses (wall time stays out of the IR).
/// `curve=FILE` (dp-opt -curve=) writes a searching placer's curve as CSV.
/// The seed is dp-opt's -seed.
///
//===----------------------------------------------------------------------===//

#ifndef DP_PLACE_PLACEPASS_H
#define DP_PLACE_PLACEPASS_H

#include "dp/IR/PassManager.h"
#include "dp/Place/Placer.h"
#include "dp/Support/Options.h"

#include <string>
#include <utility>
#include <vector>

namespace dp {


class PlacePass {
public:
  explicit PlacePass(PlaceOptions Opts = {}) : Opts(std::move(Opts)) {}

  static llvm::StringRef name() { return "place"; }
  /// It sets the ops' devices only.
  static GraphChange changes() { return GraphChange::Devices; }
  llvm::Error run(Graph &G, PassContext &Ctx);
  void printPipeline(llvm::raw_ostream &OS) const;
  /// curve (dp-opt -curve=), when the pipeline does not give it.
  bool setDriverOption(llvm::StringRef Key, llvm::StringRef Value);

  /// algo=NAME, seconds=S, evals=N, curve=FILE and the placer's own
  /// options, bound to \p O.
  static OptionTable describeOptions(PlaceOptions &O);
  static llvm::Expected<PlaceOptions> parseOptions(OptionList Options) {
    return parsePassOptions<PlaceOptions>(Options, describeOptions);
  }

private:
  PlaceOptions Opts;
  /// CurveFile came from the driver (-curve=), not from the pipeline.
  bool CurveFromDriver = false;
};

} // namespace dp

#endif // DP_PLACE_PLACEPASS_H
