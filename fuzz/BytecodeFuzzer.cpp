//===- BytecodeFuzzer.cpp - Fuzzes the dp IR bytecode reader --------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Reads bytes as dp IR bytecode and verifies the graph, as dp-opt does
/// with a bytecode input. A graph that reads and verifies must print as
/// text that parses back to the same text.
///
//===----------------------------------------------------------------------===//

#include "FuzzerUtils.h"

#include "dp/IR/Bytecode.h"
#include "dp/IR/TextFormat.h"
#include "dp/IR/Verifier.h"

#include "llvm/Support/MemoryBufferRef.h"

#include <string>

using namespace dp;

static std::string print(const Graph &G) {
  std::string S;
  llvm::raw_string_ostream OS(S);
  printGraph(OS, G);
  return OS.str();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  llvm::StringRef Bytes(reinterpret_cast<const char *>(Data), Size);
  if (!isBytecode(Bytes))
    return -1; // Not added to the corpus.
  llvm::Expected<Graph> G =
      readBytecode(llvm::MemoryBufferRef(Bytes, "fuzz.dpbc"));
  if (!G) {
    fuzz::consumeUserError(G.takeError());
    return 0;
  }
  if (llvm::Error E = verifyGraph(*G)) {
    fuzz::consumeUserError(std::move(E));
    return 0;
  }
  std::string Printed = print(*G);
  llvm::Expected<Graph> Again =
      parseGraph(llvm::MemoryBufferRef(Printed, "printed.dp"));
  if (!Again) {
    llvm::errs() << Printed << "\n" << llvm::toString(Again.takeError());
    fuzz::fail("printed IR does not parse back");
  }
  if (print(*Again) != Printed)
    fuzz::fail("printed IR parses back to another graph");
  return 0;
}
