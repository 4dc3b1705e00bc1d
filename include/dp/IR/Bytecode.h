//===- dp/IR/Bytecode.h - Binary form of the IR -----------------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// A compact binary form of a dp::Graph, what dp-opt writes without -S. It
/// holds exactly what the textual form holds (reading it and printing text
/// gives the same text as printing the original graph), is faster to read
/// and write, and is versioned. docs/IR.md describes the layout.
///
//===----------------------------------------------------------------------===//

#ifndef DP_IR_BYTECODE_H
#define DP_IR_BYTECODE_H

#include "dp/IR/Graph.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBufferRef.h"
#include "llvm/Support/raw_ostream.h"

namespace dp {

/// The first bytes of every bytecode file.
constexpr llvm::StringLiteral BytecodeMagic = "\xd0" "dpIR";
/// The layout version written; readers accept only this one.
constexpr unsigned BytecodeVersion = 1;

/// Whether \p Bytes starts with the bytecode magic.
bool isBytecode(llvm::StringRef Bytes);

void writeBytecode(llvm::raw_ostream &OS, const Graph &G);

/// Reads bytecode. Malformed input is an error naming the byte offset; the
/// result is not verified beyond what the layout guarantees (names unique,
/// operands defined before use).
llvm::Expected<Graph> readBytecode(llvm::MemoryBufferRef Buffer);

} // namespace dp

#endif // DP_IR_BYTECODE_H
