//===- SavedPolicy.h - save= in the learned placers' tests ------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#ifndef DP_UNITTESTS_LEARN_SAVEDPOLICY_H
#define DP_UNITTESTS_LEARN_SAVEDPOLICY_H

#include "dp/Learn/Search.h"

#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

namespace dp {
namespace test {

/// What dp does with save=: writes \p R's trained policy to its file.
inline void writeSavedPolicy(const SearchResult &R, llvm::StringRef Path) {
  ASSERT_FALSE(R.SavedPolicy.empty());
  std::error_code EC;
  llvm::raw_fd_ostream OS(Path, EC);
  ASSERT_FALSE(EC) << EC.message();
  OS << R.SavedPolicy;
}

} // namespace test
} // namespace dp

#endif // DP_UNITTESTS_LEARN_SAVEDPOLICY_H
