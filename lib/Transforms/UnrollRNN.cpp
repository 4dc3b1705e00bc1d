//===- UnrollRNN.cpp - Unrolling recurrent ops ----------------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
//
// Each LSTM, GRU or RNN op becomes, in place (so the graph stays in
// topological order):
//
//   - the op's weights sliced once per direction and gate: Split/Squeeze of
//     W, R, B, P, Transpose of each gate's W and R, one Add of Wb and Rb;
//   - X split along time into x_t [batch, input];
//   - per direction and timestep the cell's equations on [batch, hidden]
//     tensors, the first step leaving out the terms of a zero initial state;
//   - Y, Y_h and Y_c assembled with Unsqueeze and Concat, under the names
//     the op's results had.
//
//===----------------------------------------------------------------------===//

#include "dp/Transforms/UnrollRNN.h"
#include "GraphBuilder.h"
#include "dp/IR/Annotations.h"
#include "dp/IR/Graph.h"
#include "dp/Support/Diagnostics.h"

#include "llvm/ADT/Optional.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/Twine.h"

#include <string>

using namespace llvm;
using namespace dp::transforms;

namespace dp {

namespace {

enum class CellKind { LSTM, GRU, RNN };

/// What one recurrent op computes, checked.
struct RNNOp {
  OpId Id = NoId;
  CellKind Kind = CellKind::LSTM;
  /// Gates in the order of W's rows ("iofc", "zrh", "i").
  StringRef Gates;
  int64_t SeqLength = 0, Batch = 0, InputSize = 0, Hidden = 0;
  unsigned NumDirections = 1;
  bool Reverse = false;
  int64_t Layout = 0;
  Optional<double> Clip;
  bool LinearBeforeReset = false;
  /// The activations f, g, h (as many as the kind has) per direction:
  /// "Sigmoid", "Tanh" or "Relu".
  SmallVector<std::string, 6> Activations;
  DTypeKind DType = DTypeKind::Undefined;
  /// Operands and results in the old graph (NoId when absent).
  TensorId X = NoId, W = NoId, R = NoId, B = NoId, InitialH = NoId,
           InitialC = NoId, P = NoId;
  TensorId Y = NoId, YH = NoId, YC = NoId;

  unsigned getNumGates() const { return Gates.size(); }
  unsigned getNumActivations() const {
    return Kind == CellKind::LSTM ? 3 : Kind == CellKind::GRU ? 2 : 1;
  }
  StringRef getActivation(unsigned Direction, unsigned K) const {
    return Activations[Direction * getNumActivations() + K];
  }
};

} // namespace

static Optional<CellKind> getCellKind(const Op &O) {
  if (!O.Domain.empty() && O.Domain != "ai.onnx")
    return None;
  if (O.Type == "LSTM")
    return CellKind::LSTM;
  if (O.Type == "GRU")
    return CellKind::GRU;
  if (O.Type == "RNN")
    return CellKind::RNN;
  return None;
}

static std::string typeString(const TensorType &T) {
  std::string S;
  raw_string_ostream OS(S);
  OS << T;
  return OS.str();
}

/// Finds the operands and results of recurrent op \p Node in \p R.
static Error readRNNOperands(const Op &Node, RNNOp &R) {
  auto Operand = [&](unsigned I) {
    return I < Node.Operands.size() ? Node.Operands[I] : NoId;
  };
  auto Result = [&](unsigned I) {
    return I < Node.Results.size() ? Node.Results[I] : NoId;
  };
  R.X = Operand(0);
  R.W = Operand(1);
  R.R = Operand(2);
  R.B = Operand(3);
  R.InitialH = Operand(5);
  R.Y = Result(0);
  R.YH = Result(1);
  bool IsLSTM = R.Kind == CellKind::LSTM;
  if (IsLSTM) {
    R.InitialC = Operand(6);
    R.P = Operand(7);
    R.YC = Result(2);
  }
  unsigned MaxOperands = IsLSTM ? 8 : 6;
  unsigned MaxResults = IsLSTM ? 3 : 2;
  if (R.X == NoId || R.W == NoId || R.R == NoId)
    return makeNodeError(Node.Name, "expected operands X, W and R");
  if (Node.Operands.size() > MaxOperands || Node.Results.size() > MaxResults)
    return makeNodeError(Node.Name, "the op has more operands or results "
                                    "than " +
                                        Node.Type + " takes");
  if (Operand(4) != NoId)
    return makeNodeError(Node.Name,
                         "sequence_lens is not supported: unroll-rnn needs "
                         "every sequence of the batch to have the full "
                         "length");
  return Error::success();
}

/// Reads the int attribute \p A (hidden_size, layout, input_forget or
/// linear_before_reset) of recurrent op \p Node into \p R.
static Error readRNNIntAttribute(const Op &Node, const NamedAttribute &A,
                                 RNNOp &R) {
  StringRef N = A.Name;
  auto Fail = [&](const Twine &Msg) { return makeNodeError(Node.Name, Msg); };
  if (A.Value.getKind() != AttrKind::Int)
    return Fail("attribute '" + N + "' must be an int");
  int64_t V = A.Value.getInt();
  if (N == "layout") {
    if (V != 0 && V != 1)
      return Fail("layout " + Twine(V) + " is not 0 or 1");
    R.Layout = V;
  } else if (N == "input_forget") {
    if (R.Kind != CellKind::LSTM)
      return Fail(Node.Type + " has no attribute 'input_forget'");
    if (V != 0)
      return Fail("input_forget = " + Twine(V) +
                  " is not supported (coupled input and forget gates)");
  } else if (N == "linear_before_reset") {
    if (R.Kind != CellKind::GRU)
      return Fail(Node.Type + " has no attribute 'linear_before_reset'");
    R.LinearBeforeReset = V != 0;
  }
  return Error::success();
}

/// Reads the ONNX attributes of recurrent op \p Node into \p R.
static Error readRNNAttributes(const Op &Node, RNNOp &R) {
  auto Fail = [&](const Twine &Msg) { return makeNodeError(Node.Name, Msg); };
  for (const NamedAttribute &A : Node.Attrs) {
    StringRef N = A.Name;
    AttrKind K = A.Value.getKind();
    bool Known = N == "activation_alpha" || N == "activation_beta";
    if (N == "activations") {
      if (K != AttrKind::Strings)
        return Fail("attribute 'activations' must be a list of strings");
      Known = true;
    } else if (N == "clip") {
      if (K != AttrKind::Float)
        return Fail("attribute 'clip' must be a float");
      if (!(A.Value.getFloat() > 0))
        return Fail("attribute 'clip' must be positive");
      R.Clip = A.Value.getFloat();
      Known = true;
    } else if (N == "direction") {
      if (K != AttrKind::String)
        return Fail("attribute 'direction' must be a string");
      StringRef D = A.Value.getString();
      if (D == "reverse")
        R.Reverse = true;
      else if (D == "bidirectional")
        R.NumDirections = 2;
      else if (D != "forward")
        return Fail("direction '" + D +
                    "' is not forward, reverse or bidirectional");
      Known = true;
    } else if (N == "hidden_size" || N == "layout" || N == "input_forget" ||
               N == "linear_before_reset") {
      if (Error E = readRNNIntAttribute(Node, A, R))
        return E;
      Known = true;
    }
    if (!Known)
      return Fail("unknown " + Node.Type + " attribute '" + N + "'");
  }
  return Error::success();
}

/// Reads the activations of recurrent op \p Node into \p R: the defaults,
/// or Sigmoid/Tanh/Relu written out.
static Error readRNNActivations(const Op &Node, RNNOp &R) {
  unsigned NumActs = R.getNumActivations();
  const Attribute *Acts = Node.Attrs.get("activations");
  if (!Acts) {
    for (unsigned D = 0; D != R.NumDirections; ++D) {
      if (R.Kind == CellKind::RNN) {
        R.Activations.push_back("Tanh");
        continue;
      }
      R.Activations.push_back("Sigmoid");
      R.Activations.push_back("Tanh");
      if (R.Kind == CellKind::LSTM)
        R.Activations.push_back("Tanh");
    }
    return Error::success();
  }
  const std::vector<std::string> &Names = Acts->getStrings();
  if (Names.size() != NumActs * R.NumDirections)
    return makeNodeError(Node.Name,
                         "expected " + Twine(NumActs * R.NumDirections) +
                             " activations, not " + Twine(Names.size()));
  for (const std::string &Name : Names) {
    std::string Lower = StringRef(Name).lower();
    if (Lower == "sigmoid")
      R.Activations.push_back("Sigmoid");
    else if (Lower == "tanh")
      R.Activations.push_back("Tanh");
    else if (Lower == "relu")
      R.Activations.push_back("Relu");
    else
      return makeNodeError(Node.Name, "activation '" + Name +
                                          "' is not supported (expected "
                                          "Sigmoid, Tanh or Relu)");
  }
  return Error::success();
}

/// Checks the operand and result types of recurrent op \p Node, and reads
/// its sizes into \p R.
static Error checkRNNTypes(const Graph &G, const Op &Node, RNNOp &R) {
  auto Fail = [&](const Twine &Msg) { return makeNodeError(Node.Name, Msg); };
  const TensorType &XT = G.getTensor(R.X).Type;
  R.DType = XT.DType;
  if (!isFloatDType(R.DType))
    return makeTensorError(Node.Name, G.getTensor(R.X).Name,
                           "expected a floating-point input, not " +
                               typeString(XT));
  if (XT.getRank() != 3)
    return makeTensorError(Node.Name, G.getTensor(R.X).Name,
                           "expected an input of rank 3, not " +
                               typeString(XT));
  R.SeqLength = XT.Dims[R.Layout == 0 ? 0 : 1];
  R.Batch = XT.Dims[R.Layout == 0 ? 1 : 0];
  R.InputSize = XT.Dims[2];
  if (R.SeqLength < 1)
    return Fail("the sequence is empty");
  const TensorType &RT = G.getTensor(R.R).Type;
  int64_t D = R.NumDirections, NG = R.getNumGates();
  if (RT.getRank() == 3)
    R.Hidden = RT.Dims[2];
  if (const Attribute *HS = Node.Attrs.get("hidden_size"))
    if (HS->getInt() != R.Hidden)
      return Fail("hidden_size " + Twine(HS->getInt()) +
                  " does not match R of type " + typeString(RT));
  int64_t H = R.Hidden;
  SmallVector<int64_t, 3> StateDims =
      R.Layout == 0 ? SmallVector<int64_t, 3>{D, R.Batch, H}
                    : SmallVector<int64_t, 3>{R.Batch, D, H};
  auto Expect = [&](TensorId T, StringRef What,
                    ArrayRef<int64_t> Dims) -> Error {
    if (T == NoId)
      return Error::success();
    TensorType Want(R.DType, Dims);
    const TensorType &Have = G.getTensor(T).Type;
    if (Have == Want)
      return Error::success();
    return makeTensorError(Node.Name, G.getTensor(T).Name,
                           What + " has type " + typeString(Have) +
                               ", expected " + typeString(Want));
  };
  SmallVector<int64_t, 4> YDims =
      R.Layout == 0 ? SmallVector<int64_t, 4>{R.SeqLength, D, R.Batch, H}
                    : SmallVector<int64_t, 4>{R.Batch, R.SeqLength, D, H};
  if (Error E = Expect(R.R, "R", {D, NG * H, H}))
    return E;
  if (H < 1)
    return Fail("the hidden size is 0");
  if (Error E = Expect(R.W, "W", {D, NG * H, R.InputSize}))
    return E;
  if (Error E = Expect(R.B, "B", {D, 2 * NG * H}))
    return E;
  if (Error E = Expect(R.InitialH, "initial_h", StateDims))
    return E;
  if (Error E = Expect(R.InitialC, "initial_c", StateDims))
    return E;
  if (Error E = Expect(R.P, "P", {D, 3 * H}))
    return E;
  if (Error E = Expect(R.Y, "Y", YDims))
    return E;
  if (Error E = Expect(R.YH, "Y_h", StateDims))
    return E;
  return Expect(R.YC, "Y_c", StateDims);
}

/// Reads the ONNX attributes and checks the operand and result types of
/// recurrent op \p O.
static Expected<RNNOp> analyzeRNN(const Graph &G, OpId O, CellKind Kind) {
  const Op &Node = G.getOp(O);
  RNNOp R;
  R.Id = O;
  R.Kind = Kind;
  R.Gates = Kind == CellKind::LSTM  ? "iofc"
            : Kind == CellKind::GRU ? "zrh"
                                    : "i";
  if (Error E = readRNNOperands(Node, R))
    return std::move(E);
  if (Error E = readRNNAttributes(Node, R))
    return std::move(E);
  if (Error E = readRNNActivations(Node, R))
    return std::move(E);
  if (Error E = checkRNNTypes(G, Node, R))
    return std::move(E);

  // Clip bounds are Constant inputs from opset 11, but a Constant can only
  // hold a float from opset 12.
  if (R.Clip && getONNXOpsetVersion(G) == 11)
    return makeNodeError(Node.Name,
                         "clip is not supported at opset 11 (its bounds need "
                         "a Constant with value_float, from opset 12)");
  return std::move(R);
}

namespace {

/// The weights of one direction, sliced per gate once.
struct DirectionWeights {
  /// W and R of each gate, transposed: [input, hidden] and [hidden, hidden].
  SmallVector<TensorId, 4> W, R;
  /// Wb + Rb of each gate (NoId without B). For a GRU with
  /// linear_before_reset, the h gate's is Wb alone and RbH holds its Rb.
  SmallVector<TensorId, 4> Bias;
  TensorId RbH = NoId;
  /// Peepholes i, o, f (empty without P).
  SmallVector<TensorId, 3> P;
  /// Initial states [batch, hidden]; NoId for zeros.
  TensorId InitialH = NoId, InitialC = NoId;
};

/// Writes the expansion of one recurrent op.
class RNNExpander {
public:
  RNNExpander(OpBuilder &B, GraphRebuilder &RB, const RNNOp &R)
      : B(B), RB(RB), R(R), Name(RB.getOld().getOp(R.Id).Name.str()) {
    // The user's node the RNN op comes from, when it is not the op's own
    // (an RNN in an inlined If branch): the cells come from it too.
    Node = ann::getString(RB.getOld().getOp(R.Id), ann::Node).str();
  }

  void expand();

private:
  /// "/d<k>" for a bidirectional op, else "".
  std::string dirTag(unsigned D) const {
    return R.NumDirections == 2 ? "/d" + std::to_string(D) : "";
  }
  /// Sets the annotations of the ops created next: rnn, and timestep if
  /// \p Step is not negative.
  void annotate(int64_t Step);

  /// Splits \p T along \p Axis (its direction axis) into one tensor per
  /// direction with that axis removed.
  SmallVector<TensorId, 2> perDirection(TensorId T, StringRef What,
                                        int64_t Axis);
  /// Splits a per-direction tensor along axis 0 into one part per gate.
  SmallVector<TensorId, 4> perGate(TensorId T, const Twine &Base, unsigned N);
  void prepareWeights();
  void splitInput();

  /// The pre-activation x_t W^T + h R^T + bias of gate \p G.
  TensorId gateInput(const Twine &P, unsigned Dir, unsigned Gate, TensorId Xt,
                     TensorId HPrev, bool WithRecurrence = true,
                     bool WithBias = true);
  /// Applies activation \p K of direction \p Dir, after clipping.
  TensorId activate(const Twine &P, StringRef Gate, unsigned Dir, unsigned K,
                    TensorId In);
  /// One step; returns the new hidden state, and sets C to the new cell
  /// state (LSTM).
  TensorId lstmCell(const Twine &P, unsigned Dir, TensorId Xt, TensorId HPrev,
                    TensorId &C);
  TensorId gruCell(const Twine &P, unsigned Dir, TensorId Xt, TensorId HPrev);
  TensorId rnnCell(const Twine &P, unsigned Dir, TensorId Xt, TensorId HPrev);

  void assembleResults();

  OpBuilder &B;
  GraphRebuilder &RB;
  const RNNOp &R;
  std::string Name;
  std::string Node;
  SmallVector<DirectionWeights, 2> Dirs;
  /// x_t per timestep.
  SmallVector<TensorId, 16> Xs;
  /// Hidden states per direction and timestep (sequence order), and the
  /// last hidden and cell state of each direction.
  SmallVector<SmallVector<TensorId, 16>, 2> Hs;
  SmallVector<TensorId, 2> LastH, LastC;
};

} // namespace

void RNNExpander::annotate(int64_t Step) {
  B.Annotations = AttributeList();
  ann::set(B.Annotations, ann::RNN, StringRef(Name));
  if (!Node.empty())
    ann::set(B.Annotations, ann::Node, StringRef(Node));
  if (Step >= 0)
    ann::set(B.Annotations, ann::Timestep, Step);
}

SmallVector<TensorId, 2> RNNExpander::perDirection(TensorId T, StringRef What,
                                                   int64_t Axis) {
  if (R.NumDirections == 1)
    return {B.squeeze(Name + "/" + What, T, {Axis})};
  SmallVector<TensorId, 2> Out;
  SmallVector<TensorId, 4> Parts =
      B.split(Name + "/" + What + "/split", T, Axis, R.NumDirections);
  for (unsigned D = 0; D != R.NumDirections; ++D)
    Out.push_back(B.squeeze(Name + dirTag(D) + "/" + What, Parts[D], {Axis}));
  return Out;
}

SmallVector<TensorId, 4> RNNExpander::perGate(TensorId T, const Twine &Base,
                                              unsigned N) {
  if (N == 1)
    return {T};
  return B.split(Base + "/gates", T, 0, N);
}

void RNNExpander::prepareWeights() {
  annotate(-1);
  Dirs.resize(R.NumDirections);
  unsigned NG = R.getNumGates();
  SmallVector<TensorId, 2> Ws = perDirection(RB.map(R.W), "W", 0);
  SmallVector<TensorId, 2> Rs = perDirection(RB.map(R.R), "R", 0);
  SmallVector<TensorId, 2> Bs, Ps, H0s, C0s;
  if (R.B != NoId)
    Bs = perDirection(RB.map(R.B), "B", 0);
  if (R.P != NoId)
    Ps = perDirection(RB.map(R.P), "P", 0);
  int64_t StateDirAxis = R.Layout == 0 ? 0 : 1;
  if (R.InitialH != NoId)
    H0s = perDirection(RB.map(R.InitialH), "initial_h", StateDirAxis);
  if (R.InitialC != NoId)
    C0s = perDirection(RB.map(R.InitialC), "initial_c", StateDirAxis);

  for (unsigned D = 0; D != R.NumDirections; ++D) {
    DirectionWeights &DW = Dirs[D];
    std::string Base = Name + dirTag(D);
    SmallVector<TensorId, 4> WGates = perGate(Ws[D], Base + "/W", NG);
    SmallVector<TensorId, 4> RGates = perGate(Rs[D], Base + "/R", NG);
    for (unsigned G = 0; G != NG; ++G) {
      DW.W.push_back(B.transpose(Base + "/W_" + R.Gates.substr(G, 1) + "T",
                                 WGates[G], {1, 0}));
      DW.R.push_back(B.transpose(Base + "/R_" + R.Gates.substr(G, 1) + "T",
                                 RGates[G], {1, 0}));
    }
    DW.Bias.assign(NG, NoId);
    if (!Bs.empty()) {
      // B holds Wb of every gate, then Rb of every gate.
      SmallVector<TensorId, 4> Parts =
          B.split(Base + "/B/gates", Bs[D], 0, 2 * NG);
      for (unsigned G = 0; G != NG; ++G) {
        StringRef Gate = R.Gates.substr(G, 1);
        if (R.Kind == CellKind::GRU && R.LinearBeforeReset && Gate == "h") {
          DW.Bias[G] = Parts[G];
          DW.RbH = Parts[NG + G];
          continue;
        }
        DW.Bias[G] =
            B.binary("Add", Base + "/b_" + Gate, Parts[G], Parts[NG + G]);
      }
    }
    if (!Ps.empty())
      DW.P = perGate(Ps[D], Base + "/P", 3);
    if (!H0s.empty())
      DW.InitialH = H0s[D];
    if (!C0s.empty())
      DW.InitialC = C0s[D];
  }
}

void RNNExpander::splitInput() {
  int64_t TimeAxis = R.Layout == 0 ? 0 : 1;
  TensorId X = RB.map(R.X);
  SmallVector<TensorId, 16> Parts;
  if (R.SeqLength == 1) {
    Parts.push_back(X);
  } else {
    annotate(-1);
    for (TensorId T : B.split(Name + "/X/split", X, TimeAxis, R.SeqLength))
      Parts.push_back(T);
  }
  for (int64_t T = 0; T != R.SeqLength; ++T) {
    annotate(T);
    Xs.push_back(
        B.squeeze(Name + "/t" + Twine(T) + "/x", Parts[T], {TimeAxis}));
  }
}

TensorId RNNExpander::gateInput(const Twine &P, unsigned Dir, unsigned Gate,
                                TensorId Xt, TensorId HPrev,
                                bool WithRecurrence, bool WithBias) {
  const DirectionWeights &DW = Dirs[Dir];
  std::string G = (P + "/" + R.Gates.substr(Gate, 1)).str();
  TensorId S = B.matMul(G + "_x", Xt, DW.W[Gate]);
  if (WithRecurrence && HPrev != NoId) {
    TensorId HR = B.matMul(G + "_h", HPrev, DW.R[Gate]);
    S = B.binary("Add", G + "_xh", S, HR);
  }
  if (WithBias && DW.Bias[Gate] != NoId)
    S = B.binary("Add", G + "_b", S, DW.Bias[Gate]);
  return S;
}

TensorId RNNExpander::activate(const Twine &P, StringRef Gate, unsigned Dir,
                               unsigned K, TensorId In) {
  std::string N = (P + "/" + Gate).str();
  if (R.Clip)
    In = B.clip(N + "_clip", In, -*R.Clip, *R.Clip);
  return B.unary(R.getActivation(Dir, K), N, In);
}

TensorId RNNExpander::lstmCell(const Twine &P, unsigned Dir, TensorId Xt,
                               TensorId HPrev, TensorId &C) {
  const DirectionWeights &DW = Dirs[Dir];
  std::string Pre = P.str();
  // Peepholes are ordered i, o, f; W's gates i, o, f, c.
  enum { I = 0, O = 1, F = 2, Cand = 3 };
  auto Peephole = [&](unsigned Gate, TensorId S, TensorId State) {
    if (DW.P.empty() || State == NoId)
      return S;
    std::string G = Pre + "/" + R.Gates.substr(Gate, 1).str();
    TensorId PC = B.binary("Mul", G + "_peep", DW.P[Gate], State);
    return B.binary("Add", G + "_peep_add", S, PC);
  };
  TensorId CPrev = C;
  TensorId IGate = activate(
      Pre, "i", Dir, 0, Peephole(I, gateInput(Pre, Dir, I, Xt, HPrev), CPrev));
  // The forget gate only scales the previous cell state.
  TensorId FGate = NoId;
  if (CPrev != NoId)
    FGate = activate(Pre, "f", Dir, 0,
                     Peephole(F, gateInput(Pre, Dir, F, Xt, HPrev), CPrev));
  TensorId CGate =
      activate(Pre, "c", Dir, 1, gateInput(Pre, Dir, Cand, Xt, HPrev));
  // C_t = f (.) C_{t-1} + i (.) c, without the first term for a zero state.
  if (CPrev == NoId) {
    C = B.binary("Mul", Pre + "/cell", IGate, CGate);
  } else {
    TensorId FC = B.binary("Mul", Pre + "/f_cell", FGate, CPrev);
    TensorId IC = B.binary("Mul", Pre + "/i_c", IGate, CGate);
    C = B.binary("Add", Pre + "/cell", FC, IC);
  }
  TensorId OGate = activate(Pre, "o", Dir, 0,
                            Peephole(O, gateInput(Pre, Dir, O, Xt, HPrev), C));
  // The output activation h is not clipped (as in ONNX Runtime, which
  // clips the gates' inputs only).
  TensorId CAct = B.unary(R.getActivation(Dir, 2), Pre + "/cell_act", C);
  return B.binary("Mul", Pre + "/hidden", OGate, CAct);
}

TensorId RNNExpander::gruCell(const Twine &P, unsigned Dir, TensorId Xt,
                              TensorId HPrev) {
  const DirectionWeights &DW = Dirs[Dir];
  std::string Pre = P.str();
  enum { Z = 0, Rst = 1, Hd = 2 };
  TensorId ZGate =
      activate(Pre, "z", Dir, 0, gateInput(Pre, Dir, Z, Xt, HPrev));
  TensorId RGate =
      activate(Pre, "r", Dir, 0, gateInput(Pre, Dir, Rst, Xt, HPrev));

  // The candidate's recurrence: (r (.) H) Rh^T + Rbh by default,
  // r (.) (H Rh^T + Rbh) with linear_before_reset. Its bias (Wbh + Rbh, or
  // Wbh alone with linear_before_reset) is added by gateInput.
  TensorId S = gateInput(Pre, Dir, Hd, Xt, HPrev, /*WithRecurrence=*/false,
                         /*WithBias=*/false);
  if (!R.LinearBeforeReset) {
    if (HPrev != NoId) {
      TensorId RH = B.binary("Mul", Pre + "/r_hprev", RGate, HPrev);
      TensorId HR = B.matMul(Pre + "/h_h", RH, DW.R[Hd]);
      S = B.binary("Add", Pre + "/h_xh", S, HR);
    }
  } else {
    TensorId HR = NoId;
    if (HPrev != NoId) {
      HR = B.matMul(Pre + "/h_h", HPrev, DW.R[Hd]);
      if (DW.RbH != NoId)
        HR = B.binary("Add", Pre + "/h_hb", HR, DW.RbH);
    } else {
      HR = DW.RbH;
    }
    if (HR != NoId) {
      TensorId RHR = B.binary("Mul", Pre + "/h_r", RGate, HR);
      S = B.binary("Add", Pre + "/h_xh", S, RHR);
    }
  }
  if (DW.Bias[Hd] != NoId)
    S = B.binary("Add", Pre + "/h_b", S, DW.Bias[Hd]);
  TensorId Cand = activate(Pre, "h", Dir, 1, S);

  // H_t = (1 - z) (.) h + z (.) H_{t-1}, written h + z (.) (H_{t-1} - h)
  // (h - z (.) h for a zero state) so that no constant 1 is needed.
  if (HPrev == NoId) {
    TensorId ZH = B.binary("Mul", Pre + "/z_h", ZGate, Cand);
    return B.binary("Sub", Pre + "/hidden", Cand, ZH);
  }
  TensorId Diff = B.binary("Sub", Pre + "/hprev_minus_h", HPrev, Cand);
  TensorId ZD = B.binary("Mul", Pre + "/z_diff", ZGate, Diff);
  return B.binary("Add", Pre + "/hidden", Cand, ZD);
}

TensorId RNNExpander::rnnCell(const Twine &P, unsigned Dir, TensorId Xt,
                              TensorId HPrev) {
  std::string Pre = P.str();
  return activate(Pre, "hidden", Dir, 0, gateInput(Pre, Dir, 0, Xt, HPrev));
}

/// Whether \p T is read by an op or is a graph output: results that are
/// neither are not computed.
static bool isLive(const Graph &G, TensorId T) {
  return T != NoId &&
         (!G.getTensor(T).Uses.empty() || is_contained(G.getOutputs(), T));
}

void RNNExpander::assembleResults() {
  const Graph &Old = RB.getOld();
  unsigned ND = R.NumDirections;
  int64_t TimeAxis = R.Layout == 0 ? 0 : 1;
  int64_t StateDirAxis = R.Layout == 0 ? 0 : 1;
  // Y is [T, D, batch, hidden] (layout 0) or [batch, T, D, hidden].
  if (isLive(Old, R.Y)) {
    SmallVector<int64_t, 2> Axes = R.Layout == 0
                                       ? SmallVector<int64_t, 2>{0, 1}
                                       : SmallVector<int64_t, 2>{1, 2};
    std::string YName = Old.getTensor(R.Y).Name.str();
    SmallVector<TensorId, 2> PerDir;
    for (unsigned D = 0; D != ND; ++D) {
      SmallVector<TensorId, 16> Steps;
      for (int64_t T = 0; T != R.SeqLength; ++T) {
        annotate(T);
        Steps.push_back(B.unsqueeze(Name + "/t" + Twine(T) + dirTag(D) + "/y",
                                    Hs[D][T], Axes));
      }
      annotate(-1);
      PerDir.push_back(B.concat(Name + dirTag(D) + "/Y", Steps, TimeAxis,
                                ND == 1 ? StringRef(YName) : StringRef()));
    }
    if (ND == 2)
      PerDir = {B.concat(Name + "/Y", PerDir, TimeAxis + 1, YName)};
    RB.setMapping(R.Y, PerDir.front());
  }
  // Y_h and Y_c are [D, batch, hidden] (layout 0) or [batch, D, hidden].
  auto Assemble = [&](TensorId Result, ArrayRef<TensorId> Last,
                      StringRef What) {
    if (!isLive(Old, Result))
      return;
    std::string ResultName = Old.getTensor(Result).Name.str();
    SmallVector<TensorId, 2> PerDir;
    annotate(-1);
    for (unsigned D = 0; D != ND; ++D) {
      PerDir.push_back(
          B.unsqueeze(Name + dirTag(D) + "/" + What, Last[D], {StateDirAxis},
                      ND == 1 ? StringRef(ResultName) : StringRef()));
    }
    if (ND == 2)
      PerDir = {B.concat(Name + "/" + What, PerDir, StateDirAxis, ResultName)};
    RB.setMapping(Result, PerDir.front());
  };
  Assemble(R.YH, LastH, "Y_h");
  Assemble(R.YC, LastC, "Y_c");
}

void RNNExpander::expand() {
  B.ConstantPrefix = Name;
  B.clearConstants();
  B.ConstantAnnotations = AttributeList();
  ann::set(B.ConstantAnnotations, ann::RNN, StringRef(Name));
  if (!Node.empty())
    ann::set(B.ConstantAnnotations, ann::Node, StringRef(Node));

  prepareWeights();
  splitInput();

  Hs.resize(R.NumDirections);
  for (unsigned D = 0; D != R.NumDirections; ++D) {
    bool Reverse = R.Reverse || D == 1;
    TensorId H = Dirs[D].InitialH, C = Dirs[D].InitialC;
    Hs[D].assign(R.SeqLength, NoId);
    for (int64_t S = 0; S != R.SeqLength; ++S) {
      int64_t T = Reverse ? R.SeqLength - 1 - S : S;
      annotate(T);
      std::string P = Name + "/t" + std::to_string(T) + dirTag(D);
      switch (R.Kind) {
      case CellKind::LSTM:
        H = lstmCell(P, D, Xs[T], H, C);
        break;
      case CellKind::GRU:
        H = gruCell(P, D, Xs[T], H);
        break;
      case CellKind::RNN:
        H = rnnCell(P, D, Xs[T], H);
        break;
      }
      Hs[D][T] = H;
    }
    LastH.push_back(H);
    LastC.push_back(C);
  }
  assembleResults();
}

Error unrollRNNs(Graph &G) {
  ErrorList Errors;
  std::vector<RNNOp> RNNs;
  for (OpId O = 0, E = G.getNumOps(); O != E; ++O) {
    Optional<CellKind> Kind = getCellKind(G.getOp(O));
    if (!Kind)
      continue;
    Expected<RNNOp> R = analyzeRNN(G, O, *Kind);
    if (!R) {
      Errors.add(R.takeError());
      continue;
    }
    RNNs.push_back(std::move(*R));
  }
  if (Error E = Errors.take())
    return E;
  if (RNNs.empty())
    return Error::success();

  GraphRebuilder RB(G);
  OpBuilder B(RB.getNew(), &G);
  auto Next = RNNs.begin();
  for (OpId O = 0, E = G.getNumOps(); O != E; ++O) {
    if (Next != RNNs.end() && Next->Id == O) {
      RNNExpander(B, RB, *Next).expand();
      ++Next;
      continue;
    }
    RB.copyOp(O);
  }
  G = RB.finish();
  return Error::success();
}

} // namespace dp
