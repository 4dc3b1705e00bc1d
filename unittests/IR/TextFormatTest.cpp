//===- TextFormatTest.cpp - Printing and parsing the textual form ---------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "TestGraphs.h"

#include "dp/IR/TextFormat.h"
#include "dp/IR/Verifier.h"
#include "dp/Support/Diagnostics.h"

#include "llvm/Support/MemoryBufferRef.h"

#include "gtest/gtest.h"

using namespace dp;
using namespace dp::unittest;

namespace {

llvm::Expected<Graph> parseText(llvm::StringRef Text) {
  return parseGraph(llvm::MemoryBufferRef(Text, "test.dp"));
}

/// What a failed parse reported.
struct ParseFailure {
  bool Failed = false;
  unsigned NumErrors = 0;
  DiagLocation Loc;
  std::string Message;
};

/// Parses \p Text, which must fail with exactly one LocatedError.
ParseFailure parseFailure(llvm::StringRef Text) {
  ParseFailure F;
  llvm::Expected<Graph> G = parseText(Text);
  if (G) {
    ADD_FAILURE() << "the input parsed:\n" << Text.str();
    return F;
  }
  F.Failed = true;
  llvm::handleAllErrors(
      G.takeError(),
      [&](const LocatedError &E) {
        ++F.NumErrors;
        F.Loc = E.getLocation();
        F.Message = E.getMessage().str();
      },
      [&](const llvm::ErrorInfoBase &E) {
        ADD_FAILURE() << "not a LocatedError: " << E.message();
      });
  EXPECT_EQ(F.NumErrors, 1u);
  EXPECT_EQ(F.Loc.File, "test.dp");
  return F;
}

bool contains(llvm::StringRef S, llvm::StringRef Part) {
  return S.contains(Part);
}

//===----------------------------------------------------------------------===//
// Round trips
//===----------------------------------------------------------------------===//

TEST(TextFormatTest, RichGraphIsValid) {
  Graph G = makeRichGraph();
  EXPECT_FALSE(llvm::errorToBool(verifyGraph(G)));
}

TEST(TextFormatTest, PrintParsePrintIsByteIdentical) {
  std::string First = printToString(makeRichGraph());
  llvm::Expected<Graph> Parsed = parseText(First);
  ASSERT_TRUE(bool(Parsed)) << llvm::toString(Parsed.takeError()) << "\n"
                            << First;
  EXPECT_EQ(printToString(*Parsed), First);
}

TEST(TextFormatTest, ParsedGraphEqualsTheOriginalFieldByField) {
  Graph Original = makeRichGraph();
  llvm::Expected<Graph> Parsed = parseText(printToString(Original));
  ASSERT_TRUE(bool(Parsed)) << llvm::toString(Parsed.takeError());
  expectSameGraph(Original, *Parsed);
}

TEST(TextFormatTest, ParsedRichGraphVerifies) {
  llvm::Expected<Graph> Parsed = parseText(printToString(makeRichGraph()));
  ASSERT_TRUE(bool(Parsed)) << llvm::toString(Parsed.takeError());
  llvm::Error Err = verifyGraph(*Parsed);
  EXPECT_FALSE(bool(Err)) << llvm::toString(std::move(Err));
}

TEST(TextFormatTest, NamesAreQuotedOnlyWhenNeeded) {
  std::string Text = printToString(makeRichGraph());
  EXPECT_TRUE(contains(Text, "dp.graph @\"rich \\\"graph\\\"\" {\n")) << Text;
  EXPECT_TRUE(contains(Text, "  op @/layer.0/attn/MatMul = MatMul(%input.1, "
                             "%\"onnx::Conv_12\") -> "
                             "(%/layer.0/attn/MatMul_output_0 : f32[2,3])"))
      << Text;
  EXPECT_TRUE(contains(Text, "  input %\"name with spaces\" : bool[2,3]\n"))
      << Text;
  EXPECT_TRUE(contains(Text, "  input %\"quote\\\"d\\\\name\" : i64[]\n"))
      << Text;
  EXPECT_TRUE(contains(Text, "  op @\"op with spaces \\\"q\\\"\" = "
                             "com.microsoft::FusedGelu(%ev)"))
      << Text;
  EXPECT_TRUE(contains(Text, "= \"my-domain\"::\"Op.v2-beta\"(%z)")) << Text;
}

TEST(TextFormatTest, AbsentOperandsAndResultsPrintAsNone) {
  std::string Text = printToString(makeRichGraph());
  EXPECT_TRUE(contains(Text, "  op @Dropout_3 = Dropout(%\"gelu out\", none, "
                             "none) -> (%y : f32[2,3], none)\n"))
      << Text;
}

TEST(TextFormatTest, SourceNamesPrintOnlyWhenTheyDiffer) {
  std::string Text = printToString(makeRichGraph());
  EXPECT_TRUE(contains(Text, " loc(\"orig/everything:0\")\n")) << Text;
  EXPECT_TRUE(contains(Text, "(%ev) -> (%\"gelu out\" : f32[2,3]) loc(\"\")\n"))
      << Text;
  EXPECT_FALSE(contains(Text, "loc(\"Dropout_3\")")) << Text;
}

TEST(TextFormatTest, AttributeValuesHaveTheirDocumentedSpelling) {
  std::string Text = printToString(makeRichGraph());
  for (llvm::StringRef Part :
       {"f_small = 1e-05",
        "f_inf = inf",
        "f_ninf = -inf",
        "f_nan = nan",
        "f_negzero = -0.0",
        "f_whole = 3.0",
        "f_big = 1e+300",
        "i_min = -9223372036854775808",
        "empty_ints = ints[]",
        "empty_floats = floats[]",
        "empty_strings = strings[]",
        "empty_tensors = tensors[]",
        "empty_types = types[]",
        "empty_graphs = graphs[]",
        "s = \"say \\\"hi\\\" \\\\ back\\nnew\\ttab \\xc3\\xa9 "
        "\\x01\\x7f\\xff\"",
        "type = type<f32[?,3]>",
        "type_undefined = type<?[?]>",
        "tensors = [tensor<f32[1]>, tensor<bf16[2,2]>]",
        "graph = graph<nodes = 3, inputs = 1, outputs = 2, ops = {Add = 2, "
        "\"com.microsoft::Attention\" = 1}>",
        "\"weird name\" = 1"})
    EXPECT_TRUE(contains(Text, Part)) << "missing: " << Part.str();
}

TEST(TextFormatTest, AnnotationsPrintInBracketsSortedByName) {
  std::string Text = printToString(makeRichGraph());
  EXPECT_TRUE(contains(Text, "  annotations [\"budget ms\" = [1.5], "
                             "cluster = \"2x\\\"A100\\\"\", seed = 42]\n"))
      << Text;
  EXPECT_TRUE(contains(Text, " [device = 1, dp.cost = 0.25, group = \"g0\", "
                             "\"weird key\" = ints[]]\n"))
      << Text;
}

TEST(TextFormatTest, ParsesCommentsAndFreeSpacing) {
  llvm::Expected<Graph> G = parseText("// leading comment\n"
                                      "dp.graph @g { // trailing\n"
                                      "input %x:f32[2]\n"
                                      "  op @a=Relu( %x )->( %y:f32[2] )\n"
                                      "  output %y }\n");
  ASSERT_TRUE(bool(G)) << llvm::toString(G.takeError());
  EXPECT_EQ(G->getNumOps(), 1u);
  EXPECT_EQ(G->getOutputs().size(), 1u);
}

TEST(TextFormatTest, LooksLikeGraphTextSkipsCommentsAndNeedsTheKeyword) {
  EXPECT_TRUE(looksLikeGraphText("dp.graph @g {}"));
  EXPECT_TRUE(looksLikeGraphText("// c\n  \n// d\n  dp.graph @g {}"));
  EXPECT_FALSE(looksLikeGraphText("dp.graphs @g {}"));
  EXPECT_FALSE(looksLikeGraphText("// only a comment"));
  EXPECT_FALSE(looksLikeGraphText("ir_version: 8"));
}

//===----------------------------------------------------------------------===//
// Parse errors
//===----------------------------------------------------------------------===//

TEST(TextFormatParseErrorTest, UndefinedOperand) {
  ParseFailure F = parseFailure("dp.graph @g {\n"
                                "  input %x : f32[2]\n"
                                "  op @a = Relu(%nope) -> (%y : f32[2])\n"
                                "}\n");
  EXPECT_EQ(F.Loc.Line, 3u);
  EXPECT_EQ(F.Loc.Column, 16u);
  EXPECT_TRUE(contains(F.Message, "undefined tensor '%nope'")) << F.Message;
}

TEST(TextFormatParseErrorTest, DuplicateInput) {
  ParseFailure F = parseFailure("dp.graph @g {\n"
                                "  input %x : f32[2]\n"
                                "  input %x : f32[3]\n"
                                "}\n");
  EXPECT_EQ(F.Loc.Line, 3u);
  EXPECT_EQ(F.Loc.Column, 9u);
  EXPECT_TRUE(contains(F.Message, "'%x' is already defined")) << F.Message;
}

TEST(TextFormatParseErrorTest, ResultRedefinesATensor) {
  ParseFailure F = parseFailure("dp.graph @g {\n"
                                "  input %x : f32[2]\n"
                                "  op @a = Relu(%x) -> (%x : f32[2])\n"
                                "}\n");
  EXPECT_EQ(F.Loc.Line, 3u);
  EXPECT_EQ(F.Loc.Column, 24u);
  EXPECT_TRUE(contains(F.Message, "'%x' is already defined")) << F.Message;
}

TEST(TextFormatParseErrorTest, DuplicateOp) {
  ParseFailure F = parseFailure("dp.graph @g {\n"
                                "  input %x : f32[2]\n"
                                "  op @a = Relu(%x) -> (%y : f32[2])\n"
                                "  op @a = Relu(%y) -> (%z : f32[2])\n"
                                "}\n");
  EXPECT_EQ(F.Loc.Line, 4u);
  EXPECT_EQ(F.Loc.Column, 6u);
  EXPECT_TRUE(contains(F.Message, "op '@a' is already defined")) << F.Message;
}

TEST(TextFormatParseErrorTest, UnterminatedString) {
  ParseFailure F = parseFailure("dp.graph @g {\n"
                                "  opset \"abc\n"
                                "}\n");
  EXPECT_EQ(F.Loc.Line, 2u);
  EXPECT_EQ(F.Loc.Column, 9u);
  EXPECT_TRUE(contains(F.Message, "unterminated string")) << F.Message;
}

TEST(TextFormatParseErrorTest, UnterminatedQuotedName) {
  ParseFailure F = parseFailure("dp.graph @g {\n"
                                "  input %\"x : f32[2]\n"
                                "}\n");
  EXPECT_EQ(F.Loc.Line, 2u);
  EXPECT_EQ(F.Loc.Column, 9u);
  EXPECT_TRUE(contains(F.Message, "unterminated string")) << F.Message;
}

TEST(TextFormatParseErrorTest, BadEscape) {
  ParseFailure F = parseFailure("dp.graph @g {\n"
                                "  opset \"a\\qb\" 1\n"
                                "}\n");
  EXPECT_EQ(F.Loc.Line, 2u);
  EXPECT_EQ(F.Loc.Column, 11u);
  EXPECT_TRUE(contains(F.Message, "unknown escape '\\q'")) << F.Message;
}

TEST(TextFormatParseErrorTest, ShortHexEscape) {
  ParseFailure F = parseFailure("dp.graph @g {\n"
                                "  opset \"a\\x4\" 1\n"
                                "}\n");
  EXPECT_EQ(F.Loc.Line, 2u);
  EXPECT_EQ(F.Loc.Column, 11u);
  EXPECT_TRUE(contains(F.Message, "two hex digits")) << F.Message;
}

TEST(TextFormatParseErrorTest, UnknownElementType) {
  ParseFailure F = parseFailure("dp.graph @g {\n"
                                "  input %x : f33[2]\n"
                                "}\n");
  EXPECT_EQ(F.Loc.Line, 2u);
  EXPECT_EQ(F.Loc.Column, 14u);
  EXPECT_TRUE(contains(F.Message, "unknown element type 'f33'")) << F.Message;
}

TEST(TextFormatParseErrorTest, UnknownDimInAGraphTensor) {
  ParseFailure F = parseFailure("dp.graph @g {\n"
                                "  input %x : f32[?]\n"
                                "}\n");
  EXPECT_EQ(F.Loc.Line, 2u);
  EXPECT_EQ(F.Loc.Column, 18u);
  EXPECT_TRUE(contains(F.Message, "expected a dimension")) << F.Message;
}

TEST(TextFormatParseErrorTest, TrailingGarbage) {
  ParseFailure F = parseFailure("dp.graph @g {\n"
                                "  input %x : f32[2]\n"
                                "} junk\n");
  EXPECT_EQ(F.Loc.Line, 3u);
  EXPECT_EQ(F.Loc.Column, 3u);
  EXPECT_TRUE(contains(F.Message, "end of the input")) << F.Message;
}

TEST(TextFormatParseErrorTest, MissingGraphKeyword) {
  ParseFailure F = parseFailure("// a comment\n"
                                "\n"
                                "  graph @g {\n"
                                "}\n");
  EXPECT_EQ(F.Loc.Line, 3u);
  EXPECT_EQ(F.Loc.Column, 3u);
  EXPECT_TRUE(contains(F.Message, "expected 'dp.graph'")) << F.Message;
}

TEST(TextFormatParseErrorTest, EmptyInput) {
  ParseFailure F = parseFailure("");
  EXPECT_EQ(F.Loc.Line, 1u);
  EXPECT_EQ(F.Loc.Column, 1u);
  EXPECT_TRUE(contains(F.Message, "expected 'dp.graph'")) << F.Message;
}

TEST(TextFormatParseErrorTest, NegativeDimension) {
  ParseFailure F = parseFailure("dp.graph @g {\n"
                                "  input %x : f32[2,-3]\n"
                                "}\n");
  EXPECT_EQ(F.Loc.Line, 2u);
  EXPECT_TRUE(contains(F.Message, "dimensions cannot be negative"))
      << F.Message;
}

// "dimensions cannot be negative" points at the dimension (column 20), not
// at the token after it.
TEST(TextFormatParseErrorTest, NegativeDimensionPointsAtTheDimension) {
  ParseFailure F = parseFailure("dp.graph @g {\n"
                                "  input %x : f32[2,-3]\n"
                                "}\n");
  EXPECT_EQ(F.Loc.Line, 2u);
  EXPECT_EQ(F.Loc.Column, 20u);
}

TEST(TextFormatParseErrorTest, AttributeSetTwice) {
  ParseFailure F =
      parseFailure("dp.graph @g {\n"
                   "  input %x : f32[2]\n"
                   "  op @a = Relu(%x) -> (%y : f32[2]) {k = 1, k = 2}\n"
                   "}\n");
  EXPECT_EQ(F.Loc.Line, 3u);
  EXPECT_EQ(F.Loc.Column, 45u);
  EXPECT_TRUE(contains(F.Message, "attribute 'k' is set twice")) << F.Message;
}

TEST(TextFormatParseErrorTest, EmptyListWithoutKind) {
  ParseFailure F = parseFailure("dp.graph @g {\n"
                                "  input %x : f32[2]\n"
                                "  op @a = Relu(%x) -> (%y : f32[2]) {k = []}\n"
                                "}\n");
  EXPECT_EQ(F.Loc.Line, 3u);
  // At the ']' that closes the list too early.
  EXPECT_EQ(F.Loc.Column, 43u);
  EXPECT_TRUE(contains(F.Message, "'ints[]'")) << F.Message;
}

TEST(TextFormatParseErrorTest, MixedList) {
  ParseFailure F =
      parseFailure("dp.graph @g {\n"
                   "  input %x : f32[2]\n"
                   "  op @a = Relu(%x) -> (%y : f32[2]) {k = [1, \"s\"]}\n"
                   "}\n");
  EXPECT_EQ(F.Loc.Line, 3u);
  EXPECT_EQ(F.Loc.Column, 46u);
  EXPECT_TRUE(contains(F.Message, "expected an integer")) << F.Message;
}

TEST(TextFormatParseErrorTest, IntegerOutOfRange) {
  ParseFailure F = parseFailure("dp.graph @g {\n"
                                "  opset \"\" 9223372036854775808\n"
                                "}\n");
  EXPECT_EQ(F.Loc.Line, 2u);
  EXPECT_EQ(F.Loc.Column, 12u);
  EXPECT_TRUE(contains(F.Message, "out of range")) << F.Message;
}

TEST(TextFormatParseErrorTest, UnsortedGraphSummary) {
  ParseFailure F = parseFailure(
      "dp.graph @g {\n"
      "  input %x : f32[2]\n"
      "  op @a = Relu(%x) -> (%y : f32[2]) {g = graph<nodes = 2, inputs = "
      "0, outputs = 1, ops = {B = 1, A = 1}>}\n"
      "}\n");
  EXPECT_EQ(F.Loc.Line, 3u);
  EXPECT_TRUE(contains(F.Message, "sorted")) << F.Message;
}

TEST(TextFormatParseErrorTest, OutputTwice) {
  ParseFailure F = parseFailure("dp.graph @g {\n"
                                "  input %x : f32[2]\n"
                                "  output %x\n"
                                "  output %x\n"
                                "}\n");
  EXPECT_EQ(F.Loc.Line, 4u);
  EXPECT_EQ(F.Loc.Column, 10u);
  EXPECT_TRUE(contains(F.Message, "output twice")) << F.Message;
}

TEST(TextFormatParseErrorTest, InputAfterOp) {
  ParseFailure F = parseFailure("dp.graph @g {\n"
                                "  input %x : f32[2]\n"
                                "  op @a = Relu(%x) -> (%y : f32[2])\n"
                                "  input %z : f32[2]\n"
                                "}\n");
  EXPECT_EQ(F.Loc.Line, 4u);
  EXPECT_EQ(F.Loc.Column, 3u);
  EXPECT_TRUE(contains(F.Message, "before ops")) << F.Message;
}

TEST(TextFormatParseErrorTest, UnexpectedByte) {
  ParseFailure F = parseFailure("dp.graph @g {\n"
                                "  input %x : f32[2] \x01\n"
                                "}\n");
  EXPECT_EQ(F.Loc.Line, 2u);
  EXPECT_EQ(F.Loc.Column, 21u);
  EXPECT_TRUE(contains(F.Message, "0x1")) << F.Message;
}

TEST(TextFormatParseErrorTest, MissingCloseBrace) {
  ParseFailure F = parseFailure("dp.graph @g {\n"
                                "  input %x : f32[2]\n");
  EXPECT_EQ(F.Loc.Line, 3u);
  EXPECT_EQ(F.Loc.Column, 1u);
}

} // namespace
