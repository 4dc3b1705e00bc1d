//===- dp/IR/PassManager.h - Passes over a dp::Graph ------------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// A pass is a small class with
///
///   static llvm::StringRef name();
///   llvm::Error run(Graph &G, PassContext &Ctx);
///
/// and, if it has options, `void printPipeline(llvm::raw_ostream &OS) const`
/// writing "name{key=value,...}" so that the printed pipeline parses back
/// (dp/Passes/PassBuilder.h parses pipelines). The PassManager type-erases
/// passes, runs them in order, and optionally verifies the graph after each
/// one and times them.
///
//===----------------------------------------------------------------------===//

#ifndef DP_IR_PASSMANAGER_H
#define DP_IR_PASSMANAGER_H

#include "llvm/ADT/Optional.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBufferRef.h"
#include "llvm/Support/Timer.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace dp {

class Cluster;
class Graph;

/// What a pipeline run knows besides the graph.
struct PassContext {
  /// The pipeline's input as the user gave it: import-onnx reads the model
  /// from here. Its identifier names the input in diagnostics.
  llvm::MemoryBufferRef Input;
  /// Seed for every randomized decision; same seed, same output.
  uint64_t Seed = 0;
  /// The hardware to cost, place and simulate for (dp-opt -cluster=). Null
  /// when none was given; passes that need one report an error.
  const Cluster *TheCluster = nullptr;
  /// Where passes that report to the user (e.g. "summary") write. Null
  /// means such passes write nothing.
  llvm::raw_ostream *Report = nullptr;
  /// Files the user asked for (dp-opt -summary=, -trace=, -placement=);
  /// empty when not asked for. The simulate pass writes the summary and
  /// trace and reads the placement.
  std::string SummaryFile;
  std::string TraceFile;
  std::string PlacementFile;
  /// Where searching passes print progress lines (dp-opt: stderr unless
  /// -quiet); null: quiet.
  llvm::raw_ostream *Progress = nullptr;
  /// Where the place pass writes a searching placer's curve (CSV; dp-opt
  /// -curve=); empty when not asked for.
  std::string CurveFile;
  /// Seconds the last placer searched in this run. Wall time is kept out of
  /// the IR so that the IR depends only on the input and the seed.
  llvm::Optional<double> SearchSeconds;
  /// When timing is on (-time-passes), passes may time their phases here
  /// (a group of its own: the pass times are in the PassManager's group).
  llvm::TimerGroup *Timers = nullptr;
};

namespace detail {
struct PassConcept {
  virtual ~PassConcept() = default;
  virtual llvm::StringRef name() const = 0;
  virtual llvm::Error run(Graph &G, PassContext &Ctx) = 0;
  virtual void printPipeline(llvm::raw_ostream &OS) const = 0;
};

template <typename T, typename = void>
struct HasPrintPipeline : std::false_type {};
template <typename T>
struct HasPrintPipeline<T, std::void_t<decltype(std::declval<const T &>()
                                                    .printPipeline(
                                                        std::declval<
                                                            llvm::raw_ostream
                                                                &>()))>>
    : std::true_type {};

template <typename PassT> struct PassModel final : PassConcept {
  explicit PassModel(PassT P) : Pass(std::move(P)) {}
  llvm::StringRef name() const override { return PassT::name(); }
  llvm::Error run(Graph &G, PassContext &Ctx) override {
    return Pass.run(G, Ctx);
  }
  void printPipeline(llvm::raw_ostream &OS) const override {
    if constexpr (HasPrintPipeline<PassT>::value)
      Pass.printPipeline(OS);
    else
      OS << PassT::name();
  }
  PassT Pass;
};
} // namespace detail

class PassManager {
public:
  template <typename PassT> void addPass(PassT P) {
    Passes.push_back(
        std::make_unique<detail::PassModel<PassT>>(std::move(P)));
  }

  bool empty() const { return Passes.empty(); }
  size_t size() const { return Passes.size(); }
  llvm::StringRef getPassName(size_t I) const { return Passes[I]->name(); }

  /// Runs the verifier after every pass.
  void setVerifyEach(bool V) { VerifyEach = V; }
  /// Times each pass in \p TG (null: no timing). \p TG must outlive run().
  void setTimerGroup(llvm::TimerGroup *TG) { Timers = TG; }

  /// Runs the passes in order and stops at the first that fails. An error
  /// of the verifier after a pass says which pass it followed.
  llvm::Error run(Graph &G, PassContext &Ctx);

  /// Writes the pipeline in the syntax PassBuilder parses: "a,b{k=v}".
  void printPipeline(llvm::raw_ostream &OS) const;

private:
  std::vector<std::unique_ptr<detail::PassConcept>> Passes;
  bool VerifyEach = false;
  llvm::TimerGroup *Timers = nullptr;
};

} // namespace dp

#endif // DP_IR_PASSMANAGER_H
