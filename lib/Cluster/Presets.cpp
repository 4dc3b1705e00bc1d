//===- Presets.cpp - Built-in clusters ------------------------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The clusters of the papers dp reproduces and a few modern ones. Every
/// figure is a vendor's datasheet figure or derived from one; docs/clusters.md
/// cites the source of each and says which figures are choices rather than
/// specifications (launch overheads, link latencies).
///
/// Multi-socket hosts are one CPU device, as TensorFlow and PyTorch present
/// them (EAGLE places on "four GPUs and one CPU"); the sockets stay visible
/// as two PCIe root complexes joined by QPI/UPI, so that traffic between
/// GPUs on different sockets crosses the socket link.
///
//===----------------------------------------------------------------------===//

#include "HostCluster.h"
#include "dp/Cluster/Cluster.h"
#include "dp/Support/Diagnostics.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

using namespace llvm;

namespace dp {

// Units, so that the tables below read like the datasheets.
static constexpr double TFLOPs = 1e12;
static constexpr double GBps = 1e9;
static constexpr uint64_t GiB = uint64_t(1) << 30;
static constexpr double Microsecond = 1e-6;

// Links, per direction. PCIe figures are the raw data rate after line
// encoding (128b/130b), what vendors quote; docs/clusters.md says why the
// achievable ~12 GB/s of PCIe 3.0 is not used.
static constexpr double PCIe3x16 = 8e9 * 16 * 128 / 130 / 8;  // 15.75 GB/s
static constexpr double PCIe5x16 = 32e9 * 16 * 128 / 130 / 8; // 63.02 GB/s
/// Two QPI links at 9.6 GT/s, 2 bytes per transfer each way (Xeon E5 v4).
static constexpr double QPIx2 = 2 * 9.6e9 * 2;
/// Four UPI links at 16 GT/s, 2 bytes per transfer each way (Xeon 8480C).
static constexpr double UPIx4 = 4 * 16e9 * 2;
/// One NVLink 2.0 link (V100): 25 GB/s each way.
static constexpr double NVLink2 = 25 * GBps;
/// One H100 SXM5's 18 NVLink 4 links to the NVSwitches: 450 GB/s each way.
static constexpr double NVLink4x18 = 450 * GBps;
/// InfiniBand EDR 4x: 100 Gb/s each way.
static constexpr double IBEDR = 100e9 / 8;

// Latencies are per hop, so that a route across more switches costs more;
// they are round figures, not measurements (docs/clusters.md).
static constexpr double PCIeHopLatency = 1 * Microsecond;
static constexpr double SocketLinkLatency = 1 * Microsecond;
static constexpr double NVLinkLatency = 1 * Microsecond;
static constexpr double NVSwitchHopLatency = 0.5 * Microsecond;
static constexpr double IBHopLatency = 1 * Microsecond;

static constexpr double GPULaunchOverhead = 5 * Microsecond;
static constexpr double CPULaunchOverhead = 1 * Microsecond;

/// AVX2 with two FMA units: 2 x 8 lanes x 2 FLOPs per cycle and core.
static constexpr double AVX2FlopsPerCycle = 32;
/// AVX-512 with two FMA units: 2 x 16 lanes x 2 FLOPs.
static constexpr double AVX512FlopsPerCycle = 64;

namespace {
/// Assembles a preset by names: links name their endpoints, which are
/// resolved once every device and switch is known (Cluster numbers the
/// switches after all devices).
class PresetBuilder {
public:
  explicit PresetBuilder(StringRef Name) : Name(Name.str()) {}

  void addType(DeviceType T) { Types.push_back(std::move(T)); }
  void addDevice(const Twine &DevName, StringRef TypeName) {
    auto It =
        find_if(Types, [&](const DeviceType &T) { return T.Name == TypeName; });
    assert(It != Types.end() && "preset device of an unknown type");
    Devices.push_back({DevName.str(), unsigned(It - Types.begin())});
  }
  /// Adds types \p GPU and \p CPU, then devices "gpu:0" to "gpu:<NumGPUs-1>"
  /// of the first and "cpu:0" to "cpu:<NumCPUs-1>" of the second.
  void addDevices(DeviceType GPU, unsigned NumGPUs, DeviceType CPU,
                  unsigned NumCPUs = 1) {
    std::string GPUType = GPU.Name, CPUType = CPU.Name;
    addType(std::move(GPU));
    addType(std::move(CPU));
    for (unsigned G = 0; G != NumGPUs; ++G)
      addDevice("gpu:" + Twine(G), GPUType);
    for (unsigned C = 0; C != NumCPUs; ++C)
      addDevice("cpu:" + Twine(C), CPUType);
  }
  void addSwitch(const Twine &SwitchName) {
    Switches.push_back(SwitchName.str());
  }
  /// Joins \p A and \p B; the link is named "A-B".
  void addLink(const Twine &A, const Twine &B, double Bandwidth,
               double Latency) {
    PendingLinks.push_back({A.str(), B.str(), Bandwidth, Latency});
  }

  Expected<Cluster> build() {
    std::vector<Link> Links;
    for (const PendingLink &P : PendingLinks) {
      Link L;
      L.Name = P.A + "-" + P.B;
      L.A = lookupNode(P.A);
      L.B = lookupNode(P.B);
      L.Bandwidth = P.Bandwidth;
      L.Latency = P.Latency;
      Links.push_back(std::move(L));
    }
    return Cluster::create(Name, Types, Devices, Switches, std::move(Links));
  }

private:
  struct PendingLink {
    std::string A, B;
    double Bandwidth, Latency;
  };

  unsigned lookupNode(StringRef N) const {
    int Node = dp::lookupNode(Devices, Switches, N);
    if (Node < 0)
      llvm_unreachable("preset link to an unknown node");
    return Node;
  }

  std::string Name;
  std::vector<DeviceType> Types;
  std::vector<Device> Devices;
  std::vector<std::string> Switches;
  std::vector<PendingLink> PendingLinks;
};
} // namespace

static DeviceType makeType(StringRef Name, DeviceKind Kind, double F32,
                           double F64, double F16, double BF16,
                           double MemoryBandwidth, uint64_t MemoryBytes,
                           double LaunchOverhead) {
  DeviceType T;
  T.Name = Name.str();
  T.Kind = Kind;
  T.PeakFlops[unsigned(DTypeKind::F32)] = F32;
  T.PeakFlops[unsigned(DTypeKind::F64)] = F64;
  T.PeakFlops[unsigned(DTypeKind::F16)] = F16;
  T.PeakFlops[unsigned(DTypeKind::BF16)] = BF16;
  T.MemoryBandwidth = MemoryBandwidth;
  T.MemoryBytes = MemoryBytes;
  T.LaunchOverhead = LaunchOverhead;
  return T;
}

//===----------------------------------------------------------------------===//
// Device types
//===----------------------------------------------------------------------===//

/// NVIDIA Tesla P100 for PCIe, 12 GB (P100 PCIe datasheet).
static DeviceType getP100() {
  return makeType("p100", DeviceKind::GPU, 9.3 * TFLOPs, 4.7 * TFLOPs,
                  18.7 * TFLOPs, 0, 549 * GBps, 12 * GiB, GPULaunchOverhead);
}

/// Two Xeon E5-2650 v4 (12 cores, 2.2 GHz, AVX2 FMA, 4 x DDR4-2400 each)
/// and the 125 GB the EAGLE and Mars papers report.
static DeviceType getXeonE52650v4x2() {
  double F32 = 2 * 12 * 2.2e9 * AVX2FlopsPerCycle;
  return makeType("xeon-e5-2650v4-2s", DeviceKind::CPU, F32, F32 / 2, 0, 0,
                  2 * 76.8 * GBps, 125 * GiB, CPULaunchOverhead);
}

/// One GK210 of a Tesla K80 board (K80 datasheet: 8.73 TFLOP/s fp32 and
/// 2.91 fp64 with GPU Boost, 480 GB/s and 24 GB per board of two GPUs).
static DeviceType getK80() {
  return makeType("k80", DeviceKind::GPU, 8.73 / 2 * TFLOPs, 2.91 / 2 * TFLOPs,
                  0, 0, 240 * GBps, 12 * GiB, GPULaunchOverhead);
}

/// The 32 vCPUs (16 cores) of a p2.8xlarge on a Xeon E5-2686 v4 (2.3 GHz,
/// AVX2 FMA, 4 x DDR4-2400), with the instance's 488 GiB.
static DeviceType getXeonE52686v4() {
  double F32 = 16 * 2.3e9 * AVX2FlopsPerCycle;
  return makeType("xeon-e5-2686v4", DeviceKind::CPU, F32, F32 / 2, 0, 0,
                  76.8 * GBps, 488 * GiB, CPULaunchOverhead);
}

/// NVIDIA Tesla V100 SXM2 16 GB (V100 datasheet); f16 is the tensor-core
/// figure.
static DeviceType getV100() {
  return makeType("v100", DeviceKind::GPU, 15.7 * TFLOPs, 7.8 * TFLOPs,
                  125 * TFLOPs, 0, 900 * GBps, 16 * GiB, GPULaunchOverhead);
}

/// DGX-1's two Xeon E5-2698 v4 (20 cores, 2.2 GHz, AVX2 FMA, 4 x DDR4-2400
/// each) and its 512 GB.
static DeviceType getXeonE52698v4x2() {
  double F32 = 2 * 20 * 2.2e9 * AVX2FlopsPerCycle;
  return makeType("xeon-e5-2698v4-2s", DeviceKind::CPU, F32, F32 / 2, 0, 0,
                  2 * 76.8 * GBps, 512 * GiB, CPULaunchOverhead);
}

/// NVIDIA H100 SXM5 80 GB (H100 datasheet); f16 and bf16 are the dense
/// tensor-core figures (the datasheet's 1,979 is with sparsity).
static DeviceType getH100() {
  return makeType("h100", DeviceKind::GPU, 67 * TFLOPs, 34 * TFLOPs,
                  989.4 * TFLOPs, 989.4 * TFLOPs, 3350 * GBps, 80 * GiB,
                  GPULaunchOverhead);
}

/// DGX H100's two Xeon Platinum 8480C (56 cores, 2.0 GHz, AVX-512 with two
/// FMA units, 8 x DDR5-4800 each) and its 2 TB.
static DeviceType getXeon8480Cx2() {
  double F32 = 2 * 56 * 2.0e9 * AVX512FlopsPerCycle;
  return makeType("xeon-8480c-2s", DeviceKind::CPU, F32, F32 / 2, 0, 0,
                  2 * 307.2 * GBps, 2048 * GiB, CPULaunchOverhead);
}

//===----------------------------------------------------------------------===//
// Topologies
//===----------------------------------------------------------------------===//

/// A two-socket host: CPU device \p Cpu, root complexes \p Prefix "rc0" and
/// "rc1" joined by the socket link, the CPU's memory on both, and
/// \p NumSwitches PCIe switches (half on each socket), each with
/// \p GPUsPerSwitch of the GPUs numbered from \p FirstGPU. Switch uplinks
/// are as wide as the GPUs' links (x16 of the same generation).
static void addDualSocketHost(PresetBuilder &B, StringRef Prefix, StringRef Cpu,
                              double SocketMemoryBandwidth, double SocketLink,
                              unsigned NumSwitches, unsigned GPUsPerSwitch,
                              unsigned FirstGPU, double GPULink) {
  std::string RC[2] = {(Prefix + "rc0").str(), (Prefix + "rc1").str()};
  B.addSwitch(RC[0]);
  B.addSwitch(RC[1]);
  B.addLink(Cpu, RC[0], SocketMemoryBandwidth, 0);
  B.addLink(Cpu, RC[1], SocketMemoryBandwidth, 0);
  B.addLink(RC[0], RC[1], SocketLink, SocketLinkLatency);
  for (unsigned S = 0; S != NumSwitches; ++S) {
    std::string Switch = (Prefix + "pcie" + Twine(S)).str();
    B.addSwitch(Switch);
    B.addLink(Switch, RC[S * 2 / NumSwitches], GPULink, PCIeHopLatency);
    for (unsigned G = 0; G != GPUsPerSwitch; ++G)
      B.addLink("gpu:" + Twine(FirstGPU + S * GPUsPerSwitch + G), Switch,
                GPULink, PCIeHopLatency);
  }
}

/// EAGLE's and Mars's machine: 4 x P100 PCIe, two behind each of two PCIe
/// switches, one switch per socket of the two Xeon E5-2650 v4.
static Expected<Cluster> getP100x4() {
  PresetBuilder B("p100x4");
  B.addDevices(getP100(), 4, getXeonE52650v4x2());
  addDualSocketHost(B, "", "cpu:0", 76.8 * GBps, QPIx2, /*NumSwitches=*/2,
                    /*GPUsPerSwitch=*/2, /*FirstGPU=*/0, PCIe3x16);
  return B.build();
}

/// Placeto's AWS p2.8xlarge with \p NumGPUs of its 8 GK210s: each K80
/// board puts its two GPUs behind an on-board PCIe switch ("k80boardN");
/// one socket has 40 PCIe lanes, too few for four x16 boards, so two host
/// PCIe switches hold two boards each.
static Expected<Cluster> getK80(unsigned NumGPUs) {
  PresetBuilder B(("k80x" + Twine(NumGPUs)).str());
  B.addDevices(getK80(), NumGPUs, getXeonE52686v4());
  B.addSwitch("rc0");
  B.addLink("cpu:0", "rc0", 76.8 * GBps, 0);
  unsigned NumBoards = NumGPUs / 2;
  for (unsigned S = 0; S != (NumBoards + 1) / 2; ++S) {
    B.addSwitch("pcie" + Twine(S));
    B.addLink("pcie" + Twine(S), "rc0", PCIe3x16, PCIeHopLatency);
  }
  for (unsigned Board = 0; Board != NumBoards; ++Board) {
    std::string Plx = ("k80board" + Twine(Board)).str();
    B.addSwitch(Plx);
    B.addLink(Plx, "pcie" + Twine(Board / 2), PCIe3x16, PCIeHopLatency);
    for (unsigned G = 0; G != 2; ++G)
      B.addLink("gpu:" + Twine(2 * Board + G), Plx, PCIe3x16, PCIeHopLatency);
  }
  return B.build();
}

/// NVLink 2.0 between the GPUs of a DGX-1 (V100): the hybrid cube-mesh, as
/// `nvidia-smi topo -m` shows it, with the number of links of each pair.
/// GPUs 0-3 and 4-7 are each fully connected; GPU i and i+4 are joined.
static const struct {
  unsigned A, B, NumLinks;
} DGX1NVLinks[] = {
    {0, 1, 1}, {0, 2, 1}, {0, 3, 2}, {1, 2, 2}, {1, 3, 1}, {2, 3, 2},
    {4, 5, 1}, {4, 6, 1}, {4, 7, 2}, {5, 6, 2}, {5, 7, 1}, {6, 7, 2},
    {0, 4, 2}, {1, 5, 2}, {2, 6, 1}, {3, 7, 1},
};

/// DGX-1 with V100: NVLink hybrid cube-mesh; over PCIe, four PCIe switches
/// with two GPUs each, two per socket of the two Xeon E5-2698 v4.
static Expected<Cluster> getV100x8NVLink() {
  PresetBuilder B("v100x8-nvlink");
  B.addDevices(getV100(), 8, getXeonE52698v4x2());
  for (const auto &L : DGX1NVLinks)
    B.addLink("gpu:" + Twine(L.A), "gpu:" + Twine(L.B), L.NumLinks * NVLink2,
              NVLinkLatency);
  addDualSocketHost(B, "", "cpu:0", 76.8 * GBps, QPIx2, /*NumSwitches=*/4,
                    /*GPUsPerSwitch=*/2, /*FirstGPU=*/0, PCIe3x16);
  return B.build();
}

/// DGX H100: every GPU has 18 NVLink 4 links to the NVSwitch fabric (four
/// NVSwitch chips, modelled as one non-blocking switch); over PCIe Gen5,
/// four switches with two GPUs each, two per socket.
static Expected<Cluster> getH100x8() {
  PresetBuilder B("h100x8");
  B.addDevices(getH100(), 8, getXeon8480Cx2());
  // NVLink first: between two GPUs it ties with the two PCIe hops through
  // a shared PCIe switch, and routes take the first link found.
  B.addSwitch("nvswitch");
  for (unsigned G = 0; G != 8; ++G)
    B.addLink("gpu:" + Twine(G), "nvswitch", NVLink4x18, NVSwitchHopLatency);
  addDualSocketHost(B, "", "cpu:0", 307.2 * GBps, UPIx4, /*NumSwitches=*/4,
                    /*GPUsPerSwitch=*/2, /*FirstGPU=*/0, PCIe5x16);
  return B.build();
}

/// Two nodes, each with four V100 SXM2 (one NVLink quad of a DGX-1), two
/// PCIe switches with two GPUs and one InfiniBand EDR adapter each (as in
/// DGX-1, for GPUDirect RDMA), and two Xeon E5-2698 v4; the four adapters
/// meet in one InfiniBand switch.
static Expected<Cluster> getV100x4x2IB() {
  PresetBuilder B("v100x4x2-ib");
  B.addDevices(getV100(), 8, getXeonE52698v4x2(), /*NumCPUs=*/2);
  for (const auto &L : DGX1NVLinks)
    if (L.A / 4 == L.B / 4)
      B.addLink("gpu:" + Twine(L.A), "gpu:" + Twine(L.B), L.NumLinks * NVLink2,
                NVLinkLatency);
  B.addSwitch("ib");
  for (unsigned N = 0; N != 2; ++N) {
    std::string Prefix = ("n" + Twine(N) + ".").str();
    addDualSocketHost(B, Prefix, "cpu:" + utostr(N), 76.8 * GBps, QPIx2,
                      /*NumSwitches=*/2, /*GPUsPerSwitch=*/2,
                      /*FirstGPU=*/4 * N, PCIe3x16);
    for (unsigned S = 0; S != 2; ++S) {
      std::string Nic = Prefix + "ib" + utostr(S);
      B.addSwitch(Nic);
      B.addLink(Nic, Prefix + "pcie" + utostr(S), PCIe3x16, PCIeHopLatency);
      B.addLink(Nic, "ib", IBEDR, IBHopLatency);
    }
  }
  return B.build();
}

//===----------------------------------------------------------------------===//
// Lookup
//===----------------------------------------------------------------------===//

static const StringRef PresetNames[] = {
    "p100x4",      "k80x4",  "k80x8", "v100x8-nvlink",
    "v100x4x2-ib", "h100x8", "host"};

ArrayRef<StringRef> getClusterPresetNames() { return PresetNames; }

Expected<Cluster> getClusterPreset(StringRef Name) {
  if (Name == "p100x4")
    return getP100x4();
  if (Name == "k80x4")
    return getK80(4);
  if (Name == "k80x8")
    return getK80(8);
  if (Name == "v100x8-nvlink")
    return getV100x8NVLink();
  if (Name == "v100x4x2-ib")
    return getV100x4x2IB();
  if (Name == "h100x8")
    return getH100x8();
  if (Name == "host")
    return getHostCluster();
  return makeError("unknown cluster preset '" + Name +
                   "' (presets: " + join(getClusterPresetNames(), ", ") + ")");
}

} // namespace dp
