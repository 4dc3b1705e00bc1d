//===- SimBench.cpp - Simulator speed -------------------------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Measures the simulator on a real training graph (default: BERT-Base,
/// models/bert_base.onnx, through import-onnx, training-graph and
/// cost-annotate on p100x4), in one run:
///
///   BM_SimGraphBuild     compiling the graph for simulation (once per graph)
///   BM_SimulateSingle    every op on one GPU
///   BM_SimulateStages    contiguous stages in graph order over the GPUs
///                        (the shape of a pipeline placement)
///   BM_SimulateRandom    random placements over every device (64 of them,
///                        drawn once with a fixed seed, used in turn): the
///                        worst case, every edge crossing devices
///   BM_SimulatePipeline  the same stages under a pipeline plan of 8
///                        micro-batches in 1F1B (the graph imported at an
///                        eighth of the batch): 8 instances of every op
///
/// and prints simulated ops/s (op instances under the plan) and
/// placements/s, with the ratio to the 10 M ops/s target. Usage:
///
///   dp-bench-sim [--model=FILE] [--cluster=NAME] [benchmark flags]
///
//===----------------------------------------------------------------------===//

#include "dp/Cluster/Cluster.h"
#include "dp/IR/Graph.h"
#include "dp/Passes/PassBuilder.h"
#include "dp/Sim/Simulator.h"

#include "BenchReporter.h"

#include "llvm/Support/MemoryBuffer.h"

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <string>

using namespace dp;

namespace {

std::string ModelPath = DP_SOURCE_DIR "/models/bert_base.onnx";
std::string ClusterName = "p100x4";

struct Problem {
  Cluster C;
  Graph G;
  std::unique_ptr<SimGraph> SG;
  std::vector<std::vector<uint32_t>> Random;
  std::vector<uint32_t> Stages;
  /// The step under a pipeline plan, and its stages.
  Graph Pipelined;
  std::unique_ptr<SimGraph> PipelinedSG;
  std::vector<uint32_t> PipelinedStages;
};

constexpr const char *PipelinePlan = "pipeline{microbatches=8}";

Problem &problem() {
  static Problem *P = [] {
    auto Die = [](llvm::Error E) {
      std::fprintf(stderr, "dp-bench-sim: %s\n",
                   llvm::toString(std::move(E)).c_str());
      std::exit(1);
    };
    llvm::Expected<Cluster> C = loadCluster(ClusterName);
    if (!C)
      Die(C.takeError());
    auto Buf = llvm::MemoryBuffer::getFile(ModelPath);
    if (!Buf) {
      std::fprintf(stderr, "dp-bench-sim: cannot read %s\n",
                   ModelPath.c_str());
      std::exit(1);
    }
    auto *P = new Problem{std::move(*C), Graph(), nullptr, {}, {},
                          Graph(), nullptr, {}};
    auto Prepare = [&](Graph &G, std::unique_ptr<SimGraph> &Out,
                       std::string Plan) {
      PassManager PM;
      if (llvm::Error E = parsePassPipeline(
              PM, "import-onnx," + Plan + "training-graph,cost-annotate"))
        Die(std::move(E));
      PassContext Ctx;
      Ctx.Input = (*Buf)->getMemBufferRef();
      Ctx.TheCluster = &P->C;
      if (llvm::Error E = PM.run(G, Ctx))
        Die(std::move(E));
      llvm::Expected<SimGraph> SG = SimGraph::build(G, P->C);
      if (!SG)
        Die(SG.takeError());
      Out = std::make_unique<SimGraph>(std::move(*SG));
    };
    Prepare(P->G, P->SG, "");
    Prepare(P->Pipelined, P->PipelinedSG, std::string(PipelinePlan) + ",");
    std::mt19937_64 Rng(42);
    std::uniform_int_distribution<uint32_t> Dev(0, P->C.getNumDevices() - 1);
    P->Random.assign(64, std::vector<uint32_t>(P->G.getNumOps()));
    for (auto &Placement : P->Random)
      for (uint32_t &D : Placement)
        D = Dev(Rng);
    // Contiguous stages in graph order over all devices but the last (the
    // CPU in the presets): the shape of a pipeline placement.
    unsigned Devices = std::max(1u, P->C.getNumDevices() - 1);
    size_t N = P->G.getNumOps();
    P->Stages.resize(N);
    for (size_t I = 0; I != N; ++I)
      P->Stages[I] = uint32_t(I * Devices / N);
    size_t NP = P->Pipelined.getNumOps();
    P->PipelinedStages.resize(NP);
    for (size_t I = 0; I != NP; ++I)
      P->PipelinedStages[I] = uint32_t(I * Devices / NP);
    return P;
  }();
  return *P;
}

void setRates(benchmark::State &State, double Ops) {
  State.counters["ops/s"] =
      benchmark::Counter(Ops, benchmark::Counter::kIsIterationInvariantRate);
  State.counters["placements/s"] = benchmark::Counter(
      1, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_SimGraphBuild(benchmark::State &State) {
  Problem &P = problem();
  for (auto _ : State) {
    llvm::Expected<SimGraph> SG = SimGraph::build(P.G, P.C);
    benchmark::DoNotOptimize(SG->getNumOps());
  }
}

/// Simulates \p Placements of \p SG in turn, counting \p Ops per run.
void simulateEach(benchmark::State &State, const SimGraph &SG,
                  llvm::ArrayRef<std::vector<uint32_t>> Placements,
                  double Ops) {
  Simulator Sim(SG);
  SimResult R;
  size_t I = 0;
  for (auto _ : State) {
    Sim.run(Placements[I++ % Placements.size()], R);
    benchmark::DoNotOptimize(R.StepTime);
  }
  setRates(State, Ops);
}

void BM_SimulateSingle(benchmark::State &State) {
  Problem &P = problem();
  std::vector<uint32_t> Placement(P.G.getNumOps(), 0);
  simulateEach(State, *P.SG, Placement, P.G.getNumOps());
}

void BM_SimulateStages(benchmark::State &State) {
  Problem &P = problem();
  simulateEach(State, *P.SG, P.Stages, P.G.getNumOps());
}

void BM_SimulateRandom(benchmark::State &State) {
  Problem &P = problem();
  simulateEach(State, *P.SG, P.Random, P.G.getNumOps());
}

void BM_SimulatePipeline(benchmark::State &State) {
  Problem &P = problem();
  simulateEach(State, *P.PipelinedSG, P.PipelinedStages,
               P.PipelinedSG->getNumOps());
}

/// Prints the usual table, then simulated ops/s against the target.
class RateReporter : public SecondsReporter {
public:
  void Finalize() override {
    ConsoleReporter::Finalize();
    Problem &P = problem();
    std::printf("\ngraph: %s training step, %zu ops; cluster %s\n",
                P.G.getName().str().c_str(), P.G.getNumOps(),
                P.C.getName().str().c_str());
    std::printf("pipelined: %s, %u op instances\n", PipelinePlan,
                P.PipelinedSG->getNumOps());
    for (const char *Name : {"BM_SimulateSingle", "BM_SimulateStages",
                             "BM_SimulateRandom", "BM_SimulatePipeline"}) {
      const double *S = seconds(Name);
      if (!S)
        continue;
      bool Pipelined = std::strcmp(Name, "BM_SimulatePipeline") == 0;
      double OpsPerSecond =
          (Pipelined ? P.PipelinedSG->getNumOps() : P.G.getNumOps()) / *S;
      std::printf("%-18s %8.2f M simulated ops/s, %9.0f placements/s, "
                  "%.2fx the 10 M ops/s target\n",
                  Name + 3, OpsPerSecond / 1e6, 1 / *S, OpsPerSecond / 1e7);
    }
  }
};

} // namespace

int main(int argc, char **argv) {
  std::vector<char *> Args;
  for (int I = 0; I != argc; ++I) {
    if (std::strncmp(argv[I], "--model=", 8) == 0) {
      ModelPath = argv[I] + 8;
      continue;
    }
    if (std::strncmp(argv[I], "--cluster=", 10) == 0) {
      ClusterName = argv[I] + 10;
      continue;
    }
    Args.push_back(argv[I]);
  }
  int ArgCount = int(Args.size());
  benchmark::Initialize(&ArgCount, Args.data());
  problem(); // Prepare outside the timings.
  benchmark::RegisterBenchmark("BM_SimGraphBuild", BM_SimGraphBuild)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("BM_SimulateSingle", BM_SimulateSingle)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("BM_SimulateStages", BM_SimulateStages)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("BM_SimulateRandom", BM_SimulateRandom)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("BM_SimulatePipeline", BM_SimulatePipeline)
      ->Unit(benchmark::kMicrosecond);
  RateReporter Reporter;
  benchmark::RunSpecifiedBenchmarks(&Reporter);
  benchmark::Shutdown();
  return 0;
}
