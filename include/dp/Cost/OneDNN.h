//===- dp/Cost/OneDNN.h - Op times measured with oneDNN ---------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Measures ops on this machine's CPU with oneDNN primitives at the ops'
/// real shapes and element types: convolutions (forward, backward data and
/// weights), transposed convolutions, matrix products, pooling, eltwise,
/// binary and sum, softmax, layer and batch normalization, reductions, and
/// LSTM/GRU/RNN layers. Each measurement is the median of N executions
/// after one warm-up, with oneDNN's default threading (every core).
///
/// Results are cached on disk, keyed by the primitive's signature (kind,
/// algorithm, element type, shapes, strides and padding) in a file that
/// belongs to one oneDNN version, CPU model and thread count, so a second
/// run measures nothing. docs/cost.md describes the cache file.
///
/// No oneDNN header is visible here: only lib/Cost uses oneDNN.
///
//===----------------------------------------------------------------------===//

#ifndef DP_COST_ONEDNN_H
#define DP_COST_ONEDNN_H

#include "dp/IR/Graph.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace dp {

struct OneDNNOptions {
  /// Timed executions per measurement (after one warm-up).
  unsigned Runs = 5;
  /// The cache directory; empty: the default (getDefaultCacheDir()).
  std::string CacheDir;
  /// Ops whose roofline estimate exceeds this many seconds are not
  /// measured (unless cached): it caps the time one measurement takes.
  double MeasureLimit = 0.25;
  /// Ops whose buffers would exceed this many bytes are not measured.
  uint64_t MaxBytes = uint64_t(2) << 30;
};

enum class MeasureStatusKind : uint8_t {
  /// Measured now, or found in the cache.
  Measured,
  /// oneDNN has no primitive for the op (or for its shapes or types).
  Unsupported,
  /// Not measured: over the time or memory limit, and not cached.
  OverLimit,
};

struct Measurement {
  MeasureStatusKind Status = MeasureStatusKind::Unsupported;
  /// Median execution time in seconds.
  double Seconds = 0;
  /// oneDNN's scratchpad for the primitive(s).
  uint64_t WorkspaceBytes = 0;
  /// Primitives whose times Seconds adds up.
  unsigned Primitives = 0;
};

class OneDNNMeasurer {
public:
  ~OneDNNMeasurer();

  /// Creates a measurer and loads the cache file of this machine from the
  /// cache directory. A cache file that cannot be parsed is ignored (see
  /// getNotes()). Fails only if no cache directory can be determined.
  static llvm::Expected<std::unique_ptr<OneDNNMeasurer>>
  create(OneDNNOptions Opts);

  /// Measures forward op \p O of \p G. \p RooflineSeconds is the op's
  /// estimate on this CPU, compared with the measure limit.
  Measurement measure(const Graph &G, OpId O, double RooflineSeconds);

  /// Measures backward op \p Backward of \p G, whose forward op is
  /// \p Forward: backward data and weights of a convolution, the two
  /// products of a MatMul or Gemm, each only if \p Backward computes that
  /// gradient. Unsupported for other ops.
  Measurement measureBackward(const Graph &G, OpId Backward, OpId Forward,
                              double RooflineSeconds);

  /// This machine's memory bandwidth in bytes/s: a oneDNN copy of 64 MiB,
  /// best of several runs, measured once and cached.
  double getMemoryBandwidth();

  /// Writes the measurements to the cache file (atomically, merged with
  /// what other processes wrote meanwhile) if any are new.
  llvm::Error saveCache();

  /// What the user should know (a corrupt cache file that was ignored).
  llvm::ArrayRef<std::string> getNotes() const;
  /// Primitives measured, and served from the cache, by this measurer.
  unsigned getNumMeasured() const;
  unsigned getNumCacheHits() const;
  /// The cache file of this machine.
  llvm::StringRef getCachePath() const;

  /// $XDG_CACHE_HOME/dp/onednn, else $HOME/.cache/dp/onednn; empty if
  /// neither variable is set.
  static std::string getDefaultCacheDir();
  /// The "model name" of /proc/cpuinfo, or "unknown".
  static std::string getCPUModel();
  /// oneDNN's version, "2.6.3".
  static std::string getLibraryVersion();

private:
  class Impl;
  explicit OneDNNMeasurer(std::unique_ptr<Impl> I);

  std::unique_ptr<Impl> I;
};

} // namespace dp

#endif // DP_COST_ONEDNN_H
