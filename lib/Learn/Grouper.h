//===- Grouper.h - The learned grouper of hierarchical placers --*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// What the Hierarchical Planner (Mirhoseini et al. 2018) and EAGLE (Lan et
/// al. 2021) share: a feed-forward grouper that puts each unit in one of a
/// fixed number of groups, the group embeddings their seq2seq placers read
/// (per group: its adjacency to the other groups, its op-type histogram
/// and the sums of its units' features, as TensorFlow grappler's
/// hierarchical_controller builds them), and the placement that a grouping
/// and a device per group make. Only lib/Learn includes this header.
///
//===----------------------------------------------------------------------===//

#ifndef DP_LIB_LEARN_GROUPER_H
#define DP_LIB_LEARN_GROUPER_H

#include "Modules.h"
#include "PolicySearch.h"

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace dp {
namespace learn {

/// A two-layer feed-forward network (ReLU hidden layer) over each unit's
/// features with a softmax over the groups.
class GrouperImpl : public torch::nn::Module {
public:
  GrouperImpl(int64_t In, int64_t Hidden, int64_t Groups);

  /// Log-probabilities [U, Groups] of each unit's group for features
  /// \p X [U, In].
  torch::Tensor forward(const torch::Tensor &X);

  /// Draws a group per unit from \p LogProbs [U, Groups] (the likeliest
  /// with \p Greedy): the groups [U] and their log-probabilities [U].
  std::pair<torch::Tensor, torch::Tensor> sample(const torch::Tensor &LogProbs,
                                                 std::mt19937_64 &Rng,
                                                 bool Greedy = false);

  /// Log-probabilities and entropies, [B, U] each, of the groupings
  /// \p Groups [B, U] under \p LogProbs [U, Groups].
  static std::pair<torch::Tensor, torch::Tensor>
  evaluate(const torch::Tensor &LogProbs, const torch::Tensor &Groups);

  /// The output layer, one row per group: its weights and bias,
  /// [Groups, Hidden + 1].
  torch::Tensor getGroupParameters();

  int64_t getNumGroups() const { return Groups; }
  int64_t getHidden() const { return Hidden; }

private:
  int64_t Hidden, Groups;
  torch::nn::Linear Layer{nullptr}, Output{nullptr};
};
TORCH_MODULE(Grouper);

/// The group embeddings of a task's groupings. Each group's row is its
/// outgoing and incoming edge counts to every group, its histogram of the
/// task's op types and the sums of its units' feature rows (which hold the
/// output shapes), divided by the row's largest entry plus one.
class GroupEmbedder {
public:
  GroupEmbedder(const LearnTask &T, int64_t Groups);

  /// The width of an embedding: 2 * Groups + op types + features.
  int64_t getWidth() const { return Width; }
  /// The embeddings [Groups, Width] of the grouping \p UnitGroup (a group
  /// per unit, int64 [U]).
  torch::Tensor embed(const torch::Tensor &UnitGroup) const;

private:
  const LearnTask &Task;
  int64_t Groups, Width;
};

/// The largest groups=N the grouped placers accept (an embedding row is
/// 2N wide).
constexpr uint64_t MaxGroups = 1024;
/// The options of a grouped placer: groups=N (at most MaxGroups),
/// grouper-hidden=N, hidden=N, lr=X, attention=before|after|self.
struct GroupPlacerOptions {
  int64_t Groups = 0, GrouperHidden = 64, Hidden = 512;
  double LearningRate = 0;
  AttentionKind Attention = AttentionKind::Before;
};
/// Declares them, bound to \p O (which holds the placer's defaults).
OptionTable &addGroupPlacerOptions(OptionTable &T, GroupPlacerOptions &O);

/// Groupings of the units (one, or one per placement) and placements of
/// their groups: placement b places grouping b, or the only one.
struct GroupedDraw {
  torch::Tensor Groups;     ///< [N, U] int64, the group of each unit
  torch::Tensor GroupLogp;  ///< [N, U]
  torch::Tensor Devices;    ///< [B, Groups] int64, a device per group
  torch::Tensor DeviceLogp; ///< [B, Groups]
  SegmentSeq2SeqImpl::Encoding Encoding;
};

/// The grouper and the seq2seq placer over its groups, one module so that
/// it saves and loads as one (Hierarchical Planner). With \p LinkHidden
/// > 0 it has EAGLE's extra RNN: an LSTM that reads the grouper's output
/// layer a group at a time and whose outputs join the group embeddings as
/// placer inputs.
class GroupPlacerImpl : public torch::nn::Module {
public:
  GroupPlacerImpl(const LearnTask &T, const GroupPlacerOptions &O,
                  int64_t LinkHidden);

  /// The extra RNN's outputs [Groups, LinkHidden] (an undefined tensor
  /// without it).
  torch::Tensor link();
  /// The placer's encoding of the groups of \p UnitGroups [N, U] (N
  /// groupings: one sequence, or a batch of N), with the extra RNN's
  /// outputs \p Link.
  SegmentSeq2SeqImpl::Encoding encode(const torch::Tensor &UnitGroups,
                                      const torch::Tensor &Link);
  /// Draws \p Groupings groupings (1 or \p Batch) from \p LogProbs (the
  /// grouper's output) and \p Batch placements of their groups; the
  /// likeliest ones with \p Greedy.
  GroupedDraw draw(const torch::Tensor &LogProbs, const torch::Tensor &Link,
                   int64_t Groupings, int64_t Batch, std::mt19937_64 &Rng,
                   bool Greedy = false);

  /// Places zero-shot (a loaded policy, no training) the units whose
  /// features are \p X: a grouping per placement with \p GroupingEach,
  /// else one grouping per batch of placements.
  void placeZeroShot(const torch::Tensor &X, PolicySearch &Search,
                     std::mt19937_64 &Rng, bool GroupingEach);

  /// Architecture facts for savePolicy/loadPolicy, and their names.
  std::vector<int64_t> getMeta(const LearnTask &T) const;
  static const std::vector<const char *> MetaNames;

  Grouper TheGrouper{nullptr};
  torch::nn::LSTM Link{nullptr};
  SegmentSeq2Seq Placer{nullptr};

private:
  GroupEmbedder Embedder;
  int64_t Hidden, LinkHidden;
};
TORCH_MODULE(GroupPlacer);

/// Scores the placements of \p D, until \p Search's budget ends; their
/// rewards.
std::vector<double> scoreDraw(PolicySearch &Search, const GroupedDraw &D,
                              std::vector<uint32_t> &Placement);

/// Trains a group placer over \p Search: \p X the units' features,
/// \p Placement scratch for scoreDraw.
using GroupPlacerTrainFn =
    llvm::function_ref<void(PolicySearch &Search, const torch::Tensor &X,
                            std::vector<uint32_t> &Placement)>;

/// The search of group placer \p Policy (the Hierarchical Planner, EAGLE)
/// as \p S asks: loaded from S.LoadFile when there is one, then placing
/// zero-shot (placeZeroShot, with \p GroupingEach) when not finetuned,
/// else trained by \p Train; its result as finishSearch gives it.
/// \p DefaultSamples and \p Mu are the PolicySearch's.
llvm::Expected<SearchResult>
searchGroupPlacer(const LearnTask &T, const SearchOptions &S,
                  GroupPlacer &Policy, std::mt19937_64 &Rng,
                  llvm::StringRef Name, uint64_t DefaultSamples, double Mu,
                  bool GroupingEach, GroupPlacerTrainFn Train);

} // namespace learn
} // namespace dp

#endif // DP_LIB_LEARN_GROUPER_H
