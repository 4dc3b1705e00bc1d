//===- PassManagerTest.cpp - Analyses and driver options ------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/IR/PassManager.h"
#include "dp/IR/Graph.h"

#include "gtest/gtest.h"

#include <string>
#include <vector>

using namespace dp;

namespace {

struct Count {
  static constexpr llvm::StringLiteral AnalysisKey = "count";
  int N = 0;
};
struct Other {
  static constexpr llvm::StringLiteral AnalysisKey = "other";
};

/// Stores a Count, or reads the one stored (into Seen), as told.
struct CountPass {
  bool Store;
  std::vector<const Count *> *Seen;
  static llvm::StringRef name() { return "count"; }
  llvm::Error run(Graph &, PassContext &Ctx) {
    if (Store)
      Ctx.Analyses.set(Count{int(Seen->size())});
    Seen->push_back(Ctx.Analyses.get<Count>());
    return llvm::Error::success();
  }
};

/// Changes nothing the analyses depend on.
struct ReadOnlyPass {
  static llvm::StringRef name() { return "read-only"; }
  static bool preservesAnalyses() { return true; }
  llvm::Error run(Graph &, PassContext &) { return llvm::Error::success(); }
};

/// May change the graph.
struct ChangingPass {
  static llvm::StringRef name() { return "changing"; }
  llvm::Error run(Graph &, PassContext &) { return llvm::Error::success(); }
};

/// Takes driver option "file" unless the pipeline gave one.
struct FilePass {
  std::string File;
  std::string *Out;
  static llvm::StringRef name() { return "file"; }
  bool setDriverOption(llvm::StringRef Key, llvm::StringRef Value) {
    if (Key != "file")
      return false;
    if (File.empty())
      File = Value.str();
    return true;
  }
  llvm::Error run(Graph &, PassContext &) {
    *Out = File;
    return llvm::Error::success();
  }
};

TEST(AnalysisCacheTest, StoresByKeyAndDropsWhatWasThere) {
  AnalysisCache A;
  EXPECT_EQ(A.get<Count>(), nullptr);
  A.set(Count{3});
  A.set(Other{});
  ASSERT_NE(A.get<Count>(), nullptr);
  EXPECT_EQ(A.get<Count>()->N, 3);
  auto Before = A.snapshot();
  // Stored again: a new result, which drop() keeps.
  A.set(Count{4});
  A.drop(Before);
  ASSERT_NE(A.get<Count>(), nullptr);
  EXPECT_EQ(A.get<Count>()->N, 4);
  EXPECT_EQ(A.get<Other>(), nullptr);
  A.erase<Count>();
  EXPECT_TRUE(A.empty());
}

TEST(PassManagerTest, PassesThatChangeTheGraphDropEarlierResults) {
  std::vector<const Count *> Seen;
  PassManager PM;
  PM.addPass(CountPass{true, &Seen});
  PM.addPass(ReadOnlyPass());
  PM.addPass(CountPass{false, &Seen});
  PM.addPass(ChangingPass());
  PM.addPass(CountPass{false, &Seen});
  Graph G;
  PassContext Ctx;
  ASSERT_FALSE(bool(PM.run(G, Ctx)));
  ASSERT_EQ(Seen.size(), 3u);
  // The pass that stored it sees it; so does the next, after a pass that
  // preserves analyses; after a pass that may change the graph, it is gone.
  ASSERT_NE(Seen[0], nullptr);
  EXPECT_EQ(Seen[1], Seen[0]);
  EXPECT_EQ(Seen[2], nullptr);
}

TEST(PassManagerTest, ResultsStoredByAChangingPassStay) {
  std::vector<const Count *> Seen;
  PassManager PM;
  PM.addPass(CountPass{true, &Seen}); // not read-only itself
  PM.addPass(CountPass{false, &Seen});
  Graph G;
  PassContext Ctx;
  ASSERT_FALSE(bool(PM.run(G, Ctx)));
  ASSERT_EQ(Seen.size(), 2u);
  EXPECT_NE(Seen[1], nullptr);
  EXPECT_EQ(Seen[1], Seen[0]);
}

TEST(PassManagerTest, DriverOptionsFillWhatThePipelineLeavesOut) {
  std::string A, B;
  PassManager PM;
  PM.addPass(FilePass{"", &A});
  PM.addPass(FilePass{"own.json", &B});
  PM.addPass(ChangingPass());
  EXPECT_TRUE(PM.setDriverOption("file", "driver.json"));
  EXPECT_FALSE(PM.setDriverOption("other", "x"));
  Graph G;
  PassContext Ctx;
  ASSERT_FALSE(bool(PM.run(G, Ctx)));
  EXPECT_EQ(A, "driver.json");
  EXPECT_EQ(B, "own.json");
}

} // namespace
