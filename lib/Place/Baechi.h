//===- Baechi.h - Baechi's m-TOPO, m-ETF and m-SCT --------------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The three memory-constrained placers of Baechi (Jeon et al., "Baechi:
/// Fast Device Placement of Machine Learning Graphs", SoCC 2020), exposed
/// to the unit tests. docs/placers.md describes them and where dp differs
/// from the paper.
///
/// Memory: a unit placed on a device takes its
/// PlacementProblem::getUnitMemory there, plus one copy per device of each
/// tensor it reads from another unit. The copy is reserved when the reader
/// is placed unless the tensor's home unit is already on that device, and
/// freed if the home unit is placed there later. Under Baechi's schedule
/// estimate (memory=schedule) a result and its copies are freed once its
/// last reader is scheduled; under the static one (memory=static) they
/// stay all step.
///
//===----------------------------------------------------------------------===//

#ifndef DP_LIB_PLACE_BAECHI_H
#define DP_LIB_PLACE_BAECHI_H

#include "Placers.h"
#include "dp/Place/Placer.h"
#include "dp/Support/EnumNames.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <vector>

namespace dp {
namespace baechi {

/// Marks "no favourite child / parent".
constexpr uint32_t NoUnit = ~0u;

/// The devices a Baechi placer uses: \c First as equals, and \c Spill only
/// for units that fit on none of those (devices=auto|gpus|all).
struct DeviceTiers {
  std::vector<unsigned> First, Spill;
};

/// How a Baechi placer counts what a device holds (memory=).
enum class MemoryEstimate {
  /// Baechi's: results (and their copies) are held from their unit's
  /// placement until their last reader is scheduled; weights, graph
  /// inputs and persistent bytes all step.
  Schedule,
  /// Every result of a placed unit held all step, as if live at once: a
  /// placement that fits also fits when the ops run in another order.
  Static,
};

/// memory=schedule|static.
constexpr EnumEntry<MemoryEstimate> MemoryEstimateNames[] = {
    {"schedule", MemoryEstimate::Schedule}, {"static", MemoryEstimate::Static}};

/// devices=auto|gpus|all.
constexpr EnumEntry<DeviceSetKind> BaechiDeviceSetNames[] = {
    {"auto", DeviceSetKind::Auto},
    {"gpus", DeviceSetKind::GPUs},
    {"all", DeviceSetKind::All}};

/// The devices of the `devices=` option \p Which: auto (every device that
/// is not a CPU, and the CPUs for what does not fit on them; every device
/// when all are CPUs), gpus (every device that is not a CPU) or all (every
/// device).
llvm::Expected<DeviceTiers>
selectDevices(const Cluster &C, llvm::StringRef Algo, DeviceSetKind Which);

/// m-TOPO: units in topological order fill the First devices one after
/// another. With \p Uniform, a device takes units until the next one
/// would bring its memory or its compute time over its fair share plus the
/// largest unit (Baechi's cap: total / devices + largest); shares follow
/// each device's speed on the whole graph. Without, devices fill to
/// capacity. Units left over go to the first device with room, First
/// devices before Spill devices. Under the schedule estimate the units run
/// in that order, each unit's ops at its placement.
llvm::Expected<std::vector<uint32_t>>
placeTopo(const PlacementProblem &P, const DeviceTiers &Devices, bool Uniform,
          MemoryEstimate Memory = MemoryEstimate::Schedule);

/// A list schedule of a problem's ops, with each unit on one device.
struct Schedule {
  std::vector<uint32_t> UnitDevice;
  /// Per op.
  std::vector<double> Start, End;
  double Makespan = 0;
};

/// m-ETF (and, with favourite children, m-SCT's list scheduling): ops are
/// scheduled one at a time, each time the ready op that can start
/// earliest, ties broken by unit, then op index. An op's start accounts
/// for its device being busy and for the transfers of its inputs over the
/// cluster's routes, which occupy the route's channels as in the
/// simulator. The first op of a unit to be scheduled places the whole
/// unit, on the device with room where that op would end first (then
/// start first, then come first in the cluster); on identical devices this
/// is ETF's earliest start.
///
/// With \p FavouriteChild (a unit or NoUnit per unit), m-SCT's rule
/// applies: a device whose last op belongs to a unit with an unplaced
/// favourite child waits for that child once the child has a ready op that
/// would go there; meanwhile it runs only ops that end before the child
/// can start.
llvm::Expected<Schedule>
scheduleList(const PlacementProblem &P, llvm::StringRef Algo,
             const DeviceTiers &Devices,
             llvm::ArrayRef<uint32_t> FavouriteChild = {},
             MemoryEstimate Memory = MemoryEstimate::Schedule);

/// An edge of the favourite-child LP.
struct LPEdge {
  uint32_t From = 0, To = 0;
  /// Communication time when the ends are on different devices.
  double Cost = 0;
};

struct FavouriteChildren {
  /// Per node: its favourite child, or NoUnit.
  std::vector<uint32_t> Child;
  /// The relaxed makespan of the LP (0 when no LP was solved).
  double RelaxedMakespan = 0;
  /// Size of the LP actually solved: nodes and edges left after the exact
  /// chain contraction, and how many LPs (windows) were solved.
  unsigned LPNodes = 0, LPEdges = 0, NumLPs = 0;
};

/// Chooses favourite children on the DAG (\p NodeTime, \p Edges; every
/// edge must go from a lower to a higher position in \p Order) with the LP
/// relaxation of the small-communication-times scheduling problem, solved
/// with GLPK's simplex: x_e in [0, 1] (0: the edge is favourite), start
/// times s, makespan w; s_i + p_i + c_e x_e <= s_j, every node has at
/// most one favourite child and at most one favourite parent, and
/// s_i + p_i <= w. Among the LP's optimal solutions, a second solve picks
/// one that keeps the most communication on favourite edges. Edges with
/// x_e < \p Threshold become favourites, smallest x first, keeping at most
/// one per parent and per child.
///
/// A chain edge (the only child of a node with a single parent) is always
/// favourite and is contracted before the LP. When more than \p NodeLimit
/// nodes remain, the LP is solved on consecutive windows of at most
/// NodeLimit nodes of \p Order, each with the edges inside it; edges
/// between windows are not favourites. A window GLPK finds no optimum for
/// gives no favourites.
FavouriteChildren solveFavouriteChildren(llvm::ArrayRef<double> NodeTime,
                                         llvm::ArrayRef<LPEdge> Edges,
                                         llvm::ArrayRef<uint32_t> Order,
                                         double Threshold, unsigned NodeLimit);

/// The favourite-child LP of a problem's unit graph: each unit's time on
/// its fastest device, each edge's transfer time averaged over the ordered
/// pairs of distinct devices, edges against the topological order (from
/// cycles among units) left out.
FavouriteChildren computeUnitFavourites(const PlacementProblem &P,
                                        double Threshold, unsigned NodeLimit);

} // namespace baechi
} // namespace dp

#endif // DP_LIB_PLACE_BAECHI_H
