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

// Matrices of one shape share a primitive and its memory objects, which
// each product points at its own operands: interleaved products of two
// matrices with rows in different tensors each give their own result.
TEST(PackedProductTest, MatricesOfOneShapeDoNotMixTheirOperands) {
  torch::manual_seed(6);
  torch::Tensor A = torch::randn({16, 24}), B = torch::randn({16, 24});
  PackedMatrix PA(A, 5), PB(B, 5);
  std::vector<torch::Tensor> Xs, Ys;
  for (int I = 0; I != 4; ++I) {
    Xs.push_back(torch::randn({5, 16}));
    Ys.push_back(torch::zeros({5, 24}));
  }
  for (int I = 0; I != 4; ++I)
    (I % 2 ? PB : PA).multiply(Ys[I], Xs[I], /*Accumulate=*/false);
  for (int I = 0; I != 4; ++I)
    EXPECT_TRUE(
        torch::allclose(Ys[I], torch::mm(Xs[I], I % 2 ? B : A), 1e-4, 1e-5))
        << "product " << I;
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
