//===- dp/IR/Types.h - Element types and tensor types -----------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The element types dp knows (those of ONNX's TensorProto) and tensor types:
/// an element type and a shape. Shapes of graph tensors are always static;
/// only types inside attributes (ONNX TypeProto attributes, subgraph
/// summaries) may have unknown dimensions, written '?'.
///
//===----------------------------------------------------------------------===//

#ifndef DP_IR_TYPES_H
#define DP_IR_TYPES_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/Optional.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>

namespace dp {

/// Element types, numbered as ONNX's TensorProto::DataType so the importer
/// converts by value.
enum class DTypeKind : uint8_t {
  Undefined = 0,
  F32 = 1,
  U8 = 2,
  I8 = 3,
  U16 = 4,
  I16 = 5,
  I32 = 6,
  I64 = 7,
  String = 8,
  Bool = 9,
  F16 = 10,
  F64 = 11,
  U32 = 12,
  U64 = 13,
  C64 = 14,
  C128 = 15,
  BF16 = 16,
};

/// The largest DTypeKind value.
constexpr unsigned MaxDTypeKind = 16;

/// Short textual name: "f32", "i64", "bool", "?" for Undefined.
llvm::StringRef getDTypeName(DTypeKind K);
/// Inverse of getDTypeName (Undefined is not accepted).
llvm::Optional<DTypeKind> parseDTypeName(llvm::StringRef Name);
/// Bytes per element; 0 for String and Undefined, whose size is unknown.
unsigned getDTypeSize(DTypeKind K);
/// Whether \p V is a valid DTypeKind value (for converting from ONNX).
bool isValidDType(int64_t V);

/// Marks an unknown dimension in attribute types.
constexpr int64_t UnknownDim = -1;

/// An element type and a shape. Rank 0 is a scalar.
struct TensorType {
  DTypeKind DType = DTypeKind::Undefined;
  llvm::SmallVector<int64_t, 4> Dims;

  TensorType() = default;
  TensorType(DTypeKind DType, llvm::ArrayRef<int64_t> Dims)
      : DType(DType), Dims(Dims.begin(), Dims.end()) {}

  unsigned getRank() const { return Dims.size(); }
  bool isStatic() const;
  /// Number of elements, or None if a dimension is unknown or the product
  /// overflows int64.
  llvm::Optional<int64_t> getNumElements() const;
  /// Size in bytes, or None if unknown (unknown dims, string elements) or
  /// overflowing int64.
  llvm::Optional<int64_t> getSizeInBytes() const;

  bool operator==(const TensorType &O) const {
    return DType == O.DType && Dims == O.Dims;
  }
  bool operator!=(const TensorType &O) const { return !(*this == O); }
};

/// Writes "f32[1,3,224,224]"; "f32[]" for a scalar, '?' for unknown dims.
void printTensorType(llvm::raw_ostream &OS, const TensorType &T);
llvm::raw_ostream &operator<<(llvm::raw_ostream &OS, const TensorType &T);

} // namespace dp

#endif // DP_IR_TYPES_H
