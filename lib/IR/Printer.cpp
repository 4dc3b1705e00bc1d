//===- Printer.cpp - Printing the textual form ----------------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/IR/TextFormat.h"
#include "dp/Support/Format.h"

#include "llvm/ADT/StringExtras.h"

using namespace llvm;

namespace dp {

/// Characters allowed in a bare name after '%' or '@'.
static bool isNameChar(char C) {
  return isAlnum(C) || C == '_' || C == '.' || C == '$' || C == '/' ||
         C == '-';
}

/// A bare word: a letter or '_' followed by letters, digits, '_' and '.'.
static bool isBareWord(StringRef S) {
  if (S.empty() || !(isAlpha(S[0]) || S[0] == '_'))
    return false;
  return all_of(S, [](char C) { return isAlnum(C) || C == '_' || C == '.'; });
}

static void printQuoted(raw_ostream &OS, StringRef S) {
  OS << '"';
  for (unsigned char C : S) {
    switch (C) {
    case '"':
      OS << "\\\"";
      break;
    case '\\':
      OS << "\\\\";
      break;
    case '\n':
      OS << "\\n";
      break;
    case '\t':
      OS << "\\t";
      break;
    default:
      if (C >= 0x20 && C < 0x7f)
        OS << C;
      else
        OS << "\\x" << hexdigit(C >> 4, /*LowerCase=*/true)
           << hexdigit(C & 15, /*LowerCase=*/true);
    }
  }
  OS << '"';
}

/// Writes a tensor or op name: bare if every character may stand bare.
static void printName(raw_ostream &OS, StringRef S) {
  if (!S.empty() && all_of(S, isNameChar))
    OS << S;
  else
    printQuoted(OS, S);
}

void printIdentifier(raw_ostream &OS, StringRef Name) {
  if (isBareWord(Name))
    OS << Name;
  else
    printQuoted(OS, Name);
}

static void printSummary(raw_ostream &OS, const GraphSummary &S) {
  OS << "graph<nodes = " << S.Nodes << ", inputs = " << S.Inputs
     << ", outputs = " << S.Outputs << ", ops = {";
  ListSeparator LS;
  for (const auto &[Type, Count] : S.OpCounts) {
    OS << LS;
    printIdentifier(OS, Type);
    OS << " = " << Count;
  }
  OS << "}>";
}

template <typename T, typename Fn>
static void printList(raw_ostream &OS, AttrKind K, const std::vector<T> &V,
                      Fn PrintOne) {
  if (V.empty()) {
    OS << getAttrKindName(K) << "[]";
    return;
  }
  OS << '[';
  ListSeparator LS;
  for (const T &E : V) {
    OS << LS;
    PrintOne(E);
  }
  OS << ']';
}

void printAttribute(raw_ostream &OS, const Attribute &A) {
  auto PrintType = [&](StringRef Prefix, const TensorType &T) {
    OS << Prefix << '<' << T << '>';
  };
  switch (A.getKind()) {
  case AttrKind::Int:
    OS << A.getInt();
    return;
  case AttrKind::Float:
    writeDouble(OS, A.getFloat());
    return;
  case AttrKind::String:
    printQuoted(OS, A.getString());
    return;
  case AttrKind::Ints:
    printList(OS, A.getKind(), A.getInts(), [&](int64_t V) { OS << V; });
    return;
  case AttrKind::Floats:
    printList(OS, A.getKind(), A.getFloats(),
              [&](double V) { writeDouble(OS, V); });
    return;
  case AttrKind::Strings:
    printList(OS, A.getKind(), A.getStrings(),
              [&](const std::string &V) { printQuoted(OS, V); });
    return;
  case AttrKind::Tensor:
    PrintType("tensor", A.getTensorTypes().front());
    return;
  case AttrKind::Type:
    PrintType("type", A.getTensorTypes().front());
    return;
  case AttrKind::Tensors:
  case AttrKind::Types: {
    StringRef Prefix = A.getKind() == AttrKind::Tensors ? "tensor" : "type";
    printList(OS, A.getKind(), A.getTensorTypes(),
              [&](const TensorType &T) { PrintType(Prefix, T); });
    return;
  }
  case AttrKind::Graph:
    printSummary(OS, A.getGraphSummaries().front());
    return;
  case AttrKind::Graphs:
    printList(OS, A.getKind(), A.getGraphSummaries(),
              [&](const GraphSummary &S) { printSummary(OS, S); });
    return;
  }
  llvm_unreachable("unknown AttrKind");
}

static void printAttributeList(raw_ostream &OS, const AttributeList &L,
                               char Open, char Close) {
  OS << Open;
  ListSeparator LS;
  for (const NamedAttribute &A : L) {
    OS << LS;
    printIdentifier(OS, A.Name);
    OS << " = ";
    printAttribute(OS, A.Value);
  }
  OS << Close;
}

static void printTensorRef(raw_ostream &OS, const Graph &G, TensorId T) {
  if (T == NoId) {
    OS << "none";
    return;
  }
  OS << '%';
  printName(OS, G.getTensor(T).Name);
}

void printGraph(raw_ostream &OS, const Graph &G) {
  OS << "dp.graph @";
  printName(OS, G.getName().empty() ? StringRef("main") : G.getName());
  OS << " {\n";
  for (const OpsetImport &O : G.getOpsets()) {
    OS << "  opset ";
    printQuoted(OS, O.Domain);
    OS << ' ' << O.Version << '\n';
  }
  if (!G.getAnnotations().empty()) {
    OS << "  annotations ";
    printAttributeList(OS, G.getAnnotations(), '[', ']');
    OS << '\n';
  }
  auto PrintDecl = [&](StringRef Keyword, TensorId T) {
    OS << "  " << Keyword << ' ';
    printTensorRef(OS, G, T);
    OS << " : " << G.getTensor(T).Type << '\n';
  };
  for (TensorId T : G.getInputs())
    PrintDecl("input", T);
  for (TensorId T : G.getWeights())
    PrintDecl("weight", T);

  for (const Op &Node : G.ops()) {
    OS << "  op @";
    printName(OS, Node.Name);
    OS << " = ";
    if (!Node.Domain.empty()) {
      printIdentifier(OS, Node.Domain);
      OS << "::";
    }
    printIdentifier(OS, Node.Type);
    OS << '(';
    ListSeparator LS;
    for (TensorId T : Node.Operands) {
      OS << LS;
      printTensorRef(OS, G, T);
    }
    OS << ") -> (";
    ListSeparator RS;
    for (TensorId T : Node.Results) {
      OS << RS;
      printTensorRef(OS, G, T);
      if (T != NoId)
        OS << " : " << G.getTensor(T).Type;
    }
    OS << ')';
    if (!Node.Attrs.empty()) {
      OS << ' ';
      printAttributeList(OS, Node.Attrs, '{', '}');
    }
    if (!Node.Annotations.empty()) {
      OS << ' ';
      printAttributeList(OS, Node.Annotations, '[', ']');
    }
    if (Node.SourceName != Node.Name) {
      OS << " loc(";
      printQuoted(OS, Node.SourceName);
      OS << ')';
    }
    OS << '\n';
  }
  for (TensorId T : G.getOutputs()) {
    OS << "  output ";
    printTensorRef(OS, G, T);
    OS << '\n';
  }
  OS << "}\n";
}

} // namespace dp
