//===- PolicySearch.h - The search loop learned placers share ---*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// PolicySearch is the part of every learned placer that is not a model:
/// it scores sampled placements, turns step times into rewards (-sqrt of
/// the step time, the failing signal for placements that do not fit),
/// keeps the exponential-moving-average baseline, the best placement, the
/// search curve and the budget, and prints the progress line. A placement
/// sampled again is scored from memory: a settling policy draws the same
/// placements over and over, and a placement's score never changes.
/// Torch-free.
///
//===----------------------------------------------------------------------===//

#ifndef DP_LIB_LEARN_POLICYSEARCH_H
#define DP_LIB_LEARN_POLICYSEARCH_H

#include "dp/Learn/Search.h"
#include "dp/Support/Options.h"

#include "llvm/ADT/StringRef.h"

#include <chrono>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace dp {

/// The placer-specific options of place{...}, in the order given.
using LearnOptionList = llvm::ArrayRef<std::pair<std::string, std::string>>;

/// An option table for the learned placer \p Placer: its errors start
/// "place{algo=<Placer>}: ".
OptionTable makePlacerOptions(llvm::StringRef Placer);
/// Declares lr=X, a learning rate in (0, 1].
OptionTable &addLearningRate(OptionTable &T, double &LearningRate);
/// Parses the placer's own options \p Opts with \p T.
llvm::Error parsePlacerOptions(OptionTable &T, LearnOptionList Opts);

class PolicySearch {
  /// A placement scored, kept with its score.
  struct Remembered {
    std::vector<uint32_t> Placement;
    Evaluation Score;
  };

public:
  /// The most bytes of placements kept with their scores by default.
  static constexpr size_t DefaultMemoBytes = size_t(256) << 20;
  /// The baseline's moving-average weight unless a placer gives its own.
  static constexpr double DefaultMu = 0.99;
  /// The bytes one kept placement of \p Units units counts for: its
  /// devices, its score and the hash table's node.
  static constexpr size_t memoEntryBytes(size_t Units) {
    return Units * sizeof(uint32_t) + sizeof(Remembered) + 32;
  }

  /// \p DefaultSamples applies when the options set neither a sample nor a
  /// time budget. \p Mu is the baseline's moving-average weight. The
  /// placements scored are kept with their scores until they exceed
  /// \p MemoLimitBytes, and then forgotten all at once.
  PolicySearch(const LearnTask &Task, const SearchOptions &Opts,
               llvm::StringRef Name, uint64_t DefaultSamples,
               double Mu = DefaultMu, size_t MemoLimitBytes = DefaultMemoBytes);

  /// True once the budget is spent.
  bool done() const;
  /// Samples still allowed by the sample budget (unbounded: UINT64_MAX).
  uint64_t samplesLeft() const;

  /// Scores \p Placement (from memory when it was scored before), records
  /// it (best, curve, progress) and returns its reward, -sqrt(step
  /// seconds), with the failing step time for a placement that does not
  /// fit.
  double evaluate(llvm::ArrayRef<uint32_t> Placement);
  /// The score of the last evaluated placement.
  const Evaluation &lastEvaluation() const { return LastEval; }
  /// The step time given to placements that do not fit.
  double getFailingSeconds() const { return Opts.FailingSeconds; }
  /// The step time (seconds, failing time when out of memory) of the last
  /// evaluated placement.
  double lastStepSeconds() const { return LastSeconds; }

  /// Updates the baseline with \p Reward and returns the advantage
  /// Reward - Baseline (Mars eq. 7: the first baseline is the first reward).
  double advantage(double Reward);

  uint64_t getSamples() const { return Result.Samples; }
  double elapsed() const;
  const SearchResult &getResult() const { return Result; }
  /// Prints the final progress line and returns the result, or an error
  /// when no placement was sampled.
  llvm::Expected<SearchResult> finish();

private:
  void printProgress(bool Final);
  /// Records \p Placement, scored \p E, as a sample (counted, on the curve
  /// and in the progress line) and returns its reward.
  double record(llvm::ArrayRef<uint32_t> Placement, const Evaluation &E);
  /// The score of \p Placement: remembered, or simulated and remembered.
  Evaluation score(llvm::ArrayRef<uint32_t> Placement);

  const LearnTask &Task;
  const SearchOptions &Opts;
  std::string Name;
  uint64_t SampleBudget;
  double Mu;
  double Baseline = 0;
  bool HaveBaseline = false;
  double LastSeconds = 0;
  Evaluation LastEval;
  double LastPrinted = -1;
  std::chrono::steady_clock::time_point Start;
  SearchResult Result;
  /// Scores by placement hash; a placement whose hash is taken by another
  /// is simulated and not kept.
  std::unordered_map<uint64_t, Remembered> Memo;
  size_t MemoBytes = 0, MemoLimitBytes;
};

} // namespace dp

#endif // DP_LIB_LEARN_POLICYSEARCH_H
