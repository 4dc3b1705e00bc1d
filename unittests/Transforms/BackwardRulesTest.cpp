//===- BackwardRulesTest.cpp - The rule table and its documentation -------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/Transforms/BackwardRules.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/MemoryBuffer.h"

#include "gtest/gtest.h"

#include <string>

using namespace dp;
using namespace llvm;

namespace {

TEST(BackwardRulesTest, Lookup) {
  const BackwardRule &MatMul = getBackwardRule("", "MatMul");
  EXPECT_EQ(MatMul.Kind, BackwardKind::Listed);
  EXPECT_TRUE(MatMul.DiffOperands.contains(0));
  EXPECT_TRUE(MatMul.DiffOperands.contains(1));
  EXPECT_FALSE(MatMul.DiffOperands.contains(2));
  EXPECT_EQ(MatMul.CostMultiple, 2.0);
  EXPECT_EQ(&getBackwardRule("ai.onnx", "MatMul"), &MatMul);

  EXPECT_EQ(getBackwardRule("", "Shape").Kind, BackwardKind::None);
  EXPECT_EQ(getBackwardRule("", "Gather").SavedOperands.contains(1), true);
  EXPECT_FALSE(getBackwardRule("", "Gather").DiffOperands.contains(1));

  const BackwardRule &Generic = getBackwardRule("", "Loop");
  EXPECT_EQ(Generic.Kind, BackwardKind::Generic);
  EXPECT_TRUE(Generic.DiffOperands.contains(100));
  EXPECT_TRUE(Generic.SavedOperands.isAll());
  // Another domain's MatMul is not ONNX's.
  EXPECT_EQ(getBackwardRule("com.example", "MatMul").Kind,
            BackwardKind::Generic);
}

TEST(BackwardRulesTest, TableIsSortedAndEndsWithTheGenericRule) {
  ArrayRef<BackwardRule> Rules = getBackwardRules();
  ASSERT_FALSE(Rules.empty());
  EXPECT_EQ(Rules.back().Kind, BackwardKind::Generic);
  for (size_t I = 1; I + 1 < Rules.size(); ++I)
    EXPECT_LT(Rules[I - 1].Type, Rules[I].Type);
  for (const BackwardRule &R : Rules.drop_back()) {
    if (R.Kind == BackwardKind::Listed) {
      EXPECT_GT(R.CostMultiple, 0.0) << R.Type.str();
    }
  }
}

/// The "op type | multiple" rows under "## Backward cost multiples".
StringMap<double> readDocumentedMultiples() {
  StringMap<double> Rows;
  auto Buf = MemoryBuffer::getFile(DP_SOURCE_DIR "/docs/transforms.md");
  EXPECT_TRUE(bool(Buf)) << "cannot read docs/transforms.md";
  if (!Buf)
    return Rows;
  SmallVector<StringRef, 0> Lines;
  (*Buf)->getBuffer().split(Lines, '\n');
  bool InSection = false;
  for (StringRef Line : Lines) {
    if (Line.startswith("## ")) {
      InSection = Line == "## Backward cost multiples";
      continue;
    }
    if (!InSection || !Line.startswith("|"))
      continue;
    SmallVector<StringRef, 4> Cells;
    Line.trim().trim('|').split(Cells, '|');
    if (Cells.size() != 2)
      continue;
    StringRef Type = Cells[0].trim(), Value = Cells[1].trim();
    double Multiple;
    if (Value.getAsDouble(Multiple))
      continue; // The header and its rule.
    EXPECT_TRUE(Rows.try_emplace(Type, Multiple).second)
        << "'" << Type.str() << "' is listed twice";
  }
  return Rows;
}

TEST(BackwardRulesTest, DocumentationListsEveryMultiple) {
  StringMap<double> Documented = readDocumentedMultiples();
  unsigned Listed = 0;
  for (const BackwardRule &R : getBackwardRules()) {
    if (R.Kind == BackwardKind::None)
      continue;
    StringRef Key = R.Kind == BackwardKind::Generic ? "*" : R.Type;
    ++Listed;
    auto It = Documented.find(Key);
    if (It == Documented.end()) {
      ADD_FAILURE() << "docs/transforms.md does not list '" << Key.str() << "'";
      continue;
    }
    EXPECT_EQ(It->getValue(), R.CostMultiple) << Key.str();
  }
  EXPECT_EQ(Documented.size(), Listed)
      << "docs/transforms.md lists op types the table does not have";
}

} // namespace
