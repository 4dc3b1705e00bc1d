//===- FlopCount.h - Counting the learned placers' arithmetic ---*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Counts the floating-point operations a learned placer's search does
/// (place{...,count-flops=true}), so that bench/placer_speed.py can put a
/// placer's speed next to what the core's matrix product allows.
///
/// Two sources add up. Every libtorch operator the placer calls, forward
/// or backward, is seen through ATen's RecordFunction callbacks and
/// counted from its inputs' shapes: a product of M x K by K x N as 2 M K N
/// (bias or accumulation added once per output), and an element-wise
/// operator of a listed kind (arithmetic, activations, softmax, the
/// optimizer's updates) as one per element of its largest input. Kernels
/// that do their own arithmetic (the fused loops of Recurrence.cpp and
/// PlacetoPolicy.cpp) add their count from their shapes and hide the
/// operators they call inside (FusedFlops). Operators outside the lists
/// (copies, indexing, reductions, sampling) count nothing, so the totals are
/// what the network's arithmetic needs at least, not every instruction retired.
///
/// Counting slows every operator call; timed runs leave it off.
///
//===----------------------------------------------------------------------===//

#ifndef DP_LIB_LEARN_FLOPCOUNT_H
#define DP_LIB_LEARN_FLOPCOUNT_H

#include <cstdint>

namespace dp {
namespace learn {

/// While one lives, operators are counted (process-wide). At most one at a
/// time.
class FlopCounter {
public:
  FlopCounter();
  ~FlopCounter();
  FlopCounter(const FlopCounter &) = delete;
  FlopCounter &operator=(const FlopCounter &) = delete;
  /// Floating-point operations counted since construction.
  double total() const;
  /// Of those, training's: what ran with gradients recorded, in a
  /// backward pass, or in a TrainingFlops scope (the optimizer's step).
  /// The rest is sampling: the placers draw placements without gradients.
  double training() const;

private:
  uint64_t Handle;
};

/// Whether a FlopCounter is counting.
bool isCountingFlops();
/// The living FlopCounter's count so far, and training's part of it; 0
/// when none.
double countedFlops();
double countedTrainingFlops();

/// While one lives, what this thread counts is training's, though no
/// gradient is recorded: the optimizer's step and gradient clipping.
class TrainingFlops {
public:
  TrainingFlops();
  ~TrainingFlops();
  TrainingFlops(const TrainingFlops &) = delete;
  TrainingFlops &operator=(const TrainingFlops &) = delete;
};

/// For a kernel that does its own arithmetic: adds \p Flops to the count
/// (when counting) and, while it lives, leaves the operators this thread
/// calls uncounted, as the kernel's count includes them.
class FusedFlops {
public:
  explicit FusedFlops(double Flops);
  ~FusedFlops();
  FusedFlops(const FusedFlops &) = delete;
  FusedFlops &operator=(const FusedFlops &) = delete;
};

} // namespace learn
} // namespace dp

#endif // DP_LIB_LEARN_FLOPCOUNT_H
