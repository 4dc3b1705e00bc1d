//===- FusedAdamTest.cpp - Adam's step in one pass ------------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "FusedAdam.h"
#include "FlopCount.h"

#include <torch/torch.h>

#include "gtest/gtest.h"

using namespace dp::learn;

namespace {

/// Parameters of a few shapes, one without a gradient, stepped \p Steps
/// times with the same gradients by \p Opt.
std::vector<torch::Tensor> run(bool Fused, torch::optim::AdamOptions O,
                               int Steps) {
  torch::manual_seed(4);
  std::vector<torch::Tensor> Params = {
      torch::randn({7, 33}), torch::randn({130}), torch::randn({3, 4, 5}),
      torch::randn({6})};
  for (torch::Tensor &P : Params)
    P.requires_grad_();
  std::unique_ptr<torch::optim::Optimizer> Opt;
  if (Fused)
    Opt = std::make_unique<FusedAdam>(Params, O);
  else
    Opt = std::make_unique<torch::optim::Adam>(Params, O);
  for (int S = 0; S != Steps; ++S) {
    Opt->zero_grad();
    torch::Tensor Loss = torch::zeros({});
    for (size_t I = 0; I + 1 < Params.size(); ++I) // the last: no gradient
      Loss = Loss + (Params[I] * Params[I]).sum() * (S + 1) +
             (Params[I] * torch::randn(Params[I].sizes())).sum();
    Loss.backward();
    Opt->step();
  }
  std::vector<torch::Tensor> Out;
  for (torch::Tensor &P : Params)
    Out.push_back(P.detach().clone());
  return Out;
}

// The fused step against libtorch's Adam, at its defaults and at a large
// learning rate with other betas and epsilon: the same parameters after 25
// steps; and with weight decay, which the fused pass leaves to Adam's own
// step, exactly the same.
TEST(FusedAdamTest, StepsAsLibtorchsAdam) {
  for (auto O :
       {torch::optim::AdamOptions(3e-4),
        torch::optim::AdamOptions(0.05).betas({0.8, 0.99}).eps(1e-6)}) {
    std::vector<torch::Tensor> A = run(false, O, 25), B = run(true, O, 25);
    for (size_t I = 0; I != A.size(); ++I)
      EXPECT_TRUE(torch::allclose(A[I], B[I], 1e-5, 1e-6))
          << "parameter " << I << ": "
          << (A[I] - B[I]).abs().max().item<double>();
  }
  auto Decay = torch::optim::AdamOptions(1e-2).weight_decay(0.1);
  std::vector<torch::Tensor> A = run(false, Decay, 5), B = run(true, Decay, 5);
  for (size_t I = 0; I != A.size(); ++I)
    EXPECT_TRUE(torch::equal(A[I], B[I])) << "parameter " << I;
}

// The step counts the floating-point operations that libtorch's Adam's
// operators count.
TEST(FusedAdamTest, CountsWhatAdamsOperatorsCount) {
  double Counted[2];
  for (bool Fused : {false, true}) {
    torch::Tensor P = torch::randn({40, 25}, torch::requires_grad());
    std::unique_ptr<torch::optim::Optimizer> Opt;
    if (Fused)
      Opt = std::make_unique<FusedAdam>(std::vector<torch::Tensor>{P});
    else
      Opt = std::make_unique<torch::optim::Adam>(std::vector<torch::Tensor>{P});
    (P * P).sum().backward();
    FlopCounter Counter;
    Opt->step();
    Opt->step();
    Counted[Fused] = Counter.total();
  }
  EXPECT_GT(Counted[0], 0);
  EXPECT_EQ(Counted[0], Counted[1]);
}

} // namespace
