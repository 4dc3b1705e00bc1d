//===- Recurrence.h - The seq2seq decoder's LSTM loop, fused ----*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The decoder recurrence of the seq2seq placers (Modules.h) over one
/// segment, with its backward pass written out: an LSTM whose gate inputs
/// X_t are given, and, optionally, Bahdanau's additive attention queried by
/// the previous hidden state at every step,
///
///   q_t = W_q h_{t-1},  a_t = softmax_j(v . tanh(k_j + q_t)),
///   gates_t = X_t + W_hh h_{t-1} [+ a_t M]          (M: memory gates)
///
/// Through autograd this loop is ~25 operator nodes per step, each of a
/// few thousand floats: dispatch, allocation and the graph dominate, not
/// arithmetic (docs/placers/mars.md, "Speed"). Here a step is a handful of
/// products and in-place kernels into buffers allocated once per segment,
/// and the backward pass recomputes the attention's tanh instead of keeping
/// [T, B, Ls, H] of it. Host only; CUDA modules keep the operator form.
/// Only lib/Learn includes this header.
///
//===----------------------------------------------------------------------===//

#ifndef DP_LIB_LEARN_RECURRENCE_H
#define DP_LIB_LEARN_RECURRENCE_H

#include <torch/types.h>

#include <cstdint>
#include <memory>

namespace dp {
namespace learn {

struct PackedWeights;

/// What the recurrence reads besides its gate inputs: the recurrent
/// weights and, with attention, its keys and weights. B placements read
/// N = 1 (shared) or N = B sets of Ls keys.
struct RecurrenceWeights {
  torch::Tensor RecurrentT; ///< W_hh^T, [H, 4H]
  torch::Tensor QueryT;     ///< W_q^T, [H, H]; undefined: no attention
  torch::Tensor Score;      ///< v, [H]
  torch::Tensor Keys;       ///< [N, Ls, H]
  /// The keys' values as gate inputs, [N, Ls, 4H], added to the gates
  /// weighted by the attention (the "before" form); undefined when the
  /// attention only reports its weights (the "after" form).
  torch::Tensor MemoryGates;

  bool hasAttention() const { return QueryT.defined(); }
  /// Ls, the keys per set; 0 without attention.
  int64_t numKeys() const { return hasAttention() ? Keys.size(1) : 0; }
};

/// What runRecurrence() gives.
struct Recurrence {
  torch::Tensor H; ///< the hidden states, [T, B, H]
  torch::Tensor A; ///< the attention weights, [T, B, Ls]; empty without
  torch::Tensor C; ///< the last cell state, [B, H]
};
/// The recurrence from (\p H0, \p C0) ([B, H] each) over gate inputs
/// \p X [T, B, 4H]. Differentiable in every tensor argument.
Recurrence runRecurrence(const torch::Tensor &X, const torch::Tensor &H0,
                         const torch::Tensor &C0, const RecurrenceWeights &W);

/// The same recurrence one step at a time, without gradients (sampling:
/// each step's input depends on the device chosen at the step before).
class RecurrenceStepper {
public:
  RecurrenceStepper(const RecurrenceWeights &W, const torch::Tensor &H0,
                    const torch::Tensor &C0);
  /// Advances by one step with gate inputs \p X [B, 4H].
  void step(const torch::Tensor &X);
  /// The hidden state [B, H] after the last step.
  const torch::Tensor &hidden() const { return H; }
  /// The last step's attention weights [B, Ls].
  const torch::Tensor &attention() const { return A; }

private:
  RecurrenceWeights W;
  torch::Tensor H, C, G, TC, Q, A, NextH, NextC;
  double StepFlops; ///< countRecurrenceFlops()'s forward for these shapes
  /// The weights laid out for the step's products, once.
  std::shared_ptr<const PackedWeights> Packed;
};

/// Floating-point operations of one step for \p B placements (hidden
/// size \p H; with \p Ls attention keys, 0 for none; \p MemoryGates: the
/// weighted memory joins the gates), forward and backward (with the
/// recomputed tanh). Multiply-adds count two; a tanh, sigmoid or exp one.
struct RecurrenceFlops {
  double Forward = 0, Backward = 0;
};
RecurrenceFlops countRecurrenceFlops(int64_t B, int64_t H, int64_t Ls,
                                     bool MemoryGates);

} // namespace learn
} // namespace dp

#endif // DP_LIB_LEARN_RECURRENCE_H
