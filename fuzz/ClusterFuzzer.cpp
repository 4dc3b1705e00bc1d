//===- ClusterFuzzer.cpp - Fuzzes the JSON/YAML cluster parser ------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Parses text as a cluster file (JSON or YAML) and describes the cluster
/// as -print-cluster does.
///
//===----------------------------------------------------------------------===//

#include "FuzzerUtils.h"

#include "dp/Cluster/Cluster.h"

#include "llvm/Support/MemoryBufferRef.h"

using namespace dp;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  llvm::StringRef Text(reinterpret_cast<const char *>(Data), Size);
  llvm::Expected<Cluster> C =
      parseCluster(llvm::MemoryBufferRef(Text, "fuzz.json"));
  if (!C) {
    fuzz::consumeUserError(C.takeError());
    return 0;
  }
  llvm::raw_null_ostream OS;
  printCluster(OS, *C);
  return 0;
}
