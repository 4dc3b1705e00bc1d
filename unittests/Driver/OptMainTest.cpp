//===- OptMainTest.cpp - dp-opt as a library, and passes of one's own -----===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/Driver/OptMain.h"
#include "dp/IR/Graph.h"
#include "dp/Passes/PassBuilder.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <string>

using namespace dp;
using namespace llvm;

namespace {

/// Fails, or counts the ops it sees, as its option says.
struct ProbeOptions {
  bool Fail = false;
};
struct ProbePass {
  ProbeOptions Opts;
  static unsigned Seen;
  explicit ProbePass(ProbeOptions O = {}) : Opts(O) {}
  static StringRef name() { return "probe"; }
  static GraphChange changes() { return GraphChange::None; }
  Error run(Graph &G, PassContext &) {
    if (Opts.Fail)
      return makeNodeError(G.getOp(0).Name, "the probe fails here");
    Seen = G.getNumOps();
    return Error::success();
  }
  static OptionTable describeOptions(ProbeOptions &O) {
    OptionTable T(name().str());
    T.flag("fail", O.Fail);
    return T;
  }
  static Expected<ProbeOptions> parseOptions(OptionList Options) {
    return parsePassOptions<ProbeOptions>(Options, describeOptions);
  }
};
unsigned ProbePass::Seen = 0;

class OptMainTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    cantFail(registerPass<ProbePass, ProbeOptions>("a pass of the test's"));
  }
  void SetUp() override {
    ASSERT_FALSE(sys::fs::createUniqueDirectory("dp-optmain", Dir));
    Model = path("m.onnxtxt");
    std::error_code EC;
    raw_fd_ostream OS(Model, EC);
    ASSERT_FALSE(EC);
    OS << R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3] x) => (float[2, 3] y) {
  h = Relu(x)
  y = Neg(h)
}
)";
  }
  void TearDown() override { sys::fs::remove_directories(Dir); }
  std::string path(StringRef Name) {
    SmallString<128> P(Dir);
    sys::path::append(P, Name);
    return std::string(P);
  }

  SmallString<128> Dir;
  std::string Model;
};

TEST_F(OptMainTest, RunsAJobAndWritesItsFiles) {
  std::string Report;
  raw_string_ostream OS(Report);
  OptJob Job;
  Job.Input = Model;
  Job.Pipeline = "probe,cost-annotate,place{algo=single},simulate";
  Job.Cluster = "p100x4";
  Job.Output = path("m.dp");
  Job.OutputText = true;
  Job.Summary = path("s.json");
  Job.Report = &OS;
  Job.Progress = nullptr;
  ProbePass::Seen = 0;
  ASSERT_FALSE(bool(runOpt(Job)));
  // import-onnx ran first, then the registered pass.
  EXPECT_EQ(ProbePass::Seen, 2u);
  ErrorOr<std::unique_ptr<MemoryBuffer>> IR = MemoryBuffer::getFile(Job.Output);
  ASSERT_TRUE(bool(IR));
  std::string Text = (*IR)->getBuffer().str();
  EXPECT_EQ(Text.rfind("dp.graph", 0), 0u);
  EXPECT_NE(Text.find("device = \""), std::string::npos);
  EXPECT_TRUE(sys::fs::exists(Job.Summary));
}

TEST_F(OptMainTest, AFailedJobWritesNothingAndNamesTheInput) {
  OptJob Job;
  Job.Input = Model;
  Job.Pipeline = "cost-annotate,probe{fail=true}";
  Job.Cluster = "p100x4";
  Job.Output = path("m.dp");
  Job.Summary = path("s.json");
  Job.Report = nullptr;
  Job.Progress = nullptr;
  Error E = runOpt(Job);
  ASSERT_TRUE(bool(E));
  EXPECT_EQ(toString(std::move(E)),
            Model + ": node 'Relu_0': error: the probe fails here");
  EXPECT_FALSE(sys::fs::exists(Job.Output));
  EXPECT_FALSE(sys::fs::exists(Job.Summary));
}

TEST_F(OptMainTest, BadPipelinesAndClustersAreErrors) {
  OptJob Job;
  Job.Input = Model;
  Job.DisableOutput = true;
  Job.Report = Job.Progress = nullptr;
  Job.Pipeline = "probe{speed=1}";
  std::string Message = toString(runOpt(Job));
  EXPECT_NE(Message.find("probe: unknown option 'speed'"), std::string::npos)
      << Message;
  Job.Pipeline = "probe";
  Job.Cluster = "no-such-cluster";
  EXPECT_TRUE(bool(runOpt(Job)));
  Job.Cluster = "";
  Job.Input = path("missing.onnx");
  Message = toString(runOpt(Job));
  EXPECT_NE(Message.find(Job.Input + ": error: cannot read the input"),
            std::string::npos)
      << Message;
}

TEST_F(OptMainTest, RegisteredPassesAreListedOnceAndCheckedByName) {
  unsigned Probes = 0;
  for (const PassInfo &P : getRegisteredPasses())
    Probes += P.Name == "probe";
  EXPECT_EQ(Probes, 1u);
  EXPECT_EQ(getRegisteredPasses().back().Params, "fail=true|false");
  Error Twice = registerPass<ProbePass, ProbeOptions>("again");
  EXPECT_EQ(toString(std::move(Twice)),
            "error: cannot register pass 'probe': a pass of that name exists");
  Error Taken = registerPass(PassInfo{"place", "", "mine", ""}, nullptr);
  EXPECT_TRUE(bool(Taken));
  consumeError(std::move(Taken));
  Error BadName = registerPass(PassInfo{"a b", "", "mine", ""}, nullptr);
  EXPECT_EQ(toString(std::move(BadName)),
            "error: cannot register pass 'a b': a pass name is letters, "
            "digits, '-' and '_'");
}

} // namespace
