//===- DeclaredChangesTest.cpp - What each pass says it changes -----------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
//
// Every registered pass runs here once, on a small model, with the
// manager's verification of declared changes on: the parts of the graph it
// changed must be among those it declares (GraphChange), and the parts it
// changes on this model are pinned, so that a pass that stops doing its
// work, or starts touching more, fails here. A pass added to
// PassRegistry.def without a case here fails too.
//
//===----------------------------------------------------------------------===//

#include "dp/Cluster/Cluster.h"
#include "dp/IR/Graph.h"
#include "dp/IR/PassManager.h"
#include "dp/Passes/PassBuilder.h"
#include "dp/Support/FileOutput.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <string>

using namespace dp;
using namespace llvm;

namespace {

/// (An op added or removed changes every part: its line is in each.)
/// A model with weights, a batch and an RNN: every pass has work on it.
constexpr const char *Model = R"(<ir_version: 8, opset_import: ["" : 17]>
rnnmlp (float[4, 2, 3] x) => (float[4, 2, 3] y)
  <float[1, 2, 3] w = {1, 2, 3, 4, 5, 6}, float[1, 2, 2] r = {1, 2, 3, 4},
   float[2, 3] fc = {1, 2, 3, 4, 5, 6}>
{
  s, sh = RNN <hidden_size = 2> (x, w, r)
  t = Squeeze(s)
  u = MatMul(t, fc)
  y = Relu(u)
}
)";

struct Case {
  /// The pass as pipeline text, run after Prefix.
  const char *Pass;
  const char *Prefix;
  /// What it declares, and what it changes on Model.
  GraphChange Declared, Changed;
};

constexpr GraphChange None = GraphChange::None, Devices = GraphChange::Devices,
                      Costs = GraphChange::Costs, Groups = GraphChange::Groups,
                      Structure = GraphChange::Structure,
                      All = GraphChange::All;

/// "PLACEMENT" in a case's text is a placement file of every op on gpu:1.
const Case Cases[] = {
    {"print-summary", "import-onnx", None, None},
    {"verify", "import-onnx", None, None},
    {"unroll-rnn", "import-onnx", All, All},
    {"simulate", "import-onnx,cost-annotate,place{algo=single}", None, None},
    {"simulate{placement=PLACEMENT}",
     "import-onnx,cost-annotate,place{algo=single}", Devices, Devices},
    {"import-onnx", "", All, All},
    {"training-graph", "import-onnx,unroll-rnn", All, All},
    {"cost-annotate", "import-onnx,unroll-rnn", Costs, Costs},
    // (The builder hands microbatches= to the import: the prefix gives it.)
    {"pipeline{microbatches=2}", "import-onnx{microbatches=2},unroll-rnn",
     Structure, Structure},
    {"colocate", "import-onnx,unroll-rnn,cost-annotate", Groups, Groups},
    {"plan{seconds=1,flat=none}",
     "import-onnx,unroll-rnn,training-graph,cost-annotate", All, All},
    {"place{algo=m-etf}", "import-onnx,unroll-rnn,cost-annotate", Devices,
     Devices},
    {"emit{format=json,out=OUT}",
     "import-onnx,cost-annotate,place{algo=single}", None, None},
};

/// Replaces every \p From in \p S by \p To.
std::string replaceAll(std::string S, StringRef From, StringRef To) {
  for (size_t At = S.find(From.str()); At != std::string::npos;
       At = S.find(From.str(), At + To.size()))
    S.replace(At, From.size(), To.str());
  return S;
}

class DeclaredChangesTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(sys::fs::createUniqueDirectory("dp-changes", Dir));
    TheCluster.emplace(cantFail(loadCluster("p100x4")));
  }
  void TearDown() override { sys::fs::remove_directories(Dir); }

  /// Runs \p Text on a fresh import of Model; errors fail the test.
  void runPipeline(StringRef Text, bool VerifyEach, Graph &G) {
    PassManager PM;
    if (!Text.empty()) {
      ASSERT_FALSE(bool(parsePassPipeline(PM, Text))) << Text.str();
    }
    PM.setVerifyEach(VerifyEach);
    PassContext Ctx;
    std::unique_ptr<MemoryBuffer> Input =
        MemoryBuffer::getMemBuffer(Model, "rnnmlp.onnxtxt");
    Ctx.Input = Input->getMemBufferRef();
    Ctx.TheCluster = &*TheCluster;
    // emit's files go to a transaction never committed: none is written.
    OutputTransaction Outputs;
    Error E = PM.run(G, Ctx);
    ASSERT_FALSE(bool(E)) << Text.str() << ": " << toString(std::move(E));
  }

  /// \p S with PLACEMENT and OUT made files of this test.
  std::string expand(StringRef S, const Graph &G) {
    SmallString<128> Placement(Dir), Out(Dir);
    sys::path::append(Placement, "placement.json");
    sys::path::append(Out, "out");
    std::error_code EC;
    raw_fd_ostream OS(Placement, EC);
    EXPECT_FALSE(EC);
    OS << "{\"placement\": {";
    for (OpId O = 0, E = G.getNumOps(); O != E; ++O)
      OS << (O ? ", " : "") << '"' << G.getOp(O).Name << "\": \"gpu:1\"";
    OS << "}}\n";
    return replaceAll(replaceAll(S.str(), "PLACEMENT", Placement), "OUT", Out);
  }

  SmallString<128> Dir;
  Optional<Cluster> TheCluster;
};

TEST_F(DeclaredChangesTest, EveryPassChangesWhatItDeclares) {
  for (const Case &C : Cases) {
    SCOPED_TRACE(C.Pass);
    Graph Before;
    runPipeline(C.Prefix, /*VerifyEach=*/false, Before);
    std::string Pass = expand(C.Pass, Before);
    PassManager Alone;
    ASSERT_FALSE(bool(parsePassPipeline(Alone, Pass)));
    ASSERT_EQ(Alone.size(), 1u);
    EXPECT_EQ(describeChange(Alone.getPassChanges(0)),
              describeChange(C.Declared));
    // The whole pipeline again (plan runs what comes before it), now
    // verified after every pass: an undeclared change is an error.
    Graph After;
    runPipeline(*C.Prefix ? (C.Prefix + StringRef(",") + Pass).str() : Pass,
                /*VerifyEach=*/true, After);
    EXPECT_EQ(describeChange(
                  GraphParts::of(After).differences(GraphParts::of(Before))),
              describeChange(C.Changed));
  }
}

TEST_F(DeclaredChangesTest, EveryRegisteredPassHasACase) {
  for (const PassInfo &P : getRegisteredPasses()) {
    bool Found = false;
    for (const Case &C : Cases)
      Found |= StringRef(C.Pass).split('{').first == P.Name;
    EXPECT_TRUE(Found) << P.Name.str() << " has no case in Cases";
  }
}

} // namespace
