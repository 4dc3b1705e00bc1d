//===- dp/Learn/Placers.h - The learned placers -----------------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Entry points of the learned placers, torch-free. Each takes the task,
/// the common search options and its own options as given in
/// place{...} (validated here, with errors that name the placer).
///
//===----------------------------------------------------------------------===//

#ifndef DP_LEARN_PLACERS_H
#define DP_LEARN_PLACERS_H

#include "dp/Learn/Search.h"

#include <string>
#include <utility>
#include <vector>

namespace dp {

using LearnOptions = llvm::ArrayRef<std::pair<std::string, std::string>>;

/// Mars (Lan et al. 2021): a 3-layer GCN encoder pre-trained with Deep
/// Graph Infomax and a segment-level seq2seq placer, trained jointly with
/// PPO. Options: pretrain=N, segment=N, hidden=N, gcn-hidden=N, lr=X,
/// device=auto|cpu|cuda (auto: CUDA when libtorch sees a device).
llvm::Expected<SearchResult> searchMars(const LearnTask &T,
                                        const SearchOptions &S,
                                        LearnOptions Opts);

/// Mars's encoder pre-training alone: a fresh GCN (3 layers of \p Hidden
/// units) trained with DGI for \p Iterations on \p T; the loss of every
/// iteration.
std::vector<double> pretrainGraphEncoder(const LearnTask &T,
                                         unsigned Iterations, unsigned Hidden,
                                         uint64_t Seed, unsigned Threads = 0);

/// Placeto (Addanki et al. 2019): episodes that visit every unit once in
/// \p T's order and move it to the device a policy picks from the current
/// placement (two-way message passing over the unit graph, summaries of
/// the unit's ancestors, descendants and parallel units), trained with
/// REINFORCE and a per-step baseline. Its node features are \p T's rows
/// plus the current device, visited and current flags; its parameters do
/// not depend on the graph, so load= without finetune= places an unseen
/// graph zero-shot. Options: episodes=N, lr=X, hidden=N, hops=N,
/// intermediate=true|false.
llvm::Expected<SearchResult> searchPlaceto(const LearnTask &T,
                                           const SearchOptions &S,
                                           LearnOptions Opts);

/// ColocRL (Mirhoseini et al. 2017): an attentional seq2seq LSTM over the
/// units in topological order (op-type embedding, feature row, adjacency
/// one-hot), trained with REINFORCE and a moving-average baseline. Its
/// adjacency input is as wide as the unit count, so a saved policy only
/// loads for a graph with as many units. Options: hidden=N, lr=X.
llvm::Expected<SearchResult> searchColocRL(const LearnTask &T,
                                           const SearchOptions &S,
                                           LearnOptions Opts);

/// Hierarchical Planner (Mirhoseini et al. 2018): a feed-forward grouper
/// puts each unit in one of groups=N groups; a seq2seq placer reads the
/// group embeddings and names a device per group; both are trained jointly
/// with REINFORCE. Options: groups=N, hidden=N, grouper-hidden=N, lr=X.
llvm::Expected<SearchResult> searchHierarchical(const LearnTask &T,
                                                const SearchOptions &S,
                                                LearnOptions Opts);

/// EAGLE (Lan et al. 2021): the Hierarchical Planner's grouper and
/// placer, linked by an extra RNN that turns the grouper's parameters into
/// placer inputs, trained with PPO (train=ppo) or PPO with Post's
/// cross-entropy steps on elite placements (train=ppo-ce). Options:
/// groups=N, hidden=N, grouper-hidden=N, lr=X, train=ppo|ppo-ce.
llvm::Expected<SearchResult> searchEAGLE(const LearnTask &T,
                                         const SearchOptions &S,
                                         LearnOptions Opts);

} // namespace dp

#endif // DP_LEARN_PLACERS_H
