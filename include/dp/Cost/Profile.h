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
/// - Chrome traces such as torch.profiler's export_chrome_trace: an object
///   whose "traceEvents" list holds the events, or a bare list of them;
///   complete events ("ph": "X") with a "name", a "ts" and a "dur" in
///   microseconds give the time of their name.
///
/// Chrome traces from PyTorch also give backward times: the forward ops
/// inside a region ("cat": "user_annotation", from record_function("N"))
/// that created autograd nodes carry the nodes' "Sequence number"; the
/// autograd engine's events "autograd::engine::evaluate_function: ..." that
/// carry the same numbers are the region's backward, and their time is that
/// of "N/grad". A trace with GPU kernels ("cat": "kernel") times every
/// event by the kernels it launched (linked by "correlation") instead of by
/// its own duration.
///
/// A Chrome trace from dp's PyTorch runtime also says what the profiler
/// adds to the events it times, measured before the profiled steps: a
/// metadata event {"ph": "M", "name": "dp_profiler_overhead", "args":
/// {"region_us": R, "op_us": P}}. The host time of an event with n events
/// nested in it is then its duration less R + P * n, but no less than
/// 1 us (or its duration, if shorter).
///
/// Its trace may also say what the runtime spends per node outside the
/// nodes' regions (looking up inputs, freeing tensors, calling the
/// kernel), measured on unprofiled steps: {"ph": "M", "name":
/// "dp_dispatch", "args": {"node_us": D}}. getDispatch() gives it
/// (combined over pooled profiles like the times).
///
/// A name seen several times (several profiled steps, or several
/// profiles pooled: one per process, as the speed of a process on a shared
/// machine varies from one to the next) gets the median of its times,
/// their minimum or their mean (ProfileStatKind). Errors name the file and the
/// JSON path of the bad value.
///
//===----------------------------------------------------------------------===//

#ifndef DP_COST_PROFILE_H
#define DP_COST_PROFILE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/Optional.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBufferRef.h"

#include <string>
#include <vector>

namespace dp {

enum class ProfileFormatKind : uint8_t {
  /// ONNX Runtime's profiling JSON.
  ONNXRuntime,
  /// A Chrome trace ({"traceEvents": [...]} or a list of trace events),
  /// e.g. from PyTorch.
  ChromeTrace,
};

/// What the times of a profile measure.
enum class ProfileTimeKind : uint8_t {
  /// The durations of the named events: host time for a PyTorch trace
  /// without GPU kernels, the kernel time ONNX Runtime measured.
  Event,
  /// The summed durations of the GPU work (kernels, copies, memsets) that
  /// the named events launched.
  Kernel,
};

/// What \p K times, in words: "GPU kernels" or "host events".
llvm::StringRef getTimeKindName(ProfileTimeKind K);

/// How the times of a name seen in several profiled steps combine into one.
enum class ProfileStatKind : uint8_t {
  /// The median of the per-step times.
  Median,
  /// The smallest per-step time: on a shared machine interference only
  /// adds time, so the fastest step is the closest to the op's own.
  Min,
  /// The mean of the per-step times: the statistic whose sum over a step's
  /// ops is the expected step, where per-op times are skewed (medians and
  /// minima of each op add up to less than any real step).
  Mean,
};

/// The files of a profile= value: several (one per process) are
/// separated by ':'; empty parts are dropped.
std::vector<std::string> splitProfilePaths(llvm::StringRef Value);

/// Times by op name.
class OpProfile {
public:
  ProfileFormatKind getFormat() const { return Format; }
  ProfileTimeKind getTimeKind() const { return TimeKind; }
  /// The time of \p Name in seconds, or None if the profile lacks it.
  llvm::Optional<double> lookup(llvm::StringRef Name) const;
  size_t size() const { return Seconds.size(); }
  /// The runtime's seconds per node outside the nodes' own regions (its
  /// Python between kernels), when the profile measured it.
  llvm::Optional<double> getDispatch() const { return Dispatch; }
  /// Why parts of the profile were not used (e.g. backward events that
  /// cannot be attributed); empty when all of it was.
  llvm::ArrayRef<std::string> getNotes() const { return Notes; }

  /// Parses \p Buffers, profiles of the same model in one format (each
  /// process's, say), pooling the per-step times of a name over all of
  /// them and combining them by \p Stat; errors are located in the
  /// identifier of the buffer at fault.
  static llvm::Expected<OpProfile>
  parse(llvm::ArrayRef<llvm::MemoryBufferRef> Buffers,
        ProfileStatKind Stat = ProfileStatKind::Median);
  /// Reads and parses the files \p Paths.
  static llvm::Expected<OpProfile>
  load(llvm::ArrayRef<std::string> Paths,
       ProfileStatKind Stat = ProfileStatKind::Median);

private:
  ProfileFormatKind Format = ProfileFormatKind::ONNXRuntime;
  ProfileTimeKind TimeKind = ProfileTimeKind::Event;
  llvm::StringMap<double> Seconds;
  llvm::Optional<double> Dispatch;
  std::vector<std::string> Notes;
};

} // namespace dp

#endif // DP_COST_PROFILE_H
