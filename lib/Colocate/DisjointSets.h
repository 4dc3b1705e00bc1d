//===- DisjointSets.h - Union-find over dense ids ---------------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Union-find over dense ids whose representative is always the smallest id
/// of its set, so that results never depend on the order of unions.
///
//===----------------------------------------------------------------------===//

#ifndef DP_LIB_COLOCATE_DISJOINTSETS_H
#define DP_LIB_COLOCATE_DISJOINTSETS_H

#include <cstdint>
#include <numeric>
#include <vector>

namespace dp {

class DisjointSets {
public:
  explicit DisjointSets(unsigned N) : Parent(N) {
    std::iota(Parent.begin(), Parent.end(), 0u);
  }

  unsigned size() const { return Parent.size(); }

  uint32_t find(uint32_t X) {
    while (Parent[X] != X)
      X = Parent[X] = Parent[Parent[X]];
    return X;
  }

  /// Joins the sets of \p A and \p B; returns whether they were apart.
  bool join(uint32_t A, uint32_t B) {
    A = find(A);
    B = find(B);
    if (A == B)
      return false;
    if (A < B)
      Parent[B] = A;
    else
      Parent[A] = B;
    return true;
  }

  /// The representative of every element.
  std::vector<uint32_t> roots() {
    std::vector<uint32_t> R(Parent.size());
    for (uint32_t I = 0, E = Parent.size(); I != E; ++I)
      R[I] = find(I);
    return R;
  }

private:
  std::vector<uint32_t> Parent;
};

} // namespace dp

#endif // DP_LIB_COLOCATE_DISJOINTSETS_H
