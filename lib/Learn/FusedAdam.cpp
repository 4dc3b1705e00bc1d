//===- FusedAdam.cpp - Adam's step in one pass ----------------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "FusedAdam.h"
#include "FlopCount.h"

#include <c10/util/string_utils.h>

#include <cmath>
#include <memory>

namespace dp {
namespace learn {

namespace {

/// Element-wise operators of libtorch's Adam step per element (mul and
/// add, mul and addcmul, sqrt, div and add, addcdiv), as FlopCount.h
/// counts them.
constexpr double OperatorsPerElement = 8;

bool fusable(const torch::optim::OptimizerParamGroup &Group) {
  const auto &O =
      static_cast<const torch::optim::AdamOptions &>(Group.options());
  if (O.weight_decay() != 0 || O.amsgrad())
    return false;
  for (const torch::Tensor &P : Group.params()) {
    if (!P.grad().defined())
      continue;
    const torch::Tensor &G = P.grad();
    if (!P.device().is_cpu() || P.scalar_type() != torch::kFloat ||
        !P.is_contiguous() || G.is_sparse() ||
        G.scalar_type() != torch::kFloat || !G.is_contiguous())
      return false;
  }
  return true;
}

/// One parameter's update: Adam's moments and step as libtorch computes
/// them, element by element.
__attribute__((target_clones("arch=x86-64-v3", "default"))) void
update(float *P, const float *G, float *M, float *V, int64_t N, float Beta1,
       float Beta2, float SqrtCorrection2, float Eps, float StepSize) {
  float OneMinusBeta1 = 1 - Beta1, OneMinusBeta2 = 1 - Beta2;
#pragma omp simd
  for (int64_t I = 0; I < N; ++I) {
    float Mi = M[I] * Beta1 + OneMinusBeta1 * G[I];
    float Vi = V[I] * Beta2 + OneMinusBeta2 * G[I] * G[I];
    M[I] = Mi;
    V[I] = Vi;
    P[I] -= StepSize * Mi / (std::sqrt(Vi) / SqrtCorrection2 + Eps);
  }
}

} // namespace

torch::Tensor FusedAdam::step(LossClosure Closure) {
  for (const auto &Group : param_groups())
    if (!fusable(Group))
      return torch::optim::Adam::step(Closure);
  torch::NoGradGuard NoGrad;
  torch::Tensor Loss;
  if (Closure) {
    at::AutoGradMode Enable(true);
    Loss = Closure();
  }
  for (auto &Group : param_groups()) {
    const auto &O =
        static_cast<const torch::optim::AdamOptions &>(Group.options());
    for (torch::Tensor &P : Group.params()) {
      if (!P.grad().defined())
        continue;
      std::string Key = c10::guts::to_string(P.unsafeGetTensorImpl());
      auto It = state_.find(Key);
      if (It == state_.end()) {
        auto S = std::make_unique<torch::optim::AdamParamState>();
        S->step(0);
        S->exp_avg(torch::zeros_like(P, torch::MemoryFormat::Preserve));
        S->exp_avg_sq(torch::zeros_like(P, torch::MemoryFormat::Preserve));
        It = state_.emplace(Key, std::move(S)).first;
      }
      auto &S = static_cast<torch::optim::AdamParamState &>(*It->second);
      S.step(S.step() + 1);
      auto [Beta1, Beta2] = O.betas();
      double Correction1 = 1 - std::pow(Beta1, S.step());
      double Correction2 = 1 - std::pow(Beta2, S.step());
      FusedFlops Flops(OperatorsPerElement * double(P.numel()));
      update(P.data_ptr<float>(), P.grad().data_ptr<float>(),
             S.exp_avg().data_ptr<float>(), S.exp_avg_sq().data_ptr<float>(),
             P.numel(), float(Beta1), float(Beta2),
             float(std::sqrt(Correction2)), float(O.eps()),
             float(O.lr() / Correction1));
      // As an in-place operator would: autograd then refuses a graph that
      // saved the parameter before this step.
      P.unsafeGetTensorImpl()->bump_version();
    }
  }
  return Loss;
}

} // namespace learn
} // namespace dp
