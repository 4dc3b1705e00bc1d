//===- OpsetAdapter.cpp - Opsets 18-21 read as opset 17 -------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "OpsetAdapter.h"
#include "ONNXWalk.h"
#include "ShapeFolder.h"
#include "dp/Support/Diagnostics.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/Twine.h"

#include "onnx/onnx_pb.h"

using namespace llvm;

namespace dp {

namespace {

/// Ops added to the default domain after opset 17, with the opset that
/// added them.
const StringMap<int> &getNewOps() {
  static const StringMap<int> Ops = {
      {"BitwiseAnd", 18},  {"BitwiseNot", 18},
      {"BitwiseOr", 18},   {"BitwiseXor", 18},
      {"CenterCropPad", 18}, {"Col2Im", 18},
      {"GroupNormalization", 18}, {"Mish", 18},
      {"OptionalGetElement", 18}, {"OptionalHasElement", 18},
      {"DeformConv", 19},  {"AffineGrid", 20},
      {"Gelu", 20},        {"ImageDecoder", 20},
      {"RegexFullMatch", 20}, {"StringConcat", 20},
      {"StringSplit", 20},
  };
  return Ops;
}

bool isNewElementType(int64_t T) { return T >= 17 && T <= 22; }

class Adapter {
public:
  Adapter(int Opset) : Opset(Opset) {}

  void collectConstants(const onnx::GraphProto &G);
  void adaptGraph(onnx::GraphProto &G);
  Error takeErrors() { return Errs.take(); }

private:
  void adaptNode(onnx::NodeProto &N);
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
  auto New = getNewOps().find(Op);
  if (New != getNewOps().end() && New->second <= Opset) {
    Errs.add(makeNodeError(N.name(), Op + " (added in opset " +
                                         Twine(New->second) +
                                         ") has no opset-" +
                                         Twine(MaxLibONNXOpset) +
                                         " form in dp yet"));
    return;
  }
  if (Op == "Cast" || Op == "CastLike") {
    if (onnx::AttributeProto *To = attr(N, "to"); To && isNewElementType(To->i()))
      fail(N, "it casts to element type " + Twine(To->i()) +
                  " (a float8 or 4-bit type)");
    dropAttr(N, "saturate");
    return;
  }
  if (Op == "Constant") {
    if (onnx::AttributeProto *V = attr(N, "value");
        V && isNewElementType(V->t().data_type()))
      fail(N, "its value has element type " + Twine(V->t().data_type()) +
                  " (a float8 or 4-bit type)");
    return;
  }
  static const StringRef Reductions[] = {
      "ReduceL1",  "ReduceL2",  "ReduceLogSum", "ReduceLogSumExp", "ReduceMax",
      "ReduceMean", "ReduceMin", "ReduceProd",   "ReduceSumSquare"};
  if (Opset >= 18 && is_contained(Reductions, StringRef(Op))) {
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
    return;
  }
  if (Op == "Split") {
    dropAttr(N, "num_outputs");
    return;
  }
  if (Op == "Resize") {
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
    return;
  }
  if (Op == "Pad") {
    if (N.input_size() > 3 && !N.input(3).empty()) {
      auto C = Constants.find(N.input(3));
      if (C == Constants.end() || !C->second.empty()) {
        fail(N, "it pads only some axes ('axes')");
        return;
      }
      dropInput(N, 3);
    }
    return;
  }
  if (Op == "AveragePool") {
    if (onnx::AttributeProto *A = attr(N, "dilations")) {
      if (any_of(A->ints(), [](int64_t D) { return D != 1; })) {
        fail(N, "it has dilations");
        return;
      }
      dropAttr(N, "dilations");
    }
    return;
  }
  if (Op == "LpPool") {
    dropIntIfDefault(N, "ceil_mode", 0);
    return;
  }
  if (Op == "QuantizeLinear" || Op == "DequantizeLinear") {
    dropIntIfDefault(N, "output_dtype", 0);
    dropIntIfDefault(N, "block_size", 0);
    dropIntIfDefault(N, "saturate", 1);
    return;
  }
}

} // namespace

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
