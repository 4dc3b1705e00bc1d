//===- dp/Support/EnumNames.h - An enum's names in one table ----*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The names of an enum's values, written once as a table of
/// llvm::EnumEntry (LLVM's own form for enum names) and read both ways:
///
///   static constexpr EnumEntry<OptimizerKind> OptimizerNames[] = {
///       {"sgd", OptimizerKind::SGD}, {"adam", OptimizerKind::Adam}};
///   getEnumName(OptimizerNames, OptimizerKind::Adam)   // "adam"
///   parseEnumName(OptimizerNames, "sgd")               // OptimizerKind::SGD
///   listEnumNames(OptimizerNames, " or ")              // "sgd or adam"
///
/// so that printing, parsing and the list in an error message cannot
/// disagree. A table lists every value of its enum.
///
//===----------------------------------------------------------------------===//

#ifndef DP_SUPPORT_ENUMNAMES_H
#define DP_SUPPORT_ENUMNAMES_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/Optional.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/ScopedPrinter.h"

#include <string>

namespace dp {

using llvm::EnumEntry;

/// The name of \p Value in \p Table.
template <typename T>
llvm::StringRef getEnumName(llvm::ArrayRef<EnumEntry<T>> Table, T Value) {
  for (const EnumEntry<T> &E : Table)
    if (E.Value == Value)
      return E.Name;
  llvm_unreachable("an enum value missing from its name table");
}

/// The value named \p Name in \p Table, or None.
template <typename T>
llvm::Optional<T> parseEnumName(llvm::ArrayRef<EnumEntry<T>> Table,
                                llvm::StringRef Name) {
  for (const EnumEntry<T> &E : Table)
    if (E.Name == Name)
      return E.Value;
  return llvm::None;
}

/// The names in table order, "a, b or c" (\p Last joins the last two;
/// "|" gives "a|b|c").
template <typename T>
std::string listEnumNames(llvm::ArrayRef<EnumEntry<T>> Table,
                          llvm::StringRef Last = " or ") {
  llvm::StringRef Sep = Last == "|" ? "|" : ", ";
  std::string S;
  for (size_t I = 0, N = Table.size(); I != N; ++I) {
    if (I)
      S += (I + 1 == N ? Last : Sep).str();
    S += Table[I].Name.str();
  }
  return S;
}

} // namespace dp

#endif // DP_SUPPORT_ENUMNAMES_H
