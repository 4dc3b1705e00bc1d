//===- Mars.cpp - DGI-pre-trained GCN + segment seq2seq, PPO --------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
//
// Mars (Lan, Chen, Li: "Accelerated Device Placement Optimization with
// Contrastive Learning", ICPP 2021). docs/placers/mars.md lists where dp
// follows the paper and where it departs from it.
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

namespace {
/// The whole policy, one module so that it saves and loads as one.
class MarsPolicyImpl : public torch::nn::Module {
public:
  MarsPolicyImpl(int64_t Features, int64_t GCNHidden, int64_t Hidden,
                 int64_t Devices, int64_t Segment, AttentionKind Attention)
      : Encoder(register_module("encoder", GCNEncoder(Features, GCNHidden, 3))),
        Placer(
            register_module("placer", SegmentSeq2Seq(GCNHidden, Hidden, Devices,
                                                     Segment, Attention))) {}
  GCNEncoder Encoder;
  SegmentSeq2Seq Placer;
};
TORCH_MODULE(MarsPolicy);
} // namespace

/// What the encoder reads of a unit: the paper's features (op kinds and
/// shapes), or with them dp's cost features (LearnTask::NumCostFeatures).
enum class FeatureSet : uint8_t { Paper, Cost };
static constexpr EnumEntry<FeatureSet> FeatureSetNames[] = {
    {"paper", FeatureSet::Paper},
    {"cost", FeatureSet::Cost},
};

/// Mars 3.4 and 4.2: ten placements per policy; every twenty, PPO with four
/// mini-batches for three epochs.
static constexpr unsigned SamplesPerPolicy = 10;
static constexpr unsigned SamplesPerUpdate = 20;
static constexpr uint64_t DefaultSamples = 1000;

Expected<SearchResult> searchMars(const LearnTask &T, const SearchOptions &S,
                                  LearnOptions Opts) {
  const char *Name = "mars";
  uint64_t Pretrain = 1000, Segment = 128, Hidden = 128, GCNHidden = 256;
  double LearningRate = 3e-4;
  DeviceChoice Choice = DeviceChoice::Auto;
  // Section 4: "context-based input attention" (the decoder's input).
  AttentionKind Attention = AttentionKind::Before;
  FeatureSet Features = FeatureSet::Paper;
  OptionTable Table = makePlacerOptions(Name);
  Table.integer("pretrain", Pretrain, uint64_t(0))
      .integer("segment", Segment)
      .integer("hidden", Hidden)
      .integer("gcn-hidden", GCNHidden);
  addLearningRate(Table, LearningRate);
  addDeviceOption(Table, Choice);
  addAttentionOption(Table, Attention)
      .choice<FeatureSet>("features", Features, FeatureSetNames);
  if (Error E = parsePlacerOptions(Table, Opts))
    return std::move(E);
  Expected<torch::Device> Device = getTorchDevice(Choice, Name);
  if (!Device)
    return Device.takeError();

  std::mt19937_64 Rng = setUpTorch(S.Threads, S.Seed);
  int64_t Width = T.NumFeatures;
  if (Features == FeatureSet::Paper)
    Width -= T.NumCostFeatures;
  torch::Tensor X = getFeatures(T).slice(1, 0, Width).contiguous().to(*Device);
  torch::Tensor Adj = getNormalizedAdjacency(T).to(*Device);
  torch::Tensor Order =
      torch::tensor(std::vector<int64_t>(T.Order.begin(), T.Order.end()),
                    torch::kLong)
          .to(*Device);

  MarsPolicy Policy(Width, GCNHidden, Hidden, T.NumDevices, Segment, Attention);
  const std::vector<int64_t> Meta = {
      Width,           int64_t(T.NumDevices), int64_t(GCNHidden),
      int64_t(Hidden), int64_t(Segment),      int64_t(Attention)};
  const std::vector<const char *> MetaNames = {
      "features per unit", "devices",
      "gcn-hidden",        "hidden",
      "segment",           "attention (0 before, 1 after, 2 self)"};
  bool Loaded = !S.LoadFile.empty();
  if (Loaded) {
    if (Error E = loadPolicy(*Policy, Meta, MetaNames, S.LoadFile, Name))
      return std::move(E);
  }
  Policy->to(*Device);
  SearchOptions Budget = S;
  if (Loaded)
    Budget.Samples = S.FinetuneSamples ? S.FinetuneSamples : SamplesPerPolicy;
  // The clock of seconds= starts here: pre-training counts, and stops at
  // half of the budget so that the other half is left to the search.
  PolicySearch Search(T, Budget, Name, DefaultSamples);
  if (!Loaded && Pretrain) {
    pretrainDGI(
        Policy->Encoder, X, Adj, Pretrain, /*LearningRate=*/1e-3, Rng,
        [&] { return S.Seconds > 0 && Search.elapsed() >= S.Seconds / 2; });
  }

  auto Encode = [&] {
    return Policy->Placer->encode(
        Policy->Encoder->forward(X, Adj).index_select(0, Order));
  };
  std::vector<uint32_t> Placement(T.NumUnits);
  auto Evaluate = [&](const torch::Tensor &Actions) {
    auto A = Actions.accessor<int64_t, 1>();
    for (unsigned I = 0; I != T.NumUnits; ++I)
      Placement[T.Order[I]] = uint32_t(A[I]);
    return Search.evaluate(Placement);
  };

  if (Loaded && !S.FinetuneSamples) {
    // Zero-shot: the policy's likeliest placement, then samples from it.
    torch::NoGradGuard NoGrad;
    SegmentSeq2SeqImpl::Encoding E = Encode();
    Evaluate(Policy->Placer->sample(E, 1, Rng, /*Greedy=*/true).first[0]);
    while (!Search.done()) {
      int64_t Batch = std::min<uint64_t>(SamplesPerPolicy, Search.samplesLeft());
      torch::Tensor Actions = Policy->Placer->sample(E, Batch, Rng).first;
      for (int64_t B = 0; B != Batch && !Search.done(); ++B)
        Evaluate(Actions[B]);
    }
  } else {
    std::vector<torch::Tensor> Params = Policy->parameters();
    FusedAdam Opt(Params, torch::optim::AdamOptions(LearningRate));
    PPOConfig Config; // clip 0.2, entropy 0.001, grad-norm 1.0, 4 x 3
    LogpFn Logp = [&](const torch::Tensor &Actions) {
      return Policy->Placer->evaluate(Encode(), Actions);
    };
    std::vector<PolicySample> Buffer;
    while (!Search.done()) {
      int64_t Batch = std::min<uint64_t>(SamplesPerPolicy, Search.samplesLeft());
      torch::Tensor Actions, Logps;
      {
        torch::NoGradGuard NoGrad;
        std::tie(Actions, Logps) = Policy->Placer->sample(Encode(), Batch, Rng);
      }
      for (int64_t B = 0; B != Batch && !Search.done(); ++B) {
        double Reward = Evaluate(Actions[B]);
        Buffer.push_back({Actions[B], Logps[B], Search.advantage(Reward)});
      }
      if (Buffer.size() >= SamplesPerUpdate && !Search.done()) {
        updatePPO(Buffer, Config, Opt, Params, Logp, Rng);
        Buffer.clear();
      }
    }
  }

  return finishSearch(Search, *Policy, Meta, S, Name);
}

std::vector<double> pretrainGraphEncoder(const LearnTask &T,
                                         unsigned Iterations, unsigned Hidden,
                                         uint64_t Seed, unsigned Threads) {
  std::mt19937_64 Rng = setUpTorch(Threads, Seed);
  GCNEncoder Enc(T.NumFeatures, Hidden, 3);
  return pretrainDGI(Enc, getFeatures(T), getNormalizedAdjacency(T),
                     Iterations, /*LearningRate=*/1e-3, Rng);
}

} // namespace dp
