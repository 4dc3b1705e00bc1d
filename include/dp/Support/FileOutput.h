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
/// A tool makes the files of one run appear together, or not at all, with
/// an OutputTransaction: while one is open, writeFileAtomically keeps each
/// temporary file until the tool commits the transaction at the end of a
/// successful run; a run that fails before that removes them, so that
/// every target stays as it was.
///
//===----------------------------------------------------------------------===//

#ifndef DP_SUPPORT_FILEOUTPUT_H
#define DP_SUPPORT_FILEOUTPUT_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace dp {

/// Writes \p Path atomically with \p Write ("-" is standard output). Errors
/// name the path. Targets that exist and are not regular files (/dev/null,
/// a pipe) are written in place. Inside an OutputTransaction the target is
/// only replaced when the transaction commits.
llvm::Error
writeFileAtomically(llvm::StringRef Path,
                    llvm::function_ref<void(llvm::raw_ostream &)> Write);

/// The output files of one run of a tool. While it is open (the innermost
/// one on this thread), writeFileAtomically writes each file to a
/// temporary beside its target, or for standard output and non-regular
/// targets to memory, and commit() puts them all in place in the order
/// they were written. Destroying it uncommitted removes the temporaries:
/// no target was touched. A file written twice keeps its last content.
class OutputTransaction {
public:
  OutputTransaction();
  ~OutputTransaction();
  OutputTransaction(const OutputTransaction &) = delete;
  OutputTransaction &operator=(const OutputTransaction &) = delete;

  /// Puts every file in place and closes the transaction. Errors name the
  /// file; the files not yet in place when one fails are dropped.
  llvm::Error commit();

  /// The open transaction of this thread, or null.
  static OutputTransaction *getCurrent();

  /// A file written inside the transaction: a temporary file to rename
  /// over Target, or (when Temp is empty) Content to write to Target.
  struct PendingFile {
    std::string Target;
    std::string Temp;
    std::string Content;
  };
  /// Takes \p F, replacing a file pending for the same target.
  void add(PendingFile F);

  /// Keeps \p Line ("emit: wrote FILE (...)\n") for the tool to print once
  /// commit() succeeded: a run that fails must not say it wrote files that
  /// it then leaves as they were.
  void addNote(std::string Line) { Notes.push_back(std::move(Line)); }
  /// The lines given to addNote, in order.
  llvm::ArrayRef<std::string> getNotes() const { return Notes; }

private:
  void discard();

  std::vector<PendingFile> Files;
  std::vector<std::string> Notes;
  OutputTransaction *Outer;
  bool Open = true;
};

} // namespace dp

#endif // DP_SUPPORT_FILEOUTPUT_H
