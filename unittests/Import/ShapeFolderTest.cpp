//===- ShapeFolderTest.cpp - Each folded op against hand-computed values --===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "ShapeFolder.h"

#include "onnx/onnx_pb.h"

#include "gtest/gtest.h"

#include <initializer_list>

using namespace dp;
using TP = onnx::TensorProto;

namespace {

FoldValue ints(std::initializer_list<int64_t> Dims,
               std::initializer_list<int64_t> Vals, int32_t Type = TP::INT64) {
  FoldValue V;
  V.ElemType = Type;
  V.Dims.assign(Dims.begin(), Dims.end());
  V.Ints.assign(Vals.begin(), Vals.end());
  return V;
}

FoldValue reals(std::initializer_list<int64_t> Dims,
                std::initializer_list<double> Vals) {
  FoldValue V;
  V.ElemType = TP::FLOAT;
  V.Dims.assign(Dims.begin(), Dims.end());
  V.Reals.assign(Vals.begin(), Vals.end());
  return V;
}

/// A node of \p Op with \p NumInputs inputs and \p NumOutputs outputs.
struct Node {
  onnx::NodeProto N;
  Node(const std::string &Op, int NumInputs, int NumOutputs = 1) {
    N.set_op_type(Op);
    N.set_name("n");
    for (int I = 0; I != NumInputs; ++I)
      N.add_input("i" + std::to_string(I));
    for (int I = 0; I != NumOutputs; ++I)
      N.add_output("o" + std::to_string(I));
  }
  Node &i(const std::string &Name, int64_t V) {
    auto *A = N.add_attribute();
    A->set_name(Name);
    A->set_type(onnx::AttributeProto::INT);
    A->set_i(V);
    return *this;
  }
  Node &ints(const std::string &Name, std::initializer_list<int64_t> Vs) {
    auto *A = N.add_attribute();
    A->set_name(Name);
    A->set_type(onnx::AttributeProto::INTS);
    for (int64_t V : Vs)
      A->add_ints(V);
    return *this;
  }
};

struct Result {
  bool Folded = false;
  std::string Error;
  std::vector<FoldValue> Values;
};

Result eval(const Node &N, std::vector<const FoldValue *> Ins, int Opset = 17,
            std::vector<const std::vector<int64_t> *> Dims = {}) {
  if (Dims.empty())
    Dims.assign(Ins.size(), nullptr);
  Result R;
  llvm::Expected<bool> F = evaluateNode(N.N, Opset, Ins, Dims, R.Values);
  if (!F)
    R.Error = llvm::toString(F.takeError());
  else
    R.Folded = *F;
  return R;
}

std::vector<int64_t> dims(const FoldValue &V) {
  return std::vector<int64_t>(V.Dims.begin(), V.Dims.end());
}

TEST(ShapeFolderTest, ShapeAndSizeReadStaticDimensions) {
  std::vector<int64_t> D{2, 3, 5};
  Result R = eval(Node("Shape", 1), {nullptr}, 17, {&D});
  ASSERT_TRUE(R.Folded);
  EXPECT_EQ(R.Values[0].Ints, (std::vector<int64_t>{2, 3, 5}));
  EXPECT_EQ(dims(R.Values[0]), (std::vector<int64_t>{3}));
  // Opset 15's start and end, negative end counted from the back.
  R = eval(Node("Shape", 1).i("start", 1).i("end", -1), {nullptr}, 15, {&D});
  ASSERT_TRUE(R.Folded);
  EXPECT_EQ(R.Values[0].Ints, (std::vector<int64_t>{3}));
  R = eval(Node("Size", 1), {nullptr}, 17, {&D});
  ASSERT_TRUE(R.Folded);
  EXPECT_EQ(R.Values[0].Ints, (std::vector<int64_t>{30}));
  EXPECT_TRUE(R.Values[0].Dims.empty());
  // Unknown dimensions: nothing to fold.
  EXPECT_FALSE(eval(Node("Shape", 1), {nullptr}).Folded);
}

TEST(ShapeFolderTest, GatherPicksAlongAnAxis) {
  FoldValue S = ints({4}, {8, 3, 224, 224});
  FoldValue Idx = ints({}, {0});
  Result R = eval(Node("Gather", 2), {&S, &Idx});
  ASSERT_TRUE(R.Folded);
  EXPECT_EQ(R.Values[0].Ints, (std::vector<int64_t>{8}));
  EXPECT_TRUE(R.Values[0].Dims.empty());
  FoldValue M = ints({2, 3}, {1, 2, 3, 4, 5, 6});
  FoldValue Cols = ints({2}, {2, -3});
  R = eval(Node("Gather", 2).i("axis", 1), {&M, &Cols});
  ASSERT_TRUE(R.Folded);
  EXPECT_EQ(dims(R.Values[0]), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(R.Values[0].Ints, (std::vector<int64_t>{3, 1, 6, 4}));
  FoldValue Bad = ints({}, {4});
  R = eval(Node("Gather", 2), {&S, &Bad});
  EXPECT_EQ(R.Error, "Gather: index 4 is out of range for dimension 0 of "
                     "size 4");
}

TEST(ShapeFolderTest, SliceClampsAndSteps) {
  FoldValue S = ints({5}, {10, 11, 12, 13, 14});
  FoldValue Starts = ints({1}, {-4}), Ends = ints({1}, {INT64_MAX});
  Result R = eval(Node("Slice", 3), {&S, &Starts, &Ends});
  ASSERT_TRUE(R.Folded);
  EXPECT_EQ(R.Values[0].Ints, (std::vector<int64_t>{11, 12, 13, 14}));
  FoldValue Back = ints({1}, {-1}), Stop = ints({1}, {INT64_MIN}),
            Axes = ints({1}, {0}), Steps = ints({1}, {-2});
  R = eval(Node("Slice", 5), {&S, &Back, &Stop, &Axes, &Steps});
  ASSERT_TRUE(R.Folded);
  EXPECT_EQ(R.Values[0].Ints, (std::vector<int64_t>{14, 12, 10}));
  FoldValue Zero = ints({1}, {0});
  R = eval(Node("Slice", 5), {&S, &Starts, &Ends, &Axes, &Zero});
  EXPECT_EQ(R.Error, "Slice: a step is 0");
  // Opset 9 takes attributes.
  R = eval(Node("Slice", 1).ints("starts", {1}).ints("ends", {3}), {&S}, 9);
  ASSERT_TRUE(R.Folded);
  EXPECT_EQ(R.Values[0].Ints, (std::vector<int64_t>{11, 12}));
}

TEST(ShapeFolderTest, ConcatUnsqueezeSqueezeReshape) {
  FoldValue A = ints({}, {8}), B = ints({1}, {-1}), C = ints({2}, {4, 64});
  FoldValue Axes = ints({1}, {0});
  Result U = eval(Node("Unsqueeze", 2), {&A, &Axes});
  ASSERT_TRUE(U.Folded);
  EXPECT_EQ(dims(U.Values[0]), (std::vector<int64_t>{1}));
  Result R = eval(Node("Concat", 3).i("axis", 0), {&U.Values[0], &B, &C});
  ASSERT_TRUE(R.Folded);
  EXPECT_EQ(R.Values[0].Ints, (std::vector<int64_t>{8, -1, 4, 64}));
  Result S = eval(Node("Squeeze", 2), {&U.Values[0], &Axes});
  ASSERT_TRUE(S.Folded);
  EXPECT_TRUE(S.Values[0].Dims.empty());
  // Opset 11 Unsqueeze takes axes as an attribute.
  U = eval(Node("Unsqueeze", 1).ints("axes", {0, 2}), {&B}, 11);
  ASSERT_TRUE(U.Folded);
  EXPECT_EQ(dims(U.Values[0]), (std::vector<int64_t>{1, 1, 1}));
  FoldValue M = ints({2, 3}, {1, 2, 3, 4, 5, 6});
  FoldValue To = ints({2}, {0, -1}), Neg = ints({2}, {3, -2}),
            Odd = ints({1}, {4});
  R = eval(Node("Reshape", 2), {&M, &To});
  ASSERT_TRUE(R.Folded);
  EXPECT_EQ(dims(R.Values[0]), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(eval(Node("Reshape", 2), {&M, &Neg}).Error,
            "Reshape: dimension 1 is negative (-2)");
  EXPECT_EQ(eval(Node("Reshape", 2), {&M, &Odd}).Error,
            "Reshape: 6 elements cannot take a shape of 4");
  EXPECT_EQ(eval(Node("Concat", 2).i("axis", 0), {&M, &C}).Error,
            "Concat: inputs differ in element type or rank");
}

TEST(ShapeFolderTest, ArithmeticBroadcastsAndChecksDivisors) {
  FoldValue S = ints({2}, {224, 224}), Two = ints({}, {2}),
            Zero = ints({}, {0});
  Result R = eval(Node("Div", 2), {&S, &Two});
  ASSERT_TRUE(R.Folded);
  EXPECT_EQ(R.Values[0].Ints, (std::vector<int64_t>{112, 112}));
  EXPECT_EQ(eval(Node("Div", 2), {&S, &Zero}).Error, "Div: division by zero");
  FoldValue Neg = ints({2}, {-7, 7}), Three = ints({}, {3});
  R = eval(Node("Div", 2), {&Neg, &Three});
  EXPECT_EQ(R.Values[0].Ints, (std::vector<int64_t>{-2, 2})); // toward 0
  R = eval(Node("Mod", 2), {&Neg, &Three});
  EXPECT_EQ(R.Values[0].Ints, (std::vector<int64_t>{2, 1})); // divisor's sign
  R = eval(Node("Mod", 2).i("fmod", 1), {&Neg, &Three});
  EXPECT_EQ(R.Values[0].Ints, (std::vector<int64_t>{-1, 1}));
  FoldValue Col = ints({2, 1}, {1, 2}), Row = ints({3}, {10, 20, 30});
  R = eval(Node("Add", 2), {&Col, &Row});
  ASSERT_TRUE(R.Folded);
  EXPECT_EQ(dims(R.Values[0]), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(R.Values[0].Ints, (std::vector<int64_t>{11, 21, 31, 12, 22, 32}));
  FoldValue Bad = ints({2}, {1, 2});
  EXPECT_EQ(eval(Node("Add", 2), {&Row, &Bad}).Error,
            "Add: shapes cannot be broadcast together (dimension 2 against "
            "3)");
  R = eval(Node("Max", 3), {&Row, &Two, &Three});
  EXPECT_EQ(R.Values[0].Ints, (std::vector<int64_t>{10, 20, 30}));
  R = eval(Node("Less", 2), {&Row, &Three});
  EXPECT_EQ(R.Values[0].ElemType, TP::BOOL);
  EXPECT_EQ(R.Values[0].Ints, (std::vector<int64_t>{0, 0, 0}));
  // A float scale: Cast, Mul, Floor, Cast back, as Resize's sizes are made.
  FoldValue Scale = reals({}, {1.5});
  Result F = eval(Node("Cast", 1).i("to", TP::FLOAT), {&S});
  ASSERT_TRUE(F.Folded);
  Result M = eval(Node("Mul", 2), {&F.Values[0], &Scale});
  Result Fl = eval(Node("Floor", 1), {&M.Values[0]});
  Result Back = eval(Node("Cast", 1).i("to", TP::INT64), {&Fl.Values[0]});
  ASSERT_TRUE(Back.Folded);
  EXPECT_EQ(Back.Values[0].Ints, (std::vector<int64_t>{336, 336}));
}

TEST(ShapeFolderTest, WhereEqualAndExpand) {
  // The pattern exporters write for a reshape to a tensor's shape where -1
  // entries keep the input's: Where(Equal(s, -1), ones, s).
  FoldValue S = ints({3}, {2, -1, 4}), MinusOne = ints({}, {-1}),
            One = ints({}, {1});
  Result Eq = eval(Node("Equal", 2), {&S, &MinusOne});
  ASSERT_TRUE(Eq.Folded);
  Result W = eval(Node("Where", 3), {&Eq.Values[0], &One, &S});
  ASSERT_TRUE(W.Folded);
  EXPECT_EQ(W.Values[0].Ints, (std::vector<int64_t>{2, 1, 4}));
  FoldValue Token = ints({1, 1, 2}, {7, 9});
  FoldValue To = ints({3}, {3, 1, 1});
  Result E = eval(Node("Expand", 2), {&Token, &To});
  ASSERT_TRUE(E.Folded);
  EXPECT_EQ(dims(E.Values[0]), (std::vector<int64_t>{3, 1, 2}));
  EXPECT_EQ(E.Values[0].Ints, (std::vector<int64_t>{7, 9, 7, 9, 7, 9}));
  FoldValue Neg = ints({1}, {-2});
  EXPECT_EQ(eval(Node("Expand", 2), {&Token, &Neg}).Error,
            "Expand: dimension 0 is negative (-2)");
}

TEST(ShapeFolderTest, RangeConstantOfShapeTileTranspose) {
  FoldValue Start = ints({}, {0}), Limit = ints({}, {7}), Delta = ints({}, {3});
  Result R = eval(Node("Range", 3), {&Start, &Limit, &Delta});
  ASSERT_TRUE(R.Folded);
  EXPECT_EQ(R.Values[0].Ints, (std::vector<int64_t>{0, 3, 6}));
  FoldValue Zero = ints({}, {0});
  EXPECT_EQ(eval(Node("Range", 3), {&Start, &Limit, &Zero}).Error,
            "Range: delta is 0");
  // A huge range is left to shape inference, not materialized.
  FoldValue Huge = ints({}, {int64_t(1) << 40}), One = ints({}, {1});
  EXPECT_FALSE(eval(Node("Range", 3), {&Start, &Huge, &One}).Folded);
  FoldValue Shape = ints({2}, {2, 3});
  R = eval(Node("ConstantOfShape", 1), {&Shape});
  ASSERT_TRUE(R.Folded);
  EXPECT_EQ(R.Values[0].ElemType, TP::FLOAT);
  EXPECT_EQ(R.Values[0].Reals, std::vector<double>(6, 0.0));
  FoldValue NegShape = ints({2}, {2, -3});
  EXPECT_EQ(eval(Node("ConstantOfShape", 1), {&NegShape}).Error,
            "ConstantOfShape: dimension 1 is negative (-3)");
  FoldValue M = ints({2, 2}, {1, 2, 3, 4}), Reps = ints({2}, {1, 2});
  R = eval(Node("Tile", 2), {&M, &Reps});
  ASSERT_TRUE(R.Folded);
  EXPECT_EQ(R.Values[0].Ints, (std::vector<int64_t>{1, 2, 1, 2, 3, 4, 3, 4}));
  R = eval(Node("Transpose", 1), {&M});
  ASSERT_TRUE(R.Folded);
  EXPECT_EQ(R.Values[0].Ints, (std::vector<int64_t>{1, 3, 2, 4}));
}

TEST(ShapeFolderTest, ReductionsAndSplit) {
  FoldValue S = ints({3}, {2, 3, 4});
  Result R = eval(Node("ReduceProd", 1).i("keepdims", 0), {&S});
  ASSERT_TRUE(R.Folded);
  EXPECT_EQ(R.Values[0].Ints, (std::vector<int64_t>{24}));
  EXPECT_TRUE(R.Values[0].Dims.empty());
  FoldValue M = ints({2, 3}, {1, 2, 3, 4, 5, 6}), Axes = ints({1}, {1});
  R = eval(Node("ReduceSum", 2), {&M, &Axes});
  ASSERT_TRUE(R.Folded);
  EXPECT_EQ(dims(R.Values[0]), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(R.Values[0].Ints, (std::vector<int64_t>{6, 15}));
  R = eval(Node("ReduceMax", 1).ints("axes", {0}), {&M});
  EXPECT_EQ(R.Values[0].Ints, (std::vector<int64_t>{4, 5, 6}));
  FoldValue Sizes = ints({2}, {1, 2});
  R = eval(Node("Split", 2, 2), {&S, &Sizes});
  ASSERT_TRUE(R.Folded);
  EXPECT_EQ(R.Values[0].Ints, (std::vector<int64_t>{2}));
  EXPECT_EQ(R.Values[1].Ints, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(eval(Node("Split", 1, 2), {&S}).Error,
            "Split: dimension 3 does not split into 2 equal parts");
}

TEST(ShapeFolderTest, ConstantsAndUnknownOps) {
  Node C("Constant", 0);
  C.ints("value_ints", {1, 2, 3});
  Result R = eval(C, {});
  ASSERT_TRUE(R.Folded);
  EXPECT_EQ(R.Values[0].Ints, (std::vector<int64_t>{1, 2, 3}));
  // Ops the folder does not evaluate, and unknown inputs, are left alone.
  FoldValue S = ints({2}, {1, 2});
  EXPECT_FALSE(eval(Node("Conv", 2), {&S, &S}).Folded);
  EXPECT_FALSE(eval(Node("Add", 2), {&S, nullptr}).Folded);
  Node Custom("Shape", 1);
  Custom.N.set_domain("com.example");
  std::vector<int64_t> D{2};
  EXPECT_FALSE(eval(Custom, {nullptr}, 17, {&D}).Folded);
}

TEST(ShapeFolderTest, TensorValuesRoundTrip) {
  TP T;
  T.set_data_type(TP::INT32);
  T.add_dims(2);
  int32_t Raw[2] = {-5, 7};
  T.set_raw_data(std::string(reinterpret_cast<char *>(Raw), sizeof(Raw)));
  llvm::Optional<FoldValue> V = readTensorValue(T);
  ASSERT_TRUE(V.hasValue());
  EXPECT_EQ(V->Ints, (std::vector<int64_t>{-5, 7}));
  TP Back;
  writeTensorValue(*V, Back);
  llvm::Optional<FoldValue> Again = readTensorValue(Back);
  ASSERT_TRUE(Again.hasValue());
  EXPECT_EQ(Again->Ints, V->Ints);
  EXPECT_EQ(Again->ElemType, TP::INT32);
  // A wrong raw size, external data, strings: not read.
  T.set_raw_data("abc");
  EXPECT_FALSE(readTensorValue(T).hasValue());
  TP Str;
  Str.set_data_type(TP::STRING);
  EXPECT_FALSE(readTensorValue(Str).hasValue());
}

TEST(ShapeFolderTest, BoundValuesParse) {
  auto Parse = [](int32_t Type, std::initializer_list<int64_t> Dims,
                  const char *Text) {
    return parseFoldValue(Type, std::vector<int64_t>(Dims), Text);
  };
  llvm::Expected<FoldValue> Rate = Parse(TP::INT64, {}, "16000");
  ASSERT_TRUE(bool(Rate));
  EXPECT_EQ(Rate->Ints, (std::vector<int64_t>{16000}));
  EXPECT_TRUE(Rate->Dims.empty());
  llvm::Expected<FoldValue> On = Parse(TP::BOOL, {1, 1}, "true");
  ASSERT_TRUE(bool(On));
  EXPECT_EQ(On->Ints, (std::vector<int64_t>{1}));
  EXPECT_EQ(On->Dims.size(), 2u);
  llvm::Expected<FoldValue> Gain = Parse(TP::FLOAT, {1}, "0.25");
  ASSERT_TRUE(bool(Gain));
  EXPECT_EQ(Gain->Reals, (std::vector<double>{0.25}));
  // Not an integer, out of range, not one element, not a number, a type
  // the folder does not hold.
  for (auto [Type, Text] : {std::pair<int32_t, const char *>{TP::INT64, "1.5"},
                            {TP::UINT8, "300"},
                            {TP::BOOL, "2"},
                            {TP::FLOAT, "nan"},
                            {TP::FLOAT, "x"},
                            {TP::STRING, "1"}}) {
    llvm::Expected<FoldValue> V = Parse(Type, {}, Text);
    EXPECT_FALSE(bool(V)) << Text;
    llvm::consumeError(V.takeError());
  }
  llvm::Expected<FoldValue> Two = Parse(TP::INT64, {2}, "1");
  ASSERT_FALSE(bool(Two));
  EXPECT_EQ(llvm::toString(Two.takeError()), "it must have one element");
}

} // namespace
