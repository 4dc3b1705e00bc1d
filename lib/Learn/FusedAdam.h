//===- FusedAdam.h - Adam's step in one pass --------------------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// libtorch's Adam updates a parameter through eight element-wise
/// operators (the two moments, the denominator, the update), each a pass
/// over the parameter's memory; a learned placer steps its optimizer
/// after every mini-batch (Mars: 1,800 steps of about a million floats a
/// run). FusedAdam is torch::optim::Adam with a step that makes one pass
/// per parameter: the same state, the same formula, the same
/// floating-point operations counted (FlopCount.h). Parameters on the host
/// in float32 without weight decay or AMSGrad take the pass; any other
/// set takes Adam's own step. The pass rounds otherwise than libtorch's
/// operators, so a search's trajectory changes with it. The seq2seq
/// placers and Mars's pre-training use it; Placeto keeps libtorch's Adam:
/// at its default width its network has a few thousand weights, and the
/// pass's rounding moved its trajectory enough to fail
/// PlacetoTest.PlacesAnUnseenGraphZeroShot.
/// Only lib/Learn and its tests include this header.
///
//===----------------------------------------------------------------------===//

#ifndef DP_LIB_LEARN_FUSEDADAM_H
#define DP_LIB_LEARN_FUSEDADAM_H

#include <torch/optim/adam.h>

namespace dp {
namespace learn {

class FusedAdam : public torch::optim::Adam {
public:
  using torch::optim::Adam::Adam;
  torch::Tensor step(LossClosure Closure = nullptr) override;
};

} // namespace learn
} // namespace dp

#endif // DP_LIB_LEARN_FUSEDADAM_H
