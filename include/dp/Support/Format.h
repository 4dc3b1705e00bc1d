//===- dp/Support/Format.h - Number formatting helpers ----------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Formatting of byte counts and floating-point numbers shared by the IR
/// printer and the reports. Number output is locale-independent and exact.
///
//===----------------------------------------------------------------------===//

#ifndef DP_SUPPORT_FORMAT_H
#define DP_SUPPORT_FORMAT_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <limits>
#include <string>

namespace dp {

/// Writes \p Bytes with a binary unit, e.g. "12.0 GiB", "512 B".
void writeBytes(llvm::raw_ostream &OS, uint64_t Bytes);
std::string formatBytes(uint64_t Bytes);

/// \p Items as a list for a message, "a, b or c" (\p Last joins the last
/// two).
std::string formatList(llvm::ArrayRef<std::string> Items,
                       llvm::StringRef Last = " or ");

/// Writes the shortest decimal form of \p V that reads back as the same
/// double; it always contains '.', 'e', "inf" or "nan", so it never reads
/// as an integer.
void writeDouble(llvm::raw_ostream &OS, double V);

/// Returns the double whose shortest decimal form is that of the float
/// \p V, so that 1e-5f becomes 1e-05 and not 9.99999974737875e-06.
double floatToShortestDouble(float V);

/// Parses a complete decimal floating-point number ("1.5", "-2e-3", "inf",
/// "-inf", "nan"). Returns false if \p S is not one.
bool parseDouble(llvm::StringRef S, double &V);

/// \p Text broken into lines of at most \p Width columns, each line (the
/// first too) indented by \p Indent spaces; lines break after a space or
/// a comma (option lists such as "batch=N,dim=NAME:N" have no spaces). A
/// word longer than a line stays whole. No newline at the end.
std::string wrapText(llvm::StringRef Text, unsigned Indent, unsigned Width);

/// Whether \p V is a number greater than 0 and less than infinity (a time,
/// a rate, a budget).
inline bool isPositiveFinite(double V) {
  return V > 0 && V < std::numeric_limits<double>::infinity();
}

} // namespace dp

#endif // DP_SUPPORT_FORMAT_H
