//===- CostSourceTest.cpp - The registry of cost sources ------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "CostTestUtil.h"
#include "DiagnosticsTestUtil.h"

#include "dp/Cost/CostAnnotate.h"
#include "dp/Cost/CostSource.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

using namespace llvm;
using namespace dp;
using namespace dp::test;

namespace {

// Counted from the table itself, so that a record the registry's arrays
// miss fails here.
constexpr unsigned NumKinds = 0
#define COST_SOURCE(KIND, NAME, ID, DESCRIPTION) +1
#define PROFILE_COST_SOURCE(KIND, NAME, ID, DESCRIPTION) +1
#include "dp/Cost/CostSources.def"
    ;

TEST(CostSourceTest, EveryKindListedOnceInEnumOrder) {
  ArrayRef<CostSourceInfo> Sources = getCostSources();
  ASSERT_EQ(Sources.size(), NumKinds);
  for (unsigned I = 0; I != NumKinds; ++I) {
    CostSourceKind K = CostSourceKind(I);
    EXPECT_EQ(Sources[I].Kind, K);
    EXPECT_EQ(&getCostSourceInfo(K), &Sources[I]);
    EXPECT_EQ(getCostSourceName(K), Sources[I].Name);
    EXPECT_TRUE(Sources[I].Create) << Sources[I].Name.str();
    EXPECT_FALSE(Sources[I].Description.empty()) << Sources[I].Name.str();
  }
}

TEST(CostSourceTest, NamesAreUniqueAndKnown) {
  StringSet<> Seen;
  for (const CostSourceInfo &S : getCostSources()) {
    EXPECT_FALSE(S.Name.empty());
    EXPECT_TRUE(Seen.insert(S.Name).second) << S.Name.str() << " twice";
  }
  // The names cost_source has always written.
  EXPECT_EQ(getCostSourceName(CostSourceKind::Roofline), "roofline");
  EXPECT_EQ(getCostSourceName(CostSourceKind::OneDNN), "onednn");
  EXPECT_EQ(getCostSourceName(CostSourceKind::Profile), "profile");
}

// The order is the precedence: the roofline beneath everything, the
// profiles above every source that times ops on their own.
TEST(CostSourceTest, RooflineFirstProfilesLast) {
  ArrayRef<CostSourceInfo> Sources = getCostSources();
  ASSERT_FALSE(Sources.empty());
  EXPECT_EQ(Sources.front().Kind, CostSourceKind::Roofline);
  EXPECT_FALSE(Sources.front().IsProfile);
  bool SeenProfile = false;
  for (const CostSourceInfo &S : Sources) {
    if (SeenProfile) {
      EXPECT_TRUE(S.IsProfile) << S.Name.str() << " after a profile";
    }
    SeenProfile |= S.IsProfile;
  }
  EXPECT_TRUE(getCostSourceInfo(CostSourceKind::Profile).IsProfile);
}

TEST(CostSourceTest, SourceChoicesComeFromTheRegistry) {
  std::vector<std::string> Names;
  for (const CostSourceInfo &S : getCostSources())
    if (!S.IsProfile)
      Names.push_back(S.Name.str());
  ArrayRef<EnumEntry<CostSourceKind>> Choices = getChoosableCostSources();
  ASSERT_EQ(Choices.size(), Names.size());
  for (size_t I = 0; I != Names.size(); ++I) {
    EXPECT_EQ(Choices[I].Name, Names[I]);
    EXPECT_EQ(Choices[I].Value, getCostSources()[I].Kind);
    std::vector<std::pair<std::string, std::string>> KVs = {
        {"source", Names[I]}};
    Expected<CostOptions> O = CostAnnotatePass::parseOptions(KVs);
    ASSERT_TRUE(bool(O)) << toString(O.takeError());
    EXPECT_EQ(O->Source, Choices[I].Value);
  }

  // -print-passes shows the same choices.
  std::string Usage =
      getPassOptionUsage<CostOptions>(CostAnnotatePass::describeOptions);
  EXPECT_NE(Usage.find("source=" + join(Names, "|") + ","), std::string::npos)
      << Usage;

  // A profile is given by profile=, not chosen by source=.
  std::vector<std::pair<std::string, std::string>> KVs = {
      {"source", "profile"}};
  Expected<CostOptions> O = CostAnnotatePass::parseOptions(KVs);
  ASSERT_FALSE(bool(O));
  std::vector<Diag> D = collectErrors(O.takeError());
  ASSERT_EQ(D.size(), 1u);
  EXPECT_EQ(D[0].Message, "cost-annotate: source must be " +
                              listEnumNames(Choices) + ", not 'profile'");
}

class CostSourceCreateTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(sys::fs::createUniqueDirectory("dp-cost-source-test", Dir));
  }
  void TearDown() override { sys::fs::remove_directories(Dir); }

  std::unique_ptr<CostSource> create(CostSourceKind K,
                                     const CostOptions &Opts) {
    CostSourceSetup Setup{Opts, C};
    Expected<std::unique_ptr<CostSource>> S =
        getCostSourceInfo(K).Create(Setup);
    EXPECT_TRUE(bool(S)) << toString(S.takeError());
    return S ? std::move(*S) : nullptr;
  }

  std::string writeFile(StringRef Name, StringRef Text) {
    SmallString<128> Path(Dir);
    sys::path::append(Path, Name);
    std::error_code EC;
    raw_fd_ostream OS(Path, EC);
    EXPECT_FALSE(EC) << EC.message();
    OS << Text;
    return std::string(Path);
  }

  // Types: 0 "g" (a GPU), 1 "c" (a CPU).
  Cluster C = makeTestCluster();
  SmallString<128> Dir;
};

TEST_F(CostSourceCreateTest, EachTimesItsTypes) {
  CostOptions Opts;
  std::unique_ptr<CostSource> Roofline = create(CostSourceKind::Roofline, Opts);
  ASSERT_TRUE(Roofline);
  EXPECT_EQ(Roofline->getName(), "roofline");
  EXPECT_TRUE(Roofline->timesType(0));
  EXPECT_TRUE(Roofline->timesType(1));
  // Not asked for: no source.
  EXPECT_FALSE(create(CostSourceKind::OneDNN, Opts));
  EXPECT_FALSE(create(CostSourceKind::Profile, Opts));

  Opts.Source = CostSourceKind::OneDNN;
  Opts.CacheDir = std::string(Dir);
  std::unique_ptr<CostSource> OneDNN = create(CostSourceKind::OneDNN, Opts);
  ASSERT_TRUE(OneDNN);
  EXPECT_FALSE(OneDNN->timesType(0));
  EXPECT_TRUE(OneDNN->timesType(1));

  Opts = CostOptions();
  Opts.ProfilePath = writeFile(
      "ort.json", R"([{"cat": "Node", "name": "op_kernel_time", "dur": 5}])");
  std::unique_ptr<CostSource> Profile = create(CostSourceKind::Profile, Opts);
  ASSERT_TRUE(Profile);
  // The first GPU type by default.
  EXPECT_TRUE(Profile->timesType(0));
  EXPECT_FALSE(Profile->timesType(1));
  Opts.ProfileDevice = "c";
  Profile = create(CostSourceKind::Profile, Opts);
  ASSERT_TRUE(Profile);
  EXPECT_FALSE(Profile->timesType(0));
  EXPECT_TRUE(Profile->timesType(1));
}

TEST_F(CostSourceCreateTest, ProfileTimesWhatItNamesAndNotesTheRest) {
  CostOptions Opts;
  Opts.ProfilePath = writeFile(
      "ort.json", R"([{"cat": "Node", "name": "op_kernel_time", "dur": 5}])");
  std::unique_ptr<CostSource> Profile = create(CostSourceKind::Profile, Opts);
  ASSERT_TRUE(Profile);
  Graph G;
  OpId O = addOp(G, "Relu", {f32({4})}, {f32({4})});
  OpId Other = addOp(G, "Relu", {f32({4})}, {f32({4})}, {}, "", "other");
  double Times[] = {1, 2};
  OpCosting Op(G, O, C.getTypes(), Times);
  EXPECT_TRUE(Profile->time(Op));
  EXPECT_DOUBLE_EQ(Times[0], 5e-6);
  EXPECT_EQ(Times[1], 2);
  EXPECT_EQ(Op.Note, "");

  OpCosting Unnamed(G, Other, C.getTypes(), Times);
  Unnamed.Source = CostSourceKind::OneDNN;
  EXPECT_FALSE(Profile->time(Unnamed));
  EXPECT_EQ(Unnamed.Note, "not in the profile: onednn estimate");
  AttributeList A;
  Profile->annotateGraph(A);
  EXPECT_EQ(A.get("profile_unmatched")->getInt(), 1);
}

/// A source of the shape a CUDA source would have: one measurement per op
/// (cuBLAS, cuDNN), for the cluster's GPU types. The registry has no CUDA
/// record, so it borrows oneDNN's kind; only setTimes is under test.
class GPUKernelSource : public CostSource {
public:
  explicit GPUKernelSource(const Cluster &C)
      : CostSource(CostSourceKind::OneDNN), Types(C.getTypes()) {}
  bool timesType(unsigned T) const override {
    return Types[T].Kind == DeviceKind::GPU;
  }
  bool time(OpCosting &Op) override {
    if (!Op.Work)
      return false;
    setTimes(Op, 1e-3, 2);
    Op.WorkspaceBytes = 64;
    return true;
  }

private:
  ArrayRef<DeviceType> Types;
};

TEST_F(CostSourceCreateTest, SetTimesWritesTheTypesASourceTimes) {
  Graph G;
  OpId O = addOp(G, "Relu", {f32({4})}, {f32({4})});
  OpWork W = estimateWork(G, O);
  double Times[] = {1, 2};
  OpCosting Op(G, O, C.getTypes(), Times);
  GPUKernelSource S(C);
  EXPECT_FALSE(S.time(Op)) << "declines an op without its work";
  EXPECT_EQ(Times[0], 1);
  Op.Work = &W;
  EXPECT_TRUE(S.time(Op));
  // The measurement plus two launches of the GPU's 10 us; the CPU's time
  // stays.
  EXPECT_DOUBLE_EQ(Times[0], 1e-3 + 2e-5);
  EXPECT_EQ(Times[1], 2);
  EXPECT_EQ(Op.WorkspaceBytes, 64u);
}

} // namespace
