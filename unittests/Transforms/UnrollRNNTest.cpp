//===- UnrollRNNTest.cpp - The unrolled maths equals ONNX's ---------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
//
// Builds one LSTM, GRU or RNN op, unrolls it, runs the unrolled graph with
// GraphEvaluator on random data and compares Y, Y_h and Y_c with a direct
// implementation of the ONNX operator's equations.
//
//===----------------------------------------------------------------------===//

#include "dp/Transforms/UnrollRNN.h"
#include "GraphEvaluator.h"
#include "dp/IR/Graph.h"
#include "dp/IR/Verifier.h"
#include "dp/Support/Diagnostics.h"

#include "DiagnosticsTestUtil.h"

#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

using namespace dp;
using namespace dp::test;

namespace {

enum class Cell { LSTM, GRU, RNN };

struct RNNCase {
  std::string Label;
  Cell Kind = Cell::LSTM;
  int64_t T = 3, Batch = 2, Input = 3, Hidden = 4;
  std::string Direction = "forward";
  int64_t Layout = 0;
  bool Bias = true, InitialH = false, InitialC = false, Peepholes = false;
  bool LinearBeforeReset = false;
  double Clip = 0;
  /// Empty: the defaults.
  std::vector<std::string> Activations;
  int64_t Opset = 17;

  unsigned numDirections() const {
    return Direction == "bidirectional" ? 2 : 1;
  }
  unsigned numGates() const {
    return Kind == Cell::LSTM ? 4 : Kind == Cell::GRU ? 3 : 1;
  }
  std::string typeName() const {
    return Kind == Cell::LSTM ? "LSTM" : Kind == Cell::GRU ? "GRU" : "RNN";
  }
  std::vector<std::string> activations() const {
    if (!Activations.empty())
      return Activations;
    std::vector<std::string> A;
    for (unsigned D = 0; D != numDirections(); ++D) {
      if (Kind == Cell::RNN) {
        A.push_back("Tanh");
        continue;
      }
      A.push_back("Sigmoid");
      A.push_back("Tanh");
      if (Kind == Cell::LSTM)
        A.push_back("Tanh");
    }
    return A;
  }
  std::vector<int64_t> stateDims() const {
    int64_t D = numDirections();
    return Layout == 0 ? std::vector<int64_t>{D, Batch, Hidden}
                       : std::vector<int64_t>{Batch, D, Hidden};
  }
};

std::ostream &operator<<(std::ostream &OS, const RNNCase &C) {
  return OS << C.Label;
}

TensorType f32(std::vector<int64_t> Dims) {
  return TensorType(DTypeKind::F32, Dims);
}

/// A graph with the one recurrent op of \p C, named "rnn".
Graph buildGraph(const RNNCase &C) {
  Graph G;
  G.setName("rnn_test");
  G.setOpset("", C.Opset);
  int64_t D = C.numDirections(), NG = C.numGates(), H = C.Hidden;
  TensorId X = G.addInput(
      "X", f32(C.Layout == 0 ? std::vector<int64_t>{C.T, C.Batch, C.Input}
                             : std::vector<int64_t>{C.Batch, C.T, C.Input}));
  TensorId H0 = C.InitialH ? G.addInput("initial_h", f32(C.stateDims())) : NoId;
  TensorId C0 = C.InitialC ? G.addInput("initial_c", f32(C.stateDims())) : NoId;
  TensorId W = G.addWeight("W", f32({D, NG * H, C.Input}));
  TensorId R = G.addWeight("R", f32({D, NG * H, H}));
  TensorId B = C.Bias ? G.addWeight("B", f32({D, 2 * NG * H})) : NoId;
  TensorId P = C.Peepholes ? G.addWeight("P", f32({D, 3 * H})) : NoId;

  std::vector<TensorId> Operands = {X, W, R, B, NoId, H0};
  if (C.Kind == Cell::LSTM) {
    Operands.push_back(C0);
    Operands.push_back(P);
  }
  while (Operands.back() == NoId)
    Operands.pop_back();

  AttributeList Attrs;
  Attrs.set("hidden_size", Attribute::getInt(H));
  Attrs.set("direction", Attribute::getString(C.Direction));
  if (C.Layout)
    Attrs.set("layout", Attribute::getInt(C.Layout));
  if (C.Clip > 0)
    Attrs.set("clip", Attribute::getFloat(C.Clip));
  if (C.Kind == Cell::GRU && C.LinearBeforeReset)
    Attrs.set("linear_before_reset", Attribute::getInt(1));
  if (!C.Activations.empty())
    Attrs.set("activations", Attribute::getStrings(C.Activations));

  std::vector<Graph::ResultSpec> Results = {
      {"Y", f32(C.Layout == 0 ? std::vector<int64_t>{C.T, D, C.Batch, H}
                              : std::vector<int64_t>{C.Batch, C.T, D, H})},
      {"Y_h", f32(C.stateDims())}};
  if (C.Kind == Cell::LSTM)
    Results.push_back({"Y_c", f32(C.stateDims())});
  OpId O =
      G.addOp("rnn", "", C.typeName(), Operands, Results, std::move(Attrs));
  for (TensorId T : G.getOp(O).Results)
    G.addOutput(T);
  return G;
}

Value randomValue(std::vector<int64_t> Dims, std::mt19937 &Rng,
                  float Scale = 1.0f) {
  std::uniform_real_distribution<float> Dist(-Scale, Scale);
  Value V;
  V.Dims = std::move(Dims);
  V.Data.resize(V.size());
  for (float &X : V.Data)
    X = Dist(Rng);
  return V;
}

double activate(const std::string &Name, double X) {
  std::string Lower = llvm::StringRef(Name).lower();
  if (Lower == "sigmoid")
    return 1.0 / (1.0 + std::exp(-X));
  if (Lower == "tanh")
    return std::tanh(X);
  if (Lower == "relu")
    return std::max(X, 0.0);
  ADD_FAILURE() << "unknown activation " << Name;
  return 0;
}

/// The ONNX operator's results, computed directly in double.
struct Reference {
  std::vector<double> Y, YH, YC;
};

Reference computeReference(const RNNCase &C,
                           const std::map<std::string, Value> &In) {
  const int64_t T = C.T, NB = C.Batch, I = C.Input, H = C.Hidden,
                ND = C.numDirections(), NG = C.numGates();
  std::vector<std::string> Acts = C.activations();
  const size_t NA = Acts.size() / ND;
  auto X = [&](int64_t t, int64_t b, int64_t i) -> double {
    const Value &V = In.at("X");
    return C.Layout == 0 ? V.Data[(t * NB + b) * I + i]
                         : V.Data[(b * T + t) * I + i];
  };
  auto State = [&](const char *Name, int64_t d, int64_t b,
                   int64_t h) -> double {
    auto It = In.find(Name);
    if (It == In.end())
      return 0.0;
    return C.Layout == 0 ? It->second.Data[(d * NB + b) * H + h]
                         : It->second.Data[(b * ND + d) * H + h];
  };
  auto Wv = [&](int64_t d, int64_t row, int64_t i) -> double {
    return In.at("W").Data[(d * NG * H + row) * I + i];
  };
  auto Rv = [&](int64_t d, int64_t row, int64_t h) -> double {
    return In.at("R").Data[(d * NG * H + row) * H + h];
  };
  auto Bv = [&](int64_t d, int64_t k) -> double {
    auto It = In.find("B");
    return It == In.end() ? 0.0 : It->second.Data[d * 2 * NG * H + k];
  };
  auto Pv = [&](int64_t d, int64_t k) -> double {
    auto It = In.find("P");
    return It == In.end() ? 0.0 : It->second.Data[d * 3 * H + k];
  };
  auto Clip = [&](double V) {
    return C.Clip > 0 ? std::min(std::max(V, -C.Clip), C.Clip) : V;
  };

  Reference Ref;
  Ref.Y.assign(T * ND * NB * H, 0.0);
  Ref.YH.assign(ND * NB * H, 0.0);
  Ref.YC.assign(ND * NB * H, 0.0);
  auto YIndex = [&](int64_t t, int64_t d, int64_t b, int64_t h) {
    return C.Layout == 0 ? ((t * ND + d) * NB + b) * H + h
                         : ((b * T + t) * ND + d) * H + h;
  };
  auto StateIndex = [&](int64_t d, int64_t b, int64_t h) {
    return C.Layout == 0 ? (d * NB + b) * H + h : (b * ND + d) * H + h;
  };

  for (int64_t d = 0; d != ND; ++d) {
    bool Reverse = C.Direction == "reverse" || d == 1;
    const std::string &F = Acts[d * NA], &G = NA > 1 ? Acts[d * NA + 1] : F,
                      &Hact = NA > 2 ? Acts[d * NA + 2] : F;
    // Hs[b][h], Cs[b][h].
    std::vector<std::vector<double>> Hs(NB, std::vector<double>(H)),
        Cs(NB, std::vector<double>(H));
    for (int64_t b = 0; b != NB; ++b)
      for (int64_t h = 0; h != H; ++h) {
        Hs[b][h] = State("initial_h", d, b, h);
        Cs[b][h] = State("initial_c", d, b, h);
      }
    for (int64_t s = 0; s != T; ++s) {
      int64_t t = Reverse ? T - 1 - s : s;
      auto NewH = Hs, NewC = Cs;
      for (int64_t b = 0; b != NB; ++b) {
        // xw[g][h] = x W_g^T + Wb_g, hr[g][h] = h R_g^T + Rb_g.
        std::vector<std::vector<double>> XW(NG, std::vector<double>(H)),
            HR(NG, std::vector<double>(H));
        for (int64_t g = 0; g != NG; ++g)
          for (int64_t h = 0; h != H; ++h) {
            double SX = Bv(d, g * H + h), SH = Bv(d, (NG + g) * H + h);
            for (int64_t i = 0; i != I; ++i)
              SX += X(t, b, i) * Wv(d, g * H + h, i);
            for (int64_t k = 0; k != H; ++k)
              SH += Hs[b][k] * Rv(d, g * H + h, k);
            XW[g][h] = SX;
            HR[g][h] = SH;
          }
        if (C.Kind == Cell::RNN) {
          for (int64_t h = 0; h != H; ++h)
            NewH[b][h] = activate(F, Clip(XW[0][h] + HR[0][h]));
        } else if (C.Kind == Cell::LSTM) {
          // Gates i, o, f, c; peepholes i, o, f.
          for (int64_t h = 0; h != H; ++h) {
            double Cp = Cs[b][h];
            double IG = activate(F, Clip(XW[0][h] + HR[0][h] + Pv(d, h) * Cp));
            double FG =
                activate(F, Clip(XW[2][h] + HR[2][h] + Pv(d, 2 * H + h) * Cp));
            double CG = activate(G, Clip(XW[3][h] + HR[3][h]));
            double Cn = FG * Cp + IG * CG;
            double OG =
                activate(F, Clip(XW[1][h] + HR[1][h] + Pv(d, H + h) * Cn));
            NewC[b][h] = Cn;
            NewH[b][h] = OG * activate(Hact, Cn);
          }
        } else {
          // GRU: gates z, r, h; r of every unit is needed first.
          std::vector<double> Z(H), Rg(H);
          for (int64_t h = 0; h != H; ++h) {
            Z[h] = activate(F, Clip(XW[0][h] + HR[0][h]));
            Rg[h] = activate(F, Clip(XW[1][h] + HR[1][h]));
          }
          for (int64_t h = 0; h != H; ++h) {
            double Pre;
            if (C.LinearBeforeReset) {
              // r (.) (H Rh^T + Rbh) + x Wh^T + Wbh.
              Pre = XW[2][h] + Rg[h] * HR[2][h];
            } else {
              // (r (.) H) Rh^T + Rbh + x Wh^T + Wbh.
              double S = Bv(d, (NG + 2) * H + h);
              for (int64_t k = 0; k != H; ++k)
                S += Rg[k] * Hs[b][k] * Rv(d, 2 * H + h, k);
              Pre = XW[2][h] + S;
            }
            double Cand = activate(G, Clip(Pre));
            NewH[b][h] = (1 - Z[h]) * Cand + Z[h] * Hs[b][h];
          }
        }
      }
      Hs = NewH;
      if (C.Kind == Cell::LSTM)
        Cs = NewC;
      for (int64_t b = 0; b != NB; ++b)
        for (int64_t h = 0; h != H; ++h)
          Ref.Y[YIndex(t, d, b, h)] = Hs[b][h];
    }
    for (int64_t b = 0; b != NB; ++b)
      for (int64_t h = 0; h != H; ++h) {
        Ref.YH[StateIndex(d, b, h)] = Hs[b][h];
        Ref.YC[StateIndex(d, b, h)] = Cs[b][h];
      }
  }
  return Ref;
}

void expectClose(const std::vector<double> &Want, const Value &Have,
                 const std::string &What) {
  ASSERT_EQ(Want.size(), Have.Data.size()) << What;
  for (size_t I = 0; I != Want.size(); ++I)
    EXPECT_NEAR(Want[I], Have.Data[I], 1e-5) << What << " element " << I;
}

RNNCase make(std::string Label, Cell Kind,
             const std::function<void(RNNCase &)> &Set = {}) {
  RNNCase C;
  C.Label = std::move(Label);
  C.Kind = Kind;
  if (Set)
    Set(C);
  return C;
}

std::vector<RNNCase> allCases() {
  std::vector<RNNCase> Cases = {
      // LSTM.
      make("lstm_forward", Cell::LSTM),
      make("lstm_forward_initial_states", Cell::LSTM,
           [](RNNCase &C) { C.InitialH = C.InitialC = true; }),
      make("lstm_only_initial_h", Cell::LSTM,
           [](RNNCase &C) { C.InitialH = true; }),
      make("lstm_only_initial_c", Cell::LSTM,
           [](RNNCase &C) { C.InitialC = true; }),
      make("lstm_peepholes", Cell::LSTM,
           [](RNNCase &C) { C.Peepholes = true; }),
      make("lstm_peepholes_initial_states", Cell::LSTM,
           [](RNNCase &C) { C.Peepholes = C.InitialH = C.InitialC = true; }),
      make("lstm_no_bias", Cell::LSTM, [](RNNCase &C) { C.Bias = false; }),
      make("lstm_reverse", Cell::LSTM,
           [](RNNCase &C) {
             C.Direction = "reverse";
             C.InitialH = C.InitialC = true;
           }),
      make("lstm_bidirectional", Cell::LSTM,
           [](RNNCase &C) { C.Direction = "bidirectional"; }),
      make("lstm_bidirectional_everything", Cell::LSTM,
           [](RNNCase &C) {
             C.Direction = "bidirectional";
             C.InitialH = C.InitialC = C.Peepholes = true;
           }),
      make("lstm_layout1_bidirectional", Cell::LSTM,
           [](RNNCase &C) {
             C.Direction = "bidirectional";
             C.Layout = 1;
             C.InitialH = C.InitialC = C.Peepholes = true;
           }),
      make("lstm_layout1_forward", Cell::LSTM,
           [](RNNCase &C) { C.Layout = 1; }),
      make("lstm_clip", Cell::LSTM,
           [](RNNCase &C) {
             C.Clip = 0.3;
             C.InitialH = C.InitialC = C.Peepholes = true;
           }),
      make("lstm_one_step", Cell::LSTM,
           [](RNNCase &C) {
             C.T = 1;
             C.Direction = "bidirectional";
           }),
      make("lstm_activations", Cell::LSTM,
           [](RNNCase &C) {
             C.Direction = "bidirectional";
             C.Activations = {"Sigmoid", "Relu", "Tanh",
                              "sigmoid", "Tanh", "Relu"};
             C.InitialH = C.InitialC = true;
           }),
      make("lstm_opset11_attributes", Cell::LSTM,
           [](RNNCase &C) {
             C.Opset = 11;
             C.Direction = "bidirectional";
             C.InitialH = true;
           }),
      make("lstm_opset10_clip", Cell::LSTM,
           [](RNNCase &C) {
             C.Opset = 10;
             C.Clip = 0.5;
           }),
      make("lstm_opset18_split", Cell::LSTM,
           [](RNNCase &C) {
             C.Opset = 18;
             C.Direction = "bidirectional";
             C.Clip = 0.5;
           }),
      make("lstm_bigger", Cell::LSTM,
           [](RNNCase &C) {
             C.T = 5;
             C.Batch = 3;
             C.Input = 6;
             C.Hidden = 5;
             C.Direction = "bidirectional";
             C.InitialH = C.InitialC = C.Peepholes = true;
           }),

      // GRU.
      make("gru_forward", Cell::GRU),
      make("gru_forward_initial_h", Cell::GRU,
           [](RNNCase &C) { C.InitialH = true; }),
      make("gru_linear_before_reset", Cell::GRU,
           [](RNNCase &C) { C.LinearBeforeReset = true; }),
      make("gru_linear_before_reset_initial_h", Cell::GRU,
           [](RNNCase &C) {
             C.LinearBeforeReset = true;
             C.InitialH = true;
           }),
      make("gru_linear_before_reset_no_bias", Cell::GRU,
           [](RNNCase &C) {
             C.LinearBeforeReset = true;
             C.Bias = false;
             C.InitialH = true;
           }),
      make("gru_no_bias", Cell::GRU, [](RNNCase &C) { C.Bias = false; }),
      make("gru_reverse", Cell::GRU,
           [](RNNCase &C) {
             C.Direction = "reverse";
             C.InitialH = true;
           }),
      make("gru_bidirectional", Cell::GRU,
           [](RNNCase &C) { C.Direction = "bidirectional"; }),
      make("gru_bidirectional_lbr_initial_h", Cell::GRU,
           [](RNNCase &C) {
             C.Direction = "bidirectional";
             C.LinearBeforeReset = true;
             C.InitialH = true;
           }),
      make("gru_layout1", Cell::GRU,
           [](RNNCase &C) {
             C.Layout = 1;
             C.Direction = "bidirectional";
             C.InitialH = true;
           }),
      make("gru_clip", Cell::GRU,
           [](RNNCase &C) {
             C.Clip = 0.4;
             C.InitialH = true;
           }),
      make("gru_activations", Cell::GRU,
           [](RNNCase &C) {
             C.Activations = {"Sigmoid", "Relu"};
             C.InitialH = true;
           }),

      // RNN.
      make("rnn_forward", Cell::RNN),
      make("rnn_forward_initial_h", Cell::RNN,
           [](RNNCase &C) { C.InitialH = true; }),
      make("rnn_reverse", Cell::RNN,
           [](RNNCase &C) { C.Direction = "reverse"; }),
      make("rnn_bidirectional", Cell::RNN,
           [](RNNCase &C) {
             C.Direction = "bidirectional";
             C.InitialH = true;
           }),
      make("rnn_layout1", Cell::RNN,
           [](RNNCase &C) {
             C.Layout = 1;
             C.InitialH = true;
           }),
      make("rnn_relu", Cell::RNN,
           [](RNNCase &C) {
             C.Direction = "bidirectional";
             C.Activations = {"Relu", "Tanh"};
           }),
      make("rnn_clip_no_bias", Cell::RNN,
           [](RNNCase &C) {
             C.Clip = 0.2;
             C.Bias = false;
           }),
  };
  return Cases;
}

class UnrollRNNMathTest : public ::testing::TestWithParam<RNNCase> {};

TEST_P(UnrollRNNMathTest, MatchesTheONNXEquations) {
  const RNNCase &C = GetParam();
  Graph G = buildGraph(C);
  ASSERT_FALSE(bool(verifyGraph(G)));
  llvm::Error Err = unrollRNNs(G);
  ASSERT_FALSE(bool(Err)) << llvm::toString(std::move(Err));
  Err = verifyGraph(G);
  ASSERT_FALSE(bool(Err)) << llvm::toString(std::move(Err));

  // The op is gone; its results keep their names and stay outputs.
  for (const Op &O : G.ops()) {
    EXPECT_NE(O.Type, C.typeName()) << O.Name.str();
    const Attribute *Rnn = O.Annotations.get("rnn");
    ASSERT_TRUE(Rnn) << O.Name.str();
    EXPECT_EQ(Rnn->getString(), "rnn");
    EXPECT_TRUE(llvm::StringRef(O.Name).startswith("rnn/")) << O.Name.str();
  }
  ASSERT_EQ(G.getOutputs().size(), C.Kind == Cell::LSTM ? 3u : 2u);
  EXPECT_EQ(G.getTensor(G.getOutputs()[0]).Name, "Y");
  EXPECT_EQ(G.getTensor(G.getOutputs()[1]).Name, "Y_h");

  std::mt19937 Rng(42);
  std::map<std::string, Value> In;
  for (TensorId T : G.getInputs()) {
    const TensorType &Ty = G.getTensor(T).Type;
    In[G.getTensor(T).Name.str()] =
        randomValue(std::vector<int64_t>(Ty.Dims.begin(), Ty.Dims.end()), Rng);
  }
  for (TensorId T : G.getWeights()) {
    const TensorType &Ty = G.getTensor(T).Type;
    In[G.getTensor(T).Name.str()] = randomValue(
        std::vector<int64_t>(Ty.Dims.begin(), Ty.Dims.end()), Rng, 0.8f);
  }
  GraphEvaluator E(G);
  for (const auto &KV : In)
    E.set(KV.first, KV.second);
  E.run();
  ASSERT_FALSE(HasFatalFailure());

  Reference Ref = computeReference(C, In);
  expectClose(Ref.Y, E.get("Y"), "Y");
  expectClose(Ref.YH, E.get("Y_h"), "Y_h");
  if (C.Kind == Cell::LSTM)
    expectClose(Ref.YC, E.get("Y_c"), "Y_c");
}

INSTANTIATE_TEST_SUITE_P(AllVariants, UnrollRNNMathTest,
                         ::testing::ValuesIn(allCases()),
                         [](const ::testing::TestParamInfo<RNNCase> &Info) {
                           return Info.param.Label;
                         });

TEST(UnrollRNNTest, AnnotatesTimesteps) {
  RNNCase C = make("lstm", Cell::LSTM, [](RNNCase &C) {
    C.Direction = "bidirectional";
    C.T = 4;
  });
  Graph G = buildGraph(C);
  ASSERT_FALSE(bool(unrollRNNs(G)));
  // Every op of a step is named after its step and direction.
  unsigned Stepped = 0;
  for (const Op &O : G.ops()) {
    const Attribute *Step = O.Annotations.get("timestep");
    if (!Step)
      continue;
    ++Stepped;
    std::string Prefix = "rnn/t" + std::to_string(Step->getInt()) + "/";
    EXPECT_TRUE(llvm::StringRef(O.Name).startswith(Prefix)) << O.Name.str();
  }
  EXPECT_GT(Stepped, 0u);
  // The weights are sliced once, not per step: two directions, four gates,
  // W and R.
  unsigned Transposes = 0;
  for (const Op &O : G.ops())
    Transposes += O.Type == "Transpose";
  EXPECT_EQ(Transposes, 2u * 4u * 2u);
  // The backward direction's first step is the last timestep.
  EXPECT_NE(G.lookupOp("rnn/t3/d1/hidden"), NoId);
  // No forget gate at a direction's first step from a zero cell state.
  EXPECT_EQ(G.lookupOp("rnn/t0/d0/f"), NoId);
  EXPECT_NE(G.lookupOp("rnn/t1/d0/f"), NoId);
  EXPECT_EQ(G.lookupOp("rnn/t3/d1/f"), NoId);
  EXPECT_NE(G.lookupOp("rnn/t0/d1/f"), NoId);
}

TEST(UnrollRNNTest, NamesDoNotCollide) {
  RNNCase C = make("rnn", Cell::RNN);
  Graph G = buildGraph(C);
  // A tensor and an op already named like what the expansion creates.
  TensorId X = G.lookupTensor("X");
  G.addOp("rnn/t0/x", "", "Identity", {X}, {{"rnn/W", G.getTensor(X).Type}});
  ASSERT_FALSE(bool(unrollRNNs(G)));
  ASSERT_FALSE(bool(verifyGraph(G)));
  EXPECT_EQ(G.getOp(G.lookupOp("rnn/t0/x")).Type, "Identity");
  EXPECT_NE(G.lookupOp("rnn/t0/x.1"), NoId);
}

TEST(UnrollRNNTest, ReportsEveryUnsupportedOp) {
  Graph G;
  G.setName("bad");
  G.setOpset("", 17);
  TensorId X = G.addInput("X", f32({2, 1, 3}));
  TensorId Lens = G.addInput("lens", TensorType(DTypeKind::I32, {1}));
  TensorId W = G.addWeight("W", f32({1, 16, 3}));
  TensorId R = G.addWeight("R", f32({1, 16, 4}));
  G.addOp("with_lens", "", "LSTM", {X, W, R, NoId, Lens},
          {{"Y1", f32({2, 1, 1, 4})}});
  AttributeList Attrs;
  Attrs.set("input_forget", Attribute::getInt(1));
  G.addOp("coupled", "", "LSTM", {X, W, R}, {{"Y2", f32({2, 1, 1, 4})}}, Attrs);
  std::vector<Diag> Diags = collectErrors(unrollRNNs(G));
  ASSERT_EQ(Diags.size(), 2u) << describe(Diags);
  EXPECT_EQ(Diags[0].Loc.Node, "with_lens");
  EXPECT_EQ(Diags[1].Loc.Node, "coupled");
  // Nothing was changed.
  EXPECT_EQ(G.getNumOps(), 2u);
}

} // namespace
