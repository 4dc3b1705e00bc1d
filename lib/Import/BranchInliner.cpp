//===- BranchInliner.cpp - If nodes replaced by the branch they take ------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "BranchInliner.h"
#include "dp/Import/ONNXWalk.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/Twine.h"

#include "onnx/onnx_pb.h"

using namespace llvm;

namespace dp {

StringRef getBranchKey(const onnx::NodeProto &N) {
  if (N.op_type() != "If" || !(N.domain().empty() || N.domain() == "ai.onnx") ||
      N.input_size() < 1 || N.input(0).empty() || N.output_size() == 0)
    return {};
  return N.output(0);
}

namespace {

/// Renames tensor \p From to \p To wherever \p G and the bodies of its nodes
/// name it.
void renameTensor(onnx::GraphProto &G, const std::string &From,
                  const std::string &To) {
  auto Rename = [&](std::string &S) {
    if (S == From)
      S = To;
  };
  for (onnx::NodeProto &N : *G.mutable_node()) {
    for_each(*N.mutable_input(), Rename);
    for_each(*N.mutable_output(), Rename);
    forEachBody(N, [&](onnx::GraphProto &B) { renameTensor(B, From, To); });
  }
  for (onnx::TensorProto &T : *G.mutable_initializer())
    if (T.name() == From)
      T.set_name(To);
  for (auto *VIs : {G.mutable_output(), G.mutable_value_info()})
    for (onnx::ValueInfoProto &VI : *VIs)
      if (VI.name() == From)
        VI.set_name(To);
}

class Inliner {
public:
  Inliner(onnx::GraphProto &G, const BranchDecisions &Decided)
      : G(G), Decided(Decided) {
    for (const onnx::ValueInfoProto &VI : G.input())
      Names.insert(VI.name());
    for (const onnx::TensorProto &T : G.initializer())
      Names.insert(T.name());
    for (const onnx::NodeProto &N : G.node())
      for (const std::string &Out : N.output())
        Names.insert(Out);
  }

  /// Appends \p N, which comes from node \p Origin of the user's graph
  /// (empty: it is one), to the graph, or the branch it takes when it is a
  /// decided If.
  void append(onnx::NodeProto &N, const std::string &Origin);
  /// The origin of each node appended.
  std::vector<std::string> Origins;
  int getCount() const { return Count; }

private:
  onnx::GraphProto &G;
  const BranchDecisions &Decided;
  /// The names the graph defines so far.
  StringSet<> Names;
  int Count = 0;
};

void Inliner::append(onnx::NodeProto &N, const std::string &Origin) {
  StringRef Key = getBranchKey(N);
  auto It = Key.empty() ? Decided.end() : Decided.find(Key);
  StringRef BranchName =
      It != Decided.end() && It->second ? "then_branch" : "else_branch";
  onnx::GraphProto *Branch = nullptr;
  if (It != Decided.end())
    for (onnx::AttributeProto &A : *N.mutable_attribute())
      if (A.name() == BranchName && A.has_g())
        Branch = A.mutable_g();
  if (!Branch) {
    *G.add_node() = std::move(N);
    Origins.push_back(Origin);
    return;
  }
  ++Count;
  const std::string From = Origin.empty() ? N.name() : Origin;
  // The branch's own tensors keep their names unless the graph has them.
  std::vector<std::string> Defined;
  for (const onnx::TensorProto &T : Branch->initializer())
    Defined.push_back(T.name());
  for (const onnx::NodeProto &Inner : Branch->node())
    for (const std::string &Out : Inner.output())
      if (!Out.empty())
        Defined.push_back(Out);
  for (const std::string &Name : Defined) {
    if (Names.insert(Name).second)
      continue;
    std::string Fresh;
    for (int K = 1; Fresh.empty() || Names.contains(Fresh); ++K)
      Fresh = (Name + ".inlined" + Twine(K)).str();
    Names.insert(Fresh);
    renameTensor(*Branch, Name, Fresh);
  }
  for (onnx::TensorProto &T : *Branch->mutable_initializer())
    *G.add_initializer() = std::move(T);
  for (onnx::ValueInfoProto &VI : *Branch->mutable_value_info())
    *G.add_value_info() = std::move(VI);
  for (onnx::NodeProto &M : *Branch->mutable_node())
    append(M, From);
  // The If's results are the branch's, under the If's names.
  for (int K = 0, E = std::min(N.output_size(), Branch->output_size()); K != E;
       ++K) {
    if (N.output(K).empty())
      continue;
    onnx::NodeProto *Id = G.add_node();
    Id->set_op_type("Identity");
    if (!N.name().empty())
      Id->set_name((N.name() + "/" + BranchName + "/output_" + Twine(K)).str());
    Id->add_input(Branch->output(K).name());
    Id->add_output(N.output(K));
    Origins.push_back(From);
  }
}

} // namespace

int inlineDecidedBranches(onnx::GraphProto &G, const BranchDecisions &Decided,
                          std::vector<std::string> *Origins) {
  if (Decided.empty() || none_of(G.node(), [&](const onnx::NodeProto &N) {
        StringRef Key = getBranchKey(N);
        return !Key.empty() && Decided.count(Key);
      }))
    return 0;
  google::protobuf::RepeatedPtrField<onnx::NodeProto> Nodes(G.node());
  Inliner I(G, Decided);
  G.clear_node();
  for (int K = 0, E = Nodes.size(); K != E; ++K)
    I.append(Nodes[K], Origins ? (*Origins)[K] : std::string());
  if (Origins)
    *Origins = std::move(I.Origins);
  return I.getCount();
}

} // namespace dp
