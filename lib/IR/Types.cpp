//===- Types.cpp - Element types and tensor types -------------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/IR/Types.h"
#include "dp/Support/EnumNames.h"

#include "llvm/Support/MathExtras.h"

using namespace llvm;

namespace dp {

static constexpr EnumEntry<DTypeKind> DTypeNames[] = {
    {"?", DTypeKind::Undefined},   {"f32", DTypeKind::F32},
    {"u8", DTypeKind::U8},         {"i8", DTypeKind::I8},
    {"u16", DTypeKind::U16},       {"i16", DTypeKind::I16},
    {"i32", DTypeKind::I32},       {"i64", DTypeKind::I64},
    {"string", DTypeKind::String}, {"bool", DTypeKind::Bool},
    {"f16", DTypeKind::F16},       {"f64", DTypeKind::F64},
    {"u32", DTypeKind::U32},       {"u64", DTypeKind::U64},
    {"c64", DTypeKind::C64},       {"c128", DTypeKind::C128},
    {"bf16", DTypeKind::BF16},
};

StringRef getDTypeName(DTypeKind K) {
  return getEnumName<DTypeKind>(DTypeNames, K);
}

Optional<DTypeKind> parseDTypeName(StringRef Name) {
  // "?" names no type a file may spell.
  if (Name == getDTypeName(DTypeKind::Undefined))
    return None;
  return parseEnumName<DTypeKind>(DTypeNames, Name);
}

unsigned getDTypeSize(DTypeKind K) {
  switch (K) {
  case DTypeKind::Undefined:
  case DTypeKind::String:
    return 0;
  case DTypeKind::U8:
  case DTypeKind::I8:
  case DTypeKind::Bool:
    return 1;
  case DTypeKind::U16:
  case DTypeKind::I16:
  case DTypeKind::F16:
  case DTypeKind::BF16:
    return 2;
  case DTypeKind::F32:
  case DTypeKind::I32:
  case DTypeKind::U32:
    return 4;
  case DTypeKind::I64:
  case DTypeKind::U64:
  case DTypeKind::F64:
  case DTypeKind::C64:
    return 8;
  case DTypeKind::C128:
    return 16;
  }
  llvm_unreachable("unknown DTypeKind");
}

bool isValidDType(int64_t V) { return V >= 1 && V <= int64_t(MaxDTypeKind); }

bool TensorType::isStatic() const {
  for (int64_t D : Dims)
    if (D < 0)
      return false;
  return true;
}

Optional<int64_t> TensorType::getNumElements() const {
  int64_t N = 1;
  for (int64_t D : Dims) {
    if (D < 0)
      return None;
    if (MulOverflow(N, D, N))
      return None;
  }
  return N;
}

Optional<int64_t> TensorType::getSizeInBytes() const {
  unsigned Size = getDTypeSize(DType);
  Optional<int64_t> N = getNumElements();
  if (!Size || !N)
    return None;
  int64_t Bytes;
  if (MulOverflow(*N, int64_t(Size), Bytes))
    return None;
  return Bytes;
}

void printTensorType(raw_ostream &OS, const TensorType &T) {
  OS << getDTypeName(T.DType) << '[';
  for (unsigned I = 0, E = T.Dims.size(); I != E; ++I) {
    if (I)
      OS << ',';
    if (T.Dims[I] < 0)
      OS << '?';
    else
      OS << T.Dims[I];
  }
  OS << ']';
}

raw_ostream &operator<<(raw_ostream &OS, const TensorType &T) {
  printTensorType(OS, T);
  return OS;
}

} // namespace dp
