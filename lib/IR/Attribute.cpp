//===- Attribute.cpp - Attribute values -----------------------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/IR/Attribute.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>

using namespace llvm;

namespace dp {

StringRef getAttrKindName(AttrKind K) {
  switch (K) {
  case AttrKind::Int:
    return "int";
  case AttrKind::Float:
    return "float";
  case AttrKind::String:
    return "string";
  case AttrKind::Ints:
    return "ints";
  case AttrKind::Floats:
    return "floats";
  case AttrKind::Strings:
    return "strings";
  case AttrKind::Tensor:
    return "tensor";
  case AttrKind::Tensors:
    return "tensors";
  case AttrKind::Graph:
    return "graph";
  case AttrKind::Graphs:
    return "graphs";
  case AttrKind::Type:
    return "type";
  case AttrKind::Types:
    return "types";
  }
  llvm_unreachable("unknown AttrKind");
}

bool Attribute::isList() const {
  switch (Kind) {
  case AttrKind::Ints:
  case AttrKind::Floats:
  case AttrKind::Strings:
  case AttrKind::Tensors:
  case AttrKind::Graphs:
  case AttrKind::Types:
    return true;
  default:
    return false;
  }
}

static std::vector<NamedAttribute>::iterator
findSlot(std::vector<NamedAttribute> &Attrs, StringRef Name) {
  return std::lower_bound(
      Attrs.begin(), Attrs.end(), Name,
      [](const NamedAttribute &A, StringRef N) { return A.Name < N; });
}

void AttributeList::set(StringRef Name, Attribute V) {
  auto It = findSlot(Attrs, Name);
  if (It != Attrs.end() && It->Name == Name) {
    It->Value = std::move(V);
    return;
  }
  Attrs.insert(It, NamedAttribute{Name.str(), std::move(V)});
}

const Attribute *AttributeList::get(StringRef Name) const {
  auto It = findSlot(const_cast<std::vector<NamedAttribute> &>(Attrs), Name);
  if (It != Attrs.end() && It->Name == Name)
    return &It->Value;
  return nullptr;
}

bool AttributeList::erase(StringRef Name) {
  auto It = findSlot(Attrs, Name);
  if (It == Attrs.end() || It->Name != Name)
    return false;
  Attrs.erase(It);
  return true;
}

bool AttributeList::operator==(const AttributeList &O) const {
  return Attrs.size() == O.Attrs.size() &&
         std::equal(Attrs.begin(), Attrs.end(), O.Attrs.begin(),
                    [](const NamedAttribute &A, const NamedAttribute &B) {
                      return A.Name == B.Name && A.Value == B.Value;
                    });
}

} // namespace dp
