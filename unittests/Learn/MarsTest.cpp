//===- MarsTest.cpp - Mars on small problems with known optima ------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "DiagnosticsTestUtil.h"
#include "PolicySearch.h"
#include "SavedPolicy.h"
#include "dp/Learn/Placers.h"
#include "dp/Learn/Plugin.h"

#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

using namespace dp;

namespace {

/// A chain of units with given times on two devices; the step time is the
/// busier device's load plus a cost per dataflow edge cut. Its optimum is
/// found by trying every placement.
struct ChainProblem {
  std::vector<double> Times;
  double CutCost;

  double score(llvm::ArrayRef<uint32_t> P) const {
    double Load[2] = {0, 0};
    double Cut = 0;
    for (size_t I = 0; I != P.size(); ++I) {
      Load[P[I]] += Times[I];
      if (I && P[I] != P[I - 1])
        Cut += CutCost;
    }
    return std::max(Load[0], Load[1]) + Cut;
  }

  double optimum() const {
    double Best = std::numeric_limits<double>::infinity();
    std::vector<uint32_t> P(Times.size());
    for (uint64_t Bits = 0; Bits != (uint64_t(1) << Times.size()); ++Bits) {
      for (size_t I = 0; I != P.size(); ++I)
        P[I] = (Bits >> I) & 1;
      Best = std::min(Best, score(P));
    }
    return Best;
  }

  LearnTask task() const {
    LearnTask T;
    T.NumUnits = Times.size();
    T.NumDevices = 2;
    T.NumFeatures = 3;
    for (size_t I = 0; I != Times.size(); ++I) {
      T.Features.push_back(float(Times[I]));
      T.Features.push_back(float(I) / Times.size());
      T.Features.push_back(1);
      T.Order.push_back(I);
      T.OpType.push_back(0);
      if (I)
        T.Edges.push_back({uint32_t(I - 1), uint32_t(I), 1.0});
    }
    T.OpTypeNames = {"op"};
    T.Evaluate = [this](llvm::ArrayRef<uint32_t> P) {
      // Milliseconds-scale step times, as the simulator gives.
      return Evaluation{score(P) * 1e-3, false};
    };
    return T;
  }
};

const ChainProblem Chain12 = {{5, 1, 1, 4, 2, 1, 1, 3, 1, 2, 1, 2}, 1.5};

std::vector<std::pair<std::string, std::string>> smallMars() {
  return {{"hidden", "32"},
          {"gcn-hidden", "32"},
          {"segment", "4"},
          {"pretrain", "20"},
          {"lr", "0.001"}};
}

/// A reproducible budget: \p Samples samples from \p Seed on one thread.
SearchOptions seededBudget(uint64_t Seed, uint64_t Samples) {
  SearchOptions S;
  S.Seed = Seed;
  S.Samples = Samples;
  S.Threads = 1;
  return S;
}

/// Checks that two searches made the same placements, sample by sample.
void expectSameSearch(const SearchResult &A, const SearchResult &B) {
  EXPECT_EQ(A.Best, B.Best);
  ASSERT_EQ(A.Curve.size(), B.Curve.size());
  for (size_t I = 0; I != A.Curve.size(); ++I)
    EXPECT_EQ(A.Curve[I].SampleSeconds, B.Curve[I].SampleSeconds) << I;
}

TEST(MarsTest, PPOReachesTheOptimumOfASmallProblem) {
  // Two seeds of three at least reach the optimum, and every one learns:
  // the last policy's samples are better on average than the first,
  // uniformly random ones.
  unsigned Optimal = 0;
  for (uint64_t Seed : {1, 2, 3}) {
    LearnTask T = Chain12.task();
    llvm::Expected<SearchResult> R =
        searchMars(T, seededBudget(Seed, 600), smallMars());
    ASSERT_TRUE(bool(R)) << llvm::toString(R.takeError());
    EXPECT_EQ(R->Samples, 600u);
    Optimal +=
        std::abs(R->BestEval.StepSeconds - Chain12.optimum() * 1e-3) < 1e-9;
    auto Mean = [&](size_t Begin, size_t End) {
      double Sum = 0;
      for (size_t I = Begin; I != End; ++I)
        Sum += R->Curve[I].SampleSeconds;
      return Sum / (End - Begin);
    };
    EXPECT_LT(Mean(550, 600), 0.85 * Mean(0, 50)) << Seed;
  }
  EXPECT_GE(Optimal, 2u);
}

TEST(MarsTest, PretrainingCountsInTheTimeBudget) {
  // A billion DGI iterations would run for days: pre-training must stop
  // at half of seconds= and leave the rest to the search, whose curve
  // starts after the pre-training's time.
  LearnTask T = Chain12.task();
  SearchOptions S = seededBudget(1, 0);
  S.Seconds = 1;
  auto Opts = smallMars();
  for (auto &[Key, Value] : Opts)
    if (Key == "pretrain")
      Value = "1000000000";
  llvm::Expected<SearchResult> R = searchMars(T, S, Opts);
  ASSERT_TRUE(bool(R)) << llvm::toString(R.takeError());
  ASSERT_FALSE(R->Curve.empty());
  EXPECT_GE(R->Curve.front().Seconds, 0.5);
}

TEST(MarsTest, AFixedSeedGivesTheSamePlacement) {
  LearnTask T = Chain12.task();
  SearchOptions S = seededBudget(11, 60);
  llvm::Expected<SearchResult> A = searchMars(T, S, smallMars());
  llvm::Expected<SearchResult> B = searchMars(T, S, smallMars());
  ASSERT_TRUE(A && B);
  expectSameSearch(*A, *B);
}

TEST(MarsTest, RejectsBadOptions) {
  LearnTask T = Chain12.task();
  SearchOptions S;
  S.Samples = 1;
  auto Error = [&](std::vector<std::pair<std::string, std::string>> Opts) {
    return test::getOnlyError(searchMars(T, S, Opts));
  };
  EXPECT_EQ(Error({{"segment", "0"}}),
            "place{algo=mars}: segment must be a positive integer, not '0'");
  EXPECT_EQ(Error({{"lr", "-1"}}),
            "place{algo=mars}: lr must be a number in (0, 1.0], not '-1'");
  EXPECT_EQ(Error({{"attention", "dot"}}),
            "place{algo=mars}: attention must be before, after or self, not "
            "'dot'");
  EXPECT_EQ(Error({{"features", "all"}}),
            "place{algo=mars}: features must be paper or cost, not 'all'");
}

TEST(MarsTest, ThePapersFeaturesLeaveOutTheCostFeatures) {
  // The chain's last feature stands for a cost feature: a policy saved
  // with the paper's features reads two features per unit, and one saved
  // with the cost features three.
  LearnTask T = Chain12.task();
  T.NumCostFeatures = 1;
  test::TempPolicy Paper, Cost;
  SearchOptions S = seededBudget(1, 10);
  auto Train = [&](const char *Features, test::TempPolicy &File) {
    SearchOptions Save = S;
    Save.SaveFile = std::string(File.Path);
    std::vector<std::pair<std::string, std::string>> Opts = smallMars();
    Opts.emplace_back("features", Features);
    llvm::Expected<SearchResult> R = searchMars(T, Save, Opts);
    ASSERT_TRUE(bool(R)) << llvm::toString(R.takeError());
    test::writeSavedPolicy(*R, Save.SaveFile);
  };
  Train("paper", Paper);
  Train("cost", Cost);
  SearchOptions Load = S;
  Load.LoadFile = std::string(Cost.Path);
  llvm::Expected<SearchResult> R = searchMars(T, Load, smallMars());
  ASSERT_FALSE(bool(R));
  std::vector<test::Diag> Diags = test::collectErrors(R.takeError());
  ASSERT_EQ(Diags.size(), 1u);
  EXPECT_NE(Diags[0].Message.find("the policy was saved with features per "
                                  "unit = 3, and this run has 2"),
            std::string::npos)
      << Diags[0].Message;
  Load.LoadFile = std::string(Paper.Path);
  R = searchMars(T, Load, smallMars());
  EXPECT_TRUE(bool(R)) << llvm::toString(R.takeError());
}

TEST(MarsTest, RunsOnTheDeviceItIsGiven) {
  LearnTask T = Chain12.task();
  SearchOptions S = seededBudget(5, 40);
  auto With = [&](const char *Device) {
    std::vector<std::pair<std::string, std::string>> Opts = smallMars();
    Opts.emplace_back("device", Device);
    return searchMars(T, S, Opts);
  };
  llvm::Expected<SearchResult> Host = With("cpu");
  ASSERT_TRUE(bool(Host)) << llvm::toString(Host.takeError());
  llvm::Expected<SearchResult> Auto = With("auto");
  ASSERT_TRUE(bool(Auto)) << llvm::toString(Auto.takeError());
  llvm::Expected<SearchResult> CUDA = With("cuda");
  if (!CUDA) {
    // No CUDA here: device=cuda says why, and auto ran on the host, the
    // same run as device=cpu.
    std::vector<test::Diag> Diags = test::collectErrors(CUDA.takeError());
    ASSERT_EQ(Diags.size(), 1u);
    EXPECT_TRUE(
        Diags[0].Message == "place{algo=mars}: device=cuda, but this libtorch "
                            "was built without CUDA" ||
        Diags[0].Message ==
            "place{algo=mars}: device=cuda, but libtorch sees no CUDA device")
        << Diags[0].Message;
    expectSameSearch(*Auto, *Host);
    return;
  }
  // On a GPU (float rounding there may change which devices are drawn):
  // each run samples its whole budget and returns a placement of every
  // unit, scored as the problem scores it.
  for (const SearchResult *R : {&*Auto, &*CUDA}) {
    EXPECT_EQ(R->Samples, 40u);
    ASSERT_EQ(R->Best.size(), Chain12.Times.size());
    for (uint32_t D : R->Best)
      EXPECT_LT(D, 2u);
    EXPECT_EQ(R->BestEval.StepSeconds, Chain12.score(R->Best) * 1e-3);
  }
}

TEST(PolicySearchTest, BaselineFollowsMarsEquation7) {
  LearnTask T = Chain12.task();
  SearchOptions S;
  PolicySearch Search(T, S, "test", 10, /*Mu=*/0.5);
  // B1 = R1, so the first advantage is 0; then B2 = 0.5 R2 + 0.5 B1.
  EXPECT_EQ(Search.advantage(-2.0), 0.0);
  EXPECT_EQ(Search.advantage(-1.0), -1.0 - (-1.5));
}

TEST(PolicySearchTest, OutOfMemoryGetsTheFailingSignalAndLosesToAnyFit) {
  LearnTask T;
  T.NumUnits = 1;
  T.NumDevices = 2;
  T.Evaluate = [](llvm::ArrayRef<uint32_t> P) {
    return P[0] == 0 ? Evaluation{0.001, true} : Evaluation{0.5, false};
  };
  SearchOptions S;
  S.FailingSeconds = 100;
  PolicySearch Search(T, S, "test", 2);
  EXPECT_EQ(Search.evaluate({0}), -10.0);
  EXPECT_EQ(Search.lastStepSeconds(), 100.0);
  Search.evaluate({1});
  EXPECT_TRUE(Search.done());
  llvm::Expected<SearchResult> R = Search.finish();
  ASSERT_TRUE(bool(R));
  EXPECT_EQ(R->Best, std::vector<uint32_t>{1});
  EXPECT_FALSE(R->BestEval.OutOfMemory);
}

TEST(PolicySearchTest, ScoresAPlacementSampledBeforeFromMemory) {
  LearnTask T;
  T.NumUnits = 3;
  T.NumDevices = 2;
  unsigned Calls = 0;
  T.Evaluate = [&](llvm::ArrayRef<uint32_t> P) {
    ++Calls;
    return Evaluation{0.1 + P[0] + 2.0 * P[1] + 4.0 * P[2], false};
  };
  SearchOptions S;
  // Room for the placements of two samples: the third makes it forget.
  PolicySearch Search(T, S, "test", 100, 0.99,
                      2 * PolicySearch::memoEntryBytes(3));
  const std::vector<uint32_t> A = {0, 1, 0}, B = {1, 1, 0}, C = {0, 0, 1};
  double RA = Search.evaluate(A);
  EXPECT_EQ(Search.evaluate(A), RA);
  EXPECT_EQ(Search.lastStepSeconds(), 2.1);
  EXPECT_EQ(Calls, 1u);
  Search.evaluate(B);
  EXPECT_EQ(Search.evaluate(B), -std::sqrt(3.1));
  EXPECT_EQ(Calls, 2u);
  Search.evaluate(C);
  EXPECT_EQ(Calls, 3u);
  // A and B were forgotten when C came; C is kept.
  EXPECT_EQ(Search.evaluate(A), RA);
  EXPECT_EQ(Search.evaluate(C), -std::sqrt(4.1));
  EXPECT_EQ(Calls, 4u);
  llvm::Expected<SearchResult> R = Search.finish();
  ASSERT_TRUE(bool(R));
  EXPECT_EQ(R->Samples, 7u);
  EXPECT_EQ(R->Simulated, 4u);
  EXPECT_EQ(R->Best, A);
  ASSERT_EQ(R->Curve.size(), 7u);
  EXPECT_EQ(R->Curve[1].SampleSeconds, 2.1);
}

TEST(PolicySearchTest, WritesTheCurveAsCSV) {
  std::string Text;
  llvm::raw_string_ostream OS(Text);
  CurvePoint P;
  P.Samples = 1;
  P.Seconds = 0.5;
  P.BestSeconds = std::numeric_limits<double>::infinity();
  P.SampleSeconds = 100;
  CurvePoint Q = P;
  Q.Samples = 2;
  Q.BestSeconds = 0.25;
  Q.SampleSeconds = 0.25;
  Q.Flops = 2048;
  Q.TrainingFlops = 1024;
  writeCurveCSV(OS, {P, Q});
  EXPECT_EQ(OS.str(),
            "samples,seconds,best_seconds,sample_seconds,flops,training_flops\n"
            "1,0.5,,100.0,,\n"
            "2,0.5,0.25,0.25,2048.0,1024.0\n");
}

} // namespace
