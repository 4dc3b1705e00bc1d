//===- dp-opt.cpp - The dp pass driver ------------------------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// dp-opt reads an ONNX model or dp IR, runs a pass pipeline over it and
/// writes the resulting IR, like LLVM's opt:
///
///   dp-opt -passes='import-onnx{batch=8},print-summary' m.onnx -S -o m.dp
///   dp-opt -import-onnx -print-summary m.onnx -disable-output
///
/// Per-pass flags expand in command-line order, and mix with -passes. If the
/// input is an ONNX model and the pipeline does not start with import-onnx,
/// an import-onnx with default options runs first.
///
//===----------------------------------------------------------------------===//

#include "dp/Cluster/Cluster.h"
#include "dp/IR/Bytecode.h"
#include "dp/IR/Graph.h"
#include "dp/IR/PassManager.h"
#include "dp/IR/TextFormat.h"
#include "dp/IR/Verifier.h"
#include "dp/Import/ONNXImporter.h"
#include "dp/Passes/PassBuilder.h"
#include "dp/Support/Diagnostics.h"
#include "dp/Support/FileOutput.h"
#include "dp/Support/Format.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Timer.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <map>
#include <optional>

using namespace llvm;
using namespace dp;

static cl::OptionCategory DpCategory("dp-opt options");

static cl::opt<std::string> InputFilename(cl::Positional,
                                          cl::desc("<input model or IR>"),
                                          cl::init("-"), cl::cat(DpCategory));
static cl::opt<std::string> OutputFilename("o", cl::desc("Output file"),
                                           cl::value_desc("filename"),
                                           cl::init("-"), cl::cat(DpCategory));
static cl::opt<bool> OutputText("S", cl::desc("Write the IR as text"),
                                cl::cat(DpCategory));
static cl::opt<bool> Force("f",
                           cl::desc("Write binary output to a terminal too"),
                           cl::cat(DpCategory));
static cl::opt<bool> DisableOutput("disable-output",
                                   cl::desc("Write no IR output"),
                                   cl::cat(DpCategory));
static cl::list<std::string>
    Passes("passes",
           cl::desc("Pass pipeline, e.g. 'import-onnx,print-summary'"),
           cl::value_desc("pipeline"), cl::cat(DpCategory));
static cl::opt<bool>
    PrintPasses("print-passes",
                cl::desc("List the passes and placers with their options and\n"
                         "defaults, and exit"),
                cl::cat(DpCategory));
static cl::opt<bool>
    PrintPipeline("print-pipeline",
                  cl::desc("Print the pipeline as -passes text and exit"),
                  cl::cat(DpCategory));
static cl::opt<bool> VerifyEach("verify-each",
                                cl::desc("Verify the IR after every pass"),
                                cl::cat(DpCategory));
static cl::opt<bool> TimePasses("time-passes",
                                cl::desc("Report the time of each pass"),
                                cl::cat(DpCategory));
static cl::opt<uint64_t> Seed("seed", cl::desc("Seed for randomized passes"),
                              cl::init(0), cl::cat(DpCategory));
static cl::opt<std::string>
    ClusterSpec("cluster",
                cl::desc("Hardware to place for: a preset (-print-cluster "
                         "lists them)\nor a JSON/YAML cluster file"),
                cl::value_desc("preset|file"), cl::cat(DpCategory));
static cl::opt<bool>
    PrintCluster("print-cluster",
                 cl::desc("Describe the -cluster (default p100x4) and exit"),
                 cl::cat(DpCategory));

static cl::opt<std::string>
    SummaryFile("summary",
                cl::desc("Write the simulated step's JSON summary here"),
                cl::value_desc("file"), cl::cat(DpCategory));
static cl::opt<std::string>
    TraceFile("trace",
              cl::desc("Write the simulated step as a Chrome trace here"),
              cl::value_desc("file"), cl::cat(DpCategory));
static cl::opt<std::string> PlacementFile(
    "placement",
    cl::desc("Simulate this placement (JSON) instead of the ops' devices"),
    cl::value_desc("file.json"), cl::cat(DpCategory));

static cl::opt<bool>
    Quiet("quiet", cl::desc("Print no progress lines while placers search"),
          cl::cat(DpCategory));
static cl::opt<std::string> CurveFile(
    "curve",
    cl::desc("Write a searching placer's best step time vs samples\nand "
             "seconds (CSV) here"),
    cl::value_desc("file.csv"), cl::cat(DpCategory));

/// The width of -help's lines.
static constexpr unsigned HelpWidth = 100;
/// The column at which -help's descriptions start, at most: cl aligns them
/// after the widest flag ("--training-graph[=<options>] - ").
static constexpr unsigned HelpDescColumn = 34;

/// The overview -help starts with: what dp-opt does, and an example that
/// runs (test/dp-opt/help.test runs it).
static constexpr const char *Overview =
    "dp-opt: run dp passes over a model\n"
    "\n"
    "  dp-opt -cluster=p100x4 model.onnx -disable-output -summary=s.json \\\n"
    "    -passes='import-onnx{batch=8},cost-annotate,place{algo=metis},"
    "simulate'\n"
    "\n"
    "  Per-pass flags (-import-onnx=batch=8 -place=algo=metis) expand in\n"
    "  command-line order; -print-passes lists the passes, their options and\n"
    "  defaults.\n";

namespace {
/// One -<pass>[=options] flag per registered pass.
struct PassFlag {
  const PassInfo *Info;
  /// cl::desc keeps a StringRef: the text must live as long as the flag.
  std::unique_ptr<std::string> Description;
  /// -<pass>[=options] for a pass with options, else -<pass> (a switch,
  /// which -help shows without "=<...>").
  std::unique_ptr<cl::list<std::string>> Flag;
  std::unique_ptr<cl::list<bool>> Switch;
};
} // namespace

static std::vector<PassFlag> makePassFlags() {
  std::vector<PassFlag> Flags;
  for (const PassInfo &P : getRegisteredPasses()) {
    // The option syntax goes below the description, so that the flags'
    // column stays narrow and every line fits.
    std::string Text = ("Run " + P.Name + ": " + P.Description).str();
    if (!P.Params.empty())
      Text += "; options: " + P.Params;
    // cl indents the description's later lines itself.
    auto Description = std::make_unique<std::string>(
        wrapText(Text, 0, HelpWidth - HelpDescColumn));
    PassFlag F{&P, std::move(Description), nullptr, nullptr};
    if (P.Params.empty())
      F.Switch = std::make_unique<cl::list<bool>>(
          P.Name, cl::desc(*F.Description), cl::ValueDisallowed, cl::ZeroOrMore,
          cl::cat(DpCategory));
    else
      F.Flag = std::make_unique<cl::list<std::string>>(
          P.Name, cl::desc(*F.Description), cl::value_desc("options"),
          cl::ValueOptional, cl::ZeroOrMore, cl::cat(DpCategory));
    Flags.push_back(std::move(F));
  }
  return Flags;
}

/// Joins -passes and the per-pass flags in command-line order.
static std::string buildPipelineText(const std::vector<PassFlag> &Flags) {
  std::map<unsigned, std::string> ByPosition;
  for (unsigned I = 0, E = Passes.size(); I != E; ++I)
    ByPosition[Passes.getPosition(I)] = Passes[I];
  for (const PassFlag &F : Flags) {
    if (F.Switch) {
      for (unsigned I = 0, E = F.Switch->size(); I != E; ++I)
        ByPosition[F.Switch->getPosition(I)] = F.Info->Name.str();
      continue;
    }
    for (unsigned I = 0, E = F.Flag->size(); I != E; ++I) {
      std::string Text = F.Info->Name.str();
      if (!(*F.Flag)[I].empty())
        Text += "{" + (*F.Flag)[I] + "}";
      ByPosition[F.Flag->getPosition(I)] = Text;
    }
  }
  std::string Pipeline;
  for (const auto &KV : ByPosition) {
    if (!Pipeline.empty())
      Pipeline += ',';
    Pipeline += KV.second;
  }
  return Pipeline;
}

static int fail(StringRef File, Error E) {
  printErrors(errs(), "dp-opt", File, std::move(E));
  return 1;
}

/// dp's version (the project's, from CMake), then LLVM's.
static void printVersion(raw_ostream &OS) {
  OS << "dp version " << DP_VERSION << '\n';
  cl::PrintVersionMessage();
}

int main(int argc, char **argv) {
  InitLLVM X(argc, argv);
  std::vector<PassFlag> Flags = makePassFlags();
  cl::HideUnrelatedOptions(DpCategory);
  cl::SetVersionPrinter(printVersion);
  // -help ends with the placers that --place's description points to.
  std::string PlacerHelp;
  raw_string_ostream PlacerOS(PlacerHelp);
  printPlacerNames(PlacerOS);
  PlacerOS.flush();
  cl::extrahelp PlacerList(PlacerHelp);
  cl::ParseCommandLineOptions(argc, argv, Overview);

  if (PrintPasses) {
    printPassNames(outs());
    return 0;
  }
  if (PrintCluster) {
    Expected<Cluster> C =
        loadCluster(ClusterSpec.empty() ? "p100x4" : ClusterSpec.getValue());
    if (!C)
      return fail("", C.takeError());
    printCluster(outs(), *C);
    outs() << "\npresets:";
    for (StringRef Name : getClusterPresetNames())
      outs() << ' ' << Name;
    outs() << '\n';
    return 0;
  }

  // An empty -passes is a mistake, not "no passes".
  for (const std::string &P : Passes)
    if (StringRef(P).trim().empty())
      if (Error E = parsePipelineText(P).takeError())
        return fail("", std::move(E));
  std::string PipelineText = buildPipelineText(Flags);
  if (PrintPipeline) {
    PassManager PM;
    if (!PipelineText.empty())
      if (Error E = parsePassPipeline(PM, PipelineText))
        return fail("", std::move(E));
    PM.printPipeline(outs());
    outs() << '\n';
    return 0;
  }

  // The cluster is read before the input, so that a bad cluster file is
  // reported before a long import.
  std::optional<Cluster> TheCluster;
  if (!ClusterSpec.empty()) {
    Expected<Cluster> C = loadCluster(ClusterSpec);
    if (!C)
      return fail("", C.takeError());
    TheCluster = std::move(*C);
  }

  StringRef DisplayName =
      InputFilename == "-" ? StringRef("<stdin>") : StringRef(InputFilename);
  ErrorOr<std::unique_ptr<MemoryBuffer>> BufOrErr =
      MemoryBuffer::getFileOrSTDIN(InputFilename, /*IsText=*/false,
                                   /*RequiresNullTerminator=*/false);
  if (std::error_code EC = BufOrErr.getError())
    return fail(DisplayName,
                makeError("cannot read the input: " + EC.message()));
  std::unique_ptr<MemoryBuffer> Input = std::move(*BufOrErr);
  MemoryBufferRef InputRef(Input->getBuffer(), DisplayName);

  // dp IR (text or bytecode) is parsed here; anything else is a model that
  // import-onnx reads, first in the pipeline.
  Graph G;
  StringRef Bytes = Input->getBuffer();
  if (isBytecode(Bytes) || looksLikeGraphText(Bytes)) {
    Expected<Graph> Parsed =
        isBytecode(Bytes) ? readBytecode(InputRef) : parseGraph(InputRef);
    if (!Parsed)
      return fail(DisplayName, Parsed.takeError());
    G = std::move(*Parsed);
    if (Error E = verifyGraph(G))
      return fail(DisplayName, std::move(E));
  } else {
    Expected<std::vector<PipelineElement>> Elements =
        PipelineText.empty() ? std::vector<PipelineElement>()
                             : parsePipelineText(PipelineText);
    if (!Elements)
      return fail("", Elements.takeError());
    if (Elements->empty() || Elements->front().Name != ImportONNXPass::name())
      PipelineText = PipelineText.empty()
                         ? ImportONNXPass::name().str()
                         : (ImportONNXPass::name() + "," + PipelineText).str();
  }

  PassManager PM;
  if (!PipelineText.empty())
    if (Error E = parsePassPipeline(PM, PipelineText))
      return fail("", std::move(E));
  PM.setVerifyEach(VerifyEach);
  // Passes in one report, the phases inside passes in another, so that
  // each report's total means something.
  std::unique_ptr<TimerGroup> Timers, PhaseTimers;
  if (TimePasses) {
    Timers = std::make_unique<TimerGroup>("dp-opt", "Pass execution timing "
                                                    "report");
    PhaseTimers = std::make_unique<TimerGroup>("dp-opt-phases",
                                               "Pass phase timing report");
    PM.setTimerGroup(Timers.get());
  }
  // The files the run writes (-o, -summary=, -trace=, emit's, ...) appear
  // together once it succeeded; a run that fails leaves every one as it was.
  OutputTransaction Outputs;
  PassContext Ctx;
  Ctx.Input = InputRef;
  Ctx.Seed = Seed;
  Ctx.TheCluster = TheCluster ? &*TheCluster : nullptr;
  Ctx.Report = &errs();
  Ctx.Timers = PhaseTimers.get();
  Ctx.Progress = Quiet ? nullptr : &errs();
  // The file flags are the passes' own options (simulate{summary=,trace=,
  // placement=}, place{curve=}) for every pass that does not give them.
  for (const auto &[Key, File] :
       {std::pair<StringRef, StringRef>{"summary", SummaryFile},
        {"trace", TraceFile},
        {"placement", PlacementFile},
        {"curve", CurveFile}})
    if (!File.empty())
      PM.setDriverOption(Key, File);
  if (Error E = PM.run(G, Ctx))
    return fail(DisplayName, std::move(E));
  if (!VerifyEach)
    if (Error E = verifyGraph(G))
      return fail(DisplayName,
                  joinErrors(makeError("the pipeline left a malformed graph"),
                             std::move(E)));
  if (Timers) {
    Timers->print(errs());
    PhaseTimers->print(errs());
  }

  if (DisableOutput) {
    // Nothing to add.
  } else if (!OutputText && !Force && OutputFilename == "-" &&
             outs().is_displayed()) {
    WithColor::warning(errs(), "dp-opt")
        << "not writing binary IR to a terminal; use -S for text, -o to "
           "name a file, or -f to force\n";
  } else if (Error E = writeFileAtomically(
                 OutputFilename, [&](raw_ostream &OS) {
                   if (OutputText)
                     printGraph(OS, G);
                   else
                     writeBytecode(OS, G);
                 })) {
    return fail(OutputFilename, std::move(E));
  }
  // Everything succeeded: now the files appear, and only then is it said
  // which.
  if (Error E = Outputs.commit())
    return fail("", std::move(E));
  for (const std::string &Note : Outputs.getNotes())
    errs() << Note;
  return 0;
}
