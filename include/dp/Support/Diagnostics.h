//===- dp/Support/Diagnostics.h - Located user errors -----------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// User errors in dp are llvm::Error values that say where they are: the
/// file, optionally a line and column in it, and the node or tensor of the
/// graph they concern. Libraries create them; only tools print them, in the
/// form
///
///   dp-opt: model.onnx: node 'Conv_3': error: no device can hold 2.1 GiB
///   dp-opt: graph.dp:4:12: error: expected ')'
///
//===----------------------------------------------------------------------===//

#ifndef DP_SUPPORT_DIAGNOSTICS_H
#define DP_SUPPORT_DIAGNOSTICS_H

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

#include <string>

namespace dp {

/// Where a user error is. Every field is optional; an empty File is filled
/// in by the tool with the name of its input.
struct DiagLocation {
  std::string File;
  unsigned Line = 0;
  unsigned Column = 0;
  std::string Node;
  std::string Tensor;
};

/// An error in the user's input, with its location.
class LocatedError : public llvm::ErrorInfo<LocatedError> {
public:
  static char ID;

  LocatedError(DiagLocation Loc, const llvm::Twine &Message)
      : Loc(std::move(Loc)), Message(Message.str()) {}

  const DiagLocation &getLocation() const { return Loc; }
  llvm::StringRef getMessage() const { return Message; }

  /// Prints "file:line:col: node 'n': tensor 't': error: message", leaving
  /// out the parts that are not set.
  void log(llvm::raw_ostream &OS) const override;
  std::error_code convertToErrorCode() const override;

  /// Names \p File as the error's file if it names none yet.
  void setFileIfEmpty(llvm::StringRef File) {
    if (Loc.File.empty())
      Loc.File = File.str();
  }

private:
  DiagLocation Loc;
  std::string Message;
};

/// An error about the input as a whole.
llvm::Error makeError(const llvm::Twine &Message);
/// An error at a line and column of \p File.
llvm::Error makeFileError(llvm::StringRef File, unsigned Line, unsigned Column,
                          const llvm::Twine &Message);
/// An error about graph node \p Node.
llvm::Error makeNodeError(llvm::StringRef Node, const llvm::Twine &Message);
/// An error about tensor \p Tensor, produced or used by node \p Node (which
/// may be empty for graph inputs and weights).
llvm::Error makeTensorError(llvm::StringRef Node, llvm::StringRef Tensor,
                            const llvm::Twine &Message);

/// Collects independent user errors so that several are reported at once
/// (joinErrors), keeping the first \p Max and counting the rest.
class ErrorList {
public:
  explicit ErrorList(unsigned Max = 20) : Max(Max) {}
  ErrorList(const ErrorList &) = delete;
  ErrorList &operator=(const ErrorList &) = delete;
  ~ErrorList() {
    assert(!Count && "collected errors were never taken");
  }

  void add(llvm::Error E);
  bool empty() const { return Count == 0; }
  /// Returns the collected errors (success if none), plus one saying how
  /// many were left out, and starts over.
  llvm::Error take();

private:
  unsigned Max;
  unsigned Count = 0;
  llvm::Error Errors = llvm::Error::success();
};

/// \p Err with every error that names no file naming \p File: a
/// LocatedError gets it as its file, and any other error (LLVM's own, a
/// file that cannot be opened, ...) becomes a LocatedError of its text in
/// \p File.
llvm::Error nameFile(llvm::Error Err, llvm::StringRef File);

/// Prints every error in \p Err (a joinErrors list prints one line each) as
/// "<Tool>: <location>: error: <message>", naming \p DefaultFile where an
/// error names no file. Returns the number of errors printed.
unsigned printErrors(llvm::raw_ostream &OS, llvm::StringRef Tool,
                     llvm::StringRef DefaultFile, llvm::Error Err);

} // namespace dp

#endif // DP_SUPPORT_DIAGNOSTICS_H
