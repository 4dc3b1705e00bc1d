//===- ColocRL.cpp - Seq2seq over the units, REINFORCE --------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
//
// ColocRL (Mirhoseini et al.: "Device Placement Optimization with
// Reinforcement Learning", ICML 2017): an attentional seq2seq LSTM reads
// the co-location groups (dp's units) in topological order and names a
// device for each; REINFORCE with a moving-average baseline trains it.
// docs/placers/colocrl.md lists where dp follows the paper and where it
// departs from it.
//
//===----------------------------------------------------------------------===//

#include "FusedAdam.h"
#include "Modules.h"
#include "PolicySearch.h"
#include "dp/Learn/Placers.h"

#include <algorithm>

using namespace llvm;

namespace dp {

using namespace learn;

/// The width of the op-type embedding.
static constexpr int64_t TypeWidth = 32;

namespace {
/// The unit embedding of ColocRL 3.2 (a tunable op-type embedding, the
/// output shape and the adjacency one-hot, concatenated) and the placer.
/// The adjacency one-hot reaches the encoder through a learned projection
/// (an embedding bag over the neighbours), which is the same product as
/// the encoder's input weights times the one-hot, at rank Hidden.
class ColocRLPolicyImpl : public torch::nn::Module {
public:
  ColocRLPolicyImpl(const LearnTask &T, int64_t Hidden, AttentionKind Attention)
      : Types(register_module(
            "types",
            torch::nn::Embedding(int64_t(T.OpTypeNames.size()), TypeWidth))),
        Neighbours(register_module(
            "neighbours",
            torch::nn::EmbeddingBag(
                torch::nn::EmbeddingBagOptions(2 * int64_t(T.NumUnits), Hidden)
                    .mode(torch::kSum)))),
        Placer(register_module(
            "placer", SegmentSeq2Seq(TypeWidth + T.NumFeatures + Hidden, Hidden,
                                     T.NumDevices, 0, Attention))) {}
  torch::nn::Embedding Types;
  torch::nn::EmbeddingBag Neighbours;
  SegmentSeq2Seq Placer;
};
TORCH_MODULE(ColocRLPolicy);

/// The task's units in topological order, as the policy reads them.
struct UnitSequence {
  torch::Tensor Types, Features, Neighbours, Offsets;

  explicit UnitSequence(const LearnTask &T) {
    std::vector<int64_t> Order(T.Order.begin(), T.Order.end());
    torch::Tensor O = torch::tensor(Order, torch::kLong);
    Types =
        torch::tensor(std::vector<int64_t>(T.OpType.begin(), T.OpType.end()),
                      torch::kLong)
            .index_select(0, O);
    Features = getFeatures(T).index_select(0, O);
    // Inputs of unit U are U's predecessors, outputs NumUnits + successors.
    std::vector<std::vector<int64_t>> Adjacent(T.NumUnits);
    for (const LearnTask::Edge &E : T.Edges) {
      Adjacent[E.To].push_back(E.From);
      Adjacent[E.From].push_back(int64_t(T.NumUnits) + E.To);
    }
    std::vector<int64_t> Flat, Begin;
    for (uint32_t U : T.Order) {
      Begin.push_back(int64_t(Flat.size()));
      Flat.insert(Flat.end(), Adjacent[U].begin(), Adjacent[U].end());
    }
    Neighbours = torch::tensor(Flat, torch::kLong);
    Offsets = torch::tensor(Begin, torch::kLong);
  }

  SegmentSeq2SeqImpl::Encoding encode(ColocRLPolicyImpl &P) const {
    return P.Placer->encode(
        torch::cat({P.Types->forward(Types), Features,
                    P.Neighbours->forward(Neighbours, Offsets)},
                   1));
  }
};
} // namespace

static constexpr uint64_t DefaultSamples = 1000;

Expected<SearchResult> searchColocRL(const LearnTask &T, const SearchOptions &S,
                                     LearnOptions Opts) {
  const char *Name = "colocrl";
  uint64_t Hidden = 256;
  double LearningRate = 0.1;
  // The paper's decoder is "an attentional LSTM" without saying where the
  // context goes; before the decoder learned better than after it on the
  // test problem of unittests/Learn (docs/placers/colocrl.md).
  AttentionKind Attention = AttentionKind::Before;
  OptionTable Table = makePlacerOptions(Name);
  addLearningRate(Table.integer("hidden", Hidden), LearningRate);
  addAttentionOption(Table, Attention);
  if (Error E = parsePlacerOptions(Table, Opts))
    return std::move(E);

  std::mt19937_64 Rng = setUpTorch(S.Threads, S.Seed);
  ReinforceConfig Config;
  ColocRLPolicy Policy(T, Hidden, Attention);
  Policy->Placer->setLogitSquash(Config.Temperature, Config.TanhConstant);
  const std::vector<int64_t> Meta = {
      T.NumFeatures,       int64_t(T.NumDevices), int64_t(T.OpTypeNames.size()),
      int64_t(T.NumUnits), int64_t(Hidden),       int64_t(Attention)};
  const std::vector<const char *> MetaNames = {
      "features per unit",
      "devices",
      "op types",
      "units",
      "hidden",
      "attention (0 before, 1 after, 2 self)"};
  bool Loaded = !S.LoadFile.empty();
  if (Loaded)
    if (Error E = loadPolicy(*Policy, Meta, MetaNames, S.LoadFile, Name))
      return std::move(E);

  SearchOptions Budget = getSearchBudget(S);
  PolicySearch Search(T, Budget, Name, DefaultSamples, Config.BaselineDecay);
  UnitSequence Seq(T);
  std::vector<uint32_t> Placement(T.NumUnits);
  // Samples and scores up to Batch placements of \p E; their rewards.
  auto Draw = [&](const SegmentSeq2SeqImpl::Encoding &E, int64_t Batch,
                  bool Greedy, torch::Tensor &Actions) {
    Actions = Policy->Placer->sample(E, Batch, Rng, Greedy).first;
    std::vector<double> Rewards;
    for (int64_t B = 0; B != Batch && !Search.done(); ++B) {
      torch::Tensor Row = Actions[B];
      auto A = Row.accessor<int64_t, 1>();
      for (unsigned I = 0; I != T.NumUnits; ++I)
        Placement[T.Order[I]] = uint32_t(A[I]);
      Rewards.push_back(Search.evaluate(Placement));
    }
    return Rewards;
  };

  if (Loaded && !S.FinetuneSamples) {
    torch::NoGradGuard NoGrad;
    SegmentSeq2SeqImpl::Encoding E = Seq.encode(*Policy);
    placeZeroShot(Search, ZeroShotSamples, [&](int64_t Batch, bool Greedy) {
      torch::Tensor Actions;
      Draw(E, Batch, Greedy, Actions);
    });
  } else {
    std::vector<torch::Tensor> Params = Policy->parameters();
    FusedAdam Opt(Params, torch::optim::AdamOptions(LearningRate));
    while (!Search.done()) {
      int64_t Batch =
          std::min<uint64_t>(Config.SamplesPerUpdate, Search.samplesLeft());
      SegmentSeq2SeqImpl::Encoding E = Seq.encode(*Policy);
      torch::Tensor Actions;
      std::vector<double> Rewards = Draw(E, Batch, /*Greedy=*/false, Actions);
      if (Search.done())
        break;
      std::vector<float> Advantages;
      for (double R : Rewards)
        Advantages.push_back(float(Search.advantage(R)));
      torch::Tensor Logp = Policy->Placer->evaluate(E, Actions).first;
      updateReinforce(Logp.sum(1), Advantages, Config, Opt, Params);
    }
  }

  return finishSearch(Search, *Policy, Meta, S, Name);
}

} // namespace dp
