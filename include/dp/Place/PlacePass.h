//===- dp/Place/PlacePass.h - The place pass --------------------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// `place{algo=...}` chooses a device for every op and records it in the
/// op's `device` annotation, with the graph annotation `placer`; the search
/// time goes to PassContext::SearchSeconds. Placers:
///
///   single   every op on one device: the fastest device whose memory
///            holds the whole step (simulated); `device=NAME` forces one.
///
//===----------------------------------------------------------------------===//

#ifndef DP_PLACE_PLACEPASS_H
#define DP_PLACE_PLACEPASS_H

#include "dp/IR/PassManager.h"

#include <string>
#include <utility>
#include <vector>

namespace dp {

struct PlaceOptions {
  std::string Algo = "single";
  /// single: the device to use instead of choosing one.
  std::string Device;
};

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
