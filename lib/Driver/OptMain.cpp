//===- OptMain.cpp - dp-opt as a library ----------------------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/Driver/OptMain.h"
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
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Timer.h"
#include "llvm/Support/WithColor.h"

#include <map>
#include <memory>
#include <optional>

using namespace llvm;

namespace dp {

/// The IR \p Bytes hold (text or bytecode), verified.
static Expected<Graph> readIR(MemoryBufferRef Input) {
  StringRef Bytes = Input.getBuffer();
  Expected<Graph> Parsed =
      isBytecode(Bytes) ? readBytecode(Input) : parseGraph(Input);
  if (!Parsed)
    return Parsed.takeError();
  if (Error E = verifyGraph(*Parsed))
    return std::move(E);
  return std::move(*Parsed);
}

/// \p Pipeline with an import-onnx first unless it starts with one.
static Expected<std::string> withImport(const std::string &Pipeline) {
  Expected<std::vector<PipelineElement>> Elements =
      Pipeline.empty() ? std::vector<PipelineElement>()
                       : parsePipelineText(Pipeline);
  if (!Elements)
    return Elements.takeError();
  if (!Elements->empty() && Elements->front().Name == ImportONNXPass::name())
    return Pipeline;
  return Pipeline.empty() ? ImportONNXPass::name().str()
                          : (ImportONNXPass::name() + "," + Pipeline).str();
}

/// Writes \p G where \p Job says, unless it says not to.
static Error writeIR(const OptJob &Job, const Graph &G) {
  if (Job.DisableOutput)
    return Error::success();
  if (!Job.OutputText && !Job.Force && Job.Output == "-" &&
      outs().is_displayed()) {
    if (Job.Report)
      WithColor::warning(*Job.Report, Job.Tool)
          << "not writing binary IR to a terminal; use -S for text, -o to "
             "name a file, or -f to force\n";
    return Error::success();
  }
  return nameFile(writeFileAtomically(Job.Output,
                                    [&](raw_ostream &OS) {
                                      if (Job.OutputText)
                                        printGraph(OS, G);
                                      else
                                        writeBytecode(OS, G);
                                    }),
                Job.Output);
}

Error runOpt(const OptJob &Job) {
  // The cluster is read before the input, so that a bad cluster file is
  // reported before a long import.
  std::optional<Cluster> TheCluster;
  if (!Job.Cluster.empty()) {
    Expected<Cluster> C = loadCluster(Job.Cluster);
    if (!C)
      return C.takeError();
    TheCluster = std::move(*C);
  }

  std::string Name = !Job.InputName.empty() ? Job.InputName
                     : Job.Input == "-"     ? std::string("<stdin>")
                                            : Job.Input;
  ErrorOr<std::unique_ptr<MemoryBuffer>> BufOrErr =
      MemoryBuffer::getFileOrSTDIN(Job.Input, /*IsText=*/false,
                                   /*RequiresNullTerminator=*/false);
  if (std::error_code EC = BufOrErr.getError())
    return nameFile(makeError("cannot read the input: " + EC.message()), Name);
  std::unique_ptr<MemoryBuffer> Input = std::move(*BufOrErr);
  MemoryBufferRef InputRef(Input->getBuffer(), Name);

  // dp IR (text or bytecode) is parsed here; anything else is a model that
  // import-onnx reads, first in the pipeline.
  Graph G;
  std::string Pipeline = Job.Pipeline;
  StringRef Bytes = Input->getBuffer();
  if (isBytecode(Bytes) || looksLikeGraphText(Bytes)) {
    Expected<Graph> Parsed = readIR(InputRef);
    if (!Parsed)
      return nameFile(Parsed.takeError(), Name);
    G = std::move(*Parsed);
  } else {
    Expected<std::string> Imported = withImport(Pipeline);
    if (!Imported)
      return Imported.takeError();
    Pipeline = std::move(*Imported);
  }

  PassManager PM;
  if (!Pipeline.empty())
    if (Error E = parsePassPipeline(PM, Pipeline))
      return E;
  PM.setVerifyEach(Job.VerifyEach);
  // Passes in one report, the phases inside passes in another, so that
  // each report's total means something.
  std::unique_ptr<TimerGroup> Timers, PhaseTimers;
  if (Job.TimePasses) {
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
  Ctx.Seed = Job.Seed;
  Ctx.TheCluster = TheCluster ? &*TheCluster : nullptr;
  Ctx.Report = Job.Report;
  Ctx.Timers = PhaseTimers.get();
  Ctx.Progress = Job.Progress;
  // The file flags are the passes' own options (simulate{summary=,trace=,
  // placement=}, place{curve=}) for every pass that does not give them.
  for (const auto &[Key, File] :
       {std::pair<StringRef, StringRef>{"summary", Job.Summary},
        {"trace", Job.Trace},
        {"placement", Job.Placement},
        {"curve", Job.Curve}})
    if (!File.empty())
      PM.setDriverOption(Key, File);
  if (Error E = PM.run(G, Ctx))
    return nameFile(std::move(E), Name);
  if (!Job.VerifyEach)
    if (Error E = verifyGraph(G))
      return nameFile(joinErrors(makeError("the pipeline left a malformed graph"),
                               std::move(E)),
                    Name);
  if (Timers && Job.Report) {
    Timers->print(*Job.Report);
    PhaseTimers->print(*Job.Report);
  }
  if (Error E = writeIR(Job, G))
    return E;
  // Everything succeeded: now the files appear, and only then is it said
  // which.
  if (Error E = Outputs.commit())
    return E;
  if (Job.Report)
    for (const std::string &Note : Outputs.getNotes())
      *Job.Report << Note;
  return Error::success();
}

//===----------------------------------------------------------------------===//
// The command line
//===----------------------------------------------------------------------===//

/// The width of -help's lines.
static constexpr unsigned HelpWidth = 100;
/// The column at which -help's descriptions start, at most: cl aligns them
/// after the widest flag ("--training-graph[=<options>] - ").
static constexpr unsigned HelpDescColumn = 34;

/// The overview -help starts with: what dp-opt does, and an example that
/// runs (test/dp-opt/help.test runs it).
static constexpr const char *DefaultOverview =
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

/// dp-opt's flags. They are made when optMain runs, not at load time, so
/// that a program linking this library for runOpt has none.
struct OptFlags {
  cl::OptionCategory Category{"dp-opt options"};
  /// What the flags that describe the job set (cl::location).
  OptJob Job;
  cl::opt<std::string, true> Input{cl::Positional,
                                   cl::desc("<input model or IR>"),
                                   cl::location(Job.Input), cl::init("-"),
                                   cl::cat(Category)};
  cl::opt<std::string, true> Output{"o", cl::desc("Output file"),
                                    cl::value_desc("filename"),
                                    cl::location(Job.Output), cl::init("-"),
                                    cl::cat(Category)};
  cl::opt<bool, true> OutputText{"S", cl::desc("Write the IR as text"),
                                 cl::location(Job.OutputText),
                                 cl::cat(Category)};
  cl::opt<bool, true> Force{"f",
                            cl::desc("Write binary output to a terminal too"),
                            cl::location(Job.Force), cl::cat(Category)};
  cl::opt<bool, true> DisableOutput{"disable-output",
                                    cl::desc("Write no IR output"),
                                    cl::location(Job.DisableOutput),
                                    cl::cat(Category)};
  cl::list<std::string> Passes{
      "passes", cl::desc("Pass pipeline, e.g. 'import-onnx,print-summary'"),
      cl::value_desc("pipeline"), cl::cat(Category)};
  cl::opt<bool> PrintPasses{
      "print-passes",
      cl::desc("List the passes and placers with their options and\n"
               "defaults, and exit"),
      cl::cat(Category)};
  cl::opt<bool> PrintPipeline{
      "print-pipeline", cl::desc("Print the pipeline as -passes text and exit"),
      cl::cat(Category)};
  cl::opt<bool, true> VerifyEach{"verify-each",
                                 cl::desc("Verify the IR after every pass"),
                                 cl::location(Job.VerifyEach),
                                 cl::cat(Category)};
  cl::opt<bool, true> TimePasses{"time-passes",
                                 cl::desc("Report the time of each pass"),
                                 cl::location(Job.TimePasses),
                                 cl::cat(Category)};
  cl::opt<uint64_t, true> Seed{"seed", cl::desc("Seed for randomized passes"),
                               cl::location(Job.Seed), cl::init(0),
                               cl::cat(Category)};
  cl::opt<std::string, true> ClusterSpec{
      "cluster",
      cl::desc("Hardware to place for: a preset (-print-cluster "
               "lists them)\nor a JSON/YAML cluster file"),
      cl::value_desc("preset|file"), cl::location(Job.Cluster),
      cl::cat(Category)};
  cl::opt<bool> PrintCluster{
      "print-cluster",
      cl::desc("Describe the -cluster (default p100x4) and exit"),
      cl::cat(Category)};
  cl::opt<std::string, true> Summary{
      "summary", cl::desc("Write the simulated step's JSON summary here"),
      cl::value_desc("file"), cl::location(Job.Summary), cl::cat(Category)};
  cl::opt<std::string, true> Trace{
      "trace", cl::desc("Write the simulated step as a Chrome trace here"),
      cl::value_desc("file"), cl::location(Job.Trace), cl::cat(Category)};
  cl::opt<std::string, true> Placement{
      "placement",
      cl::desc("Simulate this placement (JSON) instead of the ops' devices"),
      cl::value_desc("file.json"), cl::location(Job.Placement),
      cl::cat(Category)};
  cl::opt<bool> Quiet{"quiet",
                      cl::desc("Print no progress lines while placers search"),
                      cl::cat(Category)};
  cl::opt<std::string, true> Curve{
      "curve",
      cl::desc("Write a searching placer's best step time vs samples\nand "
               "seconds (CSV) here"),
      cl::value_desc("file.csv"), cl::location(Job.Curve), cl::cat(Category)};
  std::vector<PassFlag> PassFlags;

  OptFlags() {
    for (const PassInfo &P : getRegisteredPasses())
      PassFlags.push_back(makePassFlag(P));
  }

  PassFlag makePassFlag(const PassInfo &P) {
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
          cl::cat(Category));
    else
      F.Flag = std::make_unique<cl::list<std::string>>(
          P.Name, cl::desc(*F.Description), cl::value_desc("options"),
          cl::ValueOptional, cl::ZeroOrMore, cl::cat(Category));
    return F;
  }

  /// Joins -passes and the per-pass flags in command-line order.
  std::string buildPipelineText() const {
    std::map<unsigned, std::string> ByPosition;
    for (unsigned I = 0, E = Passes.size(); I != E; ++I)
      ByPosition[Passes.getPosition(I)] = Passes[I];
    for (const PassFlag &F : PassFlags) {
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

  /// The job the parsed command line describes.
  OptJob getJob() const {
    OptJob Parsed = Job;
    Parsed.Pipeline = buildPipelineText();
    Parsed.Progress = Quiet ? nullptr : &errs();
    return Parsed;
  }
};
} // namespace

/// dp's version (the project's, from CMake), then LLVM's.
static void printVersion(raw_ostream &OS) {
  OS << "dp version " << DP_VERSION << '\n';
  cl::PrintVersionMessage();
}

/// -print-cluster: the cluster (default p100x4) and the presets.
static Error printClusterAndPresets(StringRef Spec) {
  Expected<Cluster> C = loadCluster(Spec.empty() ? "p100x4" : Spec);
  if (!C)
    return C.takeError();
  printCluster(outs(), *C);
  outs() << "\npresets:";
  for (StringRef Name : getClusterPresetNames())
    outs() << ' ' << Name;
  outs() << '\n';
  return Error::success();
}

/// -print-pipeline: the pipeline as it parses.
static Error printParsedPipeline(StringRef Text) {
  PassManager PM;
  if (!Text.empty())
    if (Error E = parsePassPipeline(PM, Text))
      return E;
  PM.printPipeline(outs());
  outs() << '\n';
  return Error::success();
}

int optMain(int argc, char **argv, StringRef Tool, StringRef Overview) {
  InitLLVM X(argc, argv);
  static OptFlags Flags;
  cl::HideUnrelatedOptions(Flags.Category);
  cl::SetVersionPrinter(printVersion);
  // -help ends with the placers that --place's description points to.
  std::string PlacerHelp;
  raw_string_ostream PlacerOS(PlacerHelp);
  printPlacerNames(PlacerOS);
  PlacerOS.flush();
  cl::extrahelp PlacerList(PlacerHelp);
  std::string OverviewText =
      Overview.empty() ? std::string(DefaultOverview) : Overview.str();
  cl::ParseCommandLineOptions(argc, argv, OverviewText);

  auto Fail = [&](Error E) {
    printErrors(errs(), Tool, "", std::move(E));
    return 1;
  };
  if (Flags.PrintPasses) {
    printPassNames(outs());
    return 0;
  }
  if (Flags.PrintCluster) {
    if (Error E = printClusterAndPresets(Flags.Job.Cluster))
      return Fail(std::move(E));
    return 0;
  }
  // An empty -passes is a mistake, not "no passes".
  for (const std::string &P : Flags.Passes)
    if (StringRef(P).trim().empty())
      if (Error E = parsePipelineText(P).takeError())
        return Fail(std::move(E));
  OptJob Job = Flags.getJob();
  Job.Tool = Tool.str();
  if (Flags.PrintPipeline) {
    if (Error E = printParsedPipeline(Job.Pipeline))
      return Fail(std::move(E));
    return 0;
  }
  if (Error E = runOpt(Job))
    return Fail(std::move(E));
  return 0;
}

} // namespace dp
