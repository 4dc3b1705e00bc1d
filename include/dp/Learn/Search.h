//===- dp/Learn/Search.h - What learned placers see and return --*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The learned placers (Mars, ColocRL, Hierarchical Planner, Placeto,
/// EAGLE) are trained by reinforcement learning against the simulator.
/// Their models live in the Learn library, on libtorch; this header is the
/// whole of their interface and includes no torch header, so only Learn's
/// own sources pay torch's compile time.
///
/// A placer gets a LearnTask (fixed-width features per unit, the unit graph,
/// a sequence order, and a callback that scores a placement) and search
/// options (budget, seed, progress, saved policy), and returns the best
/// placement it sampled together with its search curve. All of them share
/// the search loop of SearchDriver: the sample budget, the reward
/// -sqrt(step time), the failing signal for placements that run out of
/// memory, the progress line and the curve.
///
//===----------------------------------------------------------------------===//

#ifndef DP_LEARN_SEARCH_H
#define DP_LEARN_SEARCH_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace dp {

/// The score of one placement.
struct Evaluation {
  /// Simulated step time in seconds.
  double StepSeconds = 0;
  /// The placement does not fit in some device's memory.
  bool OutOfMemory = false;
  /// Of the device whose peak memory is the largest share of its
  /// capacity: that peak and that capacity, in bytes (Placeto's memory
  /// penalty reads them).
  double PeakBytes = 0, CapacityBytes = 0;
};

/// What a learned placer knows about the graph it places.
struct LearnTask {
  /// Units (dp/Place/Placer.h) and the devices they can go to.
  unsigned NumUnits = 0;
  unsigned NumDevices = 0;
  /// Row-major [NumUnits x NumFeatures] node features (see
  /// docs/placers/mars.md): the same width for every graph and cluster, so
  /// that a saved policy applies to an unseen graph.
  unsigned NumFeatures = 0;
  std::vector<float> Features;
  /// The last NumCostFeatures of a row are derived from dp's cost model
  /// (compute times, bytes, memory, degrees); the others describe the ops
  /// (kinds, shapes), as the papers' features do.
  unsigned NumCostFeatures = 0;
  /// Dataflow between units (From != To), one per ordered pair, with the
  /// bytes that flow.
  struct Edge {
    uint32_t From, To;
    double Bytes;
  };
  std::vector<Edge> Edges;
  /// Units in topological order: the sequence seq2seq placers read.
  std::vector<uint32_t> Order;
  /// The dominant op type of each unit, an index into OpTypeNames (for
  /// placers that embed op types).
  std::vector<uint32_t> OpType;
  std::vector<std::string> OpTypeNames;
  /// Scores a placement (a device per unit). Must be deterministic: the
  /// search scores a placement it has scored before from memory.
  std::function<Evaluation(llvm::ArrayRef<uint32_t>)> Evaluate;
};

/// A point of the search curve: after Samples placements and Seconds of
/// search, the best step time seen so far (infinity while none fits).
struct CurvePoint {
  uint64_t Samples = 0;
  double Seconds = 0;
  double BestSeconds = 0;
  double SampleSeconds = 0;
  /// With SearchOptions::CountFlops: floating-point operations of the
  /// search so far, and training's part of them (the rest drew
  /// placements; lib/Learn/FlopCount.h); otherwise negative.
  double Flops = -1;
  double TrainingFlops = -1;
};

/// Options every learned placer takes.
struct SearchOptions {
  uint64_t Seed = 0;
  /// Budget: stop after this many sampled placements or this many wall
  /// seconds, whichever comes first (0: not limited by it; when both are
  /// 0 the placer's default sample budget applies).
  uint64_t Samples = 0;
  double Seconds = 0;
  /// Step time given to placements that do not fit (the papers' failing
  /// signal).
  double FailingSeconds = 100;
  /// Where to write progress lines while searching; null: quiet.
  llvm::raw_ostream *Progress = nullptr;
  /// A policy to start from (load=) and where the trained one is to be
  /// saved (save=); empty: none. The placer reads LoadFile itself but
  /// only serializes the trained policy into SearchResult::SavedPolicy:
  /// the caller writes SaveFile, with the rest of the run's outputs.
  std::string LoadFile, SaveFile;
  /// With LoadFile: training samples on the new graph (finetune=N); 0
  /// places zero-shot with the loaded policy (its greedy placement and a
  /// few samples).
  uint64_t FinetuneSamples = 0;
  /// Threads for libtorch (0: every core). One by default: the placers'
  /// products are too small to split, and on this project's 2-core
  /// machine two threads made 200 Mars samples on GNMT-4 2.4x slower.
  unsigned Threads = 1;
  /// Count the search's floating-point operations into the curve
  /// (count-flops=true). Slows every operator call: not for timed runs.
  bool CountFlops = false;
};

struct SearchResult {
  /// The best placement sampled (fitting ones first, then fastest).
  std::vector<uint32_t> Best;
  Evaluation BestEval;
  uint64_t Samples = 0;
  /// Of the samples, those the simulator ran; the others were placements
  /// sampled before, scored from memory.
  uint64_t Simulated = 0;
  double Seconds = 0;
  /// Best-so-far after every sample.
  std::vector<CurvePoint> Curve;
  /// With SearchOptions::SaveFile: the trained policy, as that file's
  /// bytes.
  std::string SavedPolicy;
};

} // namespace dp

#endif // DP_LEARN_SEARCH_H
