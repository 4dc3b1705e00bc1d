//===- BytecodeTest.cpp - Writing and reading the binary form -------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "TestGraphs.h"

#include "dp/IR/Bytecode.h"
#include "dp/IR/TextFormat.h"
#include "dp/IR/Verifier.h"
#include "dp/Support/Diagnostics.h"

#include "llvm/Support/MemoryBufferRef.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <string>

using namespace dp;
using namespace dp::unittest;

namespace {

std::string writeToString(const Graph &G) {
  std::string S;
  llvm::raw_string_ostream OS(S);
  writeBytecode(OS, G);
  return OS.str();
}

llvm::Expected<Graph> readFromString(llvm::StringRef Bytes) {
  return readBytecode(llvm::MemoryBufferRef(Bytes, "test.dpbc"));
}

/// The message of the one LocatedError in \p Err; fails the test if \p Err
/// is anything else.
std::string takeMessage(llvm::Error Err) {
  std::string Message;
  unsigned Count = 0;
  llvm::handleAllErrors(
      std::move(Err),
      [&](const LocatedError &E) {
        ++Count;
        EXPECT_EQ(E.getLocation().File, "test.dpbc");
        Message = E.getMessage().str();
      },
      [&](const llvm::ErrorInfoBase &E) {
        ADD_FAILURE() << "not a LocatedError: " << E.message();
      });
  EXPECT_EQ(Count, 1u);
  return Message;
}

TEST(BytecodeTest, StartsWithTheMagic) {
  std::string Bytes = writeToString(makeSmallGraph());
  EXPECT_TRUE(isBytecode(Bytes));
  EXPECT_EQ(llvm::StringRef(Bytes).take_front(5), BytecodeMagic);
  EXPECT_FALSE(isBytecode(printToString(makeSmallGraph())));
  EXPECT_FALSE(isBytecode(""));
}

TEST(BytecodeTest, RoundTripPrintsLikeTheOriginal) {
  Graph Original = makeRichGraph();
  llvm::Expected<Graph> Read = readFromString(writeToString(Original));
  ASSERT_TRUE(bool(Read)) << llvm::toString(Read.takeError());
  EXPECT_EQ(printToString(*Read), printToString(Original));
}

TEST(BytecodeTest, RoundTripKeepsEveryField) {
  Graph Original = makeRichGraph();
  llvm::Expected<Graph> Read = readFromString(writeToString(Original));
  ASSERT_TRUE(bool(Read)) << llvm::toString(Read.takeError());
  expectSameGraph(Original, *Read);
}

TEST(BytecodeTest, RoundTripOfTheParsedTextIsTheSameBytes) {
  Graph Original = makeRichGraph();
  llvm::Expected<Graph> Parsed =
      parseGraph(llvm::MemoryBufferRef(printToString(Original), "test.dp"));
  ASSERT_TRUE(bool(Parsed)) << llvm::toString(Parsed.takeError());
  EXPECT_EQ(writeToString(*Parsed), writeToString(Original));
}

TEST(BytecodeTest, EmptyGraphRoundTrips) {
  Graph G;
  G.setName("empty");
  llvm::Expected<Graph> Read = readFromString(writeToString(G));
  ASSERT_TRUE(bool(Read)) << llvm::toString(Read.takeError());
  EXPECT_TRUE(Read->empty());
  EXPECT_EQ(Read->getName(), "empty");
}

TEST(BytecodeTest, EveryStrictPrefixIsRejected) {
  std::string Bytes = writeToString(makeRichGraph());
  for (size_t Len = 0; Len != Bytes.size(); ++Len) {
    llvm::Expected<Graph> Read =
        readFromString(llvm::StringRef(Bytes).take_front(Len));
    if (Read) {
      ADD_FAILURE() << "a prefix of " << Len << " of " << Bytes.size()
                    << " bytes was accepted";
      continue;
    }
    std::string Message = takeMessage(Read.takeError());
    EXPECT_TRUE(llvm::StringRef(Message).startswith(
        Len < BytecodeMagic.size() ? "invalid bytecode at byte 0: not dp"
                                   : "invalid bytecode at byte "))
        << "prefix of " << Len << " bytes: " << Message;
  }
}

TEST(BytecodeTest, TrailingBytesAreRejected) {
  std::string Bytes = writeToString(makeSmallGraph()) + '\0';
  llvm::Expected<Graph> Read = readFromString(Bytes);
  ASSERT_FALSE(bool(Read));
  std::string Message = takeMessage(Read.takeError());
  EXPECT_TRUE(llvm::StringRef(Message).contains("trailing bytes")) << Message;
}

TEST(BytecodeTest, WrongVersionIsRejected) {
  std::string Bytes = writeToString(makeSmallGraph());
  ASSERT_EQ(Bytes[BytecodeMagic.size()], char(BytecodeVersion));
  Bytes[BytecodeMagic.size()] = char(BytecodeVersion + 1);
  llvm::Expected<Graph> Read = readFromString(Bytes);
  ASSERT_FALSE(bool(Read));
  std::string Message = takeMessage(Read.takeError());
  EXPECT_EQ(Message, "invalid bytecode at byte 6: bytecode version 2 is not "
                     "supported (expected 1)");
}

TEST(BytecodeTest, OverlongVersionIsRejected) {
  std::string Bytes = writeToString(makeSmallGraph());
  // Version 1 + 128 * 1, as a two-byte LEB128.
  Bytes.replace(BytecodeMagic.size(), 1, "\x81\x01");
  llvm::Expected<Graph> Read = readFromString(Bytes);
  ASSERT_FALSE(bool(Read));
  std::string Message = takeMessage(Read.takeError());
  EXPECT_TRUE(llvm::StringRef(Message).contains("version 129")) << Message;
}

TEST(BytecodeTest, TextIsNotBytecode) {
  llvm::Expected<Graph> Read = readFromString(printToString(makeSmallGraph()));
  ASSERT_FALSE(bool(Read));
  std::string Message = takeMessage(Read.takeError());
  EXPECT_TRUE(llvm::StringRef(Message).contains("not dp bytecode")) << Message;
}

/// Reads a corrupted buffer. Errors are fine; a graph that reads must
/// verify or fail verification with located errors. With
/// \p RequireParseableText, a graph that verifies must also print text that
/// parses back to the same text.
void checkCorrupted(llvm::StringRef Bytes, const std::string &What,
                    bool RequireParseableText) {
  llvm::Expected<Graph> Read = readFromString(Bytes);
  if (!Read) {
    takeMessage(Read.takeError());
    return;
  }
  std::string Text = printToString(*Read);
  bool Valid = true;
  llvm::handleAllErrors(verifyGraph(*Read),
                        [&](const LocatedError &E) { Valid = false; });
  if (!Valid || !RequireParseableText)
    return;
  llvm::Expected<Graph> Parsed =
      parseGraph(llvm::MemoryBufferRef(Text, "corrupted.dp"));
  if (!Parsed) {
    ADD_FAILURE() << What << ": a verified graph prints text that does not "
                  << "parse: " << llvm::toString(Parsed.takeError()) << "\n"
                  << Text;
    return;
  }
  EXPECT_EQ(printToString(*Parsed), Text) << What;
}

/// Calls \p Check on every copy of \p Bytes with one bit flipped.
template <typename Fn> void forEachBitFlip(const std::string &Bytes, Fn Check) {
  for (size_t I = 0; I != Bytes.size(); ++I) {
    for (unsigned Bit = 0; Bit != 8; ++Bit) {
      std::string Corrupted = Bytes;
      Corrupted[I] ^= char(1u << Bit);
      Check(Corrupted,
            "byte " + std::to_string(I) + " bit " + std::to_string(Bit));
    }
  }
}

TEST(BytecodeTest, FlippingAnyBitNeverCrashes) {
  const std::string Bytes = writeToString(makeSmallGraph());
  ASSERT_LT(Bytes.size(), 512u);
  forEachBitFlip(Bytes, [](llvm::StringRef Corrupted, const std::string &W) {
    checkCorrupted(Corrupted, W, /*RequireParseableText=*/false);
  });
}

TEST(BytecodeTest, OverwritingAnyByteNeverCrashes) {
  const std::string Bytes = writeToString(makeSmallGraph());
  for (size_t I = 0; I != Bytes.size(); ++I) {
    for (unsigned char V : {0x00, 0x01, 0x7f, 0x80, 0xff}) {
      std::string Corrupted = Bytes;
      Corrupted[I] = char(V);
      checkCorrupted(Corrupted,
                     "byte " + std::to_string(I) + " set to " +
                         std::to_string(V),
                     /*RequireParseableText=*/false);
    }
  }
}

// Whatever corrupted bytecode the reader accepts and the verifier passes
// prints as text that parses again. (Flipping bit 4 of the 'A' of "Abs" in
// the summary of makeSmallGraph gives "Qbs", after "Neg": the reader must
// reject unsorted summaries as the text parser does.)
TEST(BytecodeTest, CorruptionsThatVerifyPrintParseableText) {
  const std::string Bytes = writeToString(makeSmallGraph());
  forEachBitFlip(Bytes, [](llvm::StringRef Corrupted, const std::string &W) {
    checkCorrupted(Corrupted, W, /*RequireParseableText=*/true);
  });
}

/// A graph whose one op has a Graph attribute with op types \p OpCounts.
Graph makeGraphWithSummary(
    std::vector<std::pair<std::string, int64_t>> OpCounts) {
  Graph G;
  G.setName("g");
  TensorId X = G.addInput("x", TensorType(DTypeKind::Bool, {}));
  AttributeList Attrs;
  Attrs.set("then_branch",
            Attribute::getGraph(makeSummary(2, 0, 1, std::move(OpCounts))));
  G.addOp("if", "", "If", {X}, {{"y", TensorType(DTypeKind::F32, {2})}}, Attrs);
  return G;
}

// Graph summaries in bytecode follow the text form's rule: op types sorted.
TEST(BytecodeTest, UnsortedSummaryOpTypesAreRejected) {
  llvm::Expected<Graph> Read =
      readFromString(writeToString(makeGraphWithSummary({{"B", 1}, {"A", 1}})));
  ASSERT_FALSE(bool(Read)) << printToString(*Read);
  std::string Message = takeMessage(Read.takeError());
  EXPECT_TRUE(llvm::StringRef(Message).contains("sorted")) << Message;
}

// ... and unique.
TEST(BytecodeTest, DuplicateSummaryOpTypesAreRejected) {
  llvm::Expected<Graph> Read =
      readFromString(writeToString(makeGraphWithSummary({{"A", 1}, {"A", 1}})));
  ASSERT_FALSE(bool(Read)) << printToString(*Read);
  std::string Message = takeMessage(Read.takeError());
  EXPECT_TRUE(llvm::StringRef(Message).contains("unique")) << Message;
}

TEST(BytecodeTest, SortedSummaryOpTypesAreAccepted) {
  llvm::Expected<Graph> Read =
      readFromString(writeToString(makeGraphWithSummary({{"A", 1}, {"B", 1}})));
  ASSERT_TRUE(bool(Read)) << llvm::toString(Read.takeError());
  const Attribute *A = Read->getOp(0).Attrs.get("then_branch");
  ASSERT_NE(A, nullptr);
  EXPECT_EQ(A->getGraphSummaries().front().OpCounts.size(), 2u);
}

// Bytecode refers to tensors by declaration order (inputs, weights,
// results), whatever order the graph created them in. Here "w" is tensor 0
// and "x" tensor 1, but x is declared first.
TEST(BytecodeTest, WeightCreatedBeforeAnInputRoundTrips) {
  Graph G;
  G.setName("g");
  TensorId W = G.addWeight("w", TensorType(DTypeKind::F32, {4}));
  TensorId X = G.addInput("x", TensorType(DTypeKind::F32, {4}));
  OpId Add = G.addOp("add", "", "Add", {X, X, W},
                     {{"y", TensorType(DTypeKind::F32, {4})}});
  G.addOutput(G.getOp(Add).Results[0]);
  ASSERT_FALSE(llvm::errorToBool(verifyGraph(G)));
  llvm::Expected<Graph> Read = readFromString(writeToString(G));
  ASSERT_TRUE(bool(Read)) << llvm::toString(Read.takeError());
  EXPECT_EQ(printToString(*Read), printToString(G));
}

// As above, for an input created after an op: its TensorId is larger than
// the op's result, but it is declared first.
TEST(BytecodeTest, InputCreatedAfterAnOpRoundTrips) {
  Graph G;
  G.setName("g");
  TensorId X = G.addInput("x", TensorType(DTypeKind::F32, {4}));
  OpId Relu = G.addOp("relu", "", "Relu", {X},
                      {{"r", TensorType(DTypeKind::F32, {4})}});
  TensorId Z = G.addInput("z", TensorType(DTypeKind::F32, {4}));
  OpId Add = G.addOp("add", "", "Add", {G.getOp(Relu).Results[0], Z},
                     {{"y", TensorType(DTypeKind::F32, {4})}});
  G.addOutput(G.getOp(Add).Results[0]);
  ASSERT_FALSE(llvm::errorToBool(verifyGraph(G)));
  llvm::Expected<Graph> Read = readFromString(writeToString(G));
  ASSERT_TRUE(bool(Read)) << llvm::toString(Read.takeError());
  EXPECT_EQ(printToString(*Read), printToString(G));
}

} // namespace
