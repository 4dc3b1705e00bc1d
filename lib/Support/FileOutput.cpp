//===- FileOutput.cpp - Writing output files safely -----------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/Support/FileOutput.h"
#include "dp/Support/Diagnostics.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Signals.h"

using namespace llvm;

namespace dp {

static thread_local OutputTransaction *CurrentTransaction = nullptr;

/// Whether \p Path names something that exists and is not a regular file
/// (after symbolic links): a device such as /dev/null, a pipe. Renaming a
/// temporary over it would replace it, so it is written in place.
static bool isSpecialFile(StringRef Path) {
  // /dev/stdout and /proc/self/fd/N name whatever the descriptor is open
  // on, which a rename would not replace.
  if (Path.startswith("/dev/") || Path.startswith("/proc/"))
    return true;
  sys::fs::file_status Status;
  if (sys::fs::status(Path, Status, /*Follow=*/true))
    return false;
  return sys::fs::exists(Status) &&
         Status.type() != sys::fs::file_type::regular_file &&
         Status.type() != sys::fs::file_type::directory_file;
}

/// Writes \p Content to \p Path in place ("-": standard output).
static Error writeInPlace(StringRef Path, StringRef Content) {
  if (Path == "-") {
    outs() << Content;
    outs().flush();
    if (outs().has_error()) {
      std::string Msg = outs().error().message();
      outs().clear_error();
      return makeFileError("<stdout>", 0, 0, "cannot write the output: " + Msg);
    }
    return Error::success();
  }
  std::error_code EC;
  raw_fd_ostream OS(Path, EC, sys::fs::OF_None);
  if (EC)
    return makeFileError(Path, 0, 0, "cannot open the output: " + EC.message());
  OS << Content;
  OS.close();
  if (OS.has_error()) {
    std::string Msg = OS.error().message();
    OS.clear_error();
    return makeFileError(Path, 0, 0, "cannot write the output: " + Msg);
  }
  return Error::success();
}

/// Writes \p Write's output to a new temporary file beside \p Path and
/// returns its name. The temporary is removed if the process is killed.
static Expected<std::string>
writeTemporary(StringRef Path, function_ref<void(raw_ostream &)> Write) {
  // Beside the file a symbolic link points to, so that the rename replaces
  // the file and keeps the link.
  SmallString<256> Target(Path);
  if (sys::fs::is_symlink_file(Path)) {
    SmallString<256> Real;
    if (!sys::fs::real_path(Path, Real))
      Target = Real;
  }
  SmallString<256> Temp(Target);
  Temp += ".tmp-%%%%%%";
  int FD;
  if (std::error_code EC = sys::fs::createUniqueFile(Temp, FD, Temp))
    return makeFileError(Path, 0, 0,
                         "cannot create the output: " + EC.message());
  sys::RemoveFileOnSignal(Temp);
  raw_fd_ostream OS(FD, /*shouldClose=*/true);
  Write(OS);
  OS.close();
  if (OS.has_error()) {
    std::string Msg = OS.error().message();
    OS.clear_error();
    sys::fs::remove(Temp);
    sys::DontRemoveFileOnSignal(Temp);
    return makeFileError(Path, 0, 0, "cannot write the output: " + Msg);
  }
  return std::string(Temp);
}

/// Renames the temporary \p Temp over \p Path (or, for a symbolic link, the
/// file it points to).
static Error renameOver(StringRef Path, StringRef Temp) {
  SmallString<256> Target(Path);
  if (sys::fs::is_symlink_file(Path)) {
    SmallString<256> Real;
    if (!sys::fs::real_path(Path, Real))
      Target = Real;
  }
  std::error_code EC = sys::fs::rename(Temp, Target);
  if (EC)
    sys::fs::remove(Temp);
  sys::DontRemoveFileOnSignal(Temp);
  if (EC)
    return makeFileError(Path, 0, 0,
                         "cannot write the output: " + EC.message());
  return Error::success();
}

Error writeFileAtomically(StringRef Path,
                          function_ref<void(raw_ostream &)> Write) {
  OutputTransaction *T = OutputTransaction::getCurrent();
  if (Path == "-" || isSpecialFile(Path)) {
    std::string Content;
    raw_string_ostream OS(Content);
    Write(OS);
    OS.flush();
    if (T) {
      T->add({Path.str(), std::string(), std::move(Content)});
      return Error::success();
    }
    return writeInPlace(Path, Content);
  }
  // Caught now rather than when a transaction renames its files.
  if (sys::fs::is_directory(Path))
    return makeFileError(Path, 0, 0,
                         "cannot write the output: it is a directory");
  Expected<std::string> Temp = writeTemporary(Path, Write);
  if (!Temp)
    return Temp.takeError();
  if (T) {
    T->add({Path.str(), std::move(*Temp), std::string()});
    return Error::success();
  }
  return renameOver(Path, *Temp);
}

OutputTransaction::OutputTransaction() : Outer(CurrentTransaction) {
  CurrentTransaction = this;
}

OutputTransaction::~OutputTransaction() {
  discard();
  if (Open)
    CurrentTransaction = Outer;
}

OutputTransaction *OutputTransaction::getCurrent() {
  return CurrentTransaction;
}

void OutputTransaction::add(PendingFile F) {
  for (auto It = Files.begin(); It != Files.end(); ++It) {
    if (It->Target != F.Target)
      continue;
    if (!It->Temp.empty()) {
      sys::fs::remove(It->Temp);
      sys::DontRemoveFileOnSignal(It->Temp);
    }
    Files.erase(It);
    break;
  }
  Files.push_back(std::move(F));
}

void OutputTransaction::discard() {
  for (const PendingFile &F : Files) {
    if (F.Temp.empty())
      continue;
    sys::fs::remove(F.Temp);
    sys::DontRemoveFileOnSignal(F.Temp);
  }
  Files.clear();
}

Error OutputTransaction::commit() {
  assert(Open && CurrentTransaction == this &&
         "commit the innermost open transaction once");
  CurrentTransaction = Outer;
  Open = false;
  std::vector<PendingFile> ToCommit = std::move(Files);
  Files.clear();
  for (size_t I = 0, E = ToCommit.size(); I != E; ++I) {
    const PendingFile &F = ToCommit[I];
    Error Err = F.Temp.empty() ? writeInPlace(F.Target, F.Content)
                               : renameOver(F.Target, F.Temp);
    if (Err) {
      // What is left is dropped, as if the run had failed before it.
      Files.assign(ToCommit.begin() + I + 1, ToCommit.end());
      discard();
      return Err;
    }
  }
  return Error::success();
}

} // namespace dp
