//===- Recurrence.cpp - The seq2seq decoder's LSTM loop, fused ------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "Recurrence.h"
#include "AdditiveScores.h"
#include "FlopCount.h"
#include "PackedProduct.h"

#include <torch/autograd.h>

#include <algorithm>
#include <cmath>
#include <optional>

namespace dp {
namespace learn {

using torch::Tensor;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

/// A step's constant matrices, laid out once per segment for its B rows
/// (PackedProduct.h): W_hh^T [H, 4H], W_q^T [H, H] and the memory gates
/// [Ls, 4H] (shared by the B placements, or one per placement, read by
/// its one row); in the backward pass their transposes. With attention,
/// the keys prepared for scoring (AdditiveScores.h).
struct PackedWeights {
  PackedMatrix Recurrent, Query;
  std::vector<PackedMatrix> Memory;
  std::optional<ScoreKeys> Keys;
};

namespace {

/// \p W's matrices for B rows, or their transposes (\p Transposed).
PackedWeights packWeights(const RecurrenceWeights &W, int64_t B,
                          bool Transposed) {
  auto Pack = [&](const Tensor &M, int64_t Rows) {
    return PackedMatrix(Transposed ? M.t() : M, Rows);
  };
  PackedWeights P;
  P.Recurrent = Pack(W.RecurrentT, B);
  if (W.hasAttention()) {
    P.Query = Pack(W.QueryT, B);
    P.Keys.emplace(W.Keys.data_ptr<float>(), W.Keys.size(0), W.Keys.size(1),
                   W.Keys.size(2));
    if (W.MemoryGates.defined()) {
      int64_t N = W.MemoryGates.size(0);
      for (int64_t I = 0; I != N; ++I)
        P.Memory.push_back(Pack(W.MemoryGates[I], N == 1 ? B : 1));
    }
  }
  return P;
}

/// Y [B, *] (+)= X [B, *] times the memory gates (or their transposes),
/// rows \p Ldy and \p Ldx floats apart: one product when they are shared,
/// else one per placement.
void multiplyMemory(const PackedWeights &P, float *Y, int64_t Ldy,
                    const float *X, int64_t Ldx, int64_t B, bool Accumulate) {
  if (P.Memory.size() == 1) {
    P.Memory[0].multiply(Y, Ldy, X, Ldx, Accumulate);
    return;
  }
  for (int64_t I = 0; I != B; ++I) // per placement
    P.Memory[I].multiply(Y + I * Ldy, Ldy, X + I * Ldx, Ldx, Accumulate);
}

/// One step's rows, [B, *] each: the inputs, and the buffers it fills.
/// Raw pointers, so that a step creates no tensors (a view costs a trip
/// through libtorch's dispatcher and an allocation).
struct StepRows {
  const float *X, *Hp, *Cp; ///< gate inputs [B, 4H], previous h and c
  float *G, *C, *TC, *H;    ///< gates [B, 4H], c, tanh(c), h [B, H]
  float *Q, *A;             ///< the query [B, H] and attention [B, Ls]
};

/// The attention weights of one step: Q = h W_q^T [B, H], A = softmax(v .
/// tanh(keys + Q)) [B, Ls].
void attend(const RecurrenceWeights &W, const PackedWeights &P,
            const StepRows &R, int64_t B, int64_t H) {
  int64_t Ls = W.Keys.size(1);
  P.Query.multiply(R.Q, H, R.Hp, H, /*Accumulate=*/false);
  additiveScores(*P.Keys, R.Q, W.Score.data_ptr<float>(), R.A, B);
  float *S = R.A;
  for (int64_t I = 0; I != B; ++I, S += Ls) {
    float Max = *std::max_element(S, S + Ls), Sum = 0;
    for (int64_t J = 0; J != Ls; ++J)
      Sum += S[J] = std::exp(S[J] - Max);
    for (int64_t J = 0; J != Ls; ++J)
      S[J] /= Sum;
  }
}

/// The LSTM cell of B rows from their gate pre-activations \p G [B, 4H]
/// (i, f, g, o) and previous cell state \p Cp [B, H]: G becomes the
/// activated gates, and C = f Cp + i g, TC = tanh(C), H = o TC. The
/// sigmoid is 1/2 + tanh(x/2)/2, both through tanhApprox() (to within
/// 2e-7), in one loop instead of four libtorch operators per step.
__attribute__((target_clones("arch=x86-64-v3", "default"))) void
lstmCell(float *G, const float *Cp, float *C, float *TC, float *H, int64_t B,
         int64_t Hd) {
  for (int64_t I = 0; I != B; ++I) {
    float *Gi = G + I * 4 * Hd;
    const float *Cpi = Cp + I * Hd;
    float *Ci = C + I * Hd, *TCi = TC + I * Hd, *Hi = H + I * Hd;
#pragma omp simd
    for (int64_t K = 0; K < Hd; ++K) {
      float In = 0.5f + 0.5f * tanhApprox(0.5f * Gi[K]);
      float Forget = 0.5f + 0.5f * tanhApprox(0.5f * Gi[Hd + K]);
      float Cand = tanhApprox(Gi[2 * Hd + K]);
      float Out = 0.5f + 0.5f * tanhApprox(0.5f * Gi[3 * Hd + K]);
      Gi[K] = In;
      Gi[Hd + K] = Forget;
      Gi[2 * Hd + K] = Cand;
      Gi[3 * Hd + K] = Out;
      float Cell = Forget * Cpi[K] + In * Cand;
      float T = tanhApprox(Cell);
      Ci[K] = Cell;
      TCi[K] = T;
      Hi[K] = Out * T;
    }
  }
}

/// One forward step from (Hp, Cp) with gate inputs X: G ends holding the
/// activated gates (i, f, g, o), then C, tanh(C) and H.
void forwardStep(const RecurrenceWeights &W, const PackedWeights &P,
                 const StepRows &R, int64_t B, int64_t Hd) {
  std::copy_n(R.X, B * 4 * Hd, R.G);
  P.Recurrent.multiply(R.G, 4 * Hd, R.Hp, Hd, /*Accumulate=*/true);
  if (W.hasAttention()) {
    attend(W, P, R, B, Hd);
    if (W.MemoryGates.defined())
      multiplyMemory(P, R.G, 4 * Hd, R.A, W.numKeys(), B,
                     /*Accumulate=*/true);
  }
  lstmCell(R.G, R.Cp, R.C, R.TC, R.H, B, Hd);
}

RecurrenceWeights makeWeights(const Tensor &RecurrentT, const Tensor &QueryT,
                              const Tensor &Score, const Tensor &Keys,
                              const Tensor &MemoryGates) {
  RecurrenceWeights W;
  W.RecurrentT = RecurrentT.contiguous();
  if (QueryT.numel()) {
    W.QueryT = QueryT.contiguous();
    W.Score = Score.contiguous();
    W.Keys = Keys.contiguous();
    if (MemoryGates.numel())
      W.MemoryGates = MemoryGates.contiguous();
  }
  return W;
}

/// The recurrence as one autograd node. Absent inputs (no attention, no
/// memory gates) are empty tensors.
class RecurrenceFunction
    : public torch::autograd::Function<RecurrenceFunction> {
public:
  static variable_list forward(AutogradContext *Ctx, Tensor X, Tensor H0,
                               Tensor C0, Tensor RecurrentT, Tensor QueryT,
                               Tensor Score, Tensor Keys, Tensor MemoryGates) {
    RecurrenceWeights W =
        makeWeights(RecurrentT, QueryT, Score, Keys, MemoryGates);
    X = X.contiguous();
    H0 = H0.contiguous();
    C0 = C0.contiguous();
    int64_t T = X.size(0), B = X.size(1), Hd = H0.size(1);
    int64_t Ls = W.numKeys();
    auto Opts = X.options();
    Tensor G = torch::empty({T, B, 4 * Hd}, Opts);
    Tensor C = torch::empty({T, B, Hd}, Opts);
    Tensor TC = torch::empty({T, B, Hd}, Opts);
    Tensor Hs = torch::empty({T, B, Hd}, Opts);
    Tensor Q = torch::empty({T, B, Ls ? Hd : 0}, Opts);
    Tensor A = torch::empty({T, B, Ls}, Opts);
    PackedWeights P = packWeights(W, B, /*Transposed=*/false);
    const float *Xp = X.data_ptr<float>();
    float *Gp = G.data_ptr<float>(), *Cp = C.data_ptr<float>(),
          *TCp = TC.data_ptr<float>(), *Hp = Hs.data_ptr<float>(),
          *Qp = Q.data_ptr<float>(), *Ap = A.data_ptr<float>();
    int64_t Rows = B * Hd, Gates = 4 * Rows;
    for (int64_t I = 0; I != T; ++I) {
      StepRows R{Xp + I * Gates,
                 I ? Hp + (I - 1) * Rows : H0.data_ptr<float>(),
                 I ? Cp + (I - 1) * Rows : C0.data_ptr<float>(),
                 Gp + I * Gates,
                 Cp + I * Rows,
                 TCp + I * Rows,
                 Hp + I * Rows,
                 Qp + I * (Ls ? Rows : 0),
                 Ap + I * B * Ls};
      forwardStep(W, P, R, B, Hd);
    }
    Ctx->save_for_backward({Hs, A});
    Ctx->saved_data["in"] = std::vector<Tensor>{
        H0, C0, W.RecurrentT, W.QueryT, W.Score, W.Keys, W.MemoryGates};
    Ctx->saved_data["tape"] = std::vector<Tensor>{G, C, TC, Q};
    if (!Ls)
      Ctx->mark_non_differentiable({A});
    return {Hs, A, C[T - 1].clone()};
  }

  static variable_list backward(AutogradContext *Ctx, variable_list Grads);
};

variable_list RecurrenceFunction::backward(AutogradContext *Ctx,
                                           variable_list Grads) {
  variable_list Saved = Ctx->get_saved_variables();
  Tensor Hs = Saved[0], A = Saved[1];
  std::vector<Tensor> In = Ctx->saved_data["in"].toTensorVector();
  std::vector<Tensor> Tape = Ctx->saved_data["tape"].toTensorVector();
  const Tensor &H0 = In[0], &C0 = In[1], &RecT = In[2];
  RecurrenceWeights W;
  W.RecurrentT = RecT;
  W.QueryT = In[3];
  W.Score = In[4];
  W.Keys = In[5];
  W.MemoryGates = In[6];
  const Tensor &G = Tape[0], &C = Tape[1], &TC = Tape[2], &Q = Tape[3];
  int64_t T = Hs.size(0), B = Hs.size(1), Hd = Hs.size(2);
  bool Attention = W.hasAttention();
  int64_t Ls = W.numKeys();
  FusedFlops Flops(
      T * countRecurrenceFlops(B, Hd, Ls, W.MemoryGates.defined()).Backward);
  auto Opts = Hs.options();

  Tensor DHs =
      Grads[0].defined() ? Grads[0].contiguous() : torch::zeros_like(Hs);
  Tensor DA =
      Attention && Grads[1].defined() ? Grads[1].contiguous() : Tensor();
  Tensor DX = torch::empty({T, B, 4 * Hd}, Opts);
  // The weights' gradients are sums over the steps of products with the
  // step's input state: one product of [T B]-row matrices after the loop,
  // not T small ones inside it.
  Tensor DScore, DKeys, Da, DQs;
  if (Attention) {
    DScore = torch::zeros_like(W.Score);
    DKeys = torch::zeros_like(W.Keys);
    Da = torch::empty({B, Ls}, Opts);
    DQs = torch::empty({T, B, Hd}, Opts);
  }
  // The gradients reaching h_t and c_t from later steps.
  Tensor Dh = torch::zeros({B, Hd}, Opts);
  Tensor Dc =
      Grads[2].defined() ? Grads[2].clone() : torch::zeros({B, Hd}, Opts);
  Tensor DhPrev = torch::empty({B, Hd}, Opts);
  // The step's products read the weights untransposed: W_hh [4H, H], W_q
  // [H, H] and the memory gates [4H, Ls].
  PackedWeights P = packWeights(W, B, /*Transposed=*/true);
  // The step's rows by pointer: no tensor is made per step (StepRows).
  int64_t Rows = B * Hd, Gates = 4 * Rows;
  const float *GAll = G.data_ptr<float>(), *TCAll = TC.data_ptr<float>(),
              *CAll = C.data_ptr<float>(), *DHAll = DHs.data_ptr<float>();
  float *DXAll = DX.data_ptr<float>();
  float *Dcp = Dc.data_ptr<float>();
  for (int64_t I = T - 1; I >= 0; --I) {
    float *Dhp = Dh.data_ptr<float>(), *DhPrevp = DhPrev.data_ptr<float>();
    const float *DHi = DHAll + I * Rows;
    for (int64_t K = 0; K != Rows; ++K)
      Dhp[K] += DHi[K];
    const float *Gp = GAll + I * Gates, *Tp = TCAll + I * Rows,
                *Cpp = I ? CAll + (I - 1) * Rows : C0.data_ptr<float>();
    float *DGp = DXAll + I * Gates;
    for (int64_t J = 0; J != B; ++J) {
      const float *Gj = Gp + J * 4 * Hd;
      float *DGj = DGp + J * 4 * Hd;
#pragma omp simd
      for (int64_t K = 0; K < Hd; ++K) {
        float Ig = Gj[K], Fg = Gj[Hd + K], Gg = Gj[2 * Hd + K],
              Og = Gj[3 * Hd + K], Tc = Tp[J * Hd + K], DH = Dhp[J * Hd + K];
        float DC = Dcp[J * Hd + K] + DH * Og * (1 - Tc * Tc);
        DGj[K] = DC * Gg * Ig * (1 - Ig);
        DGj[Hd + K] = DC * Cpp[J * Hd + K] * Fg * (1 - Fg);
        DGj[2 * Hd + K] = DC * Ig * (1 - Gg * Gg);
        DGj[3 * Hd + K] = DH * Tc * Og * (1 - Og);
        Dcp[J * Hd + K] = DC * Fg;
      }
    }
    P.Recurrent.multiply(DhPrevp, Hd, DGp, 4 * Hd, /*Accumulate=*/false);
    if (Attention) {
      const float *Ap = A.data_ptr<float>() + I * B * Ls;
      float *Dap = Da.data_ptr<float>();
      if (DA.defined())
        std::copy_n(DA.data_ptr<float>() + I * B * Ls, B * Ls, Dap);
      else
        std::fill_n(Dap, B * Ls, 0.0f);
      if (W.MemoryGates.defined())
        multiplyMemory(P, Dap, Ls, DGp, 4 * Hd, B, /*Accumulate=*/true);
      // Through the softmax: ds_j = a_j (da_j - sum_k a_k da_k), into Da.
      for (int64_t J = 0; J != B; ++J) {
        float Dot = 0;
        for (int64_t K = 0; K != Ls; ++K)
          Dot += Ap[J * Ls + K] * Dap[J * Ls + K];
        for (int64_t K = 0; K != Ls; ++K)
          Dap[J * Ls + K] = Ap[J * Ls + K] * (Dap[J * Ls + K] - Dot);
      }
      float *DQp = DQs.data_ptr<float>() + I * Rows;
      additiveScoresBackward(*P.Keys, Q.data_ptr<float>() + I * Rows,
                             W.Score.data_ptr<float>(), Dap,
                             DScore.data_ptr<float>(), DKeys.data_ptr<float>(),
                             DQp, B);
      P.Query.multiply(DhPrevp, Hd, DQp, Hd, /*Accumulate=*/true);
    }
    std::swap(Dh, DhPrev);
  }
  // The input state of every step, [T B, H].
  Tensor Inputs =
      torch::cat({H0.unsqueeze(0), Hs.slice(0, 0, T - 1)}).view({T * B, Hd});
  Tensor DRec = torch::mm(Inputs.t(), DX.view({T * B, 4 * Hd}));
  Tensor DQuery, DMemory;
  if (Attention)
    DQuery = torch::mm(Inputs.t(), DQs.view({T * B, Hd}));
  if (W.MemoryGates.defined()) {
    if (W.MemoryGates.size(0) == 1)
      DMemory = torch::mm(A.view({T * B, Ls}).t(), DX.view({T * B, 4 * Hd}))
                    .unsqueeze(0);
    else // Per placement b: [Ls, T] x [T, 4H].
      DMemory = torch::bmm(A.permute({1, 2, 0}), DX.transpose(0, 1));
  }
  return {DX, Dh, Dc, DRec, DQuery, DScore, DKeys, DMemory};
}

} // namespace

Recurrence runRecurrence(const Tensor &X, const Tensor &H0, const Tensor &C0,
                         const RecurrenceWeights &W) {
  // Its loops read the tensors' memory directly: float32 on the host
  // (SegmentSeq2SeqImpl::isFused()).
  TORCH_CHECK(X.device().is_cpu() && X.scalar_type() == torch::kFloat,
              "runRecurrence: float32 tensors on the host only");
  // Counted here, not in forward(), which autograd runs without
  // gradients: whether they are recorded tells training from sampling.
  FusedFlops Flops(X.size(0) * countRecurrenceFlops(X.size(1), H0.size(1),
                                                    W.numKeys(),
                                                    W.MemoryGates.defined())
                                   .Forward);
  Tensor None = torch::empty({0}, X.options());
  auto Or = [&](const Tensor &T) { return T.defined() ? T : None; };
  variable_list Out =
      RecurrenceFunction::apply(X, H0, C0, W.RecurrentT, Or(W.QueryT),
                                Or(W.Score), Or(W.Keys), Or(W.MemoryGates));
  return {Out[0], Out[1], Out[2]};
}

RecurrenceStepper::RecurrenceStepper(const RecurrenceWeights &Weights,
                                     const Tensor &H0, const Tensor &C0)
    : W(Weights) {
  W.RecurrentT = W.RecurrentT.contiguous();
  if (W.hasAttention()) {
    W.QueryT = W.QueryT.contiguous();
    W.Score = W.Score.contiguous();
    W.Keys = W.Keys.contiguous();
    if (W.MemoryGates.defined())
      W.MemoryGates = W.MemoryGates.contiguous();
  }
  H = H0.contiguous().clone();
  C = C0.contiguous().clone();
  int64_t B = H.size(0), Hd = H.size(1);
  int64_t Ls = W.numKeys();
  StepFlops = countRecurrenceFlops(B, Hd, Ls, W.MemoryGates.defined()).Forward;
  Packed = std::make_shared<const PackedWeights>(
      packWeights(W, B, /*Transposed=*/false));
  auto Opts = H.options();
  G = torch::empty({B, 4 * Hd}, Opts);
  TC = torch::empty({B, Hd}, Opts);
  Q = torch::empty({B, Ls ? Hd : 0}, Opts);
  A = torch::empty({B, Ls}, Opts);
  NextH = torch::empty({B, Hd}, Opts);
  NextC = torch::empty({B, Hd}, Opts);
}

void RecurrenceStepper::step(const Tensor &X) {
  FusedFlops Flops(StepFlops);
  Tensor In = X.contiguous();
  StepRows R{
      In.data_ptr<float>(),    H.data_ptr<float>(),     C.data_ptr<float>(),
      G.data_ptr<float>(),     NextC.data_ptr<float>(), TC.data_ptr<float>(),
      NextH.data_ptr<float>(), Q.data_ptr<float>(),     A.data_ptr<float>()};
  forwardStep(W, *Packed, R, H.size(0), H.size(1));
  std::swap(H, NextH);
  std::swap(C, NextC);
}

RecurrenceFlops countRecurrenceFlops(int64_t B, int64_t H, int64_t Ls,
                                     bool MemoryGates) {
  double Rec = 2.0 * H * 4 * H;                      // h W_hh^T
  double Lstm = 4.0 * H + 6.0 * H;                   // 5 activations, C, H
  double Fwd = Rec + Lstm, Bwd = 2 * Rec + 16.0 * H; // dW_hh, dh; gates
  if (Ls) {
    double Attend = 2.0 * H * H + 2.0 * Ls * H + 2.0 * Ls * H + 4.0 * Ls;
    Fwd += Attend;
    // The recomputed add and tanh, dv, dE, dkeys, dq, dW_q, dh.
    Bwd += 2.0 * Ls * H + 2.0 * Ls * H + 3.0 * Ls * H + 2.0 * Ls * H +
           4.0 * H * H + 4.0 * Ls;
    if (MemoryGates) {
      Fwd += 2.0 * Ls * 4 * H;
      Bwd += 2 * 2.0 * Ls * 4 * H;
    }
  }
  return {B * Fwd, B * Bwd};
}

} // namespace learn
} // namespace dp
