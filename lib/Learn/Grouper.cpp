//===- Grouper.cpp - The learned grouper of hierarchical placers ----------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "Grouper.h"
#include "dp/Support/Diagnostics.h"

#include <algorithm>
#include <string>

using namespace llvm;

namespace dp {
namespace learn {

GrouperImpl::GrouperImpl(int64_t In, int64_t Hidden, int64_t Groups)
    : Hidden(Hidden), Groups(Groups) {
  Layer = register_module("layer", torch::nn::Linear(In, Hidden));
  Output = register_module("output", torch::nn::Linear(Hidden, Groups));
}

torch::Tensor GrouperImpl::forward(const torch::Tensor &X) {
  return torch::log_softmax(Output->forward(torch::relu(Layer->forward(X))), 1);
}

std::pair<torch::Tensor, torch::Tensor>
GrouperImpl::sample(const torch::Tensor &LogProbs, std::mt19937_64 &Rng,
                    bool Greedy) {
  torch::NoGradGuard NoGrad;
  int64_t U = LogProbs.size(0);
  torch::Tensor Probs = LogProbs.exp().contiguous();
  const float *P = Probs.data_ptr<float>();
  std::vector<int64_t> Chosen(U);
  for (int64_t I = 0; I != U; ++I)
    Chosen[I] = sampleIndex(P + I * Groups, Groups, Rng, Greedy);
  torch::Tensor G = torch::tensor(Chosen, torch::kLong);
  return {G, LogProbs.gather(1, G.unsqueeze(1)).squeeze(1)};
}

std::pair<torch::Tensor, torch::Tensor>
GrouperImpl::evaluate(const torch::Tensor &LogProbs,
                      const torch::Tensor &Groups) {
  int64_t B = Groups.size(0), U = Groups.size(1);
  torch::Tensor All = LogProbs.unsqueeze(0).expand({B, U, LogProbs.size(1)});
  torch::Tensor Logp = All.gather(2, Groups.unsqueeze(2)).squeeze(2);
  torch::Tensor Entropy = -(LogProbs.exp() * LogProbs).sum(1);
  return {Logp, Entropy.unsqueeze(0).expand({B, U})};
}

torch::Tensor GrouperImpl::getGroupParameters() {
  return torch::cat({Output->weight, Output->bias.unsqueeze(1)}, 1);
}

GroupEmbedder::GroupEmbedder(const LearnTask &T, int64_t Groups)
    : Task(T), Groups(Groups),
      Width(2 * Groups + int64_t(T.OpTypeNames.size()) + T.NumFeatures) {}

torch::Tensor GroupEmbedder::embed(const torch::Tensor &UnitGroup) const {
  torch::Tensor G = UnitGroup.contiguous();
  const int64_t *Group = G.data_ptr<int64_t>();
  std::vector<float> E(size_t(Groups * Width), 0);
  for (const LearnTask::Edge &Ed : Task.Edges) {
    int64_t From = Group[Ed.From], To = Group[Ed.To];
    E[From * Width + To] += 1;
    E[To * Width + Groups + From] += 1;
  }
  int64_t TypeBegin = 2 * Groups;
  int64_t FeatureBegin = TypeBegin + int64_t(Task.OpTypeNames.size());
  for (unsigned U = 0; U != Task.NumUnits; ++U) {
    float *Row = &E[Group[U] * Width];
    Row[TypeBegin + Task.OpType[U]] += 1;
    const float *F = &Task.Features[size_t(U) * Task.NumFeatures];
    for (unsigned K = 0; K != Task.NumFeatures; ++K)
      Row[FeatureBegin + K] += F[K];
  }
  for (int64_t R = 0; R != Groups; ++R) {
    float *Row = &E[R * Width];
    float Scale = 1 + *std::max_element(Row, Row + Width);
    for (int64_t K = 0; K != Width; ++K)
      Row[K] /= Scale;
  }
  return torch::from_blob(E.data(), {Groups, Width}, torch::kFloat).clone();
}

OptionTable &addGroupPlacerOptions(OptionTable &T, GroupPlacerOptions &O) {
  T.integer<int64_t>("groups", O.Groups)
      .integer<int64_t>("grouper-hidden", O.GrouperHidden)
      .integer<int64_t>("hidden", O.Hidden)
      .check([&O](const OptionTable &T) -> Error {
        if (O.Groups <= int64_t(MaxGroups))
          return Error::success();
        return T.makeError("groups must be at most " +
                           std::to_string(MaxGroups) + ", not " +
                           std::to_string(O.Groups));
      });
  addAttentionOption(T, O.Attention);
  return addLearningRate(T, O.LearningRate);
}

GroupPlacerImpl::GroupPlacerImpl(const LearnTask &T,
                                 const GroupPlacerOptions &O,
                                 int64_t LinkHidden)
    : Embedder(T, O.Groups), Hidden(O.Hidden), LinkHidden(LinkHidden) {
  TheGrouper = register_module(
      "grouper", Grouper(T.NumFeatures, O.GrouperHidden, O.Groups));
  if (LinkHidden)
    Link = register_module("link",
                           torch::nn::LSTM(O.GrouperHidden + 1, LinkHidden));
  Placer = register_module(
      "placer", SegmentSeq2Seq(Embedder.getWidth() + LinkHidden, Hidden,
                               T.NumDevices, /*Segment=*/0, O.Attention));
}

torch::Tensor GroupPlacerImpl::link() {
  if (!Link)
    return {};
  torch::Tensor In = TheGrouper->getGroupParameters().unsqueeze(1);
  return std::get<0>(Link->forward(In)).squeeze(1);
}

SegmentSeq2SeqImpl::Encoding
GroupPlacerImpl::encode(const torch::Tensor &UnitGroups,
                        const torch::Tensor &LinkOut) {
  int64_t N = UnitGroups.size(0);
  if (N == 1) {
    torch::Tensor In = Embedder.embed(UnitGroups[0]);
    if (LinkOut.defined())
      In = torch::cat({In, LinkOut}, 1);
    return Placer->encode(In);
  }
  std::vector<torch::Tensor> Embeddings;
  for (int64_t I = 0; I != N; ++I)
    Embeddings.push_back(Embedder.embed(UnitGroups[I]));
  torch::Tensor In = torch::stack(Embeddings, 1); // [Groups, N, Width]
  if (LinkOut.defined())
    In = torch::cat({In, LinkOut.unsqueeze(1).expand({-1, N, -1})}, 2);
  return Placer->encode(In);
}

GroupedDraw GroupPlacerImpl::draw(const torch::Tensor &LogProbs,
                                  const torch::Tensor &LinkOut,
                                  int64_t Groupings, int64_t Batch,
                                  std::mt19937_64 &Rng, bool Greedy) {
  assert((Groupings == 1 || Groupings == Batch) && "a grouping a placement");
  GroupedDraw D;
  std::vector<torch::Tensor> Groups, Logps;
  for (int64_t I = 0; I != Groupings; ++I) {
    auto [G, L] = TheGrouper->sample(LogProbs, Rng, Greedy);
    Groups.push_back(G);
    Logps.push_back(L);
  }
  D.Groups = torch::stack(Groups);
  D.GroupLogp = torch::stack(Logps);
  D.Encoding = encode(D.Groups, LinkOut);
  std::tie(D.Devices, D.DeviceLogp) =
      Placer->sample(D.Encoding, Batch, Rng, Greedy);
  return D;
}

void GroupPlacerImpl::placeZeroShot(const torch::Tensor &X,
                                    PolicySearch &Search, std::mt19937_64 &Rng,
                                    bool GroupingEach) {
  torch::NoGradGuard NoGrad;
  torch::Tensor LogProbs = TheGrouper->forward(X);
  torch::Tensor LinkOut = link();
  std::vector<uint32_t> Placement;
  learn::placeZeroShot(
      Search, ZeroShotSamples, [&](int64_t Batch, bool Greedy) {
        int64_t Groupings = GroupingEach ? Batch : 1;
        scoreDraw(Search,
                  draw(LogProbs, LinkOut, Groupings, Batch, Rng, Greedy),
                  Placement);
      });
}

std::vector<int64_t> GroupPlacerImpl::getMeta(const LearnTask &T) const {
  return {T.NumFeatures,
          int64_t(T.NumDevices),
          int64_t(T.OpTypeNames.size()),
          TheGrouper->getNumGroups(),
          TheGrouper->getHidden(),
          Hidden,
          LinkHidden,
          int64_t(Placer->getAttention())};
}

const std::vector<const char *> GroupPlacerImpl::MetaNames = {
    "features per unit", "devices",
    "op types",          "groups",
    "grouper-hidden",    "hidden",
    "extra RNN units",   "attention (0 before, 1 after, 2 self)"};

std::vector<double> scoreDraw(PolicySearch &Search, const GroupedDraw &D,
                              std::vector<uint32_t> &Placement) {
  torch::Tensor G = D.Groups.contiguous();
  Placement.resize(size_t(G.size(1)));
  std::vector<double> Rewards;
  for (int64_t B = 0; B != D.Devices.size(0) && !Search.done(); ++B) {
    const int64_t *Group =
        G.data_ptr<int64_t>() + (G.size(0) == 1 ? 0 : B) * G.size(1);
    torch::Tensor Dev = D.Devices[B].contiguous();
    const int64_t *Device = Dev.data_ptr<int64_t>();
    for (size_t U = 0; U != Placement.size(); ++U)
      Placement[U] = uint32_t(Device[Group[U]]);
    Rewards.push_back(Search.evaluate(Placement));
  }
  return Rewards;
}

Expected<SearchResult>
searchGroupPlacer(const LearnTask &T, const SearchOptions &S,
                  GroupPlacer &Policy, std::mt19937_64 &Rng, StringRef Name,
                  uint64_t DefaultSamples, double Mu, bool GroupingEach,
                  GroupPlacerTrainFn Train) {
  const std::vector<int64_t> Meta = Policy->getMeta(T);
  if (!S.LoadFile.empty())
    if (Error E = loadPolicy(*Policy, Meta, GroupPlacerImpl::MetaNames,
                             S.LoadFile, Name))
      return std::move(E);

  SearchOptions Budget = getSearchBudget(S);
  PolicySearch Search(T, Budget, Name, DefaultSamples, Mu);
  torch::Tensor X = getFeatures(T);
  std::vector<uint32_t> Placement;
  if (!S.LoadFile.empty() && !S.FinetuneSamples)
    Policy->placeZeroShot(X, Search, Rng, GroupingEach);
  else
    Train(Search, X, Placement);
  return finishSearch(Search, *Policy, Meta, S, Name);
}

} // namespace learn
} // namespace dp
