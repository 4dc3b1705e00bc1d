//===- TFStrategy.cpp - TensorFlow's colocation rules ---------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
//
// ColocRL (Mirhoseini et al. 2017, section 3): "we rely on TensorFlow's
// default co-location groups, such as co-locating each operation's outputs
// with its gradients [our `colocate` hints]. We further apply a simple
// heuristic to merge more operations into co-location groups: if the output
// of an operation is consumed by only one other operation, then the two
// operations are co-located. [...] we apply this heuristic recursively, and
// at each iteration we treat the co-location groups as operations".
//
//===----------------------------------------------------------------------===//

#include "dp/Colocate/Colocate.h"

#include "llvm/ADT/IntEqClasses.h"
#include "llvm/ADT/STLExtras.h"

using namespace llvm;

namespace dp {

static constexpr uint32_t None = ~0u;

Grouping groupByTF(const Graph &G) {
  Grouping Hints = getHintClasses(G);
  unsigned N = Hints.NumGroups;

  // Producer -> consumer pairs between hint classes, through activations.
  std::vector<std::pair<uint32_t, uint32_t>> Edges;
  forEachCrossGroupUse(G, Hints.GroupOf, [&](uint32_t From, OpId User) {
    Edges.emplace_back(From, Hints.GroupOf[User]);
  });

  IntEqClasses Sets(N);
  std::vector<uint32_t> Consumer(N);
  std::vector<uint8_t> Several(N);
  while (true) {
    // Between groups as they are now, without repeats.
    for (auto &[From, To] : Edges) {
      From = Sets.findLeader(From);
      To = Sets.findLeader(To);
    }
    llvm::sort(Edges);
    Edges.erase(std::unique(Edges.begin(), Edges.end()), Edges.end());
    erase_if(Edges, [](const std::pair<uint32_t, uint32_t> &E) {
      return E.first == E.second;
    });

    std::fill(Consumer.begin(), Consumer.end(), None);
    std::fill(Several.begin(), Several.end(), 0);
    for (const auto &[From, To] : Edges) {
      if (Consumer[From] == None)
        Consumer[From] = To;
      else
        Several[From] = 1;
    }
    // Joining a group to its only consumer adds no consumer to the joint
    // group, so every decision of this round stays right after the joins
    // before it.
    bool Changed = false;
    for (uint32_t X = 0; X != N; ++X)
      if (Consumer[X] != None && !Several[X])
        if (Sets.findLeader(X) != Sets.findLeader(Consumer[X])) {
          Sets.join(X, Consumer[X]);
          Changed = true;
        }
    if (!Changed)
      break;
  }

  std::vector<uint32_t> Keys(G.getNumOps());
  for (OpId O = 0, E = G.getNumOps(); O != E; ++O)
    Keys[O] = Sets.findLeader(Hints.GroupOf[O]);
  return makeGrouping(Keys);
}

} // namespace dp
