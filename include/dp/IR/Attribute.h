//===- dp/IR/Attribute.h - Attribute values ---------------------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Attribute values of ops (the ONNX node attributes) and annotations (the
/// facts later passes attach to ops and graphs: costs, group, device). Both
/// are sorted lists of named values, so that their printed order never
/// depends on the order they were set in.
///
/// Tensor-valued ONNX attributes keep their type only (weight bytes are
/// never read); subgraph attributes (If/Loop/Scan bodies) are kept as a
/// GraphSummary: how many nodes of which op types the body holds.
///
//===----------------------------------------------------------------------===//

#ifndef DP_IR_ATTRIBUTE_H
#define DP_IR_ATTRIBUTE_H

#include "dp/IR/Types.h"

#include "llvm/ADT/StringRef.h"

#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace dp {

/// What a subgraph attribute summarizes: its node count (nested bodies
/// included), its input and output counts, and how many nodes of each op
/// type it holds (nested bodies included), sorted by op type.
struct GraphSummary {
  int64_t Nodes = 0;
  int64_t Inputs = 0;
  int64_t Outputs = 0;
  /// (qualified op type, count), sorted by op type.
  std::vector<std::pair<std::string, int64_t>> OpCounts;

  bool operator==(const GraphSummary &O) const {
    return Nodes == O.Nodes && Inputs == O.Inputs && Outputs == O.Outputs &&
           OpCounts == O.OpCounts;
  }
};

enum class AttrKind : uint8_t {
  Int,
  Float,
  String,
  Ints,
  Floats,
  Strings,
  /// A tensor value, kept by type only.
  Tensor,
  Tensors,
  Graph,
  Graphs,
  /// An ONNX TypeProto (a tensor type; unknown dims allowed).
  Type,
  Types,
};

/// The textual name of a list kind used to print empty lists ("ints").
llvm::StringRef getAttrKindName(AttrKind K);

/// A typed attribute value. Floats are stored as double; values imported
/// from ONNX's float attributes are widened through their shortest decimal
/// form, so they print as written.
class Attribute {
public:
  Attribute() : Kind(AttrKind::Int), Value(int64_t(0)) {}

  static Attribute getInt(int64_t V) { return {AttrKind::Int, V}; }
  static Attribute getFloat(double V) { return {AttrKind::Float, V}; }
  static Attribute getString(std::string V) {
    return {AttrKind::String, std::move(V)};
  }
  static Attribute getInts(std::vector<int64_t> V) {
    return {AttrKind::Ints, std::move(V)};
  }
  static Attribute getFloats(std::vector<double> V) {
    return {AttrKind::Floats, std::move(V)};
  }
  static Attribute getStrings(std::vector<std::string> V) {
    return {AttrKind::Strings, std::move(V)};
  }
  static Attribute getTensor(TensorType V) {
    return {AttrKind::Tensor, std::vector<TensorType>{std::move(V)}};
  }
  static Attribute getTensors(std::vector<TensorType> V) {
    return {AttrKind::Tensors, std::move(V)};
  }
  static Attribute getType(TensorType V) {
    return {AttrKind::Type, std::vector<TensorType>{std::move(V)}};
  }
  static Attribute getTypes(std::vector<TensorType> V) {
    return {AttrKind::Types, std::move(V)};
  }
  static Attribute getGraph(GraphSummary V) {
    return {AttrKind::Graph, std::vector<GraphSummary>{std::move(V)}};
  }
  static Attribute getGraphs(std::vector<GraphSummary> V) {
    return {AttrKind::Graphs, std::move(V)};
  }

  AttrKind getKind() const { return Kind; }
  bool isList() const;

  int64_t getInt() const { return std::get<int64_t>(Value); }
  double getFloat() const { return std::get<double>(Value); }
  const std::string &getString() const { return std::get<std::string>(Value); }
  const std::vector<int64_t> &getInts() const {
    return std::get<std::vector<int64_t>>(Value);
  }
  const std::vector<double> &getFloats() const {
    return std::get<std::vector<double>>(Value);
  }
  const std::vector<std::string> &getStrings() const {
    return std::get<std::vector<std::string>>(Value);
  }
  /// The tensor types of Tensor, Tensors, Type and Types attributes (one
  /// element for the singular kinds).
  const std::vector<TensorType> &getTensorTypes() const {
    return std::get<std::vector<TensorType>>(Value);
  }
  /// The summaries of Graph and Graphs attributes.
  const std::vector<GraphSummary> &getGraphSummaries() const {
    return std::get<std::vector<GraphSummary>>(Value);
  }

  bool operator==(const Attribute &O) const {
    return Kind == O.Kind && Value == O.Value;
  }
  bool operator!=(const Attribute &O) const { return !(*this == O); }

private:
  using Storage =
      std::variant<int64_t, double, std::string, std::vector<int64_t>,
                   std::vector<double>, std::vector<std::string>,
                   std::vector<TensorType>, std::vector<GraphSummary>>;
  template <typename T>
  Attribute(AttrKind Kind, T &&V) : Kind(Kind), Value(std::forward<T>(V)) {}

  AttrKind Kind;
  Storage Value;
};

/// A named attribute.
struct NamedAttribute {
  std::string Name;
  Attribute Value;
};

/// Attributes sorted by name, names unique.
class AttributeList {
public:
  /// Sets \p Name to \p V, replacing an existing value.
  void set(llvm::StringRef Name, Attribute V);
  /// Returns the value of \p Name, or null.
  const Attribute *get(llvm::StringRef Name) const;
  bool contains(llvm::StringRef Name) const { return get(Name) != nullptr; }
  /// Removes \p Name; returns whether it was there.
  bool erase(llvm::StringRef Name);

  bool empty() const { return Attrs.empty(); }
  size_t size() const { return Attrs.size(); }
  std::vector<NamedAttribute>::const_iterator begin() const {
    return Attrs.begin();
  }
  std::vector<NamedAttribute>::const_iterator end() const {
    return Attrs.end();
  }

  bool operator==(const AttributeList &O) const;
  bool operator!=(const AttributeList &O) const { return !(*this == O); }

private:
  std::vector<NamedAttribute> Attrs;
};

} // namespace dp

#endif // DP_IR_ATTRIBUTE_H
