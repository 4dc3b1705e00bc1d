//===- ONNXBinaryFuzzer.cpp - Fuzzes the binary ONNX importer -------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Feeds bytes to importONNX as a binary ModelProto: protobuf parsing, the
/// ONNX checker, shape inference and the graph builder. Inputs that look
/// like ONNX text are left to the onnx-text target. An imported graph must
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
  llvm::StringRef Bytes(reinterpret_cast<const char *>(Data), Size);
  if (looksLikeONNXText(Bytes))
    return -1; // Not added to the corpus.
  llvm::Expected<Graph> G =
      importONNX(llvm::MemoryBufferRef(Bytes, "fuzz.onnx"));
  if (!G) {
    fuzz::consumeUserError(G.takeError(), Bytes);
    return 0;
  }
  if (llvm::Error E = verifyGraph(*G)) {
    llvm::consumeError(std::move(E));
    fuzz::fail("an imported graph fails the verifier");
  }
  return 0;
}
