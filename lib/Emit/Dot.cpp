//===- Dot.cpp - The placed graph in Graphviz's language ------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "EmitInternal.h"
#include "dp/Emit/Emit.h"
#include "dp/IR/Annotations.h"
#include "dp/Support/Format.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"

using namespace llvm;

namespace dp {

StringRef getDeviceColor(unsigned Dev) {
  // ColorBrewer's Set3: light, distinct, readable under black text.
  static const char *const Colors[] = {
      "#8dd3c7", "#fdb462", "#bebada", "#fb8072", "#80b1d3", "#b3de69",
      "#fccde5", "#ffffb3", "#bc80bd", "#ccebc5", "#ffed6f", "#d9d9d9"};
  return Colors[Dev % array_lengthof(Colors)];
}

void writeEscapedXML(raw_ostream &OS, StringRef S) {
  for (char Ch : S) {
    switch (Ch) {
    case '&':
      OS << "&amp;";
      break;
    case '<':
      OS << "&lt;";
      break;
    case '>':
      OS << "&gt;";
      break;
    case '"':
      OS << "&quot;";
      break;
    case '\'':
      OS << "&#39;";
      break;
    default:
      OS << Ch;
    }
  }
}

/// Writes \p S as a DOT string literal.
static void writeDotString(raw_ostream &OS, StringRef S) {
  OS << '"';
  for (char Ch : S) {
    if (Ch == '"' || Ch == '\\')
      OS << '\\' << Ch;
    else if (Ch == '\n')
      OS << "\\n";
    else if (static_cast<unsigned char>(Ch) >= 0x20)
      OS << Ch;
  }
  OS << '"';
}

static void writeOpNode(raw_ostream &OS, const PlacedStep &S, OpId O,
                        StringRef Indent) {
  const Op &Node = S.G->getOp(O);
  StringRef Shown = Node.SourceName.empty() ? Node.Name : Node.SourceName;
  OS << Indent << 'n' << O << " [label=";
  writeDotString(OS, (Shown + "\n" + S.G->getQualifiedType(O)).str());
  OS << ", fillcolor=\"" << getDeviceColor(S.Placement[O]) << "\", tooltip=";
  writeDotString(
      OS, (Node.Name + " on " + S.C->getDevices()[S.Placement[O]].Name).str());
  OS << "];\n";
}

void writeDot(raw_ostream &OS, const PlacedStep &S) {
  const Graph &G = *S.G;
  const Cluster &C = *S.C;
  OS << "digraph ";
  writeDotString(OS, G.getName());
  OS << " {\n";
  OS << "  graph [label=";
  writeDotString(OS, (G.getName() + " on " + C.getName()).str());
  OS << ", labelloc=t, fontname=\"Helvetica\"];\n";
  OS << "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\","
        " fontsize=10];\n";
  OS << "  edge [color=\"#777777\", fontname=\"Helvetica\", fontsize=9];\n";

  // The legend: one swatch per device.
  OS << "  subgraph cluster_legend {\n    label=\"devices\";\n";
  for (unsigned Dev = 0, E = C.getNumDevices(); Dev != E; ++Dev) {
    OS << "    device" << Dev << " [label=";
    writeDotString(OS,
                   C.getDevices()[Dev].Name + "\n" + C.getDeviceType(Dev).Name);
    OS << ", fillcolor=\"" << getDeviceColor(Dev) << "\"];\n";
  }
  OS << "  }\n";

  // Colocation groups as clusters, in order of their first op.
  bool AllGrouped = G.getNumOps() > 0;
  for (const Op &Node : G.ops()) {
    AllGrouped &= ann::get(Node, ann::Group).hasValue();
  }
  if (AllGrouped) {
    DenseMap<int64_t, unsigned> Index;
    std::vector<std::pair<int64_t, std::vector<OpId>>> Groups;
    for (OpId O = 0, E = G.getNumOps(); O != E; ++O) {
      int64_t Group = *ann::get(G.getOp(O), ann::Group);
      auto [It, New] = Index.try_emplace(Group, Groups.size());
      if (New)
        Groups.emplace_back(Group, std::vector<OpId>());
      Groups[It->second].second.push_back(O);
    }
    for (const auto &[Group, Ops] : Groups) {
      OS << "  subgraph \"cluster_g" << Group << "\" {\n    label=\"group "
         << Group << "\";\n    style=\"rounded\";\n";
      for (OpId O : Ops)
        writeOpNode(OS, S, O, "    ");
      OS << "  }\n";
    }
  } else {
    for (OpId O = 0, E = G.getNumOps(); O != E; ++O)
      writeOpNode(OS, S, O, "  ");
  }

  // One edge per producer and reader; edges between devices are red and
  // say how many bytes cross.
  for (TensorId T = 0, E = G.getNumTensors(); T != E; ++T) {
    const Tensor &Tn = G.getTensor(T);
    if (Tn.Producer == NoId)
      continue;
    OpId Last = NoId;
    for (const Use &U : Tn.Uses) {
      if (U.User == Last)
        continue;
      Last = U.User;
      OS << "  n" << Tn.Producer << " -> n" << U.User;
      if (S.Placement[Tn.Producer] != S.Placement[U.User]) {
        OS << " [color=\"#d62728\", penwidth=2, label=";
        writeDotString(OS, formatBytes(Tn.Type.getSizeInBytes().getValueOr(0)));
        OS << ']';
      }
      OS << ";\n";
    }
  }
  OS << "}\n";
}

} // namespace dp
