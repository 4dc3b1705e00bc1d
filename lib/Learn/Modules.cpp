//===- Modules.cpp - The networks of the learned placers ------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "Modules.h"
#include "FlopCount.h"
#include "FusedAdam.h"
#include "PolicySearch.h"
#include "dp/Support/Diagnostics.h"

#include "llvm/Support/MemoryBuffer.h"

#include <torch/cuda.h>
#include <torch/serialize.h>
#include <torch/utils.h>

#include <dlfcn.h>
#include <malloc.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <thread>

using namespace llvm;

namespace dp {
namespace learn {

std::mt19937_64 setUpTorch(unsigned Threads, uint64_t Seed) {
  if (!Threads)
    Threads = std::max(1u, std::thread::hardware_concurrency());
  torch::set_num_threads(Threads);
  // OpenBLAS (Debian's libopenblas0-pthread, when it provides the BLAS)
  // keeps its own thread pool of one thread per core, whose threads spin
  // on sched_yield between the small products of the LSTM steps: give it
  // the same count.
  using SetThreadsFn = void (*)(int);
  if (auto *SetBLASThreads = reinterpret_cast<SetThreadsFn>(
          dlsym(RTLD_DEFAULT, "openblas_set_num_threads")))
    SetBLASThreads(int(Threads));
  // Tensors of a few MB are allocated and freed at every step; keep them
  // out of mmap/munmap (and the page faults of fresh mappings).
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  torch::manual_seed(Seed);
  return std::mt19937_64(Seed);
}

static constexpr EnumEntry<DeviceChoice> DeviceChoiceNames[] = {
    {"auto", DeviceChoice::Auto},
    {"cpu", DeviceChoice::CPU},
    {"cuda", DeviceChoice::CUDA},
};

OptionTable &addDeviceOption(OptionTable &T, DeviceChoice &Device) {
  return T.choice<DeviceChoice>("device", Device, DeviceChoiceNames);
}

Expected<torch::Device> getTorchDevice(DeviceChoice Choice, StringRef Placer) {
  bool HaveCUDA = torch::cuda::is_available();
  if (Choice == DeviceChoice::CPU ||
      (Choice == DeviceChoice::Auto && !HaveCUDA))
    return torch::Device(torch::kCPU);
  if (!HaveCUDA)
    return makeError("place{algo=" + Placer + "}: device=cuda, but " +
                     (at::hasCUDA() ? "libtorch sees no CUDA device"
                                    : "this libtorch was built without CUDA"));
  return torch::Device(torch::kCUDA);
}

torch::Tensor getFeatures(const LearnTask &T) {
  assert(T.Features.size() == size_t(T.NumUnits) * T.NumFeatures);
  return torch::from_blob(const_cast<float *>(T.Features.data()),
                          {int64_t(T.NumUnits), int64_t(T.NumFeatures)},
                          torch::kFloat)
      .clone();
}

torch::Tensor getNormalizedAdjacency(const LearnTask &T) {
  int64_t U = T.NumUnits;
  std::vector<std::pair<int64_t, int64_t>> Pairs;
  Pairs.reserve(2 * T.Edges.size() + U);
  for (const LearnTask::Edge &E : T.Edges) {
    Pairs.emplace_back(E.From, E.To);
    Pairs.emplace_back(E.To, E.From);
  }
  for (int64_t I = 0; I != U; ++I)
    Pairs.emplace_back(I, I);
  std::sort(Pairs.begin(), Pairs.end());
  Pairs.erase(std::unique(Pairs.begin(), Pairs.end()), Pairs.end());
  std::vector<double> Degree(U, 0);
  for (const auto &[R, C] : Pairs)
    Degree[R] += 1;
  int64_t N = Pairs.size();
  torch::Tensor Indices = torch::empty({2, N}, torch::kLong);
  torch::Tensor Values = torch::empty({N}, torch::kFloat);
  auto Idx = Indices.accessor<int64_t, 2>();
  auto Val = Values.accessor<float, 1>();
  for (int64_t K = 0; K != N; ++K) {
    auto [R, C] = Pairs[K];
    Idx[0][K] = R;
    Idx[1][K] = C;
    Val[K] = float(1.0 / std::sqrt(Degree[R] * Degree[C]));
  }
  return torch::sparse_coo_tensor(Indices, Values, {U, U}).coalesce();
}

//===----------------------------------------------------------------------===//
// GCN and DGI
//===----------------------------------------------------------------------===//

GCNEncoderImpl::GCNEncoderImpl(int64_t In, int64_t Hidden, unsigned Layers)
    : Hidden(Hidden) {
  for (unsigned L = 0; L != Layers; ++L) {
    Weights.push_back(register_module(
        "gcn" + std::to_string(L),
        torch::nn::Linear(torch::nn::LinearOptions(L ? Hidden : In, Hidden)
                              .bias(false))));
    Activations.push_back(register_module(
        "prelu" + std::to_string(L),
        torch::nn::PReLU(torch::nn::PReLUOptions().num_parameters(Hidden))));
  }
}

torch::Tensor GCNEncoderImpl::forward(const torch::Tensor &X,
                                      const torch::Tensor &Adj) {
  torch::Tensor H = X;
  for (size_t L = 0; L != Weights.size(); ++L)
    H = Activations[L]->forward(torch::mm(Adj, Weights[L]->forward(H)));
  return H;
}

/// A random permutation of 0..N-1 drawn from \p Rng.
static torch::Tensor randomPermutation(int64_t N, std::mt19937_64 &Rng) {
  std::vector<int64_t> P(N);
  for (int64_t I = 0; I != N; ++I)
    P[I] = I;
  for (int64_t I = N - 1; I > 0; --I)
    std::swap(P[I], P[int64_t(Rng() % uint64_t(I + 1))]);
  return torch::tensor(P, torch::kLong);
}

std::vector<double> pretrainDGI(GCNEncoder &Enc, const torch::Tensor &X,
                                const torch::Tensor &Adj, unsigned Iterations,
                                double LearningRate, std::mt19937_64 &Rng,
                                const std::function<bool()> &Stop) {
  int64_t H = Enc->getHidden(), U = X.size(0);
  // The bilinear discriminator h^T W s (+ b), as products: libtorch's
  // Bilinear module materializes a [U, H, H] intermediate.
  double Bound = 1.0 / std::sqrt(double(H));
  torch::Tensor W =
      torch::empty({H, H}, X.options()).uniform_(-Bound, Bound).requires_grad_();
  torch::Tensor Bias = torch::zeros({1}, X.options()).requires_grad_();
  std::vector<torch::Tensor> Params = Enc->parameters();
  Params.push_back(W);
  Params.push_back(Bias);
  FusedAdam Opt(Params, torch::optim::AdamOptions(LearningRate));
  torch::Tensor Labels =
      torch::cat({torch::ones({U}, X.options()), torch::zeros({U}, X.options())});

  std::vector<double> Losses;
  double Best = std::numeric_limits<double>::infinity();
  std::vector<torch::Tensor> BestParams;
  for (unsigned It = 0; It != Iterations && !(Stop && Stop()); ++It) {
    torch::Tensor Pos = Enc->forward(X, Adj);
    torch::Tensor Neg =
        Enc->forward(X.index_select(0, randomPermutation(U, Rng).to(X.device())),
                     Adj);
    torch::Tensor Ws = torch::mv(W, torch::sigmoid(Pos.mean(0)));
    torch::Tensor Scores =
        torch::cat({torch::mv(Pos, Ws), torch::mv(Neg, Ws)}) + Bias;
    torch::Tensor Loss =
        torch::binary_cross_entropy_with_logits(Scores, Labels);
    double L = Loss.item<double>();
    Losses.push_back(L);
    // The parameters that produced the lowest loss, as Mars keeps them.
    if (L < Best) {
      Best = L;
      torch::NoGradGuard NoGrad;
      BestParams.clear();
      for (const torch::Tensor &P : Enc->parameters())
        BestParams.push_back(P.detach().clone());
    }
    Opt.zero_grad();
    Loss.backward();
    learn::TrainingFlops Training;
    Opt.step();
  }
  if (!BestParams.empty()) {
    torch::NoGradGuard NoGrad;
    std::vector<torch::Tensor> Current = Enc->parameters();
    for (size_t I = 0; I != Current.size(); ++I)
      Current[I].copy_(BestParams[I]);
  }
  return Losses;
}

//===----------------------------------------------------------------------===//
// Segment-level seq2seq
//===----------------------------------------------------------------------===//

static constexpr EnumEntry<AttentionKind> AttentionNames[] = {
    {"before", AttentionKind::Before},
    {"after", AttentionKind::After},
    {"self", AttentionKind::Self},
};

OptionTable &addAttentionOption(OptionTable &T, AttentionKind &Kind) {
  return T.choice<AttentionKind>("attention", Kind, AttentionNames);
}

SegmentSeq2SeqImpl::SegmentSeq2SeqImpl(int64_t In, int64_t Hidden,
                                       int64_t NumDevices, int64_t Segment,
                                       AttentionKind Attention)
    : Hidden(Hidden), NumDevices(NumDevices), Segment(Segment),
      Attention(Attention) {
  using torch::nn::Linear;
  using torch::nn::LinearOptions;
  Encoder = register_module(
      "encoder", torch::nn::LSTM(torch::nn::LSTMOptions(In, Hidden)
                                     .bidirectional(true)));
  Key = register_module("key", Linear(2 * Hidden, Hidden));
  if (Attention == AttentionKind::Self) {
    Query = register_module("query", Linear(2 * Hidden, Hidden));
  } else {
    // Bahdanau et al.: score = v . tanh(W1 encoding + W2 query).
    Query = register_module("query",
                            Linear(LinearOptions(Hidden, Hidden).bias(false)));
    Score =
        register_module("score", Linear(LinearOptions(Hidden, 1).bias(false)));
  }
  if (Attention == AttentionKind::Before)
    ContextGates = register_module(
        "context_gates",
        Linear(LinearOptions(2 * Hidden, 4 * Hidden).bias(false)));
  if (Attention == AttentionKind::After)
    Combine = register_module("combine", Linear(3 * Hidden, Hidden));
  DecoderInput =
      register_module("decoder_input", Linear(2 * Hidden, 4 * Hidden));
  double Bound = 1.0 / std::sqrt(double(Hidden));
  DecoderRecurrent = register_parameter(
      "decoder_recurrent",
      torch::empty({4 * Hidden, Hidden}).uniform_(-Bound, Bound));
  // One row per device and one for "no device yet".
  ActionGates = register_parameter(
      "action_gates",
      torch::empty({NumDevices + 1, 4 * Hidden}).uniform_(-Bound, Bound));
  Output = register_module("output", Linear(Hidden, NumDevices));
}

/// Each position's encoding attends over \p Enc [N, Ls, 2H] with itself
/// as the query (scaled dot product): the contexts [N, Ls, 2H].
static torch::Tensor attendToSelf(const torch::Tensor &Enc,
                                  torch::nn::Linear &Query,
                                  torch::nn::Linear &Key, int64_t Hidden) {
  double Scale = 1.0 / std::sqrt(double(Hidden));
  torch::Tensor Weights = torch::softmax(
      torch::bmm(Query->forward(Enc), Key->forward(Enc).transpose(1, 2)) *
          Scale,
      2);
  return torch::bmm(Weights, Enc);
}

SegmentSeq2SeqImpl::Encoding
SegmentSeq2SeqImpl::encode(const torch::Tensor &Seq) {
  bool Batched = Seq.dim() == 3;
  int64_t B = Batched ? Seq.size(1) : 1;
  Encoding E;
  E.Length = Seq.size(0);
  int64_t Len = Segment > 0 ? Segment : std::max<int64_t>(E.Length, 1);
  torch::Tensor H = torch::zeros({2, B, Hidden}, Seq.options());
  torch::Tensor C = torch::zeros({2, B, Hidden}, Seq.options());
  for (int64_t Begin = 0; Begin < E.Length; Begin += Len) {
    int64_t End = std::min(E.Length, Begin + Len);
    torch::Tensor In = Seq.slice(0, Begin, End);
    if (!Batched)
      In = In.unsqueeze(1);
    torch::Tensor Out;
    if (isFused()) {
      Out = encodeFused(In, H, C);
    } else {
      auto [Result, State] = Encoder->forward(In, std::make_tuple(H, C));
      Out = Result;
      std::tie(H, C) = State;
    }
    torch::Tensor Enc = Out.transpose(0, 1); // [B, Ls, 2H]
    // The decoder reads each position's own encoding, or with Self
    // attention the context it attends to.
    torch::Tensor DecoderIn =
        Attention == AttentionKind::Self
            ? attendToSelf(Enc, Query, Key, Hidden).transpose(0, 1)
            : Out;
    if (!Batched)
      DecoderIn = DecoderIn.squeeze(1);
    E.InputGates.push_back(DecoderInput->forward(DecoderIn));
    if (Attention != AttentionKind::Self) {
      E.Memory.push_back(Enc);
      E.Keys.push_back(Key->forward(Enc));
    }
    if (Attention == AttentionKind::Before) {
      // ContextGates has no bias: the gates of the weighted context are
      // the weighted gates of the encodings.
      E.MemoryGates.push_back(ContextGates->forward(Enc));
    }
    E.H0.push_back((H[0] + H[1]).view({B, Hidden}));
    E.C0.push_back((C[0] + C[1]).view({B, Hidden}));
  }
  return E;
}

torch::Tensor SegmentSeq2SeqImpl::encodeFused(const torch::Tensor &In,
                                              torch::Tensor &H,
                                              torch::Tensor &C) {
  // torch::nn::LSTM's parameters and gate order (i, f, g, o), run by the
  // fused recurrence: the input products for every position at once, then
  // the loop, forward over the segment and backward over its reverse.
  auto P = Encoder->named_parameters();
  std::vector<torch::Tensor> Outs, Hs, Cs;
  for (int Dir = 0; Dir != 2; ++Dir) {
    std::string Suffix = Dir ? "_l0_reverse" : "_l0";
    torch::Tensor X = torch::matmul(In, P["weight_ih" + Suffix].t()) +
                      P["bias_ih" + Suffix] + P["bias_hh" + Suffix];
    if (Dir)
      X = X.flip(0);
    RecurrenceWeights W;
    W.RecurrentT = P["weight_hh" + Suffix].t();
    Recurrence R = runRecurrence(X, H[Dir], C[Dir], W);
    Outs.push_back(Dir ? R.H.flip(0) : R.H);
    Hs.push_back(R.H[-1]);
    Cs.push_back(R.C);
  }
  H = torch::stack(Hs);
  C = torch::stack(Cs);
  return torch::cat(Outs, 2);
}

torch::Tensor SegmentSeq2SeqImpl::attend(const Encoding &E, size_t S,
                                         const torch::Tensor &Q) {
  const torch::Tensor &Keys = E.Keys[S], &Memory = E.Memory[S];
  // [N, Ls, H] + [B, 1, H] (N is 1 or B) -> scores [B, Ls].
  torch::Tensor Scores =
      Score->forward(torch::tanh(Keys + Query->forward(Q).unsqueeze(1)))
          .squeeze(2);
  torch::Tensor Weights = torch::softmax(Scores, 1);
  if (Memory.size(0) == 1)
    return torch::mm(Weights, Memory[0]);
  return torch::bmm(Weights.unsqueeze(1), Memory).squeeze(1);
}

/// A uniform double in [0, 1) from \p Rng, the same on every platform.
static double uniform01(std::mt19937_64 &Rng) {
  return double(Rng() >> 11) * (1.0 / 9007199254740992.0);
}

int64_t sampleIndex(const float *Probs, int64_t N, std::mt19937_64 &Rng,
                    bool Greedy) {
  int64_t D = 0;
  if (Greedy) {
    for (int64_t K = 1; K != N; ++K)
      if (Probs[K] > Probs[D])
        D = K;
    return D;
  }
  double X = uniform01(Rng), Sum = 0;
  for (int64_t K = 0; K != N; ++K) {
    Sum += Probs[K];
    if (X < Sum)
      return K;
  }
  return N - 1;
}

void SegmentSeq2SeqImpl::setLogitSquash(double Temperature,
                                        double TanhConstant) {
  this->Temperature = Temperature;
  this->TanhConstant = TanhConstant;
}

torch::Tensor SegmentSeq2SeqImpl::noDeviceYet(int64_t Batch) const {
  return torch::full({Batch}, NumDevices,
                     torch::dtype(torch::kLong).device(device()));
}

torch::Tensor SegmentSeq2SeqImpl::logits(const torch::Tensor &H) {
  torch::Tensor L = Output->forward(H);
  if (TanhConstant == 0)
    return L;
  return TanhConstant * torch::tanh(L / Temperature);
}

torch::Tensor SegmentSeq2SeqImpl::step(const Encoding &E, size_t S,
                                       const torch::Tensor &InputGates,
                                       const torch::Tensor &Prev,
                                       const torch::Tensor &RecurrentT,
                                       torch::Tensor &H, torch::Tensor &C) {
  // [4H] for one sequence, [B, 4H] for a batch of them.
  torch::Tensor G =
      (InputGates.dim() == 1 ? InputGates.unsqueeze(0) : InputGates) +
      ActionGates.index_select(0, Prev) + torch::mm(H, RecurrentT);
  // Bahdanau et al.: the context from the decoder's previous state.
  torch::Tensor Context;
  if (Attention != AttentionKind::Self)
    Context = attend(E, S, H);
  if (Attention == AttentionKind::Before)
    G = G + ContextGates->forward(Context);
  std::vector<torch::Tensor> Parts = G.chunk(4, 1);
  C = torch::sigmoid(Parts[1]) * C +
      torch::sigmoid(Parts[0]) * torch::tanh(Parts[2]);
  H = torch::sigmoid(Parts[3]) * torch::tanh(C);
  if (Attention != AttentionKind::After)
    return H;
  return torch::tanh(Combine->forward(torch::cat({H, Context}, 1)));
}

RecurrenceWeights SegmentSeq2SeqImpl::getRecurrenceWeights(const Encoding &E,
                                                           size_t S) const {
  RecurrenceWeights W;
  W.RecurrentT = DecoderRecurrent.t();
  if (Attention != AttentionKind::Self) {
    W.QueryT = Query->weight.t();
    W.Score = Score->weight.view({Hidden});
    W.Keys = E.Keys[S];
  }
  if (Attention == AttentionKind::Before)
    W.MemoryGates = E.MemoryGates[S];
  return W;
}

torch::Tensor SegmentSeq2SeqImpl::combine(const Encoding &E, size_t S,
                                          const torch::Tensor &H,
                                          const torch::Tensor &A) {
  const torch::Tensor &Memory = E.Memory[S];
  torch::Tensor Context;
  if (Memory.size(0) == 1)
    Context = torch::matmul(A, Memory[0]);
  else if (A.dim() == 2)
    Context = torch::bmm(A.unsqueeze(1), Memory).squeeze(1);
  else // [T, B, Ls] x [B, Ls, 2H], batched over B.
    Context = torch::bmm(A.transpose(0, 1), Memory).transpose(0, 1);
  return torch::tanh(Combine->forward(torch::cat({H, Context}, -1)));
}

torch::Tensor SegmentSeq2SeqImpl::followFused(const Encoding &E, size_t S,
                                              const torch::Tensor &Prev,
                                              const torch::Tensor &Actions) {
  const torch::Tensor &Gates = E.InputGates[S];
  int64_t Len = Gates.size(0), Batch = Actions.size(0);
  // The device chosen one position before each position: [Len, Batch].
  torch::Tensor Before =
      torch::cat({Prev.unsqueeze(0), Actions.t().slice(0, 0, Len - 1)});
  torch::Tensor X = (Gates.dim() == 2 ? Gates.unsqueeze(1) : Gates) +
                    ActionGates.index_select(0, Before.reshape({-1}))
                        .view({Len, Batch, 4 * Hidden});
  Recurrence R = runRecurrence(X, E.H0[S].expand({Batch, Hidden}),
                               E.C0[S].expand({Batch, Hidden}),
                               getRecurrenceWeights(E, S));
  return Attention == AttentionKind::After ? combine(E, S, R.H, R.A) : R.H;
}

void SegmentSeq2SeqImpl::draw(const torch::Tensor &Out, torch::Tensor &Prev,
                              std::mt19937_64 &Rng, bool Greedy,
                              std::vector<int64_t> &Chosen) {
  int64_t Batch = Out.size(0);
  // Drawn on the host, with dp's generator, wherever the model runs.
  torch::Tensor Probs =
      torch::softmax(logits(Out), 1).to(torch::kCPU).contiguous();
  const float *P = Probs.data_ptr<float>();
  std::vector<int64_t> Picked(Batch);
  for (int64_t B = 0; B != Batch; ++B) {
    int64_t D = sampleIndex(P + B * NumDevices, NumDevices, Rng, Greedy);
    Picked[B] = D;
    Chosen.push_back(D);
  }
  Prev = torch::tensor(Picked, torch::kLong).to(Prev.device());
}

torch::Tensor SegmentSeq2SeqImpl::chooseFused(const Encoding &E, size_t S,
                                              torch::Tensor &Prev,
                                              std::mt19937_64 &Rng, bool Greedy,
                                              std::vector<int64_t> &Chosen) {
  const torch::Tensor &Gates = E.InputGates[S];
  int64_t Len = Gates.size(0), Batch = Prev.size(0);
  RecurrenceStepper Steps(getRecurrenceWeights(E, S),
                          E.H0[S].expand({Batch, Hidden}),
                          E.C0[S].expand({Batch, Hidden}));
  std::vector<torch::Tensor> States;
  States.reserve(Len);
  for (int64_t I = 0; I != Len; ++I) {
    Steps.step(Gates[I] + ActionGates.index_select(0, Prev));
    torch::Tensor Out = Attention == AttentionKind::After
                            ? combine(E, S, Steps.hidden(), Steps.attention())
                            : Steps.hidden().clone();
    States.push_back(Out);
    draw(Out, Prev, Rng, Greedy, Chosen);
  }
  return torch::stack(States);
}

torch::Tensor SegmentSeq2SeqImpl::follow(const Encoding &E, size_t S,
                                         const torch::Tensor &Prev,
                                         const torch::Tensor &Actions) {
  if (isFused())
    return followFused(E, S, Prev, Actions);
  return decode(
      E, S, Actions.size(0),
      [&](int64_t I) { return I ? Actions.select(1, I - 1) : Prev; },
      [](const torch::Tensor &) {});
}

torch::Tensor SegmentSeq2SeqImpl::choose(const Encoding &E, size_t S,
                                         torch::Tensor &Prev,
                                         std::mt19937_64 &Rng, bool Greedy,
                                         std::vector<int64_t> &Chosen) {
  if (isFused())
    return chooseFused(E, S, Prev, Rng, Greedy, Chosen);
  return decode(
      E, S, Prev.size(0), [&](int64_t) { return Prev; },
      [&](const torch::Tensor &Out) { draw(Out, Prev, Rng, Greedy, Chosen); });
}

torch::Tensor
SegmentSeq2SeqImpl::decode(const Encoding &E, size_t S, int64_t Batch,
                           function_ref<torch::Tensor(int64_t)> Before,
                           function_ref<void(const torch::Tensor &)> Then) {
  const torch::Tensor &Gates = E.InputGates[S];
  int64_t Len = Gates.size(0);
  torch::Tensor RecurrentT = DecoderRecurrent.t();
  torch::Tensor H = E.H0[S].expand({Batch, Hidden});
  torch::Tensor C = E.C0[S].expand({Batch, Hidden});
  std::vector<torch::Tensor> States;
  States.reserve(Len);
  for (int64_t I = 0; I != Len; ++I) {
    States.push_back(step(E, S, Gates[I], Before(I), RecurrentT, H, C));
    Then(States.back());
  }
  return torch::stack(States);
}

std::pair<torch::Tensor, torch::Tensor>
SegmentSeq2SeqImpl::sample(const Encoding &E, int64_t Batch,
                           std::mt19937_64 &Rng, bool Greedy) {
  torch::NoGradGuard NoGrad;
  torch::Tensor Prev = noDeviceYet(Batch);
  std::vector<torch::Tensor> Actions, Logps;
  for (size_t S = 0; S != E.InputGates.size(); ++S) {
    std::vector<int64_t> Chosen;
    torch::Tensor States = choose(E, S, Prev, Rng, Greedy, Chosen);
    int64_t Len = States.size(0);
    torch::Tensor A = torch::tensor(Chosen, torch::kLong).view({Len, Batch});
    torch::Tensor Logp = torch::log_softmax(logits(States), 2)
                             .gather(2, A.to(device()).unsqueeze(2))
                             .squeeze(2);
    Actions.push_back(A.t());
    Logps.push_back(Logp.t().to(torch::kCPU));
  }
  return {torch::cat(Actions, 1), torch::cat(Logps, 1)};
}

std::pair<torch::Tensor, torch::Tensor>
SegmentSeq2SeqImpl::evaluate(const Encoding &E,
                             const torch::Tensor &HostActions) {
  torch::Tensor Actions = HostActions.to(device());
  int64_t Batch = Actions.size(0);
  torch::Tensor Prev = noDeviceYet(Batch);
  std::vector<torch::Tensor> Logps, Entropies;
  int64_t Begin = 0;
  for (size_t S = 0; S != E.InputGates.size(); ++S) {
    int64_t Len = E.InputGates[S].size(0);
    torch::Tensor A = Actions.slice(1, Begin, Begin + Len);
    torch::Tensor States = follow(E, S, Prev, A);
    Prev = A.select(1, Len - 1);
    torch::Tensor All = torch::log_softmax(logits(States), 2);
    Logps.push_back(All.gather(2, A.t().unsqueeze(2)).squeeze(2).t());
    Entropies.push_back(-(All.exp() * All).sum(2).t());
    Begin += Len;
  }
  return {torch::cat(Logps, 1), torch::cat(Entropies, 1)};
}

//===----------------------------------------------------------------------===//
// PPO
//===----------------------------------------------------------------------===//

double updatePPO(ArrayRef<PolicySample> Samples, const PPOConfig &C,
                 torch::optim::Optimizer &Opt,
                 const std::vector<torch::Tensor> &Params, const LogpFn &Logp,
                 std::mt19937_64 &Rng) {
  size_t N = Samples.size();
  std::vector<size_t> Order(N);
  for (size_t I = 0; I != N; ++I)
    Order[I] = I;
  size_t Batches = std::max<size_t>(1, std::min<size_t>(C.MiniBatches, N));
  double Scale = 1, Shift = 0;
  if (C.StandardizeAdvantages && N > 1) {
    double Mean = 0, Var = 0;
    for (const PolicySample &S : Samples)
      Mean += S.Advantage / N;
    for (const PolicySample &S : Samples)
      Var += (S.Advantage - Mean) * (S.Advantage - Mean) / (N - 1);
    if (Var > 1e-24)
      Scale = 1 / std::sqrt(Var);
    Shift = Mean;
  }
  double LastEpochLoss = 0;
  for (unsigned Epoch = 0; Epoch != C.Epochs; ++Epoch) {
    for (size_t I = N - 1; I > 0; --I)
      std::swap(Order[I], Order[size_t(Rng() % (I + 1))]);
    LastEpochLoss = 0;
    for (size_t B = 0; B != Batches; ++B) {
      size_t Begin = B * N / Batches, End = (B + 1) * N / Batches;
      std::vector<torch::Tensor> Acts, Old;
      std::vector<float> Adv;
      for (size_t K = Begin; K != End; ++K) {
        const PolicySample &S = Samples[Order[K]];
        Acts.push_back(S.Actions);
        Old.push_back(S.OldLogp);
        Adv.push_back(float((S.Advantage - Shift) * Scale));
      }
      auto [NewLogp, Entropy] = Logp(torch::stack(Acts));
      torch::Tensor A = torch::tensor(Adv).unsqueeze(1).to(NewLogp.device());
      torch::Tensor Ratio =
          torch::exp(NewLogp - torch::stack(Old).to(NewLogp.device()));
      torch::Tensor Surrogate = torch::min(
          Ratio * A, torch::clamp(Ratio, 1 - C.Clip, 1 + C.Clip) * A);
      torch::Tensor Loss =
          -Surrogate.mean() - C.EntropyCoef * Entropy.mean();
      Opt.zero_grad();
      Loss.backward();
      learn::TrainingFlops Training;
      torch::nn::utils::clip_grad_norm_(Params, C.MaxGradNorm);
      Opt.step();
      LastEpochLoss += Loss.item<double>() / Batches;
    }
  }
  return LastEpochLoss;
}

//===----------------------------------------------------------------------===//
// REINFORCE and zero-shot placement
//===----------------------------------------------------------------------===//

void minimize(const torch::Tensor &Loss, torch::optim::Optimizer &Opt,
              const std::vector<torch::Tensor> &Params, double MaxGradNorm) {
  Opt.zero_grad();
  Loss.backward();
  learn::TrainingFlops Training;
  torch::nn::utils::clip_grad_norm_(Params, MaxGradNorm);
  Opt.step();
}

void updateReinforce(const torch::Tensor &Logp, ArrayRef<float> Advantages,
                     const ReinforceConfig &C, torch::optim::Optimizer &Opt,
                     const std::vector<torch::Tensor> &Params) {
  torch::Tensor A =
      torch::tensor(std::vector<float>(Advantages.begin(), Advantages.end()))
          .to(Logp.device());
  minimize(-(A * Logp).mean(), Opt, Params, C.MaxGradNorm);
}

SearchOptions getSearchBudget(const SearchOptions &S) {
  SearchOptions Budget = S;
  if (!S.LoadFile.empty())
    Budget.Samples = S.FinetuneSamples ? S.FinetuneSamples : ZeroShotSamples;
  return Budget;
}

void placeZeroShot(PolicySearch &Search, int64_t Batch,
                   function_ref<void(int64_t, bool)> Draw) {
  Draw(1, /*Greedy=*/true);
  while (!Search.done())
    Draw(std::min<uint64_t>(Batch, Search.samplesLeft()), /*Greedy=*/false);
}

//===----------------------------------------------------------------------===//
// Saving and loading
//===----------------------------------------------------------------------===//

static const char *const MetaKey = "dp_meta";

Expected<SearchResult> finishSearch(PolicySearch &Search,
                                    torch::nn::Module &M,
                                    ArrayRef<int64_t> Meta,
                                    const SearchOptions &S, StringRef Placer) {
  std::ostringstream Bytes;
  if (!S.SaveFile.empty()) {
    try {
      torch::serialize::OutputArchive Archive;
      M.save(Archive);
      Archive.write(MetaKey, torch::tensor(std::vector<int64_t>(Meta.begin(),
                                                                Meta.end()),
                                           torch::kLong));
      Archive.save_to(Bytes);
    } catch (const std::exception &E) {
      return makeError("place{algo=" + Placer +
                       "}: cannot save the policy to '" + S.SaveFile +
                       "': " + E.what());
    }
  }
  Expected<SearchResult> R = Search.finish();
  if (R)
    R->SavedPolicy = Bytes.str();
  return R;
}

Error loadPolicy(torch::nn::Module &M, ArrayRef<int64_t> Meta,
                 ArrayRef<const char *> MetaNames, StringRef File,
                 StringRef Placer) {
  std::string Prefix = "place{algo=" + Placer.str() + "}: load=" + File.str();
  ErrorOr<std::unique_ptr<MemoryBuffer>> Buf = MemoryBuffer::getFile(File);
  if (!Buf)
    return makeError(Prefix + ": " + Buf.getError().message());
  torch::serialize::InputArchive Archive;
  torch::Tensor Saved;
  try {
    // Onto the host, wherever the policy was trained; the placer moves it.
    Archive.load_from((*Buf)->getBufferStart(), (*Buf)->getBufferSize(),
                      torch::Device(torch::kCPU));
    if (!Archive.try_read(MetaKey, Saved))
      return makeError(Prefix + ": not a policy saved by this placer");
  } catch (const std::exception &) {
    return makeError(Prefix + ": not a policy file (it does not read as a "
                              "libtorch archive)");
  }
  if (Saved.dim() != 1 || Saved.size(0) != int64_t(Meta.size()))
    return makeError(Prefix + ": not a policy saved by this placer");
  for (size_t I = 0; I != Meta.size(); ++I) {
    int64_t Was = Saved[I].item<int64_t>();
    if (Was != Meta[I])
      return makeError(Prefix + ": the policy was saved with " +
                       MetaNames[I] + " = " + std::to_string(Was) +
                       ", and this run has " + std::to_string(Meta[I]));
  }
  try {
    M.load(Archive);
  } catch (const c10::Error &E) {
    // Without the C++ backtrace that what() appends.
    return makeError(Prefix + ": the policy does not fit this placer: " +
                     E.what_without_backtrace());
  } catch (const std::exception &E) {
    return makeError(Prefix + ": the policy does not fit this placer: " +
                     E.what());
  }
  return Error::success();
}

} // namespace learn
} // namespace dp
