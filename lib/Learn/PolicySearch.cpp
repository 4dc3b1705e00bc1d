//===- PolicySearch.cpp - The search loop learned placers share -----------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "PolicySearch.h"
#include "FlopCount.h"
#include "dp/Support/Diagnostics.h"
#include "dp/Support/Format.h"

#include "llvm/ADT/Hashing.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <limits>

using namespace llvm;

namespace dp {

OptionTable makePlacerOptions(StringRef Placer) {
  return OptionTable(("place{algo=" + Placer + "}").str());
}

static bool isLearningRate(double X) { return X > 0 && X <= 1; }

OptionTable &addLearningRate(OptionTable &T, double &LearningRate) {
  return T.number("lr", LearningRate, "X", "a number in (0, 1.0]",
                  isLearningRate);
}

Error parsePlacerOptions(OptionTable &T, LearnOptionList Opts) {
  return OptionError::toLocated(T.parse(Opts));
}

PolicySearch::PolicySearch(const LearnTask &Task, const SearchOptions &Opts,
                           StringRef Name, uint64_t DefaultSamples, double Mu,
                           size_t MemoLimitBytes)
    : Task(Task), Opts(Opts), Name(Name.str()), Mu(Mu),
      Start(std::chrono::steady_clock::now()), MemoLimitBytes(MemoLimitBytes) {
  SampleBudget = Opts.Samples;
  if (!SampleBudget && !(Opts.Seconds > 0))
    SampleBudget = DefaultSamples;
  Result.BestEval.StepSeconds = std::numeric_limits<double>::infinity();
  Result.BestEval.OutOfMemory = true;
}

double PolicySearch::elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - Start)
      .count();
}

bool PolicySearch::done() const {
  if (SampleBudget && Result.Samples >= SampleBudget)
    return true;
  return Opts.Seconds > 0 && elapsed() >= Opts.Seconds;
}

uint64_t PolicySearch::samplesLeft() const {
  if (!SampleBudget)
    return std::numeric_limits<uint64_t>::max();
  return SampleBudget > Result.Samples ? SampleBudget - Result.Samples : 0;
}

/// Fitting placements beat ones that do not fit; then the faster one wins.
static bool isBetter(const Evaluation &A, const Evaluation &B) {
  if (A.OutOfMemory != B.OutOfMemory)
    return !A.OutOfMemory;
  return A.StepSeconds < B.StepSeconds;
}

Evaluation PolicySearch::score(ArrayRef<uint32_t> Placement) {
  uint64_t Hash = hash_combine_range(Placement.begin(), Placement.end());
  auto [It, New] = Memo.try_emplace(Hash);
  if (!New && ArrayRef<uint32_t>(It->second.Placement) == Placement)
    return It->second.Score;
  ++Result.Simulated;
  Evaluation E = Task.Evaluate(Placement);
  if (New) {
    size_t Bytes = memoEntryBytes(Placement.size());
    if (MemoBytes + Bytes > MemoLimitBytes) {
      Memo.clear();
      MemoBytes = 0;
      It = Memo.try_emplace(Hash).first;
    }
    It->second.Placement.assign(Placement.begin(), Placement.end());
    It->second.Score = E;
    MemoBytes += Bytes;
  }
  return E;
}

double PolicySearch::evaluate(ArrayRef<uint32_t> Placement) {
  return record(Placement, score(Placement));
}

double PolicySearch::record(ArrayRef<uint32_t> Placement, const Evaluation &E) {
  LastEval = E;
  ++Result.Samples;
  if (Result.Best.empty() || isBetter(E, Result.BestEval)) {
    Result.Best.assign(Placement.begin(), Placement.end());
    Result.BestEval = E;
  }
  LastSeconds = E.OutOfMemory ? Opts.FailingSeconds : E.StepSeconds;
  CurvePoint P;
  P.Samples = Result.Samples;
  P.Seconds = elapsed();
  P.BestSeconds = Result.BestEval.OutOfMemory
                      ? std::numeric_limits<double>::infinity()
                      : Result.BestEval.StepSeconds;
  P.SampleSeconds = LastSeconds;
  if (Opts.CountFlops) {
    P.Flops = learn::countedFlops();
    P.TrainingFlops = learn::countedTrainingFlops();
  }
  Result.Curve.push_back(P);
  printProgress(/*Final=*/false);
  return -std::sqrt(LastSeconds);
}

double PolicySearch::advantage(double Reward) {
  Baseline = HaveBaseline ? (1 - Mu) * Reward + Mu * Baseline : Reward;
  HaveBaseline = true;
  return Reward - Baseline;
}

static std::string formatStep(double Seconds, bool OOM) {
  if (OOM)
    return "none fits";
  return formatv("{0:f2} ms", Seconds * 1e3).str();
}

void PolicySearch::printProgress(bool Final) {
  if (!Opts.Progress)
    return;
  double Now = elapsed();
  // A line a second while searching, and the last one.
  if (!Final && LastPrinted >= 0 && Now - LastPrinted < 1.0)
    return;
  LastPrinted = Now;
  double Rate = Now > 0 ? Result.Samples / Now : 0;
  *Opts.Progress << formatv(
      "{0}: {1} samples ({2:f1}/s), best {3}, "
      "current {4}, {5:f1} s",
      Name, std::to_string(Result.Samples), Rate,
      formatStep(Result.BestEval.StepSeconds, Result.BestEval.OutOfMemory),
      formatStep(LastSeconds, false), Now);
  // The last line says how many placements were new to the simulator.
  if (Final)
    *Opts.Progress << ", " << Result.Simulated << " simulated";
  *Opts.Progress << '\n';
  Opts.Progress->flush();
}

Expected<SearchResult> PolicySearch::finish() {
  if (Result.Best.empty())
    return makeError("place{algo=" + Name +
                     "}: the budget ended before a "
                     "single placement was sampled");
  printProgress(/*Final=*/true);
  Result.Seconds = elapsed();
  return std::move(Result);
}

} // namespace dp
