//===- EmitInternal.h - Helpers shared by the emitters ----------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#ifndef DP_LIB_EMIT_EMITINTERNAL_H
#define DP_LIB_EMIT_EMITINTERNAL_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <vector>

namespace dp {

struct PlacedStep;

/// The colour of device \p Dev in the DOT graph and the HTML report: a
/// light colour (black text stays readable on it), "#rrggbb".
llvm::StringRef getDeviceColor(unsigned Dev);

/// Writes \p S with the characters that HTML and XML give a meaning to
/// (& < > " ') escaped.
void writeEscapedXML(llvm::raw_ostream &OS, llvm::StringRef S);

/// The bytes of the weights' gradients (what training-graph's update ops
/// read besides the weight) on each device at its peak.
struct PeakGradients {
  /// Per device.
  std::vector<uint64_t> Bytes;
  /// Per device: whether Bytes is what the timeline holds at the first
  /// moment the device reaches its peak, or only an upper bound (under a
  /// pipeline plan, or when the peak lasts no time).
  std::vector<bool> Exact;
  /// Whether the graph has weight gradients at all (a training step).
  bool Any = false;
};

/// Rebuilds where each weight gradient of \p S lives over the step from
/// the recorded timeline: on its producer's device from the producer's
/// start until its readers there and its transfers are done, and on each
/// device it is sent to from the producer's end until its readers there
/// are done, as the simulator allocates and frees it.
PeakGradients computePeakGradients(const PlacedStep &S);

} // namespace dp

#endif // DP_LIB_EMIT_EMITINTERNAL_H
