//===- EinsumTest.cpp - Einsum equations and their FLOPs ------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/Cost/OpCost.h"

#include "gtest/gtest.h"

using namespace llvm;
using namespace dp;

namespace {

EinsumEquation parse(StringRef Eq, unsigned N) {
  Expected<EinsumEquation> E = parseEinsumEquation(Eq, N);
  EXPECT_TRUE(bool(E)) << toString(E.takeError());
  return E ? *E : EinsumEquation();
}

double flops(StringRef Eq, std::vector<std::vector<int64_t>> Shapes) {
  std::vector<ArrayRef<int64_t>> Refs(Shapes.begin(), Shapes.end());
  Expected<double> F = countEinsumFlops(parse(Eq, Shapes.size()), Refs);
  EXPECT_TRUE(bool(F)) << toString(F.takeError());
  return F ? *F : -1;
}

std::string errorOf(StringRef Eq, std::vector<std::vector<int64_t>> Shapes) {
  Expected<EinsumEquation> E = parseEinsumEquation(Eq, Shapes.size());
  if (!E)
    return toString(E.takeError());
  std::vector<ArrayRef<int64_t>> Refs(Shapes.begin(), Shapes.end());
  Expected<double> F = countEinsumFlops(*E, Refs);
  if (!F)
    return toString(F.takeError());
  return "";
}

TEST(EinsumTest, ExplicitEquations) {
  EinsumEquation E = parse("bhqd, bhkd -> bhqk", 2);
  ASSERT_EQ(E.Inputs.size(), 2u);
  EXPECT_EQ(E.Inputs[0], "bhqd");
  EXPECT_EQ(E.Inputs[1], "bhkd");
  EXPECT_EQ(E.Output, "bhqk");
}

TEST(EinsumTest, ImplicitOutputIsSortedSingleLabels) {
  EXPECT_EQ(parse("ij,jk", 2).Output, "ik");
  EXPECT_EQ(parse("ba,ac", 2).Output, "bc");
  EXPECT_EQ(parse("ii", 1).Output, "");
  EXPECT_EQ(parse("...ij,...jk", 2).Output, ".ik");
}

TEST(EinsumTest, Ellipsis) {
  EinsumEquation E = parse("...ij,...jk->...ik", 2);
  EXPECT_EQ(E.Inputs[0], ".ij");
  EXPECT_EQ(E.Output, ".ik");
}

TEST(EinsumTest, Flops) {
  // Matrix product: a multiply and an add per point of i, j, k.
  EXPECT_EQ(flops("ij,jk->ik", {{64, 128}, {128, 256}}), 2.0 * 64 * 128 * 256);
  // Attention scores.
  EXPECT_EQ(flops("bhqd,bhkd->bhqk", {{2, 12, 128, 64}, {2, 12, 128, 64}}),
            2.0 * 2 * 12 * 128 * 128 * 64);
  // Elementwise product: one multiply, nothing summed.
  EXPECT_EQ(flops("ij,ij->ij", {{3, 4}, {3, 4}}), 12);
  // A sum over j: one add per element.
  EXPECT_EQ(flops("ij->i", {{3, 4}}), 12);
  // Transpose and diagonal: no arithmetic.
  EXPECT_EQ(flops("ij->ji", {{3, 4}}), 0);
  EXPECT_EQ(flops("ii->i", {{5, 5}}), 0);
  // Trace.
  EXPECT_EQ(flops("ii", {{5, 5}}), 5);
  // Three operands: two multiplies and an add per point.
  EXPECT_EQ(flops("ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 5}}), 3.0 * 120);
  // Broadcast ellipsis dimensions.
  EXPECT_EQ(flops("...ij,...jk->...ik", {{8, 2, 3}, {1, 3, 4}}),
            2.0 * 8 * 2 * 3 * 4);
  // An ellipsis missing from an explicit output is summed.
  EXPECT_EQ(flops("...i->i", {{6, 4}}), 24);
}

TEST(EinsumTest, Errors) {
  EXPECT_EQ(errorOf("ij,jk->ik", {{2, 3}}),
            "Einsum equation 'ij,jk->ik' has 2 input terms for 1 "
            "operands");
  EXPECT_EQ(errorOf("i1->i", {{2}}), "invalid Einsum term 'i1'");
  EXPECT_EQ(errorOf("ij->ii", {{2, 2}}), "Einsum output repeats 'i'");
  EXPECT_EQ(errorOf("ij->k", {{2, 2}}),
            "Einsum output label 'k' is in no input");
  EXPECT_EQ(errorOf("ij,jk->ik", {{2, 3}, {4, 5}}),
            "Einsum label 'j' has sizes 3 and 4");
  EXPECT_EQ(errorOf("ijk->i", {{2, 3}}),
            "Einsum term 'ijk' does not match rank 2");
  EXPECT_EQ(errorOf("...i,...i->...i", {{2, 3}, {4, 3}}),
            "Einsum ellipsis dimensions do not broadcast");
}

} // namespace
