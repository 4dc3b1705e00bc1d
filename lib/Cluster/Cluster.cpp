//===- Cluster.cpp - Devices and links ------------------------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/Cluster/Cluster.h"
#include "dp/Support/Diagnostics.h"
#include "dp/Support/EnumNames.h"
#include "dp/Support/Format.h"

#include "llvm/ADT/StringSet.h"

#include <algorithm>
#include <deque>
#include <limits>

using namespace llvm;

namespace dp {

static constexpr EnumEntry<DeviceKind> DeviceKindNames[] = {
    {"gpu", DeviceKind::GPU},
    {"cpu", DeviceKind::CPU},
    {"accel", DeviceKind::Accelerator},
};

StringRef getDeviceKindName(DeviceKind K) {
  return getEnumName<DeviceKind>(DeviceKindNames, K);
}

int Cluster::lookupDevice(StringRef N) const {
  for (unsigned I = 0, E = Devices.size(); I != E; ++I)
    if (Devices[I].Name == N)
      return I;
  return -1;
}

int Cluster::lookupType(StringRef N) const {
  for (unsigned I = 0, E = Types.size(); I != E; ++I)
    if (Types[I].Name == N)
      return I;
  return -1;
}

int lookupNode(ArrayRef<Device> Devices, ArrayRef<std::string> Switches,
               StringRef Name) {
  for (unsigned I = 0, E = Devices.size(); I != E; ++I)
    if (Devices[I].Name == Name)
      return I;
  for (unsigned I = 0, E = Switches.size(); I != E; ++I)
    if (Switches[I] == Name)
      return Devices.size() + I;
  return -1;
}

double SharedGroup::getCapacity() const {
  double Best = 0;
  for (unsigned K = 0, E = Speed.size(); K != E; ++K)
    Best = std::max(Best, double(K + 1) * Speed[K]);
  return Best;
}

/// Reports the errors of the entries of a cluster description.
using ReportFn = function_ref<void(const Twine &)>;

static void checkDeviceTypes(ArrayRef<DeviceType> Types, ReportFn Err) {
  StringSet<> TypeNames;
  for (const DeviceType &T : Types) {
    if (T.Name.empty() || !TypeNames.insert(T.Name).second)
      Err("device type name '" + T.Name + "' is empty or repeated");
    if (!isPositiveFinite(T.PeakFlops[unsigned(DTypeKind::F32)]))
      Err("device type '" + T.Name + "' needs a positive f32 peak FLOP/s");
    for (double P : T.PeakFlops)
      if (P < 0 || !(P < std::numeric_limits<double>::infinity()))
        Err("device type '" + T.Name + "' has a negative or infinite peak");
    if (!isPositiveFinite(T.MemoryBandwidth))
      Err("device type '" + T.Name +
          "' needs a positive memory bandwidth");
    if (T.MemoryBytes == 0)
      Err("device type '" + T.Name + "' needs a positive memory capacity");
    if (T.LaunchOverhead < 0 ||
        !(T.LaunchOverhead < std::numeric_limits<double>::infinity()))
      Err("device type '" + T.Name +
          "' has a negative or infinite launch overhead");
  }
}

/// Devices and switches share one name space: they are the nodes links
/// join.
static void checkNodes(ArrayRef<Device> Devices, ArrayRef<std::string> Switches,
                       unsigned NumTypes, ReportFn Err) {
  StringSet<> NodeNames;
  for (const Device &D : Devices) {
    if (D.Name.empty() || !NodeNames.insert(D.Name).second)
      Err("device name '" + D.Name + "' is empty or repeated");
    if (D.Type >= NumTypes)
      Err("device '" + D.Name + "' has no valid type");
  }
  for (const std::string &S : Switches)
    if (S.empty() || !NodeNames.insert(S).second)
      Err("switch name '" + S + "' is empty or repeated");
}

static void checkLinks(ArrayRef<Link> Links, unsigned NumNodes, ReportFn Err) {
  StringSet<> LinkNames;
  for (const Link &L : Links) {
    if (L.Name.empty() || !LinkNames.insert(L.Name).second)
      Err("link name '" + L.Name + "' is empty or repeated");
    if (L.A >= NumNodes || L.B >= NumNodes || L.A == L.B)
      Err("link '" + L.Name + "' must join two different known devices or "
                               "switches");
    if (!isPositiveFinite(L.Bandwidth))
      Err("link '" + L.Name + "' needs a positive bandwidth");
    if (L.Latency < 0 || !(L.Latency < std::numeric_limits<double>::infinity()))
      Err("link '" + L.Name + "' has a negative or infinite latency");
    for (double Speed : {L.SpeedWhileSending, L.SpeedWhileReceiving})
      if (!(Speed > 0) || Speed > 1)
        Err("link '" + L.Name +
            "' has a speed while sending or receiving "
            "outside (0, 1]");
  }
}

/// Checks the shared groups; returns each device's group, or -1.
static std::vector<int> checkSharedGroups(ArrayRef<SharedGroup> Shared,
                                          ArrayRef<Device> Devices,
                                          ReportFn Err) {
  std::vector<int> GroupOf(Devices.size(), -1);
  for (unsigned G = 0, E = Shared.size(); G != E; ++G) {
    const SharedGroup &S = Shared[G];
    std::string Which = "shared group " + std::to_string(G);
    if (S.Devices.size() < 2)
      Err(Which + " needs at least two devices");
    if (S.Speed.size() != S.Devices.size())
      Err(Which + " has " + Twine(S.Devices.size()) + " devices but " +
          Twine(S.Speed.size()) + " speeds (one per number of busy devices)");
    for (unsigned K = 0, N = S.Speed.size(); K != N; ++K)
      if (!(S.Speed[K] > 0 && S.Speed[K] <= 1) ||
          (K == 0 && S.Speed[K] != 1))
        Err(Which + ": speed " + Twine(K + 1) +
            (K == 0 ? " must be 1 (a device alone runs at its own speed)"
                    : " must be in (0, 1]"));
    for (unsigned Dev : S.Devices) {
      if (Dev >= Devices.size()) {
        Err(Which + " names an unknown device");
        continue;
      }
      if (GroupOf[Dev] >= 0)
        Err("device '" + Devices[Dev].Name + "' is in shared groups " +
            Twine(GroupOf[Dev]) + " and " + Twine(G));
      else
        GroupOf[Dev] = G;
    }
  }
  return GroupOf;
}

/// Per node, the nodes its links lead to and the channels they take, in
/// link declaration order.
using ChannelAdjacency =
    std::vector<std::vector<std::pair<unsigned, unsigned>>>;

static ChannelAdjacency getChannelAdjacency(unsigned NumNodes,
                                            ArrayRef<Link> Links) {
  ChannelAdjacency Adj(NumNodes);
  for (unsigned L = 0, E = Links.size(); L != E; ++L) {
    Adj[Links[L].A].push_back({Links[L].B, 2 * L});
    Adj[Links[L].B].push_back({Links[L].A, 2 * L + 1});
  }
  return Adj;
}

namespace {
/// The routes from one device: breadth-first search over links, where
/// among routes of fewest hops the first found (links in declaration
/// order) is taken, so routes are deterministic.
struct RouteTree {
  std::vector<int> PrevChannel, PrevNode;
  std::vector<bool> Seen;

  RouteTree(unsigned Src, unsigned NumDevices, const ChannelAdjacency &Adj)
      : PrevChannel(Adj.size(), -1), PrevNode(Adj.size(), -1),
        Seen(Adj.size(), false) {
    std::deque<unsigned> Queue{Src};
    Seen[Src] = true;
    while (!Queue.empty()) {
      unsigned N = Queue.front();
      Queue.pop_front();
      // Switches forward traffic; devices do not relay for others.
      if (N != Src && N < NumDevices)
        continue;
      for (auto [Next, Channel] : Adj[N]) {
        if (Seen[Next])
          continue;
        Seen[Next] = true;
        PrevNode[Next] = N;
        PrevChannel[Next] = Channel;
        Queue.push_back(Next);
      }
    }
  }
};
} // namespace

std::vector<bool> getReachableNodes(unsigned Src, unsigned NumDevices,
                                    unsigned NumNodes, ArrayRef<Link> Links) {
  return RouteTree(Src, NumDevices, getChannelAdjacency(NumNodes, Links)).Seen;
}

Expected<Cluster>
Cluster::create(std::string Name, std::vector<DeviceType> Types,
                std::vector<Device> Devices, std::vector<std::string> Switches,
                std::vector<Link> Links, std::vector<SharedGroup> Shared) {
  ErrorList Errs;
  auto Err = [&](const Twine &Msg) {
    Errs.add(makeError("cluster '" + Name + "': " + Msg));
  };
  if (Name.empty())
    Err("the cluster has no name");
  if (Devices.empty())
    Err("the cluster has no devices");
  if (Devices.size() > MaxClusterDevices)
    return makeError("cluster '" + Name + "': " + Twine(Devices.size()) +
                     " devices; dp places on at most " +
                     Twine(MaxClusterDevices));
  checkDeviceTypes(Types, Err);
  checkNodes(Devices, Switches, Types.size(), Err);
  unsigned NumNodes = Devices.size() + Switches.size();
  checkLinks(Links, NumNodes, Err);
  std::vector<int> GroupOf = checkSharedGroups(Shared, Devices, Err);
  if (Error E = Errs.take())
    return std::move(E);

  Cluster C;
  C.Shared = std::move(Shared);
  C.GroupOf = std::move(GroupOf);
  C.Name = std::move(Name);
  C.Types = std::move(Types);
  C.Devices = std::move(Devices);
  C.Switches = std::move(Switches);
  C.Links = std::move(Links);

  ChannelAdjacency Adj = getChannelAdjacency(NumNodes, C.Links);
  unsigned D = C.Devices.size();
  C.Routes.assign(D * D, RouteInfo());
  for (unsigned Src = 0; Src != D; ++Src) {
    RouteTree Tree(Src, D, Adj);
    for (unsigned Dst = 0; Dst != D; ++Dst) {
      if (Dst == Src)
        continue;
      if (!Tree.Seen[Dst])
        return makeError("cluster '" + C.Name + "': device '" +
                         C.Devices[Dst].Name + "' cannot be reached from '" +
                         C.Devices[Src].Name + "'");
      RouteInfo &R = C.Routes[Src * D + Dst];
      R.Bandwidth = std::numeric_limits<double>::infinity();
      for (unsigned N = Dst; N != Src; N = Tree.PrevNode[N]) {
        unsigned Ch = Tree.PrevChannel[N];
        const Link &L = C.Links[Ch / 2];
        R.Channels.push_back(Ch);
        R.Bandwidth = std::min(R.Bandwidth, L.Bandwidth);
        R.Latency += L.Latency;
      }
      std::reverse(R.Channels.begin(), R.Channels.end());
    }
  }
  return std::move(C);
}

} // namespace dp
