//===- FuzzerUtils.h - Helpers shared by dp's fuzz targets ------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// What every dp fuzz target checks besides "no crash, no sanitizer report":
/// a rejected input is rejected with dp's located errors, each with a
/// message, and what dp prints parses back to the same text. A violated
/// property traps, which libFuzzer reports as a crash with its input.
///
//===----------------------------------------------------------------------===//

#ifndef DP_FUZZ_FUZZERUTILS_H
#define DP_FUZZ_FUZZERUTILS_H

#include "dp/Support/Diagnostics.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace dp {
namespace fuzz {

/// Stops the fuzzer with \p Why on standard error.
[[noreturn]] inline void fail(const char *Why) {
  llvm::errs() << "dp fuzz target: " << Why << '\n';
  llvm::errs().flush();
  __builtin_trap();
}

/// Keeps \p Input, which dp rejected because libonnx crashed on it and
/// dp's crash guard caught the signal (docs/hardening.md), in the folder
/// $DP_FUZZ_CAUGHT_DIR when that is set: not a failure, but a node that
/// deserves a check of its own. utils/fuzz.py counts them.
inline void keepCaughtCrash(llvm::StringRef Input) {
  const char *Dir = std::getenv("DP_FUZZ_CAUGHT_DIR");
  if (!Dir || !*Dir)
    return;
  std::string Path = (llvm::Twine(Dir) + "/caught-" +
                      llvm::utohexstr(llvm::xxHash64(Input)))
                         .str();
  std::ofstream(Path, std::ios::binary).write(Input.data(), Input.size());
}

/// Consumes \p E, which must be success or a list of LocatedErrors that
/// each say something. \p Input is what was rejected.
inline void consumeUserError(llvm::Error E, llvm::StringRef Input = {}) {
  llvm::handleAllErrors(
      std::move(E),
      [&](const LocatedError &LE) {
        if (LE.getMessage().empty())
          fail("a located error without a message");
        if (LE.getMessage().contains("libonnx's") &&
            LE.getMessage().contains(" crashed ("))
          keepCaughtCrash(Input);
      },
      [](const llvm::ErrorInfoBase &EI) {
        llvm::errs() << "unlocated error: " << EI.message() << '\n';
        fail("an error that is not a dp::LocatedError");
      });
}

/// For LLVMFuzzerInitialize: parses the arguments after libFuzzer's
/// -ignore_remaining_args=1 as dp's (LLVM) command-line options, e.g.
///   dp-fuzz-onnx-text FILE -ignore_remaining_args=1 -onnx-skip-node-checks
inline int parseDPOptions(int Argc, char **Argv) {
  std::vector<const char *> Args = {Argv[0]};
  bool Ours = false;
  for (int I = 1; I < Argc; ++I) {
    if (Ours)
      Args.push_back(Argv[I]);
    Ours = Ours || llvm::StringRef(Argv[I]) == "-ignore_remaining_args=1";
  }
  if (!llvm::cl::ParseCommandLineOptions(int(Args.size()), Args.data(), "",
                                         &llvm::errs()))
    fail("bad dp options after -ignore_remaining_args=1");
  return 0;
}

} // namespace fuzz
} // namespace dp

#endif // DP_FUZZ_FUZZERUTILS_H
