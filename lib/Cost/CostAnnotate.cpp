//===- CostAnnotate.cpp - The cost-annotate pass --------------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/Cost/CostAnnotate.h"
#include "dp/Cluster/Cluster.h"
#include "dp/Cost/OneDNN.h"
#include "dp/Cost/OpCost.h"
#include "dp/Cost/Profile.h"
#include "dp/IR/Annotations.h"
#include "dp/IR/Graph.h"
#include "dp/Support/Diagnostics.h"
#include "dp/Support/EnumNames.h"
#include "dp/Support/Format.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Timer.h"

#include <cmath>
#include <memory>

using namespace llvm;

namespace dp {

bool isCostAnnotation(StringRef Name) {
  return ann::isTimeKey(Name) || Name.startswith("time_shared.") ||
         Name == "flops" || Name == "output_bytes" ||
         Name == "persistent_bytes" || Name == "workspace_bytes" ||
         Name == "cost_source" || Name == "cost_note";
}

static void eraseCostAnnotations(AttributeList &L) {
  std::vector<std::string> Names;
  for (const NamedAttribute &A : L)
    if (isCostAnnotation(A.Name))
      Names.push_back(A.Name);
  for (const std::string &N : Names)
    L.erase(N);
}

namespace {
enum class SourceKind : uint8_t { Roofline, OneDNN, Profile };
} // namespace

static constexpr EnumEntry<SourceKind> SourceNames[] = {
    {"roofline", SourceKind::Roofline},
    {"onednn", SourceKind::OneDNN},
    {"profile", SourceKind::Profile},
};

static StringRef getSourceName(SourceKind K) {
  return getEnumName<SourceKind>(SourceNames, K);
}

/// Rounds \p V to an integer annotation, saturating where int64 ends.
static int64_t toInt64(double V) {
  constexpr double Max = 9.2e18;
  return V >= Max ? int64_t(Max) : int64_t(std::llround(std::max(V, 0.0)));
}

static void appendNote(std::string &Note, const Twine &More) {
  if (!Note.empty())
    Note += "; ";
  Note += More.str();
}

/// The device type a profile's times are for.
static Expected<unsigned> getProfileType(const Cluster &C, StringRef Name) {
  ArrayRef<DeviceType> Types = C.getTypes();
  if (!Name.empty()) {
    int T = C.lookupType(Name);
    if (T >= 0)
      return unsigned(T);
    std::string Known;
    ListSeparator LS(", ");
    for (const DeviceType &DT : Types)
      Known += (Twine(LS) + DT.Name).str();
    return makeError("cost-annotate: profile-device '" + Name +
                     "' is not a device type of cluster '" + C.getName() +
                     "' (it has " + Known + ")");
  }
  for (unsigned T = 0, E = Types.size(); T != E; ++T)
    if (Types[T].Kind == DeviceKind::GPU)
      return T;
  return 0u;
}

namespace {
/// What an op's annotations say besides its times and flops.
struct OpCostExtras {
  std::string Note;
  uint64_t Workspace = 0, Persistent = 0;
  bool HasPersistent = false;
};

/// Costs every op of a graph on every device type of a cluster, in named
/// steps: the roofline estimate (a backward op's is a multiple of its
/// forward op's), a oneDNN measurement on this CPU for the cpu types, and
/// the user's profile for its device type.
class GraphCoster {
public:
  GraphCoster(Graph &G, const Cluster &C, const CostOptions &Opts)
      : G(G), C(C), Opts(Opts), Types(C.getTypes()), NumTypes(Types.size()),
        RooflineTypes(Types.begin(), Types.end()) {}

  /// Loads the profile, if one is given.
  Error loadProfile();
  /// Sets up the oneDNN measurer, if the source is oneDNN and the cluster
  /// has a cpu type.
  Error setUpOneDNN(PassContext &Ctx);
  /// Costs and annotates every op.
  void annotateOps();
  /// Sets the graph's annotations and saves the measurer's cache.
  Error annotateGraph();

private:
  OpId findForward(OpId O) const;
  void deriveFromForward(OpId O, OpId Forward, double *T, OpCostExtras &Extras);
  void estimateRoofline(OpId O, double *T, OpCostExtras &Extras);
  /// The time \p P gives \p O (by its name, its source name, or its
  /// forward op's region), or None. An op timed by its node's own region
  /// (not a backward or update region) also pays the runtime's dispatch
  /// per node, where \p P measured it.
  Optional<double> lookup(const OpProfile &P, OpId O, OpId Forward) const;
  void attributeProfile(OpId O, OpId Forward, double *T, std::string &Note);
  void annotateOp(OpId O, const double *T, OpCostExtras Extras);

  Graph &G;
  const Cluster &C;
  const CostOptions &Opts;
  ArrayRef<DeviceType> Types;
  const unsigned NumTypes;

  Optional<OpProfile> Profile, SharedProfile;
  unsigned ProfileType = 0;
  uint64_t Unmatched = 0;

  std::unique_ptr<OneDNNMeasurer> Measurer;
  std::unique_ptr<Timer> MeasureTimer;
  /// The types the roofline sees: the cluster's, with this machine's
  /// memory bandwidth for the cpu types when oneDNN measures.
  std::vector<DeviceType> RooflineTypes;
  int FirstCPU = -1;

  // Per op, in flat arrays: backward ops read their forward op's costs.
  std::vector<double> Times;
  std::vector<double> Flops;
  std::vector<OpCostKind> Kinds;
  std::vector<SourceKind> Sources;
};
} // namespace

/// The files of a profile= value: several (one per process) are
/// separated by ':'.
static std::vector<std::string> splitProfilePaths(StringRef Value) {
  SmallVector<StringRef, 4> Parts;
  Value.split(Parts, ':', -1, /*KeepEmpty=*/false);
  return std::vector<std::string>(Parts.begin(), Parts.end());
}

Error GraphCoster::loadProfile() {
  if (Opts.ProfilePath.empty())
    return Error::success();
  Expected<OpProfile> P =
      OpProfile::load(splitProfilePaths(Opts.ProfilePath), Opts.ProfileStat);
  if (!P)
    return P.takeError();
  Profile = std::move(*P);
  if (!Opts.SharedProfilePath.empty()) {
    Expected<OpProfile> S = OpProfile::load(
        splitProfilePaths(Opts.SharedProfilePath), Opts.ProfileStat);
    if (!S)
      return S.takeError();
    if (S->getTimeKind() != Profile->getTimeKind())
      return makeError("cost-annotate: shared-profile= times " +
                       getTimeKindName(S->getTimeKind()) + " but profile= " +
                       getTimeKindName(Profile->getTimeKind()) +
                       "; give profiles of the same kind");
    SharedProfile = std::move(*S);
  }
  Expected<unsigned> T = getProfileType(C, Opts.ProfileDevice);
  if (!T)
    return T.takeError();
  ProfileType = *T;
  return Error::success();
}

// oneDNN measures this CPU: its times are for the cluster's cpu types.
// Ops it cannot run fall back to the roofline with this machine's memory
// bandwidth for those types.
Error GraphCoster::setUpOneDNN(PassContext &Ctx) {
  for (unsigned T = 0; T != NumTypes; ++T)
    if (Types[T].Kind == DeviceKind::CPU && FirstCPU < 0)
      FirstCPU = int(T);
  if (Opts.Source != CostSourceKind::OneDNN || FirstCPU < 0)
    return Error::success();
  OneDNNOptions MOpts;
  MOpts.Runs = Opts.Runs;
  MOpts.CacheDir = Opts.CacheDir;
  MOpts.MeasureLimit = Opts.MeasureLimit;
  Expected<std::unique_ptr<OneDNNMeasurer>> M =
      OneDNNMeasurer::create(std::move(MOpts));
  if (!M)
    return M.takeError();
  Measurer = std::move(*M);
  if (Ctx.Timers)
    MeasureTimer = std::make_unique<Timer>(
        "onednn", "cost-annotate: oneDNN measurement", *Ctx.Timers);
  double Bandwidth;
  {
    TimeRegion Region(MeasureTimer.get());
    Bandwidth = Measurer->getMemoryBandwidth();
  }
  for (DeviceType &T : RooflineTypes)
    if (T.Kind == DeviceKind::CPU)
      T.MemoryBandwidth = Bandwidth;
  return Error::success();
}

/// The forward op whose costs backward op \p O derives from, or NoId.
OpId GraphCoster::findForward(OpId O) const {
  const Op &TheOp = G.getOp(O);
  if (!isBackwardOp(TheOp))
    return NoId;
  Optional<StringRef> Hint = ann::get(TheOp, ann::Colocate);
  if (!Hint)
    return NoId;
  OpId F = G.lookupOp(*Hint);
  return F < O ? F : NoId;
}

/// A multiple of the forward op's cost on each device type, measured by
/// oneDNN for the cpu types where it can.
void GraphCoster::deriveFromForward(OpId O, OpId Forward, double *T,
                                    OpCostExtras &Extras) {
  const Op &F = G.getOp(Forward);
  double Multiple = getBackwardMultiple(F.Domain, F.Type);
  Kinds[O] = Kinds[Forward];
  Flops[O] = Multiple * Flops[Forward];
  Sources[O] = Sources[Forward];
  for (unsigned D = 0; D != NumTypes; ++D)
    T[D] = Multiple * Times[size_t(Forward) * NumTypes + D];
  if (!Measurer)
    return;
  TimeRegion Region(MeasureTimer.get());
  Measurement M = Measurer->measureBackward(G, O, Forward, T[FirstCPU]);
  if (M.Status != MeasureStatusKind::Measured)
    return;
  for (unsigned D = 0; D != NumTypes; ++D)
    if (Types[D].Kind == DeviceKind::CPU)
      T[D] = M.Seconds + M.Primitives * Types[D].LaunchOverhead;
  Sources[O] = SourceKind::OneDNN;
  Extras.Workspace = M.WorkspaceBytes;
}

/// The roofline estimate of \p O's work on each device type, measured by
/// oneDNN for the cpu types where it can.
void GraphCoster::estimateRoofline(OpId O, double *T, OpCostExtras &Extras) {
  OpWork W = estimateWork(G, O);
  Extras.Note = W.Note;
  Kinds[O] = W.Kind;
  Flops[O] = W.Flops;
  if (W.Kind == OpCostKind::Update) {
    Extras.HasPersistent = true;
    Extras.Persistent = W.PersistentBytes;
  }
  for (unsigned D = 0; D != NumTypes; ++D)
    T[D] = getRooflineTime(W, RooflineTypes[D]);
  if (!Measurer || isBackwardOp(G.getOp(O)))
    return;
  TimeRegion Region(MeasureTimer.get());
  Measurement M = Measurer->measure(G, O, T[FirstCPU]);
  if (M.Status == MeasureStatusKind::Measured) {
    const CostKindInfo &Info = getCostKindInfo(W.Kind);
    for (unsigned D = 0; D != NumTypes; ++D)
      if (Types[D].Kind == DeviceKind::CPU)
        T[D] = M.Seconds + Info.LaunchFraction * Types[D].LaunchOverhead;
    Sources[O] = SourceKind::OneDNN;
    Extras.Workspace = M.WorkspaceBytes;
  } else if (M.Status == MeasureStatusKind::OverLimit) {
    appendNote(Extras.Note, "not measured with oneDNN: over the measure "
                            "limit");
  }
}

Optional<double> GraphCoster::lookup(const OpProfile &Prof, OpId O,
                                     OpId Forward) const {
  const Op &TheOp = G.getOp(O);
  auto IsNode = [](StringRef Name) {
    return !Name.endswith("/grad") && !Name.endswith("/update");
  };
  auto WithDispatch = [&](StringRef Name, double T) {
    return IsNode(Name) ? T + Prof.getDispatch().getValueOr(0) : T;
  };
  if (Optional<double> P = Prof.lookup(TheOp.Name))
    return WithDispatch(TheOp.Name, *P);
  if (!TheOp.SourceName.empty())
    if (Optional<double> P = Prof.lookup(TheOp.SourceName))
      return WithDispatch(TheOp.SourceName, *P);
  // A trace names a backward op after its forward op's region, which may
  // bear the forward op's ONNX node name.
  if (Forward != NoId && !G.getOp(Forward).SourceName.empty())
    return Prof.lookup((G.getOp(Forward).SourceName + "/grad").str());
  return None;
}

/// The profile's time for \p O on its device type, when it has one.
void GraphCoster::attributeProfile(OpId O, OpId Forward, double *T,
                                   std::string &Note) {
  Optional<double> P = lookup(*Profile, O, Forward);
  if (P) {
    T[ProfileType] = *P;
    Sources[O] = SourceKind::Profile;
    return;
  }
  ++Unmatched;
  appendNote(Note,
             "not in the profile: " + getSourceName(Sources[O]) + " estimate");
}

/// Replaces the cost annotations of \p O by its costs.
void GraphCoster::annotateOp(OpId O, const double *T, OpCostExtras Extras) {
  Op &TheOp = G.getOp(O);
  uint64_t OutputBytes = 0;
  for (TensorId R : TheOp.Results)
    if (R != NoId)
      OutputBytes += G.getTensor(R).Type.getSizeInBytes().getValueOr(0);

  AttributeList &A = TheOp.Annotations;
  eraseCostAnnotations(A);
  for (unsigned D = 0; D != NumTypes; ++D)
    A.set(ann::getTimeKey(Types[D].Name), Attribute::getFloat(T[D]));
  A.set("flops", Attribute::getInt(toInt64(Flops[O])));
  A.set("output_bytes", Attribute::getInt(int64_t(OutputBytes)));
  if (Extras.HasPersistent)
    ann::set(A, ann::PersistentBytes, int64_t(Extras.Persistent));
  A.set("workspace_bytes", Attribute::getInt(int64_t(Extras.Workspace)));
  A.set("cost_source", Attribute::getString(getSourceName(Sources[O]).str()));
  if (!Extras.Note.empty())
    A.set("cost_note", Attribute::getString(std::move(Extras.Note)));
}

void GraphCoster::annotateOps() {
  const size_t NumOps = G.getNumOps();
  Times.assign(NumOps * NumTypes, 0.0);
  Flops.assign(NumOps, 0.0);
  Kinds.assign(NumOps, OpCostKind::Unknown);
  Sources.assign(NumOps, SourceKind::Roofline);
  for (OpId O = 0; O != NumOps; ++O) {
    double *T = &Times[size_t(O) * NumTypes];
    OpCostExtras Extras;
    OpId Forward = findForward(O);
    if (Forward != NoId)
      deriveFromForward(O, Forward, T, Extras);
    else
      estimateRoofline(O, T, Extras);

    // import-onnx folded this op (a shape computation; `folded` says so):
    // its value is known before the step, as a compiler's constant folding
    // would make it, so it costs nothing.
    if (ann::get(G.getOp(O), ann::Folded).getValueOr(0)) {
      std::fill(T, T + NumTypes, 0.0);
      Flops[O] = 0;
      Extras.Note.clear();
    }
    if (Profile)
      attributeProfile(O, Forward, T, Extras.Note);
    annotateOp(O, T, std::move(Extras));
    // The shared time is kept only beside a profiled time of the same
    // type: the two make the op's rate under contention.
    if (SharedProfile && Sources[O] == SourceKind::Profile)
      if (Optional<double> S = lookup(*SharedProfile, O, Forward))
        G.getOp(O).Annotations.set(
            ann::getSharedTimeKey(Types[ProfileType].Name),
            Attribute::getFloat(*S));
  }
}

Error GraphCoster::annotateGraph() {
  AttributeList &GA = G.getAnnotations();
  GA.set("cluster", Attribute::getString(C.getName().str()));
  if (Profile)
    GA.set("profile_unmatched", Attribute::getInt(int64_t(Unmatched)));
  SmallVector<std::string, 2> GraphNotes;
  if (Profile)
    GraphNotes.append(Profile->getNotes().begin(), Profile->getNotes().end());
  if (Measurer)
    GraphNotes.append(Measurer->getNotes().begin(), Measurer->getNotes().end());
  if (!GraphNotes.empty())
    GA.set("cost_note", Attribute::getString(join(GraphNotes, "; ")));
  if (Measurer)
    if (Error E = Measurer->saveCache())
      return E;
  return Error::success();
}

Error CostAnnotatePass::run(Graph &G, PassContext &Ctx) {
  if (!Ctx.TheCluster)
    return makeError("cost-annotate needs a cluster: pass "
                     "-cluster=<preset|file>");
  GraphCoster Coster(G, *Ctx.TheCluster, Opts);
  if (Error E = Coster.loadProfile())
    return E;
  if (Error E = Coster.setUpOneDNN(Ctx))
    return E;

  G.getAnnotations().erase("cluster");
  G.getAnnotations().erase("profile_unmatched");
  G.getAnnotations().erase("cost_note");
  Coster.annotateOps();
  return Coster.annotateGraph();
}

static constexpr EnumEntry<CostSourceKind> CostSourceNames[] = {
    {"roofline", CostSourceKind::Roofline},
    {"onednn", CostSourceKind::OneDNN},
};

static constexpr EnumEntry<ProfileStatKind> ProfileStatNames[] = {
    {"median", ProfileStatKind::Median},
    {"min", ProfileStatKind::Min},
    {"mean", ProfileStatKind::Mean},
};

OptionTable CostAnnotatePass::describeOptions(CostOptions &O) {
  OptionTable T(name().str());
  T.choice<CostSourceKind>("source", O.Source, CostSourceNames)
      .text("profile", O.ProfilePath, "FILE[:FILE...]")
      .text("shared-profile", O.SharedProfilePath, "FILE[:FILE...]")
      .text("profile-device", O.ProfileDevice, "TYPE")
      .choice<ProfileStatKind>("profile-stat", O.ProfileStat, ProfileStatNames)
      .integer("runs", O.Runs, 1u, 1000u)
      .text("cache", O.CacheDir, "DIR")
      .number("measure-limit", O.MeasureLimit, "SECONDS",
              "a positive number of seconds", isPositiveFinite)
      .check([&O](const OptionTable &T) -> Error {
        for (StringRef Key : {"runs", "cache", "measure-limit"})
          if (T.wasGiven(Key) && O.Source != CostSourceKind::OneDNN)
            return T.makeError(Key + "= applies to source=onednn only");
        if (T.wasGiven("profile") && splitProfilePaths(O.ProfilePath).empty())
          return T.makeError("profile= names no file");
        if (T.wasGiven("shared-profile") &&
            splitProfilePaths(O.SharedProfilePath).empty())
          return T.makeError("shared-profile= names no file");
        for (StringRef Key :
             {"shared-profile", "profile-device", "profile-stat"})
          if (T.wasGiven(Key) && O.ProfilePath.empty())
            return T.makeError(Key + "= needs profile=<file>");
        return Error::success();
      });
  return T;
}

void CostAnnotatePass::printPipeline(raw_ostream &OS) const {
  printPassOptions(OS, name(), Opts, describeOptions);
}

} // namespace dp
