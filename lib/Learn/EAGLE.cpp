//===- EAGLE.cpp - Grouper + extra RNN + seq2seq placer, PPO --------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
//
// EAGLE (Lan, Chen, Li: "EAGLE: Expedited Device Placement with Automatic
// Grouping for Large Models", IPDPS 2021): the Hierarchical Planner's
// feed-forward grouper and seq2seq placer, an extra RNN that turns the
// grouper's parameters into placer inputs, and PPO (optionally with
// Post's cross-entropy steps on elite placements). docs/placers/eagle.md
// lists where dp follows the paper and where it departs from it.
//
//===----------------------------------------------------------------------===//

#include "FusedAdam.h"
#include "Grouper.h"
#include "dp/Learn/Placers.h"

#include <algorithm>

using namespace llvm;

namespace dp {

using namespace learn;

/// EAGLE IV-C: 10 placements a mini-batch, updated 4 times; with PPO+CE,
/// a cross-entropy step on the 5 best placements every 50 placements.
static constexpr unsigned SamplesPerUpdate = 10;
static constexpr unsigned CEInterval = 50;
static constexpr size_t Elites = 5;
static constexpr uint64_t DefaultSamples = 1000;

namespace {
/// The best placements sampled so far (Post's elites), best first.
class EliteSet {
public:
  void add(double Reward, const torch::Tensor &Actions) {
    auto It = std::find_if(Best.begin(), Best.end(),
                           [&](const Entry &E) { return Reward > E.first; });
    if (It == Best.end() && Best.size() == Elites)
      return;
    Best.insert(It, {Reward, Actions});
    if (Best.size() > Elites)
      Best.pop_back();
  }
  torch::Tensor actions() const {
    std::vector<torch::Tensor> A;
    for (const Entry &E : Best)
      A.push_back(E.second);
    return torch::stack(A);
  }

private:
  using Entry = std::pair<double, torch::Tensor>;
  std::vector<Entry> Best;
};
} // namespace

namespace {
/// train=ppo|ppo-ce.
enum class TrainKind : uint8_t { PPO, PPOCE };
} // namespace

static constexpr EnumEntry<TrainKind> TrainNames[] = {
    {"ppo", TrainKind::PPO},
    {"ppo-ce", TrainKind::PPOCE},
};

Expected<SearchResult> searchEAGLE(const LearnTask &T, const SearchOptions &S,
                                   LearnOptions Opts) {
  const char *Name = "eagle";
  GroupPlacerOptions Group;
  Group.Groups = 256;
  Group.LearningRate = 0.01;
  // Section 4: "context-based input attention ... applied before feeding
  // to the decoder" (Fig. 4a).
  Group.Attention = AttentionKind::Before;
  TrainKind Train = TrainKind::PPO;
  OptionTable Table = makePlacerOptions(Name);
  addGroupPlacerOptions(Table, Group)
      .choice<TrainKind>("train", Train, TrainNames);
  if (Error E = parsePlacerOptions(Table, Opts))
    return std::move(E);

  std::mt19937_64 Rng = setUpTorch(S.Threads, S.Seed);
  // The extra RNN is as wide as the grouper's hidden layer.
  GroupPlacer Policy(T, Group, /*LinkHidden=*/Group.GrouperHidden);
  auto TrainPolicy = [&](PolicySearch &Search, const torch::Tensor &X,
                         std::vector<uint32_t> &Placement) {
    // An action is a group per unit followed by a device per group.
    int64_t U = T.NumUnits;
    std::vector<torch::Tensor> Params = Policy->parameters();
    FusedAdam Opt(Params, torch::optim::AdamOptions(Group.LearningRate));
    PPOConfig Config;
    Config.Clip = 0.3;
    Config.EntropyCoef = 0.01;
    Config.MaxGradNorm = 1.0;
    Config.Epochs = 4;
    Config.MiniBatches = 1;
    LogpFn Logp = [&](const torch::Tensor &Actions) {
      torch::Tensor LogProbs = Policy->TheGrouper->forward(X);
      torch::Tensor Link = Policy->link();
      torch::Tensor Groups = Actions.slice(1, 0, U);
      auto [GroupLogp, GroupEntropy] = GrouperImpl::evaluate(LogProbs, Groups);
      auto [DeviceLogp, DeviceEntropy] = Policy->Placer->evaluate(
          Policy->encode(Groups, Link), Actions.slice(1, U));
      return std::make_pair(torch::cat({GroupLogp, DeviceLogp}, 1),
                            torch::cat({GroupEntropy, DeviceEntropy}, 1));
    };
    bool CrossEntropy = Train == TrainKind::PPOCE;
    EliteSet Elite;
    std::vector<PolicySample> Buffer;
    while (!Search.done()) {
      int64_t Batch =
          std::min<uint64_t>(SamplesPerUpdate, Search.samplesLeft());
      {
        torch::NoGradGuard NoGrad;
        torch::Tensor LogProbs = Policy->TheGrouper->forward(X);
        torch::Tensor Link = Policy->link();
        GroupedDraw D = Policy->draw(LogProbs, Link, Batch, Batch, Rng);
        std::vector<double> Rewards = scoreDraw(Search, D, Placement);
        for (size_t B = 0; B != Rewards.size(); ++B) {
          torch::Tensor Actions = torch::cat({D.Groups[B], D.Devices[B]});
          Buffer.push_back({Actions,
                            torch::cat({D.GroupLogp[B], D.DeviceLogp[B]}),
                            Search.advantage(Rewards[B])});
          if (CrossEntropy)
            Elite.add(Rewards[B], Actions);
        }
      }
      if (Search.done())
        break;
      updatePPO(Buffer, Config, Opt, Params, Logp, Rng);
      Buffer.clear();
      // Post: every CEInterval placements, move towards the elites.
      if (CrossEntropy && Search.getSamples() % CEInterval == 0) {
        torch::Tensor EliteActions = Elite.actions();
        for (unsigned Step = 0; Step != Config.Epochs; ++Step)
          minimize(-Logp(EliteActions).first.mean(), Opt, Params,
                   Config.MaxGradNorm);
      }
    }
  };
  return searchGroupPlacer(T, S, Policy, Rng, Name, DefaultSamples,
                           PolicySearch::DefaultMu, /*GroupingEach=*/true,
                           TrainPolicy);
}

} // namespace dp
