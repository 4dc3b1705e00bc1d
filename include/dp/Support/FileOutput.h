//===- dp/Support/FileOutput.h - Writing output files safely ----*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Output files are written whole or not at all: the content goes to a
/// temporary file beside the target, which is renamed over it only once
/// everything was written. A failure leaves no partial file and leaves an
/// existing file as it was.
///
//===----------------------------------------------------------------------===//

#ifndef DP_SUPPORT_FILEOUTPUT_H
#define DP_SUPPORT_FILEOUTPUT_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

namespace dp {

/// Writes \p Path atomically with \p Write ("-" is standard output). Errors
/// name the path.
llvm::Error writeFileAtomically(llvm::StringRef Path,
                                llvm::function_ref<void(llvm::raw_ostream &)>
                                    Write);

} // namespace dp

#endif // DP_SUPPORT_FILEOUTPUT_H
