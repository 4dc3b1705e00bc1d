//===- GraphEvaluator.h - Running small graphs on float data ----*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// A reference interpreter for the few ONNX ops that unroll-rnn writes
/// (Constant, Split, Squeeze, Unsqueeze, Transpose, MatMul, Add, Sub, Mul,
/// Sigmoid, Tanh, Relu, Concat, Clip, Cast), on float tensors, so that the
/// unit tests can check the unrolled maths against the ONNX formulas.
/// Written for clarity, not speed.
///
//===----------------------------------------------------------------------===//

#ifndef DP_UNITTESTS_TRANSFORMS_GRAPHEVALUATOR_H
#define DP_UNITTESTS_TRANSFORMS_GRAPHEVALUATOR_H

#include "dp/IR/Graph.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdint>
#include <map>
#include <numeric>
#include <string>
#include <vector>

namespace dp {
namespace test {

/// A dense row-major tensor of floats (integer constants are stored as
/// floats too).
struct Value {
  std::vector<int64_t> Dims;
  std::vector<float> Data;

  int64_t size() const {
    return std::accumulate(Dims.begin(), Dims.end(), int64_t(1),
                           std::multiplies<int64_t>());
  }
};

inline std::vector<int64_t> stridesOf(const std::vector<int64_t> &Dims) {
  std::vector<int64_t> S(Dims.size(), 1);
  for (size_t I = Dims.size(); I-- > 1;)
    S[I - 1] = S[I] * Dims[I];
  return S;
}

/// Numpy broadcasting of an elementwise binary function.
template <typename Fn> Value broadcast(const Value &A, const Value &B, Fn F) {
  size_t Rank = std::max(A.Dims.size(), B.Dims.size());
  auto Pad = [&](const std::vector<int64_t> &D) {
    std::vector<int64_t> P(Rank - D.size(), 1);
    P.insert(P.end(), D.begin(), D.end());
    return P;
  };
  std::vector<int64_t> DA = Pad(A.Dims), DB = Pad(B.Dims);
  Value R;
  for (size_t I = 0; I != Rank; ++I) {
    EXPECT_TRUE(DA[I] == DB[I] || DA[I] == 1 || DB[I] == 1);
    R.Dims.push_back(std::max(DA[I], DB[I]));
  }
  std::vector<int64_t> SA = stridesOf(DA), SB = stridesOf(DB),
                       SR = stridesOf(R.Dims);
  R.Data.resize(R.size());
  for (int64_t Flat = 0, E = R.size(); Flat != E; ++Flat) {
    int64_t IA = 0, IB = 0, Rest = Flat;
    for (size_t D = 0; D != Rank; ++D) {
      int64_t Idx = Rest / SR[D];
      Rest %= SR[D];
      IA += (DA[D] == 1 ? 0 : Idx) * SA[D];
      IB += (DB[D] == 1 ? 0 : Idx) * SB[D];
    }
    R.Data[Flat] = F(A.Data[IA], B.Data[IB]);
  }
  return R;
}

/// Runs a graph op by op. Inputs and weights are set by name first.
class GraphEvaluator {
public:
  explicit GraphEvaluator(const Graph &G) : G(G) {}

  void set(llvm::StringRef Name, Value V) {
    TensorId T = G.lookupTensor(Name);
    ASSERT_NE(T, NoId) << "no tensor '" << Name.str() << "'";
    Values[T] = std::move(V);
  }
  const Value &get(llvm::StringRef Name) const {
    return Values.at(G.lookupTensor(Name));
  }

  /// Evaluates every op; fails the test on an op it does not know.
  void run() {
    for (OpId O = 0, E = G.getNumOps(); O != E; ++O) {
      evaluate(G.getOp(O));
      if (::testing::Test::HasFatalFailure())
        return;
    }
  }

private:
  const Value &in(const Op &O, unsigned I) {
    auto It = Values.find(O.Operands[I]);
    EXPECT_NE(It, Values.end())
        << "operand " << I << " of '" << O.Name.str() << "' has no value";
    return It->second;
  }
  void out(const Op &O, unsigned I, Value V) {
    const TensorType &T = G.getTensor(O.Results[I]).Type;
    std::vector<int64_t> Want(T.Dims.begin(), T.Dims.end());
    EXPECT_EQ(V.Dims, Want) << "result " << I << " of '" << O.Name.str()
                            << "' has another shape than its type says";
    Values[O.Results[I]] = std::move(V);
  }
  std::vector<int64_t> axesOf(const Op &O, unsigned Operand) {
    std::vector<int64_t> Axes;
    if (O.Operands.size() > Operand) {
      for (float A : in(O, Operand).Data)
        Axes.push_back(int64_t(A));
      return Axes;
    }
    const Attribute *A = O.Attrs.get("axes");
    EXPECT_TRUE(A) << O.Name.str();
    return A ? A->getInts() : Axes;
  }
  static int64_t norm(int64_t Axis, size_t Rank) {
    return Axis < 0 ? Axis + int64_t(Rank) : Axis;
  }

  void evaluate(const Op &O) {
    llvm::StringRef T = O.Type;
    ASSERT_TRUE(O.Domain.empty()) << O.Name.str();
    if (T == "Constant") {
      Value V;
      if (const Attribute *A = O.Attrs.get("value_ints")) {
        V.Dims = {int64_t(A->getInts().size())};
        for (int64_t I : A->getInts())
          V.Data.push_back(float(I));
      } else if (const Attribute *A = O.Attrs.get("value_float")) {
        V.Data = {float(A->getFloat())};
      } else {
        FAIL() << "Constant without value_ints or value_float";
      }
      return out(O, 0, std::move(V));
    }
    if (T == "Add" || T == "Sub" || T == "Mul") {
      const Value &A = in(O, 0), &B = in(O, 1);
      if (T == "Add")
        return out(O, 0,
                   broadcast(A, B, [](float X, float Y) { return X + Y; }));
      if (T == "Sub")
        return out(O, 0,
                   broadcast(A, B, [](float X, float Y) { return X - Y; }));
      return out(O, 0, broadcast(A, B, [](float X, float Y) { return X * Y; }));
    }
    if (T == "Sigmoid" || T == "Tanh" || T == "Relu" || T == "Cast") {
      Value V = in(O, 0);
      for (float &X : V.Data)
        X = T == "Sigmoid" ? 1.0f / (1.0f + std::exp(-X))
            : T == "Tanh"  ? std::tanh(X)
            : T == "Relu"  ? std::max(X, 0.0f)
                           : X;
      return out(O, 0, std::move(V));
    }
    if (T == "Clip") {
      Value V = in(O, 0);
      float Lo, Hi;
      if (O.Operands.size() == 3) {
        Lo = in(O, 1).Data[0];
        Hi = in(O, 2).Data[0];
      } else {
        Lo = float(O.Attrs.get("min")->getFloat());
        Hi = float(O.Attrs.get("max")->getFloat());
      }
      for (float &X : V.Data)
        X = std::min(std::max(X, Lo), Hi);
      return out(O, 0, std::move(V));
    }
    if (T == "MatMul") {
      const Value &A = in(O, 0), &B = in(O, 1);
      ASSERT_EQ(A.Dims.size(), 2u) << O.Name.str();
      ASSERT_EQ(B.Dims.size(), 2u) << O.Name.str();
      int64_t M = A.Dims[0], K = A.Dims[1], N = B.Dims[1];
      ASSERT_EQ(B.Dims[0], K);
      Value V;
      V.Dims = {M, N};
      V.Data.assign(M * N, 0.0f);
      for (int64_t I = 0; I != M; ++I)
        for (int64_t J = 0; J != N; ++J) {
          float S = 0;
          for (int64_t L = 0; L != K; ++L)
            S += A.Data[I * K + L] * B.Data[L * N + J];
          V.Data[I * N + J] = S;
        }
      return out(O, 0, std::move(V));
    }
    if (T == "Transpose") {
      const Value &A = in(O, 0);
      std::vector<int64_t> Perm = O.Attrs.get("perm")->getInts();
      Value V;
      for (int64_t P : Perm)
        V.Dims.push_back(A.Dims[P]);
      V.Data.resize(A.size());
      std::vector<int64_t> SA = stridesOf(A.Dims), SV = stridesOf(V.Dims);
      for (int64_t Flat = 0, E = V.size(); Flat != E; ++Flat) {
        int64_t Src = 0, Rest = Flat;
        for (size_t D = 0; D != Perm.size(); ++D) {
          Src += Rest / SV[D] * SA[Perm[D]];
          Rest %= SV[D];
        }
        V.Data[Flat] = A.Data[Src];
      }
      return out(O, 0, std::move(V));
    }
    if (T == "Squeeze" || T == "Unsqueeze") {
      Value V = in(O, 0);
      std::vector<int64_t> Axes = axesOf(O, 1);
      if (T == "Squeeze") {
        std::vector<bool> Drop(V.Dims.size(), false);
        for (int64_t A : Axes) {
          EXPECT_EQ(V.Dims[norm(A, V.Dims.size())], 1);
          Drop[norm(A, V.Dims.size())] = true;
        }
        std::vector<int64_t> Dims;
        for (size_t I = 0; I != V.Dims.size(); ++I)
          if (!Drop[I])
            Dims.push_back(V.Dims[I]);
        V.Dims = Dims;
      } else {
        size_t Rank = V.Dims.size() + Axes.size();
        std::vector<bool> New(Rank, false);
        for (int64_t A : Axes)
          New[norm(A, Rank)] = true;
        std::vector<int64_t> Dims;
        size_t Next = 0;
        for (size_t I = 0; I != Rank; ++I)
          Dims.push_back(New[I] ? 1 : V.Dims[Next++]);
        V.Dims = Dims;
      }
      return out(O, 0, std::move(V));
    }
    if (T == "Split") {
      const Value &A = in(O, 0);
      int64_t Axis =
          norm(O.Attrs.get("axis") ? O.Attrs.get("axis")->getInt() : 0,
               A.Dims.size());
      unsigned N = O.Results.size();
      if (const Attribute *NO = O.Attrs.get("num_outputs")) {
        EXPECT_EQ(NO->getInt(), int64_t(N));
      }
      ASSERT_EQ(A.Dims[Axis] % N, 0);
      int64_t Part = A.Dims[Axis] / N;
      int64_t Outer = 1, Inner = 1;
      for (int64_t D = 0; D < Axis; ++D)
        Outer *= A.Dims[D];
      for (size_t D = Axis + 1; D < A.Dims.size(); ++D)
        Inner *= A.Dims[D];
      for (unsigned K = 0; K != N; ++K) {
        Value V;
        V.Dims = A.Dims;
        V.Dims[Axis] = Part;
        for (int64_t Ou = 0; Ou != Outer; ++Ou)
          for (int64_t P = 0; P != Part; ++P)
            for (int64_t In = 0; In != Inner; ++In)
              V.Data.push_back(
                  A.Data[(Ou * A.Dims[Axis] + K * Part + P) * Inner + In]);
        out(O, K, std::move(V));
      }
      return;
    }
    if (T == "Concat") {
      const Value &First = in(O, 0);
      int64_t Axis = norm(O.Attrs.get("axis")->getInt(), First.Dims.size());
      int64_t Outer = 1, Inner = 1;
      for (int64_t D = 0; D < Axis; ++D)
        Outer *= First.Dims[D];
      for (size_t D = Axis + 1; D < First.Dims.size(); ++D)
        Inner *= First.Dims[D];
      Value V;
      V.Dims = First.Dims;
      V.Dims[Axis] = 0;
      for (unsigned I = 0; I != O.Operands.size(); ++I)
        V.Dims[Axis] += in(O, I).Dims[Axis];
      for (int64_t Ou = 0; Ou != Outer; ++Ou)
        for (unsigned I = 0; I != O.Operands.size(); ++I) {
          const Value &P = in(O, I);
          int64_t Chunk = P.Dims[Axis] * Inner;
          V.Data.insert(V.Data.end(), P.Data.begin() + Ou * Chunk,
                        P.Data.begin() + (Ou + 1) * Chunk);
        }
      return out(O, 0, std::move(V));
    }
    FAIL() << "the evaluator does not know op type '" << T.str() << "' ('"
           << O.Name.str() << "')";
  }

  const Graph &G;
  std::map<TensorId, Value> Values;
};

} // namespace test
} // namespace dp

#endif // DP_UNITTESTS_TRANSFORMS_GRAPHEVALUATOR_H
