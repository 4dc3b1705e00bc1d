//===- HostCluster.h - The cluster of this machine's CPU --------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The "host" preset: this machine's CPU as one device, with its memory
/// bandwidth and peak FLOP/s measured when the preset is built.
///
//===----------------------------------------------------------------------===//

#ifndef DP_LIB_CLUSTER_HOSTCLUSTER_H
#define DP_LIB_CLUSTER_HOSTCLUSTER_H

#include "dp/Cluster/Cluster.h"

namespace dp {

/// Measures this machine (about 0.1-0.2 s) and returns the "host" cluster.
/// The figures vary from run to run, as measurements do.
llvm::Expected<Cluster> getHostCluster();

} // namespace dp

#endif // DP_LIB_CLUSTER_HOSTCLUSTER_H
