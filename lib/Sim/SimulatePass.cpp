//===- SimulatePass.cpp - The simulate pass -------------------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/Sim/SimulatePass.h"
#include "dp/IR/Annotations.h"
#include "dp/Sim/StepSimulation.h"
#include "dp/Support/Diagnostics.h"
#include "dp/Support/FileOutput.h"
#include "dp/Support/Format.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>

using namespace llvm;

namespace dp {

/// The placer that placed \p G ("given" when no pass recorded one).
static StringRef getPlacerName(const Graph &G) {
  return ann::get(G, ann::Placer).getValueOr("given");
}

/// Number of distinct colocation groups, or the op count without them.
static size_t countGroups(const Graph &G) {
  DenseSet<int64_t> Groups;
  for (const Op &Node : G.ops()) {
    Optional<int64_t> Group = ann::get(Node, ann::Group);
    if (!Group)
      return G.getNumOps();
    Groups.insert(*Group);
  }
  return Groups.size();
}

std::string getChannelName(const Cluster &C, unsigned Ch) {
  const Link &L = C.getLinks()[Ch / 2];
  auto NodeName = [&](unsigned N) -> std::string {
    unsigned D = C.getNumDevices();
    return N < D ? C.getDevices()[N].Name : C.getSwitches()[N - D];
  };
  unsigned From = Ch % 2 ? L.B : L.A, To = Ch % 2 ? L.A : L.B;
  return L.Name + " " + NodeName(From) + "->" + NodeName(To);
}

std::string formatSeconds(double Seconds) {
  if (Seconds >= 1)
    return formatv("{0:F3} s", Seconds).str();
  if (Seconds >= 1e-3)
    return formatv("{0:F3} ms", Seconds * 1e3).str();
  return formatv("{0:F3} us", Seconds * 1e6).str();
}

std::string formatLowerBounds(const LowerBounds &LB) {
  return formatSeconds(LB.best()) + " (critical path " +
         formatSeconds(LB.CriticalPath) + ", work / devices " +
         formatSeconds(LB.Work) + ", work split over types " +
         formatSeconds(LB.HeterogeneousWork) + ", head + work + tail " +
         formatSeconds(LB.HeadWorkTail) +
         (LB.Segments > 0 ? ", segments " + formatSeconds(LB.Segments) + " (" +
                                std::to_string(LB.SegmentsExact) + " of " +
                                std::to_string(LB.SegmentCount) + " exact)"
                          : std::string()) +
         ")";
}

SingleDeviceBaseline computeSingleDeviceBaseline(const SimGraph &SG) {
  SingleDeviceBaseline B;
  Simulator Sim(SG);
  SimResult R;
  std::vector<uint32_t> Placement(SG.getNumPlacedOps());
  for (unsigned Dev = 0, E = SG.getNumDevices(); Dev != E; ++Dev) {
    std::fill(Placement.begin(), Placement.end(), Dev);
    Sim.run(Placement, R);
    if (Dev == 0 || R.StepTime < B.FastestTime) {
      B.FastestDevice = Dev;
      B.FastestTime = R.StepTime;
    }
    if (!R.OOM && (B.Device < 0 || R.StepTime < B.StepTime)) {
      B.Device = Dev;
      B.StepTime = R.StepTime;
    }
  }
  return B;
}

double getPipelineBubble(const SimResult &R) {
  double Busy = 0;
  unsigned Used = 0;
  for (unsigned D = 0, E = R.OpCount.size(); D != E; ++D)
    if (R.OpCount[D]) {
      Busy += R.BusyTime[D];
      ++Used;
    }
  return Used && R.StepTime > 0 ? 1 - Busy / (Used * R.StepTime) : 0;
}

void printSimulationReport(raw_ostream &OS, const Graph &G, const Cluster &C,
                           const SimResult &R, const LowerBounds &LB,
                           const SingleDeviceBaseline *Baseline) {
  OS << "simulated step of '" << G.getName() << "' on cluster '" << C.getName()
     << "' (placer: " << getPlacerName(G) << ")\n";
  OS << "  step time:    " << formatSeconds(R.StepTime) << '\n';
  if (Optional<PipelinePlan> Plan = getPipelinePlan(G)) {
    unsigned Used = count_if(R.OpCount, [](uint32_t N) { return N != 0; });
    double Bubble = getPipelineBubble(R);
    OS << "  pipeline:     " << Plan->MicroBatches << " micro-batch"
       << (Plan->MicroBatches == 1 ? "" : "es") << ", "
       << getPipelineScheduleName(Plan->Schedule) << " over " << Used
       << " device" << (Used == 1 ? "" : "s")
       << (Plan->Recompute ? ", recomputing activations" : "") << "; bubble "
       << format("%.1f", Bubble * 100) << " %";
    if (R.OutOfOrder)
      OS << "; " << R.OutOfOrder
         << " instances ran out of the schedule's order (the stages wait "
            "on each other in a cycle)";
    OS << '\n';
    if (Plan->Replicas > 1) {
      OS << "  replicas:     " << Plan->Replicas
         << " data-parallel, each on its own copy of these devices";
      if (R.NumBuckets) {
        auto Busiest =
            std::max_element(R.AllReduceTime.begin(), R.AllReduceTime.end());
        OS << "; " << R.NumBuckets << " gradient bucket"
           << (R.NumBuckets == 1 ? "" : "s") << " ("
           << formatBytes(R.AllReduceBytes) << ") all-reduced, "
           << formatSeconds(*Busiest) << " on "
           << C.getDevices()[Busiest - R.AllReduceTime.begin()].Name;
      }
      OS << '\n';
    }
  }
  double Gap = LB.best() > 0 ? (R.StepTime / LB.best() - 1) * 100 : 0;
  OS << "  lower bound:  " << formatLowerBounds(LB) << "; gap "
     << format("%.1f", Gap) << " %\n";
  if (Baseline) {
    OS << "  speed-up:     ";
    if (Baseline->Device < 0)
      OS << "no single device holds the step (the fastest, "
         << C.getDevices()[Baseline->FastestDevice].Name << ", would take "
         << formatSeconds(Baseline->FastestTime) << ")\n";
    else
      OS << format("%.2f",
                   R.StepTime > 0 ? Baseline->StepTime / R.StepTime : 0.0)
         << "x over the best single device ("
         << C.getDevices()[Baseline->Device].Name << ", "
         << formatSeconds(Baseline->StepTime) << ")\n";
  }
  if (R.OOM) {
    const Device &Dev = C.getDevices()[R.OOMDevice];
    OS << "  memory:       OUT OF MEMORY on " << Dev.Name << ": at op '"
       << G.getOp(R.OOMOp).Name << "' it needs " << formatBytes(R.OOMBytesOver)
       << " more than its "
       << formatBytes(C.getDeviceType(R.OOMDevice).MemoryBytes) << '\n';
  } else {
    OS << "  memory:       fits on every device\n";
  }
  OS << "  devices:\n";
  size_t NameWidth = 0, TypeWidth = 0;
  for (unsigned D = 0, E = C.getNumDevices(); D != E; ++D) {
    NameWidth = std::max(NameWidth, C.getDevices()[D].Name.size());
    TypeWidth = std::max(TypeWidth, C.getDeviceType(D).Name.size());
  }
  for (unsigned D = 0, E = C.getNumDevices(); D != E; ++D) {
    double Load = R.StepTime > 0 ? R.BusyTime[D] / R.StepTime * 100 : 0;
    OS << "    " << left_justify(C.getDevices()[D].Name, NameWidth + 2)
       << left_justify(C.getDeviceType(D).Name, TypeWidth + 2) << "ops "
       << format("%6u", R.OpCount[D]) << "   busy "
       << right_justify(formatSeconds(R.BusyTime[D]), 12) << " ("
       << format("%5.1f", Load) << " %)   peak "
       << right_justify(formatBytes(R.PeakBytes[D]), 10) << " / "
       << formatBytes(C.getDeviceType(D).MemoryBytes) << '\n';
  }
  OS << "  transfers:    " << R.NumTransfers << " ("
     << formatBytes(R.TransferBytes) << ")\n";
  bool AnyLink = false;
  for (unsigned Ch = 0, E = C.getNumChannels(); Ch != E; ++Ch) {
    if (!R.ChannelBytes[Ch])
      continue;
    if (!AnyLink)
      OS << "  link traffic:\n";
    AnyLink = true;
    OS << "    " << left_justify(getChannelName(C, Ch), 36) << ' '
       << formatBytes(R.ChannelBytes[Ch]) << '\n';
  }
  if (R.CriticalPath.empty())
    return;
  // The longest ops of the critical path, longest first.
  std::vector<uint32_t> Path = R.CriticalPath;
  auto Dur = [&](uint32_t Op) { return R.Ops[Op].End - R.Ops[Op].Start; };
  std::stable_sort(Path.begin(), Path.end(),
                   [&](uint32_t A, uint32_t B) { return Dur(A) > Dur(B); });
  unsigned Shown = std::min<size_t>(Path.size(), 10);
  OS << "  critical path: " << R.CriticalPath.size() << " ops; the " << Shown
     << " longest:\n";
  for (unsigned I = 0; I != Shown; ++I) {
    uint32_t O = R.getOp(Path[I]);
    OS << "    " << right_justify(formatSeconds(Dur(Path[I])), 12) << "  "
       << G.getOp(O).Name << " (" << G.getQualifiedType(O) << ")";
    if (!R.InstanceMicroBatch.empty())
      OS << ", micro-batch " << R.InstanceMicroBatch[Path[I]];
    OS << '\n';
  }
}

void printPlanSearch(raw_ostream &OS, const PlanSearch &Plans) {
  OS << "  plans:        " << Plans.Tried << " simulated in "
     << format("%.1f", Plans.Seconds) << " s";
  if (Plans.GlobalBatch)
    OS << ", batch " << Plans.GlobalBatch;
  OS << "; the chosen one, then the fastest of each other kind:\n";
  for (const PlanCandidate &P : Plans.Plans) {
    std::string Shape;
    raw_string_ostream SO(Shape);
    SO << P.Replicas << " x " << P.Stages << " stage"
       << (P.Stages == 1 ? "" : "s") << ", M=" << P.MicroBatches;
    if (P.Replicas > 1 && P.ReplicaStride)
      SO << ", stride " << P.ReplicaStride;
    if (P.Recompute)
      SO << ", recompute";
    OS << "    " << left_justify(P.Kind, 14) << "  "
       << left_justify(SO.str(), 30) << "  ";
    if (P.Fits && P.StepTime > 0) {
      OS << right_justify(formatSeconds(P.StepTime), 12);
      if (Plans.GlobalBatch)
        OS << "  " << format("%10.1f", Plans.GlobalBatch / P.StepTime)
           << " samples/s";
    } else {
      OS << P.Note;
    }
    OS << '\n';
  }
}

void writeSummaryJSON(raw_ostream &OS, const Graph &G, const Cluster &C,
                      const SimResult &R, const LowerBounds &LB,
                      const PlacementSearch *Search, const PlanSearch *Plans) {
  json::OStream J(OS, 2);
  writeSummary(J, G, C, R, LB, Search, Plans);
  J.flush();
  OS << '\n';
}

void writeSummary(json::OStream &J, const Graph &G, const Cluster &C,
                  const SimResult &R, const LowerBounds &LB,
                  const PlacementSearch *Search, const PlanSearch *Plans) {
  J.object([&] {
    J.attribute("model", G.getName());
    J.attribute("cluster", C.getName());
    J.attribute("placer", getPlacerName(G));
    J.attribute("ops", int64_t(G.getNumOps()));
    J.attribute("groups", int64_t(countGroups(G)));
    J.attribute("step_time_s", R.StepTime);
    J.attribute("lower_bound_s", LB.best());
    J.attribute("critical_path_bound_s", LB.CriticalPath);
    J.attribute("work_bound_s", LB.Work);
    J.attribute("heterogeneous_work_bound_s", LB.HeterogeneousWork);
    J.attribute("head_work_tail_bound_s", LB.HeadWorkTail);
    J.attribute("segment_bound_s", LB.Segments);
    J.attribute("segments", int64_t(LB.SegmentCount));
    J.attribute("segments_exact", int64_t(LB.SegmentsExact));
    if (Optional<PipelinePlan> Plan = getPipelinePlan(G)) {
      J.attribute("microbatches", int64_t(Plan->MicroBatches));
      J.attribute("schedule", getPipelineScheduleName(Plan->Schedule));
      J.attribute("recompute", Plan->Recompute);
      J.attribute("out_of_order", int64_t(R.OutOfOrder));
      J.attribute("replicas", int64_t(Plan->Replicas));
      if (Plan->Replicas > 1) {
        J.attribute("buckets", int64_t(R.NumBuckets));
        J.attribute("allreduce_bytes", int64_t(R.AllReduceBytes));
        std::vector<uint32_t> Placement(G.getNumOps(), 0);
        if (Expected<std::vector<uint32_t>> P = getPlacement(G, C))
          Placement = std::move(*P);
        else
          consumeError(P.takeError());
        std::vector<uint8_t> Used(C.getNumDevices());
        for (uint32_t D : Placement)
          Used[D] = 1;
        // Replica r's devices, in the order of replica 0's.
        J.attributeArray("replica_devices", [&] {
          for (unsigned Rep = 0; Rep != Plan->Replicas; ++Rep)
            J.array([&] {
              for (unsigned D = 0, E = C.getNumDevices(); D != E; ++D)
                if (Used[D])
                  if (unsigned Copy = getReplicaDevice(C, *Plan, D, Rep);
                      Copy != ~0u)
                    J.value(C.getDevices()[Copy].Name);
            });
        });
      }
    }
    J.attribute("oom", R.OOM);
    if (R.OOM) {
      J.attribute("oom_device", C.getDevices()[R.OOMDevice].Name);
      J.attribute("oom_op", G.getOp(R.OOMOp).Name);
      J.attribute("oom_bytes_over", int64_t(R.OOMBytesOver));
    }
    J.attribute("transfers", int64_t(R.NumTransfers));
    J.attribute("transfer_bytes", int64_t(R.TransferBytes));
    J.attributeArray("devices", [&] {
      for (unsigned D = 0, E = C.getNumDevices(); D != E; ++D) {
        J.object([&] {
          J.attribute("name", C.getDevices()[D].Name);
          J.attribute("type", C.getDeviceType(D).Name);
          J.attribute("ops", int64_t(R.OpCount[D]));
          J.attribute("busy_s", R.BusyTime[D]);
          if (!R.AllReduceTime.empty())
            J.attribute("allreduce_s", R.AllReduceTime[D]);
          J.attribute("peak_bytes", int64_t(R.PeakBytes[D]));
          J.attribute("capacity_bytes",
                      int64_t(C.getDeviceType(D).MemoryBytes));
        });
      }
    });
    if (Search)
      J.attribute("search_seconds", Search->Seconds);
    else
      J.attribute("search_seconds", nullptr);
    if (Search && Search->Scored)
      J.attribute("placements_scored", int64_t(Search->Scored));
    else
      J.attribute("placements_scored", nullptr);
    if (Plans)
      J.attributeObject("plan_search", [&] {
        J.attribute("seconds", Plans->Seconds);
        J.attribute("global_batch", Plans->GlobalBatch);
        J.attribute("tried", int64_t(Plans->Tried));
        J.attributeArray("plans", [&] {
          for (const PlanCandidate &P : Plans->Plans)
            J.object([&] {
              J.attribute("kind", P.Kind);
              J.attribute("replicas", int64_t(P.Replicas));
              J.attribute("replica_stride", int64_t(P.ReplicaStride));
              J.attribute("stages", int64_t(P.Stages));
              J.attribute("microbatches", int64_t(P.MicroBatches));
              J.attribute("schedule", P.Schedule);
              J.attribute("recompute", P.Recompute);
              J.attribute("fits", P.Fits);
              if (P.Fits && P.StepTime > 0) {
                J.attribute("step_time_s", P.StepTime);
                if (Plans->GlobalBatch)
                  J.attribute("samples_per_s", Plans->GlobalBatch / P.StepTime);
              } else {
                J.attribute("step_time_s", nullptr);
              }
              J.attribute("note", P.Note);
            });
        });
      });
  });
}

void writeChromeTrace(raw_ostream &OS, const Graph &G, const Cluster &C,
                      const SimResult &R) {
  unsigned D = C.getNumDevices();
  // Devices are processes 1..D; link directions are threads of process
  // D + 1.
  json::OStream J(OS);
  J.object([&] {
    J.attribute("displayTimeUnit", "ns");
    J.attributeArray("traceEvents", [&] {
      auto Meta = [&](StringRef Kind, unsigned Pid, unsigned Tid,
                      StringRef Name) {
        J.object([&] {
          J.attribute("name", Kind);
          J.attribute("ph", "M");
          J.attribute("pid", int64_t(Pid));
          J.attribute("tid", int64_t(Tid));
          J.attributeObject("args", [&] { J.attribute("name", Name); });
        });
      };
      for (unsigned Dev = 0; Dev != D; ++Dev)
        Meta("process_name", Dev + 1, 0,
             C.getDevices()[Dev].Name + " (" + C.getDeviceType(Dev).Name + ")");
      Meta("process_name", D + 1, 0, "links");
      for (unsigned Ch = 0, E = C.getNumChannels(); Ch != E; ++Ch)
        Meta("thread_name", D + 1, Ch, getChannelName(C, Ch));

      std::vector<uint32_t> Placement(G.getNumOps(), 0);
      if (Expected<std::vector<uint32_t>> P = getPlacement(G, C))
        Placement = std::move(*P);
      else
        consumeError(P.takeError());
      // Under a pipeline plan, R.Ops are the instances (op, micro-batch).
      for (uint32_t I = 0, E = R.Ops.size(); I != E; ++I) {
        uint32_t O = R.getOp(I);
        const Op &Node = G.getOp(O);
        J.object([&] {
          // Ops are named as in the user's model where it named them.
          J.attribute("name",
                      Node.SourceName.empty() ? Node.Name : Node.SourceName);
          J.attribute("cat", "op");
          J.attribute("ph", "X");
          J.attribute("ts", R.Ops[I].Start * 1e6);
          J.attribute("dur", (R.Ops[I].End - R.Ops[I].Start) * 1e6);
          J.attribute("pid", int64_t(Placement[O] + 1));
          J.attribute("tid", 0);
          J.attributeObject("args", [&] {
            J.attribute("op", Node.Name);
            J.attribute("type", G.getQualifiedType(O));
            if (!R.InstanceMicroBatch.empty())
              J.attribute("microbatch", int64_t(R.InstanceMicroBatch[I]));
          });
        });
      }
      // Each device's live bytes, a counter track of its process.
      for (const MemorySample &M : R.Memory)
        J.object([&] {
          J.attribute("name", "memory");
          J.attribute("ph", "C");
          J.attribute("ts", M.Time * 1e6);
          J.attribute("pid", int64_t(M.Device + 1));
          J.attributeObject("args",
                            [&] { J.attribute("bytes", int64_t(M.Bytes)); });
        });
      for (const TransferRecord &T : R.Transfers) {
        for (unsigned Ch : C.getRoute(T.Src, T.Dst)) {
          J.object([&] {
            J.attribute("name", G.getTensor(R.getTensor(T.Tensor)).Name);
            J.attribute("cat", "transfer");
            J.attribute("ph", "X");
            J.attribute("ts", T.Start * 1e6);
            J.attribute("dur", (T.End - T.Start) * 1e6);
            J.attribute("pid", int64_t(D + 1));
            J.attribute("tid", int64_t(Ch));
            J.attributeObject("args", [&] {
              J.attribute("bytes", int64_t(G.getTensor(R.getTensor(T.Tensor))
                                               .Type.getSizeInBytes()
                                               .getValueOr(0)));
              J.attribute("from", C.getDevices()[T.Src].Name);
              J.attribute("to", C.getDevices()[T.Dst].Name);
            });
          });
        }
      }
    });
  });
  OS << '\n';
}

Expected<std::vector<uint32_t>>
readPlacementFile(const Graph &G, const Cluster &C, StringRef Path) {
  ErrorOr<std::unique_ptr<MemoryBuffer>> Buf = MemoryBuffer::getFile(Path);
  if (!Buf)
    return makeFileError(
        Path, 0, 0, "cannot read the placement: " + Buf.getError().message());
  Expected<json::Value> V = json::parse((*Buf)->getBuffer());
  if (!V)
    return makeFileError(Path, 0, 0,
                         "invalid JSON: " + toString(V.takeError()));
  const json::Object *Root = V->getAsObject();
  const json::Object *Map = Root ? Root->getObject("placement") : nullptr;
  if (!Map)
    return makeFileError(Path, 0, 0,
                         "expected an object with a \"placement\" object "
                         "mapping op names to device names");
  ErrorList Errs;
  std::vector<int> Chosen(G.getNumOps(), -1);
  std::vector<std::string> Keys;
  for (const auto &KV : *Map)
    Keys.push_back(KV.first.str());
  llvm::sort(Keys); // JSON objects are unordered: report in a stable order.
  for (const std::string &Key : Keys) {
    const json::Value &Val = *Map->get(Key);
    OpId O = G.lookupOp(Key);
    if (O == NoId) {
      Errs.add(makeFileError(Path, 0, 0,
                             "placement." + Key + ": no op named '" + Key +
                                 "' in the graph"));
      continue;
    }
    Optional<StringRef> Dev = Val.getAsString();
    int D = Dev ? C.lookupDevice(*Dev) : -1;
    if (D < 0) {
      Errs.add(makeFileError(
          Path, 0, 0,
          "placement." + Key + ": expected the name of a device of cluster '" +
              C.getName() + "'"));
      continue;
    }
    Chosen[O] = D;
  }
  unsigned Missing = 0;
  for (OpId O = 0, E = G.getNumOps(); O != E; ++O)
    if (Chosen[O] < 0 && ++Missing == 1)
      Errs.add(makeFileError(Path, 0, 0,
                             "op '" + G.getOp(O).Name +
                                 "' has no device in the placement"));
  if (Missing > 1)
    Errs.add(makeFileError(Path, 0, 0,
                           Twine(Missing) + " ops have no device in the "
                                            "placement"));
  if (Error E = Errs.take())
    return std::move(E);
  return std::vector<uint32_t>(Chosen.begin(), Chosen.end());
}

Error applyPlacementFile(Graph &G, const Cluster &C, StringRef Path) {
  Expected<std::vector<uint32_t>> Chosen = readPlacementFile(G, C, Path);
  if (!Chosen)
    return Chosen.takeError();
  for (OpId O = 0, E = G.getNumOps(); O != E; ++O)
    ann::set(G.getOp(O), ann::Device,
             StringRef(C.getDevices()[(*Chosen)[O]].Name));
  ann::set(G, ann::Placer, StringRef("file"));
  return Error::success();
}

Expected<StepSimulation> simulateStep(const Graph &G, const Cluster &C) {
  Expected<SimGraph> SG = SimGraph::build(G, C);
  if (!SG)
    return SG.takeError();
  Expected<std::vector<uint32_t>> Placement = getPlacement(G, C);
  if (!Placement)
    return Placement.takeError();
  if (const Optional<PipelinePlan> &Plan = SG->getPlan())
    if (Error E = checkReplicaDevices(C, *Plan, *Placement, "simulate: "))
      return E;
  StepSimulation S{&C, std::move(*SG), std::move(*Placement), {}, {}};
  Simulator Sim(S.SG);
  Sim.run(S.Placement, S.Result, /*RecordTimeline=*/true);
  S.Bounds = computeLowerBounds(S.SG);
  return std::move(S);
}

Expected<const StepSimulation *>
getStepSimulation(const Graph &G, const Cluster &C, AnalysisCache &A) {
  if (const StepSimulation *S = A.get<StepSimulation>(); S && S->C == &C)
    return S;
  Expected<StepSimulation> S = simulateStep(G, C);
  if (!S)
    return S.takeError();
  return &A.set(std::move(*S));
}

Error SimulatePass::run(Graph &G, PassContext &Ctx) {
  if (!Ctx.TheCluster)
    return makeError("simulate needs a cluster: pass -cluster=<preset|file>");
  const Cluster &C = *Ctx.TheCluster;
  if (!Opts.Placement.empty()) {
    if (Error E = applyPlacementFile(G, C, Opts.Placement))
      return E;
    // The file's devices replace those an earlier place or plan pass
    // chose: their step and their search describe another placement.
    Ctx.Analyses.invalidate(changes());
  }
  Expected<const StepSimulation *> Step = getStepSimulation(G, C, Ctx.Analyses);
  if (!Step)
    return Step.takeError();
  const SimResult &R = (*Step)->Result;
  LowerBounds LB = (*Step)->Bounds;
  if (Opts.BoundSeconds) {
    if (!hasSegmentBoundSolver())
      return makeError("simulate: bound-seconds= needs CBC, and dp was "
                       "built without it");
    SegmentBoundInfo Info;
    LB.Segments = computeSegmentBound((*Step)->SG, *Opts.BoundSeconds, &Info);
    LB.SegmentCount = Info.Segments;
    LB.SegmentsExact = Info.Exact;
  }
  const PlacementSearch *Search = Ctx.Analyses.get<PlacementSearch>();
  const PlanSearch *Plans = Ctx.Analyses.get<PlanSearch>();

  AttributeList &GA = G.getAnnotations();
  GA.set("step_time_s", Attribute::getFloat(R.StepTime));
  GA.set("lower_bound_s", Attribute::getFloat(LB.best()));
  GA.set("oom", Attribute::getInt(R.OOM));
  if (Ctx.Report) {
    printSimulationReport(*Ctx.Report, G, C, R, LB);
    if (Plans)
      printPlanSearch(*Ctx.Report, *Plans);
  }
  if (!Opts.Summary.empty())
    if (Error E = writeFileAtomically(Opts.Summary, [&](raw_ostream &OS) {
          writeSummaryJSON(OS, G, C, R, LB, Search, Plans);
        }))
      return E;
  if (!Opts.Trace.empty())
    if (Error E = writeFileAtomically(Opts.Trace, [&](raw_ostream &OS) {
          writeChromeTrace(OS, G, C, R);
        }))
      return E;
  return Error::success();
}

OptionTable SimulatePass::describeOptions(SimulateOptions &O) {
  OptionTable T(name().str());
  T.text("summary", O.Summary, "FILE")
      .text("trace", O.Trace, "FILE")
      .text("placement", O.Placement, "FILE")
      .number("bound-seconds", O.BoundSeconds, "S",
              "a positive number of seconds",
              [](double V) { return V > 0 && V <= 86400; });
  return T;
}

bool SimulatePass::setDriverOption(StringRef Key, StringRef Value) {
  std::string *Field = Key == "summary"     ? &Opts.Summary
                       : Key == "trace"     ? &Opts.Trace
                       : Key == "placement" ? &Opts.Placement
                                            : nullptr;
  if (!Field)
    return false;
  // The pipeline's own option wins.
  if (Field->empty())
    *Field = Value.str();
  return true;
}

void SimulatePass::printPipeline(raw_ostream &OS) const {
  printPassOptions(OS, name(), Opts, describeOptions);
}

} // namespace dp
