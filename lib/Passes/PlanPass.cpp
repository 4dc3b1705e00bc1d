//===- PlanPass.cpp - How a model should use a cluster --------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
//
// The plan search (docs/plans.md). Candidates, each simulated as a whole
// step: for every replica count R that divides the compute devices and
// the batch, and for each layout of the replicas (contiguous blocks, and
// interleaved where that differs), one replica's devices run
// - one device each (data parallel): one micro-batch, or more only when
//   one does not fit (gradient accumulation);
// - a pipeline over them: the pipeline placer's stages and cuts for each
//   M = 2, 4, ... up to max-microbatches and the replica's batch, again
//   recomputing activations when no cut fits without;
// and the flat placer's op placement of the whole batch (one replica, one
// micro-batch). A candidate whose weights and optimizer state alone
// exceed its devices' memory is not simulated. The budget is shared out
// evenly among the candidates left, the flat one getting a quarter.
//
//===----------------------------------------------------------------------===//

#include "dp/Passes/PlanPass.h"
#include "dp/IR/Annotations.h"
#include "dp/IR/Graph.h"
#include "dp/IR/Grouping.h"
#include "dp/Place/Placer.h"
#include "dp/Sim/SimulatePass.h"
#include "dp/Sim/StepSimulation.h"
#include "dp/Support/Diagnostics.h"
#include "dp/Support/Format.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>

using namespace llvm;

namespace dp {

namespace {

/// One configuration to try: replicas, their stride (0: contiguous),
/// micro-batches.
struct Config {
  unsigned Replicas = 1, Stride = 0, MicroBatches = 1;
};

class PlanSearcher {
public:
  PlanSearcher(const PlanOptions &Opts, PassContext &Ctx)
      : Opts(Opts), Ctx(Ctx), C(*Ctx.TheCluster) {}

  Error run(Graph &G);

private:
  /// The graph of one replica's micro-batch under \p Cfg (with
  /// \p Recompute), or the import's error.
  Expected<Graph> importFor(const Config &Cfg, bool Recompute) const;
  /// Places and simulates \p Cfg within \p Seconds; the candidate, and
  /// in \p Placement its placement when it fits.
  PlanCandidate evaluate(const Config &Cfg, bool Recompute, double Seconds,
                         std::vector<uint32_t> &Placement);
  /// Simulates \p Units of \p Problem for \p P (its stages, step, fit)
  /// and gives their op placement in \p Placement.
  void score(const PlacementProblem &Problem, ArrayRef<uint32_t> Units,
             PlanCandidate &P, std::vector<uint32_t> &Placement);
  /// The flat placer's candidate on \p G (the whole batch).
  PlanCandidate evaluateFlat(const Graph &G, double Seconds,
                             std::vector<uint32_t> &Placement);
  /// Records \p P; keeps it (and its placement) when it is the fastest.
  void consider(PlanCandidate P, std::vector<uint32_t> &Placement,
                bool Recompute, const Config &Cfg);
  double secondsLeft() const {
    return Opts.Seconds - std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - Began)
                              .count();
  }
  void progress(const PlanCandidate &P) const;
  /// The configurations to try, in order: data parallel (one device per
  /// replica), then pipelines and hybrids.
  void enumerate(std::vector<Config> &Parallel,
                 std::vector<Config> &Pipelined) const;
  /// Why no plan fits: the error naming the plan with the most devices and
  /// micro-batches per replica (the flat one's when there is none).
  Error explainNoFit() const;
  /// The chosen plan first, then the fastest of each other kind (or,
  /// where none fits, the first tried, with why).
  std::vector<PlanCandidate> getReported() const;

  const PlanOptions &Opts;
  PassContext &Ctx;
  const Cluster &C;
  std::chrono::steady_clock::time_point Began =
      std::chrono::steady_clock::now();
  /// The compute devices, and the batch (samples per step; 0 unknown).
  std::vector<unsigned> Devs;
  int64_t Batch = 0;
  std::vector<PlanCandidate> All;
  unsigned Tried = 0;
  /// The fastest plan that fits so far, its placement and configuration
  /// (BestFlat: it is the flat placer's, on the graph as given).
  int Best = -1;
  std::vector<uint32_t> BestPlacement;
  Config BestConfig;
  bool BestRecompute = false, BestFlat = false;
};

} // namespace

/// The batch of \p G: the size of the first batched data input's batch
/// axis (import-onnx's batch-axis= for it, else 0), or 0.
static int64_t getGlobalBatch(const Graph &G,
                              ArrayRef<PipelineElement> Prefix) {
  for (TensorId T : G.getInputs()) {
    const Tensor &Tn = G.getTensor(T);
    if (Tn.Kind != TensorKind::Input || Tn.Type.Dims.empty())
      continue;
    int64_t Axis = 0;
    for (const PipelineElement &E : Prefix)
      for (const auto &KV : E.Options)
        if (KV.first == "batch-axis" &&
            StringRef(KV.second).split(':').first == Tn.Name)
          to_integer(StringRef(KV.second).split(':').second, Axis, 10);
    ArrayRef<int64_t> Shape = Tn.Type.Dims;
    if (Axis < int64_t(Shape.size()) && Shape[Axis] > 0)
      return Shape[Axis];
  }
  return 0;
}

/// An error's message without its location and "error: ", for a plan's
/// note.
static std::string getMessage(Error E) {
  std::string S = toString(std::move(E));
  size_t At = S.find("error: ");
  return At == std::string::npos ? S : S.substr(At + 7);
}

static std::string describe(const PlanCandidate &P) {
  std::string S;
  raw_string_ostream OS(S);
  OS << P.Kind << ": " << P.Replicas << " replica"
     << (P.Replicas == 1 ? "" : "s");
  if (P.Replicas > 1 && P.ReplicaStride)
    OS << " (stride " << P.ReplicaStride << ")";
  OS << " x " << P.Stages << " stage" << (P.Stages == 1 ? "" : "s") << ", "
     << P.MicroBatches << " micro-batch" << (P.MicroBatches == 1 ? "" : "es");
  if (P.Recompute)
    OS << ", recomputing";
  return OS.str();
}

void PlanSearcher::progress(const PlanCandidate &P) const {
  if (!Ctx.Progress)
    return;
  *Ctx.Progress << "plan: " << describe(P) << ": ";
  if (P.StepTime > 0 && P.Fits)
    *Ctx.Progress << formatSeconds(P.StepTime);
  else
    *Ctx.Progress << P.Note;
  *Ctx.Progress << '\n';
}

Expected<Graph> PlanSearcher::importFor(const Config &Cfg,
                                        bool Recompute) const {
  std::vector<PipelineElement> Elements = Opts.Prefix;
  PipelineElement Plan;
  Plan.Name = "pipeline";
  Plan.HasBraces = true;
  Plan.Options = {{"microbatches", std::to_string(Cfg.MicroBatches)},
                  {"schedule", getPipelineScheduleName(Opts.Schedule).str()},
                  {"replicas", std::to_string(Cfg.Replicas)}};
  if (Cfg.Stride)
    Plan.Options.push_back({"replica-stride", std::to_string(Cfg.Stride)});
  if (Recompute)
    Plan.Options.push_back({"recompute", "true"});
  // The batch axes the import was given are the pipeline's.
  for (const PipelineElement &E : Opts.Prefix)
    if (E.Name == "import-onnx")
      for (const auto &KV : E.Options)
        if (KV.first == "batch-axis")
          Plan.Options.push_back(KV);
  Elements.push_back(std::move(Plan));
  PassManager PM;
  if (Error E = buildPassPipeline(PM, std::move(Elements)))
    return std::move(E);
  PassContext Sub;
  Sub.Input = Ctx.Input;
  Sub.Seed = Ctx.Seed;
  Sub.TheCluster = Ctx.TheCluster;
  Graph G;
  if (Error E = PM.run(G, Sub))
    return std::move(E);
  return std::move(G);
}

static std::string getKind(unsigned Replicas, unsigned Stages) {
  if (Replicas > 1)
    return Stages > 1 ? "hybrid" : "data parallel";
  return Stages > 1 ? "pipeline" : "one device";
}

PlanCandidate PlanSearcher::evaluate(const Config &Cfg, bool Recompute,
                                     double Seconds,
                                     std::vector<uint32_t> &Placement) {
  PlanCandidate P;
  P.Replicas = Cfg.Replicas;
  P.ReplicaStride = Cfg.Stride;
  P.MicroBatches = Cfg.MicroBatches;
  P.Schedule = getPipelineScheduleName(Opts.Schedule).str();
  P.Recompute = Recompute;
  PipelinePlan Plan;
  Plan.Replicas = Cfg.Replicas;
  Plan.ReplicaStride = Cfg.Stride;
  std::vector<unsigned> Group = getReplicaGroup(C, Plan, Devs);
  P.Stages = Group.size();
  P.Kind = getKind(P.Replicas, P.Stages);
  Expected<Graph> G = importFor(Cfg, Recompute);
  if (!G) {
    P.Note = "not imported: " + getMessage(G.takeError());
    return P;
  }
  // What every plan holds all step, spread over the replica's devices at
  // best, must fit them.
  uint64_t Held = getHeldBytes(*G), Capacity = 0;
  for (unsigned D : Group)
    Capacity += C.getDeviceType(D).MemoryBytes;
  if (Held > Capacity) {
    P.Note = "does not fit: " + formatBytes(Held) +
             " of weights and optimizer state over " + formatBytes(Capacity);
    return P;
  }
  Expected<PlacementProblem> Problem = PlacementProblem::build(*G, C);
  if (!Problem) {
    P.Note = getMessage(Problem.takeError());
    return P;
  }
  std::vector<uint32_t> Units;
  if (Group.size() == 1) {
    Units.assign(Problem->getNumUnits(), Group.front());
  } else {
    PlaceOptions PO;
    PO.Algo = "pipeline";
    PO.Seed = Ctx.Seed;
    PO.Seconds = std::max(Seconds, 0.1);
    if (any_of(Devs, [&](unsigned D) {
          return C.getDeviceType(D).Kind == DeviceKind::CPU;
        }))
      PO.Extra.push_back({"devices", "all"});
    Expected<std::vector<uint32_t>> Placed =
        lookupPlacer("pipeline")->Run(*Problem, PO);
    if (!Placed) {
      P.Note = "does not fit: " + getMessage(Placed.takeError());
      return P;
    }
    Units = std::move(*Placed);
  }
  score(*Problem, Units, P, Placement);
  P.Kind = getKind(P.Replicas, P.Stages);
  return P;
}

PlanCandidate PlanSearcher::evaluateFlat(const Graph &G, double Seconds,
                                         std::vector<uint32_t> &Placement) {
  PlanCandidate P;
  P.Kind = "op placement";
  P.Note = "placer: " + Opts.Flat;
  Expected<PlacementProblem> Problem = PlacementProblem::build(G, C);
  if (!Problem) {
    P.Note = getMessage(Problem.takeError());
    return P;
  }
  PlaceOptions PO;
  PO.Algo = Opts.Flat;
  PO.Seed = Ctx.Seed;
  PO.Seconds = std::max(Seconds, 0.1);
  const PlacerInfo *Info = lookupPlacer(Opts.Flat);
  Expected<std::vector<uint32_t>> Placed = Info->Run(*Problem, PO);
  if (!Placed) {
    P.Note = "does not fit: " + getMessage(Placed.takeError());
    return P;
  }
  score(*Problem, *Placed, P, Placement);
  return P;
}

void PlanSearcher::score(const PlacementProblem &Problem,
                         ArrayRef<uint32_t> Units, PlanCandidate &P,
                         std::vector<uint32_t> &Placement) {
  const SimResult &R = Problem.simulate(Units);
  ++Tried;
  P.Stages = count_if(R.OpCount, [](uint32_t N) { return N != 0; });
  P.StepTime = R.StepTime;
  P.Fits = !R.OOM;
  if (!P.Fits)
    P.Note = "does not fit: " + C.getDevices()[R.OOMDevice].Name + " over by " +
             formatBytes(R.OOMBytesOver);
  Placement = Problem.expand(Units);
}

void PlanSearcher::consider(PlanCandidate P, std::vector<uint32_t> &Placement,
                            bool Recompute, const Config &Cfg) {
  progress(P);
  bool Flat = P.Kind == "op placement";
  if (P.Fits && P.StepTime > 0 &&
      (Best < 0 || P.StepTime < All[Best].StepTime)) {
    Best = All.size();
    BestPlacement = std::move(Placement);
    BestConfig = Cfg;
    BestRecompute = Recompute;
    BestFlat = Flat;
  }
  All.push_back(std::move(P));
}

void PlanSearcher::enumerate(std::vector<Config> &Parallel,
                             std::vector<Config> &Pipelined) const {
  unsigned N = Devs.size();
  auto Divides = [&](unsigned K) { return !Batch || Batch % K == 0; };
  for (unsigned R = 1; R <= N; ++R) {
    if (N % R || !Divides(R))
      continue;
    unsigned Size = N / R;
    if (Size == 1) {
      if (R > 1)
        Parallel.push_back({R, 0, 1});
      continue;
    }
    SmallVector<unsigned, 2> Strides = {0};
    if (R > 1)
      Strides.push_back(1); // Interleaved: the stages of a replica apart.
    for (unsigned Stride : Strides)
      for (unsigned M = 2; M <= unsigned(Opts.MaxMicroBatches); M *= 2)
        if (Divides(R * M))
          Pipelined.push_back({R, Stride, M});
  }
}

Error PlanSearcher::explainNoFit() const {
  std::string Why;
  unsigned Most = 0;
  for (const PlanCandidate &P : All)
    if (P.Replicas == 1 && !P.Note.empty() &&
        (Why.empty() || (P.Kind != "op placement" && P.MicroBatches > Most))) {
      Why = describe(P) + ": " + P.Note;
      Most = P.Kind == "op placement" ? 0 : P.MicroBatches;
    }
  return makeError("plan: no plan fits on '" + C.getName() + "' (" +
                   Twine(All.size()) + " tried; " +
                   (Why.empty() ? "none could be placed" : Why) + ")");
}

std::vector<PlanCandidate> PlanSearcher::getReported() const {
  std::vector<PlanCandidate> Plans{All[Best]};
  for (StringRef Kind :
       {"data parallel", "pipeline", "hybrid", "op placement", "one device"}) {
    if (All[Best].Kind == Kind)
      continue;
    int K = -1;
    for (unsigned I = 0; I != All.size(); ++I)
      if (All[I].Kind == Kind &&
          (K < 0 || (All[I].Fits &&
                     (!All[K].Fits || All[I].StepTime < All[K].StepTime))))
        K = I;
    if (K >= 0)
      Plans.push_back(All[K]);
  }
  return Plans;
}

Error PlanSearcher::run(Graph &G) {
  for (unsigned D : getComputeDevices(C))
    Devs.push_back(D);
  Batch = getGlobalBatch(G, Opts.Prefix);
  auto Divides = [&](unsigned K) { return !Batch || Batch % K == 0; };

  // The configurations, in the order they are tried.
  std::vector<Config> Pipelined;
  std::vector<Config> Parallel;
  enumerate(Parallel, Pipelined);
  bool HasFlat = !Opts.Flat.empty() && Opts.Flat != "none";
  unsigned Left = Parallel.size() + Pipelined.size();
  double FlatShare = HasFlat ? Opts.Seconds / 4 : 0;
  auto Share = [&] {
    return std::max(0.0, secondsLeft() - FlatShare) / std::max(1u, Left);
  };

  for (const Config &Cfg : Parallel) {
    --Left;
    // One micro-batch; more only while it does not fit.
    for (Config Try = Cfg;; Try.MicroBatches *= 2) {
      std::vector<uint32_t> Placement;
      PlanCandidate P = evaluate(Try, false, Share(), Placement);
      bool Retry = !P.Fits && P.StepTime > 0 &&
                   Try.MicroBatches * 2 <= unsigned(Opts.MaxMicroBatches) &&
                   Divides(Try.Replicas * Try.MicroBatches * 2);
      consider(std::move(P), Placement, false, Try);
      if (!Retry)
        break;
    }
  }
  for (const Config &Cfg : Pipelined) {
    --Left;
    std::vector<uint32_t> Placement;
    PlanCandidate P = evaluate(Cfg, false, Share(), Placement);
    if (!P.Fits && StringRef(P.Note).startswith("does not fit: ") &&
        P.Note.find("weights and optimizer state") == std::string::npos) {
      // No cut held the activations: recompute them.
      consider(std::move(P), Placement, false, Cfg);
      std::vector<uint32_t> Again;
      PlanCandidate Q = evaluate(Cfg, true, Share(), Again);
      consider(std::move(Q), Again, true, Cfg);
      continue;
    }
    consider(std::move(P), Placement, false, Cfg);
  }
  if (HasFlat) {
    std::vector<uint32_t> Placement;
    PlanCandidate P =
        evaluateFlat(G, std::max(FlatShare, secondsLeft()), Placement);
    consider(std::move(P), Placement, false, Config());
  }

  PlanSearch Search;
  Search.GlobalBatch = Batch;
  Search.Tried = Tried;
  Search.Seconds = Opts.Seconds - secondsLeft();
  if (Best < 0)
    return explainNoFit();
  Search.Plans = getReported();

  // The chosen plan's graph, placed.
  if (!BestFlat) {
    Expected<Graph> Chosen = importFor(BestConfig, BestRecompute);
    if (!Chosen)
      return Chosen.takeError();
    G = std::move(*Chosen);
  }
  for (OpId O = 0, E = G.getNumOps(); O != E; ++O)
    ann::set(G.getOp(O), ann::Device,
             StringRef(C.getDevices()[BestPlacement[O]].Name));
  ann::set(G, ann::Placer, StringRef(BestFlat ? Opts.Flat : "plan"));
  if (Ctx.Report) {
    *Ctx.Report << "plan: " << describe(All[Best]) << ", "
                << formatSeconds(All[Best].StepTime) << " per step (" << Tried
                << " plans simulated in " << format("%.1f", Search.Seconds)
                << " s)\n";
  }
  Ctx.Analyses.set(PlacementSearch{Search.Seconds, Tried});
  Ctx.Analyses.set(std::move(Search));
  return Error::success();
}

Error PlanPass::run(Graph &G, PassContext &Ctx) {
  if (!Ctx.TheCluster)
    return makeError("plan needs a cluster: pass -cluster=<preset|file>");
  if (none_of(Opts.Prefix,
              [](const PipelineElement &E) { return E.Name == "import-onnx"; }))
    return makeError("plan needs import-onnx before it in the pipeline: it "
                     "imports the model again at each plan's micro-batch "
                     "size");
  for (const PipelineElement &E : Opts.Prefix)
    if (E.Name == "pipeline" || E.Name == "place" || E.Name == "plan")
      return makeError("plan chooses the replicas, micro-batches and "
                       "placement itself: remove the " +
                       E.Name + "{} before it");
  if (getPipelinePlan(G))
    return makeError("plan: the graph already has a plan");
  if (!Opts.Flat.empty() && Opts.Flat != "none" && !lookupPlacer(Opts.Flat))
    return makeError("plan: flat=" + Opts.Flat +
                     " is not a placer (dp-opt -print-passes lists them)");
  PlanSearcher S(Opts, Ctx);
  return S.run(G);
}

void PlanPass::printPipeline(raw_ostream &OS) const {
  printPassOptions(OS, name(), Opts, describeOptions);
}

OptionTable PlanPass::describeOptions(PlanOptions &O) {
  OptionTable T(name().str());
  T.number("seconds", O.Seconds, "S", "a positive number of seconds",
           [](double V) { return V > 0 && V <= 86400; })
      .integer<int64_t>("max-microbatches", O.MaxMicroBatches, 1, 1 << 16)
      .text("flat", O.Flat, "NAME|none")
      .choice<PipelineScheduleKind>("schedule", O.Schedule,
                                    getPipelineScheduleNames());
  return T;
}

} // namespace dp
