//===- Format.cpp - Number formatting helpers -----------------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/Support/Format.h"

#include "llvm/Support/Format.h"

#include <charconv>
#include <cmath>
#include <limits>

using namespace llvm;

namespace dp {

void writeBytes(raw_ostream &OS, uint64_t Bytes) {
  static const char *const Units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  if (Bytes < 1024) {
    OS << Bytes << " B";
    return;
  }
  double V = static_cast<double>(Bytes);
  unsigned U = 0;
  while (V >= 1024.0 && U + 1 < std::size(Units)) {
    V /= 1024.0;
    ++U;
  }
  OS << format("%.1f ", V) << Units[U];
}

std::string formatBytes(uint64_t Bytes) {
  std::string S;
  raw_string_ostream OS(S);
  writeBytes(OS, Bytes);
  return OS.str();
}

std::string formatList(ArrayRef<std::string> Items, StringRef Last) {
  std::string S;
  for (size_t I = 0, N = Items.size(); I != N; ++I) {
    if (I)
      S += I + 1 == N ? Last.str() : ", ";
    S += Items[I];
  }
  return S;
}

void writeDouble(raw_ostream &OS, double V) {
  if (std::isnan(V)) {
    OS << "nan";
    return;
  }
  if (std::isinf(V)) {
    OS << (V < 0 ? "-inf" : "inf");
    return;
  }
  char Buf[64];
  auto Res = std::to_chars(Buf, Buf + sizeof(Buf), V);
  assert(Res.ec == std::errc() && "buffer too small for a double");
  StringRef S(Buf, Res.ptr - Buf);
  OS << S;
  if (S.find_first_of(".e") == StringRef::npos)
    OS << ".0";
}

double floatToShortestDouble(float V) {
  if (!std::isfinite(V))
    return static_cast<double>(V);
  char Buf[64];
  auto Res = std::to_chars(Buf, Buf + sizeof(Buf), V);
  assert(Res.ec == std::errc() && "buffer too small for a float");
  double D = 0;
  std::from_chars(Buf, Res.ptr, D);
  return D;
}

std::string wrapText(StringRef Text, unsigned Indent, unsigned Width) {
  std::string Out, Line(Indent, ' ');
  bool LineEmpty = true;
  while (!Text.empty()) {
    size_t End = Text.find_first_of(" ,");
    StringRef Word = End == StringRef::npos ? Text : Text.take_front(End + 1);
    Text = Text.drop_front(Word.size());
    if (!LineEmpty && Line.size() + Word.rtrim(' ').size() > Width) {
      Out += StringRef(Line).rtrim(' ');
      Out += '\n';
      Line.assign(Indent, ' ');
      LineEmpty = true;
    }
    if (LineEmpty && Word.trim(' ').empty())
      continue;
    Line += Word.str();
    LineEmpty = false;
  }
  Out += StringRef(Line).rtrim(' ');
  return Out;
}

bool parseDouble(StringRef S, double &V) {
  if (S == "nan") {
    V = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  if (S == "inf" || S == "-inf") {
    V = S[0] == '-' ? -std::numeric_limits<double>::infinity()
                    : std::numeric_limits<double>::infinity();
    return true;
  }
  if (S.empty())
    return false;
  // from_chars accepts no leading '+' and no "inf"/"nan" spellings beyond
  // those handled above, which keeps the accepted syntax small.
  auto Res = std::from_chars(S.begin(), S.end(), V);
  return Res.ec == std::errc() && Res.ptr == S.end();
}

} // namespace dp
