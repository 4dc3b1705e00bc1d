//===- LearnedPlacers.cpp - The learned placers of Placers.def ------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
//
// What the learned placers of lib/Learn see of a placement problem: a
// fixed-width feature row per unit (Mars 3.1: op type, input and output
// shapes normalized by the largest dimension; Placeto: compute time and
// output size), the unit graph, the topological order, and the simulator
// as the score. Each placer of Placers.def here parses the options all
// learned placers share and calls its search in lib/Learn.
//
//===----------------------------------------------------------------------===//

#include "Placers.h"
#include "dp/Colocate/Colocate.h"
#include "dp/Learn/Plugin.h"
#include "dp/Place/LearnTask.h"
#include "dp/Support/Diagnostics.h"
#include "dp/Support/FileOutput.h"
#include "dp/Support/Options.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

using namespace llvm;

namespace dp {

namespace {
/// The op kinds of the one-hot feature, in feature order: the FEATURE field
/// of the op registry (include/dp/IR/Ops.def) names one. The order fixes
/// the feature ids, which the saved policies were trained with: append
/// kinds before Other, never reorder.
// clang-format off
enum class OpFeatureKind : unsigned {
  Conv, MatMul, Gemm, BatchNorm, LayerNorm, Relu, Sigmoid, Tanh, Gelu,
  Softmax, Add, Sub, Mul, Div, Pow, Sqrt, MaxPool, AvgPool, Concat, Split,
  Slice, Gather, Reshape, Transpose, Reduce, Dropout, Cast, Shape, Constant,
  Identity, Where, Expand, Recurrent, Sum, Loss, Update, Control, Other,
};
// clang-format on
} // namespace

/// The names of the OpFeatureKinds, in order.
static const char *const OpKinds[] = {
    "Conv",    "MatMul",  "Gemm",      "BatchNorm", "LayerNorm", "Relu",
    "Sigmoid", "Tanh",    "Gelu",      "Softmax",   "Add",       "Sub",
    "Mul",     "Div",     "Pow",       "Sqrt",      "MaxPool",   "AvgPool",
    "Concat",  "Split",   "Slice",     "Gather",    "Reshape",   "Transpose",
    "Reduce",  "Dropout", "Cast",      "Shape",     "Constant",  "Identity",
    "Where",   "Expand",  "Recurrent", "Sum",       "Loss",      "Update",
    "Control", "other"};
static constexpr unsigned NumOpKinds = std::size(OpKinds);
static_assert(NumOpKinds == unsigned(OpFeatureKind::Other) + 1,
              "one name per OpFeatureKind");
/// Per unit: op-kind shares, backward share, output shape (4), input shape
/// (4), and then the cost features: fastest and slowest compute time,
/// output bytes, memory, in- and out-degree.
static constexpr unsigned NumCostFeatures = 6;
static constexpr unsigned CostFeatures = NumOpKinds + 1 + 4 + 4;
static constexpr unsigned NumFeatures = CostFeatures + NumCostFeatures;

unsigned getOpFeatureId(StringRef Type) {
  static const StringMap<OpFeatureKind> Kinds = [] {
    StringMap<OpFeatureKind> M;
#define FEATURE(KIND) OpFeatureKind::KIND
#define OP(NAME, COST, BACKWARD, ONEDNN, FEATURE, OPSET, RUNTIME)              \
  M.try_emplace(NAME, FEATURE);
#define DP_OP(NAME, COST, FEATURE) M.try_emplace(NAME, FEATURE);
#include "dp/IR/Ops.def"
#undef FEATURE
    // Names of no ONNX or dp op (a contrib op, and two the kinds' first
    // table had), kept so that models using them keep their features.
    M.try_emplace("SkipLayerNormalization", OpFeatureKind::LayerNorm);
    M.try_emplace("Loss", OpFeatureKind::Loss);
    M.try_emplace("SGD", OpFeatureKind::Update);
    return M;
  }();
  if (Type.endswith("Grad"))
    Type = Type.drop_back(4);
  auto It = Kinds.find(Type);
  return unsigned(It == Kinds.end() ? OpFeatureKind::Other : It->second);
}

/// The last four dims of \p T, right-aligned, over \p Largest.
static void addShape(float *Row, const TensorType *T, double Largest) {
  if (!T)
    return;
  unsigned Rank = T->getRank();
  for (unsigned K = 0; K != 4 && K < Rank; ++K) {
    int64_t D = T->Dims[Rank - 1 - K];
    Row[3 - K] = D > 0 ? float(D / Largest) : 0;
  }
}

/// log(1 + X) / log(1 + Max): times and sizes span orders of magnitude.
static float logScale(double X, double Max) {
  return Max > 0 ? float(std::log1p(X) / std::log1p(Max)) : 0;
}

LearnTask buildLearnTask(const PlacementProblem &P) {
  const Graph &G = P.getGraph();
  LearnTask T;
  T.NumUnits = P.getNumUnits();
  T.NumDevices = P.getNumDevices();
  T.NumFeatures = NumFeatures;
  T.NumCostFeatures = NumCostFeatures;
  T.Features.assign(size_t(T.NumUnits) * NumFeatures, 0);
  T.OpTypeNames.assign(std::begin(OpKinds), std::end(OpKinds));
  T.OpType.assign(T.NumUnits, NumOpKinds - 1);

  double Largest = 1;
  for (TensorId Id = 0, E = G.getNumTensors(); Id != E; ++Id)
    for (int64_t D : G.getTensor(Id).Type.Dims)
      Largest = std::max(Largest, double(D));
  std::vector<double> MinTime(T.NumUnits), MaxTime(T.NumUnits),
      OutBytes(T.NumUnits, 0);
  std::vector<unsigned> InDegree(T.NumUnits, 0), OutDegree(T.NumUnits, 0);
  double TimeScale = 0, BytesScale = 0, MemoryScale = 0, DegreeScale = 1;
  for (unsigned U = 0; U != T.NumUnits; ++U) {
    MinTime[U] = MaxTime[U] = P.getUnitTime(U, 0);
    for (unsigned D = 1; D != T.NumDevices; ++D) {
      MinTime[U] = std::min(MinTime[U], P.getUnitTime(U, D));
      MaxTime[U] = std::max(MaxTime[U], P.getUnitTime(U, D));
    }
    TimeScale = std::max(TimeScale, MaxTime[U]);
    MemoryScale = std::max(MemoryScale, double(P.getUnitMemory(U)));
  }
  for (const UnitEdge &E : P.getEdges()) {
    T.Edges.push_back({E.From, E.To, double(E.Bytes)});
    OutBytes[E.From] += double(E.Bytes);
    ++OutDegree[E.From];
    ++InDegree[E.To];
  }
  for (unsigned U = 0; U != T.NumUnits; ++U) {
    BytesScale = std::max(BytesScale, OutBytes[U]);
    DegreeScale =
        std::max({DegreeScale, double(InDegree[U]), double(OutDegree[U])});
  }

  for (unsigned U = 0; U != T.NumUnits; ++U) {
    float *Row = &T.Features[size_t(U) * NumFeatures];
    ArrayRef<uint32_t> Ops = P.getUnitOps(U);
    unsigned Backward = 0;
    std::vector<unsigned> Count(NumOpKinds, 0);
    for (uint32_t O : Ops) {
      const Op &TheOp = G.getOp(O);
      ++Count[getOpFeatureId(TheOp.Type)];
      Backward += TheOp.Domain == "dp";
    }
    for (unsigned K = 0; K != NumOpKinds; ++K)
      Row[K] = float(Count[K]) / Ops.size();
    T.OpType[U] = std::max_element(Count.begin(), Count.end()) - Count.begin();
    float *F = Row + NumOpKinds;
    F[0] = float(Backward) / Ops.size();
    const Op &First = G.getOp(Ops.front());
    addShape(F + 1,
             First.Results.empty() ? nullptr : getResultType(G, First, 0),
             Largest);
    addShape(F + 5,
             First.Operands.empty() ? nullptr : getOperandType(G, First, 0),
             Largest);
    F[9] = logScale(MinTime[U] * 1e6, TimeScale * 1e6);
    F[10] = logScale(MaxTime[U] * 1e6, TimeScale * 1e6);
    F[11] = logScale(OutBytes[U], BytesScale);
    F[12] = logScale(double(P.getUnitMemory(U)), MemoryScale);
    F[13] = float(InDegree[U] / DegreeScale);
    F[14] = float(OutDegree[U] / DegreeScale);
  }
  T.Order.assign(P.getTopologicalOrder().begin(),
                 P.getTopologicalOrder().end());
  T.Evaluate = [&P](ArrayRef<uint32_t> Placement) {
    const SimResult &R = P.simulate(Placement);
    Evaluation E{R.StepTime, R.OOM};
    for (unsigned D = 0; D != R.PeakBytes.size(); ++D) {
      double Peak = double(R.PeakBytes[D]);
      double Capacity = double(P.getDeviceCapacity(D));
      if (D == 0 || Peak * E.CapacityBytes > E.PeakBytes * Capacity) {
        E.PeakBytes = Peak;
        E.CapacityBytes = Capacity;
      }
    }
    return E;
  };
  return T;
}

/// The options every learned placer takes, besides seconds= and evals=
/// (which bounds the samples).
static Expected<SearchOptions>
getSearchOptions(const PlaceOptions &Opts,
                 std::vector<std::pair<std::string, std::string>> &Own) {
  SearchOptions S;
  S.Seed = Opts.Seed;
  S.Seconds = Opts.Seconds;
  S.Samples = Opts.Evaluations;
  S.Progress = Opts.Progress;
  std::string Prefix = "place{algo=" + Opts.Algo + "}: ";
  for (const auto &[Key, Value] : Opts.Extra) {
    if (Key == "samples" || Key == "finetune" || Key == "threads") {
      uint64_t N;
      if (!to_integer(StringRef(Value), N, 10) || N == 0)
        return makeError(Prefix + Key + " must be a positive integer, not '" +
                         Value + "'");
      if (Key == "samples")
        S.Samples = N;
      else if (Key == "finetune")
        S.FinetuneSamples = N;
      else
        S.Threads = unsigned(std::min<uint64_t>(N, 256));
      continue;
    }
    if (Key == "count-flops") {
      OptionTable Table("place{algo=" + Opts.Algo + "}");
      Table.flag("count-flops", S.CountFlops);
      if (Error E = OptionError::toLocated(Table.parse({{Key, Value}})))
        return std::move(E);
      continue;
    }
    if (Key == "save" || Key == "load") {
      if (Value.empty())
        return makeError(Prefix + Key + "= needs a file name");
      (Key == "save" ? S.SaveFile : S.LoadFile) = Value;
      continue;
    }
    Own.emplace_back(Key, Value);
  }
  if (S.FinetuneSamples && S.LoadFile.empty())
    return makeError(Prefix + "finetune= fine-tunes a loaded policy: give "
                              "load=FILE too");
  return S;
}

/// Placeto's raw features (its section 2.2) of a unit are its run time and
/// the size of its outputs: of buildLearnTask's row, the compute time on
/// the fastest device and the output bytes, log-scaled. Placeto adds the
/// current device and the visited and current flags.
static LearnTask getPlacetoTask(LearnTask T) {
  static constexpr unsigned Columns[] = {CostFeatures, CostFeatures + 2};
  std::vector<float> Features;
  Features.reserve(size_t(T.NumUnits) * std::size(Columns));
  for (unsigned U = 0; U != T.NumUnits; ++U)
    for (unsigned C : Columns)
      Features.push_back(T.Features[size_t(U) * T.NumFeatures + C]);
  T.NumFeatures = std::size(Columns);
  T.NumCostFeatures = T.NumFeatures;
  T.Features = std::move(Features);
  return T;
}

/// Mars places at most this many groups unless groups= says otherwise
/// (docs/placers/mars.md, "Defaults": chosen on graphs of models/corpus).
static constexpr unsigned MarsDefaultGroups = 128;

/// Runs the learned placer \p Algo on P's task (Placeto's features are
/// its own); Mars on P's units merged into its groups= when they are more.
static Expected<std::vector<uint32_t>> placeLearned(const PlacementProblem &P,
                                                    const PlaceOptions &Opts,
                                                    StringRef Algo) {
  std::vector<std::pair<std::string, std::string>> Own;
  Expected<SearchOptions> S = getSearchOptions(Opts, Own);
  if (!S)
    return S.takeError();
  const PlacementProblem *Placed = &P;
  std::optional<std::pair<PlacementProblem, std::vector<uint32_t>>> Merged;
  if (Algo == "mars") {
    std::string Who = "place{algo=" + Opts.Algo + "}";
    unsigned Groups = MarsDefaultGroups;
    std::vector<std::pair<std::string, std::string>> Rest;
    OptionTable Table(Who);
    Table.integer("groups", Groups, 0u)
        .otherKeys("...", [&](StringRef Key, StringRef Value) {
          Rest.emplace_back(Key.str(), Value.str());
          return Error::success();
        });
    if (Error E = OptionError::toLocated(Table.parse(Own)))
      return std::move(E);
    Own = std::move(Rest);
    if (Groups && P.getNumUnits() > Groups) {
      auto M = mergeUnits(P, Groups, Who);
      if (!M)
        return M.takeError();
      Merged = std::move(*M);
      Placed = &Merged->first;
    }
  }
  LearnTask T = buildLearnTask(*Placed);
  if (Algo == "placeto")
    T = getPlacetoTask(std::move(T));
  Expected<SearchResult> R = runLearnedPlacer(Algo, T, *S, Own);
  if (!R)
    return R.takeError();
  if (!S->SaveFile.empty())
    if (Error E = writeFileAtomically(
            S->SaveFile, [&](raw_ostream &OS) { OS << R->SavedPolicy; }))
      return std::move(E);
  if (Opts.Curve)
    *Opts.Curve = std::move(R->Curve);
  if (R->BestEval.OutOfMemory)
    return makeNoFitErrorFromSim(*Placed, Opts.Algo, R->Best,
                                 Placed->simulate(R->Best));
  if (!Merged)
    return std::move(R->Best);
  std::vector<uint32_t> Best(P.getNumUnits());
  for (unsigned U = 0; U != P.getNumUnits(); ++U)
    Best[U] = R->Best[Merged->second[U]];
  return Best;
}

#define LEARNED_PLACER(NAME, ID, PARAMS, DESCRIPTION)                          \
  Expected<std::vector<uint32_t>> place##ID(const PlacementProblem &P,         \
                                            const PlaceOptions &Opts) {        \
    return placeLearned(P, Opts, NAME);                                        \
  }
#include "dp/Learn/LearnedPlacers.def"

} // namespace dp
