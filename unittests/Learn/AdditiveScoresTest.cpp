//===- AdditiveScoresTest.cpp - The attention's v . tanh(k + q) -----------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "AdditiveScores.h"

#include <torch/torch.h>

#include <cmath>
#include <limits>

#include "gtest/gtest.h"

using namespace dp::learn;

namespace {

const ScoreKernel Kernels[] = {ScoreKernel::Best, ScoreKernel::Tanh,
                               ScoreKernel::Portable};

const char *name(ScoreKernel K) {
  switch (K) {
  case ScoreKernel::Best:
    return "best";
  case ScoreKernel::Tanh:
    return "tanh";
  case ScoreKernel::Portable:
    break;
  }
  return "portable";
}

// Each kernel's tanh against the C library's, one lane at a time (v picks
// the lane; every other lane's key is 0, whose tanh is 0; 19 lanes: a
// vector of 16 or two of 8, and a tail), over [-12, 12] in steps of 1/1024
// and at the points where the argument reduction changes: within 2.5e-7
// everywhere (the polynomial and the refined quotient are each within
// 2e-7).
TEST(AdditiveScoresTest, TheTanhIsWithinItsBound) {
  const int64_t H = 19;
  std::vector<float> Xs;
  for (int I = -12 * 1024; I <= 12 * 1024; ++I)
    Xs.push_back(I / 1024.0f);
  for (float X :
       {1e-30f, 1e-7f, 0.17328679f, 0.34657359f, 9.0f, 9.5f, 1e30f, -0.0f})
    Xs.insert(Xs.end(), {X, -X});
  int64_t Ls = Xs.size();
  std::vector<float> Q(H, 0.0f), S(Ls);
  for (ScoreKernel Kernel : Kernels) {
    for (int64_t Lane = 0; Lane != H; ++Lane) {
      std::vector<float> K(Ls * H, 0.0f), V(H, 0.0f);
      V[Lane] = 1;
      for (int64_t J = 0; J != Ls; ++J)
        K[J * H + Lane] = Xs[J];
      additiveScores(K.data(), Q.data(), V.data(), S.data(), 1, 1, Ls, H,
                     Kernel);
      for (int64_t J = 0; J != Ls; ++J)
        ASSERT_LE(std::fabs(S[J] - std::tanh(double(Xs[J]))), 2.5e-7)
            << name(Kernel) << ", lane " << Lane << ", x " << Xs[J];
    }
  }
  EXPECT_LE(std::fabs(tanhApprox(0.3f) - std::tanh(0.3)), 2e-7);
}

// tanh(k + q) for keys and queries across ScoreKeys::ExpRange and past it
// (where the best kernel takes the tanh loop: a query past it, or a key
// set with one key past it), against the C library's tanh of the exact
// sum: within 2.5e-7 wherever the sum is within [-12, 12], each kernel.
TEST(AdditiveScoresTest, KeysAndQueriesAcrossTheRange) {
  const int64_t H = 21, Lane = 17; // a tail lane of the second vector
  std::vector<float> Ks, Qs;
  for (int I = -100; I <= 100; ++I)
    Ks.push_back(I * 0.2003f);
  for (int I = -41; I <= 41; ++I)
    Qs.push_back(I * 0.4871f);
  Qs.insert(Qs.end(), {30.0f, -30.0f, 20.5f});
  for (bool KeyPastRange : {false, true}) {
    std::vector<float> Keys = Ks;
    if (KeyPastRange)
      Keys.push_back(25.0f);
    int64_t Ls = Keys.size(), B = Qs.size();
    std::vector<float> K(Ls * H, 0.0f), Q(B * H, 0.0f), V(H, 0.0f),
        S(B * Ls);
    V[Lane] = 1;
    for (int64_t J = 0; J != Ls; ++J)
      K[J * H + Lane] = Keys[J];
    for (int64_t I = 0; I != B; ++I)
      Q[I * H + Lane] = Qs[I];
    for (ScoreKernel Kernel : Kernels) {
      additiveScores(K.data(), Q.data(), V.data(), S.data(), B, 1, Ls, H,
                     Kernel);
      for (int64_t I = 0; I != B; ++I)
        for (int64_t J = 0; J != Ls; ++J) {
          double X = double(Keys[J]) + double(Qs[I]);
          if (std::fabs(X) > 12)
            continue;
          ASSERT_LE(std::fabs(S[I * Ls + J] - std::tanh(X)), 2.5e-7)
              << name(Kernel) << ", k " << Keys[J] << ", q " << Qs[I];
        }
    }
  }
}

// A NaN key or query gives a NaN score by every kernel, whichever loop
// takes it (the best kernel's range check may or may not see it).
TEST(AdditiveScoresTest, ANaNGivesANaNScore) {
  const int64_t H = 19, Ls = 6;
  const float NaN = std::numeric_limits<float>::quiet_NaN();
  for (int64_t Where = 0; Where != Ls; ++Where) {
    std::vector<float> K(Ls * H, 0.5f), Q(H, -0.25f), V(H, 1.0f), S(Ls);
    K[Where * H + 17] = NaN;
    for (ScoreKernel Kernel : Kernels) {
      additiveScores(K.data(), Q.data(), V.data(), S.data(), 1, 1, Ls, H,
                     Kernel);
      for (int64_t J = 0; J != Ls; ++J)
        EXPECT_EQ(std::isnan(S[J]), J == Where)
            << name(Kernel) << ", NaN key " << Where << ", score " << J;
    }
  }
  // NaNs of other payloads and signs: adding n to such a NaN's exponent
  // field, as the tanh's last step does, can make a number of it.
  for (uint32_t Bits : {0x7fc00001u, 0x7fc001ffu, 0x7fd5a5a5u, 0xffffffffu,
                        0x7f800001u}) {
    float X = __builtin_bit_cast(float, Bits);
    EXPECT_TRUE(std::isnan(tanhApprox(X))) << std::hex << Bits;
    std::vector<float> K(Ls * H, 0.5f), Q(H, 0.0f), V(H, 1.0f), S(Ls);
    K[2 * H + 5] = X;
    for (ScoreKernel Kernel : Kernels) {
      additiveScores(K.data(), Q.data(), V.data(), S.data(), 1, 1, Ls, H,
                     Kernel);
      for (int64_t J = 0; J != Ls; ++J)
        EXPECT_EQ(std::isnan(S[J]), J == 2)
            << name(Kernel) << ", NaN " << std::hex << Bits << std::dec
            << ", score " << J;
    }
  }
  std::vector<float> K(Ls * H, 0.5f), Q(H, -0.25f), V(H, 1.0f), S(Ls);
  Q[3] = NaN;
  for (ScoreKernel Kernel : Kernels) {
    additiveScores(K.data(), Q.data(), V.data(), S.data(), 1, 1, Ls, H,
                   Kernel);
    for (int64_t J = 0; J != Ls; ++J)
      EXPECT_TRUE(std::isnan(S[J])) << name(Kernel) << ", NaN query";
  }
}

// Scores and their gradients against libtorch's autograd through
// (tanh(k + q) v).sum(), for both kernels: shared and per-query keys,
// widths that are and are not multiples of 8, key counts that are and are
// not multiples of 4.
TEST(AdditiveScoresTest, ScoresAndGradientsAreLibtorchs) {
  torch::manual_seed(11);
  struct Shape {
    int64_t B, N, Ls, H;
  };
  for (Shape Sh : {Shape{1, 1, 1, 8}, Shape{3, 1, 5, 12}, Shape{3, 3, 9, 3},
                   Shape{4, 4, 16, 128}, Shape{2, 1, 7, 40}}) {
    auto [B, N, Ls, H] = Sh;
    torch::Tensor K = torch::randn({N, Ls, H}, torch::requires_grad());
    torch::Tensor Q = torch::randn({B, H}, torch::requires_grad());
    torch::Tensor V = torch::randn({H}, torch::requires_grad());
    torch::Tensor DS = torch::randn({B, Ls});
    torch::Tensor Ref = (torch::tanh(K + Q.unsqueeze(1)) * V).sum(-1);
    (Ref * DS).sum().backward();
    for (ScoreKernel Kernel : Kernels) {
      std::string What = std::string(name(Kernel)) + ", B " +
                         std::to_string(B) + ", N " + std::to_string(N) +
                         ", Ls " + std::to_string(Ls) + ", H " +
                         std::to_string(H);
      torch::Tensor Kd = K.detach().contiguous(), Qd = Q.detach().contiguous(),
                    Vd = V.detach().contiguous();
      torch::Tensor S = torch::empty({B, Ls});
      additiveScores(Kd.data_ptr<float>(), Qd.data_ptr<float>(),
                     Vd.data_ptr<float>(), S.data_ptr<float>(), B, N, Ls, H,
                     Kernel);
      EXPECT_TRUE(torch::allclose(S, Ref.detach(), 1e-5, 1e-5)) << What;
      // DV and DK accumulate onto what they hold; DQ is set.
      torch::Tensor DV = torch::full({H}, 0.5f),
                    DK = torch::full({N, Ls, H}, -1.0f);
      torch::Tensor DQ = torch::full({B, H}, 7.0f);
      additiveScoresBackward(Kd.data_ptr<float>(), Qd.data_ptr<float>(),
                             Vd.data_ptr<float>(), DS.data_ptr<float>(),
                             DV.data_ptr<float>(), DK.data_ptr<float>(),
                             DQ.data_ptr<float>(), B, N, Ls, H, Kernel);
      EXPECT_TRUE(torch::allclose(DV - 0.5f, V.grad(), 1e-4, 1e-5)) << What;
      EXPECT_TRUE(torch::allclose(DK + 1.0f, K.grad(), 1e-4, 1e-5)) << What;
      EXPECT_TRUE(torch::allclose(DQ, Q.grad(), 1e-4, 1e-5)) << What;
    }
  }
}

} // namespace
