//===- Diagnostics.cpp - Located user errors ------------------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/Support/Diagnostics.h"

#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace dp {

char LocatedError::ID = 0;

void LocatedError::log(raw_ostream &OS) const {
  if (!Loc.File.empty()) {
    OS << Loc.File;
    if (Loc.Line) {
      OS << ':' << Loc.Line;
      if (Loc.Column)
        OS << ':' << Loc.Column;
    }
    OS << ": ";
  }
  if (!Loc.Node.empty())
    OS << "node '" << Loc.Node << "': ";
  if (!Loc.Tensor.empty())
    OS << "tensor '" << Loc.Tensor << "': ";
  OS << "error: " << Message;
}

std::error_code LocatedError::convertToErrorCode() const {
  return inconvertibleErrorCode();
}

Error makeError(const Twine &Message) {
  return make_error<LocatedError>(DiagLocation(), Message);
}

Error makeFileError(StringRef File, unsigned Line, unsigned Column,
                    const Twine &Message) {
  DiagLocation Loc;
  Loc.File = File.str();
  Loc.Line = Line;
  Loc.Column = Column;
  return make_error<LocatedError>(std::move(Loc), Message);
}

Error makeNodeError(StringRef Node, const Twine &Message) {
  DiagLocation Loc;
  Loc.Node = Node.str();
  return make_error<LocatedError>(std::move(Loc), Message);
}

Error makeTensorError(StringRef Node, StringRef Tensor, const Twine &Message) {
  DiagLocation Loc;
  Loc.Node = Node.str();
  Loc.Tensor = Tensor.str();
  return make_error<LocatedError>(std::move(Loc), Message);
}

void ErrorList::add(Error E) {
  if (!E)
    return;
  if (++Count <= Max)
    Errors = joinErrors(std::move(Errors), std::move(E));
  else
    consumeError(std::move(E));
}

Error ErrorList::take() {
  if (Count > Max)
    Errors = joinErrors(std::move(Errors),
                        makeError(Twine(Count - Max) + " more errors not shown"));
  Count = 0;
  return std::move(Errors);
}

Error nameFile(Error Err, StringRef File) {
  return handleErrors(
      std::move(Err),
      [&](std::unique_ptr<LocatedError> E) -> Error {
        E->setFileIfEmpty(File);
        return Error(std::move(E));
      },
      [&](const ErrorInfoBase &E) -> Error {
        // Errors from LLVM itself (a file that cannot be opened, ...) carry
        // their own text; they still name the input.
        DiagLocation Loc;
        Loc.File = File.str();
        return make_error<LocatedError>(std::move(Loc), E.message());
      });
}

unsigned printErrors(raw_ostream &OS, StringRef Tool, StringRef DefaultFile,
                     Error Err) {
  unsigned Count = 0;
  handleAllErrors(nameFile(std::move(Err), DefaultFile), [&](LocatedError &E) {
    OS << Tool << ": ";
    E.log(OS);
    OS << '\n';
    ++Count;
  });
  return Count;
}

} // namespace dp
