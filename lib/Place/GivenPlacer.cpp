//===- GivenPlacer.cpp - The devices the ops already name -----------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// place{algo=given} keeps a placement made elsewhere: the `device`
/// annotations already on the ops (import-onnx sets them from a placed
/// model, a previous place pass from its placer) or, with file=, a
/// placement file. Ops the placement does not cover follow the ops they
/// are placed with: backward and update ops share a unit with their
/// forward op, and a unit that holds a loss op of training-graph goes with
/// the op whose output it reads first. Memory is not checked: the placement is
/// the user's, and simulate reports whether it fits.
///
//===----------------------------------------------------------------------===//

#include "Placers.h"
#include "dp/IR/Annotations.h"
#include "dp/Sim/SimulatePass.h"
#include "dp/Support/Diagnostics.h"

using namespace llvm;

namespace dp {

static bool isLossOp(const Op &Node) {
  return ann::getString(Node, ann::Phase) == "loss";
}

/// The device of each op that the annotations (or the file) name; -1 where
/// none is named.
static Expected<std::vector<int>> readOpDevices(const PlacementProblem &P,
                                                StringRef File) {
  const Graph &G = P.getGraph();
  const Cluster &C = P.getCluster();
  std::vector<int> Devices(G.getNumOps(), -1);
  if (!File.empty()) {
    Expected<std::vector<uint32_t>> FromFile = readPlacementFile(G, C, File);
    if (!FromFile)
      return FromFile.takeError();
    std::copy(FromFile->begin(), FromFile->end(), Devices.begin());
    return std::move(Devices);
  }
  for (OpId O = 0, E = G.getNumOps(); O != E; ++O) {
    const Op &Node = G.getOp(O);
    if (!Node.Annotations.contains(ann::Device.Name))
      continue;
    Optional<StringRef> Name = ann::get(Node, ann::Device);
    if (!Name)
      return makeNodeError(Node.Name, "place{algo=given}: the device "
                                      "annotation is not a device name");
    int Dev = C.lookupDevice(*Name);
    if (Dev < 0) {
      std::string Names;
      for (const Device &D : C.getDevices())
        Names += (Names.empty() ? "" : ", ") + D.Name;
      return makeNodeError(Node.Name, "place{algo=given}: device '" +
                                          Name->str() +
                                          "' is not in cluster '" +
                                          C.getName() + "' (" + Names + ")");
    }
    Devices[O] = Dev;
  }
  return std::move(Devices);
}

namespace {
struct GivenOptions {
  /// The placement file; empty: the ops' device annotations.
  std::string File;
};
} // namespace

static void declareOptions(OptionTable &T, GivenOptions &O) {
  T.text("file", O.File, "PLACEMENT.json");
}

static Expected<std::vector<uint32_t>> placeAsGiven(const PlacementProblem &P,
                                                    const PlaceOptions &,
                                                    const GivenOptions &O) {
  const Graph &G = P.getGraph();
  const Cluster &C = P.getCluster();
  Expected<std::vector<int>> OpDevices = readOpDevices(P, O.File);
  if (!OpDevices)
    return OpDevices.takeError();

  // A unit goes where its ops are; they must agree.
  unsigned NumUnits = P.getNumUnits();
  std::vector<int> UnitDevice(NumUnits, -1);
  std::vector<OpId> DecidedBy(NumUnits, NoId);
  for (OpId O = 0, E = G.getNumOps(); O != E; ++O) {
    int Dev = (*OpDevices)[O];
    if (Dev < 0)
      continue;
    unsigned U = P.getUnitOf(O);
    if (UnitDevice[U] < 0) {
      UnitDevice[U] = Dev;
      DecidedBy[U] = O;
      continue;
    }
    if (UnitDevice[U] != Dev)
      return makeNodeError(G.getOp(O).Name,
                           "place{algo=given}: op is on " +
                               C.getDevices()[Dev].Name + ", but op '" +
                               G.getOp(DecidedBy[U]).Name +
                               "', which it must share a device with, is on " +
                               C.getDevices()[UnitDevice[U]].Name +
                               " (both are in " + P.describeUnit(U) + ")");
  }

  // Units without a device: the loss (and its seed and backward ops) goes
  // with the op whose output it reads first; anything else is an error at
  // its first op.
  for (uint32_t U : P.getTopologicalOrder()) {
    if (UnitDevice[U] >= 0)
      continue;
    ArrayRef<uint32_t> Ops = P.getUnitOps(U);
    if (any_of(Ops, [&](uint32_t O) { return isLossOp(G.getOp(O)); })) {
      for (uint32_t O : Ops) {
        for (TensorId T : G.getOp(O).Operands) {
          if (T == NoId || G.getTensor(T).Producer == NoId)
            continue;
          unsigned From = P.getUnitOf(G.getTensor(T).Producer);
          if (From != U && UnitDevice[From] >= 0) {
            UnitDevice[U] = UnitDevice[From];
            break;
          }
        }
        if (UnitDevice[U] >= 0)
          break;
      }
      if (UnitDevice[U] >= 0)
        continue;
    }
    const Op &First = G.getOp(Ops.front());
    std::string Why;
    if (Optional<StringRef> RNN = ann::get(First, ann::RNN))
      Why = "; unroll-rnn made it from '" + RNN->str() +
            "' and does not keep that op's device: give the devices after "
            "unroll-rnn, e.g. with place{algo=given,file=PLACEMENT.json}";
    return makeNodeError(First.Name,
                         "place{algo=given}: op has no device annotation, "
                         "and neither has any op placed with it" +
                             Why);
  }
  return std::vector<uint32_t>(UnitDevice.begin(), UnitDevice.end());
}

DP_DEFINE_PLACER(placeGiven, describeGiven, declareOptions, placeAsGiven)

} // namespace dp
