//===- Summary.cpp - A human summary of a graph ---------------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/IR/Summary.h"
#include "dp/IR/Graph.h"
#include "dp/Support/Format.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatAdapters.h"

#include <algorithm>

using namespace llvm;

namespace dp {

static uint64_t sumBytes(const Graph &G, ArrayRef<TensorId> Ts) {
  uint64_t Sum = 0;
  for (TensorId T : Ts)
    Sum += G.getTensor(T).Type.getSizeInBytes().getValueOr(0);
  return Sum;
}

void printGraphSummary(raw_ostream &OS, const Graph &G) {
  uint64_t ActivationBytes = 0;
  StringMap<unsigned> Counts;
  for (OpId O = 0, E = G.getNumOps(); O != E; ++O) {
    ++Counts[G.getQualifiedType(O)];
    for (TensorId T : G.getOp(O).Results)
      if (T != NoId)
        ActivationBytes += G.getTensor(T).Type.getSizeInBytes().getValueOr(0);
  }
  OS << "graph '" << G.getName() << "': " << G.getNumOps() << " ops, "
     << G.getNumTensors() << " tensors\n";
  OS << "  inputs:      " << G.getInputs().size() << " ("
     << formatBytes(sumBytes(G, G.getInputs())) << ")\n";
  OS << "  weights:     " << G.getWeights().size() << " ("
     << formatBytes(sumBytes(G, G.getWeights())) << ")\n";
  OS << "  activations: " << formatBytes(ActivationBytes)
     << " (all op results of one step)\n";
  OS << "  outputs:     " << G.getOutputs().size() << " ("
     << formatBytes(sumBytes(G, G.getOutputs())) << ")\n";

  // Op types by count, then by name, so the order is deterministic.
  std::vector<std::pair<StringRef, unsigned>> Sorted;
  for (const auto &KV : Counts)
    Sorted.emplace_back(KV.getKey(), KV.getValue());
  llvm::sort(Sorted, [](const auto &A, const auto &B) {
    return A.second != B.second ? A.second > B.second : A.first < B.first;
  });
  OS << "  op types:    " << Sorted.size() << '\n';
  const unsigned Shown = 12;
  for (unsigned I = 0, E = std::min<size_t>(Sorted.size(), Shown); I != E;
       ++I)
    OS << "    " << left_justify(Sorted[I].first, 24)
       << format("%8u", Sorted[I].second) << '\n';
  if (Sorted.size() > Shown) {
    unsigned Rest = 0;
    for (size_t I = Shown; I != Sorted.size(); ++I)
      Rest += Sorted[I].second;
    OS << "    " << left_justify("(other)", 24) << format("%8u", Rest)
       << '\n';
  }
  auto PrintTensors = [&](StringRef Title, ArrayRef<TensorId> Ts) {
    OS << "  " << Title << ":\n";
    for (TensorId T : Ts)
      OS << "    %" << G.getTensor(T).Name << " : " << G.getTensor(T).Type
         << '\n';
  };
  PrintTensors("graph inputs", G.getInputs());
  PrintTensors("graph outputs", G.getOutputs());
}

Error SummaryPass::run(Graph &G, PassContext &Ctx) {
  if (Ctx.Report)
    printGraphSummary(*Ctx.Report, G);
  return Error::success();
}

std::string describeFoldedBatchNorm(const Graph &G) {
  unsigned Convs = 0;
  std::vector<StringRef> Folded;
  StringSet<> Seen;
  for (const Op &O : G.ops()) {
    if (!O.Domain.empty())
      continue;
    if (O.Type == "BatchNormalization")
      return "";
    if (O.Type != "Conv")
      continue;
    ++Convs;
    for (unsigned I = 1; I < O.Operands.size(); ++I) {
      if (O.Operands[I] == NoId)
        continue;
      const Tensor &T = G.getTensor(O.Operands[I]);
      if (T.Kind == TensorKind::Weight && T.Name.startswith("onnx::") &&
          Seen.insert(T.Name).second)
        Folded.push_back(T.Name);
    }
  }
  if (Folded.empty())
    return "";
  std::string Out;
  raw_string_ostream OS(Out);
  OS << Folded.size() << " Conv weights and biases (of " << Convs
     << " Convs) are the exporter's constants ('" << Folded.front() << "'"
     << (Folded.size() > 1 ? ", ..." : "")
     << ") and no BatchNormalization is left";
  return OS.str();
}

} // namespace dp
