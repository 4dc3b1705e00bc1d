//===- JSONOutputs.cpp - Placement JSON and device_map --------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/Emit/Emit.h"
#include "dp/IR/Annotations.h"

#include "llvm/ADT/DenseMap.h"

using namespace llvm;

namespace dp {

void writeDeviceMapValue(json::OStream &J, const Cluster &C, unsigned Dev) {
  switch (C.getDeviceType(Dev).Kind) {
  case DeviceKind::GPU: {
    // CUDA numbers a process's GPUs in order.
    int64_t Index = 0;
    for (unsigned D = 0; D != Dev; ++D)
      Index += C.getDeviceType(D).Kind == DeviceKind::GPU;
    J.value(Index);
    return;
  }
  case DeviceKind::CPU:
    J.value("cpu");
    return;
  case DeviceKind::Accelerator:
    J.value(C.getDevices()[Dev].Name);
    return;
  }
  llvm_unreachable("unknown device kind");
}

void writeDeviceMap(raw_ostream &OS, const PlacedStep &S,
                    const DeviceMap &Map) {
  json::OStream J(OS, 2);
  J.object([&] {
    for (const DeviceMap::Entry &E : Map.Entries) {
      J.attributeBegin(E.Module);
      writeDeviceMapValue(J, *S.C, E.Device);
      J.attributeEnd();
    }
  });
  OS << '\n';
}

void writePlacementJSON(raw_ostream &OS, const PlacedStep &S) {
  const Graph &G = *S.G;
  const Cluster &C = *S.C;
  auto DeviceName = [&](unsigned Dev) -> StringRef {
    return C.getDevices()[Dev].Name;
  };
  json::OStream J(OS, 2);
  J.object([&] {
    J.attribute("model", G.getName());
    J.attribute("cluster", C.getName());
    J.attributeObject("placement", [&] {
      for (OpId O = 0, E = G.getNumOps(); O != E; ++O)
        J.attribute(G.getOp(O).Name, DeviceName(S.Placement[O]));
    });
    // Data-parallel replicas: replica r's copy of each device replica 0
    // uses, in replica order.
    if (S.Plan && S.Plan->Replicas > 1) {
      J.attribute("replicas", int64_t(S.Plan->Replicas));
      J.attributeObject("replica_devices", [&] {
        for (unsigned Dev : S.Stages)
          J.attributeArray(DeviceName(Dev), [&] {
            for (unsigned Rep = 0; Rep != S.Plan->Replicas; ++Rep)
              if (unsigned Copy = getReplicaDevice(C, *S.Plan, Dev, Rep);
                  Copy != ~0u)
                J.value(DeviceName(Copy));
          });
      });
    }
    J.attributeObject("nodes", [&] {
      for (const PlacedStep::NodePlacement &NP : S.Nodes)
        J.attribute(NP.Name, DeviceName(NP.Device));
    });
    J.attributeArray("split_nodes", [&] {
      for (const PlacedStep::NodePlacement &NP : S.Nodes) {
        if (!NP.isSplit())
          continue;
        J.object([&] {
          J.attribute("node", NP.Name);
          J.attribute("device", DeviceName(NP.Device));
          J.attributeObject("compute_s", [&] {
            for (const auto &[Dev, T] : NP.Time)
              J.attribute(DeviceName(Dev), T);
          });
        });
      }
    });
    // Groups, when colocate made them: the device of each, by group id.
    bool AllGrouped = G.getNumOps() > 0;
    for (const Op &Node : G.ops()) {
      AllGrouped &= ann::get(Node, ann::Group).hasValue();
    }
    if (AllGrouped) {
      J.attributeObject("groups", [&] {
        DenseMap<int64_t, unsigned> Seen;
        for (OpId O = 0, E = G.getNumOps(); O != E; ++O) {
          int64_t Group = *ann::get(G.getOp(O), ann::Group);
          if (Seen.try_emplace(Group, S.Placement[O]).second)
            J.attribute(std::to_string(Group), DeviceName(S.Placement[O]));
        }
      });
    }
    J.attributeArray("warnings", [&] {
      for (const std::string &W : S.Warnings)
        J.value(W);
    });
    J.attributeBegin("summary");
    writeSummary(J, G, C, S.Result, S.Bounds,
                 S.Search ? S.Search.getPointer() : nullptr,
                 S.Plans ? S.Plans.getPointer() : nullptr);
    J.attributeEnd();
  });
  OS << '\n';
}

} // namespace dp
