//===- CostAnnotate.cpp - The cost-annotate pass --------------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/Cost/CostAnnotate.h"
#include "dp/Cluster/Cluster.h"
#include "dp/Cost/OpCost.h"
#include "dp/Cost/Profile.h"
#include "dp/IR/Annotations.h"
#include "dp/IR/Graph.h"
#include "dp/Support/Diagnostics.h"
#include "dp/Support/EnumNames.h"
#include "dp/Support/Format.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

#include <cmath>
#include <memory>

using namespace llvm;

namespace dp {

bool isCostAnnotation(StringRef Name) {
  // The op annotations of the graph's costs part (dp/IR/PassManager.h).
  return getAnnotationPart(Name, /*OnGraph=*/false) == GraphChange::Costs;
}

static void eraseCostAnnotations(AttributeList &L) {
  std::vector<std::string> Names;
  for (const NamedAttribute &A : L)
    if (isCostAnnotation(A.Name))
      Names.push_back(A.Name);
  for (const std::string &N : Names)
    L.erase(N);
}

/// Rounds \p V to an integer annotation, saturating where int64 ends.
static int64_t toInt64(double V) {
  constexpr double Max = 9.2e18;
  return V >= Max ? int64_t(Max) : int64_t(std::llround(std::max(V, 0.0)));
}

namespace {
/// What an op's annotations say besides its times, flops and note.
struct OpCostExtras {
  uint64_t Persistent = 0;
  bool HasPersistent = false;
};

/// Costs every op of a graph on every device type of a cluster with the
/// cost sources (dp/Cost/CostSources.def), and holds the rules that
/// combine them:
///
/// - A backward op's costs are a multiple of its forward op's, whatever
///   sources gave those, and so is its source; other ops start from the
///   roofline's analysis of their work.
/// - The sources time each op in their order of precedence; each time a
///   source gives replaces the estimate on the types it times, and makes
///   the op's `cost_source` its own.
/// - An op import-onnx folded costs nothing, unless a profile times it:
///   the folding applies after the sources that time ops on their own and
///   before those that read the user's step.
/// - Notes add up, in the order the sources give them; the graph's notes
///   come from the most specific source first.
class GraphCoster {
public:
  GraphCoster(Graph &G, const Cluster &C)
      : G(G), C(C), Types(C.getTypes()), NumTypes(Types.size()),
        RooflineTypes(Types.begin(), Types.end()) {}

  /// Makes the sources \p Opts asks for and lets them calibrate the
  /// roofline's device types.
  Error createSources(const CostOptions &Opts, PassContext &Ctx);
  /// Costs and annotates every op.
  void annotateOps();
  /// Sets the graph's annotations and ends the sources' run.
  Error annotateGraph();

private:
  OpId findForward(OpId O) const;
  /// Runs the sources of the given kind (a profile or not) on \p Op.
  void timeBy(OpCosting &Op, bool Profiles);
  void annotateOp(const OpCosting &Op, OpCostExtras Extras);

  Graph &G;
  const Cluster &C;
  ArrayRef<DeviceType> Types;
  const unsigned NumTypes;

  /// The sources the options ask for, in order of precedence.
  std::vector<std::unique_ptr<CostSource>> Sources;
  /// The types the roofline sees: the cluster's, as the sources
  /// calibrated them.
  std::vector<DeviceType> RooflineTypes;

  // Per op, in flat arrays: backward ops read their forward op's costs.
  std::vector<double> Times;
  std::vector<double> Flops;
  std::vector<CostSourceKind> SourceOf;
};
} // namespace

// Made most specific first: a bad profile fails before oneDNN measures
// this machine.
Error GraphCoster::createSources(const CostOptions &Opts, PassContext &Ctx) {
  CostSourceSetup Setup{Opts, C, Ctx.Timers};
  for (const CostSourceInfo &Info : reverse(getCostSources())) {
    Expected<std::unique_ptr<CostSource>> S = Info.Create(Setup);
    if (!S)
      return S.takeError();
    if (*S)
      Sources.push_back(std::move(*S));
  }
  std::reverse(Sources.begin(), Sources.end());
  for (const std::unique_ptr<CostSource> &S : Sources)
    S->calibrate(RooflineTypes);
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

void GraphCoster::timeBy(OpCosting &Op, bool Profiles) {
  for (const std::unique_ptr<CostSource> &S : Sources)
    if (getCostSourceInfo(S->getKind()).IsProfile == Profiles && S->time(Op))
      Op.Source = S->getKind();
}

/// Replaces the cost annotations of \p Op by its costs.
void GraphCoster::annotateOp(const OpCosting &Op, OpCostExtras Extras) {
  dp::Op &TheOp = G.getOp(Op.Id);
  uint64_t OutputBytes = 0;
  for (TensorId R : TheOp.Results)
    if (R != NoId)
      OutputBytes += G.getTensor(R).Type.getSizeInBytes().getValueOr(0);

  AttributeList &A = TheOp.Annotations;
  eraseCostAnnotations(A);
  for (unsigned D = 0; D != NumTypes; ++D)
    A.set(ann::getTimeKey(Types[D].Name), Attribute::getFloat(Op.Times[D]));
  A.set("flops", Attribute::getInt(toInt64(Flops[Op.Id])));
  A.set("output_bytes", Attribute::getInt(int64_t(OutputBytes)));
  if (Extras.HasPersistent)
    ann::set(A, ann::PersistentBytes, int64_t(Extras.Persistent));
  A.set("workspace_bytes", Attribute::getInt(int64_t(Op.WorkspaceBytes)));
  A.set("cost_source",
        Attribute::getString(getCostSourceName(Op.Source).str()));
  if (!Op.Note.empty())
    A.set("cost_note", Attribute::getString(Op.Note));
  for (const std::unique_ptr<CostSource> &S : Sources)
    S->annotateOp(Op, A);
}

void GraphCoster::annotateOps() {
  const size_t NumOps = G.getNumOps();
  Times.assign(NumOps * NumTypes, 0.0);
  Flops.assign(NumOps, 0.0);
  SourceOf.assign(NumOps, CostSourceKind::Roofline);
  for (OpId O = 0; O != NumOps; ++O) {
    MutableArrayRef<double> T(&Times[size_t(O) * NumTypes], NumTypes);
    OpCosting Op(G, O, RooflineTypes, T);
    OpCostExtras Extras;
    Optional<OpWork> Work;
    Op.Forward = findForward(O);
    if (Op.Forward != NoId) {
      const dp::Op &F = G.getOp(Op.Forward);
      double Multiple = getBackwardMultiple(F.Domain, F.Type);
      Flops[O] = Multiple * Flops[Op.Forward];
      Op.Source = SourceOf[Op.Forward];
      for (unsigned D = 0; D != NumTypes; ++D)
        T[D] = Multiple * Times[size_t(Op.Forward) * NumTypes + D];
    } else {
      Work = estimateWork(G, O);
      Op.Work = &*Work;
      Op.Note = Work->Note;
      Flops[O] = Work->Flops;
      if (Work->Kind == OpCostKind::Update) {
        Extras.HasPersistent = true;
        Extras.Persistent = Work->PersistentBytes;
      }
    }
    timeBy(Op, /*Profiles=*/false);

    // import-onnx folded this op (a shape computation; `folded` says so):
    // its value is known before the step, as a compiler's constant folding
    // would make it, so it costs nothing.
    if (ann::get(G.getOp(O), ann::Folded).getValueOr(0)) {
      std::fill(T.begin(), T.end(), 0.0);
      Flops[O] = 0;
      Op.Note.clear();
    }
    timeBy(Op, /*Profiles=*/true);
    SourceOf[O] = Op.Source;
    annotateOp(Op, Extras);
  }
}

Error GraphCoster::annotateGraph() {
  AttributeList &GA = G.getAnnotations();
  GA.set("cluster", Attribute::getString(C.getName().str()));
  for (const std::unique_ptr<CostSource> &S : Sources)
    S->annotateGraph(GA);
  SmallVector<std::string, 2> GraphNotes;
  for (const std::unique_ptr<CostSource> &S : reverse(Sources))
    GraphNotes.append(S->getNotes().begin(), S->getNotes().end());
  if (!GraphNotes.empty())
    GA.set("cost_note", Attribute::getString(join(GraphNotes, "; ")));
  for (const std::unique_ptr<CostSource> &S : Sources)
    if (Error E = S->finish())
      return E;
  return Error::success();
}

Error CostAnnotatePass::run(Graph &G, PassContext &Ctx) {
  if (!Ctx.TheCluster)
    return makeError("cost-annotate needs a cluster: pass "
                     "-cluster=<preset|file>");
  GraphCoster Coster(G, *Ctx.TheCluster);
  if (Error E = Coster.createSources(Opts, Ctx))
    return E;

  G.getAnnotations().erase("cluster");
  G.getAnnotations().erase("profile_unmatched");
  G.getAnnotations().erase("cost_note");
  Coster.annotateOps();
  return Coster.annotateGraph();
}

static constexpr EnumEntry<ProfileStatKind> ProfileStatNames[] = {
    {"median", ProfileStatKind::Median},
    {"min", ProfileStatKind::Min},
    {"mean", ProfileStatKind::Mean},
};

OptionTable CostAnnotatePass::describeOptions(CostOptions &O) {
  OptionTable T(name().str());
  T.choice<CostSourceKind>("source", O.Source, getChoosableCostSources())
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
