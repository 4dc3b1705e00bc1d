//===- IRTextFuzzer.cpp - Fuzzes the dp IR text parser --------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Parses text as dp IR and verifies it, as dp-opt does with a .dp input.
/// A graph that parses and verifies must print to text that parses back to
/// the same text, and must round-trip through bytecode too.
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
  llvm::StringRef Text(reinterpret_cast<const char *>(Data), Size);
  llvm::Expected<Graph> G = parseGraph(llvm::MemoryBufferRef(Text, "fuzz.dp"));
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

  std::string Bytes;
  llvm::raw_string_ostream OS(Bytes);
  writeBytecode(OS, *G);
  llvm::Expected<Graph> Read =
      readBytecode(llvm::MemoryBufferRef(OS.str(), "fuzz.dpbc"));
  if (!Read) {
    llvm::errs() << llvm::toString(Read.takeError());
    fuzz::fail("bytecode written by dp does not read back");
  }
  if (print(*Read) != Printed)
    fuzz::fail("bytecode reads back to another graph");
  return 0;
}
