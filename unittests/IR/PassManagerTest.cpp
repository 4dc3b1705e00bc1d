//===- PassManagerTest.cpp - Analyses and driver options ------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/IR/PassManager.h"
#include "dp/IR/Attribute.h"
#include "dp/IR/Graph.h"

#include "gtest/gtest.h"

#include <string>
#include <vector>

using namespace dp;

namespace {

struct Count {
  static constexpr llvm::StringLiteral AnalysisKey = "count";
  static constexpr GraphChange DependsOn = GraphChange::All;
  int N = 0;
};
struct Other {
  static constexpr llvm::StringLiteral AnalysisKey = "other";
  static constexpr GraphChange DependsOn = GraphChange::All;
};
/// A result computed from the devices only, and one from the costs only.
struct FromDevices {
  static constexpr llvm::StringLiteral AnalysisKey = "from-devices";
  static constexpr GraphChange DependsOn = GraphChange::Devices;
};
struct FromCosts {
  static constexpr llvm::StringLiteral AnalysisKey = "from-costs";
  static constexpr GraphChange DependsOn = GraphChange::Costs;
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
  static GraphChange changes() { return GraphChange::None; }
  llvm::Error run(Graph &, PassContext &) { return llvm::Error::success(); }
};

/// May change the graph.
struct ChangingPass {
  static llvm::StringRef name() { return "changing"; }
  llvm::Error run(Graph &, PassContext &) { return llvm::Error::success(); }
};

/// Sets the first op's annotation \p Name to 1 and declares \p Declared.
struct AnnotatingPass {
  std::string Annotation;
  GraphChange Declared;
  static llvm::StringRef name() { return "annotating"; }
  GraphChange changes() const { return Declared; }
  llvm::Error run(Graph &G, PassContext &) {
    G.getOp(0).Annotations.set(Annotation, Attribute::getInt(1));
    return llvm::Error::success();
  }
};

/// Stores a FromDevices and a FromCosts.
struct StoreBothPass {
  static llvm::StringRef name() { return "store-both"; }
  llvm::Error run(Graph &, PassContext &Ctx) {
    Ctx.Analyses.set(FromDevices{});
    Ctx.Analyses.set(FromCosts{});
    return llvm::Error::success();
  }
};

/// A graph of one op.
static void addOneOp(Graph &G) {
  G.setName("one");
  TensorId X = G.addInput("x", TensorType(DTypeKind::F32, {1}));
  G.addOp("relu", "", "Relu", {X}, {{"y", TensorType(DTypeKind::F32, {1})}});
}

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

TEST(AnalysisCacheTest, InvalidateDropsWhatDependsOnTheChange) {
  AnalysisCache A;
  A.set(FromDevices{});
  A.set(FromCosts{});
  A.set(Count{1});
  A.invalidate(GraphChange::Devices);
  EXPECT_EQ(A.get<FromDevices>(), nullptr);
  EXPECT_NE(A.get<FromCosts>(), nullptr);
  EXPECT_EQ(A.get<Count>(), nullptr);
  A.invalidate(GraphChange::None);
  EXPECT_NE(A.get<FromCosts>(), nullptr);
}

TEST(PassManagerTest, APassDropsOnlyWhatDependsOnWhatItChanges) {
  PassManager PM;
  PM.addPass(StoreBothPass());
  PM.addPass(AnnotatingPass{"device", GraphChange::Devices});
  Graph G;
  addOneOp(G);
  PassContext Ctx;
  ASSERT_FALSE(bool(PM.run(G, Ctx)));
  EXPECT_EQ(Ctx.Analyses.get<FromDevices>(), nullptr);
  EXPECT_NE(Ctx.Analyses.get<FromCosts>(), nullptr);
}

TEST(PassManagerTest, VerificationCatchesAChangeThePassDidNotDeclare) {
  struct Case {
    const char *Annotation;
    GraphChange Declared;
    const char *Error; // empty: none
  } Cases[] = {
      {"device", GraphChange::Devices, ""},
      {"device", GraphChange::Costs,
       "pass 'annotating' changed the graph's devices, but declares that it "
       "changes costs"},
      {"time.p100", GraphChange::Costs, ""},
      {"flops", GraphChange::None,
       "pass 'annotating' changed the graph's costs, but declares that it "
       "changes nothing"},
      {"group", GraphChange::Groups | GraphChange::Devices, ""},
      {"rnn", GraphChange::Devices | GraphChange::Costs | GraphChange::Groups,
       "changed the graph's structure, but declares that it changes "
       "devices, costs, groups"},
  };
  for (const Case &C : Cases) {
    SCOPED_TRACE(C.Annotation);
    PassManager PM;
    PM.setVerifyEach(true);
    PM.addPass(AnnotatingPass{C.Annotation, C.Declared});
    Graph G;
    addOneOp(G);
    PassContext Ctx;
    llvm::Error E = PM.run(G, Ctx);
    std::string Message = E ? llvm::toString(std::move(E)) : "";
    if (!*C.Error)
      EXPECT_EQ(Message, "");
    else
      EXPECT_NE(Message.find(C.Error), std::string::npos) << Message;
  }
  // Without verification, nobody checks.
  PassManager PM;
  PM.addPass(AnnotatingPass{"device", GraphChange::None});
  Graph G;
  addOneOp(G);
  PassContext Ctx;
  EXPECT_FALSE(bool(PM.run(G, Ctx)));
}

TEST(PassManagerTest, ReportedFiguresBelongToNoPart) {
  EXPECT_EQ(getAnnotationPart("step_time_s", /*OnGraph=*/true),
            GraphChange::None);
  EXPECT_EQ(getAnnotationPart("placer", true), GraphChange::Devices);
  EXPECT_EQ(getAnnotationPart("groups", true), GraphChange::Groups);
  EXPECT_EQ(getAnnotationPart("time_shared.k80", false), GraphChange::Costs);
  EXPECT_EQ(getAnnotationPart("step_time_s", false), GraphChange::Structure);
  EXPECT_EQ(describeChange(GraphChange::All),
            "devices, costs, groups, structure");
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
