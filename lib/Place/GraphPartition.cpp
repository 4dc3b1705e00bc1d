//===- GraphPartition.cpp - What the partitioning placers share -----------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The parts of the `metis` and `scotch` placers that do not depend on the
/// library: their options, the unit graph they partition, and the repair
/// that makes a partition fit in device memory.
///
//===----------------------------------------------------------------------===//

#include "dp/Place/GraphPartition.h"
#include "Placers.h"
#include "dp/Support/Diagnostics.h"
#include "dp/Support/Format.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace llvm;

namespace dp {

void assignPartsToDevices(const PlacementProblem &P,
                          ArrayRef<uint32_t> UnitPart,
                          std::vector<unsigned> &PartDevice) {
  const Cluster &C = P.getCluster();
  unsigned K = PartDevice.size();
  std::vector<double> Traffic(size_t(K) * K, 0.0);
  for (const UnitEdge &E : P.getEdges())
    if (UnitPart[E.From] != UnitPart[E.To])
      Traffic[size_t(UnitPart[E.From]) * K + UnitPart[E.To]] += double(E.Bytes);
  auto Cost = [&](unsigned A, unsigned B, unsigned DevA, unsigned DevB) {
    return Traffic[size_t(A) * K + B] / C.getRouteBandwidth(DevA, DevB) +
           Traffic[size_t(B) * K + A] / C.getRouteBandwidth(DevB, DevA);
  };
  // What part A costs on device Dev, against every part but A and Skip.
  auto PartCost = [&](unsigned A, unsigned Dev, unsigned Skip) {
    double Sum = 0;
    for (unsigned B = 0; B != K; ++B)
      if (B != A && B != Skip)
        Sum += Cost(A, B, Dev, PartDevice[B]);
    return Sum;
  };
  for (bool Improved = true; Improved;) {
    Improved = false;
    for (unsigned A = 0; A != K; ++A)
      for (unsigned B = A + 1; B != K; ++B) {
        unsigned DevA = PartDevice[A], DevB = PartDevice[B];
        if (C.getDevices()[DevA].Type != C.getDevices()[DevB].Type)
          continue;
        // The A-B traffic is symmetric under the swap.
        double Before = PartCost(A, DevA, B) + PartCost(B, DevB, A);
        double After = PartCost(A, DevB, B) + PartCost(B, DevA, A);
        if (After < Before * (1 - 1e-12)) {
          std::swap(PartDevice[A], PartDevice[B]);
          Improved = true;
        }
      }
  }
}

std::vector<uint32_t> placeParts(ArrayRef<uint32_t> UnitPart,
                                 ArrayRef<unsigned> PartDevice) {
  std::vector<uint32_t> Placement(UnitPart.size());
  for (size_t U = 0; U != UnitPart.size(); ++U)
    Placement[U] = PartDevice[UnitPart[U]];
  return Placement;
}

namespace {
/// The options of metis and scotch.
struct PartitionPlacerOptions {
  DeviceSetKind Devices = DeviceSetKind::GPUs;
  /// The part count; 0: every count from 1 to the devices (auto).
  unsigned Parts = 0;
  /// How far the compute constraint may exceed its target, in percent.
  double Imbalance = 3;
};
} // namespace

static bool isPercentage(double X) { return X > 0 && X <= 100; }

static void declareOptions(OptionTable &T, PartitionPlacerOptions &O) {
  T.choice<DeviceSetKind>("devices", O.Devices, ComputeDeviceSetNames)
      .autoInteger("parts", O.Parts)
      .number("imbalance", O.Imbalance, "PERCENT", "a percentage in (0, 100]",
              isPercentage);
}

PlacerOptionTable describePartitioning(StringRef Algo) {
  return bindPlacerOptions<PartitionPlacerOptions>(Algo, declareOptions);
}

/// The devices of the `devices=gpus|all` option.
static Expected<std::vector<unsigned>>
selectDevices(const PlacementProblem &P, StringRef Algo, DeviceSetKind Which) {
  const Cluster &C = P.getCluster();
  std::vector<unsigned> Devices;
  if (Which == DeviceSetKind::All) {
    for (unsigned D = 0, E = C.getNumDevices(); D != E; ++D)
      Devices.push_back(D);
    return Devices;
  }
  for (unsigned D = 0, E = C.getNumDevices(); D != E; ++D)
    if (C.getDeviceType(D).Kind == DeviceKind::GPU)
      Devices.push_back(D);
  if (Devices.empty())
    return makeError("place{algo=" + Algo + "}: cluster '" + C.getName() +
                     "' has no GPU (devices=all partitions among all its "
                     "devices)");
  return Devices;
}

/// The part counts of the `parts=auto|N` option: 1 to \p Max, or N.
static Expected<std::vector<unsigned>>
getPartCounts(StringRef Algo, const PartitionPlacerOptions &O, unsigned Max) {
  std::vector<unsigned> Counts;
  if (!O.Parts) {
    for (unsigned K = 1; K <= Max; ++K)
      Counts.push_back(K);
    return Counts;
  }
  if (O.Parts > Max)
    return makeError(
        "place{algo=" + Algo + "}: parts=" + Twine(O.Parts) + " exceeds the " +
        Twine(Max) + " devices it may use (devices=" +
        getEnumName<DeviceSetKind>(ComputeDeviceSetNames, O.Devices) + ")");
  Counts.push_back(O.Parts);
  return Counts;
}

/// The first \p K of \p Devices in the order the driver takes them: by
/// speed, then by the slowest route to those taken, then by index.
static std::vector<unsigned> takeDevices(const PlacementProblem &P,
                                         ArrayRef<unsigned> Devices,
                                         ArrayRef<double> Speed, unsigned K) {
  const Cluster &C = P.getCluster();
  std::vector<unsigned> Taken;
  std::vector<bool> Used(Devices.size(), false);
  while (Taken.size() != K) {
    int Best = -1;
    double BestBandwidth = 0;
    for (unsigned I = 0; I != Devices.size(); ++I) {
      if (Used[I])
        continue;
      double Bandwidth = std::numeric_limits<double>::infinity();
      for (unsigned T : Taken)
        Bandwidth = std::min({Bandwidth, C.getRouteBandwidth(Devices[I], T),
                              C.getRouteBandwidth(T, Devices[I])});
      if (Best < 0 || Speed[I] > Speed[Best] ||
          (Speed[I] == Speed[Best] && Bandwidth > BestBandwidth)) {
        Best = I;
        BestBandwidth = Bandwidth;
      }
    }
    Used[Best] = true;
    Taken.push_back(Devices[Best]);
  }
  return Taken;
}

Expected<std::vector<uint32_t>> placeByPartitioning(const PlacementProblem &P,
                                                    StringRef Algo,
                                                    const PlaceOptions &Opts,
                                                    PartitionFn Partition) {
  Expected<PartitionPlacerOptions> O = parsePlacerOptions(Opts, declareOptions);
  if (!O)
    return O.takeError();
  Expected<std::vector<unsigned>> Devices = selectDevices(P, Algo, O->Devices);
  if (!Devices)
    return Devices.takeError();
  Expected<std::vector<unsigned>> Counts =
      getPartCounts(Algo, *O, Devices->size());
  if (!Counts)
    return Counts.takeError();
  std::vector<double> Speed = getDeviceSpeeds(P, *Devices);

  std::vector<uint32_t> Best;
  double BestTime = 0;
  // The failure with the most parts, reported when no count fits.
  Error LastError = Error::success();
  for (unsigned K : *Counts) {
    std::vector<unsigned> Taken = takeDevices(P, *Devices, Speed, K);
    PartitionRequest Request;
    Request.Devices = Taken;
    Request.Options.Imbalance = O->Imbalance / 100;
    Request.Options.Seed = Opts.Seed;
    Expected<std::vector<uint32_t>> Placement =
        K == 1 ? std::vector<uint32_t>(P.getNumUnits(), Taken[0])
               : Partition(P, Request);
    if (!Placement)
      return makeError(getPlacerWho(Algo) + ": " +
                       toString(Placement.takeError()));
    assert(Placement->size() == P.getNumUnits() && "a device per unit");
    if (Error E = fitPlacementInMemory(P, Algo, Taken, *Placement)) {
      consumeError(std::move(LastError));
      LastError = std::move(E);
      continue;
    }
    double Time = P.simulate(*Placement).StepTime;
    if (Best.empty() || Time < BestTime) {
      Best = std::move(*Placement);
      BestTime = Time;
    }
  }
  if (Best.empty() && P.getNumUnits())
    return std::move(LastError);
  consumeError(std::move(LastError));
  return Best;
}

std::vector<double> getDeviceSpeeds(const PlacementProblem &P,
                                    ArrayRef<unsigned> Devices) {
  std::vector<double> Total(Devices.size(), 0.0);
  for (unsigned U = 0, E = P.getNumUnits(); U != E; ++U)
    for (size_t I = 0; I != Devices.size(); ++I)
      Total[I] += P.getUnitTime(U, Devices[I]);
  double Min = std::numeric_limits<double>::infinity();
  for (double T : Total)
    if (T > 0)
      Min = std::min(Min, T);
  std::vector<double> Speed(Devices.size(), 1.0);
  if (!std::isfinite(Min))
    return Speed;
  for (size_t I = 0; I != Devices.size(); ++I)
    if (Total[I] > 0)
      Speed[I] = Min / Total[I];
  return Speed;
}

PartitionGraph buildUnitGraph(const PlacementProblem &P,
                              ArrayRef<unsigned> Devices, bool WithMemory) {
  assert(!Devices.empty() && "partitioning among no devices");
  std::vector<double> Speed = getDeviceSpeeds(P, Devices);
  unsigned Fastest =
      Devices[std::max_element(Speed.begin(), Speed.end()) - Speed.begin()];
  PartitionGraph G;
  G.NumVertices = P.getNumUnits();
  uint64_t TotalMemory = 0;
  for (unsigned U = 0; U != G.NumVertices; ++U)
    TotalMemory += P.getUnitMemory(U);
  // A constraint that weighs nothing would only balance unit counts.
  G.NumConstraints = WithMemory && TotalMemory ? 2 : 1;
  G.VertexWeights.reserve(size_t(G.NumVertices) * G.NumConstraints);
  for (unsigned U = 0; U != G.NumVertices; ++U) {
    G.VertexWeights.push_back(P.getUnitTime(U, Fastest));
    if (G.NumConstraints == 2)
      G.VertexWeights.push_back(double(P.getUnitMemory(U)));
  }
  for (const UnitEdge &E : P.getEdges())
    G.Edges.push_back({E.From, E.To, double(E.Bytes)});
  return G;
}

namespace {
/// Moves units off devices that the simulator finds short of memory.
class MemoryFitter {
public:
  MemoryFitter(const PlacementProblem &P, ArrayRef<unsigned> Devices,
               std::vector<uint32_t> &Placement)
      : P(P), Devices(Devices), Placement(Placement),
        Adj(unitEdges(P).getAdjacency()), Room(P.getNumDevices()),
        Bytes(P.getNumDevices()) {}

  /// Moves units off every device whose simulated peak \p R exceeds its
  /// capacity, until their static memory covers the excess. Returns
  /// whether any unit moved.
  bool relieve(const SimResult &R);

  /// The error for a placement that does not fit: names the largest unit
  /// that found no device with room, else the largest unit on the device
  /// that ran out first.
  Error makeError(StringRef Algo, const SimResult &R) const;

private:
  static PartitionGraph unitEdges(const PlacementProblem &P) {
    PartitionGraph G;
    G.NumVertices = P.getNumUnits();
    for (const UnitEdge &E : P.getEdges())
      G.Edges.push_back({E.From, E.To, double(E.Bytes)});
    return G;
  }
  /// Fills Bytes with what \p U exchanges with each device.
  void countBytes(unsigned U) {
    std::fill(Bytes.begin(), Bytes.end(), 0.0);
    for (uint32_t I = Adj.Begin[U]; I != Adj.Begin[U + 1]; ++I)
      Bytes[Placement[Adj.Neighbours[I]]] += Adj.Weights[I];
  }
  bool relieveDevice(unsigned Dev, uint64_t Excess);

  const PlacementProblem &P;
  ArrayRef<unsigned> Devices;
  std::vector<uint32_t> &Placement;
  Adjacency Adj;
  /// Per device: capacity minus simulated peak, less what moved in since.
  std::vector<uint64_t> Room;
  std::vector<double> Bytes;
  int Stuck = -1;
};
} // namespace

bool MemoryFitter::relieve(const SimResult &R) {
  for (unsigned D = 0, E = P.getNumDevices(); D != E; ++D) {
    uint64_t Cap = P.getDeviceCapacity(D);
    Room[D] = R.PeakBytes[D] < Cap ? Cap - R.PeakBytes[D] : 0;
  }
  Stuck = -1;
  bool Moved = false;
  for (unsigned Dev : Devices) {
    uint64_t Cap = P.getDeviceCapacity(Dev);
    if (R.PeakBytes[Dev] > Cap)
      Moved |= relieveDevice(Dev, R.PeakBytes[Dev] - Cap);
  }
  return Moved;
}

bool MemoryFitter::relieveDevice(unsigned Dev, uint64_t Excess) {
  // Units in order of the traffic a move would add per byte it frees,
  // assuming each goes where most of its traffic goes.
  struct Candidate {
    double Cost;
    uint32_t Unit;
  };
  std::vector<Candidate> Order;
  for (unsigned U = 0, E = P.getNumUnits(); U != E; ++U) {
    if (Placement[U] != Dev || !P.getUnitMemory(U))
      continue;
    countBytes(U);
    double Best = 0;
    for (unsigned D : Devices)
      if (D != Dev)
        Best = std::max(Best, Bytes[D]);
    Order.push_back({(Bytes[Dev] - Best) / double(P.getUnitMemory(U)), U});
  }
  llvm::sort(Order, [](const Candidate &A, const Candidate &B) {
    return A.Cost != B.Cost ? A.Cost < B.Cost : A.Unit < B.Unit;
  });
  // A unit's static memory bounds what it adds to its device's peak, so
  // moving units of Excess static bytes may free less than Excess; the
  // next round moves more if so.
  uint64_t Freed = 0;
  bool Moved = false;
  for (const Candidate &C : Order) {
    if (Freed >= Excess)
      break;
    uint64_t Need = P.getUnitMemory(C.Unit);
    countBytes(C.Unit);
    int To = -1;
    for (unsigned D : Devices) {
      if (D == Dev || Room[D] < Need)
        continue;
      if (To < 0 || Bytes[D] > Bytes[To] ||
          (Bytes[D] == Bytes[To] && Room[D] > Room[To]))
        To = D;
    }
    if (To < 0) {
      if (Stuck < 0 || Need > P.getUnitMemory(Stuck))
        Stuck = C.Unit;
      continue;
    }
    Placement[C.Unit] = To;
    Room[To] -= Need;
    Freed += Need;
    Moved = true;
  }
  return Moved;
}

Error MemoryFitter::makeError(StringRef Algo, const SimResult &R) const {
  int Unit = Stuck;
  for (unsigned U = 0, E = P.getNumUnits(); Unit < 0 && U != E; ++U)
    if (Placement[U] == R.OOMDevice &&
        (Unit < 0 || P.getUnitMemory(U) > P.getUnitMemory(Unit)))
      Unit = U;
  unsigned Roomiest = Devices.front();
  uint64_t Free = 0;
  for (unsigned D : Devices) {
    uint64_t Cap = P.getDeviceCapacity(D);
    uint64_t F = R.PeakBytes[D] < Cap ? Cap - R.PeakBytes[D] : 0;
    if (F > Free) {
      Free = F;
      Roomiest = D;
    }
  }
  return makeNoFitError(P, Algo, Unit < 0 ? 0 : Unit, Free, Roomiest);
}

Error fitPlacementInMemory(const PlacementProblem &P, StringRef Algo,
                           ArrayRef<unsigned> Devices,
                           std::vector<uint32_t> &Placement) {
  assert(Placement.size() == P.getNumUnits() && "a device per unit");
  const SimResult &R = P.simulate(Placement);
  if (!R.OOM)
    return Error::success();
  MemoryFitter Fitter(P, Devices, Placement);
  constexpr unsigned MaxRounds = 32;
  for (unsigned Round = 0; Round != MaxRounds; ++Round) {
    // R is the problem's one result, refreshed by each simulate.
    if (!Fitter.relieve(R) || !P.simulate(Placement).OOM)
      break;
  }
  if (!R.OOM)
    return Error::success();
  return Fitter.makeError(Algo, R);
}

} // namespace dp
