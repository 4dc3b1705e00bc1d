//===- ONNXTextFuzzer.cpp - Fuzzes the ONNX text-syntax importer ----------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Feeds text to importONNX as ONNX text syntax (libonnx's parser, then the
/// checker, shape inference and the graph builder). Inputs with bytes that
/// are not text are left to the onnx-binary target. An imported graph must
/// pass the verifier.
///
//===----------------------------------------------------------------------===//

#include "FuzzerUtils.h"

#include "dp/IR/Verifier.h"
#include "dp/Import/ONNXImporter.h"

#include "llvm/Support/MemoryBufferRef.h"

using namespace dp;

extern "C" int LLVMFuzzerInitialize(int *Argc, char ***Argv) {
  return fuzz::parseDPOptions(*Argc, *Argv);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  llvm::StringRef Text(reinterpret_cast<const char *>(Data), Size);
  if (!looksLikeONNXText(Text))
    return -1; // Not added to the corpus.
  llvm::Expected<Graph> G =
      importONNX(llvm::MemoryBufferRef(Text, "fuzz.onnxtxt"));
  if (!G) {
    fuzz::consumeUserError(G.takeError(), Text);
    return 0;
  }
  if (llvm::Error E = verifyGraph(*G)) {
    llvm::consumeError(std::move(E));
    fuzz::fail("an imported graph fails the verifier");
  }
  return 0;
}
