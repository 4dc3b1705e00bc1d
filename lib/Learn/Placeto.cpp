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
#include "PolicySearch.h"
#include "dp/Learn/Placers.h"
#include "dp/Support/Diagnostics.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace llvm;

namespace dp {

using namespace learn;

namespace {

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
  /// Sparse [U, U]: row v sums the messages of v's parents (Down) or of
  /// its children (Up).
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

/// Placeto's policy (section 2.2): per-unit features, two-way message
/// passing, three pooled summaries and the current unit's embedding, a
/// two-layer classifier over the devices.
class PlacetoPolicyImpl : public torch::nn::Module {
public:
  PlacetoPolicyImpl(int64_t In, int64_t Hidden, int64_t Devices, int64_t Hops);

  /// The device logits [N, D] of N states: \p X [U, N, In] their unit
  /// features (unit-major), \p Current [N] the unit each decides,
  /// \p Pools [3, N, U] the pooling masks of that unit.
  torch::Tensor forward(const torch::Tensor &X, const UnitGraph &G,
                        const torch::Tensor &Current,
                        const torch::Tensor &Pools);

private:
  /// k rounds of x <- relu(g(A relu(f(x)))) masked by \p Has, plus the
  /// unit's own transform, over adjacency \p A.
  torch::Tensor propagate(const torch::Tensor &Self, const torch::Tensor &A,
                          const torch::Tensor &Has, Aggregator &Agg);

  int64_t Hops;
  torch::nn::Linear NodeTransform{nullptr};
  Aggregator Down{nullptr}, Up{nullptr};
  Aggregator Parents{nullptr}, Children{nullptr}, Parallel{nullptr};
  torch::nn::Linear Classifier{nullptr}, Output{nullptr};
};
TORCH_MODULE(PlacetoPolicy);

} // namespace

/// The adjacency [U, U] whose row To holds a 1 at From for every edge
/// (From, To) of \p Edges (as given or \p Reversed).
static torch::Tensor getMessageMatrix(const LearnTask &T, bool Reversed) {
  int64_t N = T.Edges.size(), U = T.NumUnits;
  torch::Tensor Indices = torch::empty({2, N}, torch::kLong);
  auto Idx = Indices.accessor<int64_t, 2>();
  for (int64_t K = 0; K != N; ++K) {
    const LearnTask::Edge &E = T.Edges[K];
    Idx[0][K] = Reversed ? E.From : E.To;
    Idx[1][K] = Reversed ? E.To : E.From;
  }
  return torch::sparse_coo_tensor(Indices, torch::ones({N}), {U, U}).coalesce();
}

UnitGraph::UnitGraph(const LearnTask &T) {
  unsigned U = T.NumUnits;
  Down = getMessageMatrix(T, /*Reversed=*/false);
  Up = getMessageMatrix(T, /*Reversed=*/true);
  std::vector<std::vector<uint32_t>> Succ(U), Pred(U);
  for (const LearnTask::Edge &E : T.Edges) {
    Succ[E.From].push_back(E.To);
    Pred[E.To].push_back(E.From);
  }
  std::vector<float> Has(2 * size_t(U));
  for (unsigned V = 0; V != U; ++V) {
    Has[V] = !Pred[V].empty();
    Has[U + V] = !Succ[V].empty();
  }
  torch::Tensor Flags = torch::tensor(Has).view({2, int64_t(U), 1, 1});
  HasParents = Flags[0];
  HasChildren = Flags[1];

  // Breadth-first search from every unit, both ways. Unit graphs may have
  // cycles (colocation groups), so a unit can be both an ancestor and a
  // descendant of another; it then counts in both summaries.
  Words = (U + 63) / 64;
  Ancestors.assign(size_t(U) * Words, 0);
  Descendants.assign(size_t(U) * Words, 0);
  std::vector<uint32_t> Queue;
  Queue.reserve(U);
  auto Search = [&](uint32_t From,
                    const std::vector<std::vector<uint32_t>> &Adj,
                    uint64_t *Bits) {
    Queue.assign(1, From);
    for (size_t Head = 0; Head != Queue.size(); ++Head)
      for (uint32_t W : Adj[Queue[Head]]) {
        uint64_t Mask = uint64_t(1) << (W % 64);
        if (Bits[W / 64] & Mask)
          continue;
        Bits[W / 64] |= Mask;
        Queue.push_back(W);
      }
  };
  for (unsigned V = 0; V != U; ++V) {
    Search(V, Pred, &Ancestors[size_t(V) * Words]);
    Search(V, Succ, &Descendants[size_t(V) * Words]);
  }
}

void UnitGraph::getPools(uint32_t V, float *Rows) const {
  size_t U = HasParents.size(0);
  const uint64_t *A = &Ancestors[V * Words], *D = &Descendants[V * Words];
  for (size_t W = 0; W != U; ++W) {
    bool IsAncestor = (A[W / 64] >> (W % 64)) & 1;
    bool IsDescendant = (D[W / 64] >> (W % 64)) & 1;
    bool Self = W == V;
    Rows[W] = IsAncestor && !Self;
    Rows[U + W] = IsDescendant && !Self;
    Rows[2 * U + W] = !IsAncestor && !IsDescendant && !Self;
  }
}

PlacetoPolicyImpl::PlacetoPolicyImpl(int64_t In, int64_t Hidden,
                                     int64_t Devices, int64_t Hops)
    : Hops(Hops) {
  NodeTransform =
      register_module("node_transform", torch::nn::Linear(In, Hidden));
  Down = register_module("down", Aggregator(Hidden));
  Up = register_module("up", Aggregator(Hidden));
  Parents = register_module("parents", Aggregator(2 * Hidden));
  Children = register_module("children", Aggregator(2 * Hidden));
  Parallel = register_module("parallel", Aggregator(2 * Hidden));
  // The classifier's hidden layer is as wide as its input, as in the
  // authors' code.
  Classifier =
      register_module("classifier", torch::nn::Linear(8 * Hidden, 8 * Hidden));
  Output = register_module("output", torch::nn::Linear(8 * Hidden, Devices));
}

torch::Tensor PlacetoPolicyImpl::propagate(const torch::Tensor &Self,
                                           const torch::Tensor &A,
                                           const torch::Tensor &Has,
                                           Aggregator &Agg) {
  int64_t U = Self.size(0), N = Self.size(1), H = Self.size(2);
  torch::Tensor X = Self;
  for (int64_t K = 0; K != Hops; ++K) {
    torch::Tensor Messages =
        torch::relu(Agg->F->forward(X)).reshape({U, N * H});
    torch::Tensor Sums = torch::mm(A, Messages).view({U, N, H});
    X = torch::addcmul(Self, torch::relu(Agg->G->forward(Sums)), Has);
  }
  return X;
}

torch::Tensor PlacetoPolicyImpl::forward(const torch::Tensor &X,
                                         const UnitGraph &G,
                                         const torch::Tensor &Current,
                                         const torch::Tensor &Pools) {
  int64_t N = X.size(1);
  torch::Tensor Self = NodeTransform->forward(X);
  torch::Tensor Emb = torch::cat({propagate(Self, G.Down, G.HasParents, Down),
                                  propagate(Self, G.Up, G.HasChildren, Up)},
                                 2); // [U, N, 2H]
  Aggregator *Pooled[] = {&Parents, &Children, &Parallel};
  std::vector<torch::Tensor> Parts;
  for (int64_t K = 0; K != 3; ++K) {
    // [N, 1, U] x [N, U, 2H]: each state sums over its own set.
    torch::Tensor F =
        torch::relu((*Pooled[K])->F->forward(Emb)).transpose(0, 1);
    torch::Tensor Sum = torch::bmm(Pools[K].unsqueeze(1), F).squeeze(1);
    Parts.push_back(torch::relu((*Pooled[K])->G->forward(Sum)));
  }
  Parts.push_back(Emb.index({Current, torch::arange(N)}));
  return Output->forward(
      torch::relu(Classifier->forward(torch::cat(Parts, 1))));
}

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
/// forward and backward passes (about 140 MB of activations).
static constexpr int64_t ChunkFloats = int64_t(1) << 18;

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
        D(T.NumDevices), In(T.NumFeatures + D + 2), Hidden(Hidden),
        Initial(U, 0), StepOf(U, 0) {
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
  /// placement \p P into column \p Col of \p X, unit-major [U, N, In].
  void writeState(float *X, int64_t N, int64_t Col,
                  const std::vector<uint32_t> &P, size_t Step) const;
  /// The advantages [Steps x Batch] of the last episodes.
  std::vector<float> getAdvantages() const;

  const LearnTask &T;
  UnitGraph Graph;
  PlacetoPolicy &Policy;
  PolicySearch &Search;
  bool Intermediate;
  RewardKind Reward;
  double MemoryPenalty;
  int64_t U, D, In, Hidden;
  std::vector<uint32_t> Initial;
  double InitialReward = 0;
  /// Of the last episodes, step-major: the device chosen and the reward
  /// after the move (intermediate) or of the final placement.
  int64_t Batch = 0;
  std::vector<int64_t> Actions;
  std::vector<double> Rewards;
  /// The step at which each unit is visited.
  std::vector<size_t> StepOf;
};
} // namespace

void PlacetoSearch::writeState(float *X, int64_t N, int64_t Col,
                               const std::vector<uint32_t> &P,
                               size_t Step) const {
  uint32_t Current = T.Order[Step];
  for (int64_t V = 0; V != U; ++V) {
    float *Row = X + (V * N + Col) * In;
    const float *Static = &T.Features[size_t(V) * T.NumFeatures];
    std::copy(Static, Static + T.NumFeatures, Row);
    float *Dynamic = Row + T.NumFeatures;
    std::fill(Dynamic, Dynamic + D + 2, 0.0f);
    Dynamic[P[V]] = 1;
    Dynamic[D] = StepOf[V] < Step;
    Dynamic[D + 1] = uint32_t(V) == Current;
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
  std::vector<float> X(size_t(U) * Batch * In);
  std::vector<float> Pools(3 * size_t(U));
  for (size_t Step = 0; Step != Steps; ++Step) {
    uint32_t Current = T.Order[Step];
    for (int64_t B = 0; B != Batch; ++B)
      writeState(X.data(), Batch, B, P[B], Step);
    Graph.getPools(Current, Pools.data());
    torch::Tensor Logits = Policy->forward(
        torch::from_blob(X.data(), {U, Batch, In}), Graph,
        torch::full({Batch}, int64_t(Current), torch::kLong),
        torch::from_blob(Pools.data(), {3, 1, U}).expand({3, Batch, U}));
    torch::Tensor Probs = torch::softmax(Logits, 1).contiguous();
    const float *Prob = Probs.data_ptr<float>();
    for (int64_t B = 0; B != Batch; ++B) {
      int64_t A = sampleIndex(Prob + B * D, D, Rng, Greedy);
      Actions[Step * Batch + B] = A;
      P[B][Current] = uint32_t(A);
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
  std::vector<float> X, Pools;
  std::vector<int64_t> Current;
  for (size_t Begin = 0; Begin < Steps; Begin += ChunkSteps) {
    size_t End = std::min(Steps, Begin + size_t(ChunkSteps));
    int64_t N = int64_t(End - Begin) * Batch;
    X.resize(size_t(U) * N * In);
    Pools.resize(3 * size_t(N) * U);
    Current.clear();
    std::vector<float> Rows(3 * size_t(U));
    for (size_t Step = Begin; Step != End; ++Step) {
      uint32_t Cur = T.Order[Step];
      Graph.getPools(Cur, Rows.data());
      for (int64_t B = 0; B != Batch; ++B) {
        int64_t Col = int64_t(Step - Begin) * Batch + B;
        writeState(X.data(), N, Col, P[B], Step);
        for (int K = 0; K != 3; ++K)
          std::copy(&Rows[K * U], &Rows[K * U] + U, &Pools[(K * N + Col) * U]);
        Current.push_back(Cur);
        P[B][Cur] = uint32_t(Actions[Step * Batch + B]);
      }
    }
    torch::Tensor Logits =
        Policy->forward(torch::from_blob(X.data(), {U, N, In}), Graph,
                        torch::tensor(Current, torch::kLong),
                        torch::from_blob(Pools.data(), {3, N, U}));
    torch::Tensor Logp = torch::log_softmax(Logits, 1);
    torch::Tensor Chosen =
        torch::from_blob(&Actions[Begin * Batch], {N}, torch::kLong);
    torch::Tensor Taken = Logp.gather(1, Chosen.unsqueeze(1)).squeeze(1);
    torch::Tensor Entropy = -(Logp.exp() * Logp).sum(1);
    torch::Tensor A = torch::from_blob(&Adv[Begin * Batch], {N});
    torch::Tensor Loss =
        -((A * Taken).sum() + EntropyCoef * Entropy.sum()) / Total;
    Loss.backward();
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
  setUpTorch(S.Threads ? S.Threads : 1, S.Seed);
  std::mt19937_64 Rng(S.Seed);
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
