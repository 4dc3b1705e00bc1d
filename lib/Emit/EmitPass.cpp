//===- EmitPass.cpp - The emit pass ---------------------------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/Emit/EmitPass.h"
#include "dp/Emit/Emit.h"
#include "dp/Emit/PlacedModel.h"
#include "dp/Emit/Schedule.h"
#include "dp/IR/Bytecode.h"
#include "dp/IR/Summary.h"
#include "dp/IR/TextFormat.h"
#include "dp/Sim/SimulatePass.h"
#include "dp/Sim/StepSimulation.h"
#include "dp/Support/Diagnostics.h"
#include "dp/Support/FileOutput.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

#include "onnx/onnx_pb.h"

using namespace llvm;

namespace dp {

namespace {
struct FormatInfo {
  StringLiteral Name;
  /// Appended to the output prefix.
  StringLiteral Suffix;
  StringLiteral Description;
};
} // namespace

static const FormatInfo Formats[NumEmitFormats] = {
#define EMIT_FORMAT(KIND, NAME, SUFFIX, DESCRIPTION, WRITER)                   \
  {NAME, SUFFIX, DESCRIPTION},
#include "dp/Emit/EmitFormats.def"
};

StringRef getEmitFormatName(EmitFormatKind K) {
  return Formats[static_cast<unsigned>(K)].Name;
}

static std::string listFormats() {
  std::string Names;
  for (const FormatInfo &F : Formats)
    Names += (Names.empty() ? "" : ", ") + F.Name.str();
  return Names;
}

static int lookupFormat(StringRef Name) {
  for (unsigned I = 0; I != NumEmitFormats; ++I)
    if (Formats[I].Name == Name)
      return I;
  return -1;
}

OptionTable EmitPass::describeOptions(EmitOptions &O) {
  OptionTable T(name().str());
  std::string FormatUsage;
  for (const FormatInfo &F : Formats)
    FormatUsage += (FormatUsage.empty() ? "" : "+") + F.Name.str();
  // The options print back in printPipeline's own form (F=FILE among
  // them), so the table only parses.
  auto NoPrint = [] { return std::vector<std::string>(); };
  T.custom(
       "format", FormatUsage,
       [&O](StringRef Value) -> Error {
         SmallVector<StringRef, 8> Names;
         Value.split(Names, '+');
         for (StringRef Name : Names) {
           int F = lookupFormat(Name.trim());
           if (F < 0)
             return makeError("unknown format '" + Name.trim() +
                              "' (formats: " + listFormats() +
                              "; join several with '+')");
           O.Formats[F] = true;
         }
         return Error::success();
       },
       NoPrint)
      .text("out", O.Out, "PREFIX|DIR/")
      .text("model", O.Model, "FILE")
      .custom(
          "render", "svg",
          [&O](StringRef Value) -> Error {
            if (Value != "svg")
              return makeError("render takes 'svg' (Graphviz renders the "
                               "dot format to SVG), not '" +
                               Value + "'");
            O.RenderSVG = true;
            O.Formats[unsigned(EmitFormatKind::Dot)] = true;
            return Error::success();
          },
          NoPrint)
      .otherKeys("FORMAT=FILE",
                 [&O](StringRef Key, StringRef Value) -> Error {
                   int F = lookupFormat(Key);
                   if (F < 0)
                     return makeError(
                         "emit: unknown option '" + Key +
                         "' (expected format=, out=, model=, render=svg, or "
                         "a format's name with its file: " +
                         listFormats() + ")");
                   O.Formats[F] = true;
                   O.Paths[F] = Value.str();
                   return Error::success();
                 })
      .check([&O](const OptionTable &T) -> Error {
        if (!is_contained(O.Formats, true))
          return T.makeError("name what to write with format=F+F... (" +
                             listFormats() + ")");
        return Error::success();
      });
  return T;
}

void EmitPass::printPipeline(raw_ostream &OS) const {
  OS << name() << '{';
  ListSeparator LS(",");
  std::string Plain;
  for (unsigned I = 0; I != NumEmitFormats; ++I)
    if (Opts.Formats[I] && Opts.Paths[I].empty() &&
        !(I == unsigned(EmitFormatKind::Dot) && Opts.RenderSVG))
      Plain += (Plain.empty() ? "" : "+") + Formats[I].Name.str();
  if (!Plain.empty())
    OS << LS << "format=" << Plain;
  if (!Opts.Out.empty())
    OS << LS << "out=" << Opts.Out;
  if (!Opts.Model.empty())
    OS << LS << "model=" << Opts.Model;
  for (unsigned I = 0; I != NumEmitFormats; ++I)
    if (!Opts.Paths[I].empty())
      OS << LS << Formats[I].Name << '=' << Opts.Paths[I];
  if (Opts.RenderSVG)
    OS << LS << "render=svg";
  OS << '}';
}

/// Whether \p Input names a file (not a pipe or standard input).
static bool isFileName(StringRef Input) {
  return !Input.empty() && Input != "-" && Input != "<stdin>";
}

/// The output prefix: out= as given, or in the directory it names, the
/// input's file name without its extension.
static Expected<std::string> getOutputPrefix(const EmitOptions &Opts,
                                             const Graph &G,
                                             const PassContext &Ctx) {
  StringRef Input = Ctx.Input.getBufferIdentifier();
  std::string Stem =
      isFileName(Input) ? sys::path::stem(Input).str() : G.getName().str();
  StringRef Out = Opts.Out;
  SmallString<256> Prefix;
  if (Out.empty() || Out.endswith("/") || sys::fs::is_directory(Out)) {
    Prefix = Out;
    sys::path::append(Prefix, Stem);
  } else {
    Prefix = Out;
  }
  StringRef Dir = sys::path::parent_path(Prefix);
  if (!Dir.empty() && !sys::fs::is_directory(Dir))
    return makeError("emit: out=" + Out + ": directory '" + Dir +
                     "' does not exist");
  return std::string(Prefix);
}

/// "gpu:0" -> "gpu_0": a device name as part of a file name.
static std::string sanitizeForFileName(StringRef Name) {
  std::string Out;
  for (char Ch : Name)
    Out += isAlnum(Ch) || Ch == '-' || Ch == '_' || Ch == '.' ? Ch : '_';
  return Out;
}

namespace {
/// Writes the files of one emit run and remembers them for the report.
class Emitter {
public:
  Emitter(const EmitOptions &Opts, std::string Prefix)
      : Opts(Opts), Prefix(std::move(Prefix)) {}

  std::string getPath(EmitFormatKind K) const {
    unsigned I = static_cast<unsigned>(K);
    return Opts.Paths[I].empty() ? Prefix + Formats[I].Suffix.str()
                                 : Opts.Paths[I];
  }
  const std::string &getPrefix() const { return Prefix; }

  Error write(StringRef Path, StringRef What,
              function_ref<void(raw_ostream &)> Body) {
    if (Error E = writeFileAtomically(Path, Body))
      return E;
    Written.emplace_back(Path.str(), What.str());
    return Error::success();
  }
  void wrote(StringRef Path, StringRef What) {
    Written.emplace_back(Path.str(), What.str());
  }
  ArrayRef<std::pair<std::string, std::string>> getWritten() const {
    return Written;
  }

private:
  const EmitOptions &Opts;
  std::string Prefix;
  std::vector<std::pair<std::string, std::string>> Written;
};
} // namespace

/// Renders the Graphviz text \p DotText with \p Dot and returns the SVG.
/// dot reads and writes private temporaries, so the run's outputs stay in
/// its OutputTransaction; \p DotPath only names the graph in errors.
static Expected<std::string> renderSVG(StringRef Dot, StringRef DotText,
                                       StringRef DotPath) {
  SmallString<128> In, Out;
  if (std::error_code EC = sys::fs::createTemporaryFile("dp-emit", "dot", In))
    return makeFileError(DotPath, 0, 0,
                         "emit{render=svg}: cannot create a temporary "
                         "file: " + EC.message());
  FileRemover RemoveIn(In);
  if (std::error_code EC = sys::fs::createTemporaryFile("dp-emit", "svg", Out))
    return makeFileError(DotPath, 0, 0,
                         "emit{render=svg}: cannot create a temporary "
                         "file: " + EC.message());
  FileRemover RemoveOut(Out);
  {
    std::error_code EC;
    raw_fd_ostream OS(In, EC, sys::fs::OF_None);
    if (!EC) {
      OS << DotText;
      OS.close();
      if (OS.has_error())
        EC = OS.error();
    }
    if (EC)
      return makeFileError(DotPath, 0, 0,
                           "emit{render=svg}: cannot write a temporary "
                           "file: " + EC.message());
  }
  std::string ErrMsg;
  SmallVector<StringRef, 6> Args = {Dot, "-Tsvg", "-o", Out, In};
  int RC = sys::ExecuteAndWait(Dot, Args, None, {}, 0, 0, &ErrMsg);
  if (RC != 0)
    return makeFileError(DotPath, 0, 0,
                         "emit{render=svg}: Graphviz's dot failed" +
                             (ErrMsg.empty()
                                  ? Twine(" (exit status ") + Twine(RC) + ")"
                                  : ": " + Twine(ErrMsg)));
  ErrorOr<std::unique_ptr<MemoryBuffer>> Buf = MemoryBuffer::getFile(Out);
  if (!Buf)
    return makeFileError(DotPath, 0, 0,
                         "emit{render=svg}: cannot read dot's output: " +
                             Buf.getError().message());
  return (*Buf)->getBuffer().str();
}

/// The user's ONNX model: model= if given, else the pipeline's input.
static Expected<std::unique_ptr<MemoryBuffer>>
getUserModel(const EmitOptions &Opts, const PassContext &Ctx,
             EmitFormatKind Why) {
  if (!Opts.Model.empty()) {
    ErrorOr<std::unique_ptr<MemoryBuffer>> Buf =
        MemoryBuffer::getFile(Opts.Model, /*IsText=*/false,
                              /*RequiresNullTerminator=*/false);
    if (!Buf)
      return makeFileError(Opts.Model, 0, 0,
                           "emit: cannot read the model: " +
                               Buf.getError().message());
    return std::move(*Buf);
  }
  StringRef Bytes = Ctx.Input.getBuffer();
  if (Bytes.empty() || isBytecode(Bytes) || looksLikeGraphText(Bytes))
    return makeError("emit{format=" + getEmitFormatName(Why) +
                     "} needs the user's ONNX model, and the input is dp "
                     "IR: name the model with model=FILE");
  return MemoryBuffer::getMemBuffer(Ctx.Input,
                                    /*RequiresNullTerminator=*/false);
}

/// Checks that the directory of every file given with F=FILE exists.
static Error checkOutputDirectories(const EmitOptions &Opts) {
  for (unsigned I = 0; I != NumEmitFormats; ++I) {
    if (Opts.Paths[I].empty() || Opts.Paths[I] == "-")
      continue;
    StringRef Dir = sys::path::parent_path(Opts.Paths[I]);
    if (!Dir.empty() && !sys::fs::is_directory(Dir))
      return makeError("emit: " + Formats[I].Name + "=" + Opts.Paths[I] +
                       ": directory '" + Dir + "' does not exist");
  }
  return Error::success();
}

/// Graphviz's dot, for render=svg.
static Expected<std::string> findDot() {
  ErrorOr<std::string> Found = sys::findProgramByName("dot");
  if (!Found)
    return makeError("emit{render=svg}: Graphviz's 'dot' is not on PATH "
                     "(Debian package graphviz)");
  return std::move(*Found);
}

namespace {
/// One run of emit over a simulated placed step: the user's model when a
/// format needs it, then each format's files, in the order of the formats.
class EmitRun {
public:
  EmitRun(const Graph &G, PassContext &Ctx, const EmitOptions &Opts,
          const StepSimulation &Sim, std::string Prefix, std::string Dot)
      : G(G), C(*Ctx.TheCluster), Ctx(Ctx), Opts(Opts),
        S(PlacedStep::build(G, Sim)), E(Opts, std::move(Prefix)),
        Dot(std::move(Dot)) {
    if (const PlacementSearch *Search = Ctx.Analyses.get<PlacementSearch>())
      S.Search = *Search;
    if (const PlanSearch *Plans = Ctx.Analyses.get<PlanSearch>())
      S.Plans = *Plans;
    StringRef Input =
        Opts.Model.empty() ? Ctx.Input.getBufferIdentifier() : Opts.Model;
    if (isFileName(Input))
      S.ModelFile = Input.str();
  }

  /// Reads and maps the user's model and computes the device map, before
  /// anything is written.
  Error prepare();
  /// Writes the files of every format asked for.
  Error writeFormats();
  /// Says on the pass's report what was written and the warnings.
  void report(raw_ostream &OS) const;

private:
  Error writeFile(EmitFormatKind K, function_ref<void(raw_ostream &)> Body) {
    return E.write(E.getPath(K), getFormat(K).Description, Body);
  }
  static const FormatInfo &getFormat(EmitFormatKind K) {
    return Formats[static_cast<unsigned>(K)];
  }

  Error writePlacedModel();
  Error writeSplit();
  Error writeJSON() {
    return writeFile(EmitFormatKind::JSON,
                     [&](raw_ostream &OS) { writePlacementJSON(OS, S); });
  }
  Error writeDeviceMapFile() {
    if (Error Err = writeFile(EmitFormatKind::DeviceMap, [&](raw_ostream &OS) {
          writeDeviceMap(OS, S, Map);
        }))
      return Err;
    if (!S.Plan || S.Plan->Replicas <= 1)
      return Error::success();
    // Replica 0's map is the one above; each other replica gets its own,
    // its devices the copies of replica 0's ("m.replica1.device_map.json").
    std::string Path = E.getPath(EmitFormatKind::DeviceMap);
    StringRef Stem = Path;
    Stem.consume_back(".json");
    Stem.consume_back(".device_map");
    for (unsigned Rep = 1; Rep != S.Plan->Replicas; ++Rep) {
      DeviceMap Copy = Map;
      for (DeviceMap::Entry &Entry : Copy.Entries)
        Entry.Device = getReplicaDevice(C, *S.Plan, Entry.Device, Rep);
      std::string Name =
          (Stem + ".replica" + Twine(Rep) + StringRef(Path).substr(Stem.size()))
              .str();
      if (Error Err = E.write(
              Name, "PyTorch device_map of replica " + std::to_string(Rep),
              [&](raw_ostream &OS) { writeDeviceMap(OS, S, Copy); }))
        return Err;
    }
    return Error::success();
  }
  Error writeTrace() {
    return writeFile(EmitFormatKind::Trace, [&](raw_ostream &OS) {
      writeChromeTrace(OS, G, C, S.Result);
    });
  }
  Error writeDotFiles();
  Error writeReportFile() {
    return writeFile(EmitFormatKind::Report,
                     [&](raw_ostream &OS) { writeReport(OS, S); });
  }
  Error writeHTML() {
    return writeFile(EmitFormatKind::HTML, [&](raw_ostream &OS) {
      writeHTMLReport(OS, S, GraphSVG);
    });
  }

  /// The writer of format \p K.
  Error writeFormat(EmitFormatKind K);

  const Graph &G;
  const Cluster &C;
  PassContext &Ctx;
  const EmitOptions &Opts;
  PlacedStep S;
  Emitter E;
  /// Graphviz's dot, for render=svg.
  std::string Dot;
  /// The user's model, mapped to S, for onnx and split, its segments and
  /// the schedule that both write.
  std::unique_ptr<MemoryBuffer> ModelBuffer;
  Optional<PlacedModel> PM;
  Optional<ModelSegments> Segments;
  StepSchedule Schedule;
  DeviceMap Map;
  /// The rendered graph, for the HTML report.
  std::string GraphSVG;
};
} // namespace

Error EmitRun::writeFormat(EmitFormatKind K) {
  using Writer = Error (EmitRun::*)();
  static constexpr Writer Writers[NumEmitFormats] = {
#define EMIT_FORMAT(KIND, NAME, SUFFIX, DESCRIPTION, WRITER) &EmitRun::WRITER,
#include "dp/Emit/EmitFormats.def"
  };
  return (this->*Writers[static_cast<unsigned>(K)])();
}

Error EmitRun::prepare() {
  if (Opts.has(EmitFormatKind::ONNX) || Opts.has(EmitFormatKind::Split)) {
    EmitFormatKind Why = Opts.has(EmitFormatKind::ONNX) ? EmitFormatKind::ONNX
                                                        : EmitFormatKind::Split;
    Expected<std::unique_ptr<MemoryBuffer>> Buf = getUserModel(Opts, Ctx, Why);
    if (!Buf)
      return Buf.takeError();
    ModelBuffer = std::move(*Buf);
    Expected<PlacedModel> Built = PlacedModel::build(
        MemoryBufferRef(ModelBuffer->getBuffer(),
                        Opts.Model.empty() ? Ctx.Input.getBufferIdentifier()
                                           : StringRef(Opts.Model)),
        S);
    if (!Built)
      return Built.takeError();
    PM.emplace(std::move(*Built));
    // One segmentation and one schedule, which the placed model and the
    // split manifest both carry.
    Expected<ModelSegments> Segs = PM->segment(getEmitFormatName(Why));
    if (!Segs)
      return Segs.takeError();
    Segments.emplace(std::move(*Segs));
    Schedule = computeStepSchedule(S, *PM, *Segments);
    if (S.Plan) {
      Expected<std::vector<unsigned>> Stages =
          getStageSegments(S, *PM, *Segments);
      if (!Stages)
        return Stages.takeError();
      Schedule.StageSegments = std::move(*Stages);
    }
  }
  if (Opts.has(EmitFormatKind::DeviceMap)) {
    Map = computeDeviceMap(S);
    S.Warnings.insert(S.Warnings.end(), Map.Warnings.begin(),
                      Map.Warnings.end());
    std::string Folded = describeFoldedBatchNorm(*S.G);
    if (!Folded.empty())
      S.Warnings.push_back(
          "device_map: " + Folded +
          ": the export folded BatchNorm into the convolutions, so the "
          "device_map names no BatchNorm parameter and accelerate finds "
          "the model's missing from it; export with "
          "training=torch.onnx.TrainingMode.PRESERVE for a map of the "
          "model's own parameters");
  }
  return Error::success();
}

Error EmitRun::writePlacedModel() {
  std::unique_ptr<onnx::ModelProto> Placed =
      PM->makePlacedModel(*Segments, Schedule);
  if (Error Err = checkONNXModel(*Placed, "the placed model"))
    return Err;
  std::string Path = E.getPath(EmitFormatKind::ONNX);
  if (Error Err = writeONNXModel(Path, *Placed))
    return Err;
  E.wrote(Path, getFormat(EmitFormatKind::ONNX).Description);
  return Error::success();
}

Error EmitRun::writeSplit() {
  Expected<SplitModel> Split = PM->split(*Segments);
  if (!Split)
    return Split.takeError();
  // Segment files beside the manifest, named after their devices and
  // their position on the device.
  std::string Manifest = E.getPath(EmitFormatKind::Split);
  StringRef Base = Manifest;
  if (!Base.consume_back(".split.json"))
    Base.consume_back(".json");
  std::vector<std::string> Files, Paths, Whats;
  for (unsigned K = 0, N = Split->Segments.size(); K != N; ++K) {
    const SplitModel::Segment &Seg = Split->Segments[K];
    StringRef DevName = C.getDevices()[Seg.Device].Name;
    std::string Path = Base.str() + "." + sanitizeForFileName(DevName) + "." +
                       std::to_string(Seg.IndexOnDevice) + ".onnx";
    while (is_contained(Paths, Path))
      Path.insert(Path.size() - 5, "_");
    std::string What =
        "segment " + std::to_string(Seg.IndexOnDevice) + " on " + DevName.str();
    if (Error Err =
            checkONNXModel(*Split->Models[K], "the submodel of " + What))
      return Err;
    Paths.push_back(Path);
    Files.push_back(sys::path::filename(Path).str());
    Whats.push_back("submodel of " + What);
  }
  for (unsigned I = 0, N = Paths.size(); I != N; ++I) {
    if (Error Err = writeONNXModel(Paths[I], *Split->Models[I]))
      return Err;
    E.wrote(Paths[I], Whats[I]);
  }
  return E.write(Manifest, getFormat(EmitFormatKind::Split).Description,
                 [&](raw_ostream &OS) {
                   writeSplitManifest(OS, S, *PM, *Split, Files, Schedule);
                 });
}

Error EmitRun::writeDotFiles() {
  std::string Path = E.getPath(EmitFormatKind::Dot);
  std::string DotText;
  {
    raw_string_ostream DotOS(DotText);
    writeDot(DotOS, S);
  }
  if (Error Err = E.write(Path, getFormat(EmitFormatKind::Dot).Description,
                          [&](raw_ostream &OS) { OS << DotText; }))
    return Err;
  if (!Opts.RenderSVG)
    return Error::success();
  Expected<std::string> SVG = renderSVG(Dot, DotText, Path);
  if (!SVG)
    return SVG.takeError();
  std::string SVGPath =
      (StringRef(Path).endswith(".dot") ? StringRef(Path).drop_back(4)
                                        : StringRef(Path))
          .str() +
      ".svg";
  if (Error Err = E.write(SVGPath, "Graphviz rendering",
                          [&](raw_ostream &OS) { OS << *SVG; }))
    return Err;
  if (Opts.has(EmitFormatKind::HTML))
    GraphSVG = std::move(*SVG);
  return Error::success();
}

Error EmitRun::writeFormats() {
  for (unsigned I = 0; I != NumEmitFormats; ++I)
    if (Opts.Formats[I])
      if (Error Err = writeFormat(EmitFormatKind(I)))
        return Err;
  return Error::success();
}

void EmitRun::report(raw_ostream &OS) const {
  for (const std::string &W : S.Warnings)
    OS << "emit: warning: " << W << '\n';
  // Inside a transaction the files are not there yet: the tool says so
  // once it committed them.
  OutputTransaction *T = OutputTransaction::getCurrent();
  for (const auto &[Path, What] : E.getWritten()) {
    if (Path == "-")
      continue;
    std::string Line = "emit: wrote " + Path + " (" + What + ")\n";
    if (T)
      T->addNote(std::move(Line));
    else
      OS << Line;
  }
}

Error EmitPass::run(Graph &G, PassContext &Ctx) {
  if (!Ctx.TheCluster)
    return makeError("emit needs a cluster: pass -cluster=<preset|file>");
  Expected<std::string> Prefix = getOutputPrefix(Opts, G, Ctx);
  if (!Prefix)
    return Prefix.takeError();
  if (Error E = checkOutputDirectories(Opts))
    return E;
  std::string Dot;
  if (Opts.RenderSVG) {
    Expected<std::string> Found = findDot();
    if (!Found)
      return Found.takeError();
    Dot = std::move(*Found);
  }
  // The step simulate simulated, when it ran on this graph.
  Expected<const StepSimulation *> Sim =
      getStepSimulation(G, *Ctx.TheCluster, Ctx.Analyses);
  if (!Sim)
    return Sim.takeError();

  EmitRun Run(G, Ctx, Opts, **Sim, std::move(*Prefix), std::move(Dot));
  if (Error E = Run.prepare())
    return E;
  if (Error E = Run.writeFormats())
    return E;
  if (Ctx.Report)
    Run.report(*Ctx.Report);
  return Error::success();
}

} // namespace dp
