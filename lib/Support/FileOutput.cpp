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

using namespace llvm;

namespace dp {

Error writeFileAtomically(StringRef Path,
                          function_ref<void(raw_ostream &)> Write) {
  if (Path == "-") {
    Write(outs());
    outs().flush();
    return Error::success();
  }
  SmallString<256> Temp(Path);
  Temp += ".tmp-%%%%%%";
  int FD;
  if (std::error_code EC = sys::fs::createUniqueFile(Temp, FD, Temp))
    return makeFileError(Path, 0, 0, "cannot create the output: " +
                                         EC.message());
  {
    raw_fd_ostream OS(FD, /*shouldClose=*/true);
    Write(OS);
    OS.close();
    if (OS.has_error()) {
      std::string Msg = OS.error().message();
      OS.clear_error();
      sys::fs::remove(Temp);
      return makeFileError(Path, 0, 0, "cannot write the output: " + Msg);
    }
  }
  if (std::error_code EC = sys::fs::rename(Temp, Path)) {
    sys::fs::remove(Temp);
    return makeFileError(Path, 0, 0, "cannot write the output: " +
                                         EC.message());
  }
  return Error::success();
}

} // namespace dp
