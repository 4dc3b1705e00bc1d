//===- Hierarchical.cpp - Grouper + seq2seq placer, REINFORCE -------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
//
// The Hierarchical Planner (Mirhoseini, Goldie, Pham, Steiner, Le, Dean:
// "A Hierarchical Model for Device Placement", ICLR 2018): a feed-forward
// grouper assigns every unit to a group, a seq2seq placer assigns every
// group to a device, and REINFORCE trains both on the sum of their
// log-probabilities. docs/placers/hierarchical.md lists where dp follows
// the paper and where it departs from it.
//
//===----------------------------------------------------------------------===//

#include "FusedAdam.h"
#include "Grouper.h"
#include "dp/Learn/Placers.h"

#include <algorithm>

using namespace llvm;

namespace dp {

using namespace learn;

static constexpr uint64_t DefaultSamples = 1000;

Expected<SearchResult> searchHierarchical(const LearnTask &T,
                                          const SearchOptions &S,
                                          LearnOptions Opts) {
  const char *Name = "hierarchical";
  GroupPlacerOptions Group;
  // The authors' code: min(256, 20 groups per device).
  Group.Groups = std::min(256u, 20 * T.NumDevices);
  Group.LearningRate = 0.1;
  // EAGLE's paper (section 3): the Hierarchical Planner applies attention
  // after the decoder (its Fig. 4b).
  Group.Attention = AttentionKind::After;
  OptionTable Table = makePlacerOptions(Name);
  addGroupPlacerOptions(Table, Group);
  if (Error E = parsePlacerOptions(Table, Opts))
    return std::move(E);

  std::mt19937_64 Rng = setUpTorch(S.Threads, S.Seed);
  ReinforceConfig Config;
  GroupPlacer Policy(T, Group, /*LinkHidden=*/0);
  Policy->Placer->setLogitSquash(Config.Temperature, Config.TanhConstant);
  auto TrainPolicy = [&](PolicySearch &Search, const torch::Tensor &X,
                         std::vector<uint32_t> &Placement) {
    // Each step: one grouping (the paper's m = 1) and k placements of its
    // groups; the grouping's log-probability joins each placement's.
    std::vector<torch::Tensor> Params = Policy->parameters();
    FusedAdam Opt(Params, torch::optim::AdamOptions(Group.LearningRate));
    while (!Search.done()) {
      int64_t Batch =
          std::min<uint64_t>(Config.SamplesPerUpdate, Search.samplesLeft());
      torch::Tensor LogProbs = Policy->TheGrouper->forward(X);
      GroupedDraw D = Policy->draw(LogProbs, torch::Tensor(), 1, Batch, Rng);
      std::vector<double> Rewards = scoreDraw(Search, D, Placement);
      if (Search.done())
        break;
      std::vector<float> Advantages;
      for (double R : Rewards)
        Advantages.push_back(float(Search.advantage(R)));
      torch::Tensor GroupLogp =
          LogProbs.gather(1, D.Groups[0].unsqueeze(1)).sum();
      torch::Tensor DeviceLogp =
          Policy->Placer->evaluate(D.Encoding, D.Devices).first.sum(1);
      updateReinforce(DeviceLogp + GroupLogp, Advantages, Config, Opt, Params);
    }
  };
  return searchGroupPlacer(T, S, Policy, Rng, Name, DefaultSamples,
                           Config.BaselineDecay, /*GroupingEach=*/false,
                           TrainPolicy);
}

} // namespace dp
