//===- ONNXImporter.cpp - ONNX models to dp::Graph ------------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/Import/ONNXImporter.h"
#include "BranchInliner.h"
#include "CrashGuard.h"
#include "LoopShapes.h"
#include "OpsetAdapter.h"
#include "ShapeFolder.h"
#include "dp/IR/Annotations.h"
#include "dp/IR/Bytecode.h"
#include "dp/IR/TextFormat.h"
#include "dp/Import/ONNXWalk.h"
#include "dp/Support/Diagnostics.h"
#include "dp/Support/Format.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/CrashRecoveryContext.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/StringSaver.h"

#include "onnx/checker.h"
#include "onnx/defs/parser.h"
#include "onnx/defs/schema.h"
#include "onnx/onnx_pb.h"
#include "onnx/shape_inference/implementation.h"

#include <google/protobuf/arena.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <climits>
#include <cmath>
#include <cstring>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <queue>
#include <regex>

using namespace llvm;

namespace dp {

/// Integer initializers up to this many elements stay in the working copy
/// of the model: shape inference reads their values (Reshape's shape,
/// Slice's starts, ...). Everything else is known by type only.
static constexpr int64_t MaxInlineIntElements = 1024;
/// Float initializers up to this many elements stay too: Resize's scales,
/// and the scalars that shape computations multiply by.
static constexpr int64_t MaxInlineFloatElements = 16;
/// The largest constant stored as external data that the working copy
/// fills with zeros for the checker.
static constexpr uint64_t MaxFilledConstantBytes = uint64_t(1) << 30;

/// At most this many independent errors are reported for one model.
static constexpr unsigned MaxReportedErrors = 20;

//===----------------------------------------------------------------------===//
// Type conversion
//===----------------------------------------------------------------------===//

static DTypeKind convertDType(int32_t T) {
  return isValidDType(T) ? static_cast<DTypeKind>(T) : DTypeKind::Undefined;
}

/// Converts a TypeProto: a tensor type with known or unknown dims. Returns
/// false for non-tensor types (sequences, maps, optionals).
static bool convertTypeProto(const onnx::TypeProto &TP, TensorType &Out,
                             bool *HasShape = nullptr) {
  if (!TP.has_tensor_type()) {
    if (TP.has_sparse_tensor_type()) {
      const auto &ST = TP.sparse_tensor_type();
      Out.DType = convertDType(ST.elem_type());
      Out.Dims.clear();
      for (const auto &D : ST.shape().dim())
        Out.Dims.push_back(D.has_dim_value() ? D.dim_value() : UnknownDim);
      if (HasShape)
        *HasShape = ST.has_shape();
      return true;
    }
    return false;
  }
  const auto &TT = TP.tensor_type();
  Out.DType = convertDType(TT.elem_type());
  Out.Dims.clear();
  for (const auto &D : TT.shape().dim())
    Out.Dims.push_back(D.has_dim_value() && D.dim_value() >= 0 ? D.dim_value()
                                                               : UnknownDim);
  if (HasShape)
    *HasShape = TT.has_shape();
  return true;
}

static TensorType convertTensorProtoType(const onnx::TensorProto &T) {
  TensorType Out;
  Out.DType = convertDType(T.data_type());
  for (int64_t D : T.dims())
    Out.Dims.push_back(D);
  return Out;
}

static std::string qualifiedOpType(const onnx::NodeProto &N) {
  if (N.domain().empty() || N.domain() == "ai.onnx")
    return N.op_type();
  return N.domain() + "::" + N.op_type();
}

static void summarize(const onnx::GraphProto &G, GraphSummary &S,
                      std::map<std::string, int64_t> &Counts) {
  for (const onnx::NodeProto &N : G.node()) {
    ++S.Nodes;
    ++Counts[qualifiedOpType(N)];
    for (const onnx::AttributeProto &A : N.attribute()) {
      if (A.has_g())
        summarize(A.g(), S, Counts);
      for (const onnx::GraphProto &Sub : A.graphs())
        summarize(Sub, S, Counts);
    }
  }
}

static GraphSummary summarizeGraph(const onnx::GraphProto &G) {
  GraphSummary S;
  S.Inputs = G.input_size();
  S.Outputs = G.output_size();
  std::map<std::string, int64_t> Counts;
  summarize(G, S, Counts);
  S.OpCounts.assign(Counts.begin(), Counts.end());
  return S;
}

/// \p Convert applied to each element of \p Range, in order.
template <typename RangeT, typename ConvertFn>
static auto convertEach(const RangeT &Range, ConvertFn Convert) {
  std::vector<std::decay_t<decltype(Convert(*Range.begin()))>> V;
  V.reserve(Range.size());
  for (const auto &X : Range)
    V.push_back(Convert(X));
  return V;
}

/// The type of a sparse tensor: its values' type with its own dimensions.
static TensorType convertSparseTensorType(const onnx::SparseTensorProto &S) {
  TensorType T = convertTensorProtoType(S.values());
  T.Dims.assign(S.dims().begin(), S.dims().end());
  return T;
}

/// The type of an attribute from before IR version 2, which may leave it
/// out: that of the first field that is set.
static onnx::AttributeProto::AttributeType
getSetFieldType(const onnx::AttributeProto &A) {
  using AP = onnx::AttributeProto;
  static const std::pair<bool (*)(const AP &), AP::AttributeType> Fields[] = {
      {[](const AP &A) { return A.has_f(); }, AP::FLOAT},
      {[](const AP &A) { return A.has_i(); }, AP::INT},
      {[](const AP &A) { return A.has_s(); }, AP::STRING},
      {[](const AP &A) { return A.has_t(); }, AP::TENSOR},
      {[](const AP &A) { return A.has_g(); }, AP::GRAPH},
      {[](const AP &A) { return A.floats_size() != 0; }, AP::FLOATS},
      {[](const AP &A) { return A.ints_size() != 0; }, AP::INTS},
      {[](const AP &A) { return A.strings_size() != 0; }, AP::STRINGS}};
  for (const auto &[IsSet, Type] : Fields)
    if (IsSet(A))
      return Type;
  return AP::UNDEFINED;
}

static Expected<Attribute> convertAttribute(const onnx::NodeProto &N,
                                            StringRef NodeName,
                                            const onnx::AttributeProto &A) {
  using AP = onnx::AttributeProto;
  auto AttrType = A.type();
  if (AttrType == AP::UNDEFINED)
    AttrType = getSetFieldType(A);
  switch (AttrType) {
  case AP::FLOAT:
    return Attribute::getFloat(floatToShortestDouble(A.f()));
  case AP::INT:
    return Attribute::getInt(A.i());
  case AP::STRING:
    return Attribute::getString(A.s());
  case AP::FLOATS:
    return Attribute::getFloats(convertEach(A.floats(), floatToShortestDouble));
  case AP::INTS:
    return Attribute::getInts({A.ints().begin(), A.ints().end()});
  case AP::STRINGS:
    return Attribute::getStrings({A.strings().begin(), A.strings().end()});
  case AP::TENSOR:
    return Attribute::getTensor(convertTensorProtoType(A.t()));
  case AP::TENSORS:
    return Attribute::getTensors(
        convertEach(A.tensors(), convertTensorProtoType));
  case AP::SPARSE_TENSOR:
    return Attribute::getTensor(convertSparseTensorType(A.sparse_tensor()));
  case AP::SPARSE_TENSORS:
    return Attribute::getTensors(
        convertEach(A.sparse_tensors(), convertSparseTensorType));
  case AP::GRAPH:
    return Attribute::getGraph(summarizeGraph(A.g()));
  case AP::GRAPHS:
    return Attribute::getGraphs(convertEach(A.graphs(), summarizeGraph));
  case AP::TYPE_PROTO:
  case AP::TYPE_PROTOS: {
    std::vector<TensorType> V;
    auto Convert = [&](const onnx::TypeProto &TP) {
      TensorType T;
      if (!convertTypeProto(TP, T))
        T = TensorType(); // A non-tensor type: element type unknown.
      V.push_back(std::move(T));
    };
    if (AttrType == AP::TYPE_PROTO) {
      Convert(A.tp());
      return Attribute::getType(std::move(V.front()));
    }
    for (const auto &TP : A.type_protos())
      Convert(TP);
    return Attribute::getTypes(std::move(V));
  }
  default:
    break;
  }
  if (!A.ref_attr_name().empty())
    return makeNodeError(NodeName, "attribute '" + A.name() +
                                       "' refers to a function attribute, "
                                       "which is only valid in functions");
  return makeNodeError(NodeName, "attribute '" + A.name() +
                                     "' has no value of a known type");
}

//===----------------------------------------------------------------------===//
// The importer
//===----------------------------------------------------------------------===//

namespace {

/// Tensor names of the working copy; the strings live in the model's arena.
using NameSet = DenseSet<StringRef>;

class ONNXImporter {
public:
  /// The type of every named value of the main graph.
  using ValueTypes = StringMap<const onnx::TypeProto *>;

  ONNXImporter(MemoryBufferRef Buffer, const ImportOptions &Opts,
               TimerGroup *Timers, BranchDecisions &Decided)
      : Buffer(Buffer), Opts(Opts), Timers(Timers), Decided(Decided),
        Model(
            google::protobuf::Arena::CreateMessage<onnx::ModelProto>(&Arena)) {}

  Expected<Graph> run();
  /// Whether run() decided Ifs that this import did not inline: the model
  /// must be imported again with them inlined.
  bool needsRestart() const { return Restart; }
  /// What run() changed in the model that the user should know of, one
  /// line each ("node 'X': ...").
  std::vector<std::string> takeNotes() { return std::move(Notes); }

private:
  Error checkHeader();
  Error collectWeights();
  Error applyOverrides();
  /// The declared shape of each graph input that shape= names, None for an
  /// input declared without one.
  using DeclaredShapes = StringMap<Optional<onnx::TensorShapeProto>>;
  DeclaredShapes getOverriddenInputShapes() const;
  bool isShapedDataInput(const onnx::ValueInfoProto &VI) const;
  /// Sets batch= and the named dimensions of dims= in the graph inputs and
  /// the bodies that name them.
  void applyDimOverrides();
  /// Sets the shapes of shape=, checked against \p OwnShapes.
  void applyShapeOverrides(const DeclaredShapes &OwnShapes);
  /// Parses the values of value= for the inputs they bind (BoundValues).
  void bindValues();
  /// Divides every data input's batch axis by Opts.MicroBatches, and
  /// records the inputs it divided in SplitAxes.
  void splitBatch();
  /// Constants and control-flow bodies' initializers stored as external
  /// data: the checker wants their bytes, so floating-point ones get zeros
  /// of their size in the working copy (recorded in Placeholders); integer
  /// ones are an error, their values may be shapes.
  void fillExternalTensors(onnx::NodeProto &N);
  void fillExternalTensor(onnx::TensorProto &T, StringRef Node);
  /// Sets the dimensions named by Opts.Dims in the bodies of \p N.
  void setNamedDims(onnx::NodeProto &N);
  /// Gives every node of the main graph a unique name (getONNXNodeNames).
  void computeNodeNames();
  /// Drops the empty 1-D constants among a Concat's inputs, with a note;
  /// records the Concats' results in ShortenedConcats.
  void dropEmptyConcatInputs();
  /// Forgets the declared shapes of the tensors computed from
  /// ShortenedConcats (an exporter that kept the empty input may have
  /// counted it), to be inferred anew; a graph output's, with a note. Runs
  /// after the checker, which wants every graph output's shape.
  void forgetStaleShapes();
  /// Inlines the decided Ifs and expands the ops added after opset 17,
  /// naming the new nodes and recording where they come from.
  void rewriteNodes();
  Error sortNodes();
  /// Where each tensor of the main graph comes from: the index of the node
  /// that makes it, or -1 for graph inputs and weights.
  using ProducerMap = DenseMap<StringRef, int>;
  Error findProducers(ProducerMap &Producer);
  /// The (producer, user) edges between nodes, counting the tensors that
  /// subgraphs read from the main graph (recorded in ImplicitInputs), and
  /// each node's number of producers in \p Pending.
  Error collectDependencies(const ProducerMap &Producer,
                            std::vector<std::pair<int, int>> &Edges,
                            std::vector<unsigned> &Pending);
  /// Names a cycle among the nodes that \p Pending says were left unsorted.
  Error makeCycleError(const ProducerMap &Producer,
                       ArrayRef<unsigned> Pending) const;
  /// Puts the nodes and the per-node tables in the order \p Order.
  void permuteNodes(ArrayRef<int> Order);
  Error runChecker();
  Error runShapeInference();
  /// Gives bound='s tensors' value-dependent dimensions ("unk__<n>") their
  /// bound (shape inference then carries it on); returns whether any
  /// changed. Records the tensors bound in BoundTensors.
  bool applyBounds();
  /// The error for each bound= that bound nothing.
  Error checkBounds();
  /// Folds shape subgraphs between rounds of shape inference.
  Error foldShapes();
  /// Records the Ifs whose condition folded in Decided; returns whether
  /// there are any.
  bool decideBranches();
  /// Gives Loop results the shapes their bodies keep (LoopShapes.h);
  /// returns how many got one. \p Done holds the Loops finished.
  int inferLoopResults(StringSet<> &Done);
  Expected<Graph> buildGraph();
  /// Whether \p Name has a static type in \p Types; reports it when not,
  /// for node \p Node, with \p Hint after the reason.
  bool getStaticType(const ValueTypes &Types, StringRef Node, StringRef Name,
                     TensorType &Out, StringRef Hint = {});
  void addInputsAndWeights(Graph &G, const ValueTypes &Types);
  /// The node that node \p I of the working copy stands for: itself, or
  /// the user's node of an expansion; null for an expansion's helper.
  const onnx::NodeProto *getUserNode(int I) const;
  /// Adds the op of node \p I, which stands for the user's node \p N.
  void addNodeOp(Graph &G, const ValueTypes &Types, int I,
                 const onnx::NodeProto &N);
  /// Records on op \p Id where node \p I comes from and what folding
  /// knows about it.
  void annotateNodeOp(Graph &G, OpId Id, int I, const onnx::NodeProto &N);
  void addOutputs(Graph &G);
  /// Sets the `device` of the ops that the model's dp.placement metadata
  /// entry places (a model written by emit{format=onnx}).
  Error readPlacement(Graph &G);

  void addError(Error E) { Errors.add(std::move(E)); }
  Error takeErrors() { return Errors.take(); }

  /// The unique dp name of node \p I of the working copy.
  StringRef nodeName(int I) const { return Model->graph().node(I).name(); }
  /// Finds the node a checker or inference message is about.
  std::string findNodeInMessage(StringRef Msg) const;
  /// " ('a' is [2,3], 'b' is [4])": the shapes of node \p NodeName's
  /// inputs as far as known; empty when none is.
  std::string describeInputShapes(StringRef NodeName) const;

  /// Runs one import phase, timed in Timers when there are any.
  template <typename Fn> Error phase(StringRef Name, Fn &&Body) {
    if (!Timers)
      return Body();
    PhaseTimers.push_back(std::make_unique<Timer>(
        Name, ("import-onnx: " + Name).str(), *Timers));
    TimeRegion Region(*PhaseTimers.back());
    return Body();
  }

  MemoryBufferRef Buffer;
  const ImportOptions &Opts;
  TimerGroup *Timers;
  /// The branches the Ifs of earlier imports of this model take.
  BranchDecisions &Decided;
  bool Restart = false;
  std::vector<std::string> Notes;
  std::vector<std::string> ShortenedConcats;
  StringSet<> BoundTensors;
  std::vector<std::unique_ptr<Timer>> PhaseTimers;
  /// The working copy of the model, in an arena: parsing allocates little
  /// and freeing it is one step.
  google::protobuf::Arena Arena;
  onnx::ModelProto *Model;

  struct WeightInfo {
    StringRef Name;
    TensorType Type;
  };
  /// Initializers in file order. Names point into Model, which keeps the
  /// strings alive even after the initializer is dropped from it.
  std::vector<WeightInfo> Weights;
  NameSet WeightNames;
  /// Strings the importer owns (names of dropped initializers).
  BumpPtrAllocator Alloc;
  StringSaver Saver{Alloc};
  /// Outer-scope tensors that each node's subgraphs read, by node index;
  /// empty for nodes without subgraphs.
  std::vector<std::vector<StringRef>> ImplicitInputs;
  /// The node names of the user's model, by node index of the working copy
  /// (which carries unique dp names).
  std::vector<std::string> SourceNames;
  /// Whether node I was renamed (its source name differs from its name).
  std::vector<bool> RenamedNodes;
  /// The unique name of the user's node that node I comes from, when it is
  /// not one of the user's nodes (a node of an inlined branch, a helper
  /// node of an expanded op); else empty.
  std::vector<std::string> NodeOrigins;
  /// The nodes of ops added after opset 17 that the working copy computes
  /// with opset-17 ops (for libonnx), by name, and the names of the helper
  /// nodes of those expansions: the graph gets the user's op.
  StringMap<onnx::NodeProto> ExpandedNodes;
  StringSet<> ExpansionHelpers;

  std::unique_ptr<ShapeFolder> Folder;
  /// Tensors whose values are zeros standing in for external data.
  NameSet Placeholders;
  /// The values of the inputs import-onnx{value=} binds.
  std::vector<std::pair<std::string, FoldValue>> BoundValues;
  /// The inputs splitBatch divided, with their batch axes (annotation
  /// `batch_axes`).
  std::vector<std::pair<std::string, int64_t>> SplitAxes;

  ErrorList Errors{MaxReportedErrors};
};

} // namespace

Error ONNXImporter::checkHeader() {
  StringRef File = Buffer.getBufferIdentifier();
  if (!Model->has_graph())
    return makeFileError(File, 0, 0, "not an ONNX model: it has no graph");
  if (Model->ir_version() < 0)
    return makeFileError(File, 0, 0,
                         "not an ONNX model: ir_version " +
                             Twine(Model->ir_version()) + " is negative");
  if (Model->ir_version() == 0)
    return makeFileError(File, 0, 0,
                         "not an ONNX model: ir_version is missing");
  return Error::success();
}

Error ONNXImporter::collectWeights() {
  onnx::GraphProto &G = *Model->mutable_graph();
  NameSet InputNames;
  InputNames.reserve(G.input_size());
  for (const auto &VI : G.input())
    InputNames.insert(VI.name());

  auto &Inits = *G.mutable_initializer();
  Weights.reserve(Inits.size());
  WeightNames.reserve(Inits.size());
  int NumKept = 0;
  for (int I = 0, E = Inits.size(); I != E; ++I) {
    const onnx::TensorProto &T = Inits.Get(I);
    if (T.name().empty()) {
      addError(makeError("an initializer has no name"));
      continue;
    }
    StringRef Name = Saver.save(T.name());
    if (!WeightNames.insert(Name).second) {
      addError(makeTensorError("", Name, "two initializers have the same name"));
      continue;
    }
    TensorType Type = convertTensorProtoType(T);
    if (Type.DType == DTypeKind::Undefined) {
      addError(makeTensorError("", Name,
                               "weight has an unknown element type (" +
                                   Twine(T.data_type()) + ")"));
      continue;
    }
    if (!Type.isStatic()) {
      addError(makeTensorError("", Name, "weight has a negative dimension"));
      continue;
    }
    Optional<int64_t> NumElements = Type.getNumElements();
    if (!NumElements || (getDTypeSize(Type.DType) && !Type.getSizeInBytes())) {
      addError(makeTensorError("", Name,
                               "weight size overflows a 64-bit byte count"));
      continue;
    }

    bool IsInt = Type.DType == DTypeKind::I64 || Type.DType == DTypeKind::I32;
    bool IsFloat = Type.DType == DTypeKind::F32 || Type.DType == DTypeKind::F64;
    bool External = T.data_location() == onnx::TensorProto::EXTERNAL;
    if (!External && ((IsInt && *NumElements <= MaxInlineIntElements) ||
                      (IsFloat && *NumElements <= MaxInlineFloatElements))) {
      // Kept in the working copy, compacted to the front.
      Inits.SwapElements(NumKept++, I);
    } else if (!InputNames.contains(Name)) {
      // Known by type only from here on: the working copy declares it as
      // an input.
      declareAsInput(G, T);
    }
    Weights.push_back({Name, std::move(Type)});
  }
  Inits.DeleteSubrange(NumKept, Inits.size() - NumKept);
  for (onnx::NodeProto &N : *G.mutable_node())
    fillExternalTensors(N);
  for (const auto &S : G.sparse_initializer())
    addError(makeTensorError("", S.values().name(),
                             "sparse initializers are not supported"));
  return takeErrors();
}

/// Whether \p T's element type is a floating-point one.
static bool isFloatTensor(const onnx::TensorProto &T) {
  switch (T.data_type()) {
  case onnx::TensorProto::FLOAT:
  case onnx::TensorProto::FLOAT16:
  case onnx::TensorProto::BFLOAT16:
  case onnx::TensorProto::DOUBLE:
    return true;
  default:
    return false;
  }
}

void ONNXImporter::fillExternalTensor(onnx::TensorProto &T,
                                      StringRef Node) {
  if (T.data_location() != onnx::TensorProto::EXTERNAL)
    return;
  TensorType Type = convertTensorProtoType(T);
  Optional<int64_t> Bytes = Type.getSizeInBytes();
  if (!isFloatTensor(T)) {
    // Integer constants may be shapes: zeros would fold into wrong ones.
    addError(makeTensorError(Node, T.name(),
                             "an integer constant whose data is stored "
                             "outside the model file; dp needs its values "
                             "(they may be shapes)"));
    return;
  }
  if (!Bytes || uint64_t(*Bytes) > MaxFilledConstantBytes) {
    addError(makeTensorError(Node, T.name(),
                             "a constant stored outside the model file is "
                             "over 1 GiB"));
    return;
  }
  // The checker wants data where the type says: zeros stand in, and the
  // folder never reads them (the values are floats of no shape).
  T.clear_external_data();
  T.set_data_location(onnx::TensorProto::DEFAULT);
  T.set_raw_data(std::string(*Bytes, '\0'));
  if (!T.name().empty())
    Placeholders.insert(Saver.save(T.name()));
}

void ONNXImporter::fillExternalTensors(onnx::NodeProto &N) {
  for (onnx::AttributeProto &A : *N.mutable_attribute()) {
    if (!A.has_t())
      continue;
    bool External = A.t().data_location() == onnx::TensorProto::EXTERNAL;
    fillExternalTensor(*A.mutable_t(), N.name());
    if (External && N.op_type() == "Constant" && N.output_size() == 1)
      Placeholders.insert(Saver.save(N.output(0)));
  }
  forEachBody(N, [&](onnx::GraphProto &Body) {
    for (onnx::TensorProto &T : *Body.mutable_initializer())
      fillExternalTensor(T, N.name());
    for (onnx::NodeProto &Inner : *Body.mutable_node())
      fillExternalTensors(Inner);
  });
}

void ONNXImporter::setNamedDims(onnx::NodeProto &N) {
  auto Set = [&](onnx::ValueInfoProto &VI) {
    if (!VI.type().has_tensor_type() || !VI.type().tensor_type().has_shape())
      return;
    for (auto &D : *VI.mutable_type()->mutable_tensor_type()->mutable_shape()
                        ->mutable_dim())
      for (const auto &[Name, Value] : Opts.Dims)
        if (D.has_dim_param() && D.dim_param() == Name)
          D.set_dim_value(Value);
  };
  forEachBody(N, [&](onnx::GraphProto &Body) {
    for (auto &VI : *Body.mutable_input())
      Set(VI);
    for (auto &VI : *Body.mutable_output())
      Set(VI);
    for (auto &VI : *Body.mutable_value_info())
      Set(VI);
    for (onnx::NodeProto &Inner : *Body.mutable_node())
      setNamedDims(Inner);
  });
}

/// Whether \p VI is a graph input with a tensor shape, not a weight.
bool ONNXImporter::isShapedDataInput(const onnx::ValueInfoProto &VI) const {
  return !WeightNames.contains(VI.name()) && VI.type().has_tensor_type() &&
         VI.type().tensor_type().has_shape();
}

ONNXImporter::DeclaredShapes ONNXImporter::getOverriddenInputShapes() const {
  DeclaredShapes OwnShapes;
  for (const onnx::ValueInfoProto &VI : Model->graph().input()) {
    if (WeightNames.contains(VI.name()) || !VI.type().has_tensor_type() ||
        none_of(Opts.Shapes,
                [&](const auto &S) { return S.first == VI.name(); }))
      continue;
    const auto &TT = VI.type().tensor_type();
    OwnShapes[VI.name()] =
        TT.has_shape() ? Optional<onnx::TensorShapeProto>(TT.shape()) : None;
  }
  return OwnShapes;
}

void ONNXImporter::applyDimOverrides() {
  onnx::GraphProto &G = *Model->mutable_graph();
  // batch=N means the inputs' symbolic dimension 0 if any input has one
  // (a model exported with a dynamic batch), else dimension 0 of every
  // input (a model exported with a fixed batch).
  bool AnySymbolicBatch = any_of(G.input(), [&](const auto &VI) {
    if (!isShapedDataInput(VI) ||
        VI.type().tensor_type().shape().dim_size() == 0)
      return false;
    return !VI.type().tensor_type().shape().dim(0).has_dim_value();
  });
  StringSet<> UsedDims;
  for (onnx::ValueInfoProto &VI : *G.mutable_input()) {
    if (!isShapedDataInput(VI))
      continue;
    auto *Shape = VI.mutable_type()->mutable_tensor_type()->mutable_shape();
    for (int I = 0, E = Shape->dim_size(); I != E; ++I) {
      auto *D = Shape->mutable_dim(I);
      for (const auto &[Name, Value] : Opts.Dims) {
        if (D->has_dim_param() && D->dim_param() == Name) {
          D->set_dim_value(Value);
          UsedDims.insert(Name);
        }
      }
      if (I == 0 && Opts.Batch && (!AnySymbolicBatch || !D->has_dim_value()))
        D->set_dim_value(*Opts.Batch);
    }
  }
  // Control-flow bodies name the same dimensions in their own inputs and
  // outputs (an If's branches, a Loop's body): they take the sizes too.
  if (!Opts.Dims.empty())
    for (onnx::NodeProto &N : *G.mutable_node())
      setNamedDims(N);
  for (const auto &KV : Opts.Dims)
    if (!UsedDims.contains(KV.first))
      addError(makeError("import-onnx: no graph input has a dimension named '" +
                         KV.first + "'"));
}

void ONNXImporter::applyShapeOverrides(const DeclaredShapes &OwnShapes) {
  onnx::GraphProto &G = *Model->mutable_graph();
  for (const auto &[Name, Dims] : Opts.Shapes) {
    auto Own = OwnShapes.find(Name);
    if (Own == OwnShapes.end()) {
      addError(makeError("import-onnx: shape=" + Name +
                         ": the model has no graph input named '" + Name +
                         "'"));
      continue;
    }
    // An input declared without a shape takes any rank.
    const Optional<onnx::TensorShapeProto> &Declared = Own->second;
    if (Declared && Declared->dim_size() != int(Dims.size())) {
      addError(makeTensorError("", Name,
                               "import-onnx{shape=}: the input has rank " +
                                   Twine(Declared->dim_size()) +
                                   ", the shape gives " + Twine(Dims.size()) +
                                   " dimensions"));
      continue;
    }
    bool OK = true;
    for (int I = 0; Declared && I != Declared->dim_size(); ++I)
      if (Declared->dim(I).has_dim_value() &&
          Declared->dim(I).dim_value() != Dims[I]) {
        addError(makeTensorError(
            "", Name,
            "import-onnx{shape=}: dimension " + Twine(I) + " is " +
                Twine(Declared->dim(I).dim_value()) + " in the model, not " +
                Twine(Dims[I])));
        OK = false;
      }
    if (!OK)
      continue;
    for (onnx::ValueInfoProto &VI : *G.mutable_input()) {
      if (VI.name() != Name)
        continue;
      auto *Shape = VI.mutable_type()->mutable_tensor_type()->mutable_shape();
      Shape->clear_dim();
      for (int64_t D : Dims)
        Shape->add_dim()->set_dim_value(D);
    }
  }
}

/// The int64 values of a 1-D tensor stored in the model, or None.
static Optional<std::vector<int64_t>> readInt64s(const onnx::TensorProto &T) {
  if (T.data_type() != onnx::TensorProto::INT64 || T.dims_size() != 1 ||
      T.data_location() == onnx::TensorProto::EXTERNAL)
    return None;
  std::vector<int64_t> V(T.dims(0));
  if (T.has_raw_data()) {
    if (T.raw_data().size() != V.size() * sizeof(int64_t))
      return None;
    std::memcpy(V.data(), T.raw_data().data(), T.raw_data().size());
  } else if (size_t(T.int64_data_size()) == V.size()) {
    std::copy(T.int64_data().begin(), T.int64_data().end(), V.begin());
  } else {
    return None;
  }
  return V;
}

static void writeInt64s(onnx::TensorProto &T, ArrayRef<int64_t> V) {
  if (T.has_raw_data())
    T.set_raw_data(std::string(reinterpret_cast<const char *>(V.data()),
                               V.size() * sizeof(int64_t)));
  else
    for (size_t I = 0; I != V.size(); ++I)
      T.set_int64_data(I, V[I]);
}

void relaxShapeConstants(onnx::ModelProto &Model) {
  // A model exported at a fixed batch often has it in Reshape's shape
  // operand ([24, 384, 12, 64] for the [24, 384, 768] it reads). Where a
  // size there equals the input's size at the same position, 0 (copy that
  // size) is the same reshape at the exported shapes, and follows a new
  // batch; in Expand's shape, 1 (keep the input's size) does the same.
  // A constant changes, in the working copy of the model, only when every
  // reader is such a Reshape or Expand and all agree on the new values.
  onnx::GraphProto &G = *Model.mutable_graph();
  bool Any = any_of(G.node(), [](const onnx::NodeProto &N) {
    return (N.op_type() == "Reshape" || N.op_type() == "Expand") &&
           N.domain().empty();
  });
  if (!Any)
    return;
  onnx::ModelProto Exported(Model);
  try {
    onnx::ShapeInferenceOptions Options(/*check_type_val=*/false,
                                        /*strict_mode_val=*/0,
                                        /*data_prop_val=*/true);
    if (runCatchingCrash([&] {
          onnx::shape_inference::InferShapes(
              Exported, onnx::OpSchemaRegistry::Instance(), Options);
        }))
      return;
  } catch (const std::exception &) {
    return; // The import reports what is wrong with the model later.
  }
  StringMap<std::vector<int64_t>> Sizes;
  auto Record = [&](const onnx::ValueInfoProto &VI) {
    if (!VI.type().has_tensor_type() || !VI.type().tensor_type().has_shape())
      return;
    std::vector<int64_t> Dims;
    for (const auto &D : VI.type().tensor_type().shape().dim()) {
      if (!D.has_dim_value())
        return;
      Dims.push_back(D.dim_value());
    }
    Sizes[VI.name()] = std::move(Dims);
  };
  for (const auto &VI : Exported.graph().input())
    Record(VI);
  for (const auto &VI : Exported.graph().value_info())
    Record(VI);
  StringMap<onnx::TensorProto *> Constants;
  for (onnx::TensorProto &T : *G.mutable_initializer())
    Constants[T.name()] = &T;
  for (onnx::NodeProto &N : *G.mutable_node())
    if (N.op_type() == "Constant" && N.domain().empty() && N.output_size() == 1)
      for (onnx::AttributeProto &A : *N.mutable_attribute())
        if (A.name() == "value" && A.has_t())
          Constants[N.output(0)] = A.mutable_t();
  // What each reader of a constant shape would make of it; None where a
  // reader is not a Reshape or Expand whose input sizes are known.
  StringMap<Optional<std::vector<int64_t>>> Relaxed;
  for (const onnx::NodeProto &N : G.node()) {
    for (int I = 0, E = N.input_size(); I != E; ++I) {
      const std::string &Name = N.input(I);
      onnx::TensorProto *T = Constants.lookup(Name);
      if (!T)
        continue;
      bool Reshape = N.op_type() == "Reshape" && I == 1 &&
                     none_of(N.attribute(), [](const onnx::AttributeProto &A) {
                       return A.name() == "allowzero" && A.i() != 0;
                     });
      bool Expand = N.op_type() == "Expand" && I == 1;
      auto In = Sizes.find(N.input(0));
      Optional<std::vector<int64_t>> Shape = readInt64s(*T);
      Optional<std::vector<int64_t>> Mine;
      if (N.domain().empty() && (Reshape || Expand) && In != Sizes.end() &&
          Shape) {
        // Reshape: 0 copies the input's size at the same position.
        // Expand: 1 keeps the input's size (right-aligned broadcasting).
        ArrayRef<int64_t> Dims = In->second;
        size_t Offset = Expand && Shape->size() > Dims.size()
                            ? Shape->size() - Dims.size()
                            : 0;
        Mine = Shape;
        for (size_t P = Offset; P < Shape->size(); ++P) {
          size_t D = Expand ? P - Offset : P;
          if (D < Dims.size() && (*Shape)[P] > 1 && (*Shape)[P] == Dims[D])
            (*Mine)[P] = Reshape ? 0 : 1;
        }
      }
      auto [It, New] = Relaxed.try_emplace(Name, Mine);
      if (!New && It->second != Mine)
        It->second = None; // Readers disagree: leave it.
    }
  }
  for (auto &KV : Relaxed)
    if (KV.second)
      writeInt64s(*Constants.lookup(KV.first()), *KV.second);
}

void ONNXImporter::splitBatch() {
  onnx::GraphProto &G = *Model->mutable_graph();
  // Each replica runs its share of the batch, micro-batch by micro-batch.
  int64_t M = Opts.MicroBatches * Opts.Replicas;
  std::string Who =
      Opts.Replicas == 1
          ? "import-onnx{microbatches=" + std::to_string(M) + "}"
          : "import-onnx{microbatches=" + std::to_string(Opts.MicroBatches) +
                ",replicas=" + std::to_string(Opts.Replicas) + "}";
  std::string Parts = Opts.Replicas == 1
                          ? std::to_string(M) + " micro-batches"
                          : std::to_string(Opts.Replicas) + " replicas of " +
                                std::to_string(Opts.MicroBatches) +
                                " micro-batch" +
                                (Opts.MicroBatches == 1 ? "" : "es");
  StringSet<> Named;
  for (onnx::ValueInfoProto &VI : *G.mutable_input()) {
    if (!isShapedDataInput(VI))
      continue;
    int64_t Axis = 0;
    bool Given = false;
    for (const auto &[Name, A] : Opts.BatchAxes)
      if (Name == VI.name()) {
        Axis = A;
        Given = true;
        Named.insert(Name);
      }
    auto *Shape = VI.mutable_type()->mutable_tensor_type()->mutable_shape();
    // A scalar has no batch: every micro-batch reads it whole.
    if (Shape->dim_size() == 0 && !Given)
      continue;
    if (Axis >= Shape->dim_size()) {
      addError(makeTensorError("", VI.name(),
                               "import-onnx{batch-axis=}: the input has rank " +
                                   Twine(Shape->dim_size()) + ", no axis " +
                                   Twine(Axis)));
      continue;
    }
    if (M == 1)
      continue;
    SplitAxes.emplace_back(VI.name(), Axis);
    auto *D = Shape->mutable_dim(Axis);
    if (!D->has_dim_value()) {
      addError(makeTensorError(
          "", VI.name(),
          Who + ": its batch axis " + Twine(Axis) +
              " is symbolic; give the global batch (batch=N, dim= or "
              "shape=)"));
      continue;
    }
    int64_t B = D->dim_value();
    if (B % M) {
      addError(makeTensorError(
          "", VI.name(),
          Who + ": its batch axis " + Twine(Axis) + " has " + Twine(B) +
              ", which " + Parts + " do not divide" +
              (Given ? ""
                     : " (batch-axis=" + VI.name() + ":N names another)")));
      continue;
    }
    D->set_dim_value(B / M);
  }
  for (const auto &KV : Opts.BatchAxes)
    if (!Named.contains(KV.first))
      addError(makeError("import-onnx{batch-axis=}: the model has no data "
                         "input named '" +
                         KV.first + "'"));
}

void ONNXImporter::bindValues() {
  const onnx::GraphProto &G = Model->graph();
  for (const auto &[Name, Text] : Opts.Values) {
    const onnx::ValueInfoProto *Input = nullptr;
    for (const onnx::ValueInfoProto &VI : G.input())
      if (VI.name() == Name && !WeightNames.contains(VI.name()))
        Input = &VI;
    if (!Input) {
      addError(makeError("import-onnx: value=" + Name +
                         ": the model has no graph input named '" + Name +
                         "'"));
      continue;
    }
    std::vector<int64_t> Dims;
    const auto &TT = Input->type().tensor_type();
    bool Static = Input->type().has_tensor_type() && TT.has_shape();
    for (int I = 0; Static && I != TT.shape().dim_size(); ++I) {
      Static = TT.shape().dim(I).has_dim_value();
      Dims.push_back(Static ? TT.shape().dim(I).dim_value() : 0);
    }
    if (!Static) {
      addError(makeTensorError("", Name,
                               "import-onnx{value=}: the input's shape is "
                               "not known; give it with shape=" +
                                   Name + ":..."));
      continue;
    }
    Expected<FoldValue> V = parseFoldValue(TT.elem_type(), Dims, Text);
    if (!V) {
      addError(makeTensorError("", Name,
                               "import-onnx{value=}: cannot bind the input: " +
                                   toString(V.takeError())));
      continue;
    }
    BoundValues.emplace_back(Name, std::move(*V));
  }
}

void forgetRecordedShapes(onnx::GraphProto &G) {
  G.clear_value_info();
  for (onnx::ValueInfoProto &VI : *G.mutable_output()) {
    if (!VI.type().has_tensor_type() || !VI.type().tensor_type().has_shape())
      continue;
    // The checker wants a shape on graph outputs: keep the rank, forget
    // the sizes.
    auto *Shape = VI.mutable_type()->mutable_tensor_type()->mutable_shape();
    for (auto &D : *Shape->mutable_dim())
      D.Clear();
  }
}

Error ONNXImporter::applyOverrides() {
  if (Opts.empty())
    return Error::success();
  // shape= is checked against the model's own dimensions, before batch=
  // and the named dimensions change them.
  DeclaredShapes OwnShapes = getOverriddenInputShapes();
  if (Opts.Batch || Opts.MicroBatches > 1 || Opts.Replicas > 1)
    relaxShapeConstants(*Model);
  applyDimOverrides();
  applyShapeOverrides(OwnShapes);
  splitBatch();
  bindValues();
  forgetRecordedShapes(*Model->mutable_graph());
  return takeErrors();
}

static bool hasSubgraphs(const onnx::NodeProto &N) {
  return any_of(N.attribute(), [](const onnx::AttributeProto &A) {
    return A.has_g() || A.graphs_size();
  });
}

std::vector<std::string> getONNXNodeNames(const onnx::GraphProto &G) {
  int NumNodes = G.node_size();
  // How often each explicit name occurs; names point into the model.
  DenseMap<StringRef, unsigned> Explicit;
  Explicit.reserve(NumNodes);
  for (const onnx::NodeProto &N : G.node())
    if (!N.name().empty())
      ++Explicit[N.name()];

  // Unique explicit names stay; other nodes get "<OpType>_<index>" (or
  // "<name>.<k>" for a repeated name), never taking an explicit name.
  BumpPtrAllocator Alloc;
  StringSaver Saver(Alloc);
  DenseSet<StringRef> Taken;
  Taken.reserve(NumNodes);
  std::vector<std::string> Names(NumNodes);
  for (int I = 0; I != NumNodes; ++I) {
    const std::string &N = G.node(I).name();
    if (!N.empty() && Explicit.lookup(N) == 1) {
      Taken.insert(N);
      Names[I] = N;
    }
  }
  for (int I = 0; I != NumNodes; ++I) {
    const onnx::NodeProto &N = G.node(I);
    if (!N.name().empty() && Explicit.lookup(N.name()) == 1)
      continue;
    std::string Base = N.name();
    if (Base.empty())
      Base = (N.op_type().empty() ? std::string("node") : N.op_type()) + "_" +
             std::to_string(I);
    // A node may take its own (repeated) name, never one another node
    // was given in the model.
    std::string Name = Base;
    for (unsigned Suffix = 1;
         Taken.contains(Name) || (Name != N.name() && Explicit.count(Name));
         ++Suffix)
      Name = Base + "." + std::to_string(Suffix);
    Names[I] = std::move(Name);
    Taken.insert(Saver.save(Names[I]));
  }
  return Names;
}

void ONNXImporter::computeNodeNames() {
  onnx::GraphProto &G = *Model->mutable_graph();
  int NumNodes = G.node_size();
  std::vector<std::string> NewNames = getONNXNodeNames(G);
  // The working copy carries the unique names from here on, so that the
  // checker's and shape inference's messages name every node.
  SourceNames.assign(NumNodes, "");
  RenamedNodes.assign(NumNodes, false);
  for (int I = 0; I != NumNodes; ++I) {
    onnx::NodeProto &N = *G.mutable_node(I);
    if (NewNames[I] == N.name())
      continue;
    RenamedNodes[I] = true;
    SourceNames[I] = N.name();
    N.set_name(std::move(NewNames[I]));
  }
}

void ONNXImporter::dropEmptyConcatInputs() {
  ShortenedConcats = dp::dropEmptyConcatInputs(*Model->mutable_graph(), &Notes);
}

void ONNXImporter::rewriteNodes() {
  onnx::GraphProto &G = *Model->mutable_graph();
  NodeOrigins.assign(G.node_size(), "");
  if (Decided.empty() && getDefaultOpset(*Model) <= MaxLibONNXOpset)
    return; // Nothing to inline or expand.
  // The user's nodes are told apart from the new ones by their origin
  // (empty), and keep their tables by name.
  StringMap<std::string> Sources;
  for (int I = 0, E = G.node_size(); I != E; ++I)
    if (RenamedNodes[I])
      Sources[G.node(I).name()] = SourceNames[I];
  int Inlined = inlineDecidedBranches(G, Decided, &NodeOrigins);
  Expansions Expanded;
  Expanded.Origins = std::move(NodeOrigins);
  expandNewOps(*Model, &Expanded);
  NodeOrigins = std::move(Expanded.Origins);
  ExpandedNodes = std::move(Expanded.Originals);
  if (!Inlined && ExpandedNodes.empty())
    return;

  int NumNodes = G.node_size();
  SourceNames.assign(NumNodes, "");
  RenamedNodes.assign(NumNodes, false);
  StringSet<> Taken;
  for (int I = 0; I != NumNodes; ++I) {
    const onnx::NodeProto &N = G.node(I);
    if (!NodeOrigins[I].empty())
      continue;
    Taken.insert(N.name());
    auto It = Sources.find(N.name());
    if (It != Sources.end()) {
      RenamedNodes[I] = true;
      SourceNames[I] = It->second;
    }
  }
  // A new node keeps its name (an inlined branch's) when no other node has
  // it; otherwise, and when it has none, it is named after its origin.
  for (int I = 0; I != NumNodes; ++I) {
    if (NodeOrigins[I].empty())
      continue;
    onnx::NodeProto &N = *G.mutable_node(I);
    // The last node of an expansion is the user's op.
    auto Original =
        N.output_size() ? ExpandedNodes.find(N.output(0)) : ExpandedNodes.end();
    StringRef Op = Original == ExpandedNodes.end()
                       ? StringRef(N.op_type())
                       : StringRef(Original->second.op_type());
    std::string Base = N.name().empty() ? NodeOrigins[I] + "/" + Op.str() +
                                              "_" + std::to_string(I)
                                        : N.name();
    std::string Name = Base;
    for (unsigned Suffix = 1; Taken.contains(Name); ++Suffix)
      Name = Base + "." + std::to_string(Suffix);
    Taken.insert(Name);
    if (Expanded.Helpers[I])
      ExpansionHelpers.insert(Name);
    if (Name == N.name())
      continue;
    RenamedNodes[I] = true;
    SourceNames[I] = N.name();
    N.set_name(std::move(Name));
  }
}

Error ONNXImporter::findProducers(ProducerMap &Producer) {
  const onnx::GraphProto &G = Model->graph();
  int NumNodes = G.node_size();
  Producer.reserve(G.input_size() + Weights.size() + NumNodes);
  for (const auto &VI : G.input())
    Producer[VI.name()] = -1;
  for (const WeightInfo &W : Weights)
    Producer[W.Name] = -1;
  for (int I = 0; I != NumNodes; ++I) {
    for (const std::string &Out : G.node(I).output()) {
      if (Out.empty())
        continue;
      auto [It, Inserted] = Producer.try_emplace(Out, I);
      if (Inserted)
        continue;
      if (It->second < 0)
        addError(makeTensorError(nodeName(I), Out,
                                 "node output has the name of a graph input "
                                 "or weight"));
      else
        addError(makeTensorError(nodeName(I), Out,
                                 "tensor is produced twice (also by node '" +
                                     nodeName(It->second) + "')"));
    }
  }
  return takeErrors();
}

Error ONNXImporter::collectDependencies(const ProducerMap &Producer,
                                        std::vector<std::pair<int, int>> &Edges,
                                        std::vector<unsigned> &Pending) {
  const onnx::GraphProto &G = Model->graph();
  int NumNodes = G.node_size();
  ImplicitInputs.assign(NumNodes, {});
  Edges.reserve(NumNodes * 2);
  Pending.assign(NumNodes, 0);
  auto AddDep = [&](int I, StringRef In) {
    auto It = Producer.find(In);
    if (It == Producer.end())
      return false;
    if (It->second >= 0) {
      Edges.emplace_back(It->second, I);
      ++Pending[I];
    }
    return true;
  };
  for (int I = 0; I != NumNodes; ++I) {
    const onnx::NodeProto &N = G.node(I);
    for (const std::string &In : N.input())
      if (!In.empty() && !AddDep(I, In))
        addError(makeTensorError(nodeName(I), In,
                                 "no node, graph input or weight produces "
                                 "this tensor"));
    if (!hasSubgraphs(N))
      continue;
    NameSet Seen;
    for (const std::string &In : N.input())
      Seen.insert(In);
    std::vector<StringRef> Reads;
    for (const onnx::AttributeProto &A : N.attribute()) {
      if (A.has_g())
        collectOuterReads(A.g(), Reads, Seen, {});
      for (const auto &Sub : A.graphs())
        collectOuterReads(Sub, Reads, Seen, {});
    }
    // A name defined in no scope tracked here is left to the checker.
    for (StringRef In : Reads)
      if (AddDep(I, In))
        ImplicitInputs[I].push_back(In);
  }
  // The checker lets a graph output that nothing produces through.
  for (const auto &VI : G.output())
    if (!Producer.count(VI.name()))
      addError(makeTensorError("", VI.name(),
                               "graph output that no node, graph input or "
                               "weight produces"));
  return takeErrors();
}

/// Kahn's algorithm over \p NumNodes nodes with the (producer, user)
/// \p Edges, always taking the ready node that comes first in the file, so
/// that a sorted model keeps its order. In a sorted model the next node is
/// almost always the smallest ready one. Leaves in \p Pending the count of
/// unsorted producers of the nodes left out (on a cycle or after one).
static std::vector<int>
sortTopologically(int NumNodes, std::vector<std::pair<int, int>> Edges,
                  std::vector<unsigned> &Pending) {
  llvm::sort(Edges);
  std::vector<unsigned> FirstEdge(NumNodes + 1, 0);
  for (const auto &E : Edges)
    ++FirstEdge[E.first + 1];
  for (int I = 0; I != NumNodes; ++I)
    FirstEdge[I + 1] += FirstEdge[I];

  std::priority_queue<int, std::vector<int>, std::greater<int>> Ready;
  for (int I = 0; I != NumNodes; ++I)
    if (!Pending[I])
      Ready.push(I);
  std::vector<int> Order;
  Order.reserve(NumNodes);
  while (!Ready.empty()) {
    int I = Ready.top();
    Ready.pop();
    Order.push_back(I);
    for (unsigned E = FirstEdge[I]; E != FirstEdge[I + 1]; ++E)
      if (--Pending[Edges[E].second] == 0)
        Ready.push(Edges[E].second);
  }
  return Order;
}

// Every node left is on a cycle or after one; walk back along pending
// producers from the first to find a cycle and name it.
Error ONNXImporter::makeCycleError(const ProducerMap &Producer,
                                   ArrayRef<unsigned> Pending) const {
  int Start = 0;
  while (!Pending[Start])
    ++Start;
  std::vector<int> Path;
  DenseMap<int, unsigned> PosInPath;
  int Cur = Start;
  while (!PosInPath.count(Cur)) {
    PosInPath[Cur] = Path.size();
    Path.push_back(Cur);
    int Next = -1;
    auto Consider = [&](StringRef In) {
      auto It = Producer.find(In);
      if (Next < 0 && It != Producer.end() && It->second >= 0 &&
          Pending[It->second])
        Next = It->second;
    };
    for (const std::string &In : Model->graph().node(Cur).input())
      Consider(In);
    for (StringRef In : ImplicitInputs[Cur])
      Consider(In);
    assert(Next >= 0 && "a pending node has a pending producer");
    Cur = Next;
  }
  std::string Cycle;
  raw_string_ostream OS(Cycle);
  // Path[PosInPath[Cur]..] is the cycle, walked against the dataflow.
  for (size_t I = Path.size(); I-- > PosInPath[Cur];)
    OS << "'" << nodeName(Path[I]) << "' -> ";
  OS << "'" << nodeName(Path.back()) << "'";
  return makeNodeError(nodeName(Cur), "the graph has a cycle: " + OS.str());
}

// Permutes the node pointers (no copies) and the per-node tables.
void ONNXImporter::permuteNodes(ArrayRef<int> Order) {
  onnx::GraphProto &G = *Model->mutable_graph();
  int NumNodes = G.node_size();
  std::vector<onnx::NodeProto *> Nodes(NumNodes);
  std::vector<std::string> Sources(NumNodes);
  std::vector<std::vector<StringRef>> Implicit(NumNodes);
  std::vector<bool> Renamed(NumNodes);
  std::vector<std::string> Origins(NumNodes);
  for (int I = 0; I != NumNodes; ++I) {
    Nodes[I] = G.mutable_node(Order[I]);
    Sources[I] = std::move(SourceNames[Order[I]]);
    Implicit[I] = std::move(ImplicitInputs[Order[I]]);
    Renamed[I] = RenamedNodes[Order[I]];
    Origins[I] = std::move(NodeOrigins[Order[I]]);
  }
  auto Ptrs = G.mutable_node()->pointer_begin();
  for (int I = 0; I != NumNodes; ++I)
    Ptrs[I] = Nodes[I];
  SourceNames = std::move(Sources);
  ImplicitInputs = std::move(Implicit);
  RenamedNodes = std::move(Renamed);
  NodeOrigins = std::move(Origins);
}

Error ONNXImporter::sortNodes() {
  int NumNodes = Model->graph().node_size();
  // Where each tensor comes from: -1 for graph inputs and weights.
  ProducerMap Producer;
  if (Error E = findProducers(Producer))
    return E;
  // Dependencies, counting tensors that subgraphs read from this scope.
  std::vector<std::pair<int, int>> Edges; // (producer, user)
  std::vector<unsigned> Pending;
  if (Error E = collectDependencies(Producer, Edges, Pending))
    return E;
  // Exporters write nodes in dataflow order: then there is nothing to sort.
  if (all_of(Edges, [](const auto &E) { return E.first < E.second; }))
    return Error::success();
  std::vector<int> Order =
      sortTopologically(NumNodes, std::move(Edges), Pending);
  if (int(Order.size()) != NumNodes)
    return makeCycleError(Producer, Pending);

  bool Sorted = true;
  for (int I = 0; I != NumNodes; ++I)
    Sorted &= Order[I] == I;
  if (!Sorted)
    permuteNodes(Order);
  return Error::success();
}

std::string ONNXImporter::findNodeInMessage(StringRef Msg) const {
  // The checker says "... node. Name: X OpType: Y"; inference says
  // "(op_type:Y, node name: X)". Node names in the working copy are the
  // unique dp names.
  static const std::regex Checker(R"(Name: (.*) OpType: )");
  static const std::regex Inference(R"(node name: ([^)]*)\))");
  std::string S = Msg.str();
  std::smatch M;
  if (std::regex_search(S, M, Checker) || std::regex_search(S, M, Inference))
    return M[1];
  return {};
}

/// Shortens an ONNX checker or inference message to its first line, without
/// the bracketed categories, the node location (reported separately) and
/// the context ONNX appends.
static std::string cleanONNXMessage(StringRef Msg) {
  static const std::regex Noise(
      R"(\[[A-Za-z]+Error\] *|Shape inference error\(s\): *|)"
      R"(\(op_type:[^)]*\): *)");
  std::string First = Msg.split('\n').first.trim().str();
  std::string Out = std::regex_replace(First, Noise, "");
  Out = StringRef(Out).trim().rtrim('.').str();
  if (Out.size() > 1 && isupper(Out[0]) && !isupper(Out[1]))
    Out[0] = toLower(Out[0]);
  return Out;
}

Error ONNXImporter::runChecker() {
  try {
    if (int Signal =
            runCatchingCrash([&] { onnx::checker::check_model(*Model); }))
      return makeFileError(Buffer.getBufferIdentifier(), 0, 0,
                           describeCrash("checker", Signal) +
                               " on this model");
  } catch (const std::exception &E) {
    std::string Node = findNodeInMessage(E.what());
    std::string Msg = "the ONNX checker rejects the model: " +
                      cleanONNXMessage(E.what());
    if (Node.empty())
      return makeFileError(Buffer.getBufferIdentifier(), 0, 0, Msg);
    return makeNodeError(Node, Msg);
  }
  return Error::success();
}

/// Prints \p Shape as [D0,D1,...], a symbolic dimension by its name and an
/// unknown one as '?'.
static void printShape(raw_ostream &OS, const onnx::TensorShapeProto &Shape) {
  OS << "[";
  ListSeparator Comma(",");
  for (const auto &D : Shape.dim()) {
    OS << Comma;
    if (D.has_dim_value())
      OS << D.dim_value();
    else
      OS << (D.dim_param().empty() ? "?" : D.dim_param());
  }
  OS << "]";
}

void ONNXImporter::forgetStaleShapes() {
  forgetShapesComputedFrom(*Model->mutable_graph(), ShortenedConcats, &Notes);
}

std::string ONNXImporter::describeInputShapes(StringRef NodeName) const {
  const onnx::GraphProto &G = Model->graph();
  const onnx::NodeProto *N = nullptr;
  for (const onnx::NodeProto &Candidate : G.node())
    if (Candidate.name() == NodeName)
      N = &Candidate;
  if (!N)
    return "";
  StringMap<const onnx::TypeProto *> Types = getDeclaredTypes(G);
  std::string Out;
  raw_string_ostream OS(Out);
  ListSeparator LS(", ");
  for (const std::string &In : N->input()) {
    const onnx::TypeProto *T = In.empty() ? nullptr : Types.lookup(In);
    if (!T || !T->has_tensor_type() || !T->tensor_type().has_shape())
      continue;
    OS << LS << "'" << In << "' is ";
    printShape(OS, T->tensor_type().shape());
  }
  return Out.empty() ? "" : " (" + Out + ")";
}

Error ONNXImporter::runShapeInference() {
  try {
    onnx::ShapeInferenceOptions Options(/*check_type_val=*/true,
                                        /*strict_mode_val=*/1,
                                        /*data_prop_val=*/true);
    GuardedSchemaRegistry Schemas;
    // Each node's inference is guarded on its own (runGuarded), with the
    // node in the error; this catches a crash anywhere else in it.
    if (int Signal = runCatchingCrash([&] {
          onnx::shape_inference::InferShapes(*Model, &Schemas, Options);
        }))
      return makeFileError(Buffer.getBufferIdentifier(), 0, 0,
                           "shape inference failed: " +
                               describeCrash("shape inference", Signal) +
                               " on this model");
  } catch (const std::exception &E) {
    std::string Node = findNodeInMessage(E.what());
    std::string Msg = "shape inference failed: " + cleanONNXMessage(E.what());
    if (Node.empty())
      return makeFileError(Buffer.getBufferIdentifier(), 0, 0, Msg);
    // libonnx's broadcasting error names no shape: name the inputs'.
    if (StringRef(Msg).contains_insensitive("incompatible dimensions"))
      Msg += describeInputShapes(Node);
    return makeNodeError(Node, Msg);
  }
  return Error::success();
}

Error ONNXImporter::foldShapes() {
  // A model that imports no default-domain opset has none of its ops.
  int Opset = std::max(getDefaultOpset(*Model), 1);
  Folder = std::make_unique<ShapeFolder>(*Model->mutable_graph(), Opset);
  for (StringRef Name : Placeholders)
    Folder->markUnknown(Name);
  for (auto &[Name, V] : BoundValues)
    Folder->bind(Name, std::move(V));
  // Each round folds what the last round's shapes allow, and gives Loops
  // the result shapes their bodies keep; a round that finds nothing new
  // for an unfinished node ends it.
  StringSet<> LoopsDone;
  while (true) {
    Expected<bool> More = Folder->run();
    if (!More)
      return More.takeError();
    int LoopResults = inferLoopResults(LoopsDone);
    // Bounds go in once nothing else settles a shape: a dimension unknown
    // in an early round (NonZero's first, the rank of what it reads) may
    // fold later.
    if (!*More && !LoopResults && (Opts.Bounds.empty() || !applyBounds()))
      break;
    if (Error E = runShapeInference())
      return E;
  }
  Folder->finish();
  return checkBounds();
}

/// Whether \p D is a dimension that shape inference found to depend on
/// tensor values: it names them "unk__<n>".
static bool isValueDependent(const onnx::TensorShapeProto::Dimension &D) {
  return !D.has_dim_value() && D.has_dim_param() &&
         StringRef(D.dim_param()).startswith("unk__");
}

bool ONNXImporter::applyBounds() {
  onnx::GraphProto &G = *Model->mutable_graph();
  StringMap<int64_t> Bounds;
  for (const auto &[Name, N] : Opts.Bounds)
    Bounds[Name] = N;
  // Only the named tensors' own dimensions: shape inference numbers its
  // "unk__<n>" afresh in every round, so the same name in another tensor
  // may be another dimension. The next round carries the bound on to what
  // is computed from them.
  bool Changed = false;
  auto Rewrite = [&](onnx::ValueInfoProto &VI) {
    auto It = Bounds.find(VI.name());
    if (It == Bounds.end() || !VI.type().has_tensor_type() ||
        !VI.type().tensor_type().has_shape())
      return;
    for (auto &D : *VI.mutable_type()
                        ->mutable_tensor_type()
                        ->mutable_shape()
                        ->mutable_dim())
      if (isValueDependent(D)) {
        D.set_dim_value(It->second);
        BoundTensors.insert(VI.name());
        Changed = true;
      }
  };
  for (onnx::ValueInfoProto &VI : *G.mutable_value_info())
    Rewrite(VI);
  for (onnx::ValueInfoProto &VI : *G.mutable_output())
    Rewrite(VI);
  return Changed;
}

Error ONNXImporter::checkBounds() {
  StringMap<const onnx::TypeProto *> Types = getDeclaredTypes(Model->graph());
  for (const auto &[Name, N] : Opts.Bounds) {
    if (BoundTensors.contains(Name))
      continue;
    addError(makeFileError(
        Buffer.getBufferIdentifier(), 0, 0,
        "import-onnx{bound=" + Name + ":" + Twine(N) + "}: " +
            (Types.lookup(Name)
                 ? "tensor '" + Name +
                       "' has no dimension that depends on tensor values"
                 : "the model has no tensor '" + Name + "'")));
  }
  return takeErrors();
}

int ONNXImporter::inferLoopResults(StringSet<> &Done) {
  onnx::GraphProto &G = *Model->mutable_graph();
  if (none_of(G.node(),
              [](const onnx::NodeProto &N) { return N.op_type() == "Loop"; }))
    return 0;
  StringMap<const onnx::TypeProto *> Types = getDeclaredTypes(G);
  auto TypeOf = [&](StringRef Name) { return Types.lookup(Name); };
  auto ValueOf = [&](StringRef Name) { return Folder->getValue(Name); };
  auto Infer = [&](onnx::ModelProto &Body) {
    try {
      onnx::ShapeInferenceOptions Options(/*check_type_val=*/true,
                                          /*strict_mode_val=*/1,
                                          /*data_prop_val=*/true);
      GuardedSchemaRegistry Schemas;
      return !runCatchingCrash(
          [&] { onnx::shape_inference::InferShapes(Body, &Schemas, Options); });
    } catch (const std::exception &) {
      return false; // The Loop keeps the error its results get.
    }
  };
  // (function_ref does not own: the lambdas live in this frame.)
  LoopShapeContext Ctx{TypeOf, ValueOf, Infer};
  return inferLoopShapes(*Model, Ctx, Done);
}

bool ONNXImporter::decideBranches() {
  bool Any = false;
  for (const onnx::NodeProto &N : Model->graph().node()) {
    StringRef Key = getBranchKey(N);
    const FoldValue *Cond =
        Key.empty() ? nullptr : Folder->getValue(N.input(0));
    if (Cond && Cond->getNumElements() == 1) {
      Decided[Key] = Cond->real(0) != 0;
      Any = true;
    }
  }
  return Any;
}

/// Describes why \p T is not a static tensor type, for an error message.
static std::string describeNonStatic(const onnx::TypeProto *TP,
                                     StringRef Name) {
  if (!TP)
    return "no type was inferred for this tensor";
  if (!TP->has_tensor_type())
    return "only tensors are supported, and this is " +
           std::string(TP->has_sequence_type()  ? "a sequence"
                       : TP->has_map_type()     ? "a map"
                       : TP->has_optional_type() ? "an optional"
                                                 : "a non-tensor value");
  const auto &TT = TP->tensor_type();
  if (!isValidDType(TT.elem_type()))
    return "the tensor has no known element type";
  if (!TT.has_shape())
    return "no shape was inferred for this tensor";
  // The symbolic dimensions, all of them: the user sets them in one go.
  SmallVector<std::pair<int, StringRef>, 4> Symbolic;
  for (int I = 0, E = TT.shape().dim_size(); I != E; ++I) {
    const auto &D = TT.shape().dim(I);
    if (D.has_dim_value() && D.dim_value() >= 0)
      continue;
    if (D.has_dim_value())
      return "dimension " + std::to_string(I) + " is negative (" +
             std::to_string(D.dim_value()) + ")";
    // Shape inference names the sizes it cannot know "unk__<n>": they
    // depend on tensor values, not on input dimensions that could be set.
    if (isValueDependent(D))
      return "dimension " + std::to_string(I) +
             " depends on tensor values that are only known when the model "
             "runs; give it an upper bound with import-onnx{bound=" +
             Name.str() +
             ":N} (a bound on the first such tensor carries "
             "on to those computed from it)";
    if (!D.has_dim_param())
      return "dimension " + std::to_string(I) +
             " is unknown after shape "
             "inference";
    Symbolic.emplace_back(I, D.dim_param());
  }
  if (Symbolic.empty())
    return "the shape is not static";
  std::string Which, Options;
  for (unsigned K = 0, N = Symbolic.size(); K != N; ++K) {
    Which += (K ? (K + 1 == N ? " and " : ", ") : "") +
             ("dimension " + Twine(Symbolic[K].first) + " ('" +
              Symbolic[K].second + "')")
                 .str();
    Options += (K ? "," : "") + ("dim=" + Symbolic[K].second + ":N").str();
  }
  // batch= sets dimension 0 only: offered for it alone.
  bool Batch = Symbolic.front().first == 0;
  return Which + (Symbolic.size() > 1 ? " are" : " is") + " symbolic; set " +
         (Symbolic.size() > 1 ? "them" : "it") + " with import-onnx{" +
         Options + "}" +
         (Batch ? Symbolic.size() > 1
                      ? " (batch=N sets dimension 0 of every input)"
                      : " or import-onnx{batch=N}"
                : "");
}

bool ONNXImporter::getStaticType(const ValueTypes &Types, StringRef Node,
                                 StringRef Name, TensorType &Out,
                                 StringRef Hint) {
  const onnx::TypeProto *TP = Types.lookup(Name);
  bool HasShape = false;
  if (TP && convertTypeProto(*TP, Out, &HasShape) && HasShape &&
      Out.DType != DTypeKind::Undefined && Out.isStatic()) {
    if (Out.getNumElements() &&
        (!getDTypeSize(Out.DType) || Out.getSizeInBytes()))
      return true;
    addError(makeTensorError(Node, Name,
                             "tensor size overflows a 64-bit byte count"));
    return false;
  }
  addError(makeTensorError(Node, Name, describeNonStatic(TP, Name) + Hint));
  return false;
}

void ONNXImporter::addInputsAndWeights(Graph &G, const ValueTypes &Types) {
  for (const auto &VI : Model->graph().input()) {
    if (WeightNames.contains(VI.name()))
      continue;
    TensorType T;
    if (getStaticType(Types, "", VI.name(), T) &&
        G.lookupTensor(VI.name()) == NoId)
      G.addInput(VI.name(), std::move(T));
  }
  for (const WeightInfo &W : Weights)
    if (G.lookupTensor(W.Name) == NoId)
      G.addWeight(W.Name, W.Type);
}

const onnx::NodeProto *ONNXImporter::getUserNode(int I) const {
  const onnx::NodeProto *Node = &Model->graph().node(I);
  if (ExpandedNodes.empty())
    return Node;
  if (ExpansionHelpers.contains(Node->name()))
    return nullptr;
  auto Expanded = Node->output_size() ? ExpandedNodes.find(Node->output(0))
                                      : ExpandedNodes.end();
  return Expanded != ExpandedNodes.end() ? &Expanded->second : Node;
}

void ONNXImporter::addNodeOp(Graph &G, const ValueTypes &Types, int I,
                             const onnx::NodeProto &N) {
  // The working copy's name (an expanded node's user node keeps it unless
  // it came from an inlined branch and was renamed).
  StringRef Name = Model->graph().node(I).name();
  bool Ok = true;
  SmallVector<TensorId, 8> Operands;
  for (const std::string &In : N.input()) {
    TensorId T = In.empty() ? NoId : G.lookupTensor(In);
    if (!In.empty() && T == NoId)
      Ok = false; // Its producer failed; that error is reported.
    Operands.push_back(T);
  }
  for (StringRef In : ImplicitInputs[I]) {
    TensorId T = G.lookupTensor(In);
    if (T == NoId)
      Ok = false;
    Operands.push_back(T);
  }
  SmallVector<Graph::ResultSpec, 4> Results;
  // An If left in the graph has a condition only known when the model
  // runs; its branches may give different shapes.
  StringRef Hint = getBranchKey(N).empty()
                       ? ""
                       : "; the If's condition is only known when the model "
                         "runs (bind an input it is computed from with "
                         "import-onnx{value=NAME:V} to take one branch)";
  for (const std::string &Out : N.output()) {
    Graph::ResultSpec R;
    R.Name = Out;
    if (!Out.empty() && !getStaticType(Types, Name, Out, R.Type, Hint))
      Ok = false;
    Results.push_back(std::move(R));
  }
  AttributeList Attrs;
  for (const onnx::AttributeProto &A : N.attribute()) {
    Expected<Attribute> V = convertAttribute(N, Name, A);
    if (!V) {
      addError(V.takeError());
      Ok = false;
      continue;
    }
    Attrs.set(A.name(), std::move(*V));
  }
  if (!Ok)
    return;
  StringRef Domain = N.domain() == "ai.onnx" ? StringRef() : N.domain();
  OpId Id =
      G.addOp(Name, Domain, N.op_type(), Operands, Results, std::move(Attrs));
  annotateNodeOp(G, Id, I, N);
}

void ONNXImporter::annotateNodeOp(Graph &G, OpId Id, int I,
                                  const onnx::NodeProto &N) {
  if (RenamedNodes[I])
    G.setSourceName(Id, SourceNames[I]);
  Op &O = G.getOp(Id);
  if (!NodeOrigins[I].empty())
    ann::set(O, ann::Node, StringRef(NodeOrigins[I]));
  if (!ImplicitInputs[I].empty())
    O.Annotations.set("implicit_operands",
                      Attribute::getInt(ImplicitInputs[I].size()));
  // A Loop's trip count, when folded, is the most iterations it runs.
  if (Folder && N.op_type() == "Loop" && N.input_size() && !N.input(0).empty())
    if (const FoldValue *M = Folder->getValue(N.input(0));
        M && M->getNumElements() == 1 && M->integer(0) >= 0)
      ann::set(O, ann::TripCount, M->integer(0));
  // An op whose every result was folded computes a shape: its value is
  // known before the step runs.
  if (Folder && N.output_size() &&
      all_of(N.output(), [&](const std::string &Out) {
        return Out.empty() || Folder->isFolded(Out);
      }))
    ann::set(O, ann::Folded, 1);
}

void ONNXImporter::addOutputs(Graph &G) {
  for (const auto &VI : Model->graph().output()) {
    TensorId T = G.lookupTensor(VI.name());
    if (T == NoId)
      continue; // Reported with its producer.
    if (is_contained(G.getOutputs(), T)) {
      addError(makeTensorError("", VI.name(), "tensor is a graph output twice"));
      continue;
    }
    G.addOutput(T);
  }
}

Expected<Graph> ONNXImporter::buildGraph() {
  const onnx::GraphProto &OG = Model->graph();
  Graph G;
  G.setName(OG.name().empty() ? "main" : OG.name());
  for (const auto &O : Model->opset_import())
    G.setOpset(O.domain() == "ai.onnx" ? "" : O.domain(), O.version());

  ValueTypes Types = getInferredTypes(OG);
  G.reserve(OG.node_size(), OG.input_size() + OG.node_size() * 2);
  addInputsAndWeights(G, Types);
  if (Error E = takeErrors())
    return std::move(E);

  for (int I = 0, E = OG.node_size(); I != E; ++I)
    // An expanded node is the user's op again, with the type of its
    // expansion's result; the expansion's helpers are not ops.
    if (const onnx::NodeProto *N = getUserNode(I))
      addNodeOp(G, Types, I, *N);
  addOutputs(G);
  if (Error E = takeErrors())
    return std::move(E);
  if (!SplitAxes.empty()) {
    std::string Axes;
    for (const auto &[Name, Axis] : SplitAxes)
      Axes += (Axes.empty() ? "" : ",") + Name + ":" + std::to_string(Axis);
    ann::set(G, ann::BatchAxes, Axes);
  }
  if (Error E = readPlacement(G))
    return std::move(E);
  return std::move(G);
}

Error ONNXImporter::readPlacement(Graph &G) {
  StringRef File = Buffer.getBufferIdentifier();
  for (const onnx::StringStringEntryProto &Entry : Model->metadata_props()) {
    if (Entry.key() != ONNXPlacementKey)
      continue;
    Expected<json::Value> V = json::parse(Entry.value());
    const json::Object *Map = V ? V->getAsObject() : nullptr;
    if (!V)
      consumeError(V.takeError());
    if (!Map)
      return makeFileError(File, 0, 0,
                           "metadata '" + ONNXPlacementKey +
                               "' is not a JSON object mapping node names "
                               "to device names");
    // JSON objects are unordered: report in a stable order.
    std::vector<std::string> Keys;
    for (const auto &KV : *Map)
      Keys.push_back(KV.first.str());
    llvm::sort(Keys);
    // The ops of a node that is not one op (an inlined If), by node.
    StringMap<SmallVector<OpId, 4>> OpsOfNode;
    for (OpId O = 0, E = G.getNumOps(); O != E; ++O)
      if (Optional<StringRef> Node = ann::get(G.getOp(O), ann::Node))
        OpsOfNode[*Node].push_back(O);
    std::vector<std::pair<OpId, std::string>> Devices;
    for (const std::string &Key : Keys) {
      SmallVector<OpId, 4> Ops;
      if (OpId O = G.lookupOp(Key); O != NoId)
        Ops.push_back(O);
      else if (auto It = OpsOfNode.find(Key); It != OpsOfNode.end())
        Ops = It->second;
      Optional<StringRef> Dev = Map->get(Key)->getAsString();
      if (Ops.empty() || !Dev || Dev->empty()) {
        addError(makeFileError(File, 0, 0,
                               "metadata '" + ONNXPlacementKey + "': " +
                                   (Ops.empty()
                                        ? "the model has no node '" + Key + "'"
                                        : "the device of node '" + Key +
                                              "' is not a device name")));
        continue;
      }
      for (OpId O : Ops)
        Devices.emplace_back(O, Dev->str());
    }
    if (Error E = takeErrors())
      return E;
    llvm::sort(Devices);
    for (auto &[O, Dev] : Devices)
      ann::set(G.getOp(O), ann::Device, StringRef(Dev));
  }
  return Error::success();
}

Expected<Graph> ONNXImporter::run() {
  if (Error E = phase("parse", [&] { return readONNXModel(Buffer, *Model); }))
    return std::move(E);
  if (Error E = phase("prepare", [&] {
        if (Error E = checkHeader())
          return E;
        computeNodeNames();
        rewriteNodes();
        dropEmptyConcatInputs();
        if (Error E = collectWeights())
          return E;
        if (Error E = applyOverrides())
          return E;
        if (Error E = adaptToOpset17(*Model, Buffer.getBufferIdentifier()))
          return E;
        return sortNodes();
      }))
    return std::move(E);
  if (Error E = phase("checker", [&] { return runChecker(); }))
    return std::move(E);
  if (Error E = phase("shape inference", [&] {
        forgetStaleShapes();
        return runShapeInference();
      }))
    return std::move(E);
  if (Error E = phase("shape folding", [&] { return foldShapes(); }))
    return std::move(E);
  if (decideBranches()) {
    Restart = true;
    return Graph();
  }
  Optional<Expected<Graph>> G;
  cantFail(phase("build", [&] {
    G.emplace(buildGraph());
    return Error::success();
  }));
  return std::move(*G);
}

/// Whether \p T holds a 1-D tensor of no elements.
static bool isEmptyVector(const onnx::TensorProto &T) {
  return T.dims_size() == 1 && T.dims(0) == 0;
}

std::vector<std::string>
dropEmptyConcatInputs(onnx::GraphProto &G, std::vector<std::string> *Notes) {
  // The empty 1-D constants: weights, and Constant nodes' results.
  StringSet<> Empty;
  for (const onnx::TensorProto &T : G.initializer())
    if (isEmptyVector(T))
      Empty.insert(T.name());
  for (const onnx::NodeProto &N : G.node())
    if (N.op_type() == "Constant" && N.domain().empty() && N.output_size() == 1)
      for (const onnx::AttributeProto &A : N.attribute())
        if (A.name() == "value" && A.has_t() && isEmptyVector(A.t()))
          Empty.insert(N.output(0));
  // A graph input of that name gives the weight's value only by default.
  for (const onnx::ValueInfoProto &VI : G.input())
    Empty.erase(VI.name());
  std::vector<std::string> Shortened;
  if (Empty.empty())
    return Shortened;
  for (onnx::NodeProto &N : *G.mutable_node()) {
    if (N.op_type() != "Concat" || !N.domain().empty())
      continue;
    std::vector<std::string> Kept, Dropped;
    for (const std::string &In : N.input())
      (Empty.contains(In) ? Dropped : Kept).push_back(In);
    // Concatenating it adds nothing; keep one input if all are empty.
    if (Dropped.empty())
      continue;
    if (Kept.empty()) {
      Kept.push_back(Dropped.back());
      Dropped.pop_back();
      if (Dropped.empty())
        continue;
    }
    N.clear_input();
    for (std::string &In : Kept)
      N.add_input(std::move(In));
    if (N.output_size())
      Shortened.push_back(N.output(0));
    if (!Notes)
      continue;
    std::string Line;
    raw_string_ostream OS(Line);
    OS << "node '" << N.name() << "': dropped the empty 1-D input"
       << (Dropped.size() > 1 ? "s " : " ");
    ListSeparator LS(", ");
    for (const std::string &In : Dropped)
      OS << LS << "'" << In << "'";
    bool One = Dropped.size() == 1;
    OS << " of Concat (" << (One ? "it adds" : "they add")
       << " no element; ONNX's shape inference refuses "
       << (One ? "one" : "them")
       << " among inputs of another rank, where torch.cat skips "
       << (One ? "it" : "them") << ")";
    Notes->push_back(std::move(OS.str()));
  }
  return Shortened;
}

void forgetShapesComputedFrom(onnx::GraphProto &G, ArrayRef<std::string> From,
                              std::vector<std::string> *Notes) {
  if (From.empty())
    return;
  // Every tensor computed from From, in any node order.
  StringMap<std::vector<const onnx::NodeProto *>> Readers;
  for (const onnx::NodeProto &N : G.node())
    for (const std::string &In : N.input())
      Readers[In].push_back(&N);
  StringSet<> Stale;
  std::vector<std::string> Work(From.begin(), From.end());
  while (!Work.empty()) {
    std::string T = std::move(Work.back());
    Work.pop_back();
    if (!Stale.insert(T).second)
      continue;
    for (const onnx::NodeProto *N : Readers.lookup(T))
      for (const std::string &Out : N->output())
        Work.push_back(Out);
  }
  for (onnx::ValueInfoProto &VI : *G.mutable_value_info())
    if (Stale.contains(VI.name()) && VI.type().has_tensor_type())
      VI.mutable_type()->mutable_tensor_type()->clear_shape();
  for (onnx::ValueInfoProto &VI : *G.mutable_output()) {
    if (!Stale.contains(VI.name()) || !VI.type().has_tensor_type() ||
        !VI.type().tensor_type().has_shape())
      continue;
    if (Notes) {
      std::string Line;
      raw_string_ostream OS(Line);
      OS << "graph output '" << VI.name()
         << "': the shape the model declares, ";
      printShape(OS, VI.type().tensor_type().shape());
      OS << ", may count a dropped Concat input; it is inferred anew";
      Notes->push_back(std::move(OS.str()));
    }
    VI.mutable_type()->mutable_tensor_type()->clear_shape();
  }
}

Error readAsOpset17(onnx::ModelProto &M, StringRef File) {
  expandNewOps(M);
  return adaptToOpset17(M, File);
}

Expected<Graph> importONNX(MemoryBufferRef Buffer, const ImportOptions &Opts,
                           TimerGroup *Timers,
                           std::vector<std::string> *Notes) {
  // Each import that decides Ifs starts again with them inlined, until the
  // branches inlined decide no more (at most once per If of the model).
  BranchDecisions Decided;
  while (true) {
    ONNXImporter Importer(Buffer, Opts, Timers, Decided);
    Expected<Graph> G = Importer.run();
    if (!Importer.needsRestart()) {
      if (Notes && G)
        *Notes = Importer.takeNotes();
      return G;
    }
    cantFail(G.takeError());
  }
}

} // namespace dp
