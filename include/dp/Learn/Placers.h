//===- dp/Learn/Placers.h - The learned placers -----------------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Entry points of the learned placers, torch-free. Each takes the task,
/// the common search options and its own options as given in
/// place{...} (validated here, with errors that name the placer).
///
//===----------------------------------------------------------------------===//

#ifndef DP_LEARN_PLACERS_H
#define DP_LEARN_PLACERS_H

#include "dp/Learn/Search.h"

#include <string>
#include <utility>
#include <vector>

namespace dp {

using LearnOptions = llvm::ArrayRef<std::pair<std::string, std::string>>;

/// The search of each placer of dp/Learn/LearnedPlacers.def (which says
/// what each does and its options).
#define LEARNED_PLACER(NAME, ID, PARAMS, DESCRIPTION)                          \
  llvm::Expected<SearchResult> search##ID(                                     \
      const LearnTask &T, const SearchOptions &S, LearnOptions Opts);
#include "dp/Learn/LearnedPlacers.def"

/// Placeto's reward of a placement scored \p E (its appendix A.7): minus
/// the memory penalized run time, the step seconds plus \p MemoryPenalty
/// seconds per GB (10^9 bytes) that the device with the largest peak
/// memory utilization holds beyond its memory; minus \p FailingSeconds
/// for a placement that does not fit when \p E gives no memory figures.
double getPlacetoReward(const Evaluation &E, double MemoryPenalty,
                        double FailingSeconds);

/// Mars's encoder pre-training alone: a fresh GCN (3 layers of \p Hidden
/// units) trained with DGI for \p Iterations on \p T; the loss of every
/// iteration.
std::vector<double> pretrainGraphEncoder(const LearnTask &T,
                                         unsigned Iterations, unsigned Hidden,
                                         uint64_t Seed, unsigned Threads = 0);

} // namespace dp

#endif // DP_LEARN_PLACERS_H
