//===- OpAttributes.h - An op's attributes, with defaults -------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Reading an op's attributes as the cost models do: a missing attribute,
/// or one of another kind than asked for, reads as the ONNX default the
/// caller gives. Only lib/Cost includes this header.
///
//===----------------------------------------------------------------------===//

#ifndef DP_LIB_COST_OPATTRIBUTES_H
#define DP_LIB_COST_OPATTRIBUTES_H

#include "dp/IR/Graph.h"

#include "llvm/ADT/StringRef.h"

#include <cstdint>

namespace dp {

/// \p O's attribute \p Name when it is of kind \p Kind, else null.
inline const Attribute *getAttrOfKind(const Op &O, llvm::StringRef Name,
                                      AttrKind Kind) {
  const Attribute *A = O.Attrs.get(Name);
  return A && A->getKind() == Kind ? A : nullptr;
}

inline int64_t getIntAttr(const Op &O, llvm::StringRef Name, int64_t Default) {
  const Attribute *A = getAttrOfKind(O, Name, AttrKind::Int);
  return A ? A->getInt() : Default;
}

inline double getFloatAttr(const Op &O, llvm::StringRef Name, double Default) {
  const Attribute *A = getAttrOfKind(O, Name, AttrKind::Float);
  return A ? A->getFloat() : Default;
}

inline llvm::StringRef getStringAttr(const Op &O, llvm::StringRef Name,
                                     llvm::StringRef Default) {
  const Attribute *A = getAttrOfKind(O, Name, AttrKind::String);
  return A ? llvm::StringRef(A->getString()) : Default;
}

} // namespace dp

#endif // DP_LIB_COST_OPATTRIBUTES_H
