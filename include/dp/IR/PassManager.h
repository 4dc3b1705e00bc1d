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
/// A result type says what of the graph it was computed from
/// (`static constexpr GraphChange DependsOn = ...`), and a pass says what
/// it may change:
///
///   GraphChange changes() const { return GraphChange::Devices; }
///
/// (static or not: simulate changes devices only when given placement=).
/// A pass that does not say may change anything. After each pass, the
/// manager drops the results that were there before it ran and depend on
/// what it may change; what the pass stored itself stays. A pass that
/// changes something and then reads results (simulate{placement=})
/// calls AnalysisCache::invalidate itself. With verification on
/// (setVerifyEach), the manager also checks that a pass changed nothing
/// it did not declare.
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

/// The parts of a graph a pass may change and a result may depend on.
/// Every op and graph annotation belongs to one part (getAnnotationPart),
/// or to none: the figures simulate reports (step_time_s, lower_bound_s,
/// oom) are outputs that nothing is computed from.
enum class GraphChange : uint8_t {
  None = 0,
  /// The ops' `device` and the graph's `placer`.
  Devices = 1 << 0,
  /// What cost-annotate sets: the ops' `time.<type>`,
  /// `time_shared.<type>`, `flops`, `output_bytes`, `persistent_bytes`,
  /// `workspace_bytes`, `cost_source`, `cost_note`, and the graph's
  /// `cluster`.
  Costs = 1 << 1,
  /// The ops' `group` and the graph's `groups`.
  Groups = 1 << 2,
  /// Everything else: ops, tensors, types, attributes, opsets, the plan
  /// and every other annotation.
  Structure = 1 << 3,
  All = Devices | Costs | Groups | Structure,
};

// Set operations on the parts, constexpr (LLVM 14's bitmask enums' are
// not) so that results can declare what they depend on.
constexpr GraphChange operator|(GraphChange A, GraphChange B) {
  return GraphChange(uint8_t(A) | uint8_t(B));
}
constexpr GraphChange operator&(GraphChange A, GraphChange B) {
  return GraphChange(uint8_t(A) & uint8_t(B));
}
constexpr GraphChange operator~(GraphChange A) {
  return GraphChange(~uint8_t(A) & uint8_t(GraphChange::All));
}
inline GraphChange &operator|=(GraphChange &A, GraphChange B) {
  return A = A | B;
}

/// The part of the graph annotation (\p OnGraph) or op annotation named
/// \p Name; GraphChange::None for the reported figures.
GraphChange getAnnotationPart(llvm::StringRef Name, bool OnGraph);

/// "devices, costs" (the parts \p C names, in enum order), "nothing" for
/// None.
std::string describeChange(GraphChange C);

/// The parts of \p G: one text per GraphChange bit, to compare before and
/// after a pass (what the verifier of declared changes does).
struct GraphParts {
  std::string Devices, Costs, Groups, Structure;
  static GraphParts of(const Graph &G);
  /// The parts that differ between *this and \p Other.
  GraphChange differences(const GraphParts &Other) const;
};

/// What a pipeline run knows besides the graph.
/// Results passes computed, by the key of their type: a type T stored here
/// has `static constexpr llvm::StringLiteral AnalysisKey = "...";` and
/// `static constexpr GraphChange DependsOn = ...;`.
class AnalysisCache {
public:
  /// The stored T, or null.
  template <typename T> T *get() const {
    auto It = Results.find(T::AnalysisKey);
    return It == Results.end() ? nullptr
                               : static_cast<T *>(It->second.Value.get());
  }
  /// Stores \p Value, replacing any T stored.
  template <typename T> T &set(T Value) {
    static_assert(
        std::is_same<decltype(T::DependsOn), const GraphChange>::value,
        "a result says what it depends on");
    auto Stored = std::make_shared<T>(std::move(Value));
    T &Ref = *Stored;
    Results[T::AnalysisKey] = {std::move(Stored), T::DependsOn};
    return Ref;
  }
  template <typename T> void erase() { Results.erase(T::AnalysisKey); }
  bool empty() const { return Results.empty(); }

  /// Drops every result that depends on what \p Changed names.
  void invalidate(GraphChange Changed);

  /// What is stored now, to drop() after a pass that changed the graph.
  std::vector<std::pair<std::string, const void *>> snapshot() const;
  /// Drops the results of \p Before that are still stored and depend on
  /// what \p Changed names (a pass that stored a result again replaced it,
  /// and keeps it).
  void drop(const std::vector<std::pair<std::string, const void *>> &Before,
            GraphChange Changed = GraphChange::All);

private:
  struct Entry {
    std::shared_ptr<void> Value;
    GraphChange DependsOn = GraphChange::All;
  };
  llvm::StringMap<Entry> Results;
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
  virtual GraphChange changes() const = 0;
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

template <typename T, typename = void> struct HasChanges : std::false_type {};
template <typename T>
struct HasChanges<T, std::void_t<decltype(std::declval<const T &>().changes())>>
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
  GraphChange changes() const override {
    if constexpr (HasChanges<PassT>::value)
      return Pass.changes();
    else
      return GraphChange::All;
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
  /// What pass \p I declares it may change.
  GraphChange getPassChanges(size_t I) const { return Passes[I]->changes(); }

  /// Gives every pass that takes driver option \p Key (see the file
  /// comment) the value \p Value; returns whether one took it.
  bool setDriverOption(llvm::StringRef Key, llvm::StringRef Value);

  /// Runs the verifier after every pass, and checks that the pass changed
  /// only what it declares (changes()).
  void setVerifyEach(bool V) { VerifyEach = V; }
  /// Times each pass in \p TG (null: no timing). \p TG must outlive run().
  void setTimerGroup(llvm::TimerGroup *TG) { Timers = TG; }

  /// Runs the passes in order and stops at the first that fails. An error
  /// of the verifier after a pass says which pass it followed; so does a
  /// change the pass did not declare.
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
