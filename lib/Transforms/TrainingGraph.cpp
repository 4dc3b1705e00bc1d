//===- TrainingGraph.cpp - One training step ------------------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
//
// Reverse-mode differentiation over the op list. A tensor *requires* a
// gradient when it is a floating-point weight or differentiable input, or
// a differentiable result of an op with a differentiable operand that
// requires one; it *has* a gradient when it also reaches the loss through
// such operands. Ops are visited in reverse, so every consumer of a tensor
// has produced its partial gradient before the tensor's producer needs the
// sum of them.
//
//===----------------------------------------------------------------------===//

#include "dp/Transforms/TrainingGraph.h"
#include "GraphBuilder.h"
#include "dp/IR/Annotations.h"
#include "dp/IR/Graph.h"
#include "dp/IR/Summary.h"
#include "dp/Support/Diagnostics.h"
#include "dp/Support/EnumNames.h"
#include "dp/Transforms/BackwardRules.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/Twine.h"

#include <vector>

using namespace llvm;
using namespace dp::transforms;

namespace dp {

static constexpr EnumEntry<TrainingGraphOptions::MasterWeightsKind>
    MasterWeightsNames[] = {
        {"auto", TrainingGraphOptions::MasterWeightsKind::Auto},
        {"true", TrainingGraphOptions::MasterWeightsKind::On},
        {"false", TrainingGraphOptions::MasterWeightsKind::Off},
};

static constexpr EnumEntry<OptimizerKind> OptimizerNames[] = {
    {"sgd", OptimizerKind::SGD},
    {"momentum", OptimizerKind::Momentum},
    {"adam", OptimizerKind::Adam},
};

StringRef getOptimizerName(OptimizerKind K) {
  return getEnumName<OptimizerKind>(OptimizerNames, K);
}

Optional<OptimizerKind> parseOptimizerName(StringRef Name) {
  return parseEnumName<OptimizerKind>(OptimizerNames, Name);
}

StringRef getOptimizerUpdateType(OptimizerKind K) {
  switch (K) {
  case OptimizerKind::SGD:
    return "SGDUpdate";
  case OptimizerKind::Momentum:
    return "MomentumUpdate";
  case OptimizerKind::Adam:
    return "AdamUpdate";
  }
  llvm_unreachable("unknown optimizer");
}

unsigned getOptimizerStateCopies(OptimizerKind K) {
  switch (K) {
  case OptimizerKind::SGD:
    return 0;
  case OptimizerKind::Momentum:
    return 1;
  case OptimizerKind::Adam:
    return 2;
  }
  llvm_unreachable("unknown optimizer");
}

static bool isFloatTensor(const Graph &G, TensorId T) {
  return T != NoId && isFloatDType(G.getTensor(T).Type.DType);
}

/// Whether a tensor of \p Tensors at an index in \p Diff (the op's
/// differentiable operands or results) is one that \p Flagged marks.
static bool anyFlagged(ArrayRef<TensorId> Tensors, const IndexSet &Diff,
                       const std::vector<bool> &Flagged) {
  for (unsigned I = 0, E = Tensors.size(); I != E; ++I)
    if (Tensors[I] != NoId && Diff.contains(I) && Flagged[Tensors[I]])
      return true;
  return false;
}

static AttributeList makeAnnotations(StringRef Phase, StringRef Colocate) {
  AttributeList A;
  ann::set(A, ann::Phase, Phase);
  if (!Colocate.empty())
    ann::set(A, ann::Colocate, Colocate);
  return A;
}

namespace {

/// Builds the loss, backward and update ops of one graph.
class TrainingGraphBuilder {
public:
  TrainingGraphBuilder(Graph &G, const TrainingGraphOptions &Opts)
      : G(G), Opts(Opts), B(G) {}

  Error build();

private:
  /// Marks the tensors that require a gradient, over ops [0, End).
  void computeRequires(OpId End);
  /// Whether some floating-point output requires a gradient.
  bool lossRequiresGradients() const;
  /// Adds the loss ops and the seed gradient; returns the loss tensor.
  TensorId buildLoss();
  /// Marks the tensors that get a gradient and the ops that get a backward
  /// op, and counts each tensor's partial gradients.
  void computeGradientFlow(TensorId Loss, OpId End);
  void buildBackwardOp(OpId O);
  /// Records partial gradient \p Partial of \p T, summing them when it is
  /// the last one.
  void addPartial(TensorId T, TensorId Partial);
  void buildUpdates();

  /// The name of the op a weight or input is colocated with: the first
  /// op that reads it.
  StringRef getFirstReader(TensorId T) const {
    return G.getOp(G.getTensor(T).Uses.front().User).Name;
  }

  Graph &G;
  const TrainingGraphOptions &Opts;
  OpBuilder B;
  std::vector<bool> Requires, HasGrad, NeedsBackward;
  std::vector<unsigned> NumPartials;
  std::vector<SmallVector<TensorId, 1>> Partials;
  /// The gradient of each tensor once complete, NoId before.
  std::vector<TensorId> Grad;
};

} // namespace

void TrainingGraphBuilder::computeRequires(OpId End) {
  Requires.assign(G.getNumTensors(), false);
  for (TensorId T : G.getWeights())
    Requires[T] = isFloatTensor(G, T);
  if (Opts.InputGradients)
    for (TensorId T : G.getInputs())
      Requires[T] = isFloatTensor(G, T);
  for (OpId O = 0; O != End; ++O) {
    const Op &Node = G.getOp(O);
    const BackwardRule &Rule = getBackwardRule(Node.Domain, Node.Type);
    if (Rule.Kind == BackwardKind::None ||
        !anyFlagged(Node.Operands, Rule.DiffOperands, Requires))
      continue;
    for (unsigned I = 0, E = Node.Results.size(); I != E; ++I) {
      TensorId T = Node.Results[I];
      if (T != NoId && Rule.DiffResults.contains(I) && isFloatTensor(G, T))
        Requires[T] = true;
    }
  }
}

bool TrainingGraphBuilder::lossRequiresGradients() const {
  for (TensorId T : G.getOutputs())
    if (isFloatTensor(G, T) && Requires[T])
      return true;
  return false;
}

TensorId TrainingGraphBuilder::buildLoss() {
  SmallVector<TensorId, 4> Outputs;
  for (TensorId T : G.getOutputs())
    if (isFloatTensor(G, T))
      Outputs.push_back(T);
  // One f32 scalar per output (ReduceSum over every axis, then a Cast for
  // other types), added up. The op and tensor holding the loss are "loss".
  SmallVector<TensorId, 4> Terms;
  bool Single = Outputs.size() == 1;
  B.Annotations = makeAnnotations("loss", "");
  for (TensorId T : Outputs) {
    const Tensor &Tn = G.getTensor(T);
    std::string Base = Tn.Name.str() + "/loss";
    bool IsF32 = Tn.Type.DType == DTypeKind::F32;
    AttributeList Attrs;
    Attrs.set("keepdims", Attribute::getInt(0));
    TensorId Sum =
        B.createOne(Single && IsF32 ? "loss" : Base, "ReduceSum", {T},
                    TensorType(Tn.Type.DType, {}), std::move(Attrs));
    if (!IsF32) {
      AttributeList CastAttrs;
      CastAttrs.set("to", Attribute::getInt(int64_t(DTypeKind::F32)));
      Sum = B.createOne(Single ? "loss" : Base + "/f32", "Cast", {Sum},
                        TensorType(DTypeKind::F32, {}), std::move(CastAttrs));
    }
    Terms.push_back(Sum);
  }
  TensorId Loss = Terms.front();
  for (unsigned I = 1, E = Terms.size(); I != E; ++I)
    Loss = B.binary("Add", I + 1 == E ? Twine("loss") : "loss/add" + Twine(I),
                    Loss, Terms[I]);

  // The seed: d loss / d loss = 1.
  StringRef LossOp = G.getOp(G.getTensor(Loss).Producer).Name;
  B.Annotations = makeAnnotations("loss", LossOp);
  AttributeList Attrs;
  Attrs.set("value_float", Attribute::getFloat(1.0));
  std::string SeedName = B.makeTensorName(G.getTensor(Loss).Name + "/grad");
  B.createOne(G.getTensor(Loss).Name + "/seed", "Constant", {},
              TensorType(DTypeKind::F32, {}), std::move(Attrs), SeedName);
  return Loss;
}

void TrainingGraphBuilder::computeGradientFlow(TensorId Loss, OpId End) {
  HasGrad.assign(G.getNumTensors(), false);
  NeedsBackward.assign(End, false);
  NumPartials.assign(G.getNumTensors(), 0);
  HasGrad[Loss] = true;
  for (OpId O = End; O-- != 0;) {
    const Op &Node = G.getOp(O);
    const BackwardRule &Rule = getBackwardRule(Node.Domain, Node.Type);
    if (Rule.Kind == BackwardKind::None ||
        !anyFlagged(Node.Results, Rule.DiffResults, HasGrad))
      continue;
    NeedsBackward[O] = true;
    for (unsigned I = 0, E = Node.Operands.size(); I != E; ++I) {
      TensorId T = Node.Operands[I];
      if (T == NoId || !Rule.DiffOperands.contains(I) || !Requires[T])
        continue;
      HasGrad[T] = true;
      ++NumPartials[T];
    }
  }
}

void TrainingGraphBuilder::addPartial(TensorId T, TensorId Partial) {
  Partials[T].push_back(Partial);
  if (Partials[T].size() != NumPartials[T])
    return;
  if (NumPartials[T] == 1) {
    Grad[T] = Partial;
    return;
  }
  // Accumulate where the tensor was made: with its producer, or for a
  // weight or input with its first reader.
  const Tensor &Tn = G.getTensor(T);
  StringRef Colocate =
      Tn.Producer != NoId ? G.getOp(Tn.Producer).Name : getFirstReader(T);
  B.Annotations = makeAnnotations("backward", Colocate);
  std::string Name = B.makeTensorName(Tn.Name + "/grad");
  Grad[T] =
      B.createOne(Tn.Name + "/grad/sum", "Sum", Partials[T], Tn.Type, {}, Name);
}

void TrainingGraphBuilder::buildBackwardOp(OpId O) {
  // Copy what is needed: creating ops may move G's op array.
  const Op &Node = G.getOp(O);
  std::string OpName = Node.Name.str();
  std::string Type = (Node.Type + "Grad").str();
  AttributeList Attrs = Node.Attrs;
  SmallVector<TensorId, 4> FwdOperands(Node.Operands.begin(),
                                       Node.Operands.end());
  SmallVector<TensorId, 2> FwdResults(Node.Results.begin(), Node.Results.end());
  const BackwardRule &Rule = getBackwardRule(Node.Domain, Node.Type);

  // Operands: result gradients, then the forward tensors the rule reads.
  SmallVector<TensorId, 8> Operands;
  for (unsigned I = 0, E = FwdResults.size(); I != E; ++I) {
    TensorId T = FwdResults[I];
    bool Flows = T != NoId && Rule.DiffResults.contains(I) && HasGrad[T];
    assert((!Flows || Grad[T] != NoId) && "a result gradient is incomplete");
    Operands.push_back(Flows ? Grad[T] : NoId);
  }
  for (unsigned I = 0, E = FwdOperands.size(); I != E; ++I)
    if (Rule.SavedOperands.contains(I))
      Operands.push_back(FwdOperands[I]);
  for (unsigned I = 0, E = FwdResults.size(); I != E; ++I)
    if (Rule.SavedResults.contains(I))
      Operands.push_back(FwdResults[I]);

  // Results: the gradient of each operand that gets one.
  SmallVector<TensorType, 4> Types;
  std::vector<std::string> Names;
  SmallVector<TensorId, 4> GradOf;
  for (unsigned I = 0, E = FwdOperands.size(); I != E; ++I) {
    TensorId T = FwdOperands[I];
    if (T == NoId || !Rule.DiffOperands.contains(I) || !Requires[T]) {
      Types.push_back(TensorType());
      Names.emplace_back();
      continue;
    }
    const Tensor &Tn = G.getTensor(T);
    Types.push_back(Tn.Type);
    // A single partial is the gradient itself; several are numbered and
    // summed.
    std::string Base = Tn.Name.str() + "/grad";
    if (NumPartials[T] > 1) {
      unsigned Pending = 0;
      for (TensorId Prev : GradOf)
        Pending += Prev == T;
      Base += "." + std::to_string(Partials[T].size() + Pending);
    }
    // The names are not in the graph until the op is created, so
    // makeTensorName cannot keep this op's results apart: check them here.
    std::string Name = B.makeTensorName(Base);
    while (is_contained(Names, Name))
      Name = B.makeTensorName(Name + ".1");
    Names.push_back(Name);
    GradOf.push_back(T);
  }

  B.Annotations = makeAnnotations("backward", OpName);
  OpId Back = B.create(OpName + "/grad", "dp", Type, Operands, Types,
                       std::move(Attrs), Names);
  SmallVector<TensorId, 4> Results(G.getOp(Back).Results.begin(),
                                   G.getOp(Back).Results.end());
  for (unsigned I = 0, E = Results.size(); I != E; ++I)
    if (Results[I] != NoId)
      addPartial(FwdOperands[I], Results[I]);
}

void TrainingGraphBuilder::buildUpdates() {
  unsigned Copies = getOptimizerStateCopies(Opts.Optimizer);
  StringRef Type = getOptimizerUpdateType(Opts.Optimizer);
  std::vector<TensorId> Weights(G.getWeights().begin(), G.getWeights().end());
  for (TensorId W : Weights) {
    if (!HasGrad[W])
      continue;
    std::string Name = G.getTensor(W).Name.str();
    B.Annotations = makeAnnotations("update", getFirstReader(W));
    AttributeList Attrs;
    Attrs.set("state_copies", Attribute::getInt(Copies));
    DTypeKind DT = G.getTensor(W).Type.DType;
    bool Half = DT == DTypeKind::F16 || DT == DTypeKind::BF16;
    if (Opts.MasterWeights == TrainingGraphOptions::MasterWeightsKind::On ||
        (Opts.MasterWeights == TrainingGraphOptions::MasterWeightsKind::Auto &&
         Half))
      Attrs.set("master_weights", Attribute::getInt(1));
    std::string Result = B.makeTensorName(Name + "/updated");
    OpId O = B.create(Name + "/update", "dp", Type, {W, Grad[W]},
                      {G.getTensor(W).Type}, std::move(Attrs), {Result});
    G.addOutput(G.getOp(O).Results[0]);
  }
}

Error TrainingGraphBuilder::build() {
  for (const Op &Node : G.ops())
    if (Node.Annotations.contains("phase"))
      return makeNodeError(Node.Name,
                           "the graph already is a training graph (the op "
                           "has a 'phase' annotation)");
  if (none_of(G.getOutputs(), [&](TensorId T) { return isFloatTensor(G, T); }))
    return makeError("the graph has no floating-point output to build a "
                     "loss from");
  OpId NumForward = G.getNumOps();
  computeRequires(NumForward);
  if (!lossRequiresGradients())
    return makeError(Opts.InputGradients
                         ? "no weight or floating-point input reaches a "
                           "floating-point output: there is nothing to train"
                         : "no floating-point weight reaches a "
                           "floating-point output: there is nothing to train");

  for (OpId O = 0; O != NumForward; ++O)
    ann::set(G.getOp(O), ann::Phase, StringRef("forward"));
  G.setOpset("dp", 1);
  TensorId Loss = buildLoss();
  OpId End = G.getNumOps() - 1; // Without the seed.
  computeRequires(End);
  computeGradientFlow(Loss, End);

  Partials.assign(G.getNumTensors(), {});
  Grad.assign(G.getNumTensors(), NoId);
  Grad[Loss] = G.getOp(End).Results[0];
  for (OpId O = End; O-- != 0;)
    if (NeedsBackward[O])
      buildBackwardOp(O);
  buildUpdates();
  return Error::success();
}

Error buildTrainingGraph(Graph &G, const TrainingGraphOptions &Opts) {
  return TrainingGraphBuilder(G, Opts).build();
}

OptionTable TrainingGraphPass::describeOptions(TrainingGraphOptions &O) {
  OptionTable T(name().str());
  T.choice<OptimizerKind>("optimizer", O.Optimizer, OptimizerNames)
      .printAlways()
      .flag("input-grads", O.InputGradients)
      .choice<TrainingGraphOptions::MasterWeightsKind>(
          "master-weights", O.MasterWeights, MasterWeightsNames);
  return T;
}

Error TrainingGraphPass::run(Graph &G, PassContext &Ctx) {
  std::string Folded = describeFoldedBatchNorm(G);
  if (Error E = buildTrainingGraph(G, Opts))
    return E;
  if (!Folded.empty() && Ctx.Report)
    *Ctx.Report << name() << ": warning: " << Folded
                << ": the export folded BatchNorm into the convolutions "
                   "(torch.onnx.export's default, TrainingMode.EVAL), so "
                   "this step trains the folded weights, with no BatchNorm; "
                   "export with training=torch.onnx.TrainingMode.PRESERVE "
                   "to train the model as written\n";
  return Error::success();
}

void TrainingGraphPass::printPipeline(raw_ostream &OS) const {
  printPassOptions(OS, name(), Opts, describeOptions);
}

} // namespace dp
