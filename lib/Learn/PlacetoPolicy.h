//===- PlacetoPolicy.h - Placeto's graph network, fused ---------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Placeto's policy network (Addanki et al., NeurIPS 2019, section 2.2 and
/// appendix A.7): per-unit features, two-way message passing over the
/// unit graph, three pooled summaries and the current unit's embedding, a
/// two-layer classifier over the devices.
///
/// Its layers are a few units wide (the feature width, 9 on p100x4), so
/// as libtorch operators the network is hundreds of calls per state, each
/// on a few thousand floats, and a run waits on dispatch, allocation and
/// sparse-product set-up rather than arithmetic (bench/README.md, "Whole
/// placer runs"). The fused form runs the same network, forward and
/// backward written out, as loops over [channels, units x states] buffers
/// whose inner dimension is long and contiguous. The operator form is kept
/// (forwardOperators) as the reference the unit tests compare it with.
/// Only lib/Learn and its tests include this header.
///
//===----------------------------------------------------------------------===//

#ifndef DP_LIB_LEARN_PLACETOPOLICY_H
#define DP_LIB_LEARN_PLACETOPOLICY_H

#include "dp/Learn/Search.h"

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>

#include <cstdint>
#include <vector>

namespace dp {
namespace learn {

/// The paper's aggregation g(sum_u f(x_u)) with single-layer f and g (its
/// appendix A.7), ReLU after each.
class AggregatorImpl : public torch::nn::Module {
public:
  explicit AggregatorImpl(int64_t Width)
      : F(register_module("f", torch::nn::Linear(Width, Width))),
        G(register_module("g", torch::nn::Linear(Width, Width))) {}
  torch::nn::Linear F, G;
};
TORCH_MODULE(Aggregator);

/// What the policy needs of the unit graph, built once per task.
struct UnitGraph {
  unsigned NumUnits = 0;
  /// Each unit's parents and children, compressed rows: unit V's are
  /// Parents[ParentBegin[V], ParentBegin[V + 1]). An edge given twice
  /// counts twice.
  std::vector<uint32_t> ParentBegin, Parents, ChildBegin, Children;
  /// Sparse [U, U] for the operator form: row v sums the messages of v's
  /// parents (Down) or of its children (Up).
  torch::Tensor Down, Up;
  /// [U, 1, 1]: 1 where the unit has parents (children). Units without
  /// any keep their own embedding, as in the authors' code.
  torch::Tensor HasParents, HasChildren;
  /// Reachability bit sets, Words 64-bit words per unit.
  std::vector<uint64_t> Ancestors, Descendants;
  size_t Words = 0;

  explicit UnitGraph(const LearnTask &T);
  /// The pooling masks of unit \p V: its ancestors, its descendants and
  /// the units that are neither (not V itself), as 0/1 rows of [3, U].
  void getPools(uint32_t V, float *Rows) const;
};

/// What the fused forward pass keeps for its backward pass.
///
/// A buffer over the units holds one row per channel of U x N states
/// (unit-major), rows Stride floats apart (padded); one over the states
/// alone is [channels, N].
struct PlacetoActivations {
  int64_t States = 0, Stride = 0;
  /// Whether the last forward pass kept every hop (backward() needs it).
  bool Kept = false;
  std::vector<float> Input; ///< [In, U x N]
  std::vector<float> Pools; ///< [3, U, N]
  std::vector<int64_t> Current;
  /// Per direction, [U x N]: 1 where the unit has parents (children).
  std::vector<float> Has[2];
  std::vector<float> Self; ///< [H, U x N]
  /// Per direction (down, up) and hop k: the hop's input X_k (k >= 1;
  /// X_0 is Self), the messages relu(f(X_k)), their sums over the
  /// neighbours, and relu(g(sums)); each [H, U x N], hop-major.
  std::vector<float> Hops[2], Messages[2], Sums[2], Gated[2];
  std::vector<float> Emb;       ///< [2H, U x N]
  std::vector<float> Pooled[3]; ///< relu(f(Emb)) of each summary, [2H, U x N]
  std::vector<float> PoolSums;  ///< [3, 2H, N]
  std::vector<float> Head;      ///< the classifier's input, [8H, N]
  std::vector<float> Hidden;    ///< its hidden layer, [8H, N]
};

/// Placeto's policy. Its parameters (and so saved policies) are the same
/// in both forms.
class PlacetoPolicyImpl : public torch::nn::Module {
public:
  PlacetoPolicyImpl(int64_t In, int64_t Hidden, int64_t Devices, int64_t Hops);

  /// Sizes \p A's inputs for \p N states, which the caller then fills:
  /// Input [In, U, N] their unit features, Pools [3, U, N] the pooling
  /// masks of the unit each decides, Current [N] that unit.
  void prepare(PlacetoActivations &A, int64_t N, const UnitGraph &G) const;
  /// prepare(), then fills \p A from tensors: \p X [In, U, N], \p Pools
  /// [3, U, N], \p Current [N] (for tests and benchmarks).
  void prepare(PlacetoActivations &A, const torch::Tensor &X,
               const torch::Tensor &Pools, const torch::Tensor &Current,
               const UnitGraph &G) const;

  /// The device logits [N, D] of the states \p A was prepared for, keeping
  /// in \p A what the backward pass needs (without \p Keep, \p A holds
  /// only the last hop's buffers, and backward() cannot follow).
  torch::Tensor forward(PlacetoActivations &A, const UnitGraph &G,
                        bool Keep = true);

  /// Adds to the parameters' gradients those of a loss whose gradient
  /// with respect to the logits of the forward pass that kept \p A is
  /// \p DLogits [N, D].
  void backward(const PlacetoActivations &A, const torch::Tensor &DLogits,
                const UnitGraph &G);

  /// The same network as libtorch operators, differentiable by autograd:
  /// \p X [U, N, In], \p Current [N], \p Pools [3, N, U].
  torch::Tensor forwardOperators(const torch::Tensor &X, const UnitGraph &G,
                                 const torch::Tensor &Current,
                                 const torch::Tensor &Pools);

  /// The floating-point operations of the fused forward and backward
  /// passes over \p N states, counted as FlopCount.h counts operators.
  double countForwardFlops(int64_t N, const UnitGraph &G) const;
  double countBackwardFlops(int64_t N, const UnitGraph &G) const;

private:
  torch::Tensor propagate(const torch::Tensor &Self, const torch::Tensor &A,
                          const torch::Tensor &Has, Aggregator &Agg);

  int64_t In, Width, Devices, Hops;
  /// backward()'s buffers, kept from one call to the next.
  std::vector<float> Scratch[6];
  torch::nn::Linear NodeTransform{nullptr};
  Aggregator Down{nullptr}, Up{nullptr};
  Aggregator Parents{nullptr}, Children{nullptr}, Parallel{nullptr};
  torch::nn::Linear Classifier{nullptr}, Output{nullptr};
};
TORCH_MODULE(PlacetoPolicy);

} // namespace learn
} // namespace dp

#endif // DP_LIB_LEARN_PLACETOPOLICY_H
