//===- LearnBench.cpp - The seq2seq placers' network, fused or not -------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Times the segment seq2seq network that Mars, ColocRL, the Hierarchical
/// Planner and EAGLE share (lib/Learn/Modules.h) at Mars's shapes in
/// bench/run.py (256 units, hidden 128, segments of 128, 5 devices, one
/// thread): drawing a batch of 20 placements, and one PPO mini-batch (the
/// log-probabilities of 5 placements and their gradients), with the
/// recurrence fused (Recurrence.h) and as one operator per step, for each
/// attention. Prints the ratio of the two, measured side by side in this
/// run, and the fused form's GFLOP/s against a 1024^3 matrix product's on
/// the same thread: how far the placers are from what the core can do.
/// Also times a step's product with the weights laid out once
/// (PackedProduct.h) against libtorch's, at Mars's and EAGLE's shapes, a
/// step's attention scores (AdditiveScores.h) by the portable loop, the
/// AVX-512 loop that takes every tanh and the best kernel (the product
/// form), and Placeto's graph network (PlacetoPolicy.h) fused against its
/// libtorch operators.
///
//===----------------------------------------------------------------------===//

#include "AdditiveScores.h"
#include "BenchReporter.h"
#include "Modules.h"
#include "PackedProduct.h"
#include "PlacetoPolicy.h"
#include "Recurrence.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <random>
#include <string>

using namespace dp;
using namespace dp::learn;

namespace {

constexpr int64_t Units = 256, In = 256, Hidden = 128, Segment = 128,
                  Devices = 5, SampleBatch = 20, UpdateBatch = 5;

const AttentionKind Kinds[] = {AttentionKind::Before, AttentionKind::After,
                               AttentionKind::Self};
const char *const KindNames[] = {"before", "after", "self"};

SegmentSeq2Seq makeNet(int64_t Kind, bool Fused) {
  torch::manual_seed(1);
  SegmentSeq2Seq Net(In, Hidden, Devices, Segment, Kinds[Kind]);
  Net->setFused(Fused);
  return Net;
}

void BM_Sample(benchmark::State &State) {
  SegmentSeq2Seq Net = makeNet(State.range(0), State.range(1));
  torch::Tensor Seq = torch::randn({Units, In});
  std::mt19937_64 Rng(1);
  for (auto _ : State) {
    torch::NoGradGuard NoGrad;
    benchmark::DoNotOptimize(Net->sample(Net->encode(Seq), SampleBatch, Rng));
  }
}

void BM_Update(benchmark::State &State) {
  SegmentSeq2Seq Net = makeNet(State.range(0), State.range(1));
  torch::Tensor Seq = torch::randn({Units, In});
  torch::Tensor Actions =
      torch::randint(0, Devices, {UpdateBatch, Units}, torch::kLong);
  for (auto _ : State) {
    Net->zero_grad();
    auto [Logp, Entropy] = Net->evaluate(Net->encode(Seq), Actions);
    (Logp.mean() + 0.001 * Entropy.mean()).backward();
  }
}

void BM_Matmul(benchmark::State &State) {
  torch::Tensor A = torch::randn({1024, 1024}), B = torch::randn({1024, 1024});
  for (auto _ : State)
    benchmark::DoNotOptimize(torch::mm(A, B));
}

/// A step's product, rows x K by K x N: Mars's decoder (hidden 128) in an
/// update and in sampling, EAGLE's (hidden 512, 10 placements) forward and
/// backward.
struct StepShape {
  int64_t Rows, K, N;
};
const StepShape StepShapes[] = {
    {5, 128, 512}, {20, 128, 512}, {10, 512, 2048}, {10, 2048, 512}};

/// A step's product by libtorch's (OpenBLAS) matrix product (range(1) =
/// 0) or by the weights laid out once (1, PackedProduct.h), as the fused
/// recurrence multiplies at every step.
void BM_StepProduct(benchmark::State &State) {
  StepShape S = StepShapes[State.range(0)];
  torch::Tensor X = torch::randn({S.Rows, S.K}), W = torch::randn({S.K, S.N});
  torch::Tensor Y = torch::zeros({S.Rows, S.N});
  if (State.range(1)) {
    PackedMatrix P(W, S.Rows);
    for (auto _ : State)
      P.multiply(Y, X, /*Accumulate=*/true);
  } else {
    for (auto _ : State)
      Y.addmm_(X, W);
  }
  benchmark::DoNotOptimize(Y.data_ptr<float>());
}

/// The attention's scores (AdditiveScores.h) of a step at Mars's shapes,
/// forward (range 0 = 0) or backward, by the portable loop (range 1 = 0),
/// the AVX-512 loop that takes every tanh (1) or the best kernel of this
/// CPU (2), with the keys prepared once, as the recurrence prepares them
/// for a segment.
const ScoreKernel BenchKernels[] = {ScoreKernel::Portable, ScoreKernel::Tanh,
                                    ScoreKernel::Best};
void BM_Scores(benchmark::State &State) {
  bool Backward = State.range(0);
  ScoreKernel Kernel = BenchKernels[State.range(1)];
  const int64_t B = SampleBatch, Ls = Segment, H = Hidden;
  torch::Tensor K = torch::randn({1, Ls, H}), Q = torch::randn({B, H}),
                V = torch::randn({H}), S = torch::randn({B, Ls});
  torch::Tensor DV = torch::zeros({H}), DK = torch::zeros({1, Ls, H}),
                DQ = torch::zeros({B, H});
  ScoreKeys Keys(K.data_ptr<float>(), 1, Ls, H, Kernel);
  for (auto _ : State) {
    if (Backward)
      additiveScoresBackward(Keys, Q.data_ptr<float>(), V.data_ptr<float>(),
                             S.data_ptr<float>(), DV.data_ptr<float>(),
                             DK.data_ptr<float>(), DQ.data_ptr<float>(), B);
    else
      additiveScores(Keys, Q.data_ptr<float>(), V.data_ptr<float>(),
                     S.data_ptr<float>(), B);
  }
  benchmark::DoNotOptimize(S.data_ptr<float>());
  benchmark::DoNotOptimize(DQ.data_ptr<float>());
}

/// Placeto's network at BERT-Base's shapes on p100x4 (bench/placer_speed.py):
/// 256 units, features and hidden width 9, 8 hops, 5 devices, on a DAG of
/// 2 parents per unit on average; 8 states (a step of 8 episodes) drawn
/// without gradients, or an update's chunk of states forward and backward.
constexpr int64_t PlacetoIn = 9, PlacetoHops = 8, PlacetoSampleStates = 8;
const int64_t PlacetoUpdateStates[] = {24, 112};

LearnTask makePlacetoTask() {
  LearnTask T;
  T.NumUnits = Units;
  T.NumDevices = Devices;
  std::mt19937_64 Rng(1);
  for (uint32_t V = 1; V != Units; ++V)
    for (uint32_t K = 0, Parents = 1 + V % 3; K != Parents && K != V; ++K)
      T.Edges.push_back(
          {V - 1 - uint32_t(Rng() % std::min<uint32_t>(V, 16)), V, 0});
  std::sort(T.Edges.begin(), T.Edges.end(), [](const auto &A, const auto &B) {
    return std::make_pair(A.From, A.To) < std::make_pair(B.From, B.To);
  });
  T.Edges.erase(std::unique(T.Edges.begin(), T.Edges.end(),
                            [](const auto &A, const auto &B) {
                              return A.From == B.From && A.To == B.To;
                            }),
                T.Edges.end());
  return T;
}

/// range(0): 0 the libtorch operators, 1 fused; range(1): 0 drawing, 1-2
/// an update of PlacetoUpdateStates[range(1) - 1] states.
void BM_Placeto(benchmark::State &State) {
  bool Fused = State.range(0);
  int64_t N = State.range(1) ? PlacetoUpdateStates[State.range(1) - 1]
                             : PlacetoSampleStates;
  LearnTask T = makePlacetoTask();
  UnitGraph G(T);
  torch::manual_seed(1);
  PlacetoPolicy Net(PlacetoIn, PlacetoIn, Devices, PlacetoHops);
  torch::Tensor X = torch::rand({PlacetoIn, Units, N});
  torch::Tensor Pools = torch::randint(0, 2, {3, Units, N}).to(torch::kFloat);
  torch::Tensor Current = torch::randint(0, Units, {N}, torch::kLong);
  torch::Tensor Actions = torch::randint(0, Devices, {N, 1}, torch::kLong);
  PlacetoActivations A;
  Net->prepare(A, X, Pools, Current, G);
  torch::Tensor XOps = X.permute({1, 2, 0}).contiguous();
  torch::Tensor PoolsOps = Pools.permute({0, 2, 1}).contiguous();
  bool Update = State.range(1);
  for (auto _ : State) {
    torch::AutoGradMode Grad(Update);
    Net->zero_grad();
    torch::Tensor Logits =
        Fused ? Net->forward(A, G, /*Keep=*/Update).requires_grad_(Update)
              : Net->forwardOperators(XOps, G, Current, PoolsOps);
    if (!Update) {
      benchmark::DoNotOptimize(Logits.data_ptr<float>());
      continue;
    }
    torch::log_softmax(Logits, 1).gather(1, Actions).sum().backward();
    if (Fused)
      Net->backward(A, Logits.grad(), G);
  }
}

/// Floating-point work of encoding the sequence and running the decoder
/// over it for \p Batch placements, forward (and with \p Backward, the
/// backward pass too: twice the forward's products).
double countFlops(int64_t Kind, int64_t Batch, bool Backward) {
  bool Decoder = Kinds[Kind] != AttentionKind::Self;
  bool Gates = Kinds[Kind] == AttentionKind::Before;
  double Products = 2.0 * Units * In * 4 * Hidden * 2         // encoder inputs
                    + 2.0 * Units * 2 * Hidden * 4 * Hidden   // decoder inputs
                    + 2.0 * Units * Batch * Hidden * Devices; // logits
  if (Decoder)
    Products += 2.0 * Units * 2 * Hidden * Hidden; // keys
  if (Gates)
    Products += 2.0 * Units * 2 * Hidden * 4 * Hidden; // memory gates
  if (Kinds[Kind] == AttentionKind::After)
    Products +=
        2.0 * Units * Batch * (Segment * 2 * Hidden + 3 * Hidden * Hidden);
  if (Kinds[Kind] == AttentionKind::Self)
    Products +=
        2.0 * Units * (2 * 2 * Hidden * Hidden + 2 * Segment * 2 * Hidden);
  RecurrenceFlops Enc = countRecurrenceFlops(1, Hidden, 0, false);
  RecurrenceFlops Dec =
      countRecurrenceFlops(Batch, Hidden, Decoder ? Segment : 0, Gates);
  double Forward = Products + Units * (2 * Enc.Forward + Dec.Forward);
  if (!Backward)
    return Forward;
  return Forward + 2 * Products + Units * (2 * Enc.Backward + Dec.Backward);
}

class RatioReporter : public SecondsReporter {
public:
  void Finalize() override {
    ConsoleReporter::Finalize();
    const double *Mm = seconds("BM_Matmul");
    double Peak = Mm ? 2.0 * 1024 * 1024 * 1024 / *Mm / 1e9 : 0;
    std::printf("\n1024^3 matrix product: %.1f GFLOP/s on one thread\n", Peak);
    std::printf("Mars's shapes: %lld units, hidden %lld, segments of %lld, "
                "%lld devices\n",
                (long long)Units, (long long)Hidden, (long long)Segment,
                (long long)Devices);
    for (size_t I = 0; I != std::size(StepShapes); ++I) {
      StepShape S = StepShapes[I];
      std::string Base = "BM_StepProduct/" + std::to_string(I) + "/";
      const double *Packed = seconds(Base + "1"), *Blas = seconds(Base + "0");
      if (!Packed || !Blas)
        continue;
      double Flops = 2.0 * S.Rows * S.K * S.N / 1e9;
      std::printf("step product %2lld x %4lld by %4lld x %4lld: libtorch "
                  "%5.1f GFLOP/s, laid out once %5.1f GFLOP/s, %.2fx\n",
                  (long long)S.Rows, (long long)S.K, (long long)S.K,
                  (long long)S.N, Flops / *Blas, Flops / *Packed,
                  *Blas / *Packed);
    }
    for (int Backward = 0; Backward != 2; ++Backward) {
      std::string Base = "BM_Scores/" + std::to_string(Backward) + "/";
      const double *Portable = seconds(Base + "0"),
                   *Tanh = seconds(Base + "1"), *Best = seconds(Base + "2");
      if (!Best || !Tanh || !Portable)
        continue;
      std::printf("attention scores %s, %lld queries x %lld keys x %lld: "
                  "portable loop %6.1f us, %s %6.1f us (%.2fx), best %6.1f "
                  "us (%.2fx)\n",
                  Backward ? "backward" : "forward ", (long long)SampleBatch,
                  (long long)Segment, (long long)Hidden, *Portable * 1e6,
                  hasVectorScores() ? "AVX-512 tanh" : "(the same)",
                  *Tanh * 1e6, *Portable / *Tanh, *Best * 1e6,
                  *Portable / *Best);
    }
    LearnTask T = makePlacetoTask();
    UnitGraph G(T);
    PlacetoPolicy Net(PlacetoIn, PlacetoIn, Devices, PlacetoHops);
    for (int64_t Kind = 0; Kind != 3; ++Kind) {
      std::string Base = "BM_Placeto/";
      const double *Fused = seconds(Base + "1/" + std::to_string(Kind)),
                   *Ops = seconds(Base + "0/" + std::to_string(Kind));
      if (!Fused || !Ops)
        continue;
      int64_t N = Kind ? PlacetoUpdateStates[Kind - 1] : PlacetoSampleStates;
      double Flops = Net->countForwardFlops(N, G) +
                     (Kind ? Net->countBackwardFlops(N, G) : 0);
      double GFlops = Flops / *Fused / 1e9;
      std::printf("placeto %-6s (%3lld states, %zu edges): fused %7.3f ms, "
                  "operators %7.3f ms, %.2fx; fused %.1f GFLOP/s, %.0f %% of "
                  "the matrix product's\n",
                  Kind ? "update" : "sample", (long long)N, T.Edges.size(),
                  *Fused * 1e3, *Ops * 1e3, *Ops / *Fused, GFlops,
                  Peak ? 100 * GFlops / Peak : 0.0);
    }
    for (const char *What : {"Sample", "Update"}) {
      bool Update = What[0] == 'U';
      int64_t Batch = Update ? UpdateBatch : SampleBatch;
      for (int64_t Kind = 0; Kind != 3; ++Kind) {
        std::string Base =
            std::string("BM_") + What + "/" + std::to_string(Kind) + "/";
        const double *Fused = seconds(Base + "1"), *Ops = seconds(Base + "0");
        if (!Fused || !Ops)
          continue;
        double GFlops = countFlops(Kind, Batch, Update) / *Fused / 1e9;
        std::printf("%-6s attention=%-6s (%2lld placements): fused %8.2f ms, "
                    "operators %8.2f ms, %.2fx; fused %.1f GFLOP/s, %.0f %% "
                    "of the matrix product's\n",
                    Update ? "update" : "sample", KindNames[Kind],
                    (long long)Batch, *Fused * 1e3, *Ops * 1e3, *Ops / *Fused,
                    GFlops, Peak ? 100 * GFlops / Peak : 0.0);
      }
    }
  }
};

} // namespace

int main(int argc, char **argv) {
  benchmark::Initialize(&argc, argv);
  setUpTorch(/*Threads=*/1, /*Seed=*/1);
  for (const char *What : {"BM_Sample", "BM_Update"})
    benchmark::RegisterBenchmark(What, What[3] == 'S' ? BM_Sample : BM_Update)
        ->ArgsProduct({{0, 1, 2}, {0, 1}})
        ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("BM_StepProduct", BM_StepProduct)
      ->ArgsProduct({{0, 1, 2, 3}, {0, 1}})
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("BM_Scores", BM_Scores)
      ->ArgsProduct({{0, 1}, {0, 1, 2}})
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("BM_Placeto", BM_Placeto)
      ->ArgsProduct({{0, 1}, {0, 1, 2}})
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("BM_Matmul", BM_Matmul)
      ->Unit(benchmark::kMillisecond);
  RatioReporter Reporter;
  benchmark::RunSpecifiedBenchmarks(&Reporter);
  benchmark::Shutdown();
  return 0;
}
