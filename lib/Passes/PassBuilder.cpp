//===- PassBuilder.cpp - Parsing pass pipelines ---------------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/Passes/PassBuilder.h"
#include "dp/Colocate/Colocate.h"
#include "dp/Cost/CostAnnotate.h"
#include "dp/Emit/EmitPass.h"
#include "dp/IR/Summary.h"
#include "dp/IR/Verifier.h"
#include "dp/Import/ONNXImporter.h"
#include "dp/Passes/PlanPass.h"
#include "dp/Place/PlacePass.h"
#include "dp/Sim/SimulatePass.h"
#include "dp/Support/Diagnostics.h"
#include "dp/Support/Format.h"
#include "dp/Transforms/Pipeline.h"
#include "dp/Transforms/TrainingGraph.h"
#include "dp/Transforms/UnrollRNN.h"

#include "llvm/ADT/StringExtras.h"

#include <tuple>

using namespace llvm;

namespace dp {

static bool isPassNameChar(char C) {
  return isAlnum(C) || C == '-' || C == '_';
}

/// PassRegistry.def's passes, then those registerPass added.
static std::vector<PassInfo> &getPassList() {
  static std::vector<PassInfo> Passes = {
#define GRAPH_PASS(NAME, CREATE_PASS, DESCRIPTION) {NAME, "", DESCRIPTION, ""},
#define GRAPH_PASS_WITH_OPTIONS(NAME, PASS, OPTIONS, DESCRIPTION)              \
  {NAME, getPassOptionUsage<OPTIONS>(PASS::describeOptions), DESCRIPTION,      \
   getPassOptionDefaults<OPTIONS>(PASS::describeOptions)},
#include "PassRegistry.def"
  };
  return Passes;
}

/// How to build each pass registerPass added, by name.
static StringMap<PassBuildFn> &getAddedPasses() {
  static StringMap<PassBuildFn> Added;
  return Added;
}

ArrayRef<PassInfo> getRegisteredPasses() { return getPassList(); }

Error registerPass(PassInfo Info, PassBuildFn Build) {
  if (Info.Name.empty() || !all_of(Info.Name, isPassNameChar))
    return makeError("cannot register pass '" + Info.Name +
                     "': a pass name is letters, digits, '-' and '_'");
  for (const PassInfo &P : getPassList())
    if (P.Name == Info.Name)
      return makeError("cannot register pass '" + Info.Name +
                       "': a pass of that name exists");
  getAddedPasses()[Info.Name] = std::move(Build);
  getPassList().push_back(std::move(Info));
  return Error::success();
}

/// The width -print-passes and -help keep to.
static constexpr unsigned HelpWidth = 100;

/// Writes "  name{params}", then \p Description and "defaults: ..."
/// indented below it.
static void printEntry(raw_ostream &OS, StringRef Name, StringRef Params,
                       StringRef Description, StringRef Defaults) {
  std::string Head = Name.str();
  if (!Params.empty())
    Head += ("{" + Params + "}").str();
  // A long option list goes on indented by 4.
  OS << "  " << StringRef(wrapText(Head, 4, HelpWidth)).drop_front(4) << '\n';
  OS << wrapText(Description, 6, HelpWidth) << '\n';
  if (!Defaults.empty())
    OS << wrapText(("defaults: " + Defaults).str(), 6, HelpWidth) << '\n';
}

void printPassNames(raw_ostream &OS) {
  OS << "Graph passes:\n";
  for (const PassInfo &P : getRegisteredPasses())
    printEntry(OS, P.Name, P.Params, P.Description, P.Defaults);
  OS << '\n';
  printPlacerNames(OS);
}

void printPlacerNames(raw_ostream &OS) {
  OS << "Placers (place{algo=NAME,...}):\n";
  for (const PlacerInfo &P : getPlacers()) {
    printEntry(OS, P.Name, P.Params, P.Description, P.Defaults);
    if (!P.Ranges.empty())
      OS << wrapText("ranges: " + P.Ranges, 6, HelpWidth) << '\n';
  }
}

namespace {
/// A cursor over pipeline text that reports errors with a column.
class PipelineLexer {
public:
  explicit PipelineLexer(StringRef Text) : Text(Text) {}

  bool atEnd() {
    skipSpace();
    return Pos == Text.size();
  }
  char peek() {
    skipSpace();
    return Pos < Text.size() ? Text[Pos] : '\0';
  }
  void advance() { ++Pos; }
  size_t position() const { return Pos; }

  /// Reads [A-Za-z0-9_-]+.
  StringRef word() {
    skipSpace();
    size_t Start = Pos;
    while (Pos < Text.size() && isPassNameChar(Text[Pos]))
      ++Pos;
    return Text.slice(Start, Pos);
  }

  /// Reads an option value: up to ',' or '}' outside braces.
  Expected<StringRef> value() {
    skipSpace();
    size_t Start = Pos;
    unsigned Depth = 0;
    for (; Pos < Text.size(); ++Pos) {
      char C = Text[Pos];
      if (C == '{') {
        ++Depth;
        continue;
      }
      if (C == '}') {
        if (Depth == 0)
          break;
        --Depth;
        continue;
      }
      if (C == ',' && Depth == 0)
        break;
    }
    if (Depth)
      return error("unbalanced '{' in an option value");
    return Text.slice(Start, Pos).rtrim();
  }

  Error error(const Twine &Msg) const {
    return makeError("invalid pass pipeline '" + Text + "': " + Msg +
                     " at column " + Twine(Pos + 1));
  }

private:
  void skipSpace() {
    while (Pos < Text.size() && isSpace(Text[Pos]))
      ++Pos;
  }

  StringRef Text;
  size_t Pos = 0;
};
} // namespace

Expected<std::vector<PipelineElement>> parsePipelineText(StringRef Text) {
  PipelineLexer Lex(Text);
  std::vector<PipelineElement> Elements;
  if (Lex.atEnd())
    return Lex.error("the pipeline is empty");
  while (true) {
    PipelineElement E;
    E.Name = Lex.word().str();
    if (E.Name.empty())
      return Lex.error("expected a pass name");
    if (Lex.peek() == '{') {
      Lex.advance();
      E.HasBraces = true;
      if (Lex.peek() == '}') {
        Lex.advance();
      } else {
        while (true) {
          std::string Key = Lex.word().str();
          if (Key.empty())
            return Lex.error("expected an option name");
          if (Lex.peek() != '=')
            return Lex.error("expected '=' after option '" + Key + "'");
          Lex.advance();
          Expected<StringRef> V = Lex.value();
          if (!V)
            return V.takeError();
          if (V->empty())
            return Lex.error("option '" + Key + "' has no value");
          E.Options.emplace_back(std::move(Key), V->str());
          if (Lex.peek() == ',') {
            Lex.advance();
            continue;
          }
          if (Lex.peek() == '}') {
            Lex.advance();
            break;
          }
          return Lex.error("expected ',' or '}' after an option");
        }
      }
    }
    Elements.push_back(std::move(E));
    if (Lex.atEnd())
      return std::move(Elements);
    if (Lex.peek() != ',')
      return Lex.error("expected ',' between passes");
    Lex.advance();
  }
}

static Error addPass(PassManager &PM, const PipelineElement &E) {
#define GRAPH_PASS(NAME, CREATE_PASS, DESCRIPTION)                           \
  if (E.Name == NAME) {                                                      \
    if (!E.Options.empty())                                                  \
      return makeError("pass '" NAME "' takes no options");                  \
    PM.addPass(CREATE_PASS);                                                 \
    return Error::success();                                                 \
  }
#define GRAPH_PASS_WITH_OPTIONS(NAME, PASS, OPTIONS, DESCRIPTION)              \
  if (E.Name == NAME) {                                                        \
    Expected<OPTIONS> Opts = PASS::parseOptions(E.Options);                    \
    if (!Opts)                                                                 \
      return Opts.takeError();                                                 \
    PM.addPass(PASS(std::move(*Opts)));                                        \
    return Error::success();                                                   \
  }
#include "PassRegistry.def"
  auto Added = getAddedPasses().find(E.Name);
  if (Added != getAddedPasses().end())
    return Added->second(PM, E);
  return makeError("unknown pass '" + E.Name +
                   "' (dp-opt -print-passes lists them)");
}

/// A pipeline plan needs the graph of one micro-batch: every import-onnx
/// before a pipeline{} imports with its microbatches=, replicas= and
/// batch-axis=. An import-onnx given microbatches= or replicas= itself must
/// agree with the pipeline{}:
/// one that does not is an error here, before anything runs (and before a
/// printed pipeline could drop the import's microbatches=1 as a default).
static Error forwardMicroBatches(std::vector<PipelineElement> &Elements) {
  for (size_t P = 0; P != Elements.size(); ++P) {
    if (Elements[P].Name != PipelinePass::name())
      continue;
    // Its own errors first, named after it.
    Expected<PipelineOptions> Opts =
        PipelinePass::parseOptions(Elements[P].Options);
    if (!Opts)
      return Opts.takeError();
    for (size_t I = 0; I != P; ++I) {
      PipelineElement &Import = Elements[I];
      if (Import.Name != ImportONNXPass::name())
        continue;
      auto Has = [&](StringRef Key) {
        return any_of(Import.Options,
                      [&](const auto &KV) { return KV.first == Key; });
      };
      if (Has("microbatches") || Has("replicas")) {
        Expected<ImportOptions> Own =
            ImportONNXPass::parseOptions(Import.Options);
        if (!Own) { // Reported when the pass is built, under its own name.
          consumeError(Own.takeError());
          continue;
        }
        for (auto [Key, Mine, Theirs] :
             {std::make_tuple(StringRef("microbatches"), Own->MicroBatches,
                              Opts->MicroBatches),
              std::make_tuple(StringRef("replicas"), Own->Replicas,
                              Opts->Replicas)})
          if (Has(Key) && Mine != Theirs)
            return makeError("import-onnx{" + Key + "=" + Twine(Mine) +
                             "} before pipeline{" + Key + "=" + Twine(Theirs) +
                             "}: they must agree (leave " + Key +
                             "= off import-onnx and pipeline{} "
                             "gives it)");
      }
      // What the import gives already, as a printed pipeline does, is not
      // given twice: forwarding is idempotent.
      for (const auto &KV : Elements[P].Options)
        if ((KV.first == "batch-axis" ||
             ((KV.first == "microbatches" || KV.first == "replicas") &&
              !Has(KV.first))) &&
            !is_contained(Import.Options, KV))
          Import.Options.push_back(KV);
    }
  }
  return Error::success();
}

Error buildPassPipeline(PassManager &PM,
                        std::vector<PipelineElement> Elements) {
  if (Error E = forwardMicroBatches(Elements))
    return E;
  for (size_t I = 0; I != Elements.size(); ++I) {
    const PipelineElement &E = Elements[I];
    // plan runs the passes before it again, for each plan it weighs.
    if (E.Name == PlanPass::name()) {
      Expected<PlanOptions> Opts = PlanPass::parseOptions(E.Options);
      if (!Opts)
        return Opts.takeError();
      Opts->Prefix.assign(Elements.begin(), Elements.begin() + I);
      PM.addPass(PlanPass(std::move(*Opts)));
      continue;
    }
    if (Error Err = addPass(PM, E))
      return Err;
  }
  return Error::success();
}

Error parsePassPipeline(PassManager &PM, StringRef Text) {
  Expected<std::vector<PipelineElement>> Elements = parsePipelineText(Text);
  if (!Elements)
    return Elements.takeError();
  return buildPassPipeline(PM, std::move(*Elements));
}

} // namespace dp
