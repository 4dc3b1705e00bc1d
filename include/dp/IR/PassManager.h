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
/// Passes hand results on through PassContext::Analyses (LLVM's analysis
/// idea, not its machinery): a pass stores what it computed under the
/// result type's key, later passes use it instead of computing it again.
/// A pass may change the graph, which makes what was computed before it
/// stale: after each pass, the manager drops the results that were there
/// before the pass ran, unless the pass declares
/// `static bool preservesAnalyses() { return true; }` (it changes nothing
/// those results depend on). What the pass stored itself stays.
///
/// A pass may also take settings from the driver for options the user did
/// not give in the pipeline (dp-opt's -summary= is simulate{summary=}):
/// `bool setDriverOption(llvm::StringRef Key, llvm::StringRef Value)`
/// returns whether the pass takes \p Key.
///
//===----------------------------------------------------------------------===//

#ifndef DP_IR_PASSMANAGER_H
#define DP_IR_PASSMANAGER_H

#include "llvm/ADT/Optional.h"
#include "llvm/ADT/StringMap.h"
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
/// Results passes computed, by the key of their type: a type T stored here
/// has `static constexpr llvm::StringLiteral AnalysisKey = "...";`.
class AnalysisCache {
public:
  /// The stored T, or null.
  template <typename T> T *get() const {
    auto It = Results.find(T::AnalysisKey);
    return It == Results.end() ? nullptr : static_cast<T *>(It->second.get());
  }
  /// Stores \p Value, replacing any T stored.
  template <typename T> T &set(T Value) {
    auto Stored = std::make_shared<T>(std::move(Value));
    T &Ref = *Stored;
    Results[T::AnalysisKey] = std::move(Stored);
    return Ref;
  }
  template <typename T> void erase() { Results.erase(T::AnalysisKey); }
  bool empty() const { return Results.empty(); }

  /// What is stored now, to drop() after a pass that changed the graph.
  std::vector<std::pair<std::string, const void *>> snapshot() const;
  /// Drops the results of \p Before that are still stored (a pass that
  /// stored a result again replaced it, and keeps it).
  void drop(const std::vector<std::pair<std::string, const void *>> &Before);

private:
  llvm::StringMap<std::shared_ptr<void>> Results;
};

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
  /// Where searching passes print progress lines (dp-opt: stderr unless
  /// -quiet); null: quiet.
  llvm::raw_ostream *Progress = nullptr;
  /// When timing is on (-time-passes), passes may time their phases here
  /// (a group of its own: the pass times are in the PassManager's group).
  llvm::TimerGroup *Timers = nullptr;
  /// Results of earlier passes (see the file comment).
  AnalysisCache Analyses;
};

namespace detail {
struct PassConcept {
  virtual ~PassConcept() = default;
  virtual llvm::StringRef name() const = 0;
  virtual llvm::Error run(Graph &G, PassContext &Ctx) = 0;
  virtual void printPipeline(llvm::raw_ostream &OS) const = 0;
  virtual bool setDriverOption(llvm::StringRef Key, llvm::StringRef Value) = 0;
  virtual bool preservesAnalyses() const = 0;
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

template <typename T, typename = void>
struct HasSetDriverOption : std::false_type {};
template <typename T>
struct HasSetDriverOption<
    T, std::void_t<decltype(std::declval<T &>().setDriverOption(
           std::declval<llvm::StringRef>(), std::declval<llvm::StringRef>()))>>
    : std::true_type {};

template <typename T, typename = void>
struct HasPreservesAnalyses : std::false_type {};
template <typename T>
struct HasPreservesAnalyses<T, std::void_t<decltype(T::preservesAnalyses())>>
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
  bool setDriverOption(llvm::StringRef Key, llvm::StringRef Value) override {
    if constexpr (HasSetDriverOption<PassT>::value)
      return Pass.setDriverOption(Key, Value);
    else
      return false;
  }
  bool preservesAnalyses() const override {
    if constexpr (HasPreservesAnalyses<PassT>::value)
      return PassT::preservesAnalyses();
    else
      return false;
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

  /// Gives every pass that takes driver option \p Key (see the file
  /// comment) the value \p Value; returns whether one took it.
  bool setDriverOption(llvm::StringRef Key, llvm::StringRef Value);

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
