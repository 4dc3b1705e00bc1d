//===- ClusterPrinter.cpp - Human description of a cluster ----------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// printCluster writes what dp-opt -print-cluster shows: the device types
/// with their figures, devices, switches, links with the number of device
/// routes over each direction (where transfers contend), and matrices of
/// route bandwidth and latency between every pair of devices. The output
/// depends only on the cluster, in declaration order.
///
//===----------------------------------------------------------------------===//

#include "dp/Cluster/Cluster.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Format.h"

#include <algorithm>
#include <cmath>

using namespace llvm;

namespace dp {

/// \p V with about four significant digits and no trailing zeros: 9.3,
/// 15.75, 0.8448, 1690, 989.4.
static std::string formatFigure(double V) {
  if (V == 0)
    return "0";
  int Exponent = int(std::floor(std::log10(std::fabs(V))));
  int Decimals = std::min(9, std::max(0, 3 - Exponent));
  SmallString<32> S;
  raw_svector_ostream(S) << format("%.*f", Decimals, V);
  if (S.find('.') != StringRef::npos) {
    while (S.back() == '0')
      S.pop_back();
    if (S.back() == '.')
      S.pop_back();
  }
  return std::string(S.str());
}

static void printType(raw_ostream &OS, const DeviceType &T) {
  OS << "  " << T.Name << " (" << getDeviceKindName(T.Kind) << "): peak ";
  // Element types in DTypeKind order, f32 first as the fallback of all.
  SmallVector<unsigned, 4> Order{unsigned(DTypeKind::F32)};
  for (unsigned K = 0; K <= MaxDTypeKind; ++K)
    if (K != unsigned(DTypeKind::F32) && T.PeakFlops[K] > 0)
      Order.push_back(K);
  ListSeparator LS(", ");
  for (unsigned K : Order)
    OS << LS << getDTypeName(DTypeKind(K)) << ' '
       << formatFigure(T.PeakFlops[K] / 1e12);
  OS << " TFLOP/s; memory " << formatFigure(double(T.MemoryBytes) / 0x1p30)
     << " GiB at " << formatFigure(T.MemoryBandwidth / 1e9) << " GB/s; launch "
     << formatFigure(T.LaunchOverhead / 1e-6) << " us\n";
}

/// Writes a device-by-device matrix of \p Cell(Src, Dst), '-' on the
/// diagonal, in columns wide enough for every name and value.
template <typename Fn>
static void printMatrix(raw_ostream &OS, const Cluster &C, const Fn &Cell) {
  unsigned D = C.getNumDevices();
  std::vector<std::string> Cells(D * D);
  size_t Width = 1;
  size_t RowWidth = 0;
  for (unsigned Src = 0; Src != D; ++Src) {
    RowWidth = std::max(RowWidth, C.getDevices()[Src].Name.size());
    Width = std::max(Width, C.getDevices()[Src].Name.size());
    for (unsigned Dst = 0; Dst != D; ++Dst) {
      Cells[Src * D + Dst] = Src == Dst ? "-" : Cell(Src, Dst);
      Width = std::max(Width, Cells[Src * D + Dst].size());
    }
  }
  OS << "  " << left_justify("", RowWidth);
  for (const Device &Dev : C.getDevices())
    OS << "  " << right_justify(Dev.Name, Width);
  OS << '\n';
  for (unsigned Src = 0; Src != D; ++Src) {
    OS << "  " << left_justify(C.getDevices()[Src].Name, RowWidth);
    for (unsigned Dst = 0; Dst != D; ++Dst)
      OS << "  " << right_justify(Cells[Src * D + Dst], Width);
    OS << '\n';
  }
}

void printCluster(raw_ostream &OS, const Cluster &C) {
  unsigned D = C.getNumDevices();
  auto NodeName = [&](unsigned N) -> StringRef {
    return N < D ? StringRef(C.getDevices()[N].Name)
                 : StringRef(C.getSwitches()[N - D]);
  };

  OS << "cluster '" << C.getName() << "': " << D << " devices, "
     << C.getSwitches().size() << " switches, " << C.getLinks().size()
     << " links\n";

  OS << "\ndevice types:\n";
  for (const DeviceType &T : C.getTypes())
    printType(OS, T);

  OS << "\ndevices:\n";
  size_t NameWidth = 0;
  for (const Device &Dev : C.getDevices())
    NameWidth = std::max(NameWidth, Dev.Name.size());
  for (const Device &Dev : C.getDevices())
    OS << "  " << left_justify(Dev.Name, NameWidth) << "  "
       << C.getTypes()[Dev.Type].Name << '\n';

  if (!C.getSwitches().empty()) {
    OS << "\nswitches:";
    for (const std::string &S : C.getSwitches())
      OS << ' ' << S;
    OS << '\n';
  }

  if (!C.getLinks().empty()) {
    // How many device-to-device routes use each channel: transfers on the
    // same channel contend.
    std::vector<unsigned> RoutesPerChannel(C.getNumChannels(), 0);
    for (unsigned Src = 0; Src != D; ++Src)
      for (unsigned Dst = 0; Dst != D; ++Dst)
        for (unsigned Ch : C.getRoute(Src, Dst))
          ++RoutesPerChannel[Ch];
    OS << "\nlinks (bandwidth each way, latency, device routes a->b / "
          "b->a):\n";
    size_t LinkWidth = 0, EndsWidth = 0;
    std::vector<std::string> Ends;
    for (const Link &L : C.getLinks()) {
      LinkWidth = std::max(LinkWidth, L.Name.size());
      Ends.push_back((NodeName(L.A) + " <-> " + NodeName(L.B)).str());
      EndsWidth = std::max(EndsWidth, Ends.back().size());
    }
    for (unsigned I = 0, E = C.getLinks().size(); I != E; ++I) {
      const Link &L = C.getLinks()[I];
      OS << "  " << left_justify(L.Name, LinkWidth) << "  "
         << left_justify(Ends[I], EndsWidth) << "  "
         << formatFigure(L.Bandwidth / 1e9) << " GB/s  "
         << formatFigure(L.Latency / 1e-6) << " us  " << RoutesPerChannel[2 * I]
         << " / " << RoutesPerChannel[2 * I + 1];
      if (L.SpeedWhileSending != 1 || L.SpeedWhileReceiving != 1)
        OS << "  (ends keep " << formatFigure(L.SpeedWhileSending)
           << " of their speed sending, " << formatFigure(L.SpeedWhileReceiving)
           << " receiving)";
      OS << '\n';
    }
  }

  if (!C.getSharedGroups().empty()) {
    OS << "\nshared groups (speed of each busy device when 1, 2, ... "
          "are busy):\n";
    for (const SharedGroup &G : C.getSharedGroups()) {
      OS << " ";
      for (unsigned Dev : G.Devices)
        OS << ' ' << C.getDevices()[Dev].Name;
      OS << ":";
      for (double S : G.Speed)
        OS << ' ' << formatFigure(S);
      OS << "; at most " << formatFigure(G.getCapacity())
         << " devices' worth of work\n";
    }
  }

  if (D < 2)
    return;
  OS << "\nroute bandwidth (GB/s, row to column):\n";
  printMatrix(OS, C, [&](unsigned Src, unsigned Dst) {
    return formatFigure(C.getRouteBandwidth(Src, Dst) / 1e9);
  });
  OS << "\nroute latency (us, row to column):\n";
  printMatrix(OS, C, [&](unsigned Src, unsigned Dst) {
    return formatFigure(C.getRouteLatency(Src, Dst) / 1e-6);
  });
}

} // namespace dp
