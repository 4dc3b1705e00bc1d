//===- dp/Cluster/Cluster.h - Devices and links -----------------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// A cluster is the hardware a graph is placed on: device types (a hardware
/// model: peak FLOP/s per element type, memory bandwidth and capacity,
/// per-op launch overhead), devices (instances of a type), switches, and
/// links between devices and switches (bandwidth, latency).
///
/// Transfers between two devices follow the route of fewest hops through
/// links and switches. Each link carries data both ways at its full
/// bandwidth (PCIe, NVLink and Ethernet are full duplex), so a link is two
/// channels, one per direction; transfers that share a channel contend for
/// it. Devices behind one PCIe switch therefore contend on the switch's
/// uplink, as they do in the papers' machines.
///
/// Clusters come from presets (docs/clusters.md cites the figures they use)
/// or from JSON/YAML files read with LLVM Support.
///
//===----------------------------------------------------------------------===//

#ifndef DP_CLUSTER_CLUSTER_H
#define DP_CLUSTER_CLUSTER_H

#include "dp/IR/Types.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBufferRef.h"
#include "llvm/Support/raw_ostream.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace dp {

enum class DeviceKind : uint8_t { GPU, CPU, Accelerator };

llvm::StringRef getDeviceKindName(DeviceKind K); // "gpu", "cpu", "accel"

/// A hardware model.
struct DeviceType {
  /// Short name used in cost annotations ("p100", "xeon-e5-2650v4").
  std::string Name;
  DeviceKind Kind = DeviceKind::GPU;
  /// Peak FLOP/s by element type, indexed by DTypeKind; 0 where the file
  /// or preset gives none (cost models then use the F32 figure).
  std::array<double, MaxDTypeKind + 1> PeakFlops{};
  /// Memory bandwidth in bytes/s.
  double MemoryBandwidth = 0;
  /// Memory capacity in bytes available to the graph.
  uint64_t MemoryBytes = 0;
  /// Fixed cost of launching one op, in seconds.
  double LaunchOverhead = 0;

  /// Peak FLOP/s for \p T, falling back to the F32 figure.
  double getPeakFlops(DTypeKind T) const {
    double P = PeakFlops[static_cast<unsigned>(T)];
    return P > 0 ? P : PeakFlops[static_cast<unsigned>(DTypeKind::F32)];
  }
};

struct Device {
  /// Unique name ("gpu:0", "cpu:0").
  std::string Name;
  /// Index into Cluster::getTypes().
  unsigned Type = 0;
};

/// A full-duplex connection between two nodes. Nodes 0..D-1 are the
/// devices, D..D+S-1 the switches.
struct Link {
  std::string Name;
  unsigned A = 0, B = 0;
  /// Bytes/s in each direction.
  double Bandwidth = 0;
  /// Seconds added to every transfer over the link.
  double Latency = 0;
  /// The share of its speed a device keeps for its ops while a transfer
  /// it sends (receives) over this link is in flight: 1 when a copy
  /// engine moves the data, less when the device's own processor does
  /// (CPU workers over gloo: docs/clusters.md). A route's source takes
  /// the figure of its first link, its destination that of its last.
  double SpeedWhileSending = 1;
  double SpeedWhileReceiving = 1;
};

/// Devices that share execution resources: the hardware threads of one
/// core, cores that share one memory system, processes sharing one GPU.
/// While K of them run ops at the same time, each runs at Speed[K - 1] of
/// its own speed (Speed[0] is 1: a device alone runs at its type's
/// figures). The simulator shares time among them accordingly.
struct SharedGroup {
  /// Indices into Cluster::getDevices(), at least two, each in one group.
  std::vector<unsigned> Devices;
  /// One entry per device of the group, each in (0, 1], Speed[0] == 1.
  std::vector<double> Speed;

  /// The total rate of the group, in devices' worth of work per second,
  /// at its best concurrency: max over K of K * Speed[K - 1].
  double getCapacity() const;
};

/// The most devices a cluster may have: a route is kept for every pair of
/// devices, and placers work per device.
constexpr unsigned MaxClusterDevices = 1024;

class Cluster {
public:
  llvm::StringRef getName() const { return Name; }
  llvm::ArrayRef<DeviceType> getTypes() const { return Types; }
  llvm::ArrayRef<Device> getDevices() const { return Devices; }
  llvm::ArrayRef<std::string> getSwitches() const { return Switches; }
  llvm::ArrayRef<Link> getLinks() const { return Links; }
  llvm::ArrayRef<SharedGroup> getSharedGroups() const { return Shared; }
  /// The index of the shared group holding device \p Dev, or -1.
  int getSharedGroup(unsigned Dev) const { return GroupOf[Dev]; }

  unsigned getNumDevices() const { return Devices.size(); }
  const DeviceType &getDeviceType(unsigned Dev) const {
    return Types[Devices[Dev].Type];
  }
  /// Returns the device named \p N, or -1.
  int lookupDevice(llvm::StringRef N) const;
  /// Returns the device type named \p N, or -1.
  int lookupType(llvm::StringRef N) const;

  /// Channels are link directions: channel 2*L goes from Links[L].A to
  /// Links[L].B, channel 2*L+1 back.
  unsigned getNumChannels() const { return 2 * Links.size(); }
  /// The channels a transfer from device \p Src to device \p Dst occupies,
  /// in order; empty when Src == Dst.
  llvm::ArrayRef<unsigned> getRoute(unsigned Src, unsigned Dst) const {
    return Routes[Src * Devices.size() + Dst].Channels;
  }
  /// The smallest bandwidth along the route, and the sum of latencies.
  double getRouteBandwidth(unsigned Src, unsigned Dst) const {
    return Routes[Src * Devices.size() + Dst].Bandwidth;
  }
  double getRouteLatency(unsigned Src, unsigned Dst) const {
    return Routes[Src * Devices.size() + Dst].Latency;
  }
  /// Seconds to move \p Bytes from \p Src to \p Dst on an idle route.
  double getTransferTime(unsigned Src, unsigned Dst, uint64_t Bytes) const {
    if (Src == Dst)
      return 0;
    return getRouteLatency(Src, Dst) +
           static_cast<double>(Bytes) / getRouteBandwidth(Src, Dst);
  }

  /// Builds a cluster, checking it: names unique and non-empty, positive
  /// bandwidths, capacities and peaks, every device reachable from every
  /// other; shared groups of two or more known devices, each device in one
  /// group, speeds as SharedGroup says. Computes the routes. Errors name
  /// the offending entry.
  static llvm::Expected<Cluster> create(std::string Name,
                                        std::vector<DeviceType> Types,
                                        std::vector<Device> Devices,
                                        std::vector<std::string> Switches,
                                        std::vector<Link> Links,
                                        std::vector<SharedGroup> Shared = {});

private:
  struct RouteInfo {
    llvm::SmallVector<unsigned, 4> Channels;
    double Bandwidth = 0;
    double Latency = 0;
  };

  std::string Name;
  std::vector<DeviceType> Types;
  std::vector<Device> Devices;
  std::vector<std::string> Switches;
  std::vector<Link> Links;
  std::vector<SharedGroup> Shared;
  /// Per device: its index in Shared, or -1.
  std::vector<int> GroupOf;
  /// Device-by-device, row-major.
  std::vector<RouteInfo> Routes;
};

/// The node named \p Name as a Link's ends number nodes (the \p Devices in
/// order, then the \p Switches), or -1 when there is none; for building
/// the \p Links that Cluster::create takes.
int lookupNode(llvm::ArrayRef<Device> Devices,
               llvm::ArrayRef<std::string> Switches, llvm::StringRef Name);

/// Which nodes (numbered as by lookupNode) device \p Src reaches over
/// \p Links, through switches only, as Cluster::create routes: devices do
/// not forward traffic.
std::vector<bool> getReachableNodes(unsigned Src, unsigned NumDevices,
                                    unsigned NumNodes,
                                    llvm::ArrayRef<Link> Links);

/// The built-in presets' names, in the order -print-cluster lists them.
llvm::ArrayRef<llvm::StringRef> getClusterPresetNames();

/// Returns the preset \p Name.
llvm::Expected<Cluster> getClusterPreset(llvm::StringRef Name);

/// Reads a cluster from JSON or YAML text (docs/clusters.md gives the
/// schema). Errors are LocatedErrors naming \p Buffer's identifier and,
/// where known, the line and column.
llvm::Expected<Cluster> parseCluster(llvm::MemoryBufferRef Buffer);

/// Returns the preset named \p Spec, or else the cluster in the file named
/// \p Spec.
llvm::Expected<Cluster> loadCluster(llvm::StringRef Spec);

/// Writes a human description: device types with their figures, devices,
/// switches, links, and the route bandwidth between every device pair.
void printCluster(llvm::raw_ostream &OS, const Cluster &C);

} // namespace dp

#endif // DP_CLUSTER_CLUSTER_H
