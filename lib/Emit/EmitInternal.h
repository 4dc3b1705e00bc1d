//===- EmitInternal.h - Helpers shared by the emitters ----------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#ifndef DP_LIB_EMIT_EMITINTERNAL_H
#define DP_LIB_EMIT_EMITINTERNAL_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

namespace dp {

/// The colour of device \p Dev in the DOT graph and the HTML report: a
/// light colour (black text stays readable on it), "#rrggbb".
llvm::StringRef getDeviceColor(unsigned Dev);

/// Writes \p S with the characters that HTML and XML give a meaning to
/// (& < > " ') escaped.
void writeEscapedXML(llvm::raw_ostream &OS, llvm::StringRef S);

} // namespace dp

#endif // DP_LIB_EMIT_EMITINTERNAL_H
