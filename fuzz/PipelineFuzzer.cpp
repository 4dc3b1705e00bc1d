//===- PipelineFuzzer.cpp - Fuzzes the pass pipeline parser ---------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Parses text as a -passes pipeline, building every pass with its
/// options. A pipeline that parses must print (-print-pipeline) to text
/// that parses back and prints the same.
///
//===----------------------------------------------------------------------===//

#include "FuzzerUtils.h"

#include "dp/IR/PassManager.h"
#include "dp/Passes/PassBuilder.h"

#include <string>

using namespace dp;

static std::string print(const PassManager &PM) {
  std::string S;
  llvm::raw_string_ostream OS(S);
  PM.printPipeline(OS);
  return OS.str();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  llvm::StringRef Text(reinterpret_cast<const char *>(Data), Size);
  PassManager PM;
  if (llvm::Error E = parsePassPipeline(PM, Text)) {
    fuzz::consumeUserError(std::move(E));
    return 0;
  }
  std::string Printed = print(PM);
  PassManager Again;
  if (llvm::Error E = parsePassPipeline(Again, Printed)) {
    llvm::errs() << Printed << "\n" << llvm::toString(std::move(E));
    fuzz::fail("a printed pipeline does not parse back");
  }
  if (print(Again) != Printed)
    fuzz::fail("a printed pipeline parses back to another pipeline");
  return 0;
}
