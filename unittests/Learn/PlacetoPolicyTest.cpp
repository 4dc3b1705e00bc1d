//===- PlacetoPolicyTest.cpp - Placeto's network, fused against operators ===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
//
// The fused network (PlacetoPolicy.h) must compute what the same network
// as libtorch operators computes, differentiated by autograd: the logits
// and every parameter's gradient, on a graph with units that have no
// parents or no children, with state counts that take the vector loops
// and their remainders.
//
//===----------------------------------------------------------------------===//

#include "PlacetoPolicy.h"
#include "FlopCount.h"

#include <torch/torch.h>

#include "gtest/gtest.h"

using namespace dp;
using namespace dp::learn;

namespace {

constexpr int64_t In = 6, Hidden = 5, Devices = 3;
/// Wide enough that, over 9 units and 11 states, the message passing's,
/// the pooling's and the classifier's products go to oneDNN's (PlacetoPolicy.cpp,
/// isWide()).
constexpr int64_t WideHidden = 128;

/// 9 units: 0 and 5 have no parents, 4 and 8 no children, 3 has three
/// parents, and 6 and 7 are reached both ways round.
LearnTask makeTask() {
  LearnTask T;
  T.NumUnits = 9;
  T.NumDevices = Devices;
  const std::pair<uint32_t, uint32_t> Edges[] = {{0, 1}, {0, 2}, {1, 3}, {2, 3},
                                                 {5, 3}, {3, 4}, {5, 6}, {6, 7},
                                                 {1, 7}, {7, 8}, {2, 8}};
  for (auto [From, To] : Edges)
    T.Edges.push_back({From, To, 1});
  return T;
}

struct Inputs {
  torch::Tensor X;       ///< [In, U, N]
  torch::Tensor Pools;   ///< [3, U, N]
  torch::Tensor Current; ///< [N]
};

Inputs makeInputs(int64_t U, int64_t N) {
  return {torch::randn({In, U, N}),
          torch::randint(0, 2, {3, U, N}).to(torch::kFloat),
          torch::randint(0, U, {N}, torch::kLong)};
}

/// The fused forward pass's logits for \p I, prepared into \p A.
torch::Tensor runFused(PlacetoPolicy &Net, const UnitGraph &G,
                       PlacetoActivations &A, const Inputs &I, bool Keep) {
  Net->prepare(A, I.X, I.Pools, I.Current, G);
  return Net->forward(A, G, Keep);
}

torch::Tensor runOperators(PlacetoPolicy &Net, const UnitGraph &G,
                           const Inputs &I) {
  return Net->forwardOperators(I.X.permute({1, 2, 0}).contiguous(), G,
                               I.Current,
                               I.Pools.permute({0, 2, 1}).contiguous());
}

/// States, hops, hidden width.
class PlacetoPolicyTest
    : public ::testing::TestWithParam<std::tuple<int64_t, int64_t, int64_t>> {
};

TEST_P(PlacetoPolicyTest, FusedPassesMatchTheOperators) {
  auto [States, Hops, Width] = GetParam();
  torch::manual_seed(States + 100 * Hops + 10000 * Width);
  LearnTask T = makeTask();
  UnitGraph G(T);
  PlacetoPolicy Net(In, Width, Devices, Hops);
  Inputs I = makeInputs(T.NumUnits, States);
  torch::Tensor Weights = torch::randn({States, Devices});

  // The operators, through autograd: a loss of the logits weighted.
  torch::Tensor Expected = runOperators(Net, G, I);
  (Expected * Weights).sum().backward();
  std::vector<torch::Tensor> ExpectedGrads;
  for (const torch::Tensor &P : Net->parameters()) {
    // Without hops, the message passing's layers have no gradient.
    ExpectedGrads.push_back(P.grad().defined() ? P.grad().clone()
                                               : torch::zeros_like(P));
    if (P.grad().defined())
      P.mutable_grad().zero_();
  }

  PlacetoActivations A;
  torch::Tensor Logits = runFused(Net, G, A, I, /*Keep=*/true);
  ASSERT_EQ(Logits.sizes(), Expected.sizes());
  EXPECT_TRUE(torch::allclose(Logits, Expected.detach(), 1e-4, 1e-5))
      << (Logits - Expected).abs().max().item<float>();
  Net->backward(A, Weights, G);
  std::vector<torch::Tensor> Params = Net->parameters();
  size_t Compared = 0;
  for (size_t K = 0; K != Params.size(); ++K) {
    torch::Tensor Got = Params[K].grad().defined()
                            ? Params[K].grad()
                            : torch::zeros_like(Params[K]);
    EXPECT_TRUE(torch::allclose(Got, ExpectedGrads[K], 1e-3, 1e-5))
        << "parameter " << K << ": "
        << (Got - ExpectedGrads[K]).abs().max().item<float>();
    Compared += ExpectedGrads[K].abs().sum().item<float>() > 0;
  }
  // Every parameter takes part (none's gradient is zero by accident), but
  // the message passing's four layers without hops.
  EXPECT_EQ(Compared, Params.size() - (Hops ? 0 : 8));

  // Drawing placements keeps only the last hop's buffers, to the same
  // logits.
  PlacetoActivations Drawing;
  EXPECT_TRUE(
      torch::equal(runFused(Net, G, Drawing, I, /*Keep=*/false), Logits));
}

// 1 and 2 states (scalar remainders only), 8 (one vector per unit), 11
// (both), 24 (an update's chunk: the products' 64-column tiles); no hop
// and one hop (the first hop's input is the unit's own embedding); and
// layers wide enough for oneDNN's product.
INSTANTIATE_TEST_SUITE_P(
    States, PlacetoPolicyTest,
    ::testing::Values(std::make_tuple(1, 3, Hidden),
                      std::make_tuple(2, 3, Hidden),
                      std::make_tuple(8, 3, Hidden),
                      std::make_tuple(11, 3, Hidden),
                      std::make_tuple(24, 3, Hidden),
                      std::make_tuple(8, 0, Hidden),
                      std::make_tuple(8, 1, Hidden),
                      std::make_tuple(11, 3, WideHidden),
                      std::make_tuple(11, 0, WideHidden)));

TEST(PlacetoPolicyCountTest, FusedCountIsTheOperatorsCount) {
  torch::manual_seed(1);
  LearnTask T = makeTask();
  UnitGraph G(T);
  PlacetoPolicy Net(In, Hidden, Devices, /*Hops=*/3);
  Inputs I = makeInputs(T.NumUnits, 8);
  torch::NoGradGuard NoGrad;
  FlopCounter C;
  runOperators(Net, G, I);
  double Operators = C.total();
  PlacetoActivations A;
  runFused(Net, G, A, I, /*Keep=*/false);
  double Fused = C.total() - Operators;
  EXPECT_EQ(Fused, Net->countForwardFlops(8, G));
  // The formula counts what libtorch's operators count, to within the
  // operators that count their bias apart.
  EXPECT_NEAR(Fused / Operators, 1.0, 0.02) << Fused << " " << Operators;
}

} // namespace
