//===- Grouping.cpp - Ops in groups, and the group graph ------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/IR/Grouping.h"
#include "dp/IR/Annotations.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/IntEqClasses.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <algorithm>

using namespace llvm;

namespace dp {

Grouping makeGrouping(ArrayRef<uint32_t> Keys) {
  Grouping Gr;
  Gr.GroupOf.resize(Keys.size());
  // 64-bit keys: no 32-bit value collides with DenseMap's empty key.
  DenseMap<uint64_t, uint32_t> Dense;
  for (size_t I = 0, E = Keys.size(); I != E; ++I)
    Gr.GroupOf[I] = Dense.try_emplace(Keys[I], Dense.size()).first->second;
  Gr.NumGroups = Dense.size();
  return Gr;
}

Grouping getHintClasses(const Graph &G) {
  unsigned N = G.getNumOps();
  IntEqClasses Classes(N);
  for (OpId O = 0; O != N; ++O) {
    Optional<StringRef> Hint = ann::get(G.getOp(O), ann::Colocate);
    if (!Hint)
      continue;
    OpId Other = G.lookupOp(*Hint);
    if (Other != NoId)
      Classes.join(O, Other);
  }
  Classes.compress();
  Grouping Gr;
  Gr.GroupOf.resize(N);
  for (OpId O = 0; O != N; ++O)
    Gr.GroupOf[O] = Classes[O];
  Gr.NumGroups = Classes.getNumClasses();
  return Gr;
}

std::vector<GroupEdge> getGroupEdges(const Graph &G, ArrayRef<uint32_t> GroupOf,
                                     bool ActivationsOnly) {
  DenseMap<uint64_t, uint64_t> EdgeBytes;
  SmallVector<uint32_t, 4> Seen;
  for (const Tensor &Tn : G.tensors()) {
    if (Tn.Uses.empty() || (ActivationsOnly && Tn.Producer == NoId))
      continue;
    uint64_t Bytes = Tn.Type.getSizeInBytes().getValueOr(0);
    uint32_t From =
        GroupOf[Tn.Producer != NoId ? Tn.Producer : Tn.Uses.front().User];
    Seen.clear();
    for (const Use &U : Tn.Uses) {
      uint32_t To = GroupOf[U.User];
      if (To == From || is_contained(Seen, To))
        continue;
      Seen.push_back(To);
      EdgeBytes[(uint64_t(From) << 32) | To] += Bytes;
    }
  }
  std::vector<GroupEdge> Edges;
  Edges.reserve(EdgeBytes.size());
  for (const auto &KV : EdgeBytes)
    Edges.push_back(GroupEdge{uint32_t(KV.first >> 32),
                              uint32_t(KV.first & 0xffffffffu), KV.second});
  llvm::sort(Edges, [](const GroupEdge &A, const GroupEdge &B) {
    return A.From != B.From ? A.From < B.From : A.To < B.To;
  });
  return Edges;
}

GroupAdjacency
GroupAdjacency::build(unsigned NumGroups, ArrayRef<GroupEdge> Edges, bool Out,
                      bool In, function_ref<bool(const GroupEdge &)> Keep) {
  GroupAdjacency A;
  A.Begin.assign(NumGroups + 1, 0);
  for (const GroupEdge &E : Edges) {
    if (Keep && !Keep(E))
      continue;
    A.Begin[E.From + 1] += Out;
    A.Begin[E.To + 1] += In;
  }
  for (unsigned G = 0; G != NumGroups; ++G)
    A.Begin[G + 1] += A.Begin[G];
  A.Groups.resize(A.Begin[NumGroups]);
  std::vector<uint32_t> Fill(A.Begin.begin(), A.Begin.end() - 1);
  for (const GroupEdge &E : Edges) {
    if (Keep && !Keep(E))
      continue;
    if (Out)
      A.Groups[Fill[E.From]++] = E.To;
    if (In)
      A.Groups[Fill[E.To]++] = E.From;
  }
  return A;
}

void forEachCrossGroupUse(const Graph &G, ArrayRef<uint32_t> GroupOf,
                          function_ref<void(uint32_t, OpId)> Fn) {
  for (const Tensor &Tn : G.tensors()) {
    if (Tn.Producer == NoId)
      continue;
    uint32_t From = GroupOf[Tn.Producer];
    for (const Use &U : Tn.Uses)
      if (GroupOf[U.User] != From)
        Fn(From, U.User);
  }
}

std::vector<uint64_t> getOpMemory(const Graph &G) {
  std::vector<uint64_t> Memory(G.getNumOps(), 0);
  for (OpId O = 0, E = G.getNumOps(); O != E; ++O) {
    const Op &Node = G.getOp(O);
    if (Optional<int64_t> Bytes = ann::get(Node, ann::PersistentBytes))
      if (*Bytes > 0)
        Memory[O] += uint64_t(*Bytes);
    for (TensorId T : Node.Results)
      if (T != NoId)
        Memory[O] += G.getTensor(T).Type.getSizeInBytes().getValueOr(0);
  }
  for (const Tensor &Tn : G.tensors())
    if (Tn.Producer == NoId && !Tn.Uses.empty())
      Memory[Tn.Uses.front().User] += Tn.Type.getSizeInBytes().getValueOr(0);
  return Memory;
}

uint64_t getHeldBytes(const Graph &G) {
  uint64_t Bytes = 0;
  for (TensorId T = 0, E = G.getNumTensors(); T != E; ++T)
    if (G.getTensor(T).Kind == TensorKind::Weight)
      Bytes += G.getTensor(T).Type.getSizeInBytes().getValueOr(0);
  for (OpId O = 0, E = G.getNumOps(); O != E; ++O)
    Bytes += std::max<int64_t>(
        0, ann::get(G.getOp(O), ann::PersistentBytes).getValueOr(0));
  return Bytes;
}

} // namespace dp
