//===- dp-opt.cpp - The dp pass driver ------------------------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// dp-opt reads an ONNX model or dp IR, runs a pass pipeline over it and
/// writes the resulting IR, like LLVM's opt:
///
///   dp-opt -passes='import-onnx{batch=8},print-summary' m.onnx -S -o m.dp
///   dp-opt -import-onnx -print-summary m.onnx -disable-output
///
/// Per-pass flags expand in command-line order, and mix with -passes. If the
/// input is an ONNX model and the pipeline does not start with import-onnx,
/// an import-onnx with default options runs first. All of it is the driver
/// library's (dp/Driver/OptMain.h), which tools of one's own call too.
///
//===----------------------------------------------------------------------===//

#include "dp/Driver/OptMain.h"

int main(int argc, char **argv) { return dp::optMain(argc, argv); }
