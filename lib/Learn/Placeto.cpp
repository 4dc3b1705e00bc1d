//===- Placeto.cpp - Iterative placement over a graph embedding, REINFORCE ===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
//
// Placeto (Addanki, Venkatakrishnan, Gupta, Mao, Alizadeh: "Placeto:
// Learning Generalizable Device Placement Algorithms for Distributed
// Machine Learning", NeurIPS 2019). An episode visits every unit once, in
// the task's order, and moves it to the device the policy picks given the
// current placement; the policy sees the graph through two-way message
// passing and pooled summaries of the current unit's ancestors,
// descendants and parallel units, so that its parameters do not depend on
// the graph and a trained policy places unseen graphs.
// docs/placers/placeto.md lists where dp follows the paper and where it
// departs from it.
//
//===----------------------------------------------------------------------===//

#include "FlopCount.h"
#include "Modules.h"
#include "PlacetoPolicy.h"
#include "PolicySearch.h"
#include "dp/Learn/Placers.h"
#include "dp/Support/Diagnostics.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace llvm;

namespace dp {

using namespace learn;

//===----------------------------------------------------------------------===//
// The search
//===----------------------------------------------------------------------===//

/// Appendix A.7 and the authors' hyper-parameters: Adam at 1e-3 decayed
/// linearly to a tenth, eight workers' episodes per update, eight rounds
/// of message passing, gradients clipped to a norm of 1.25.
static constexpr double DefaultLearningRate = 1e-3;
static constexpr uint64_t DefaultEpisodes = 8;
static constexpr uint64_t DefaultHops = 8;
static constexpr double MaxGradNorm = 1.25;
/// The entropy bonus, decayed linearly to 0 over the budget ("exploration
/// starts off high and decays gradually to a low value").
static constexpr double InitialEntropyCoef = 0.01;
static constexpr uint64_t DefaultSamples = 10000;
/// The memory penalty's scale c, seconds per GB over (appendix A.7).
static constexpr double DefaultMemoryPenalty = 2;
/// Units times states times hidden units of one chunk of an update's
/// forward and backward passes: 24 states of BERT-Base's 256 units at
/// width 9, whose activations (about 72 floats per unit, state and unit
/// of width: 16 MB) stay in the third-level cache. dp-bench-learn's
/// BM_Placeto ran faster per state at 24 states than at 112.
static constexpr int64_t ChunkFloats = int64_t(1) << 16;

double getPlacetoReward(const Evaluation &E, double MemoryPenalty,
                        double FailingSeconds) {
  double Over = std::max(0.0, E.PeakBytes - E.CapacityBytes);
  if (E.OutOfMemory && Over == 0)
    return -FailingSeconds;
  return -(E.StepSeconds + MemoryPenalty * Over * 1e-9);
}

/// reward=runtime (the paper's memory penalized run time) or reward=sqrt.
enum class RewardKind : uint8_t { Runtime, Sqrt };
static constexpr EnumEntry<RewardKind> RewardNames[] = {
    {"runtime", RewardKind::Runtime},
    {"sqrt", RewardKind::Sqrt},
};

namespace {
/// One Placeto run on a task: the episodes, the update, the features.
class PlacetoSearch {
public:
  PlacetoSearch(const LearnTask &T, PlacetoPolicy &Policy, int64_t Hidden,
                PolicySearch &S, bool Intermediate, RewardKind Reward,
                double MemoryPenalty)
      : T(T), Graph(T), Policy(Policy), Search(S), Intermediate(Intermediate),
        Reward(Reward), MemoryPenalty(MemoryPenalty), U(T.NumUnits),
        D(T.NumDevices), Hidden(Hidden), Initial(U, 0), StepOf(U, 0) {
    for (size_t I = 0; I != T.Order.size(); ++I)
      StepOf[T.Order[I]] = I;
  }

  /// Scores the initial placement, every unit on the first device (the
  /// authors' zero placement).
  void start() {
    Search.evaluate(Initial);
    InitialReward = reward(Search.lastEvaluation());
  }

  /// The reward of a placement scored \p E: the paper's (appendix A.7),
  /// minus r + c (m - M) when the peak m of the device with the largest
  /// peak memory utilization exceeds its memory M (getPlacetoReward); with
  /// reward=sqrt, the other placers' -sqrt(step time).
  double reward(const Evaluation &E) const {
    if (Reward == RewardKind::Sqrt)
      return -std::sqrt(E.OutOfMemory ? Search.getFailingSeconds()
                                      : E.StepSeconds);
    return getPlacetoReward(E, MemoryPenalty, Search.getFailingSeconds());
  }

  /// Runs \p Batch episodes side by side, sampling the devices (or, with
  /// \p Greedy, taking the likeliest), and scores the placement after
  /// every move (\p ScoreMoves, for intermediate rewards: each is a sample,
  /// simulated only when the move changed it) or the final ones.
  /// Returns false when the budget ran out before they ended.
  bool runEpisodes(int64_t Batch, std::mt19937_64 &Rng, bool Greedy,
                   bool ScoreMoves);

  /// One REINFORCE step on the episodes of the last runEpisodes, with the
  /// per-step baseline.
  void update(torch::optim::Adam &Opt, double EntropyCoef);

private:
  /// Writes the unit features of the state before step \p Step with
  /// placement \p P into state \p Col of \p X [In, U, N], rows \p Stride
  /// floats apart.
  void writeState(float *X, int64_t Stride, int64_t N, int64_t Col,
                  const std::vector<uint32_t> &P, size_t Step) const;
  /// Writes the pooling masks \p Rows [3, U] (UnitGraph::getPools) into
  /// state \p Col of \p Pools [3, U, N].
  void writePools(float *Pools, int64_t N, int64_t Col,
                  const float *Rows) const {
    for (int64_t I = 0; I != 3 * U; ++I)
      Pools[I * N + Col] = Rows[I];
  }
  /// The advantages [Steps x Batch] of the last episodes.
  std::vector<float> getAdvantages() const;

  const LearnTask &T;
  UnitGraph Graph;
  PlacetoPolicy &Policy;
  PolicySearch &Search;
  bool Intermediate;
  RewardKind Reward;
  double MemoryPenalty;
  int64_t U, D, Hidden;
  std::vector<uint32_t> Initial;
  double InitialReward = 0;
  /// Of the last episodes, step-major: the device chosen and the reward
  /// after the move (intermediate) or of the final placement.
  int64_t Batch = 0;
  std::vector<int64_t> Actions;
  std::vector<double> Rewards;
  /// The step at which each unit is visited.
  std::vector<size_t> StepOf;
  /// The policy's buffers, kept from one forward pass to the next.
  PlacetoActivations Activations;
};
} // namespace

void PlacetoSearch::writeState(float *X, int64_t Stride, int64_t N, int64_t Col,
                               const std::vector<uint32_t> &P,
                               size_t Step) const {
  uint32_t Current = T.Order[Step];
  int64_t F = T.NumFeatures;
  for (int64_t V = 0; V != U; ++V) {
    float *At = X + V * N + Col;
    const float *Static = &T.Features[size_t(V) * F];
    for (int64_t K = 0; K != F + D + 2; ++K)
      At[K * Stride] = K < F ? Static[K] : 0.0f;
    At[(F + P[V]) * Stride] = 1;
    At[(F + D) * Stride] = StepOf[V] < Step;
    At[(F + D + 1) * Stride] = uint32_t(V) == Current;
  }
}

bool PlacetoSearch::runEpisodes(int64_t NewBatch, std::mt19937_64 &Rng,
                                bool Greedy, bool ScoreMoves) {
  torch::NoGradGuard NoGrad;
  Batch = NewBatch;
  size_t Steps = T.Order.size();
  Actions.assign(Steps * Batch, 0);
  Rewards.assign(Steps * Batch, 0);
  std::vector<std::vector<uint32_t>> P(Batch, Initial);
  std::vector<double> Last(Batch, InitialReward);
  std::vector<bool> Scored(Batch, false);
  // Every step's states overwrite the inputs of the step before.
  PlacetoActivations &A = Activations;
  Policy->prepare(A, Batch, Graph);
  std::vector<float> Rows(3 * size_t(U));
  for (size_t Step = 0; Step != Steps; ++Step) {
    uint32_t Current = T.Order[Step];
    Graph.getPools(Current, Rows.data());
    for (int64_t B = 0; B != Batch; ++B) {
      writeState(A.Input.data(), A.Stride, Batch, B, P[B], Step);
      writePools(A.Pools.data(), Batch, B, Rows.data());
      A.Current[B] = Current;
    }
    torch::Tensor Logits = Policy->forward(A, Graph, /*Keep=*/false);
    torch::Tensor Probs = torch::softmax(Logits, 1).contiguous();
    const float *Prob = Probs.data_ptr<float>();
    for (int64_t B = 0; B != Batch; ++B) {
      int64_t Device = sampleIndex(Prob + B * D, D, Rng, Greedy);
      Actions[Step * Batch + B] = Device;
      P[B][Current] = uint32_t(Device);
      if (ScoreMoves) {
        // Every move is a sample of the budget, so that the budget bounds
        // the episodes whatever the policy does; a unit that stays where
        // it is leaves the placement as it was, which the search scores
        // from memory.
        if (Search.done())
          return false;
        Search.evaluate(P[B]);
        Last[B] = reward(Search.lastEvaluation());
        Scored[B] = true;
      }
      Rewards[Step * Batch + B] = Last[B];
    }
  }
  // Without intermediate rewards, the final placements (with them, every
  // episode of at least one step has been scored at each move).
  for (int64_t B = 0; B != Batch; ++B) {
    if (Scored[B])
      continue;
    if (Search.done())
      return false;
    Search.evaluate(P[B]);
    double R = reward(Search.lastEvaluation());
    if (!ScoreMoves)
      for (size_t Step = 0; Step != Steps; ++Step)
        Rewards[Step * Batch + B] = R;
  }
  return true;
}

std::vector<float> PlacetoSearch::getAdvantages() const {
  size_t Steps = T.Order.size();
  std::vector<float> Adv(Steps * Batch);
  if (!Steps)
    return Adv;
  // The return from step t: the final reward, or with intermediate
  // rewards the improvement from the placement before step t to the last
  // (undiscounted, as the authors' code).
  std::vector<double> Return(Steps * Batch);
  for (int64_t B = 0; B != Batch; ++B) {
    double Final = Rewards[(Steps - 1) * Batch + B];
    for (size_t Step = 0; Step != Steps; ++Step) {
      double Before = Step ? Rewards[(Step - 1) * Batch + B] : InitialReward;
      Return[Step * Batch + B] = Intermediate ? Final - Before : Final;
    }
  }
  // Baseline: each step's mean return over the batch (appendix A.1); the
  // advantages are then scaled to unit deviation.
  double SumSq = 0;
  for (size_t Step = 0; Step != Steps; ++Step) {
    double Mean = 0;
    for (int64_t B = 0; B != Batch; ++B)
      Mean += Return[Step * Batch + B];
    Mean /= Batch;
    for (int64_t B = 0; B != Batch; ++B) {
      double A = Return[Step * Batch + B] - Mean;
      Return[Step * Batch + B] = A;
      SumSq += A * A;
    }
  }
  double Std = std::sqrt(SumSq / Return.size());
  double Scale = Std > 1e-9 ? 1 / Std : 0;
  for (size_t I = 0; I != Return.size(); ++I)
    Adv[I] = float(Return[I] * Scale);
  return Adv;
}

void PlacetoSearch::update(torch::optim::Adam &Opt, double EntropyCoef) {
  size_t Steps = T.Order.size();
  if (!Steps)
    return;
  std::vector<float> Adv = getAdvantages();
  int64_t ChunkSteps = std::max<int64_t>(1, ChunkFloats / (U * Batch * Hidden));
  double Total = double(Steps) * Batch;

  Opt.zero_grad();
  // Replays the episodes chunk by chunk: the states of steps
  // [Begin, End), step-major.
  std::vector<std::vector<uint32_t>> P(Batch, Initial);
  std::vector<float> Rows(3 * size_t(U));
  PlacetoActivations &Act = Activations;
  for (size_t Begin = 0; Begin < Steps; Begin += ChunkSteps) {
    size_t End = std::min(Steps, Begin + size_t(ChunkSteps));
    int64_t N = int64_t(End - Begin) * Batch;
    Policy->prepare(Act, N, Graph);
    for (size_t Step = Begin; Step != End; ++Step) {
      uint32_t Cur = T.Order[Step];
      Graph.getPools(Cur, Rows.data());
      for (int64_t B = 0; B != Batch; ++B) {
        int64_t Col = int64_t(Step - Begin) * Batch + B;
        writeState(Act.Input.data(), Act.Stride, N, Col, P[B], Step);
        writePools(Act.Pools.data(), N, Col, Rows.data());
        Act.Current[Col] = Cur;
        P[B][Cur] = uint32_t(Actions[Step * Batch + B]);
      }
    }
    // The loss is differentiated by autograd down to the logits, the
    // network by its own backward pass.
    torch::Tensor Logits = Policy->forward(Act, Graph).requires_grad_();
    torch::Tensor Logp = torch::log_softmax(Logits, 1);
    torch::Tensor Chosen =
        torch::from_blob(&Actions[Begin * Batch], {N}, torch::kLong);
    torch::Tensor Taken = Logp.gather(1, Chosen.unsqueeze(1)).squeeze(1);
    torch::Tensor Entropy = -(Logp.exp() * Logp).sum(1);
    torch::Tensor A = torch::from_blob(&Adv[Begin * Batch], {N});
    torch::Tensor Loss =
        -((A * Taken).sum() + EntropyCoef * Entropy.sum()) / Total;
    Loss.backward();
    Policy->backward(Act, Logits.grad(), Graph);
  }
  learn::TrainingFlops Training;
  torch::nn::utils::clip_grad_norm_(Policy->parameters(), MaxGradNorm);
  Opt.step();
}

/// How much of the budget is spent, in [0, 1].
static double getProgress(const PolicySearch &Search,
                          const SearchOptions &Budget) {
  double Done = 0;
  uint64_t Left = Search.samplesLeft();
  if (Left != std::numeric_limits<uint64_t>::max())
    Done = double(Search.getSamples()) / (Search.getSamples() + Left);
  if (Budget.Seconds > 0)
    Done = std::max(Done, Search.elapsed() / Budget.Seconds);
  return std::min(1.0, Done);
}

Expected<SearchResult> searchPlaceto(const LearnTask &T, const SearchOptions &S,
                                     LearnOptions Opts) {
  const char *Name = "placeto";
  int64_t In = T.NumFeatures + T.NumDevices + 2;
  uint64_t Episodes = DefaultEpisodes, Hidden = In, Hops = DefaultHops;
  double LearningRate = DefaultLearningRate;
  double MemoryPenalty = DefaultMemoryPenalty;
  RewardKind Reward = RewardKind::Runtime;
  bool Intermediate = true;
  OptionTable Table = makePlacerOptions(Name);
  Table.integer("episodes", Episodes)
      .integer("hidden", Hidden)
      .integer("hops", Hops)
      .flag("intermediate", Intermediate)
      .choice<RewardKind>("reward", Reward, RewardNames)
      .number("memory-penalty", MemoryPenalty, "X",
              "a non-negative number of seconds per GB",
              [](double X) { return X >= 0 && std::isfinite(X); })
      .check([&](const OptionTable &T) -> Error {
        if (Episodes >= 2)
          return Error::success();
        return T.makeError("episodes must be at least 2 (the baseline of a "
                           "step is its mean return over an update's "
                           "episodes), not '" +
                           std::to_string(Episodes) + "'");
      });
  addLearningRate(Table, LearningRate);
  if (Error E = parsePlacerOptions(Table, Opts))
    return std::move(E);

  // One thread unless told otherwise: the tensors are a few thousand
  // numbers, and more threads cost more than they share.
  std::mt19937_64 Rng = setUpTorch(S.Threads ? S.Threads : 1, S.Seed);
  PlacetoPolicy Policy(In, Hidden, T.NumDevices, Hops);
  const std::vector<int64_t> Meta = {T.NumFeatures, int64_t(T.NumDevices),
                                     int64_t(Hidden), int64_t(Hops)};
  const std::vector<const char *> MetaNames = {"features per unit", "devices",
                                               "hidden", "hops"};
  bool Loaded = !S.LoadFile.empty();
  if (Loaded)
    if (Error E = loadPolicy(*Policy, Meta, MetaNames, S.LoadFile, Name))
      return std::move(E);
  SearchOptions Budget = getSearchBudget(S);
  PolicySearch Search(T, Budget, Name, DefaultSamples);
  bool ScoreMoves = Intermediate;
  PlacetoSearch Placeto(T, Policy, Hidden, Search, ScoreMoves, Reward,
                        MemoryPenalty);

  if (Loaded && !S.FinetuneSamples) {
    // Zero-shot: no rewards to learn from, so only the episodes' final
    // placements are scored.
    placeZeroShot(Search, Episodes, [&](int64_t Batch, bool Greedy) {
      Placeto.runEpisodes(Batch, Rng, Greedy, /*ScoreMoves=*/false);
    });
  } else {
    Placeto.start();
    torch::optim::Adam Opt(Policy->parameters(),
                           torch::optim::AdamOptions(LearningRate));
    while (!Search.done()) {
      int64_t Batch = int64_t(Episodes);
      if (!ScoreMoves)
        Batch = std::max<int64_t>(
            1, std::min<uint64_t>(Batch, Search.samplesLeft()));
      if (!Placeto.runEpisodes(Batch, Rng, /*Greedy=*/false, ScoreMoves) ||
          Search.done() || Batch < 2)
        break;
      // Learning rate from lr down to lr / 10, entropy bonus to 0, both
      // linearly over the budget (appendix A.7).
      double Progress = getProgress(Search, Budget);
      static_cast<torch::optim::AdamOptions &>(Opt.param_groups()[0].options())
          .lr(LearningRate * (1 - 0.9 * Progress));
      Placeto.update(Opt, InitialEntropyCoef * (1 - Progress));
    }
  }

  return finishSearch(Search, *Policy, Meta, S, Name);
}

} // namespace dp
