//===- DiagnosticsTestUtil.h - Inspecting located errors in tests -*- C++ -*-//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Splits an llvm::Error into its LocatedErrors so that unit tests can check
/// where each error points, and prints them for failure messages.
///
//===----------------------------------------------------------------------===//

#ifndef DP_UNITTESTS_DIAGNOSTICSTESTUTIL_H
#define DP_UNITTESTS_DIAGNOSTICSTESTUTIL_H

#include "dp/Support/Diagnostics.h"

#include "gtest/gtest.h"

#include <string>
#include <vector>

namespace dp {
namespace test {

/// One reported error.
struct Diag {
  DiagLocation Loc;
  std::string Message;
};

/// Splits \p Err into its LocatedErrors, failing the test on any other kind.
inline std::vector<Diag> collectErrors(llvm::Error Err) {
  std::vector<Diag> Diags;
  llvm::handleAllErrors(
      std::move(Err),
      [&](const LocatedError &E) {
        Diags.push_back({E.getLocation(), E.getMessage().str()});
      },
      [&](const llvm::ErrorInfoBase &E) {
        ADD_FAILURE() << "not a LocatedError: " << E.message();
      });
  return Diags;
}

/// The message of the one error \p R holds; "no error" when it holds a
/// value, "several errors" when it holds more than one.
template <typename T> std::string getOnlyError(llvm::Expected<T> R) {
  if (R)
    return "no error";
  std::vector<Diag> Diags = collectErrors(R.takeError());
  return Diags.size() == 1 ? Diags[0].Message : "several errors";
}

/// "file:line:col: node 'n' tensor 't': message", one line each.
inline std::string describe(const std::vector<Diag> &Diags) {
  std::string S;
  for (const Diag &D : Diags)
    S += D.Loc.File + ":" + std::to_string(D.Loc.Line) + ":" +
         std::to_string(D.Loc.Column) + ": node '" + D.Loc.Node +
         "' tensor '" + D.Loc.Tensor + "': " + D.Message + "\n";
  return S;
}

} // namespace test
} // namespace dp

#endif // DP_UNITTESTS_DIAGNOSTICSTESTUTIL_H
