//===- PackedProduct.h - Products with a matrix laid out once ---*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The fused recurrence (Recurrence.h) multiplies a few rows (the
/// placements drawn together) by the same weight matrix at every step of a
/// segment. A BLAS call copies (packs) the whole matrix into its blocked
/// layout every time, which for ten rows costs about as much as the
/// multiplication; and a loop of our own over the plain layout reaches
/// half the core's rate. A PackedMatrix is laid out once, by oneDNN, in
/// the blocked form that oneDNN's matrix product reads for that many rows,
/// and each step's product reads it as it is (bench/README.md,
/// "dp-bench-learn", has the rates). Host float32 only. Only
/// Recurrence.cpp includes this header.
///
//===----------------------------------------------------------------------===//

#ifndef DP_LIB_LEARN_PACKEDPRODUCT_H
#define DP_LIB_LEARN_PACKEDPRODUCT_H

#include <torch/types.h>

#include <cstdint>
#include <memory>

namespace dp {
namespace learn {

/// A constant matrix W [K, N] (any strides), laid out for products with
/// \p Rows rows.
class PackedMatrix {
public:
  PackedMatrix() = default;
  PackedMatrix(const torch::Tensor &W, int64_t Rows);

  bool empty() const { return !P; }
  /// Y [Rows, N] = X [Rows, K] W, or += with \p Accumulate. X and Y are
  /// float32 host tensors whose rows are contiguous (any row stride).
  void multiply(const torch::Tensor &Y, const torch::Tensor &X,
                bool Accumulate) const;
  /// The same on raw rows, for a loop that keeps no tensors per step:
  /// Y's rows \p Ldy floats apart, X's \p Ldx; the caller vouches for the
  /// shapes (Rows rows of K and N floats).
  void multiply(float *Y, int64_t Ldy, const float *X, int64_t Ldx,
                bool Accumulate) const;

private:
  struct Impl;
  std::shared_ptr<const Impl> P;
};

} // namespace learn
} // namespace dp

#endif // DP_LIB_LEARN_PACKEDPRODUCT_H
