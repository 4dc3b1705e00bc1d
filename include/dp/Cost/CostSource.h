//===- dp/Cost/CostSource.h - Where op times come from ----------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// A cost source times ops for some of the cluster's device types: the
/// roofline model for all of them, oneDNN for the cpu types, a profile for
/// the device type it was measured on. Sources are listed once, in
/// dp/Cost/CostSources.def, in their order of precedence; cost-annotate
/// (dp/Cost/CostAnnotate.h) asks each in that order and keeps, for each
/// device type, the time of the last source that gave one, and names that
/// source in the op's `cost_source`.
///
/// A source may decline an op (oneDNN has no primitive for it, the profile
/// does not name it): the op keeps the estimate of the sources before it.
/// A source that measures this machine may also calibrate the device types
/// the roofline estimates with (oneDNN: this CPU's memory bandwidth).
/// docs/cost.md, "Adding a cost source", says what a new one takes.
///
//===----------------------------------------------------------------------===//

#ifndef DP_COST_COSTSOURCE_H
#define DP_COST_COSTSOURCE_H

#include "dp/Cluster/Cluster.h"
#include "dp/Cost/OpCost.h"
#include "dp/IR/Graph.h"
#include "dp/Support/EnumNames.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <string>

namespace llvm {
class TimerGroup;
} // namespace llvm

namespace dp {

struct CostOptions;

enum class CostSourceKind : uint8_t {
#define COST_SOURCE(KIND, NAME, ID, DESCRIPTION) KIND,
#define PROFILE_COST_SOURCE(KIND, NAME, ID, DESCRIPTION) KIND,
#include "dp/Cost/CostSources.def"
};

/// One op while the sources time it: what the sources before one made of
/// it, which that source may change.
struct OpCosting {
  OpCosting(const Graph &G, OpId Id, llvm::ArrayRef<DeviceType> Types,
            llvm::MutableArrayRef<double> Times)
      : G(G), Id(Id), Types(Types), Times(Times) {}

  const Graph &G;
  OpId Id;
  /// The forward op whose costs this backward op's derive from, or NoId.
  OpId Forward = NoId;
  /// The roofline's analysis of the op's work; null for an op whose costs
  /// derive from Forward's.
  const OpWork *Work = nullptr;
  /// The cluster's device types as the roofline sees them (calibrated).
  llvm::ArrayRef<DeviceType> Types;
  /// Seconds of one execution per device type, launch overhead included:
  /// the estimate so far.
  llvm::MutableArrayRef<double> Times;
  /// The source of the estimate so far.
  CostSourceKind Source = CostSourceKind::Roofline;
  /// Scratch memory while the op runs, where a source knows it.
  uint64_t WorkspaceBytes = 0;
  /// The op's `cost_note`: what its estimate assumes, notes joined by "; ".
  std::string Note;

  void addNote(const llvm::Twine &More);
};

class CostSource {
public:
  explicit CostSource(CostSourceKind Kind) : Kind(Kind) {}
  virtual ~CostSource();

  CostSourceKind getKind() const { return Kind; }
  /// Its `cost_source` name.
  llvm::StringRef getName() const;

  /// Whether it times device type \p Type (an index into the cluster's
  /// types).
  virtual bool timesType(unsigned Type) const = 0;
  /// Adjusts the device types the roofline estimates with, before any op
  /// is timed.
  virtual void calibrate(llvm::MutableArrayRef<DeviceType> Types) {}
  /// Times \p Op: sets its Times on the types timesType() accepts (and
  /// WorkspaceBytes where it knows them) and returns true; or changes no
  /// time, perhaps adding a note that says why, and returns false.
  virtual bool time(OpCosting &Op) = 0;
  /// Sets the source's own annotations of op \p Op, after cost-annotate
  /// set the op's costs (Op.Source says which source won).
  virtual void annotateOp(const OpCosting &Op, AttributeList &A) {}
  /// Sets the source's own annotations of the graph.
  virtual void annotateGraph(AttributeList &A) {}
  /// What the user should know about the whole graph (the graph's
  /// `cost_note`).
  virtual llvm::ArrayRef<std::string> getNotes() const { return {}; }
  /// Ends the run, after every annotation is set (oneDNN saves its cache).
  virtual llvm::Error finish() { return llvm::Error::success(); }

protected:
  /// Sets \p Op's time on every type timesType() accepts to \p Seconds plus
  /// \p Launches times the type's launch overhead: what a source writes
  /// that measured the op once, without the framework's dispatch.
  void setTimes(OpCosting &Op, double Seconds, double Launches) const;

private:
  CostSourceKind Kind;
};

/// What a source is made from.
struct CostSourceSetup {
  const CostOptions &Options;
  const Cluster &TheCluster;
  /// Where a source that takes time (measuring) adds its timer; or null.
  llvm::TimerGroup *Timers = nullptr;
};

/// Makes a source, or null when the options do not ask for it or the
/// cluster has no device type it times.
using CreateCostSourceFn = llvm::Expected<std::unique_ptr<CostSource>> (*)(
    const CostSourceSetup &Setup);

#define COST_SOURCE(KIND, NAME, ID, DESCRIPTION)                               \
  llvm::Expected<std::unique_ptr<CostSource>> create##ID##Source(              \
      const CostSourceSetup &Setup);
#define PROFILE_COST_SOURCE(KIND, NAME, ID, DESCRIPTION)                       \
  COST_SOURCE(KIND, NAME, ID, DESCRIPTION)
#include "dp/Cost/CostSources.def"

struct CostSourceInfo {
  CostSourceKind Kind;
  llvm::StringRef Name;
  llvm::StringRef Description;
  /// It reads the times the user measured in their own step
  /// (PROFILE_COST_SOURCE), rather than timing each op on its own.
  bool IsProfile;
  CreateCostSourceFn Create;
};

/// Every source, in CostSources.def order (of precedence).
llvm::ArrayRef<CostSourceInfo> getCostSources();
const CostSourceInfo &getCostSourceInfo(CostSourceKind Kind);
/// The `cost_source` name of \p Kind.
llvm::StringRef getCostSourceName(CostSourceKind Kind);
/// The names cost-annotate{source=...} chooses from: the COST_SOURCEs.
llvm::ArrayRef<EnumEntry<CostSourceKind>> getChoosableCostSources();

} // namespace dp

#endif // DP_COST_COSTSOURCE_H
