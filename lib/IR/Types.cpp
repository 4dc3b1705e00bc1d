//===- Types.cpp - Element types and tensor types -------------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/IR/Types.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/MathExtras.h"

using namespace llvm;

namespace dp {

StringRef getDTypeName(DTypeKind K) {
  switch (K) {
  case DTypeKind::Undefined:
    return "?";
  case DTypeKind::F32:
    return "f32";
  case DTypeKind::U8:
    return "u8";
  case DTypeKind::I8:
    return "i8";
  case DTypeKind::U16:
    return "u16";
  case DTypeKind::I16:
    return "i16";
  case DTypeKind::I32:
    return "i32";
  case DTypeKind::I64:
    return "i64";
  case DTypeKind::String:
    return "string";
  case DTypeKind::Bool:
    return "bool";
  case DTypeKind::F16:
    return "f16";
  case DTypeKind::F64:
    return "f64";
  case DTypeKind::U32:
    return "u32";
  case DTypeKind::U64:
    return "u64";
  case DTypeKind::C64:
    return "c64";
  case DTypeKind::C128:
    return "c128";
  case DTypeKind::BF16:
    return "bf16";
  }
  llvm_unreachable("unknown DTypeKind");
}

Optional<DTypeKind> parseDTypeName(StringRef Name) {
  return StringSwitch<Optional<DTypeKind>>(Name)
      .Case("f32", DTypeKind::F32)
      .Case("u8", DTypeKind::U8)
      .Case("i8", DTypeKind::I8)
      .Case("u16", DTypeKind::U16)
      .Case("i16", DTypeKind::I16)
      .Case("i32", DTypeKind::I32)
      .Case("i64", DTypeKind::I64)
      .Case("string", DTypeKind::String)
      .Case("bool", DTypeKind::Bool)
      .Case("f16", DTypeKind::F16)
      .Case("f64", DTypeKind::F64)
      .Case("u32", DTypeKind::U32)
      .Case("u64", DTypeKind::U64)
      .Case("c64", DTypeKind::C64)
      .Case("c128", DTypeKind::C128)
      .Case("bf16", DTypeKind::BF16)
      .Default(None);
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
