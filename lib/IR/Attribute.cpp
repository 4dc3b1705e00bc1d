//===- Attribute.cpp - Attribute values -----------------------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/IR/Attribute.h"
#include "dp/Support/EnumNames.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>

using namespace llvm;

namespace dp {

static constexpr EnumEntry<AttrKind> AttrKindNames[] = {
    {"int", AttrKind::Int},       {"float", AttrKind::Float},
    {"string", AttrKind::String}, {"ints", AttrKind::Ints},
    {"floats", AttrKind::Floats}, {"strings", AttrKind::Strings},
    {"tensor", AttrKind::Tensor}, {"tensors", AttrKind::Tensors},
    {"graph", AttrKind::Graph},   {"graphs", AttrKind::Graphs},
    {"type", AttrKind::Type},     {"types", AttrKind::Types},
};

StringRef getAttrKindName(AttrKind K) {
  return getEnumName<AttrKind>(AttrKindNames, K);
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
