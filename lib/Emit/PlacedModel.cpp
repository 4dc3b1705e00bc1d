//===- PlacedModel.cpp - The user's model, placed and split ---------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/Emit/PlacedModel.h"
#include "dp/Emit/Schedule.h"
#include "dp/Import/ONNXImporter.h"
#include "dp/Import/ONNXWalk.h"
#include "dp/Support/Diagnostics.h"
#include "dp/Support/FileOutput.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/JSON.h"

#include "onnx/checker.h"
#include "onnx/defs/schema.h"
#include "onnx/onnx_pb.h"
#include "onnx/shape_inference/implementation.h"

#include <algorithm>
#include <climits>
#include <functional>
#include <queue>
#include <tuple>

using namespace llvm;

namespace dp {

SplitModel::SplitModel() = default;
SplitModel::SplitModel(SplitModel &&) = default;
SplitModel::~SplitModel() = default;
PlacedModel::PlacedModel() = default;
PlacedModel::PlacedModel(PlacedModel &&) = default;
PlacedModel::~PlacedModel() = default;

/// Metadata keys that emit writes; an input's own are replaced.
static constexpr StringLiteral ClusterKey = "dp.cluster";
static constexpr StringLiteral DeviceKey = "dp.device";
static constexpr StringLiteral SegmentKey = "dp.segment";
static constexpr StringLiteral ScheduleKey = "dp.schedule";
static constexpr StringLiteral PredictedKey = "dp.predicted";
/// A pipeline plan's micro-batches and stages (writePipelinePlan).
static constexpr StringLiteral PipelineKey = "dp.pipeline";

/// Gives the symbolic or unknown dimensions of \p List the sizes the
/// placed graph \p G bound them to (import-onnx's batch= and dims=), and a
/// tensor declared without a shape the graph's: the placed model is
/// timed, run and checked at the shapes it was placed at.
static void
bindDims(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> &List,
         const Graph &G) {
  for (onnx::ValueInfoProto &VI : List) {
    TensorId T = G.lookupTensor(VI.name());
    if (T == NoId || !VI.type().has_tensor_type())
      continue;
    ArrayRef<int64_t> Dims = G.getTensor(T).Type.Dims;
    auto *Shape = VI.mutable_type()->mutable_tensor_type()->mutable_shape();
    // Declared without a shape (or its shape forgotten): the graph's.
    if (!Shape->dim_size() && !Dims.empty() &&
        all_of(Dims, [](int64_t D) { return D >= 0; }))
      for (int64_t D : Dims)
        Shape->add_dim()->set_dim_value(D);
    if (size_t(Shape->dim_size()) != Dims.size())
      continue;
    for (int I = 0, E = Shape->dim_size(); I != E; ++I)
      if (!Shape->dim(I).has_dim_value() && Dims[I] >= 0)
        Shape->mutable_dim(I)->set_dim_value(Dims[I]);
  }
}

/// A pipeline plan's stages run one micro-batch: the model's data inputs
/// take the sizes the placed graph has for them (import-onnx's batch=,
/// shape= and microbatches=), and the shape constants that repeat the
/// model's own sizes follow them, as they did on import.
static void resizeInputsToGraph(onnx::ModelProto &M, const Graph &G) {
  onnx::GraphProto &OG = *M.mutable_graph();
  StringSet<> Weights;
  for (const onnx::TensorProto &T : OG.initializer())
    Weights.insert(T.name());
  std::vector<std::pair<onnx::ValueInfoProto *, ArrayRef<int64_t>>> Changed;
  for (onnx::ValueInfoProto &VI : *OG.mutable_input()) {
    TensorId T = G.lookupTensor(VI.name());
    if (Weights.contains(VI.name()) || !VI.type().has_tensor_type() ||
        T == NoId)
      continue;
    ArrayRef<int64_t> Dims = G.getTensor(T).Type.Dims;
    const onnx::TypeProto_Tensor &TT = VI.type().tensor_type();
    bool Same = TT.has_shape() && size_t(TT.shape().dim_size()) == Dims.size();
    for (int I = 0; Same && I != TT.shape().dim_size(); ++I)
      Same = TT.shape().dim(I).has_dim_value() &&
             TT.shape().dim(I).dim_value() == Dims[I];
    if (!Same)
      Changed.emplace_back(&VI, Dims);
  }
  if (Changed.empty())
    return;
  relaxShapeConstants(M);
  for (auto &[VI, Dims] : Changed) {
    auto *Shape = VI->mutable_type()->mutable_tensor_type()->mutable_shape();
    Shape->clear_dim();
    for (int64_t D : Dims)
      Shape->add_dim()->set_dim_value(D);
  }
  forgetRecordedShapes(OG);
  bindDims(*OG.mutable_output(), G);
}

Expected<PlacedModel> PlacedModel::build(MemoryBufferRef Buffer,
                                         const PlacedStep &S) {
  PlacedModel PM;
  PM.S = &S;
  PM.File = Buffer.getBufferIdentifier().str();
  PM.Model = std::make_unique<onnx::ModelProto>();
  if (Error E = readONNXModel(Buffer, *PM.Model))
    return std::move(E);
  // What import-onnx dropped, the placed model drops too (its shapes then
  // come from the placed graph: bindDims).
  onnx::GraphProto &Source = *PM.Model->mutable_graph();
  forgetShapesComputedFrom(Source, dropEmptyConcatInputs(Source));
  if (S.Plan)
    resizeInputsToGraph(*PM.Model, *S.G);
  StringRef File = Buffer.getBufferIdentifier();
  PM.NodeNames = getONNXNodeNames(PM.Model->graph());
  unsigned N = PM.NodeNames.size();
  PM.NodeDevices.resize(N);
  StringSet<> Names;
  unsigned Missing = 0;
  StringRef FirstMissing;
  for (unsigned I = 0; I != N; ++I) {
    Names.insert(PM.NodeNames[I]);
    auto It = S.NodeIndex.find(PM.NodeNames[I]);
    if (It == S.NodeIndex.end()) {
      if (!Missing++)
        FirstMissing = PM.NodeNames[I];
      continue;
    }
    PM.NodeDevices[I] = S.Nodes[It->second].Device;
  }
  if (Missing)
    return makeFileError(
        File, 0, 0,
        "emit: node '" + FirstMissing + "'" +
            (Missing > 1 ? " and " + Twine(Missing - 1) + " more nodes"
                         : Twine()) +
            " of the model have no op in the placed graph; the model must "
            "be the one the graph was imported from");
  for (const PlacedStep::NodePlacement &NP : S.Nodes)
    if (!Names.contains(NP.Name))
      return makeFileError(File, 0, 0,
                           "emit: the model has no node '" + NP.Name +
                               "', which op '" + S.G->getOp(NP.FirstOp).Name +
                               "' comes from; the model must be the one the "
                               "graph was imported from");
  return std::move(PM);
}

/// Replaces the metadata entry \p Key of \p M by \p Value.
static void setMetadata(onnx::ModelProto &M, StringRef Key, StringRef Value) {
  auto &Props = *M.mutable_metadata_props();
  for (int I = Props.size(); I-- > 0;)
    if (Props.Get(I).key() == Key)
      Props.DeleteSubrange(I, 1);
  onnx::StringStringEntryProto *E = M.add_metadata_props();
  E->set_key(Key.str());
  E->set_value(Value.str());
}

/// The dp.placement value: node name to device name, in node order.
static std::string makePlacementJSON(const PlacedModel &PM, const Cluster &C,
                                     function_ref<bool(unsigned)> Include) {
  std::string Text;
  raw_string_ostream OS(Text);
  json::OStream J(OS);
  J.object([&] {
    for (unsigned I = 0, E = PM.getNodeNames().size(); I != E; ++I)
      if (Include(I))
        J.attribute(PM.getNodeNames()[I],
                    C.getDevices()[PM.getNodeDevices()[I]].Name);
  });
  return OS.str();
}

/// The dp.schedule value: the segments in run order with their devices
/// and nodes, and the order of the schedule's items.
static std::string makeScheduleJSON(const PlacedModel &PM, const Cluster &C,
                                    const ModelSegments &Segs,
                                    const StepSchedule &Schedule) {
  std::string Text;
  raw_string_ostream OS(Text);
  json::OStream J(OS);
  J.object([&] {
    J.attribute("version", int64_t(ScheduleFormatVersion));
    J.attributeArray("segments", [&] {
      for (unsigned K = 0, E = Segs.Segments.size(); K != E; ++K)
        J.object([&] {
          J.attribute("device", C.getDevices()[Segs.Segments[K].Device].Name);
          // In the order the segment's nodes ran in the simulated step.
          J.attributeArray("nodes", [&] {
            for (unsigned I : Schedule.Nodes[K])
              J.value(PM.getNodeNames()[I]);
          });
          // In the order their backward ran, for a training step.
          if (Schedule.Training)
            J.attributeArray("backward_nodes", [&] {
              for (unsigned I : Schedule.BackwardNodes[K])
                J.value(PM.getNodeNames()[I]);
            });
        });
    });
    J.attributeBegin("order");
    writeScheduleOrder(J, Schedule.Order);
    J.attributeEnd();
  });
  return OS.str();
}

/// The dp.predicted value: the simulated step, and the busy time and peak
/// memory of every device the placement uses, in the cluster's order.
static std::string makePredictedJSON(const PlacedStep &S,
                                     const StepSchedule &Schedule) {
  const Cluster &C = *S.C;
  std::vector<bool> Used(C.getNumDevices());
  for (uint32_t Dev : S.Placement)
    Used[Dev] = true;
  std::string Text;
  raw_string_ostream OS(Text);
  json::OStream J(OS);
  J.object([&] {
    J.attribute("step_s", S.Result.StepTime);
    J.attribute("mode", Schedule.Training ? "train" : "inference");
    J.attributeArray("devices", [&] {
      for (unsigned Dev = 0, E = C.getNumDevices(); Dev != E; ++Dev)
        if (Used[Dev])
          J.object([&] {
            J.attribute("device", C.getDevices()[Dev].Name);
            J.attribute("type", C.getDeviceType(Dev).Name);
            J.attribute("busy_s", S.Result.BusyTime[Dev]);
            J.attribute("peak_bytes", int64_t(S.Result.PeakBytes[Dev]));
          });
    });
    J.attribute("cluster", C.getName());
  });
  return OS.str();
}

std::unique_ptr<onnx::ModelProto>
PlacedModel::makePlacedModel(const ModelSegments &Segs,
                             const StepSchedule &Schedule) const {
  auto Out = std::make_unique<onnx::ModelProto>(*Model);
  bindDims(*Out->mutable_graph()->mutable_input(), *S->G);
  bindDims(*Out->mutable_graph()->mutable_output(), *S->G);
  setMetadata(*Out, ONNXPlacementKey,
              makePlacementJSON(*this, *S->C, [](unsigned) { return true; }));
  setMetadata(*Out, ClusterKey, S->C->getName());
  setMetadata(*Out, ScheduleKey,
              makeScheduleJSON(*this, *S->C, Segs, Schedule));
  setMetadata(*Out, PredictedKey, makePredictedJSON(*S, Schedule));
  if (S->Plan) {
    std::string Text;
    raw_string_ostream OS(Text);
    json::OStream J(OS);
    writePipelinePlan(J, *S, Schedule);
    setMetadata(*Out, PipelineKey, OS.str());
  }
  return Out;
}

//===----------------------------------------------------------------------===//
// Splitting
//===----------------------------------------------------------------------===//

/// Every tensor node \p N reads: its inputs, then what its subgraphs read
/// from outside.
static std::vector<std::string> getNodeReads(const onnx::NodeProto &N) {
  std::vector<StringRef> Reads;
  DenseSet<StringRef> Seen;
  for (const std::string &In : N.input())
    if (!In.empty() && Seen.insert(In).second)
      Reads.push_back(In);
  forEachBody(N, [&](const onnx::GraphProto &Body) {
    collectOuterReads(Body, Reads, Seen, {});
  });
  return std::vector<std::string>(Reads.begin(), Reads.end());
}

/// Gives \p T, when its data is stored outside the file, zeros of its size
/// in the file instead.
static void fillWithZeros(onnx::TensorProto &T) {
  using TP = onnx::TensorProto;
  uint64_t Bytes;
  switch (T.data_type()) {
  case TP::BOOL:
  case TP::INT8:
  case TP::UINT8:
    Bytes = 1;
    break;
  case TP::FLOAT16:
  case TP::BFLOAT16:
  case TP::INT16:
  case TP::UINT16:
    Bytes = 2;
    break;
  case TP::FLOAT:
  case TP::INT32:
  case TP::UINT32:
    Bytes = 4;
    break;
  case TP::DOUBLE:
  case TP::INT64:
  case TP::UINT64:
  case TP::COMPLEX64:
    Bytes = 8;
    break;
  default:
    return;
  }
  if (T.data_location() != TP::EXTERNAL)
    return;
  for (int64_t Dim : T.dims())
    Bytes = Dim >= 0 && Bytes <= (uint64_t(1) << 32) ? Bytes * Dim : 0;
  T.set_data_location(TP::DEFAULT);
  T.clear_external_data();
  T.set_raw_data(std::string(Bytes, '\0'));
}

/// A copy of \p M whose initializers stored outside the model (or too large
/// to matter to shape inference) are graph inputs of their type instead:
/// what the checker and shape inference can work on without the weights.
static onnx::ModelProto withoutWeightData(const onnx::ModelProto &M) {
  onnx::ModelProto Out = M;
  onnx::GraphProto &G = *Out.mutable_graph();
  StringSet<> Inputs;
  for (const auto &VI : G.input())
    Inputs.insert(VI.name());
  auto &Inits = *G.mutable_initializer();
  int Kept = 0;
  for (int I = 0, E = Inits.size(); I != E; ++I) {
    const onnx::TensorProto &T = Inits.Get(I);
    int64_t Elements = 1;
    for (int64_t Dim : T.dims())
      Elements = Dim > 0 && Elements < INT64_MAX / Dim ? Elements * Dim : 0;
    bool SmallInt = (T.data_type() == onnx::TensorProto::INT64 ||
                     T.data_type() == onnx::TensorProto::INT32) &&
                    Elements <= 1024;
    if (T.data_location() != onnx::TensorProto::EXTERNAL && SmallInt) {
      Inits.SwapElements(Kept++, I);
      continue;
    }
    if (Inputs.insert(T.name()).second)
      declareAsInput(G, T);
  }
  Inits.DeleteSubrange(Kept, Inits.size() - Kept);
  // A body's weights cannot be inputs: zeros of their size stand in for
  // data stored outside the file.
  std::function<void(onnx::GraphProto &)> FillBodies =
      [&](onnx::GraphProto &Body) {
        for (onnx::NodeProto &N : *Body.mutable_node()) {
          forEachBody(N, FillBodies);
          for (onnx::AttributeProto &A : *N.mutable_attribute())
            if (A.has_t())
              fillWithZeros(*A.mutable_t());
        }
        if (&Body != &G)
          for (onnx::TensorProto &T : *Body.mutable_initializer())
            fillWithZeros(T);
      };
  FillBodies(G);
  return Out;
}

namespace {
/// Finds the type of any tensor of the model: declared in the model,
/// inferred by ONNX shape inference, or from the placed graph.
class TypeFinder {
public:
  TypeFinder(const onnx::ModelProto &M, const Graph &G) : M(M), G(G) {
    add(M.graph());
  }

  const onnx::TypeProto *find(StringRef Name) {
    if (const onnx::TypeProto *T = Types.lookup(Name))
      return T;
    if (!Inferred) {
      // Only when the model does not declare a type that a part needs.
      Inferred = std::make_unique<onnx::ModelProto>(withoutWeightData(M));
      try {
        onnx::ShapeInferenceOptions Options(/*check_type_val=*/false,
                                            /*strict_mode_val=*/0,
                                            /*data_prop_val=*/true);
        onnx::shape_inference::InferShapes(
            *Inferred, onnx::OpSchemaRegistry::Instance(), Options);
      } catch (const std::exception &) {
        // Whatever was inferred before the failure is still used.
      }
      add(Inferred->graph());
      if (const onnx::TypeProto *T = Types.lookup(Name))
        return T;
    }
    // The placed graph has a static type for every tensor it kept.
    TensorId T = G.lookupTensor(Name);
    if (T == NoId)
      return nullptr;
    auto Made = std::make_unique<onnx::TypeProto>();
    const TensorType &Type = G.getTensor(T).Type;
    auto *TT = Made->mutable_tensor_type();
    TT->set_elem_type(static_cast<int32_t>(Type.DType));
    auto *Shape = TT->mutable_shape();
    for (int64_t Dim : Type.Dims)
      Shape->add_dim()->set_dim_value(Dim);
    Owned.push_back(std::move(Made));
    Types[Name] = Owned.back().get();
    return Owned.back().get();
  }

private:
  void add(const onnx::GraphProto &OG) {
    for (const auto *List : {&OG.input(), &OG.output(), &OG.value_info()})
      for (const onnx::ValueInfoProto &VI : *List)
        if (isComplete(VI) && !Types.count(VI.name()))
          Types[VI.name()] = &VI.type();
  }

  /// Whether \p VI's type can declare a segment's input or output: a
  /// tensor type needs its element type and shape (torch's exports
  /// declare some tensors without a shape, which the checker refuses on
  /// a graph's inputs and outputs); other types are taken as they are.
  static bool isComplete(const onnx::ValueInfoProto &VI) {
    if (!VI.has_type())
      return false;
    if (!VI.type().has_tensor_type())
      return true;
    const onnx::TypeProto_Tensor &T = VI.type().tensor_type();
    return T.has_shape() && T.elem_type() != 0;
  }

  const onnx::ModelProto &M;
  const Graph &G;
  StringMap<const onnx::TypeProto *> Types;
  std::unique_ptr<onnx::ModelProto> Inferred;
  std::vector<std::unique_ptr<onnx::TypeProto>> Owned;
};
} // namespace

/// The bytes of a tensor: from the placed graph when it kept the tensor,
/// else from a static type (which may take shape inference to find).
static Optional<uint64_t> getTensorBytes(const Graph &G, StringRef Name,
                                         TypeFinder &Types) {
  TensorId T = G.lookupTensor(Name);
  if (T != NoId)
    if (Optional<int64_t> B = G.getTensor(T).Type.getSizeInBytes())
      return uint64_t(*B);
  const onnx::TypeProto *TP = Types.find(Name);
  if (!TP || !TP->has_tensor_type() || !TP->tensor_type().has_shape())
    return None;
  TensorType Type;
  Type.DType = isValidDType(TP->tensor_type().elem_type())
                   ? static_cast<DTypeKind>(TP->tensor_type().elem_type())
                   : DTypeKind::Undefined;
  for (const auto &D : TP->tensor_type().shape().dim()) {
    if (!D.has_dim_value() || D.dim_value() < 0)
      return None;
    Type.Dims.push_back(D.dim_value());
  }
  if (Optional<int64_t> B = Type.getSizeInBytes())
    return uint64_t(*B);
  return None;
}

Segmentation computeSegments(ArrayRef<unsigned> NodeDevices,
                             ArrayRef<std::vector<unsigned>> Producers) {
  unsigned N = NodeDevices.size();
  assert(Producers.size() == N && "a producer list per node");
  struct Seg {
    unsigned Device;
    unsigned Level;
    /// The lowest level of a segment that reads from this one, as it was
    /// when it first read (levels only grow, so this stays a lower bound).
    unsigned MinReaderLevel = UINT_MAX;
  };
  std::vector<Seg> Segs;
  // Each device's segments, in creation order, which is level order.
  DenseMap<unsigned, SmallVector<unsigned, 4>> ByDevice;
  std::vector<unsigned> SegmentOf(N);
  SmallVector<unsigned, 8> Read;
  for (unsigned I = 0; I != N; ++I) {
    unsigned Dev = NodeDevices[I];
    Read.clear();
    for (unsigned P : Producers[I]) {
      assert(P < I && "producers come before their readers");
      Read.push_back(SegmentOf[P]);
    }
    llvm::sort(Read);
    Read.erase(std::unique(Read.begin(), Read.end()), Read.end());
    // The highest level read, and the segment there when it is alone.
    unsigned Top = 0, AtTop = 0, NumAtTop = 0;
    for (unsigned P : Read) {
      if (NumAtTop && Segs[P].Level < Top)
        continue;
      if (!NumAtTop || Segs[P].Level > Top) {
        Top = Segs[P].Level;
        NumAtTop = 0;
      }
      AtTop = P;
      ++NumAtTop;
    }
    SmallVector<unsigned, 4> &Mine = ByDevice[Dev];
    unsigned Target;
    if (NumAtTop == 1 && Segs[AtTop].Device == Dev) {
      // Its highest producer's segment is on its device: no lower one
      // would do, and that one does.
      Target = AtTop;
    } else {
      unsigned Need = Read.empty() ? 0 : Top + 1;
      auto It = llvm::partition_point(
          Mine, [&](unsigned S) { return Segs[S].Level < Need; });
      if (It != Mine.end()) {
        Target = *It;
      } else if (!Mine.empty() && Segs[Mine.back()].MinReaderLevel > Need) {
        Target = Mine.back();
        Segs[Target].Level = Need;
      } else {
        Target = Segs.size();
        Segs.push_back({Dev, Need});
        Mine.push_back(Target);
      }
    }
    SegmentOf[I] = Target;
    for (unsigned P : Read)
      if (P != Target)
        Segs[P].MinReaderLevel =
            std::min(Segs[P].MinReaderLevel, Segs[Target].Level);
  }

  // Move nodes read only by one other segment of their device there, when
  // that segment is above everything they read. Readers come later in
  // model order, so a backward walk sees them in their final segments.
  std::vector<SmallVector<unsigned, 2>> Readers(N);
  for (unsigned I = 0; I != N; ++I)
    for (unsigned P : Producers[I])
      if (Readers[P].empty() || Readers[P].back() != I)
        Readers[P].push_back(I);
  for (unsigned I = N; I-- > 0;) {
    if (Readers[I].empty())
      continue;
    unsigned To = SegmentOf[Readers[I].front()];
    if (To == SegmentOf[I] || Segs[To].Device != NodeDevices[I] ||
        any_of(Readers[I], [&](unsigned R) { return SegmentOf[R] != To; }) ||
        any_of(Producers[I], [&](unsigned P) {
          return SegmentOf[P] != To &&
                 Segs[SegmentOf[P]].Level >= Segs[To].Level;
        }))
      continue;
    SegmentOf[I] = To;
  }

  // Number the segments that kept nodes in run order.
  std::vector<bool> Used(Segs.size());
  for (unsigned S : SegmentOf)
    Used[S] = true;
  std::vector<unsigned> Order;
  for (unsigned S = 0, E = Segs.size(); S != E; ++S)
    if (Used[S])
      Order.push_back(S);
  llvm::sort(Order, [&](unsigned A, unsigned B) {
    return std::make_pair(Segs[A].Level, Segs[A].Device) <
           std::make_pair(Segs[B].Level, Segs[B].Device);
  });
  std::vector<unsigned> NewIndex(Segs.size());
  Segmentation Out;
  for (unsigned S : Order) {
    NewIndex[S] = Out.Device.size();
    Out.Device.push_back(Segs[S].Device);
    Out.Level.push_back(Segs[S].Level);
  }
  Out.SegmentOf.resize(N);
  for (unsigned I = 0; I != N; ++I)
    Out.SegmentOf[I] = NewIndex[SegmentOf[I]];
  return Out;
}

/// Copies the fields of \p M but its graph into \p Out.
static void copyModelFields(const onnx::ModelProto &M, onnx::ModelProto &Out) {
  Out.set_ir_version(M.ir_version());
  *Out.mutable_opset_import() = M.opset_import();
  if (M.has_producer_name())
    Out.set_producer_name(M.producer_name());
  if (M.has_producer_version())
    Out.set_producer_version(M.producer_version());
  if (M.has_domain())
    Out.set_domain(M.domain());
  if (M.has_model_version())
    Out.set_model_version(M.model_version());
  if (M.has_doc_string())
    Out.set_doc_string(M.doc_string());
  *Out.mutable_metadata_props() = M.metadata_props();
  *Out.mutable_functions() = M.functions();
}

namespace {
/// Cuts a placed model into segments (PlacedModel::segment): the dataflow
/// between the model's nodes, a topological order of them, their segments
/// and the tensors that cross segments; and makes each segment's model
/// (PlacedModel::split).
class ModelSplitter {
public:
  ModelSplitter(const PlacedModel &PM, const PlacedStep &S, StringRef File)
      : PM(PM), S(S), File(File), OG(PM.getModel().graph()), C(*S.C),
        N(OG.node_size()), Types(PM.getModel(), *S.G) {
    findDataflow();
  }

  Expected<ModelSegments> segment(StringRef Format);
  Expected<SplitModel> split(const ModelSegments &Segs);

private:
  void findDataflow();
  Error sortNodes(StringRef Format);
  void assignSegments(ModelSegments &Segs);
  void findTransfers(ModelSegments &Segs);
  Error addValue(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> &List,
                 StringRef Name, const onnx::ValueInfoProto *Declared);
  Error buildSegmentModel(SplitModel &Split, unsigned K);

  const PlacedModel &PM;
  const PlacedStep &S;
  StringRef File;
  const onnx::GraphProto &OG;
  const Cluster &C;
  unsigned N;
  TypeFinder Types;

  /// The node that makes each tensor.
  StringMap<unsigned> Producer;
  /// What every node reads, and the nodes it reads from.
  std::vector<std::vector<std::string>> Reads;
  std::vector<std::vector<unsigned>> Producers;
  /// A topological order of the nodes, and each node's place in it.
  std::vector<unsigned> Order, Position;
  /// Each node's segment, by node index.
  std::vector<unsigned> SegmentOf;
  /// The tensors that cross segments.
  StringSet<> Crossing;
  StringMap<const onnx::ValueInfoProto *> DeclaredInputs, DeclaredOutputs;
};
} // namespace

void ModelSplitter::findDataflow() {
  for (unsigned I = 0; I != N; ++I)
    for (const std::string &Out : OG.node(I).output())
      if (!Out.empty())
        Producer.try_emplace(Out, I);

  Reads.resize(N);
  Producers.resize(N);
  for (unsigned I = 0; I != N; ++I) {
    Reads[I] = getNodeReads(OG.node(I));
    for (const std::string &T : Reads[I]) {
      auto It = Producer.find(T);
      if (It != Producer.end() && !is_contained(Producers[I], It->second))
        Producers[I].push_back(It->second);
    }
  }
}

/// A topological order, the model's where the dataflow allows (ONNX wants
/// nodes sorted; import-onnx accepts them unsorted).
Error ModelSplitter::sortNodes(StringRef Format) {
  Position.resize(N);
  std::vector<unsigned> Pending(N);
  std::vector<SmallVector<unsigned, 2>> Users(N);
  for (unsigned I = 0; I != N; ++I) {
    Pending[I] = Producers[I].size();
    for (unsigned P : Producers[I])
      Users[P].push_back(I);
  }
  std::priority_queue<unsigned, std::vector<unsigned>, std::greater<>> Ready;
  for (unsigned I = 0; I != N; ++I)
    if (!Pending[I])
      Ready.push(I);
  while (!Ready.empty()) {
    unsigned I = Ready.top();
    Ready.pop();
    Position[I] = Order.size();
    Order.push_back(I);
    for (unsigned U : Users[I])
      if (!--Pending[U])
        Ready.push(U);
  }
  if (Order.size() == N)
    return Error::success();
  unsigned Stuck = 0;
  while (!Pending[Stuck])
    ++Stuck;
  return make_error<LocatedError>(
      DiagLocation{File.str(), 0, 0, PM.getNodeNames()[Stuck], ""},
      "emit{format=" + Format +
          "}: the model's nodes form a cycle through this node; the model "
          "must be the one the graph was imported from");
}

/// Segments the nodes in their sorted order, and gives \p Segs its
/// segments with their nodes.
void ModelSplitter::assignSegments(ModelSegments &Segs) {
  std::vector<unsigned> Devices(N);
  std::vector<std::vector<unsigned>> Sorted(N);
  for (unsigned K = 0; K != N; ++K) {
    Devices[K] = PM.getNodeDevices()[Order[K]];
    for (unsigned P : Producers[Order[K]])
      Sorted[K].push_back(Position[P]);
  }
  Segmentation Cut = computeSegments(Devices, Sorted);
  // By node index, as the rest uses it.
  SegmentOf.resize(N);
  for (unsigned K = 0; K != N; ++K)
    SegmentOf[Order[K]] = Cut.SegmentOf[K];
  unsigned NumSegs = Cut.getNumSegments();
  Segs.Segments.resize(NumSegs);
  std::vector<unsigned> PerDevice(C.getNumDevices());
  for (unsigned K = 0; K != NumSegs; ++K) {
    Segs.Segments[K].Device = Cut.Device[K];
    Segs.Segments[K].IndexOnDevice = PerDevice[Cut.Device[K]]++;
  }
  for (unsigned I : Order)
    Segs.Segments[SegmentOf[I]].Nodes.push_back(I);
}

/// The segments that read each tensor that crosses segments, and the
/// segments each segment runs after.
void ModelSplitter::findTransfers(ModelSegments &Segs) {
  StringMap<SmallVector<unsigned, 2>> ReadBy;
  for (unsigned I : Order) {
    unsigned To = SegmentOf[I];
    for (const std::string &T : Reads[I]) {
      auto It = Producer.find(T);
      if (It == Producer.end() || SegmentOf[It->second] == To)
        continue;
      SmallVector<unsigned, 2> &Readers = ReadBy[T];
      if (!is_contained(Readers, To))
        Readers.push_back(To);
      SmallVector<unsigned, 4> &After = Segs.Segments[To].After;
      if (!is_contained(After, SegmentOf[It->second]))
        After.push_back(SegmentOf[It->second]);
    }
  }
  for (ModelSegments::Segment &Seg : Segs.Segments)
    llvm::sort(Seg.After);
  // In the order their producers run.
  for (unsigned I : Order) {
    for (const std::string &Out : OG.node(I).output()) {
      auto It = ReadBy.find(Out);
      if (It == ReadBy.end() || Producer.lookup(Out) != I)
        continue;
      SegmentTensor X;
      X.Name = Out;
      X.ProducerNode = I;
      X.From = SegmentOf[I];
      X.To = std::move(It->second);
      llvm::sort(X.To);
      X.Bytes = getTensorBytes(*S.G, X.Name, Types);
      Segs.Transfers.push_back(std::move(X));
    }
  }
}

/// Adds to \p List the value \p Name: as the model declares it, else with
/// the type found for it.
Error ModelSplitter::addValue(
    google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> &List,
    StringRef Name, const onnx::ValueInfoProto *Declared) {
  onnx::ValueInfoProto *VI = List.Add();
  if (Declared) {
    *VI = *Declared;
    return Error::success();
  }
  VI->set_name(Name.str());
  const onnx::TypeProto *TP = Types.find(Name);
  if (!TP)
    return make_error<LocatedError>(
        DiagLocation{File.str(), 0, 0, "", Name.str()},
        "emit{format=split}: the type of the tensor is unknown, and it "
        "crosses segments");
  *VI->mutable_type() = *TP;
  return Error::success();
}

/// Makes the model of segment \p K of \p Split.
Error ModelSplitter::buildSegmentModel(SplitModel &Split, unsigned K) {
  const ModelSegments::Segment &Seg = Split.Segments[K];
  auto Part = std::make_unique<onnx::ModelProto>();
  // The model's own fields, without its graph (and the weights in it).
  copyModelFields(PM.getModel(), *Part);
  onnx::GraphProto &PG = *Part->mutable_graph();
  StringRef DevName = C.getDevices()[Seg.Device].Name;
  PG.set_name(OG.name() + "@" + DevName.str() + "#" +
              std::to_string(Seg.IndexOnDevice));
  PG.set_doc_string("segment " + std::to_string(K) + " of graph '" + OG.name() +
                    "', the nodes of its segment " +
                    std::to_string(Seg.IndexOnDevice) + " on " + DevName.str() +
                    " (dp emit{format=split})");

  StringSet<> Used, Made;
  for (unsigned I : Seg.Nodes) {
    *PG.add_node() = OG.node(I);
    for (const std::string &T : Reads[I])
      Used.insert(T);
    for (const std::string &T : OG.node(I).output())
      if (!T.empty())
        Made.insert(T);
  }
  // Graph outputs that no node makes (an input passed through) belong to
  // the first segment.
  bool First = K == 0;
  if (First)
    for (const auto &VI : OG.output())
      if (!Producer.count(VI.name()))
        Used.insert(VI.name());

  // Inputs: the model's, then what earlier segments send, in order.
  for (const auto &VI : OG.input())
    if (Used.contains(VI.name()))
      *PG.add_input() = VI;
  for (const SegmentTensor &X : Split.Transfers)
    if (is_contained(X.To, K))
      if (Error E = addValue(*PG.mutable_input(), X.Name,
                             DeclaredInputs.lookup(X.Name)))
        return E;
  for (const auto &T : OG.initializer())
    if (Used.contains(T.name()))
      *PG.add_initializer() = T;
  for (const auto &T : OG.sparse_initializer())
    if (Used.contains(T.values().name()))
      *PG.add_sparse_initializer() = T;

  // Outputs: the model's made here, then what later segments read.
  StringSet<> Outputs;
  for (const auto &VI : OG.output())
    if (Made.contains(VI.name()) || (First && !Producer.count(VI.name()))) {
      *PG.add_output() = VI;
      Outputs.insert(VI.name());
    }
  for (const SegmentTensor &X : Split.Transfers)
    if (X.From == K && Outputs.insert(X.Name).second)
      if (Error E = addValue(*PG.mutable_output(), X.Name,
                             DeclaredOutputs.lookup(X.Name)))
        return E;
  for (const auto &VI : OG.value_info())
    if ((Made.contains(VI.name()) || Used.contains(VI.name())) &&
        !Outputs.contains(VI.name()) && !Crossing.contains(VI.name()))
      *PG.add_value_info() = VI;

  SmallVector<bool, 0> InSegment(N);
  for (unsigned I : Seg.Nodes)
    InSegment[I] = true;
  setMetadata(
      *Part, ONNXPlacementKey,
      makePlacementJSON(PM, C, [&](unsigned I) { return InSegment[I]; }));
  setMetadata(*Part, ClusterKey, C.getName());
  setMetadata(*Part, DeviceKey, DevName);
  setMetadata(*Part, SegmentKey, std::to_string(K));
  Split.Models[K] = std::move(Part);
  return Error::success();
}

Expected<ModelSegments> ModelSplitter::segment(StringRef Format) {
  if (Error E = sortNodes(Format))
    return std::move(E);
  ModelSegments Segs;
  assignSegments(Segs);
  findTransfers(Segs);
  return std::move(Segs);
}

Expected<SplitModel> ModelSplitter::split(const ModelSegments &Segs) {
  SplitModel Split;
  static_cast<ModelSegments &>(Split) = Segs;
  for (const SegmentTensor &X : Split.Transfers)
    Crossing.insert(X.Name);
  for (const auto &VI : OG.input())
    DeclaredInputs[VI.name()] = &VI;
  for (const auto &VI : OG.output())
    DeclaredOutputs[VI.name()] = &VI;
  Split.Models.resize(Split.Segments.size());
  for (unsigned K = 0, E = Split.Segments.size(); K != E; ++K)
    if (Error Err = buildSegmentModel(Split, K))
      return std::move(Err);
  return std::move(Split);
}

Expected<ModelSegments> PlacedModel::segment(StringRef Format) const {
  return ModelSplitter(*this, *S, File).segment(Format);
}

Expected<SplitModel> PlacedModel::split(const ModelSegments &Segs) const {
  return ModelSplitter(*this, *S, File).split(Segs);
}

Expected<SplitModel> PlacedModel::split() const {
  Expected<ModelSegments> Segs = segment("split");
  if (!Segs)
    return Segs.takeError();
  return split(*Segs);
}

//===----------------------------------------------------------------------===//
// Checking and writing
//===----------------------------------------------------------------------===//

/// The first tensor of \p G's inputs, outputs and value_info whose type
/// lacks what the checker requires of a tensor type (its element type, or
/// its shape), with a node that makes or reads it, and what is missing.
static Optional<std::tuple<std::string, std::string, StringRef>>
findIncompleteType(const onnx::GraphProto &G) {
  auto Missing = [](const onnx::ValueInfoProto &V) -> StringRef {
    if (!V.type().has_tensor_type())
      return "";
    const onnx::TypeProto_Tensor &T = V.type().tensor_type();
    if (!T.has_elem_type() || !T.elem_type())
      return "element type";
    if (!T.has_shape())
      return "shape";
    return "";
  };
  auto NodeOf = [&](const std::string &Tensor) -> std::string {
    for (const onnx::NodeProto &N : G.node())
      if (is_contained(N.output(), Tensor))
        return N.name().empty() ? N.op_type() : N.name();
    for (const onnx::NodeProto &N : G.node())
      if (is_contained(N.input(), Tensor))
        return N.name().empty() ? N.op_type() : N.name();
    return "";
  };
  for (const auto *List : {&G.input(), &G.output(), &G.value_info()})
    for (const onnx::ValueInfoProto &V : *List)
      if (StringRef What = Missing(V); !What.empty())
        return std::make_tuple(V.name(), NodeOf(V.name()), What);
  return None;
}

Error checkONNXModel(const onnx::ModelProto &M, StringRef What) {
  onnx::ModelProto Copy = withoutWeightData(M);
  // libonnx checks IR 8 and opset 17: newer models are checked as
  // import-onnx read them.
  if (Error E = readAsOpset17(Copy, What))
    return makeError("emit: " + What +
                     " cannot be checked: " + toString(std::move(E)));
  try {
    onnx::checker::check_model(Copy);
  } catch (const std::exception &E) {
    std::string Msg = "emit: " + What.str() +
                      " fails the ONNX checker (a bug in dp): " +
                      StringRef(E.what()).split('\n').first.trim().str();
    // The checker names no tensor for a graph input or output, and a node
    // only in its context ("Bad node spec for node. Name: ...").
    if (auto Found = findIncompleteType(Copy.graph())) {
      auto &[Tensor, Node, Missing] = *Found;
      return makeTensorError(
          Node, Tensor, Msg + " (the tensor's type has no " + Missing + ")");
    }
    StringRef Context = StringRef(E.what()).split("==> Context: ").second;
    if (!Context.empty())
      Msg += " (" + Context.split('\n').first.trim().str() + ")";
    return makeError(Msg);
  }
  return Error::success();
}

Error writeONNXModel(StringRef Path, const onnx::ModelProto &M) {
  std::string Bytes;
  if (M.ByteSizeLong() > size_t(INT_MAX) || !M.SerializeToString(&Bytes))
    return makeFileError(Path, 0, 0,
                         "cannot write the model: it is larger than 2 GiB, "
                         "protobuf's limit for one message");
  return writeFileAtomically(Path, [&](raw_ostream &OS) { OS << Bytes; });
}

void writeSplitManifest(raw_ostream &OS, const PlacedStep &S,
                        const PlacedModel &PM, const SplitModel &Split,
                        ArrayRef<std::string> Files,
                        const StepSchedule &Schedule) {
  const Cluster &C = *S.C;
  const onnx::GraphProto &OG = PM.getModel().graph();
  auto DeviceName = [&](unsigned Segment) -> StringRef {
    return C.getDevices()[Split.Segments[Segment].Device].Name;
  };
  json::OStream J(OS, 2);
  J.object([&] {
    J.attribute("model", OG.name());
    J.attribute("cluster", C.getName());
    J.attributeArray("segments", [&] {
      for (unsigned I = 0, E = Split.Segments.size(); I != E; ++I) {
        const SplitModel::Segment &Seg = Split.Segments[I];
        const onnx::GraphProto &PG = Split.Models[I]->graph();
        J.object([&] {
          J.attribute("index", int64_t(I));
          J.attribute("device", DeviceName(I));
          J.attribute("file", Files[I]);
          J.attribute("nodes", int64_t(PG.node_size()));
          J.attributeArray("inputs", [&] {
            for (const auto &VI : PG.input())
              J.value(VI.name());
          });
          J.attributeArray("outputs", [&] {
            for (const auto &VI : PG.output())
              J.value(VI.name());
          });
          J.attributeArray("after", [&] {
            for (unsigned A : Seg.After)
              J.value(int64_t(A));
          });
        });
      }
    });
    J.attributeArray("transfers", [&] {
      for (unsigned I = 0, E = Split.Transfers.size(); I != E; ++I) {
        const SegmentTensor &X = Split.Transfers[I];
        J.object([&] {
          J.attribute("order", int64_t(I));
          J.attribute("tensor", X.Name);
          J.attribute("producer", PM.getNodeNames()[X.ProducerNode]);
          J.attribute("from_segment", int64_t(X.From));
          J.attributeArray("to_segments", [&] {
            for (unsigned Seg : X.To)
              J.value(int64_t(Seg));
          });
          J.attribute("from", DeviceName(X.From));
          // The devices of the reading segments, each once, by device.
          SmallVector<unsigned, 4> Devs;
          for (unsigned Seg : X.To)
            Devs.push_back(Split.Segments[Seg].Device);
          llvm::sort(Devs);
          Devs.erase(std::unique(Devs.begin(), Devs.end()), Devs.end());
          J.attributeArray("to", [&] {
            for (unsigned Dev : Devs)
              J.value(C.getDevices()[Dev].Name);
          });
          if (X.Bytes)
            J.attribute("bytes", int64_t(*X.Bytes));
          else
            J.attribute("bytes", nullptr);
        });
      }
    });
    J.attributeBegin("order");
    writeScheduleOrder(J, Schedule.Order);
    J.attributeEnd();
    // The simulated step, as the placed model's dp.predicted.
    if (Expected<json::Value> Predicted =
            json::parse(makePredictedJSON(S, Schedule)))
      J.attribute("predicted", *Predicted);
    else
      consumeError(Predicted.takeError());
    if (S.Plan) {
      J.attributeBegin("pipeline");
      writePipelinePlan(J, S, Schedule);
      J.attributeEnd();
    }
  });
  OS << '\n';
}

} // namespace dp
