//===- PassBuilderTest.cpp - Parsing pass pipelines -----------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/Passes/PassBuilder.h"
#include "dp/IR/PassManager.h"
#include "dp/Support/Diagnostics.h"

#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <ostream>
#include <string>
#include <utility>
#include <vector>

using namespace dp;

namespace {

using KeyValues = std::vector<std::pair<std::string, std::string>>;

/// The message of the one LocatedError in \p Err.
std::string takeMessage(llvm::Error Err) {
  std::string Message;
  unsigned Count = 0;
  llvm::handleAllErrors(
      std::move(Err),
      [&](const LocatedError &E) {
        ++Count;
        Message = E.getMessage().str();
      },
      [&](const llvm::ErrorInfoBase &E) {
        ADD_FAILURE() << "not a LocatedError: " << E.message();
      });
  EXPECT_EQ(Count, 1u);
  return Message;
}

std::string printPipeline(const PassManager &PM) {
  std::string S;
  llvm::raw_string_ostream OS(S);
  PM.printPipeline(OS);
  return OS.str();
}

bool contains(llvm::StringRef S, llvm::StringRef Part) {
  return S.contains(Part);
}

//===----------------------------------------------------------------------===//
// parsePipelineText
//===----------------------------------------------------------------------===//

TEST(PipelineTextTest, SplitsNestedBraces) {
  auto Elements = parsePipelineText("a{x=b{c=1,d=2},y=3},b");
  ASSERT_TRUE(bool(Elements)) << llvm::toString(Elements.takeError());
  ASSERT_EQ(Elements->size(), 2u);
  const PipelineElement &A = (*Elements)[0];
  EXPECT_EQ(A.Name, "a");
  EXPECT_TRUE(A.HasBraces);
  EXPECT_EQ(A.Options, (KeyValues{{"x", "b{c=1,d=2}"}, {"y", "3"}}));
  const PipelineElement &B = (*Elements)[1];
  EXPECT_EQ(B.Name, "b");
  EXPECT_FALSE(B.HasBraces);
  EXPECT_TRUE(B.Options.empty());
}

TEST(PipelineTextTest, IgnoresSpaceAroundNamesAndValues) {
  auto Elements = parsePipelineText(" a { x = 1 , y=two words } , b ");
  ASSERT_TRUE(bool(Elements)) << llvm::toString(Elements.takeError());
  ASSERT_EQ(Elements->size(), 2u);
  EXPECT_EQ((*Elements)[0].Options,
            (KeyValues{{"x", "1"}, {"y", "two words"}}));
  EXPECT_EQ((*Elements)[1].Name, "b");
}

TEST(PipelineTextTest, EmptyBracesHaveNoOptions) {
  auto Elements = parsePipelineText("a{}");
  ASSERT_TRUE(bool(Elements)) << llvm::toString(Elements.takeError());
  ASSERT_EQ(Elements->size(), 1u);
  EXPECT_TRUE((*Elements)[0].HasBraces);
  EXPECT_TRUE((*Elements)[0].Options.empty());
}

TEST(PipelineTextTest, RepeatedOptionsKeepTheirOrder) {
  auto Elements = parsePipelineText("a{d=1,c=2,d=3}");
  ASSERT_TRUE(bool(Elements)) << llvm::toString(Elements.takeError());
  EXPECT_EQ((*Elements)[0].Options,
            (KeyValues{{"d", "1"}, {"c", "2"}, {"d", "3"}}));
}

/// A malformed pipeline, what its error says, and a name for the test.
struct MalformedPipeline {
  const char *Name;
  const char *Text;
  const char *Message;
};

void PrintTo(const MalformedPipeline &P, std::ostream *OS) {
  *OS << "'" << P.Text << "'";
}

class MalformedPipelineTest
    : public ::testing::TestWithParam<MalformedPipeline> {};

TEST_P(MalformedPipelineTest, IsRejectedWithAnExplanation) {
  auto Elements = parsePipelineText(GetParam().Text);
  ASSERT_FALSE(bool(Elements)) << "'" << GetParam().Text << "' parsed";
  std::string Message = takeMessage(Elements.takeError());
  EXPECT_TRUE(contains(Message, "invalid pass pipeline '" +
                                    std::string(GetParam().Text) + "'"))
      << Message;
  EXPECT_TRUE(contains(Message, GetParam().Message)) << Message;
}

const MalformedPipeline MalformedPipelines[] = {
    {"Empty", "", "the pipeline is empty at column 1"},
    {"OnlySpace", "  ", "the pipeline is empty at column 3"},
    {"TrailingComma", "a,", "expected a pass name at column 3"},
    {"LeadingComma", ",a", "expected a pass name at column 1"},
    {"UnclosedBrace", "a{", "expected an option name at column 3"},
    {"OptionWithoutEqual", "a{x}", "expected '=' after option 'x' at column 4"},
    {"OptionWithoutValue", "a{x=}", "option 'x' has no value at column 5"},
    {"UnclosedOptions", "a{x=1", "expected ',' or '}' after an option"},
    {"UnclosedAfterNestedValue", "a{x=b{c=1}",
     "expected ',' or '}' after an option"},
    {"UnbalancedValue", "a{x=b{c=1", "unbalanced '{' in an option value"},
    {"SpaceBetweenPasses", "a b", "expected ',' between passes at column 3"},
    {"StrayCloseBrace", "a}", "expected ',' between passes at column 2"},
};

INSTANTIATE_TEST_SUITE_P(
    PipelineTextTest, MalformedPipelineTest,
    ::testing::ValuesIn(MalformedPipelines),
    [](const ::testing::TestParamInfo<MalformedPipeline> &Info) {
      return std::string(Info.param.Name);
    });

//===----------------------------------------------------------------------===//
// parsePassPipeline
//===----------------------------------------------------------------------===//

TEST(PassPipelineTest, BuildsRegisteredPassesInOrder) {
  PassManager PM;
  llvm::Error Err = parsePassPipeline(
      PM, "import-onnx{batch=8,dim=seq:128},verify,print-summary");
  ASSERT_FALSE(bool(Err)) << llvm::toString(std::move(Err));
  ASSERT_EQ(PM.size(), 3u);
  EXPECT_EQ(PM.getPassName(0), "import-onnx");
  EXPECT_EQ(PM.getPassName(1), "verify");
  EXPECT_EQ(PM.getPassName(2), "print-summary");
}

TEST(PassPipelineTest, RejectsUnknownPasses) {
  PassManager PM;
  std::string Message = takeMessage(parsePassPipeline(PM, "verify,nope"));
  EXPECT_TRUE(contains(Message, "unknown pass 'nope'")) << Message;
}

TEST(PassPipelineTest, RejectsOptionsOnPassesWithoutOptions) {
  PassManager PM;
  std::string Message = takeMessage(parsePassPipeline(PM, "verify{x=1}"));
  EXPECT_TRUE(contains(Message, "pass 'verify' takes no options")) << Message;
}

TEST(PassPipelineTest, RejectsBadPassOptions) {
  PassManager PM;
  std::string Message =
      takeMessage(parsePassPipeline(PM, "import-onnx{batch=0}"));
  EXPECT_TRUE(contains(Message, "batch must be a positive integer")) << Message;
}

TEST(PassPipelineTest, RejectsMalformedText) {
  PassManager PM;
  std::string Message =
      takeMessage(parsePassPipeline(PM, "verify print-summary"));
  EXPECT_TRUE(contains(Message, "expected ',' between passes")) << Message;
  EXPECT_TRUE(PM.empty());
}

TEST(PassPipelineTest, PrintedPipelineParsesBackToTheSameText) {
  PassManager PM;
  llvm::Error Err = parsePassPipeline(
      PM, " import-onnx{ dim=seq:128 , batch=8 } , verify,print-summary");
  ASSERT_FALSE(bool(Err)) << llvm::toString(std::move(Err));
  std::string Printed = printPipeline(PM);
  EXPECT_EQ(Printed, "import-onnx{batch=8,dim=seq:128},verify,print-summary");
  PassManager Again;
  Err = parsePassPipeline(Again, Printed);
  ASSERT_FALSE(bool(Err)) << llvm::toString(std::move(Err));
  EXPECT_EQ(printPipeline(Again), Printed);
}

TEST(PassPipelineTest, PassWithoutOptionsPrintsWithoutBraces) {
  PassManager PM;
  llvm::Error Err = parsePassPipeline(PM, "import-onnx{},print-summary{}");
  ASSERT_FALSE(bool(Err)) << llvm::toString(std::move(Err));
  EXPECT_EQ(printPipeline(PM), "import-onnx,print-summary");
}

//===----------------------------------------------------------------------===//
// The registry
//===----------------------------------------------------------------------===//

const PassInfo *findPass(llvm::StringRef Name) {
  for (const PassInfo &P : getRegisteredPasses())
    if (P.Name == Name)
      return &P;
  return nullptr;
}

TEST(PassRegistryTest, ListsTheBuiltinPasses) {
  for (llvm::StringRef Name : {"import-onnx", "verify", "print-summary"}) {
    const PassInfo *P = findPass(Name);
    ASSERT_NE(P, nullptr) << Name.str();
    EXPECT_FALSE(P->Description.empty()) << Name.str();
  }
}

TEST(PassRegistryTest, DocumentsTheOptionSyntax) {
  const PassInfo *Import = findPass("import-onnx");
  ASSERT_NE(Import, nullptr);
  EXPECT_EQ(Import->Params,
            "batch=N,dim=NAME:N,shape=NAME:D0xD1x...,value=NAME:V,"
            "bound=TENSOR:N,microbatches=M,replicas=R,batch-axis=NAME:AXIS");
  const PassInfo *Verify = findPass("verify");
  ASSERT_NE(Verify, nullptr);
  EXPECT_TRUE(Verify->Params.empty());
}

// Every pass parses by its bare name (emit, which must be told what to
// write, with one format). A pass without options prints as its name; one
// with options prints them (canonical form), and that text parses back to
// the same text.
TEST(PassRegistryTest, EveryRegisteredPassParses) {
  for (const PassInfo &P : getRegisteredPasses()) {
    PassManager PM;
    std::string Text = P.Name.str();
    if (P.Name == "emit")
      Text += "{format=json}";
    llvm::Error Err = parsePassPipeline(PM, Text);
    ASSERT_FALSE(bool(Err))
        << P.Name.str() << ": " << llvm::toString(std::move(Err));
    std::string Printed = printPipeline(PM);
    if (P.Params.empty()) {
      EXPECT_EQ(Printed, P.Name.str());
      continue;
    }
    EXPECT_TRUE(Printed == P.Name.str() ||
                llvm::StringRef(Printed).startswith(P.Name.str() + "{"))
        << Printed;
    PassManager Again;
    ASSERT_FALSE(bool(parsePassPipeline(Again, Printed))) << Printed;
    EXPECT_EQ(printPipeline(Again), Printed);
  }
}

TEST(PassRegistryTest, PrintPassNamesListsEveryPass) {
  std::string S;
  llvm::raw_string_ostream OS(S);
  printPassNames(OS);
  for (const PassInfo &P : getRegisteredPasses())
    EXPECT_TRUE(contains(OS.str(), "  " + P.Name.str())) << OS.str();
  // A long option list goes on to an indented line.
  EXPECT_TRUE(contains(
      OS.str(),
      "import-onnx{batch=N,dim=NAME:N,shape=NAME:D0xD1x...,value=NAME:V,"
      "bound=TENSOR:N,microbatches=M,\n    replicas=R,batch-axis=NAME:AXIS}"))
      << OS.str();
}

} // namespace
