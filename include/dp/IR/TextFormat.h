//===- dp/IR/TextFormat.h - Textual form of the IR --------------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The stable textual form of a dp::Graph (docs/IR.md describes it). Print
/// then parse then print is byte-identical, and the text carries every
/// annotation, so each pass can run as its own build step on the text.
///
//===----------------------------------------------------------------------===//

#ifndef DP_IR_TEXTFORMAT_H
#define DP_IR_TEXTFORMAT_H

#include "dp/IR/Graph.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBufferRef.h"
#include "llvm/Support/raw_ostream.h"

namespace dp {

/// Writes \p G in the textual form.
void printGraph(llvm::raw_ostream &OS, const Graph &G);

/// Writes one attribute value as it appears in the textual form.
void printAttribute(llvm::raw_ostream &OS, const Attribute &A);

/// Writes \p Name as a bare identifier if it is one, else as a quoted
/// string with escapes.
void printIdentifier(llvm::raw_ostream &OS, llvm::StringRef Name);

/// Parses the textual form. Errors are LocatedErrors naming the buffer's
/// identifier, line and column. The result is not verified.
llvm::Expected<Graph> parseGraph(llvm::MemoryBufferRef Buffer);

/// Whether \p Text starts (after white space and comments) like the
/// textual form, i.e. with "dp.graph".
bool looksLikeGraphText(llvm::StringRef Text);

} // namespace dp

#endif // DP_IR_TEXTFORMAT_H
