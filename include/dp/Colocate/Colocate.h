//===- dp/Colocate/Colocate.h - Colocation groups ---------------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The "colocate" pass puts every op into exactly one *group* (the op
/// annotation `group`, dense ids numbered in order of each group's first
/// op); placers then place groups as units. Four strategies, each from the
/// paper that used it (docs/colocate.md states the exact rules):
///
/// - `tf`: TensorFlow's rules as ColocRL describes them: the `colocate`
///   hints, then, recursively, a group whose results only one other group
///   reads joins that group.
/// - `merge{groups=N,threshold=S}`: Placeto's Merge-and-Colocate: the
///   cheapest group joins a neighbour until N groups remain or every group
///   costs at least S seconds.
/// - `metis{groups=N}`: EAGLE's grouper: a METIS k-way partition of the
///   hint classes weighted by compute, edges weighted by bytes.
/// - `scope{depth=D}`: the first D components of the ONNX name scope that
///   torch.onnx.export writes in node names.
///
/// No strategy splits the classes of ops joined by `colocate` hints (a
/// backward or update op and its forward op).
///
//===----------------------------------------------------------------------===//

#ifndef DP_COLOCATE_COLOCATE_H
#define DP_COLOCATE_COLOCATE_H

#include "dp/IR/Graph.h"
#include "dp/IR/Grouping.h"
#include "dp/IR/PassManager.h"
#include "dp/Support/Options.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/Optional.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace dp {

class Cluster;

enum class ColocateStrategyKind : uint8_t { TF, Merge, METIS, Scope };

/// "tf", "merge", "metis", "scope".
llvm::StringRef getColocateStrategyName(ColocateStrategyKind K);
llvm::Optional<ColocateStrategyKind>
parseColocateStrategyName(llvm::StringRef Name);
/// "tf, merge, metis, scope".
std::string listColocateStrategyNames();

struct ColocateOptions {
  ColocateStrategyKind Strategy = ColocateStrategyKind::TF;
  /// merge, metis: how many groups to make (required there).
  unsigned Groups = 0;
  /// merge: groups that cost this many seconds or more are not merged;
  /// unset: total compute / (4 * Groups).
  llvm::Optional<double> Threshold;
  /// scope: how many name-scope components make a group.
  unsigned Depth = 1;
};

/// Each op's compute time on its fastest device type: the least of its
/// `time.<type>` annotations for the device types of \p C, or, when \p C is
/// null, of all its `time.*` annotations. An op without one is an error
/// located at it: "<Who>: needs costs: run cost-annotate first".
llvm::Expected<std::vector<double>>
getComputeCosts(const Graph &G, const Cluster *C, llvm::StringRef Who);

/// The name scope of an op: the first \p Depth components of the path in
/// \p Name without its last component (the op's own name), e.g. "/a/b" for
/// ("/a/b/c/MatMul", 2), the whole path when it is shorter ("/a/b/c" for
/// depth 5), and "" when \p Name has no path ("MatMul", "/MatMul").
llvm::StringRef getNameScope(llvm::StringRef Name, unsigned Depth);

/// The strategies (docs/colocate.md). \p Costs are getComputeCosts'.
Grouping groupByTF(const Graph &G);
/// groupByMerge starts from \p Start's groups when given (they must not
/// split a hint class), else from the hint classes.
Grouping groupByMerge(const Graph &G, llvm::ArrayRef<double> Costs,
                      unsigned Groups, double Threshold,
                      const Grouping *Start = nullptr);
llvm::Expected<Grouping> groupByMETIS(const Graph &G,
                                      llvm::ArrayRef<double> Costs,
                                      unsigned Groups, uint64_t Seed);
Grouping groupByScope(const Graph &G, unsigned Depth);

/// Runs the strategy \p Opts names on \p G. \p C (may be null) says which
/// device types the costs are for; \p Seed seeds METIS.
llvm::Expected<Grouping> computeGroups(const Graph &G,
                                       const ColocateOptions &Opts,
                                       const Cluster *C, uint64_t Seed);

/// Writes "colocate{strategy=...}" as the pipeline parser reads it back.
void printColocatePipeline(llvm::raw_ostream &OS, const ColocateOptions &Opts);

/// The "colocate" pass: sets the op annotation `group` on every op and the
/// graph annotation `groups` (their count), and writes a summary to the
/// report stream.
class ColocatePass {
public:
  explicit ColocatePass(ColocateOptions Opts = {}) : Opts(std::move(Opts)) {}

  static llvm::StringRef name() { return "colocate"; }
  /// It sets the ops' groups only.
  static GraphChange changes() { return GraphChange::Groups; }
  llvm::Error run(Graph &G, PassContext &Ctx);
  void printPipeline(llvm::raw_ostream &OS) const {
    printColocatePipeline(OS, Opts);
  }

  /// strategy=tf|merge{groups=N,threshold=S}|metis{groups=N}|
  /// scope{depth=D}, bound to \p O.
  static OptionTable describeOptions(ColocateOptions &O);
  static llvm::Expected<ColocateOptions> parseOptions(OptionList Options) {
    return parsePassOptions<ColocateOptions>(Options, describeOptions);
  }

private:
  ColocateOptions Opts;
};

} // namespace dp

#endif // DP_COLOCATE_COLOCATE_H
