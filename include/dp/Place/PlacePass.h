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
/// annotation `placer`; the search time goes to PassContext::SearchSeconds
/// (wall time stays out of the IR). The seed is dp-opt's -seed.
///
//===----------------------------------------------------------------------===//

#ifndef DP_PLACE_PLACEPASS_H
#define DP_PLACE_PLACEPASS_H

#include "dp/IR/PassManager.h"
#include "dp/Place/Placer.h"

#include <string>
#include <utility>
#include <vector>

namespace dp {


class PlacePass {
public:
  explicit PlacePass(PlaceOptions Opts = {}) : Opts(std::move(Opts)) {}

  static llvm::StringRef name() { return "place"; }
  llvm::Error run(Graph &G, PassContext &Ctx);
  void printPipeline(llvm::raw_ostream &OS) const;

  static llvm::Expected<PlaceOptions>
  parseOptions(llvm::ArrayRef<std::pair<std::string, std::string>> KVs);

private:
  PlaceOptions Opts;
};

} // namespace dp

#endif // DP_PLACE_PLACEPASS_H
