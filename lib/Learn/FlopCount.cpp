//===- FlopCount.cpp - Counting the learned placers' arithmetic -----------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "FlopCount.h"

#include <ATen/record_function.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <atomic>
#include <string_view>

namespace dp {
namespace learn {

namespace {

std::atomic<uint64_t> Count{0}, TrainingCount{0};
std::atomic<bool> Counting{false};
/// Counted operators and fused kernels running on this thread: what they
/// call is part of their count (mv calls addmv, a fused loop calls mm).
thread_local int CountedDepth = 0;
/// Autograd nodes (a backward pass) and TrainingFlops scopes running on
/// this thread.
thread_local int TrainingDepth = 0;

/// What onStart() started: a counted operator, whose end uncovers the
/// operators after it, or a backward node.
struct Started : at::ObserverContext {
  explicit Started(bool Backward) : Backward(Backward) {}
  bool Backward;
};

void add(double Flops) {
  if (Flops <= 0)
    return;
  uint64_t N = uint64_t(Flops + 0.5);
  Count.fetch_add(N, std::memory_order_relaxed);
  if (TrainingDepth || c10::GradMode::is_enabled())
    TrainingCount.fetch_add(N, std::memory_order_relaxed);
}

/// The tensor input \p I, or an undefined tensor.
at::Tensor tensorOf(const at::RecordFunction &Fn, size_t I) {
  c10::ArrayRef<const c10::IValue> In = Fn.inputs();
  if (I >= In.size() || !In[I].isTensor())
    return {};
  return In[I].toTensor();
}

/// 2 M K N for a product of the inputs \p A [.., M, K] and \p B [.., K, N]
/// (B a vector: N = 1), times the batch of A's leading sizes; plus the
/// outputs once more with \p AddOutput. A sparse A (the GCN's and
/// Placeto's adjacency) multiplies only its stored values: 2 nnz N.
double countProduct(const at::RecordFunction &Fn, size_t A, size_t B,
                    bool AddOutput) {
  at::Tensor X = tensorOf(Fn, A), Y = tensorOf(Fn, B);
  if (!X.defined() || !Y.defined() || X.dim() == 0 || Y.dim() == 0)
    return 0;
  double K = double(X.size(-1)), N = Y.dim() == 1 ? 1.0 : double(Y.size(-1));
  double Rows = 1; // every size of A but the last: batch x M
  for (int64_t I = 0; I + 1 < X.dim(); ++I)
    Rows *= double(X.size(I));
  double Products = X.is_sparse()   ? double(X._nnz()) * N
                    : Y.is_sparse() ? double(Y._nnz()) * Rows
                                    : Rows * K * N;
  return 2 * Products + (AddOutput ? Rows * N : 0);
}

/// One per element (stored element, if sparse) of the largest tensor
/// input.
double countElementwise(const at::RecordFunction &Fn) {
  double Most = 0;
  for (const c10::IValue &V : Fn.inputs())
    if (V.isTensor()) {
      const at::Tensor &T = V.toTensor();
      Most = std::max(Most, double(T.is_sparse() ? T._nnz() : T.numel()));
    }
  return Most;
}

/// The element-wise operators counted: arithmetic, activations and their
/// derivatives, softmax, and what the optimizers' updates call. Without
/// the "aten::" prefix and a trailing "_" (the in-place forms).
constexpr std::string_view Elementwise[] = {
    "add",
    "sub",
    "rsub",
    "mul",
    "div",
    "neg",
    "reciprocal",
    "exp",
    "log",
    "sqrt",
    "rsqrt",
    "pow",
    "tanh",
    "sigmoid",
    "relu",
    "elu",
    "leaky_relu",
    "clamp",
    "clamp_min",
    "clamp_max",
    "maximum",
    "minimum",
    "addcmul",
    "addcdiv",
    "lerp",
    "tanh_backward",
    "sigmoid_backward",
    "threshold_backward",
    "elu_backward",
    "leaky_relu_backward",
    "_softmax",
    "_log_softmax",
    "_softmax_backward_data",
    "_log_softmax_backward_data",
};

/// The count of the operator \p Fn, or a negative number for one not
/// counted.
double countOperator(const at::RecordFunction &Fn) {
  std::string_view Name = Fn.name();
  if (Name.substr(0, 6) != "aten::")
    return -1;
  Name.remove_prefix(6);
  if (Name.size() > 1 && Name.back() == '_')
    Name.remove_suffix(1);
  if (Name == "mm" || Name == "bmm" || Name == "mv" || Name == "dot")
    return countProduct(Fn, 0, 1, false);
  if (Name == "addmm" || Name == "baddbmm" || Name == "addmv")
    return countProduct(Fn, 1, 2, true);
  for (std::string_view E : Elementwise)
    if (Name == E)
      return countElementwise(Fn);
  return -1;
}

std::unique_ptr<at::ObserverContext> onStart(const at::RecordFunction &Fn) {
  if (Fn.scope() == at::RecordScope::BACKWARD_FUNCTION) {
    ++TrainingDepth;
    return std::make_unique<Started>(/*Backward=*/true);
  }
  if (CountedDepth)
    return nullptr;
  double Flops = countOperator(Fn);
  if (Flops < 0)
    return nullptr;
  add(Flops);
  ++CountedDepth;
  return std::make_unique<Started>(/*Backward=*/false);
}

void onEnd(const at::RecordFunction &, at::ObserverContext *Ctx) {
  if (!Ctx)
    return;
  if (static_cast<Started *>(Ctx)->Backward)
    --TrainingDepth;
  else
    --CountedDepth;
}

} // namespace

FlopCounter::FlopCounter() {
  Count.store(0);
  TrainingCount.store(0);
  Counting.store(true);
  Handle =
      at::addGlobalCallback(at::RecordFunctionCallback(onStart, onEnd)
                                .needsInputs(true)
                                .scopes({at::RecordScope::FUNCTION,
                                         at::RecordScope::BACKWARD_FUNCTION}));
}

FlopCounter::~FlopCounter() {
  at::removeCallback(Handle);
  Counting.store(false);
}

double FlopCounter::total() const { return double(Count.load()); }

double FlopCounter::training() const { return double(TrainingCount.load()); }

bool isCountingFlops() { return Counting.load(std::memory_order_relaxed); }

double countedFlops() { return isCountingFlops() ? double(Count.load()) : 0; }

double countedTrainingFlops() {
  return isCountingFlops() ? double(TrainingCount.load()) : 0;
}

TrainingFlops::TrainingFlops() { ++TrainingDepth; }

TrainingFlops::~TrainingFlops() { --TrainingDepth; }

FusedFlops::FusedFlops(double Flops) {
  ++CountedDepth;
  if (isCountingFlops())
    add(Flops);
}

FusedFlops::~FusedFlops() { --CountedDepth; }

} // namespace learn
} // namespace dp
