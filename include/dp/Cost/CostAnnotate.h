//===- dp/Cost/CostAnnotate.h - The cost-annotate pass ----------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The "cost-annotate" pass: for every op and every device type of the
/// pipeline's cluster, the time of one execution (`time.<type>`), and the
/// op's `flops`, `output_bytes`, `persistent_bytes`, `workspace_bytes` and
/// `cost_source` (docs/IR.md, "Annotations used by passes"). Times come from
/// the cost sources of dp/Cost/CostSources.def: the roofline model
/// (dp/Cost/OpCost.h), oneDNN measurements on this CPU (dp/Cost/OneDNN.h),
/// a profile the user made (dp/Cost/Profile.h). The pass combines them:
/// docs/cost.md documents the model, the rules and the options.
///
//===----------------------------------------------------------------------===//

#ifndef DP_COST_COSTANNOTATE_H
#define DP_COST_COSTANNOTATE_H

#include "dp/Cost/CostSource.h"
#include "dp/Cost/Profile.h"
#include "dp/IR/PassManager.h"
#include "dp/Support/Options.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <utility>

namespace dp {

struct CostOptions {
  /// The source that times each op, beneath a profile: the roofline, or
  /// one that times the ops it can and leaves the rest to the roofline
  /// (a COST_SOURCE of dp/Cost/CostSources.def).
  CostSourceKind Source = CostSourceKind::Roofline;
  /// A profile (ONNX Runtime JSON or Chrome trace) whose times replace the
  /// estimates of the ops it names; empty: none.
  std::string ProfilePath;
  /// Profiles taken while every device of the profile's device type's
  /// shared group ran the step at the same time (one process per device):
  /// each op they name gets `time_shared.<type>`, its time under that
  /// contention; empty: none. Needs ProfilePath.
  std::string SharedProfilePath;
  /// The device type the profile's times are for; empty: the first GPU
  /// type of the cluster, else its first type.
  std::string ProfileDevice;
  /// How the profile's times of one name over several steps combine.
  ProfileStatKind ProfileStat = ProfileStatKind::Median;
  /// oneDNN: timed executions per measurement.
  unsigned Runs = 5;
  /// oneDNN: the cache directory; empty: the default.
  std::string CacheDir;
  /// oneDNN: ops whose roofline estimate on this CPU exceeds this many
  /// seconds are not measured.
  double MeasureLimit = 0.25;
};

/// Annotations cost-annotate owns; it erases them before setting its own,
/// so that running it again replaces earlier costs.
bool isCostAnnotation(llvm::StringRef Name);

class CostAnnotatePass {
public:
  explicit CostAnnotatePass(CostOptions Opts = {}) : Opts(std::move(Opts)) {}

  static llvm::StringRef name() { return "cost-annotate"; }
  /// It sets the ops' costs only.
  static GraphChange changes() { return GraphChange::Costs; }
  llvm::Error run(Graph &G, PassContext &Ctx);
  void printPipeline(llvm::raw_ostream &OS) const;

  /// source=roofline|onednn, profile=FILE[:FILE...],
  /// shared-profile=FILE[:FILE...], profile-device=TYPE,
  /// profile-stat=median|min|mean, runs=N, cache=DIR and
  /// measure-limit=SECONDS, bound to \p O.
  static OptionTable describeOptions(CostOptions &O);
  static llvm::Expected<CostOptions> parseOptions(OptionList Options) {
    return parsePassOptions<CostOptions>(Options, describeOptions);
  }

private:
  CostOptions Opts;
};

} // namespace dp

#endif // DP_COST_COSTANNOTATE_H
