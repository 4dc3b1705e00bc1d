//===- ClusterTest.cpp - Devices, links, routes, presets and files --------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/Cluster/Cluster.h"
#include "dp/Support/Diagnostics.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include "DiagnosticsTestUtil.h"

#include "gtest/gtest.h"

#include <string>
#include <vector>

using namespace dp;
using namespace dp::test;

namespace {

constexpr uint64_t GiB = uint64_t(1) << 30;

DeviceType makeType(llvm::StringRef Name, DeviceKind Kind = DeviceKind::GPU) {
  DeviceType T;
  T.Name = Name.str();
  T.Kind = Kind;
  T.PeakFlops[unsigned(DTypeKind::F32)] = 1e12;
  T.MemoryBandwidth = 100e9;
  T.MemoryBytes = 8 * GiB;
  T.LaunchOverhead = 5e-6;
  return T;
}

Link makeLink(llvm::StringRef Name, unsigned A, unsigned B, double Bandwidth,
              double Latency = 0) {
  Link L;
  L.Name = Name.str();
  L.A = A;
  L.B = B;
  L.Bandwidth = Bandwidth;
  L.Latency = Latency;
  return L;
}

std::vector<Device> makeDevices(llvm::ArrayRef<const char *> Names) {
  std::vector<Device> Devices;
  for (const char *N : Names)
    Devices.push_back({N, 0});
  return Devices;
}

/// Builds a cluster that must be valid.
Cluster build(std::vector<Device> Devices, std::vector<std::string> Switches,
              std::vector<Link> Links) {
  llvm::Expected<Cluster> C =
      Cluster::create("test", {makeType("t")}, std::move(Devices),
                      std::move(Switches), std::move(Links));
  if (!C) {
    ADD_FAILURE() << describe(collectErrors(C.takeError()));
    return std::move(
        *Cluster::create("empty", {makeType("t")}, makeDevices({"d"}), {}, {}));
  }
  return std::move(*C);
}

/// The messages of the errors of a cluster that must be invalid.
std::vector<Diag> createErrors(std::vector<DeviceType> Types,
                               std::vector<Device> Devices,
                               std::vector<std::string> Switches,
                               std::vector<Link> Links) {
  llvm::Expected<Cluster> C =
      Cluster::create("bad", std::move(Types), std::move(Devices),
                      std::move(Switches), std::move(Links));
  if (C) {
    ADD_FAILURE() << "expected an error";
    return {};
  }
  return collectErrors(C.takeError());
}

bool hasMessage(const std::vector<Diag> &Diags, llvm::StringRef Text) {
  for (const Diag &D : Diags)
    if (llvm::StringRef(D.Message).contains(Text))
      return true;
  return false;
}

std::vector<unsigned> route(const Cluster &C, unsigned Src, unsigned Dst) {
  llvm::ArrayRef<unsigned> R = C.getRoute(Src, Dst);
  return std::vector<unsigned>(R.begin(), R.end());
}

//===----------------------------------------------------------------------===//
// Routes
//===----------------------------------------------------------------------===//

TEST(ClusterRouteTest, TakesTheRouteOfFewestHops) {
  // Devices a=0, b=1; switches s1=2, s2=3, s3=4. a-s1-s2-b is declared
  // first but has three hops; a-s3-b has two.
  Cluster C =
      build(makeDevices({"a", "b"}), {"s1", "s2", "s3"},
            {makeLink("a-s1", 0, 2, 10e9), makeLink("s1-s2", 2, 3, 10e9),
             makeLink("s2-b", 3, 1, 10e9), makeLink("a-s3", 0, 4, 10e9),
             makeLink("s3-b", 4, 1, 10e9)});
  EXPECT_EQ(route(C, 0, 1), (std::vector<unsigned>{2 * 3, 2 * 4}));
  EXPECT_EQ(route(C, 1, 0), (std::vector<unsigned>{2 * 4 + 1, 2 * 3 + 1}));
  EXPECT_TRUE(C.getRoute(0, 0).empty());
}

TEST(ClusterRouteTest, DevicesDoNotForward) {
  // a-b and b-c are direct links, but b does not relay: a reaches c only
  // through the switch, although that is as long.
  Cluster C = build(makeDevices({"a", "b", "c"}), {"s"},
                    {makeLink("a-b", 0, 1, 10e9), makeLink("b-c", 1, 2, 10e9),
                     makeLink("a-s", 0, 3, 5e9), makeLink("s-c", 3, 2, 5e9)});
  EXPECT_EQ(route(C, 0, 2), (std::vector<unsigned>{2 * 2, 2 * 3}));
  EXPECT_EQ(route(C, 0, 1), (std::vector<unsigned>{0}));
  EXPECT_DOUBLE_EQ(C.getRouteBandwidth(0, 2), 5e9);
}

TEST(ClusterRouteTest, GPUsBehindOneSwitchShareItsUplink) {
  // gpu0=0, gpu1=1, cpu=2; switches sw=3, rc=4.
  Cluster C =
      build(makeDevices({"gpu0", "gpu1", "cpu"}), {"sw", "rc"},
            {makeLink("gpu0-sw", 0, 3, 16e9), makeLink("gpu1-sw", 1, 3, 16e9),
             makeLink("sw-rc", 3, 4, 16e9), makeLink("cpu-rc", 2, 4, 80e9)});
  std::vector<unsigned> From0 = route(C, 0, 2), From1 = route(C, 1, 2);
  ASSERT_EQ(From0.size(), 3u);
  ASSERT_EQ(From1.size(), 3u);
  // Both cross the uplink in the same direction: the same channel.
  EXPECT_EQ(From0[1], 2u * 2);
  EXPECT_EQ(From1[1], 2u * 2);
  // GPU to GPU stays under the switch.
  EXPECT_EQ(route(C, 0, 1), (std::vector<unsigned>{0, 2 * 1 + 1}));
}

TEST(ClusterRouteTest, OppositeDirectionsUseDifferentChannels) {
  Cluster C =
      build(makeDevices({"gpu0", "cpu"}), {"sw"},
            {makeLink("gpu0-sw", 0, 2, 16e9), makeLink("sw-cpu", 2, 1, 16e9)});
  EXPECT_EQ(C.getNumChannels(), 4u);
  EXPECT_EQ(route(C, 0, 1), (std::vector<unsigned>{0, 2}));
  EXPECT_EQ(route(C, 1, 0), (std::vector<unsigned>{3, 1}));
}

TEST(ClusterRouteTest, BandwidthIsTheNarrowestLinkAndLatenciesAdd) {
  Cluster C = build(
      makeDevices({"a", "b"}), {"s"},
      {makeLink("a-s", 0, 2, 16e9, 1e-6), makeLink("s-b", 2, 1, 4e9, 2.5e-6)});
  EXPECT_DOUBLE_EQ(C.getRouteBandwidth(0, 1), 4e9);
  EXPECT_DOUBLE_EQ(C.getRouteLatency(0, 1), 3.5e-6);
  EXPECT_DOUBLE_EQ(C.getRouteBandwidth(1, 0), 4e9);
}

TEST(ClusterRouteTest, TransferTimeIsLatencyPlusBytesOverBandwidth) {
  Cluster C = build(
      makeDevices({"a", "b"}), {"s"},
      {makeLink("a-s", 0, 2, 10e9, 1e-6), makeLink("s-b", 2, 1, 10e9, 1e-6)});
  EXPECT_DOUBLE_EQ(C.getTransferTime(0, 1, 1000000000), 2e-6 + 0.1);
  EXPECT_DOUBLE_EQ(C.getTransferTime(0, 1, 0), 2e-6);
  EXPECT_DOUBLE_EQ(C.getTransferTime(1, 1, 1000000000), 0);
}

//===----------------------------------------------------------------------===//
// Cluster::create
//===----------------------------------------------------------------------===//

TEST(ClusterCreateTest, RejectsAClusterWithoutDevices) {
  auto Diags = createErrors({makeType("t")}, {}, {}, {});
  EXPECT_TRUE(hasMessage(Diags, "the cluster has no devices"))
      << describe(Diags);
}

TEST(ClusterCreateTest, RejectsRepeatedNames) {
  auto Diags = createErrors({makeType("t"), makeType("t")},
                            makeDevices({"a", "a"}), {"a"}, {});
  EXPECT_TRUE(hasMessage(Diags, "device type name 't' is empty or repeated"))
      << describe(Diags);
  EXPECT_TRUE(hasMessage(Diags, "device name 'a' is empty or repeated"))
      << describe(Diags);
  EXPECT_TRUE(hasMessage(Diags, "switch name 'a' is empty or repeated"))
      << describe(Diags);
}

TEST(ClusterCreateTest, RejectsNonPositiveFigures) {
  DeviceType T = makeType("t");
  T.MemoryBandwidth = 0;
  T.MemoryBytes = 0;
  T.PeakFlops[unsigned(DTypeKind::F32)] = 0;
  T.LaunchOverhead = -1;
  auto Diags = createErrors({T}, makeDevices({"a", "b"}), {},
                            {makeLink("ab", 0, 1, 0, -1e-6)});
  for (const char *Text :
       {"needs a positive f32 peak", "needs a positive memory bandwidth",
        "needs a positive memory capacity", "negative or infinite launch",
        "link 'ab' needs a positive bandwidth",
        "link 'ab' has a negative or infinite latency"})
    EXPECT_TRUE(hasMessage(Diags, Text)) << Text << "\n" << describe(Diags);
}

TEST(ClusterCreateTest, RejectsLinksToUnknownNodesAndSelfLinks) {
  auto Diags =
      createErrors({makeType("t")}, makeDevices({"a", "b"}), {},
                   {makeLink("far", 0, 7, 1e9), makeLink("self", 1, 1, 1e9)});
  EXPECT_TRUE(hasMessage(Diags, "link 'far' must join two different known"))
      << describe(Diags);
  EXPECT_TRUE(hasMessage(Diags, "link 'self' must join two different known"))
      << describe(Diags);
}

TEST(ClusterCreateTest, RejectsUnreachableDevices) {
  auto Diags = createErrors({makeType("t")}, makeDevices({"a", "b", "c"}), {},
                            {makeLink("ab", 0, 1, 1e9)});
  EXPECT_TRUE(hasMessage(Diags, "device 'c' cannot be reached from 'a'"))
      << describe(Diags);
}

TEST(ClusterCreateTest, RejectsADeviceWithoutAType) {
  auto Diags = createErrors({makeType("t")}, {{"a", 3}}, {}, {});
  EXPECT_TRUE(hasMessage(Diags, "device 'a' has no valid type"))
      << describe(Diags);
}

//===----------------------------------------------------------------------===//
// Presets
//===----------------------------------------------------------------------===//

Cluster getPreset(llvm::StringRef Name) {
  llvm::Expected<Cluster> C = getClusterPreset(Name);
  if (!C) {
    ADD_FAILURE() << Name.str() << ": "
                  << describe(collectErrors(C.takeError()));
    return build(makeDevices({"d"}), {}, {});
  }
  return std::move(*C);
}

unsigned countKind(const Cluster &C, DeviceKind K) {
  unsigned N = 0;
  for (unsigned D = 0; D != C.getNumDevices(); ++D)
    N += C.getDeviceType(D).Kind == K;
  return N;
}

TEST(ClusterPresetTest, EveryPresetIsValid) {
  for (llvm::StringRef Name : getClusterPresetNames()) {
    Cluster C = getPreset(Name);
    EXPECT_EQ(C.getName(), Name);
    // Every device reaches every other over a route of finite bandwidth.
    for (unsigned S = 0; S != C.getNumDevices(); ++S)
      for (unsigned D = 0; D != C.getNumDevices(); ++D) {
        if (S == D)
          continue;
        EXPECT_GT(C.getRouteBandwidth(S, D), 0) << Name.str();
        EXPECT_FALSE(C.getRoute(S, D).empty()) << Name.str();
      }
  }
}

TEST(ClusterPresetTest, DeviceCountsAndCapacities) {
  struct Expect {
    const char *Name;
    unsigned GPUs, CPUs;
    const char *GPUType;
    uint64_t GPUMemory;
  } Cases[] = {
      {"p100x4", 4, 1, "p100", 12 * GiB},
      {"k80x4", 4, 1, "k80", 12 * GiB},
      {"k80x8", 8, 1, "k80", 12 * GiB},
      {"v100x8-nvlink", 8, 1, "v100", 16 * GiB},
      {"v100x4x2-ib", 8, 2, "v100", 16 * GiB},
      {"h100x8", 8, 1, "h100", 80 * GiB},
  };
  for (const Expect &E : Cases) {
    Cluster C = getPreset(E.Name);
    EXPECT_EQ(countKind(C, DeviceKind::GPU), E.GPUs) << E.Name;
    EXPECT_EQ(countKind(C, DeviceKind::CPU), E.CPUs) << E.Name;
    int GPU0 = C.lookupDevice("gpu:0");
    ASSERT_GE(GPU0, 0) << E.Name;
    EXPECT_EQ(C.getDeviceType(GPU0).Name, E.GPUType) << E.Name;
    EXPECT_EQ(C.getDeviceType(GPU0).MemoryBytes, E.GPUMemory) << E.Name;
    EXPECT_GE(C.lookupDevice("cpu:0"), 0) << E.Name;
  }
}

TEST(ClusterPresetTest, P100x4FiguresAndPCIeContention) {
  Cluster C = getPreset("p100x4");
  const DeviceType &P100 = C.getTypes()[C.lookupType("p100")];
  EXPECT_DOUBLE_EQ(P100.getPeakFlops(DTypeKind::F32), 9.3e12);
  EXPECT_DOUBLE_EQ(P100.getPeakFlops(DTypeKind::F16), 18.7e12);
  EXPECT_DOUBLE_EQ(P100.MemoryBandwidth, 549e9);
  const DeviceType &Xeon = C.getTypes()[C.lookupType("xeon-e5-2650v4-2s")];
  // Two sockets of 12 cores at 2.2 GHz, 32 FLOP/cycle (AVX2, two FMA).
  EXPECT_DOUBLE_EQ(Xeon.getPeakFlops(DTypeKind::F32), 2 * 12 * 2.2e9 * 32);
  EXPECT_EQ(Xeon.MemoryBytes, 125 * GiB);

  int G0 = C.lookupDevice("gpu:0"), G1 = C.lookupDevice("gpu:1"),
      G2 = C.lookupDevice("gpu:2"), Cpu = C.lookupDevice("cpu:0");
  // GPUs 0 and 1 share a switch; GPU 2 is behind the other socket's.
  EXPECT_EQ(C.getRoute(G0, G1).size(), 2u);
  EXPECT_EQ(C.getRoute(G0, G2).size(), 5u);
  EXPECT_NEAR(C.getRouteBandwidth(G0, G2), 15.75e9, 0.01e9);
  // Both GPUs of a switch reach the CPU over the switch's uplink.
  EXPECT_EQ(C.getRoute(G0, Cpu)[1], C.getRoute(G1, Cpu)[1]);
  EXPECT_NE(C.getRoute(G0, Cpu)[1], C.getRoute(Cpu, G0)[1]);
}

TEST(ClusterPresetTest, K80BoardsShareTheirSwitch) {
  Cluster C = getPreset("k80x8");
  const DeviceType &K80 = C.getTypes()[C.lookupType("k80")];
  EXPECT_DOUBLE_EQ(K80.MemoryBandwidth, 240e9);
  // Two GK210s of one board: two hops; boards under one host switch: four;
  // under different host switches: six.
  EXPECT_EQ(C.getRoute(C.lookupDevice("gpu:0"), C.lookupDevice("gpu:1")).size(),
            2u);
  EXPECT_EQ(C.getRoute(C.lookupDevice("gpu:0"), C.lookupDevice("gpu:2")).size(),
            4u);
  EXPECT_EQ(C.getRoute(C.lookupDevice("gpu:0"), C.lookupDevice("gpu:4")).size(),
            6u);
  EXPECT_EQ(getPreset("k80x4").getNumDevices(), 5u);
}

TEST(ClusterPresetTest, DGX1CubeMesh) {
  Cluster C = getPreset("v100x8-nvlink");
  auto BW = [&](const char *A, const char *B) {
    return C.getRouteBandwidth(C.lookupDevice(A), C.lookupDevice(B));
  };
  // Each GPU has six NVLinks: to 0 from 1, 2 (one each), 3, 4 (two each).
  EXPECT_DOUBLE_EQ(BW("gpu:0", "gpu:1"), 25e9);
  EXPECT_DOUBLE_EQ(BW("gpu:0", "gpu:3"), 50e9);
  EXPECT_DOUBLE_EQ(BW("gpu:0", "gpu:4"), 50e9);
  // No NVLink between 0 and 5: PCIe through both sockets.
  EXPECT_NEAR(BW("gpu:0", "gpu:5"), 15.75e9, 0.01e9);
  EXPECT_EQ(C.getRoute(C.lookupDevice("gpu:0"), C.lookupDevice("gpu:5")).size(),
            5u);
  for (unsigned G = 0; G != 8; ++G) {
    double NVLinks = 0;
    for (const Link &L : C.getLinks())
      if ((L.A == G || L.B == G) && L.A < 8 && L.B < 8)
        NVLinks += L.Bandwidth / 25e9;
    EXPECT_DOUBLE_EQ(NVLinks, 6) << "gpu:" << G;
  }
}

TEST(ClusterPresetTest, H100GPUsMeetInTheNVSwitch) {
  Cluster C = getPreset("h100x8");
  int G0 = C.lookupDevice("gpu:0"), G1 = C.lookupDevice("gpu:1");
  EXPECT_DOUBLE_EQ(C.getRouteBandwidth(G0, G1), 450e9);
  ASSERT_EQ(C.getRoute(G0, G1).size(), 2u);
  const Link &First = C.getLinks()[C.getRoute(G0, G1)[0] / 2];
  EXPECT_EQ(C.getSwitches()[First.B - C.getNumDevices()], "nvswitch");
  const DeviceType &H100 = C.getTypes()[C.lookupType("h100")];
  EXPECT_DOUBLE_EQ(H100.getPeakFlops(DTypeKind::BF16), 989.4e12);
  EXPECT_DOUBLE_EQ(H100.MemoryBandwidth, 3.35e12);
}

TEST(ClusterPresetTest, TwoNodesMeetOverInfiniBand) {
  Cluster C = getPreset("v100x4x2-ib");
  int G0 = C.lookupDevice("gpu:0"), G4 = C.lookupDevice("gpu:4"),
      G3 = C.lookupDevice("gpu:3");
  EXPECT_DOUBLE_EQ(C.getRouteBandwidth(G0, G4), 12.5e9);
  EXPECT_DOUBLE_EQ(C.getRouteBandwidth(G0, G3), 50e9);
}

TEST(ClusterPresetTest, HostIsThisMachinesCPU) {
  Cluster C = getPreset("host");
  ASSERT_EQ(C.getNumDevices(), 1u);
  const DeviceType &T = C.getDeviceType(0);
  EXPECT_EQ(T.Name, "host-cpu");
  EXPECT_EQ(T.Kind, DeviceKind::CPU);
  EXPECT_GT(T.getPeakFlops(DTypeKind::F32), 1e9);
  EXPECT_GT(T.MemoryBandwidth, 1e8);
  EXPECT_GT(T.MemoryBytes, 64u << 20);
}

TEST(ClusterPresetTest, UnknownPresetListsTheKnownOnes) {
  llvm::Expected<Cluster> C = getClusterPreset("p200x4");
  ASSERT_FALSE(bool(C));
  auto Diags = collectErrors(C.takeError());
  EXPECT_TRUE(hasMessage(Diags, "unknown cluster preset 'p200x4' (presets: "
                                "p100x4, k80x4"))
      << describe(Diags);
}

//===----------------------------------------------------------------------===//
// Files
//===----------------------------------------------------------------------===//

llvm::Expected<Cluster> parse(llvm::StringRef Text,
                              llvm::StringRef Name = "c.yaml") {
  return parseCluster(llvm::MemoryBufferRef(Text, Name));
}

std::vector<Diag> parseErrors(llvm::StringRef Text,
                              llvm::StringRef Name = "c.yaml") {
  llvm::Expected<Cluster> C = parse(Text, Name);
  if (C) {
    ADD_FAILURE() << "expected an error for:\n" << Text.str();
    return {};
  }
  return collectErrors(C.takeError());
}

std::string print(const Cluster &C) {
  std::string S;
  llvm::raw_string_ostream OS(S);
  printCluster(OS, C);
  return OS.str();
}

const char *const SmallYAML = R"(name: small
device_types:
  - name: gpu
    kind: gpu
    peak_flops: {f32: 10 TFLOP/s, f16: 20 TFLOP/s}
    memory_bandwidth: 500 GB/s
    memory: 16 GiB
    launch_overhead: 5 us
devices:
  - {name: "gpu:0", type: gpu}
  - name: gpu:1
    type: gpu
switches: [sw]
links:
  - {between: ["gpu:0", sw], bandwidth: 16 GB/s, latency: 1 us}
  - {name: up, between: [sw, "gpu:1"], bandwidth: 16e9, latency: 1e-6}
)";

const char *const SmallJSON = R"({
  "name": "small",
  "device_types": [
    {"name": "gpu", "kind": "gpu",
     "peak_flops": {"f32": "10 TFLOP/s", "f16": 20e12},
     "memory_bandwidth": "500 GB/s", "memory": 17179869184,
     "launch_overhead": "5 us"}
  ],
  "devices": [{"name": "gpu:0", "type": "gpu"},
              {"name": "gpu:1", "type": "gpu"}],
  "switches": ["sw"],
  "links": [
    {"between": ["gpu:0", "sw"], "bandwidth": "16 GB/s", "latency": "1 us"},
    {"name": "up", "between": ["sw", "gpu:1"], "bandwidth": 16e9,
     "latency": 1e-6}
  ]
})";

TEST(ClusterFileTest, YAMLAndJSONSayTheSame) {
  llvm::Expected<Cluster> Y = parse(SmallYAML, "c.yaml");
  ASSERT_TRUE(bool(Y)) << describe(collectErrors(Y.takeError()));
  llvm::Expected<Cluster> J = parse(SmallJSON, "c.json");
  ASSERT_TRUE(bool(J)) << describe(collectErrors(J.takeError()));
  EXPECT_EQ(print(*Y), print(*J));
  EXPECT_EQ(Y->getNumDevices(), 2u);
  EXPECT_EQ(Y->getLinks()[0].Name, "gpu:0-sw");
  EXPECT_EQ(Y->getLinks()[1].Name, "up");
  const DeviceType &T = Y->getTypes()[0];
  EXPECT_DOUBLE_EQ(T.getPeakFlops(DTypeKind::F16), 20e12);
  EXPECT_DOUBLE_EQ(T.getPeakFlops(DTypeKind::BF16), 10e12);
  EXPECT_EQ(T.MemoryBytes, 16 * GiB);
  EXPECT_DOUBLE_EQ(T.LaunchOverhead, 5e-6);
  EXPECT_DOUBLE_EQ(Y->getTransferTime(0, 1, 16000), 2e-6 + 1e-6);
}

/// A one-device cluster whose device type has \p Key: \p Value.
std::string withTypeField(llvm::StringRef Key, llvm::StringRef Value) {
  std::string Fields[][2] = {{"peak_flops", "{f32: 1e12}"},
                             {"memory_bandwidth", "1e9"},
                             {"memory", "1e9"},
                             {"launch_overhead", "0"}};
  std::string S = "name: one\ndevice_types:\n  - name: t\n    kind: cpu\n";
  for (auto &F : Fields)
    S += "    " + F[0] + ": " + (F[0] == Key ? Value.str() : F[1]) + "\n";
  return S + "devices:\n  - {name: d, type: t}\n";
}

TEST(ClusterFileTest, UnitsScaleToBaseUnits) {
  struct Case {
    const char *Key, *Value;
    double Expected;
  } Cases[] = {
      {"memory", "12 GiB", 12.0 * GiB},
      {"memory", "512MiB", 512.0 * (1 << 20)},
      {"memory", "16 GB", 16e9},
      {"memory", "2 TiB", 2048.0 * GiB},
      {"memory", "1.5e3 B", 1500},
      {"memory_bandwidth", "549 GB/s", 549e9},
      {"memory_bandwidth", "100 Gb/s", 12.5e9},
      {"memory_bandwidth", "100 Gbit/s", 12.5e9},
      {"memory_bandwidth", "1 GiB/s", 1.0 * GiB},
      {"memory_bandwidth", "\"3.35e12\"", 3.35e12},
      {"peak_flops", "{f32: 9.3 TFLOP/s}", 9.3e12},
      {"peak_flops", "{f32: 845 GFLOPS}", 845e9},
      {"peak_flops", "{f32: 1.2e12}", 1.2e12},
      {"launch_overhead", "5 us", 5e-6},
      {"launch_overhead", "5 \xC2\xB5s", 5e-6},
      {"launch_overhead", "2ms", 2e-3},
      {"launch_overhead", "100 ns", 100e-9},
      {"launch_overhead", "0.5 s", 0.5},
  };
  for (const Case &C : Cases) {
    std::string Text = withTypeField(C.Key, C.Value);
    llvm::Expected<Cluster> Parsed = parse(Text);
    if (!Parsed) {
      ADD_FAILURE() << C.Value << ": "
                    << describe(collectErrors(Parsed.takeError()));
      continue;
    }
    const DeviceType &T = Parsed->getTypes()[0];
    double Got = llvm::StringRef(C.Key) == "memory" ? double(T.MemoryBytes)
                 : llvm::StringRef(C.Key) == "memory_bandwidth"
                     ? T.MemoryBandwidth
                 : llvm::StringRef(C.Key) == "peak_flops"
                     ? T.getPeakFlops(DTypeKind::F32)
                     : T.LaunchOverhead;
    EXPECT_DOUBLE_EQ(Got, C.Expected) << C.Key << ": " << C.Value;
  }
}

TEST(ClusterFileTest, RejectsUnitsOfTheWrongQuantity) {
  for (auto [Key, Value] :
       {std::pair<const char *, const char *>{"memory", "12 GB/s"},
        {"memory", "12 gigabytes"},
        {"memory_bandwidth", "5 us"},
        {"memory_bandwidth", "1 GiFLOP/s"},
        {"peak_flops", "{f32: 9.3 TB}"},
        {"launch_overhead", "5 GB"},
        {"launch_overhead", "fast"}}) {
    auto Diags = parseErrors(withTypeField(Key, Value));
    ASSERT_EQ(Diags.size(), 1u) << Value << "\n" << describe(Diags);
    EXPECT_TRUE(
        llvm::StringRef(Diags[0].Message).startswith("device_types[0]."))
        << describe(Diags);
    EXPECT_TRUE(llvm::StringRef(Diags[0].Message)
                    .contains((llvm::Twine("not '") +
                               (Key[0] == 'p' ? "9.3 TB" : Value) + "'")
                                  .str()))
        << describe(Diags);
  }
}

TEST(ClusterFileTest, YAMLErrorsPointAtTheNode) {
  auto Diags = parseErrors("name: x\n"
                           "device_types:\n"
                           "  - name: t\n"
                           "    kind: gpu\n"
                           "    peak_flops: {f32: 1e12}\n"
                           "    memory_bandwidth: 0 GB/s\n"
                           "    memory: 1 GiB\n"
                           "    colour: red\n"
                           "devices:\n"
                           "  - {name: a, type: p200}\n");
  ASSERT_EQ(Diags.size(), 3u) << describe(Diags);
  EXPECT_EQ(Diags[0].Loc.File, "c.yaml");
  EXPECT_EQ(Diags[0].Loc.Line, 8u);
  EXPECT_EQ(Diags[0].Loc.Column, 5u);
  EXPECT_EQ(Diags[0].Message,
            "device_types[0]: unknown key 'colour' (expected name, "
            "kind, peak_flops, memory_bandwidth, memory, launch_overhead)");
  EXPECT_EQ(Diags[1].Loc.Line, 6u);
  EXPECT_EQ(Diags[1].Loc.Column, 23u);
  EXPECT_EQ(Diags[1].Message,
            "device_types[0].memory_bandwidth: must be positive, not '0 GB/s'");
  EXPECT_EQ(Diags[2].Loc.Line, 10u);
  EXPECT_EQ(Diags[2].Loc.Column, 21u);
  EXPECT_EQ(Diags[2].Message,
            "devices[0].type: unknown device type 'p200' (types: t)");
}

TEST(ClusterFileTest, JSONSyntaxErrorsHaveLineAndColumn) {
  auto Diags = parseErrors("{\"name\": \"x\",\n  \"devices\": [1,]}", "c.json");
  ASSERT_EQ(Diags.size(), 1u) << describe(Diags);
  EXPECT_EQ(Diags[0].Loc.File, "c.json");
  EXPECT_EQ(Diags[0].Loc.Line, 2u);
  EXPECT_GT(Diags[0].Loc.Column, 0u);
  EXPECT_TRUE(llvm::StringRef(Diags[0].Message).startswith("invalid JSON: "))
      << describe(Diags);
}

TEST(ClusterFileTest, JSONSchemaErrorsNameThePath) {
  std::string Text = SmallJSON;
  Text.replace(Text.find("\"type\": \"gpu\"}"), 13, "\"type\": \"p200\"");
  auto Diags = parseErrors(Text, "c.json");
  ASSERT_EQ(Diags.size(), 1u) << describe(Diags);
  EXPECT_EQ(Diags[0].Loc.Line, 0u);
  EXPECT_EQ(Diags[0].Message,
            "devices[0].type: unknown device type 'p200' (types: gpu)");
}

TEST(ClusterFileTest, ReportsMissingFieldsAndWrongTypes) {
  auto Diags = parseErrors("name: [x]\n"
                           "device_types:\n"
                           "  - name: t\n"
                           "    kind: gpu\n"
                           "devices: {a: b}\n");
  EXPECT_TRUE(hasMessage(Diags, "name: expected a name, not a sequence"))
      << describe(Diags);
  EXPECT_TRUE(hasMessage(Diags, "device_types[0]: missing 'peak_flops'"))
      << describe(Diags);
  EXPECT_TRUE(hasMessage(Diags, "device_types[0]: missing 'memory'"))
      << describe(Diags);
  EXPECT_TRUE(hasMessage(
      Diags, "devices: expected a sequence of devices, not a mapping"))
      << describe(Diags);
}

TEST(ClusterFileTest, ReportsUnknownEndpointsAndDuplicates) {
  std::string Text = SmallYAML;
  Text += "  - {between: [sw, nowhere], bandwidth: 1 GB/s}\n"
          "  - {name: up, between: [sw, \"gpu:0\"], bandwidth: 1 GB/s}\n";
  auto Diags = parseErrors(Text);
  EXPECT_TRUE(hasMessage(Diags, "links[2].between[1]: unknown device or switch "
                                "'nowhere'"))
      << describe(Diags);
  EXPECT_TRUE(hasMessage(Diags, "links[3].name: duplicate name 'up' (also "
                                "the name of links[1])"))
      << describe(Diags);
}

TEST(ClusterFileTest, ReportsAnUnreachableDeviceAtTheDevice) {
  std::string Text = SmallYAML;
  Text = Text.substr(0, Text.find("links:"));
  auto Diags = parseErrors(Text);
  ASSERT_EQ(Diags.size(), 1u) << describe(Diags);
  EXPECT_EQ(Diags[0].Loc.Line, 11u);
  EXPECT_TRUE(llvm::StringRef(Diags[0].Message)
                  .startswith("devices[1]: device 'gpu:1' cannot be reached "
                              "from 'gpu:0'"))
      << describe(Diags);
}

TEST(ClusterFileTest, RejectsWhatIsNotAClusterFile) {
  EXPECT_TRUE(hasMessage(parseErrors(""), "the file is empty"));
  EXPECT_TRUE(hasMessage(parseErrors("just words\n"),
                         "expected a cluster description"));
  EXPECT_TRUE(hasMessage(parseErrors("a: [b\n"), "invalid YAML: "));
  EXPECT_TRUE(hasMessage(parseErrors("a: 1\n---\nb: 2\n"),
                         "expected one YAML document"));
  EXPECT_TRUE(hasMessage(parseErrors("{\"a\": }", "c.json"), "invalid JSON"));
}

TEST(ClusterFileTest, LoadClusterPrefersPresets) {
  llvm::Expected<Cluster> C = loadCluster("p100x4");
  ASSERT_TRUE(bool(C)) << describe(collectErrors(C.takeError()));
  EXPECT_EQ(C->getName(), "p100x4");
  llvm::Expected<Cluster> Missing = loadCluster("/nonexistent/c.yaml");
  ASSERT_FALSE(bool(Missing));
  auto Diags = collectErrors(Missing.takeError());
  ASSERT_EQ(Diags.size(), 1u);
  EXPECT_EQ(Diags[0].Loc.File, "/nonexistent/c.yaml");
  EXPECT_TRUE(hasMessage(Diags, "not a cluster preset (p100x4, "))
      << describe(Diags);
}

TEST(ClusterFileTest, SharedGroupsNameTheirDevicesAndSpeeds) {
  std::string Text = SmallYAML;
  Text += "shared:\n  - {devices: [\"gpu:1\", \"gpu:0\"], speed: [1, 0.6]}\n";
  llvm::Expected<Cluster> C = parse(Text);
  ASSERT_TRUE(bool(C)) << describe(collectErrors(C.takeError()));
  ASSERT_EQ(C->getSharedGroups().size(), 1u);
  EXPECT_EQ(C->getSharedGroups()[0].Devices, (std::vector<unsigned>{1, 0}));
  EXPECT_EQ(C->getSharedGroups()[0].Speed, (std::vector<double>{1, 0.6}));
  EXPECT_DOUBLE_EQ(C->getSharedGroups()[0].getCapacity(), 1.2);
  EXPECT_EQ(C->getSharedGroup(0), 0);
  EXPECT_EQ(C->getSharedGroup(1), 0);
  EXPECT_NE(print(*C).find("shared groups (speed of each busy device when 1, "
                           "2, ... are busy):\n  gpu:1 gpu:0: 1 0.6; at most "
                           "1.2 devices' worth of work\n"),
            std::string::npos)
      << print(*C);
  llvm::Expected<Cluster> Plain = parse(SmallYAML);
  ASSERT_TRUE(bool(Plain));
  EXPECT_EQ(Plain->getSharedGroup(0), -1);
}

TEST(ClusterFileTest, ReportsBadSharedGroups) {
  std::string Text = SmallYAML;
  Text += "shared:\n"
          "  - {devices: [\"gpu:0\", nowhere], speed: [1, 0.5]}\n"
          "  - {devices: [\"gpu:0\"], speed: [1]}\n"
          "  - {devices: [\"gpu:1\", \"gpu:0\"], speed: [0.9, 1.5]}\n"
          "  - {devices: [\"gpu:1\", \"gpu:1\"], speed: [1, 0.5, 0.2]}\n"
          "  - {devices: [\"gpu:0\", \"gpu:1\"], speed: [1, fast]}\n";
  auto Diags = parseErrors(Text);
  EXPECT_TRUE(hasMessage(Diags, "shared[0].devices[1]: unknown device "
                                "'nowhere'"))
      << describe(Diags);
  EXPECT_TRUE(hasMessage(Diags, "shared[1].devices: a shared group needs at "
                                "least two devices"))
      << describe(Diags);
  EXPECT_TRUE(hasMessage(Diags, "shared[2].speed[0]: the first speed must be "
                                "1 (one busy device runs at its own speed), "
                                "not '0.9'"))
      << describe(Diags);
  EXPECT_TRUE(hasMessage(Diags, "shared[2].speed[1]: a speed must be in "
                                "(0, 1], not '1.5'"))
      << describe(Diags);
  EXPECT_TRUE(hasMessage(Diags, "shared[3].devices[1]: device 'gpu:1' is "
                                "already in shared group"))
      << describe(Diags);
  EXPECT_TRUE(hasMessage(Diags, "shared[4].speed[1]: expected a speed (a "
                                "number in (0, 1]), not 'fast'"))
      << describe(Diags);
}

TEST(ClusterCreateTest, RejectsBadSharedGroups) {
  DeviceType T;
  T.Name = "t";
  T.PeakFlops[unsigned(DTypeKind::F32)] = 1e12;
  T.MemoryBandwidth = 1e11;
  T.MemoryBytes = 1 << 20;
  std::vector<Link> Links{{"l", 0, 1, 1e9, 0}};
  SharedGroup Short{{0, 1}, {1}};
  SharedGroup Twice{{0, 1}, {1, 0.5}};
  llvm::Expected<Cluster> C =
      Cluster::create("c", {T}, {{"a", 0}, {"b", 0}}, {}, Links,
                      {Short, Twice});
  ASSERT_FALSE(bool(C));
  auto Diags = collectErrors(C.takeError());
  EXPECT_TRUE(hasMessage(Diags, "shared group 0 has 2 devices but 1 speeds"))
      << describe(Diags);
  EXPECT_TRUE(hasMessage(Diags, "device 'a' is in shared groups 0 and 1"))
      << describe(Diags);
}

//===----------------------------------------------------------------------===//
// Printing
//===----------------------------------------------------------------------===//

TEST(ClusterPrintTest, PrintsFiguresAndRouteMatrices) {
  llvm::Expected<Cluster> C = parse(SmallYAML);
  ASSERT_TRUE(bool(C)) << describe(collectErrors(C.takeError()));
  std::string S = print(*C);
  EXPECT_EQ(S, print(*C));
  EXPECT_NE(S.find("gpu (gpu): peak f32 10, f16 20 TFLOP/s; memory 16 GiB at "
                   "500 GB/s; launch 5 us"),
            std::string::npos)
      << S;
  EXPECT_NE(S.find("  up        sw <-> gpu:1  16 GB/s  1 us  1 / 1"),
            std::string::npos)
      << S;
  EXPECT_NE(S.find("route bandwidth (GB/s, row to column):\n"
                   "         gpu:0  gpu:1\n"
                   "  gpu:0      -     16\n"
                   "  gpu:1     16      -\n"),
            std::string::npos)
      << S;
}

} // namespace
