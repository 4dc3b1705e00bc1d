//===- FlopCountTest.cpp - Counting the learned placers' arithmetic -------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "FlopCount.h"
#include "Modules.h"
#include "Recurrence.h"

#include <torch/torch.h>

#include "gtest/gtest.h"
#include <random>

using namespace dp::learn;

namespace {

/// The count added by \p Fn.
template <typename F> double countOf(const FlopCounter &C, F Fn) {
  double Before = C.total();
  Fn();
  return C.total() - Before;
}

TEST(FlopCountTest, CountsProductsAndElementwiseOperatorsFromShapes) {
  torch::Tensor A = torch::randn({3, 4}), B = torch::randn({4, 5}),
                Bias = torch::randn({5}), X = torch::randn({2, 3, 4}),
                Y = torch::randn({2, 4, 6}), V = torch::randn({4});
  FlopCounter C;
  EXPECT_EQ(countOf(C, [&] { torch::mm(A, B); }), 2 * 3 * 4 * 5);
  EXPECT_EQ(countOf(C, [&] { torch::addmm(Bias, A, B); }), 3 * 5 * (8 + 1));
  EXPECT_EQ(countOf(C, [&] { torch::bmm(X, Y); }), 2 * 2 * 3 * 4 * 6);
  EXPECT_EQ(countOf(C, [&] { torch::mv(A, V); }), 2 * 3 * 4);
  // An operator counts once, not again for the operators it calls.
  EXPECT_EQ(countOf(C, [&] { torch::matmul(X, B); }), 2 * 2 * 3 * 4 * 5);
  // A sparse matrix multiplies its stored values only.
  torch::Tensor S = torch::sparse_coo_tensor(torch::tensor({{0, 2}, {1, 3}}),
                                             torch::ones({2}), {3, 4});
  EXPECT_EQ(countOf(C, [&] { torch::mm(S, B); }), 2 * 2 * 5);
  EXPECT_EQ(countOf(C, [&] { torch::tanh(A); }), 12);
  EXPECT_EQ(countOf(C, [&] { A.mul_(2); }), 12);
  EXPECT_EQ(countOf(C, [&] { torch::add(A, Bias.narrow(0, 0, 4)); }), 12);
  // Copies, indexing and creation are no arithmetic.
  EXPECT_EQ(countOf(C,
                    [&] {
                      A.clone();
                      A.t().contiguous();
                      torch::zeros({100});
                      A.index_select(0, torch::tensor({0, 2}));
                    }),
            0);
  // A kernel's own count stands for the operators inside it.
  EXPECT_EQ(countOf(C,
                    [&] {
                      FusedFlops F(7);
                      torch::mm(A, B);
                    }),
            7);
}

TEST(FlopCountTest, CountsOnlyWhileACounterLives) {
  torch::Tensor A = torch::randn({8, 8});
  EXPECT_FALSE(isCountingFlops());
  {
    FlopCounter C;
    EXPECT_TRUE(isCountingFlops());
    torch::mm(A, A);
    EXPECT_EQ(countedFlops(), 2 * 8 * 8 * 8);
  }
  EXPECT_FALSE(isCountingFlops());
  EXPECT_EQ(countedFlops(), 0);
  FusedFlops F(5); // not counting: adds nothing
  FlopCounter C;   // starts from zero
  EXPECT_EQ(C.total(), 0);
}

// Training is what records gradients, runs backward or steps the
// optimizer; the rest, drawing placements, runs without gradients.
TEST(FlopCountTest, SplitsTrainingFromDrawing) {
  torch::Tensor A = torch::randn({3, 4}, torch::requires_grad()),
                B = torch::randn({4, 5});
  FlopCounter C;
  {
    torch::NoGradGuard NoGrad;
    torch::mm(A, B);
  }
  EXPECT_EQ(C.total(), 120);
  EXPECT_EQ(C.training(), 0);
  torch::Tensor Y = torch::mm(A, B);
  EXPECT_EQ(C.training(), 120);
  double Before = C.training();
  Y.sum().backward(); // dA = dY B^T: 2 x 3 x 5 x 4
  EXPECT_EQ(C.training() - Before, 120);
  EXPECT_EQ(C.total(), C.training() + 120);
  {
    torch::NoGradGuard NoGrad;
    TrainingFlops Step;
    A.mul_(0.5);
  }
  EXPECT_EQ(C.training() - Before, 120 + 12);
  EXPECT_EQ(countedTrainingFlops(), C.training());
}

// The fused recurrence counts countRecurrenceFlops() per step, forward
// and backward, whatever operators it calls inside.
TEST(FlopCountTest, TheFusedRecurrenceCountsItsFormula) {
  const int64_t T = 5, B = 3, H = 8, Ls = 6;
  for (bool Memory : {false, true}) {
    torch::manual_seed(1);
    RecurrenceWeights W;
    W.RecurrentT = torch::randn({H, 4 * H}, torch::requires_grad());
    W.QueryT = torch::randn({H, H}, torch::requires_grad());
    W.Score = torch::randn({H}, torch::requires_grad());
    W.Keys = torch::randn({1, Ls, H}, torch::requires_grad());
    if (Memory)
      W.MemoryGates = torch::randn({1, Ls, 4 * H}, torch::requires_grad());
    torch::Tensor X = torch::randn({T, B, 4 * H}, torch::requires_grad());
    torch::Tensor H0 = torch::zeros({B, H}), C0 = torch::zeros({B, H});
    RecurrenceFlops Step = countRecurrenceFlops(B, H, Ls, Memory);
    FlopCounter C;
    Recurrence R;
    EXPECT_DOUBLE_EQ(countOf(C, [&] { R = runRecurrence(X, H0, C0, W); }),
                     std::round(T * Step.Forward));
    EXPECT_EQ(C.training(), C.total()); // gradients recorded
    torch::Tensor Loss = R.H.sum();
    double Sum = C.total();
    Loss.backward();
    EXPECT_DOUBLE_EQ(C.total() - Sum, std::round(T * Step.Backward));
    EXPECT_EQ(C.training(), C.total());
    RecurrenceStepper S(W, H0, C0);
    torch::NoGradGuard NoGrad;
    EXPECT_DOUBLE_EQ(countOf(C, [&] { S.step(X[0]); }),
                     std::round(Step.Forward));
    EXPECT_DOUBLE_EQ(countOf(C, [&] { runRecurrence(X, H0, C0, W); }),
                     std::round(T * Step.Forward));
    EXPECT_DOUBLE_EQ(C.total() - C.training(),
                     std::round(Step.Forward) + std::round(T * Step.Forward));
  }
}

// The fused network and its operator-per-step form (Modules.h) do the
// same arithmetic where the attention only reports its weights ("after")
// or attends over the encoder alone ("self"), so the fused loops' formula
// and the operators' shapes must count about the same: sampling, and the
// log-probabilities with their gradients. (With "before" the fused form
// multiplies the attention by the memory's gate inputs, precomputed once
// per segment, where the operator form multiplies it by the memory and
// then by the input weights at every step: fewer operations, so no match.)
TEST(FlopCountTest, TheFusedFormCountsAsItsOperatorsDo) {
  for (AttentionKind Kind : {AttentionKind::After, AttentionKind::Self}) {
    torch::manual_seed(3);
    SegmentSeq2Seq P(16, 64, 4, /*Segment=*/32, Kind);
    torch::Tensor Seq = torch::randn({64, 16});
    torch::Tensor Actions = torch::randint(0, 4, {5, 64}, torch::kLong);
    double Counts[2][3];
    for (bool Fused : {false, true}) {
      P->setFused(Fused);
      FlopCounter C;
      P->zero_grad();
      std::pair<torch::Tensor, torch::Tensor> Eval;
      Counts[Fused][0] =
          countOf(C, [&] { Eval = P->evaluate(P->encode(Seq), Actions); });
      Counts[Fused][1] = countOf(C, [&] { Eval.first.sum().backward(); });
      std::mt19937_64 Rng(9);
      torch::NoGradGuard NoGrad;
      Counts[Fused][2] =
          countOf(C, [&] { P->sample(P->encode(Seq), 20, Rng); });
    }
    for (int I = 0; I != 3; ++I) {
      EXPECT_GT(Counts[0][I], 1e6) << int(Kind) << " " << I;
      EXPECT_NEAR(Counts[1][I] / Counts[0][I], 1.0, 0.1)
          << "attention " << int(Kind) << ", pass " << I << ": fused "
          << Counts[1][I] << ", operators " << Counts[0][I];
    }
  }
}

} // namespace
