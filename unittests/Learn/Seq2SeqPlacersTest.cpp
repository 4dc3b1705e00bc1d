//===- Seq2SeqPlacersTest.cpp - ColocRL, Hierarchical Planner, EAGLE ------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "BruteForceStep.h"
#include "DiagnosticsTestUtil.h"
#include "Grouper.h"
#include "SavedPolicy.h"
#include "dp/Learn/Placers.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>

using namespace dp;

namespace {

using OptionList = std::vector<std::pair<std::string, std::string>>;

/// Two chains of units on two GPUs and a three times slower CPU. The step
/// is the busiest device's load plus CutCost per edge between devices.
/// The optimum (every placement tried) puts one chain on each GPU.
struct TwoChains {
  std::vector<double> Times = {2, 1, 1, 2, 1, 1, 2, 1};
  unsigned ChainLength = 4;
  unsigned Devices = 3;
  double CutCost = 1;

  double time(unsigned U, unsigned D) const {
    return D == 2 ? 3 * Times[U] : Times[U];
  }
  double score(llvm::ArrayRef<uint32_t> P) const {
    std::vector<double> Load(Devices, 0);
    double Cut = 0;
    for (unsigned U = 0; U != P.size(); ++U) {
      Load[P[U]] += time(U, P[U]);
      if (U % ChainLength && P[U] != P[U - 1])
        Cut += CutCost;
    }
    return *std::max_element(Load.begin(), Load.end()) + Cut;
  }
  double optimum() const {
    double Best = std::numeric_limits<double>::infinity();
    test::forEachPlacement(unsigned(Times.size()), Devices,
                           [&](llvm::ArrayRef<uint32_t> P) {
                             Best = std::min(Best, score(P));
                           });
    return Best;
  }

  LearnTask task() const {
    LearnTask T;
    T.NumUnits = Times.size();
    T.NumDevices = Devices;
    T.NumFeatures = 3;
    T.OpTypeNames = {"small", "large"};
    for (unsigned U = 0; U != T.NumUnits; ++U) {
      T.Features.push_back(float(Times[U] / 2));
      T.Features.push_back(float(U / ChainLength));
      T.Features.push_back(float(U % ChainLength) / ChainLength);
      T.OpType.push_back(Times[U] > 1);
      T.Order.push_back(U);
      if (U % ChainLength)
        T.Edges.push_back({U - 1, U, 1.0});
    }
    T.Evaluate = [this](llvm::ArrayRef<uint32_t> P) {
      // Milliseconds, as the simulator gives.
      return Evaluation{score(P) * 1e-3, false};
    };
    return T;
  }
};

const TwoChains Problem;

SearchOptions budget(uint64_t Seed, uint64_t Samples) {
  SearchOptions S;
  S.Seed = Seed;
  S.Samples = Samples;
  S.Threads = 1;
  return S;
}

using SearchFn = llvm::Expected<SearchResult> (*)(const LearnTask &,
                                                  const SearchOptions &,
                                                  LearnOptions);

/// The placers with test-sized networks. ColocRL keeps the paper's
/// learning rate; the tiny networks of the others learn faster at another.
struct Placer {
  const char *Name;
  SearchFn Search;
  OptionList Options;
};

const Placer ColocRL = {"colocrl", searchColocRL, {{"hidden", "16"}}};
const Placer Hierarchical = {"hierarchical",
                             searchHierarchical,
                             {{"hidden", "16"},
                              {"grouper-hidden", "16"},
                              {"groups", "4"},
                              {"lr", "0.01"}}};
const Placer EAGLE = {"eagle",
                      searchEAGLE,
                      {{"hidden", "16"},
                       {"grouper-hidden", "16"},
                       {"groups", "4"},
                       {"lr", "0.03"}}};

/// \p Opts with \p Key set to \p Value (an option is given once).
OptionList with(OptionList Opts, std::string Key, std::string Value) {
  for (auto &[K, V] : Opts)
    if (K == Key) {
      V = std::move(Value);
      return Opts;
    }
  Opts.emplace_back(std::move(Key), std::move(Value));
  return Opts;
}

double mean(const SearchResult &R, size_t Begin, size_t End) {
  double Sum = 0;
  for (size_t I = Begin; I != End; ++I)
    Sum += R.Curve[I].SampleSeconds;
  return Sum / double(End - Begin);
}

/// Searches \p P on Problem from seeds \p Seed, Seed + 1 and Seed + 2, and
/// expects the optimum within \p Samples from two of them at least and the
/// last placements sampled to be faster than the first, on average over
/// the three (uniformly random ones take 15 ms on average, the optimum
/// 6 ms).
void expectLearnsTheOptimum(const Placer &P, const OptionList &Opts,
                            uint64_t Seed, uint64_t Samples) {
  unsigned Optimal = 0;
  double Ratio = 0;
  for (uint64_t S = Seed; S != Seed + 3; ++S) {
    LearnTask T = Problem.task();
    llvm::Expected<SearchResult> R = P.Search(T, budget(S, Samples), Opts);
    ASSERT_TRUE(bool(R)) << llvm::toString(R.takeError());
    EXPECT_EQ(R->Samples, Samples);
    Optimal +=
        std::abs(R->BestEval.StepSeconds - Problem.optimum() * 1e-3) < 1e-12;
    Ratio += mean(*R, Samples - 40, Samples) / mean(*R, 0, 40) / 3;
  }
  EXPECT_GE(Optimal, 2u);
  EXPECT_LT(Ratio, 0.8);
}

TEST(Seq2SeqPlacersTest, TheProblemsOptimumIsOneChainPerGPU) {
  EXPECT_EQ(Problem.optimum(), 6.0);
  EXPECT_EQ(Problem.score({0, 0, 0, 0, 1, 1, 1, 1}), 6.0);
  EXPECT_EQ(Problem.score({0, 0, 0, 0, 0, 0, 0, 0}), 11.0);
}

TEST(Seq2SeqPlacersTest, ColocRLLearnsTheOptimum) {
  // At its paper's learning rate and squashed logits, ColocRL learns more
  // slowly than the others: after 300 (500) samples its last samples
  // averaged 0.81 (0.80) of its first over these seeds.
  expectLearnsTheOptimum(ColocRL, ColocRL.Options, 1, 800);
}

TEST(Seq2SeqPlacersTest, HierarchicalLearnsTheOptimum) {
  expectLearnsTheOptimum(Hierarchical, Hierarchical.Options, 1, 300);
}

TEST(Seq2SeqPlacersTest, EAGLEWithPPOLearnsTheOptimum) {
  expectLearnsTheOptimum(EAGLE, EAGLE.Options, 1, 300);
}

TEST(Seq2SeqPlacersTest, EAGLEWithPPOAndCrossEntropyLearnsTheOptimum) {
  expectLearnsTheOptimum(EAGLE, with(EAGLE.Options, "train", "ppo-ce"), 1, 300);
}

TEST(Seq2SeqPlacersTest, AFixedSeedGivesTheSameSearch) {
  LearnTask T = Problem.task();
  for (const Placer &P : {ColocRL, Hierarchical, EAGLE}) {
    llvm::Expected<SearchResult> A = P.Search(T, budget(7, 60), P.Options);
    llvm::Expected<SearchResult> B = P.Search(T, budget(7, 60), P.Options);
    ASSERT_TRUE(A && B) << P.Name;
    EXPECT_EQ(A->Best, B->Best) << P.Name;
    ASSERT_EQ(A->Curve.size(), B->Curve.size()) << P.Name;
    for (size_t I = 0; I != A->Curve.size(); ++I)
      EXPECT_EQ(A->Curve[I].SampleSeconds, B->Curve[I].SampleSeconds)
          << P.Name << ' ' << I;
  }
}

/// A policy file removed at the end of the test.
struct PolicyFile {
  llvm::SmallString<128> Path;
  std::unique_ptr<llvm::FileRemover> Remover;
  explicit PolicyFile(const char *Placer) {
    EXPECT_FALSE(llvm::sys::fs::createTemporaryFile(Placer, "pt", Path));
    Remover = std::make_unique<llvm::FileRemover>(Path);
  }
};

TEST(Seq2SeqPlacersTest, ASavedPolicyPlacesZeroShotAndFineTunes) {
  LearnTask T = Problem.task();
  for (const Placer &P : {ColocRL, Hierarchical, EAGLE}) {
    PolicyFile File(P.Name);
    SearchOptions S = budget(2, 300);
    S.SaveFile = std::string(File.Path);
    llvm::Expected<SearchResult> Trained = P.Search(T, S, P.Options);
    ASSERT_TRUE(bool(Trained)) << llvm::toString(Trained.takeError());
    test::writeSavedPolicy(*Trained, File.Path);

    // The trained policy's likeliest placement, then nine samples.
    SearchOptions Z = budget(2, 0);
    Z.LoadFile = std::string(File.Path);
    llvm::Expected<SearchResult> Zero = P.Search(T, Z, P.Options);
    ASSERT_TRUE(bool(Zero)) << llvm::toString(Zero.takeError());
    EXPECT_EQ(Zero->Samples, 10u) << P.Name;
    EXPECT_LT(mean(*Zero, 0, 10), mean(*Trained, 0, 40)) << P.Name;

    SearchOptions F = Z;
    F.FinetuneSamples = 20;
    llvm::Expected<SearchResult> Tuned = P.Search(T, F, P.Options);
    ASSERT_TRUE(bool(Tuned)) << llvm::toString(Tuned.takeError());
    EXPECT_EQ(Tuned->Samples, 20u) << P.Name;
  }
}

TEST(Seq2SeqPlacersTest, ALoadedPolicyMustMatchTheTask) {
  LearnTask T = Problem.task();
  TwoChains Longer;
  Longer.Times.push_back(1);
  LearnTask Other = Longer.task();
  struct Case {
    Placer P;
    OptionList LoadOptions;
    const char *Message;
  };
  for (const Case &C :
       {Case{ColocRL, ColocRL.Options, "units = 8, and this run has 9"},
        Case{Hierarchical, with(Hierarchical.Options, "groups", "5"),
             "groups = 4, and this run has 5"}}) {
    PolicyFile File(C.P.Name);
    SearchOptions S = budget(1, 4);
    S.SaveFile = std::string(File.Path);
    llvm::Expected<SearchResult> Trained = C.P.Search(T, S, C.P.Options);
    ASSERT_TRUE(bool(Trained)) << llvm::toString(Trained.takeError());
    test::writeSavedPolicy(*Trained, File.Path);
    SearchOptions L = budget(1, 0);
    L.LoadFile = std::string(File.Path);
    llvm::Expected<SearchResult> R = C.P.Search(Other, L, C.LoadOptions);
    ASSERT_FALSE(bool(R));
    std::vector<test::Diag> Diags = test::collectErrors(R.takeError());
    ASSERT_EQ(Diags.size(), 1u);
    EXPECT_EQ(Diags[0].Message, "place{algo=" + std::string(C.P.Name) +
                                    "}: load=" + std::string(File.Path) +
                                    ": the policy was saved with " + C.Message);
  }
}

TEST(Seq2SeqPlacersTest, RejectsBadOptions) {
  LearnTask T = Problem.task();
  auto Error = [&](SearchFn Search, OptionList Opts) {
    return test::getOnlyError(Search(T, budget(0, 1), Opts));
  };
  EXPECT_EQ(Error(searchColocRL, {{"hidden", "0"}}),
            "place{algo=colocrl}: hidden must be a positive integer, not '0'");
  EXPECT_EQ(Error(searchHierarchical, {{"groups", "2000"}}),
            "place{algo=hierarchical}: groups must be at most 1024, not "
            "2000");
  EXPECT_EQ(Error(searchHierarchical, {{"grouper-hidden", "x"}}),
            "place{algo=hierarchical}: grouper-hidden must be a positive "
            "integer, not 'x'");
  EXPECT_EQ(Error(searchEAGLE, {{"lr", "0"}}),
            "place{algo=eagle}: lr must be a number in (0, 1.0], not '0'");
  EXPECT_EQ(Error(searchEAGLE, {{"train", "ce"}}),
            "place{algo=eagle}: train must be ppo or ppo-ce, not 'ce'");
}

TEST(GrouperTest, GroupEmbeddingsCountEdgesTypesAndFeatures) {
  LearnTask T = Problem.task();
  learn::GroupEmbedder Embedder(T, 3);
  // 2 x 3 adjacency columns, 2 op types, 3 features.
  ASSERT_EQ(Embedder.getWidth(), 11);
  // Chain 0 in group 0, chain 1 in group 2 but for its last unit (1).
  torch::Tensor G = torch::tensor(std::vector<int64_t>{0, 0, 0, 0, 2, 2, 2, 1});
  torch::Tensor E = Embedder.embed(G);
  // Group 0: 3 edges to itself and 3 from itself; types 2 small, 2 large;
  // feature sums 3 (times / 2), 0 (chain), 1.5 (positions). The largest
  // entry is 3, so the row is divided by 4.
  std::vector<float> Row0 = {3, 0, 0, 3, 0, 0, 2, 2, 3, 0, 1.5};
  for (int64_t K = 0; K != 11; ++K)
    EXPECT_FLOAT_EQ(E[0][K].item<float>(), Row0[K] / 4) << K;
  // Group 1 (unit 7): one edge in from group 2, a small op at position 3.
  std::vector<float> Row1 = {0, 0, 0, 0, 0, 1, 1, 0, 0.5, 1, 0.75};
  for (int64_t K = 0; K != 11; ++K)
    EXPECT_FLOAT_EQ(E[1][K].item<float>(), Row1[K] / 2) << K;
}

/// The norm of the gradients \p M's parameters hold.
double gradientNorm(torch::nn::Module &M) {
  double Sum = 0;
  for (const torch::Tensor &P : M.parameters())
    if (P.grad().defined())
      Sum += P.grad().square().sum().item<double>();
  return std::sqrt(Sum);
}

TEST(GrouperTest, EAGLEsExtraRNNCarriesThePlacersGradientToTheGrouper) {
  LearnTask T = Problem.task();
  torch::Tensor G =
      torch::tensor(std::vector<int64_t>{0, 0, 1, 1, 2, 2, 3, 3}).unsqueeze(0);
  torch::Tensor Devices =
      torch::tensor(std::vector<int64_t>{0, 1, 2, 0}).unsqueeze(0);
  auto GrouperGradient = [&](int64_t LinkHidden) {
    torch::manual_seed(0);
    learn::GroupPlacerOptions O;
    O.Groups = 4;
    O.GrouperHidden = 8;
    O.Hidden = 8;
    learn::GroupPlacer P(T, O, LinkHidden);
    P->Placer->evaluate(P->encode(G, P->link()), Devices)
        .first.sum()
        .backward();
    return gradientNorm(*P->TheGrouper);
  };
  // The Hierarchical Planner's grouper learns only from its own
  // log-probabilities; EAGLE's also from the placer's.
  EXPECT_EQ(GrouperGradient(0), 0.0);
  EXPECT_GT(GrouperGradient(8), 0.0);
}

constexpr learn::AttentionKind AllAttentions[] = {learn::AttentionKind::Before,
                                                  learn::AttentionKind::After,
                                                  learn::AttentionKind::Self};

TEST(Seq2SeqTest, ABatchOfSequencesEncodesEachAsAlone) {
  for (learn::AttentionKind Kind : AllAttentions) {
    torch::manual_seed(0);
    learn::SegmentSeq2Seq P(3, 8, 3, /*Segment=*/3, Kind);
    torch::Tensor Seqs = torch::randn({7, 2, 3});
    torch::Tensor Actions =
        torch::tensor(std::vector<int64_t>{0, 1, 2, 0, 1, 2, 0, //
                                           2, 2, 1, 0, 0, 1, 2})
            .view({2, 7});
    torch::Tensor Both = P->evaluate(P->encode(Seqs), Actions).first;
    for (int64_t B = 0; B != 2; ++B) {
      torch::Tensor Alone =
          P->evaluate(P->encode(Seqs.select(1, B)), Actions.slice(0, B, B + 1))
              .first;
      EXPECT_TRUE(torch::allclose(Both[B], Alone[0], 1e-5, 1e-6))
          << B << " attention " << int(Kind);
    }
  }
}

// The log-probabilities of sampled actions, as sample() gives them and as
// evaluate() recomputes them.
TEST(Seq2SeqTest, SampleAndEvaluateAgreeForEveryAttention) {
  for (learn::AttentionKind Kind : AllAttentions) {
    torch::manual_seed(1);
    learn::SegmentSeq2Seq P(4, 8, 3, /*Segment=*/4, Kind);
    torch::Tensor Seq = torch::randn({10, 4});
    std::mt19937_64 Rng(5);
    auto [Actions, Logp] = P->sample(P->encode(Seq), 3, Rng);
    torch::Tensor Again = P->evaluate(P->encode(Seq), Actions).first;
    EXPECT_TRUE(torch::allclose(Logp, Again, 1e-4, 1e-5))
        << "attention " << int(Kind);
  }
}

// The fused recurrence (Recurrence.h) against the operator-per-step form:
// the same log-probabilities, entropies and gradients of every parameter,
// for every attention, one shared sequence or a batch of them, over
// several segments; and the same samples from the same generator. The
// sizes cover oneDNN's layouts of the weights for 3, 6 and 10 rows
// (PackedProduct.h), with widths that are and are not multiples of its
// blocks (hidden 8: 32 gate columns; hidden 40: 160 gate columns, 40 query
// columns).
TEST(Seq2SeqTest, TheFusedRecurrenceComputesTheOperatorForm) {
  struct Size {
    int64_t Hidden, Batch;
  };
  for (Size Sz : {Size{8, 3}, Size{40, 6}, Size{8, 10}}) {
    for (learn::AttentionKind Kind : AllAttentions) {
      for (bool Batched : {false, true}) {
        torch::manual_seed(3);
        int64_t B = Sz.Batch;
        learn::SegmentSeq2Seq P(4, Sz.Hidden, 3, /*Segment=*/4, Kind);
        torch::Tensor Seq =
            Batched ? torch::randn({10, B, 4}) : torch::randn({10, 4});
        torch::Tensor Actions = torch::randint(0, 3, {B, 10}, torch::kLong);
        auto Run = [&](bool Fused) {
          P->setFused(Fused);
          P->zero_grad();
          auto [Logp, Entropy] = P->evaluate(P->encode(Seq), Actions);
          (Logp * torch::linspace(-1, 2, B * 10).view({B, 10}))
              .sum()
              .backward();
          std::vector<torch::Tensor> Grads;
          for (const torch::Tensor &W : P->parameters())
            Grads.push_back(W.grad().clone());
          std::mt19937_64 Rng(9);
          torch::Tensor Drawn = P->sample(P->encode(Seq), B, Rng).first;
          return std::make_tuple(Logp.detach(), Entropy.detach(), Grads, Drawn);
        };
        auto [Logp0, Ent0, Grads0, Drawn0] = Run(false);
        auto [Logp1, Ent1, Grads1, Drawn1] = Run(true);
        std::string What = "hidden " + std::to_string(Sz.Hidden) + ", batch " +
                           std::to_string(B) + ", attention " +
                           std::to_string(int(Kind)) +
                           (Batched ? ", batched" : ", shared");
        EXPECT_TRUE(torch::allclose(Logp0, Logp1, 1e-5, 1e-6)) << What;
        EXPECT_TRUE(torch::allclose(Ent0, Ent1, 1e-5, 1e-6)) << What;
        EXPECT_TRUE(torch::equal(Drawn0, Drawn1)) << What;
        ASSERT_EQ(Grads0.size(), Grads1.size());
        for (size_t I = 0; I != Grads0.size(); ++I) {
          EXPECT_GT(Grads0[I].abs().max().item<double>(), 0)
              << What << " " << I;
          EXPECT_TRUE(torch::allclose(Grads0[I], Grads1[I], 1e-4, 1e-6))
              << What << ", parameter " << I << ": "
              << (Grads0[I] - Grads1[I]).abs().max().item<double>();
        }
      }
    }
  }
}

TEST(Seq2SeqTest, DecoderAttentionIsQueriedByTheDecoderState) {
  // Before and After: Bahdanau's additive attention, whose query is a
  // decoder state (H wide) and whose score is v . tanh(...); Self: the
  // encodings (2H wide) query each other.
  const int64_t H = 8;
  for (learn::AttentionKind Kind : AllAttentions) {
    learn::SegmentSeq2Seq P(3, H, 3, 0, Kind);
    std::map<std::string, std::vector<int64_t>> Shapes;
    for (const auto &Item : P->named_parameters())
      Shapes[Item.key()] = Item.value().sizes().vec();
    bool Decoder = Kind != learn::AttentionKind::Self;
    EXPECT_EQ(Shapes["query.weight"],
              (std::vector<int64_t>{H, Decoder ? H : 2 * H}));
    EXPECT_EQ(Shapes.count("score.weight"), size_t(Decoder));
    EXPECT_EQ(Shapes.count("context_gates.weight"),
              size_t(Kind == learn::AttentionKind::Before));
    EXPECT_EQ(Shapes.count("combine.weight"),
              size_t(Kind == learn::AttentionKind::After));
  }
}

TEST(GrouperTest, SquashedLogitsBoundTheDecodersProbabilities) {
  torch::manual_seed(0);
  learn::SegmentSeq2Seq P(3, 8, 3, 0);
  P->setLogitSquash(/*Temperature=*/10, /*TanhConstant=*/0.5);
  torch::Tensor Seq = torch::randn({8, 3}) * 100;
  torch::Tensor Actions =
      torch::tensor(std::vector<int64_t>{0, 1, 2, 0, 1, 2, 0, 1}).unsqueeze(0);
  torch::Tensor Logp = P->evaluate(P->encode(Seq), Actions).first;
  // Logits in [-0.5, 0.5]: a device is at worst 0.5 below two at 0.5.
  double Floor = -0.5 - std::log(std::exp(-0.5) + 2 * std::exp(0.5));
  EXPECT_GE(Logp.min().item<double>(), Floor - 1e-6);
}

} // namespace
