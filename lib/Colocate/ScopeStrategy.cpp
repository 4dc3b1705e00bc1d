//===- ScopeStrategy.cpp - Groups by ONNX name scope ----------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
//
// torch.onnx.export names each node by the module path it came from
// ("/bert/encoder/layer.3/attention/self/MatMul"), so the first components
// of that path are the model's layers. Ops of one scope form a group; the
// rules for ops without a scope and for backward ops are in
// docs/colocate.md.
//
//===----------------------------------------------------------------------===//

#include "dp/Colocate/Colocate.h"
#include "dp/IR/Annotations.h"

#include "llvm/ADT/IntEqClasses.h"
#include "llvm/ADT/StringMap.h"

#include <algorithm>

using namespace llvm;

namespace dp {

static constexpr uint32_t None = ~0u;

/// Whether \p Node has a `colocate` hint naming an op of \p G.
static bool hasHint(const Graph &G, const Op &Node) {
  Optional<StringRef> Hint = ann::get(Node, ann::Colocate);
  return Hint && G.lookupOp(*Hint) != NoId;
}

Grouping groupByScope(const Graph &G, unsigned Depth) {
  Grouping Hints = getHintClasses(G);
  unsigned N = Hints.NumGroups;

  // A class's scope is that of its op without a hint (the forward op its
  // backward and update ops point at), else of its first op.
  std::vector<OpId> Named(N, None);
  for (OpId O = 0, E = G.getNumOps(); O != E; ++O) {
    uint32_t C = Hints.GroupOf[O];
    if (Named[C] == None ||
        (hasHint(G, G.getOp(Named[C])) && !hasHint(G, G.getOp(O))))
      Named[C] = O;
  }
  IntEqClasses Sets(N);
  std::vector<uint8_t> Scoped(N, 0);
  StringMap<uint32_t> ByScope;
  for (uint32_t C = 0; C != N; ++C) {
    const Op &Node = G.getOp(Named[C]);
    StringRef Scope = getNameScope(
        Node.SourceName.empty() ? Node.Name : Node.SourceName, Depth);
    if (Scope.empty())
      continue;
    Scoped[C] = 1;
    auto [It, Inserted] = ByScope.try_emplace(Scope, C);
    if (!Inserted)
      Sets.join(C, It->second);
  }

  // A class without a scope goes with its first reader (in graph order)
  // outside it; chains of such classes end at a scoped class or at one
  // that no other class reads, which stays a group of its own.
  std::vector<OpId> FirstReader(N, None);
  forEachCrossGroupUse(G, Hints.GroupOf, [&](uint32_t From, OpId User) {
    FirstReader[From] = std::min(FirstReader[From], User);
  });
  for (uint32_t C = 0; C != N; ++C)
    if (!Scoped[C] && FirstReader[C] != None)
      Sets.join(C, Hints.GroupOf[FirstReader[C]]);

  std::vector<uint32_t> Keys(G.getNumOps());
  for (OpId O = 0, E = G.getNumOps(); O != E; ++O)
    Keys[O] = Sets.findLeader(Hints.GroupOf[O]);
  return makeGrouping(Keys);
}

} // namespace dp
