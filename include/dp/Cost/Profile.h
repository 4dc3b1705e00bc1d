//===- dp/Cost/Profile.h - Per-op times from user profiles ------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Reads per-op times that the user measured on their own hardware:
///
/// - ONNX Runtime's profiling JSON: a list of events; those with
///   "cat": "Node" and a "name" of the form "<node name>_kernel_time" give
///   the node's time in "dur" (microseconds).
/// - Chrome traces such as PyTorch profiler exports: an object whose
///   "traceEvents" list holds complete events ("ph": "X") with a "name"
///   and a "dur" in microseconds.
///
/// A name seen several times (several profiled runs) gets the median of its
/// durations. Errors name the file and the JSON path of the bad value.
///
//===----------------------------------------------------------------------===//

#ifndef DP_COST_PROFILE_H
#define DP_COST_PROFILE_H

#include "llvm/ADT/Optional.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBufferRef.h"

namespace dp {

enum class ProfileFormatKind : uint8_t {
  /// ONNX Runtime's profiling JSON.
  ONNXRuntime,
  /// A Chrome trace ({"traceEvents": [...]}), e.g. from PyTorch.
  ChromeTrace,
};

/// Times by op name.
class OpProfile {
public:
  ProfileFormatKind getFormat() const { return Format; }
  /// The time of \p Name in seconds, or None if the profile lacks it.
  llvm::Optional<double> lookup(llvm::StringRef Name) const;
  size_t size() const { return Seconds.size(); }

  /// Parses \p Buffer; errors are located in its identifier.
  static llvm::Expected<OpProfile> parse(llvm::MemoryBufferRef Buffer);
  /// Reads and parses the file \p Path.
  static llvm::Expected<OpProfile> load(llvm::StringRef Path);

private:
  ProfileFormatKind Format = ProfileFormatKind::ONNXRuntime;
  llvm::StringMap<double> Seconds;
};

} // namespace dp

#endif // DP_COST_PROFILE_H
