//===- SavedPolicy.h - save= in the learned placers' tests ------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#ifndef DP_UNITTESTS_LEARN_SAVEDPOLICY_H
#define DP_UNITTESTS_LEARN_SAVEDPOLICY_H

#include "dp/Learn/Search.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

namespace dp {
namespace test {

/// What dp does with save=: writes \p R's trained policy to its file.
/// A policy file that is removed at the end of the test.
struct TempPolicy {
  llvm::SmallString<128> Path;
  TempPolicy() {
    EXPECT_FALSE(llvm::sys::fs::createTemporaryFile("policy", "pt", Path));
  }
  ~TempPolicy() { llvm::sys::fs::remove(Path); }
};

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
