//===- OpsetAdapter.cpp - Opsets 18-21 read as opset 17 -------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "OpsetAdapter.h"
#include "ShapeFolder.h"
#include "dp/Import/ONNXWalk.h"
#include "dp/Support/Diagnostics.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/Twine.h"

#include "onnx/onnx_pb.h"

using namespace llvm;

namespace dp {

namespace {

class Adapter;

enum class OpsetChangeKind : uint8_t {
  /// Read as it is.
  Same,
  /// Adapt undoes the changes from opset Since on.
  Adapted,
  /// Added in opset Since; expandNewOps expands it into opset-17 ops.
  Expanded,
  /// Added in opset Since, with no opset-17 form: an error.
  Added,
};

/// How an op of opsets 18 to 21 is read as opset 17: the OPSET field of
/// the op registry (include/dp/IR/Ops.def).
struct OpsetChange {
  OpsetChangeKind Kind = OpsetChangeKind::Same;
  /// The Adapter member that rewrites a node of an Adapted op.
  void (Adapter::*Adapt)(onnx::NodeProto &) = nullptr;
  int Since = 0;
};

OpsetChange makeOpsetChange(OpsetChangeKind Kind,
                            void (Adapter::*Adapt)(onnx::NodeProto &),
                            int Since) {
  OpsetChange C;
  C.Kind = Kind;
  C.Adapt = Adapt;
  C.Since = Since;
  return C;
}

/// The change of default-domain op \p Op in opset \p Opset: Same for ops
/// the registry does not list and for changes of later opsets.
OpsetChange getOpsetChange(StringRef Op, int Opset);

bool isNewElementType(int64_t T) { return T >= 17 && T <= 22; }

class Adapter {
public:
  Adapter(int Opset) : Opset(Opset) {}

  void collectConstants(const onnx::GraphProto &G);
  void adaptGraph(onnx::GraphProto &G);
  Error takeErrors() { return Errs.take(); }

private:
  void adaptNode(onnx::NodeProto &N);
  // The adapters that the registry's ADAPTED(ADAPTER, SINCE) names.
  friend OpsetChange getOpsetChange(StringRef Op, int Opset);
  void adaptCast(onnx::NodeProto &N);
  void adaptConstant(onnx::NodeProto &N);
  void adaptReduceAxes(onnx::NodeProto &N);
  void adaptSplit(onnx::NodeProto &N) { dropAttr(N, "num_outputs"); }
  void adaptResize(onnx::NodeProto &N);
  void adaptPad(onnx::NodeProto &N);
  void adaptAveragePool(onnx::NodeProto &N);
  void adaptGridSample(onnx::NodeProto &N);
  void adaptLpPool(onnx::NodeProto &N) { dropIntIfDefault(N, "ceil_mode", 0); }
  void adaptQuantize(onnx::NodeProto &N);
  void fail(const onnx::NodeProto &N, const Twine &Why) {
    Errs.add(makeNodeError(N.name(), N.op_type() + " of opset " +
                                         Twine(Opset) + ": " + Why +
                                         "; dp reads it as opset " +
                                         Twine(MaxLibONNXOpset) +
                                         ", which cannot say this"));
  }

  static onnx::AttributeProto *attr(onnx::NodeProto &N, StringRef Name) {
    for (onnx::AttributeProto &A : *N.mutable_attribute())
      if (A.name() == Name)
        return &A;
    return nullptr;
  }
  static void dropAttr(onnx::NodeProto &N, StringRef Name) {
    auto &As = *N.mutable_attribute();
    for (int I = 0; I != As.size(); ++I)
      if (As.Get(I).name() == Name) {
        As.DeleteSubrange(I, 1);
        return;
      }
  }
  /// Drops attribute \p Name when it is absent or has its default integer
  /// \p Default; else fails.
  void dropIntIfDefault(onnx::NodeProto &N, StringRef Name, int64_t Default) {
    onnx::AttributeProto *A = attr(N, Name);
    if (!A)
      return;
    if (A->i() != Default) {
      fail(N, "'" + Name + "' is " + Twine(A->i()));
      return;
    }
    dropAttr(N, Name);
  }
  void dropInput(onnx::NodeProto &N, int I) {
    auto &Ins = *N.mutable_input();
    if (I < Ins.size())
      Ins.DeleteSubrange(I, Ins.size() - I);
  }

  int Opset;
  /// Values of integer initializers and Constant nodes.
  StringMap<std::vector<int64_t>> Constants;
  ErrorList Errs;
};

OpsetChange getOpsetChange(StringRef Op, int Opset) {
  static const StringMap<OpsetChange> Changes = [] {
    StringMap<OpsetChange> M;
#define OPSET_SAME OpsetChange()
#define ADAPTED(ADAPTER, SINCE)                                                \
  makeOpsetChange(OpsetChangeKind::Adapted, &Adapter::adapt##ADAPTER, SINCE)
#define EXPANDED(SINCE)                                                        \
  makeOpsetChange(OpsetChangeKind::Expanded, nullptr, SINCE)
#define ADDED(SINCE) makeOpsetChange(OpsetChangeKind::Added, nullptr, SINCE)
#define OP(NAME, COST, BACKWARD, ONEDNN, FEATURE, OPSET, RUNTIME)              \
  M.try_emplace(NAME, OPSET);
#include "dp/IR/Ops.def"
#undef OPSET_SAME
#undef ADAPTED
#undef EXPANDED
#undef ADDED
    return M;
  }();
  auto It = Changes.find(Op);
  if (It == Changes.end() || It->second.Since > Opset)
    return OpsetChange();
  return It->second;
}

void Adapter::collectConstants(const onnx::GraphProto &G) {
  for (const onnx::TensorProto &T : G.initializer()) {
    Optional<FoldValue> V = readTensorValue(T);
    if (V && !V->isReal())
      Constants[T.name()] = V->Ints;
  }
  std::vector<FoldValue> Values;
  for (const onnx::NodeProto &N : G.node()) {
    // A Constant node's value, read as the shape folder reads it.
    if (N.op_type() == "Constant" && N.output_size() == 1) {
      Expected<bool> Folded = evaluateNode(N, Opset, {}, {}, Values);
      if (!Folded)
        consumeError(Folded.takeError());
      else if (*Folded && !Values[0].isReal())
        Constants[N.output(0)] = Values[0].Ints;
    }
    forEachBody(N, [&](const onnx::GraphProto &Body) {
      collectConstants(Body);
    });
  }
}

void Adapter::adaptGraph(onnx::GraphProto &G) {
  for (onnx::NodeProto &N : *G.mutable_node()) {
    if (N.domain().empty() || N.domain() == "ai.onnx")
      adaptNode(N);
    forEachBody(N, [&](onnx::GraphProto &Body) { adaptGraph(Body); });
  }
}

void Adapter::adaptNode(onnx::NodeProto &N) {
  const std::string &Op = N.op_type();
  OpsetChange Change = getOpsetChange(Op, Opset);
  switch (Change.Kind) {
  case OpsetChangeKind::Same:
    return;
  case OpsetChangeKind::Expanded:
    // expandNewOps left it: it is malformed.
    fail(N, "it does not have the op's inputs, output and attributes");
    return;
  case OpsetChangeKind::Added:
    Errs.add(
        makeNodeError(N.name(), Op + " (added in opset " + Twine(Change.Since) +
                                    ") has no opset-" + Twine(MaxLibONNXOpset) +
                                    " form in dp yet"));
    return;
  case OpsetChangeKind::Adapted:
    (this->*Change.Adapt)(N);
    return;
  }
}

void Adapter::adaptCast(onnx::NodeProto &N) {
  if (onnx::AttributeProto *To = attr(N, "to"); To && isNewElementType(To->i()))
    fail(N, "it casts to element type " + Twine(To->i()) +
                " (a float8 or 4-bit type)");
  dropAttr(N, "saturate");
}

void Adapter::adaptConstant(onnx::NodeProto &N) {
  if (onnx::AttributeProto *V = attr(N, "value");
      V && isNewElementType(V->t().data_type()))
    fail(N, "its value has element type " + Twine(V->t().data_type()) +
                " (a float8 or 4-bit type)");
}

void Adapter::adaptReduceAxes(onnx::NodeProto &N) {
  bool HasAxes = N.input_size() > 1 && !N.input(1).empty();
  std::vector<int64_t> Axes;
  if (HasAxes) {
    auto C = Constants.find(N.input(1));
    if (C == Constants.end()) {
      fail(N, "its axes are computed, not a constant");
      return;
    }
    Axes = C->second;
  }
  bool Noop = false;
  if (onnx::AttributeProto *A = attr(N, "noop_with_empty_axes"))
    Noop = A->i();
  dropAttr(N, "noop_with_empty_axes");
  dropInput(N, 1);
  if (Axes.empty() && Noop) {
    // Reduces nothing: the input itself.
    N.set_op_type("Identity");
    N.clear_attribute();
    return;
  }
  if (!Axes.empty()) {
    onnx::AttributeProto *A = N.add_attribute();
    A->set_name("axes");
    A->set_type(onnx::AttributeProto::INTS);
    for (int64_t X : Axes)
      A->add_ints(X);
  }
}

void Adapter::adaptResize(onnx::NodeProto &N) {
  dropAttr(N, "antialias");
  if (onnx::AttributeProto *A = attr(N, "keep_aspect_ratio_policy")) {
    if (A->s() != "stretch") {
      fail(N, "keep_aspect_ratio_policy is '" + A->s() + "'");
      return;
    }
    dropAttr(N, "keep_aspect_ratio_policy");
  }
  if (attr(N, "axes")) {
    fail(N, "it resizes only some axes ('axes')");
    return;
  }
  if (onnx::AttributeProto *A = attr(N, "coordinate_transformation_mode");
      A && A->s() == "half_pixel_symmetric")
    A->set_s("half_pixel");
}

void Adapter::adaptPad(onnx::NodeProto &N) {
  if (N.input_size() <= 3 || N.input(3).empty())
    return;
  auto C = Constants.find(N.input(3));
  if (C == Constants.end() || !C->second.empty()) {
    fail(N, "it pads only some axes ('axes')");
    return;
  }
  dropInput(N, 3);
}

void Adapter::adaptAveragePool(onnx::NodeProto &N) {
  onnx::AttributeProto *A = attr(N, "dilations");
  if (!A)
    return;
  if (any_of(A->ints(), [](int64_t D) { return D != 1; })) {
    fail(N, "it has dilations");
    return;
  }
  dropAttr(N, "dilations");
}

void Adapter::adaptGridSample(onnx::NodeProto &N) {
  // Opset 20 renamed the 2-D modes after their N-D generalization.
  onnx::AttributeProto *A = attr(N, "mode");
  if (!A)
    return;
  if (A->s() == "linear")
    A->set_s("bilinear");
  else if (A->s() == "cubic")
    A->set_s("bicubic");
}

void Adapter::adaptQuantize(onnx::NodeProto &N) {
  dropIntIfDefault(N, "output_dtype", 0);
  dropIntIfDefault(N, "block_size", 0);
  dropIntIfDefault(N, "saturate", 1);
}

//===----------------------------------------------------------------------===//
// Ops added after opset 17, expanded
//===----------------------------------------------------------------------===//

/// Writes the opset-17 nodes that compute one node of a newer op. Helper
/// tensors are named after the node's first output, helper nodes after the
/// node; the last node keeps the node's name and output, so the result
/// maps back to the user's node.
class Expansion {
public:
  Expansion(const onnx::NodeProto &N, StringSet<> &Names,
            std::vector<onnx::NodeProto> &Out)
      : N(N), Names(Names), Out(Out) {}

  /// A scalar float \p V of the element type of \p Like.
  std::string constant(float V, const std::string &Like) {
    onnx::NodeProto &C = add("Constant", {});
    onnx::AttributeProto *A = C.add_attribute();
    A->set_name("value");
    A->set_type(onnx::AttributeProto::TENSOR);
    A->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
    A->mutable_t()->add_float_data(V);
    return add("CastLike", {C.output(0), Like}).output(0);
  }
  /// An int64 vector constant.
  std::string ints(std::initializer_list<int64_t> Vs) {
    onnx::NodeProto &C = add("Constant", {});
    onnx::AttributeProto *A = C.add_attribute();
    A->set_name("value");
    A->set_type(onnx::AttributeProto::TENSOR);
    A->mutable_t()->set_data_type(onnx::TensorProto::INT64);
    A->mutable_t()->add_dims(Vs.size());
    for (int64_t V : Vs)
      A->mutable_t()->add_int64_data(V);
    return C.output(0);
  }
  /// A helper node of \p Op; returns its output.
  std::string op(StringRef Op, std::initializer_list<std::string> Ins) {
    return add(Op, Ins).output(0);
  }
  /// The same, with integer list attribute \p Attr.
  std::string op(StringRef Op, std::initializer_list<std::string> Ins,
                 StringRef Attr, std::initializer_list<int64_t> Vs) {
    onnx::NodeProto &M = add(Op, Ins);
    onnx::AttributeProto *A = M.add_attribute();
    A->set_name(Attr.str());
    A->set_type(onnx::AttributeProto::INTS);
    for (int64_t V : Vs)
      A->add_ints(V);
    return M.output(0);
  }
  /// The last node: it has the node's name and output.
  void finish(StringRef Op, std::initializer_list<std::string> Ins) {
    onnx::NodeProto &M = Out.emplace_back();
    M.set_op_type(Op.str());
    M.set_name(N.name());
    for (const std::string &In : Ins)
      M.add_input(In);
    M.add_output(N.output(0));
  }

private:
  onnx::NodeProto &add(StringRef Op, std::initializer_list<std::string> Ins) {
    onnx::NodeProto &M = Out.emplace_back();
    M.set_op_type(Op.str());
    ++Count;
    if (!N.name().empty())
      M.set_name((N.name() + "/" + Op + "_" + Twine(Count)).str());
    for (const std::string &In : Ins)
      M.add_input(In);
    std::string Name;
    for (int K = Count; Name.empty() || Names.contains(Name); K += 1000)
      Name = (N.output(0) + "/" + N.op_type() + "." + Twine(K)).str();
    Names.insert(Name);
    M.add_output(Name);
    return M;
  }

  const onnx::NodeProto &N;
  StringSet<> &Names;
  std::vector<onnx::NodeProto> &Out;
  int Count = 0;
};

float getFloatAttr(const onnx::NodeProto &N, StringRef Name, float Default) {
  for (const onnx::AttributeProto &A : N.attribute())
    if (A.name() == Name)
      return A.f();
  return Default;
}

/// Appends to \p Out the opset-17 form of \p N, an op of opset \p Opset
/// that the registry marks EXPANDED. Returns false, with nothing appended, for
/// a node that does not have the op's inputs and output.
bool expandNode(const onnx::NodeProto &N, int Opset, StringSet<> &Names,
                std::vector<onnx::NodeProto> &Out) {
  const std::string &Op = N.op_type();
  int NumInputs = Op == "GroupNormalization" ? 3 : 1;
  if (N.input_size() != NumInputs || N.output_size() != 1 ||
      any_of(N.input(), [](const std::string &In) { return In.empty(); }))
    return false;
  Expansion E(N, Names, Out);
  const std::string &X = N.input(0);
  if (Op == "Mish") {
    // x * tanh(softplus(x))
    E.finish("Mul", {X, E.op("Tanh", {E.op("Softplus", {X})})});
    return true;
  }
  if (Op == "Gelu") {
    std::string Approximate = "none";
    for (const onnx::AttributeProto &A : N.attribute())
      if (A.name() == "approximate")
        Approximate = A.s();
    std::string Inner;
    if (Approximate == "tanh") {
      // tanh(sqrt(2 / pi) * (x + 0.044715 x^3))
      std::string Cube = E.op("Mul", {X, E.op("Mul", {X, X})});
      std::string Sum =
          E.op("Add", {X, E.op("Mul", {Cube, E.constant(0.044715f, X)})});
      Inner = E.op("Tanh", {E.op("Mul", {Sum, E.constant(0.7978845608f, X)})});
    } else if (Approximate == "none") {
      // erf(x / sqrt(2))
      Inner = E.op("Erf", {E.op("Div", {X, E.constant(1.4142135624f, X)})});
    } else {
      return false;
    }
    // 0.5 x (1 + inner)
    std::string Half = E.op("Mul", {X, E.constant(0.5f, X)});
    E.finish("Mul", {Half, E.op("Add", {Inner, E.constant(1.0f, X)})});
    return true;
  }
  // GroupNormalization: x [N, C, ...] seen as [N, G, C/G * ...], normalized
  // over its last axis. Opset 18 scales and shifts each group (scale and
  // bias [G]), opset 21 each channel ([C]).
  int64_t Groups = 0;
  for (const onnx::AttributeProto &A : N.attribute())
    if (A.name() == "num_groups")
      Groups = A.i();
  if (Groups <= 0)
    return false;
  float Epsilon = getFloatAttr(N, "epsilon", 1e-5f);
  std::string Grouped = E.op("Reshape", {X, E.ints({0, Groups, -1})});
  std::string Mean = E.op("ReduceMean", {Grouped}, "axes", {2});
  std::string Centered = E.op("Sub", {Grouped, Mean});
  std::string Var =
      E.op("ReduceMean", {E.op("Mul", {Centered, Centered})}, "axes", {2});
  std::string Std = E.op("Sqrt", {E.op("Add", {Var, E.constant(Epsilon, X)})});
  std::string Normal = E.op("Div", {Centered, Std});
  // Scaled and shifted per group before opset 21 ([N, G, C/G * ...]), per
  // channel from it ([N, C, ...] flattened); then given X's shape.
  if (Opset >= 21) {
    std::string Flat = E.op("Reshape", {X, E.ints({0, 0, -1})});
    Normal = E.op("Reshape", {Normal, E.op("Shape", {Flat})});
  }
  std::string Scaled =
      E.op("Mul", {Normal, E.op("Unsqueeze", {N.input(1), E.ints({1})})});
  std::string Shifted =
      E.op("Add", {Scaled, E.op("Unsqueeze", {N.input(2), E.ints({1})})});
  E.finish("Reshape", {Shifted, E.op("Shape", {X})});
  return true;
}

void collectNames(const onnx::GraphProto &G, StringSet<> &Names) {
  for (const onnx::ValueInfoProto &VI : G.input())
    Names.insert(VI.name());
  for (const onnx::TensorProto &T : G.initializer())
    Names.insert(T.name());
  for (const onnx::NodeProto &N : G.node()) {
    for (const std::string &Out : N.output())
      Names.insert(Out);
    forEachBody(N, [&](const onnx::GraphProto &B) { collectNames(B, Names); });
  }
}

bool isExpanded(const onnx::NodeProto &N, int Opset) {
  if (!(N.domain().empty() || N.domain() == "ai.onnx"))
    return false;
  return getOpsetChange(N.op_type(), Opset).Kind == OpsetChangeKind::Expanded;
}

bool hasExpandedOps(const onnx::GraphProto &G, int Opset) {
  return any_of(G.node(), [&](const onnx::NodeProto &N) {
    bool InBody = false;
    forEachBody(N, [&](const onnx::GraphProto &B) {
      InBody |= hasExpandedOps(B, Opset);
    });
    return InBody || isExpanded(N, Opset);
  });
}

/// Expands the nodes of \p G and of its bodies; \p Main, when given, is
/// kept in step with \p G's nodes (see expandNewOps).
void expandGraph(onnx::GraphProto &G, int Opset, StringSet<> &Names,
                 Expansions *Main) {
  std::vector<onnx::NodeProto> Expanded;
  bool Any = false;
  for (onnx::NodeProto &N : *G.mutable_node()) {
    forEachBody(
        N, [&](onnx::GraphProto &B) { expandGraph(B, Opset, Names, nullptr); });
    Any |= isExpanded(N, Opset);
  }
  if (!Any)
    return;
  google::protobuf::RepeatedPtrField<onnx::NodeProto> Nodes;
  Nodes.Swap(G.mutable_node());
  std::vector<std::string> Origins;
  std::vector<bool> Helpers;
  for (int I = 0, E = Nodes.size(); I != E; ++I) {
    onnx::NodeProto &N = Nodes[I];
    std::string Origin = Main ? Main->Origins[I] : std::string();
    Expanded.clear();
    if (!isExpanded(N, Opset) || !expandNode(N, Opset, Names, Expanded)) {
      *G.add_node() = std::move(N);
      Origins.push_back(Origin);
      Helpers.push_back(Main && Main->Helpers[I]);
      continue;
    }
    // Helpers come from the node; the last node is the node.
    std::string Helper = Origin.empty() ? N.name() : Origin;
    for (size_t K = 0; K != Expanded.size(); ++K) {
      bool Last = K + 1 == Expanded.size();
      *G.add_node() = std::move(Expanded[K]);
      Origins.push_back(Last ? Origin : Helper);
      Helpers.push_back(!Last);
    }
    if (Main)
      Main->Originals[N.output(0)] = std::move(N);
  }
  if (Main) {
    Main->Origins = std::move(Origins);
    Main->Helpers = std::move(Helpers);
  }
}

} // namespace

void expandNewOps(onnx::ModelProto &M, Expansions *Main) {
  int Opset = getDefaultOpset(M);
  if (Main) {
    Main->Origins.resize(M.graph().node_size());
    Main->Helpers.assign(M.graph().node_size(), false);
  }
  if (Opset <= MaxLibONNXOpset || Opset > MaxReadOpset ||
      !hasExpandedOps(M.graph(), Opset))
    return;
  StringSet<> Names;
  collectNames(M.graph(), Names);
  expandGraph(*M.mutable_graph(), Opset, Names, Main);
}

namespace {} // namespace

Error adaptToOpset17(onnx::ModelProto &M, StringRef File) {
  int Opset = getDefaultOpset(M);
  if (M.ir_version() > MaxReadIRVersion)
    return makeFileError(File, 0, 0,
                         "the model has IR version " + Twine(M.ir_version()) +
                             "; dp reads up to " + Twine(MaxReadIRVersion));
  if (Opset > MaxReadOpset)
    return makeFileError(File, 0, 0,
                         "the model uses opset " + Twine(Opset) +
                             " of the default domain; dp reads up to " +
                             Twine(MaxReadOpset));
  if (M.ir_version() <= MaxLibONNXIRVersion && Opset <= MaxLibONNXOpset)
    return Error::success();
  M.set_ir_version(std::min<int64_t>(M.ir_version(), MaxLibONNXIRVersion));
  if (Opset <= MaxLibONNXOpset)
    return Error::success();
  Adapter A(Opset);
  A.collectConstants(M.graph());
  A.adaptGraph(*M.mutable_graph());
  if (Error E = A.takeErrors())
    return E;
  for (auto &O : *M.mutable_opset_import())
    if (O.domain().empty() || O.domain() == "ai.onnx")
      O.set_version(MaxLibONNXOpset);
  return Error::success();
}

} // namespace dp
