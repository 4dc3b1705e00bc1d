//===- PackedProductTest.cpp - Products with a matrix laid out once -------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "PackedProduct.h"

#include <torch/torch.h>

#include "gtest/gtest.h"

using namespace dp::learn;

namespace {

// The product against libtorch's, for the row counts and widths the
// recurrence uses (1 row: a placement's own memory; widths that are and are
// not multiples of oneDNN's blocks), a matrix given as a transposed view,
// rows of X and Y that are parts of wider tensors, and accumulation.
TEST(PackedProductTest, MultipliesAsLibtorchDoes) {
  torch::manual_seed(5);
  struct Shape {
    int64_t Rows, K, N;
  };
  for (Shape S : {Shape{1, 7, 33}, Shape{3, 40, 160}, Shape{10, 64, 256},
                  Shape{20, 128, 17}}) {
    for (bool Transposed : {false, true}) {
      torch::Tensor W =
          Transposed ? torch::randn({S.N, S.K}).t() : torch::randn({S.K, S.N});
      PackedMatrix P(W, S.Rows);
      ASSERT_FALSE(P.empty());
      // Every other row of a wider X; Y's rows within a wider tensor.
      torch::Tensor XWide = torch::randn({2 * S.Rows, S.K + 3});
      torch::Tensor X = XWide.slice(0, 0, 2 * S.Rows, 2).narrow(1, 0, S.K);
      torch::Tensor YWide = torch::randn({S.Rows, S.N + 5});
      torch::Tensor Y = YWide.narrow(1, 2, S.N);
      torch::Tensor Start = Y.clone(), Expected = torch::mm(X, W);
      torch::Tensor Around =
          torch::cat({YWide.narrow(1, 0, 2), YWide.narrow(1, 2 + S.N, 3)}, 1);
      std::string What = std::to_string(S.Rows) + " x " + std::to_string(S.K) +
                         " by " + std::to_string(S.N) +
                         (Transposed ? ", transposed" : "");
      P.multiply(Y, X, /*Accumulate=*/true);
      EXPECT_TRUE(torch::allclose(Y, Start + Expected, 1e-4, 1e-5)) << What;
      P.multiply(Y, X, /*Accumulate=*/false);
      EXPECT_TRUE(torch::allclose(Y, Expected, 1e-4, 1e-5)) << What;
      // The columns around Y are untouched.
      EXPECT_TRUE(torch::equal(
          Around,
          torch::cat({YWide.narrow(1, 0, 2), YWide.narrow(1, 2 + S.N, 3)}, 1)))
          << What;
    }
  }
}

TEST(PackedProductTest, RefusesAProductOfAnotherShape) {
  PackedMatrix P(torch::randn({4, 6}), 3);
  torch::Tensor Y = torch::zeros({3, 6});
  EXPECT_THROW(P.multiply(Y, torch::randn({2, 4}), false), c10::Error);
  EXPECT_THROW(P.multiply(Y, torch::randn({3, 5}), false), c10::Error);
  EXPECT_THROW(P.multiply(torch::zeros({3, 7}), torch::randn({3, 4}), false),
               c10::Error);
  EXPECT_THROW(P.multiply(Y, torch::randn({3, 4}, torch::kDouble), false),
               c10::Error);
  EXPECT_THROW(PackedMatrix(torch::randn({4}), 3), c10::Error);
}

} // namespace
