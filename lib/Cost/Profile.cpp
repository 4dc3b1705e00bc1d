//===- Profile.cpp - Per-op times from user profiles ----------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/Cost/Profile.h"
#include "dp/Support/Diagnostics.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <tuple>

using namespace llvm;

namespace dp {

Optional<double> OpProfile::lookup(StringRef Name) const {
  auto It = Seconds.find(Name);
  if (It == Seconds.end())
    return None;
  return It->second;
}

/// Turns a JSON syntax error ("[3:5, byte=40]: Expected ...") into an
/// error at that line and column of \p File.
static Error makeSyntaxError(StringRef File, Error E) {
  std::string Msg = toString(std::move(E));
  unsigned Line = 0, Column = 0;
  StringRef Rest = Msg;
  if (Rest.consume_front("[")) {
    StringRef L = Rest.take_until([](char C) { return C == ':'; });
    Rest = Rest.drop_front(L.size());
    if (Rest.consume_front(":")) {
      StringRef C = Rest.take_until([](char Ch) { return Ch == ','; });
      Rest = Rest.drop_front(C.size());
      if (!to_integer(L, Line) || !to_integer(C, Column))
        Line = Column = 0;
    }
    size_t Colon = Rest.find("]: ");
    if (Colon != StringRef::npos)
      Rest = Rest.drop_front(Colon + 3);
  }
  std::string Text = Rest.str();
  if (!Text.empty())
    Text[0] = toLower(Text[0]);
  return makeFileError(File, Line, Column, "invalid JSON: " + Text);
}

/// The prefix of the autograd engine's event for one backward node.
static constexpr StringLiteral BackwardPrefix =
    "autograd::engine::evaluate_function: ";

/// Slack for "ends within" on microsecond timestamps: Kineto writes three
/// decimals, and ts + dur rounds in the last bit of a 12-digit number.
static constexpr double NestingSlack = 5e-4;

/// The metadata event in which dp's PyTorch runtime records the profiler's
/// own cost (python/dp_torch/profiling.py).
static constexpr StringLiteral OverheadEventName = "dp_profiler_overhead";
/// The metadata event in which it records its own time per node between
/// the nodes' kernels.
static constexpr StringLiteral DispatchEventName = "dp_dispatch";

/// \p Values (sorted in place) combined as \p Stat says.
static double combine(SmallVectorImpl<double> &Values, ProfileStatKind Stat) {
  llvm::sort(Values);
  size_t N = Values.size();
  if (Stat == ProfileStatKind::Min)
    return Values.front();
  if (Stat == ProfileStatKind::Mean)
    return std::accumulate(Values.begin(), Values.end(), 0.0) / N;
  return N % 2 ? Values[N / 2] : (Values[N / 2 - 1] + Values[N / 2]) / 2;
}

/// The least time, in microseconds, an event keeps once the profiler's
/// overhead is taken off (or its duration, if shorter): the overhead is a
/// median, so an event that seems to take less ran for a time the trace
/// cannot tell, and torch without Kineto stamps whole microseconds.
static constexpr double MinCorrectedMicros = 1;

/// An ONNX Runtime profile is a list with "Node" and "Session" events; a
/// Chrome trace in the JSON array format (PyTorch without Kineto) has
/// neither, but has events with a "ph".
static bool isONNXRuntimeProfile(const json::Array &Events) {
  bool HasPhase = false;
  for (const json::Value &V : Events) {
    const json::Object *Event = V.getAsObject();
    if (!Event)
      continue;
    Optional<StringRef> Cat = Event->getString("cat");
    if (Cat && (*Cat == "Node" || *Cat == "Session"))
      return true;
    HasPhase |= Event->get("ph") != nullptr;
  }
  return !HasPhase;
}

namespace {
/// What an event of a Chrome trace is to the attribution of times.
enum class TraceEventKind : uint8_t {
  /// Any other host event: an aten op ("cpu_op"), a Python function, ...
  Other,
  /// A region named by record_function ("cat": "user_annotation").
  Region,
  /// One backward node run by the autograd engine
  /// ("autograd::engine::evaluate_function: MmBackward0").
  Backward,
  /// A host call that launched GPU work ("cuda_runtime", "cuda_driver").
  Launch,
  /// GPU work: "kernel", "gpu_memcpy", "gpu_memset".
  Device,
  /// A region mirrored onto a GPU stream ("gpu_user_annotation").
  DeviceRegion,
};

/// One complete event ("ph": "X") of a Chrome trace.
struct TraceEvent {
  StringRef Name;
  /// Start and duration in microseconds.
  double Start = 0, Dur = 0;
  /// The event's (pid, tid), interned.
  unsigned Thread = 0;
  TraceEventKind Kind = TraceEventKind::Other;
  /// Autograd's "Sequence number", or -1.
  int64_t Seq = -1;
  /// The CUDA "correlation" of a launch and the GPU work it launched, or -1.
  int64_t Correlation = -1;

  bool isHost() const {
    return Kind != TraceEventKind::Device &&
           Kind != TraceEventKind::DeviceRegion;
  }
};

/// What the profiler adds to the duration of an event, in microseconds: a
/// region's own cost, and the cost of each event recorded inside it.
struct ProfilerOverhead {
  double RegionMicros = 0;
  double EventMicros = 0;
  /// The JSON path of the event that gave the figures.
  std::string Path;
};

/// Collects times by name and reports errors at JSON paths.
class ProfileReader {
public:
  explicit ProfileReader(StringRef File) : File(File) {}

  Error error(const Twine &Path, const Twine &Msg) {
    return makeFileError(File, 0, 0, "at " + Path + ": " + Msg);
  }

  /// The "dur" of \p Event at \p Path, in microseconds.
  Expected<double> readDuration(const json::Object &Event, const Twine &Path) {
    const json::Value *Dur = Event.get("dur");
    if (!Dur)
      return error(Path, "the event has no \"dur\"");
    Optional<double> Micros = Dur->getAsNumber();
    if (!Micros || *Micros < 0)
      return error(Path + ".dur", "expected a non-negative number of "
                                  "microseconds");
    return *Micros;
  }

  Error readONNXRuntime(const json::Array &Events) {
    for (size_t I = 0, E = Events.size(); I != E; ++I) {
      std::string Path = ("[" + Twine(I) + "]").str();
      const json::Object *Event = Events[I].getAsObject();
      if (!Event)
        return error(Path, "expected an event object");
      Optional<StringRef> Cat = Event->getString("cat");
      if (!Cat || *Cat != "Node")
        continue;
      const json::Value *NameV = Event->get("name");
      Optional<StringRef> Name = NameV ? NameV->getAsString() : None;
      if (!Name)
        return error(Path + ".name", "expected a string");
      // ONNX Runtime writes "<node>_fence_before", "<node>_kernel_time"
      // and "<node>_fence_after"; only the kernel time is the op's.
      if (!Name->consume_back("_kernel_time"))
        continue;
      Expected<double> Micros = readDuration(*Event, Path);
      if (!Micros)
        return Micros.takeError();
      Durations[*Name].push_back(*Micros / 1e6);
    }
    return Error::success();
  }

  /// Reads the events of a Chrome trace, \p Events at \p ListPath
  /// ("traceEvents", or "" for the JSON array format), and attributes times.
  Error readChromeTrace(const json::Array &Events, StringRef ListPath) {
    for (size_t I = 0, E = Events.size(); I != E; ++I) {
      std::string Path = (ListPath + "[" + Twine(I) + "]").str();
      if (Error Err = readTraceEvent(Events[I], Path))
        return Err;
    }
    return attributeTrace();
  }

  ProfileTimeKind getTimeKind() const {
    return HasKernels ? ProfileTimeKind::Kernel : ProfileTimeKind::Event;
  }

  std::vector<std::string> takeNotes() { return std::move(Notes); }

  /// The median, minimum or mean duration of every name, as \p Stat says.
  StringMap<double> takeTimes(ProfileStatKind Stat) {
    StringMap<double> Times;
    for (auto &KV : Durations)
      Times[KV.getKey()] = combine(KV.getValue(), Stat);
    return Times;
  }

  /// The runtime's seconds per node between kernels, combined over the
  /// pooled profiles as \p Stat says, if they give it.
  Optional<double> takeDispatch(ProfileStatKind Stat) {
    if (DispatchMicros.empty())
      return None;
    return combine(DispatchMicros, Stat) * 1e-6;
  }

  bool empty() const { return Durations.empty(); }

  /// Pools the times of \p Other, a profile of another process, with
  /// these (each reader took its own profiler's overhead off already).
  void absorb(ProfileReader &&Other) {
    for (auto &KV : Other.Durations) {
      SmallVector<double, 1> &D = Durations[KV.getKey()];
      D.append(KV.getValue().begin(), KV.getValue().end());
    }
    for (std::string &Note : Other.Notes)
      if (!llvm::is_contained(Notes, Note))
        Notes.push_back(std::move(Note));
    DispatchMicros.append(Other.DispatchMicros.begin(),
                          Other.DispatchMicros.end());
  }

private:
  /// Reads the integer \p Key of \p Args at \p Path into \p Out: -1 when
  /// absent, negative or out of range (autograd writes UINT64_MAX for nodes
  /// without a sequence number), an error when not a number.
  Error readId(const json::Object *Args, StringRef Key, const Twine &Path,
               int64_t &Out) {
    Out = -1;
    const json::Value *V = Args ? Args->get(Key) : nullptr;
    if (!V)
      return Error::success();
    if (!V->getAsNumber())
      return error(Path + ".args[\"" + Key + "\"]", "expected an integer");
    // DenseMap keeps INT64_MAX (and INT64_MIN) for its own use.
    Optional<int64_t> I = V->getAsInteger();
    if (I && *I >= 0 && *I < std::numeric_limits<int64_t>::max())
      Out = *I;
    return Error::success();
  }

  Error readTraceEvent(const json::Value &Value, const std::string &Path) {
    const json::Object *Event = Value.getAsObject();
    if (!Event)
      return error(Path, "expected an event object");
    Optional<StringRef> Phase = Event->getString("ph");
    Optional<StringRef> MetaName = Event->getString("name");
    if (Phase && *Phase == "M" && MetaName && *MetaName == OverheadEventName)
      return readOverhead(*Event, Path);
    if (Phase && *Phase == "M" && MetaName && *MetaName == DispatchEventName)
      return readDispatch(*Event, Path);
    if (!Phase || *Phase != "X")
      return Error::success();
    TraceEvent T;
    const json::Value *NameV = Event->get("name");
    Optional<StringRef> Name = NameV ? NameV->getAsString() : None;
    if (!Name)
      return error(Path + ".name", "expected a string");
    T.Name = *Name;
    Expected<double> Dur = readDuration(*Event, Path);
    if (!Dur)
      return Dur.takeError();
    T.Dur = *Dur;
    const json::Value *Ts = Event->get("ts");
    if (!Ts)
      return error(Path, "the event has no \"ts\"");
    Optional<double> Start = Ts->getAsNumber();
    if (!Start)
      return error(Path + ".ts", "expected a number of microseconds");
    T.Start = *Start;

    // pid and tid are numbers or strings ("CPU functions", "Spans").
    std::string Key;
    raw_string_ostream OS(Key);
    if (const json::Value *Pid = Event->get("pid"))
      OS << *Pid;
    OS << '/';
    if (const json::Value *Tid = Event->get("tid"))
      OS << *Tid;
    T.Thread = Threads.try_emplace(OS.str(), Threads.size()).first->second;

    const json::Value *ArgsV = Event->get("args");
    const json::Object *Args = ArgsV ? ArgsV->getAsObject() : nullptr;
    if (ArgsV && !Args)
      return error(Path + ".args", "expected an object");
    if (Error Err = readId(Args, "Sequence number", Path, T.Seq))
      return Err;
    if (Error Err = readId(Args, "correlation", Path, T.Correlation))
      return Err;

    StringRef Cat = Event->getString("cat").getValueOr("");
    if (T.Name.startswith(BackwardPrefix))
      T.Kind = TraceEventKind::Backward;
    else if (Cat == "user_annotation")
      T.Kind = TraceEventKind::Region;
    else if (Cat == "cuda_runtime" || Cat == "cuda_driver")
      T.Kind = TraceEventKind::Launch;
    else if (Cat == "kernel" || Cat == "gpu_memcpy" || Cat == "gpu_memset")
      T.Kind = TraceEventKind::Device;
    else if (Cat == "gpu_user_annotation")
      T.Kind = TraceEventKind::DeviceRegion;
    if (Cat == "kernel")
      HasKernels = true;
    if (T.Kind == TraceEventKind::Device && T.Correlation < 0)
      return error(Path + ".args", "the \"" + Cat +
                                       "\" event has no \"correlation\" (the "
                                       "link to its launch, which tells "
                                       "which op ran it)");
    Trace.push_back(T);
    return Error::success();
  }

  /// The error for a second metadata event \p Name at \p Path, the first
  /// being at \p First: each may appear once per trace.
  Error secondEvent(StringRef Name, StringRef First, const std::string &Path) {
    return error(Path, "a second \"" + Name + "\" event (the first is at " +
                           First + ")");
  }

  /// Reads the "args" of the runtime's overhead event \p Event at \p Path.
  Error readOverhead(const json::Object &Event, const std::string &Path) {
    if (Overhead)
      return secondEvent(OverheadEventName, Overhead->Path, Path);
    const json::Object *Args = Event.getObject("args");
    if (!Args)
      return error(Path + ".args", "expected an object with the numbers "
                                   "\"region_us\" and \"op_us\"");
    ProfilerOverhead O;
    O.Path = Path;
    for (auto [Key, Out] : {std::make_pair("region_us", &O.RegionMicros),
                            std::make_pair("op_us", &O.EventMicros)}) {
      const json::Value *V = Args->get(Key);
      Optional<double> Micros = V ? V->getAsNumber() : None;
      if (!Micros || *Micros < 0)
        return error(Path + ".args[\"" + Key + "\"]",
                     "expected a non-negative number of microseconds");
      *Out = *Micros;
    }
    Overhead = std::move(O);
    return Error::success();
  }

  /// Reads the "args" of the runtime's dispatch event \p Event at \p Path.
  Error readDispatch(const json::Object &Event, const std::string &Path) {
    if (!DispatchPath.empty())
      return secondEvent(DispatchEventName, DispatchPath, Path);
    const json::Object *Args = Event.getObject("args");
    const json::Value *V = Args ? Args->get("node_us") : nullptr;
    Optional<double> Micros = V ? V->getAsNumber() : None;
    if (!Micros || *Micros < 0)
      return error(Path + (Args ? ".args[\"node_us\"]" : ".args"),
                   "expected a non-negative number of microseconds");
    DispatchPath = Path;
    DispatchMicros.push_back(*Micros);
    return Error::success();
  }

  /// Times every named event, and the backward of every region.
  Error attributeTrace();

  /// The host events in an order where each comes before the events it
  /// encloses, and each event's innermost enclosing event (or -1).
  struct EventNesting {
    std::vector<unsigned> Order;
    std::vector<int> Parent;
  };
  EventNesting nestHostEvents() const;
  /// Each event's time in microseconds.
  Expected<std::vector<double>>
  computeEventTimes(const EventNesting &Nest) const;
  /// Takes the profiler's overhead off the host times \p Time.
  void removeOverhead(const EventNesting &Nest,
                      MutableArrayRef<double> Time) const;

  /// The regions that own the autograd nodes.
  struct NodeOwners {
    /// Per event, the region around it (or -1).
    std::vector<int> Region;
    /// The event that created each node, by sequence number.
    DenseMap<int64_t, unsigned> Creator;

    /// The region owning node \p Seq, or -1.
    int getOwner(int64_t Seq) const {
      auto It = Creator.find(Seq);
      return Seq < 0 || It == Creator.end() ? -1 : Region[It->second];
    }
  };
  NodeOwners findNodeOwners(const EventNesting &Nest) const;
  void attributeBackward(const EventNesting &Nest, ArrayRef<double> Time);
  void noteUnattributedBackward(bool AnyNumbered, bool HasRegions);

  StringRef File;
  StringMap<SmallVector<double, 1>> Durations;
  std::vector<std::string> Notes;
  std::vector<TraceEvent> Trace;
  StringMap<unsigned> Threads;
  bool HasKernels = false;
  Optional<ProfilerOverhead> Overhead;
  /// The dispatch event's figure (one per pooled profile) and where this
  /// profile gave it.
  SmallVector<double, 1> DispatchMicros;
  std::string DispatchPath;
};
} // namespace

/// Host events by thread, each before the events it encloses: then a
/// stack finds every event's innermost enclosing event, its parent.
ProfileReader::EventNesting ProfileReader::nestHostEvents() const {
  const size_t N = Trace.size();
  EventNesting Nest;
  std::vector<unsigned> &Order = Nest.Order;
  for (unsigned I = 0; I != N; ++I)
    if (Trace[I].isHost())
      Order.push_back(I);
  llvm::sort(Order, [&](unsigned A, unsigned B) {
    const TraceEvent &X = Trace[A], &Y = Trace[B];
    return std::make_tuple(X.Thread, X.Start, -X.Dur, A) <
           std::make_tuple(Y.Thread, Y.Start, -Y.Dur, B);
  });
  Nest.Parent.assign(N, -1);
  SmallVector<unsigned, 16> Stack;
  for (unsigned I : Order) {
    const TraceEvent &E = Trace[I];
    while (!Stack.empty()) {
      const TraceEvent &P = Trace[Stack.back()];
      if (P.Thread == E.Thread &&
          E.Start + E.Dur <= P.Start + P.Dur + NestingSlack)
        break;
      Stack.pop_back();
    }
    if (!Stack.empty())
      Nest.Parent[I] = int(Stack.back());
    Stack.push_back(I);
  }
  return Nest;
}

/// An event's time: its duration, or in a trace with kernels, the GPU work
/// launched inside it, found by the launch's correlation.
Expected<std::vector<double>>
ProfileReader::computeEventTimes(const EventNesting &Nest) const {
  const size_t N = Trace.size();
  std::vector<double> Time(N, 0);
  if (!HasKernels) {
    for (unsigned I = 0; I != N; ++I)
      Time[I] = Trace[I].Dur;
    return std::move(Time);
  }
  DenseMap<int64_t, double> DeviceTime;
  for (const TraceEvent &E : Trace)
    if (E.Kind == TraceEventKind::Device)
      DeviceTime[E.Correlation] += E.Dur;
  bool Linked = false;
  for (unsigned I : Nest.Order) {
    const TraceEvent &E = Trace[I];
    if (E.Kind != TraceEventKind::Launch || E.Correlation < 0)
      continue;
    auto It = DeviceTime.find(E.Correlation);
    if (It == DeviceTime.end())
      continue;
    Time[I] = It->second;
    Linked = true;
  }
  if (!Linked)
    return makeFileError(
        File, 0, 0,
        "the trace has GPU kernels (\"cat\": \"kernel\") but no launch "
        "(\"cat\": \"cuda_runtime\" or \"cuda_driver\") with the "
        "\"correlation\" of any of them: cannot tell which op ran them");
  // Children come after their parent in Order.
  for (unsigned I : llvm::reverse(Nest.Order))
    if (Nest.Parent[I] >= 0)
      Time[Nest.Parent[I]] += Time[I];
  return std::move(Time);
}

// Autograd numbers the nodes it creates per forward thread; every op
// recorded with grad enabled carries the number of the next node, so the
// op that created node S is the last one to start with number S (a
// composite op like aten::matmul starts before the aten::mm that creates
// the node, and ops after it carry S + 1). The region around that op owns
// the node.
ProfileReader::NodeOwners
ProfileReader::findNodeOwners(const EventNesting &Nest) const {
  const size_t N = Trace.size();
  NodeOwners Owners;
  Owners.Region.assign(N, -1);
  std::vector<bool> InBackward(N, false);
  for (unsigned I : Nest.Order) {
    const TraceEvent &E = Trace[I];
    int P = Nest.Parent[I];
    Owners.Region[I] = E.Kind == TraceEventKind::Region ? int(I)
                       : P >= 0                         ? Owners.Region[P]
                                                        : -1;
    InBackward[I] =
        E.Kind == TraceEventKind::Backward || (P >= 0 && InBackward[P]);
    if (InBackward[I] || E.Seq < 0)
      continue;
    auto [It, New] = Owners.Creator.try_emplace(E.Seq, I);
    if (!New && E.Start >= Trace[It->second].Start)
      It->second = I;
  }
  return Owners;
}

/// Says why no backward event could be attributed to a region.
void ProfileReader::noteUnattributedBackward(bool AnyNumbered,
                                             bool HasRegions) {
  if (!AnyNumbered)
    Notes.push_back("the trace's backward events (" + BackwardPrefix.str() +
                    "...) have no \"Sequence number\" (a profiler without "
                    "Kineto?): backward ops keep their estimates");
  else if (!HasRegions)
    Notes.push_back("the trace has no regions (\"cat\": "
                    "\"user_annotation\") to attribute backward events "
                    "to: backward ops keep their estimates");
  else
    Notes.push_back("no op inside a region (\"cat\": \"user_annotation\") "
                    "carries the \"Sequence number\" of a backward event: "
                    "backward ops keep their estimates");
}

/// The node's backward events are the backward of the region that owns
/// the node: "<region>/grad", unless the trace names such events itself.
void ProfileReader::attributeBackward(const EventNesting &Nest,
                                      ArrayRef<double> Time) {
  const size_t N = Trace.size();
  NodeOwners Owners = findNodeOwners(Nest);
  std::vector<double> BackwardTime(N, 0);
  std::vector<bool> HasBackward(N, false);
  unsigned NumBackward = 0, NumNumbered = 0, NumAttributed = 0;
  bool HasRegions = false;
  for (unsigned I : Nest.Order) {
    const TraceEvent &E = Trace[I];
    HasRegions |= E.Kind == TraceEventKind::Region;
    if (E.Kind != TraceEventKind::Backward)
      continue;
    ++NumBackward;
    NumNumbered += E.Seq >= 0;
    int R = Owners.getOwner(E.Seq);
    if (R < 0)
      continue;
    ++NumAttributed;
    // Count a node run inside another node of the same region once
    // (reentrant backward, e.g. checkpointing).
    bool Nested = false;
    for (int P = Nest.Parent[I]; P >= 0 && !Nested; P = Nest.Parent[P])
      Nested = Trace[P].Kind == TraceEventKind::Backward &&
               Owners.getOwner(Trace[P].Seq) == R;
    if (Nested)
      continue;
    BackwardTime[R] += Time[I];
    HasBackward[R] = true;
  }
  if (NumBackward && !NumAttributed)
    noteUnattributedBackward(NumNumbered != 0, HasRegions);

  StringMap<SmallVector<double, 1>> Derived;
  for (unsigned I : Nest.Order)
    if (HasBackward[I])
      Derived[(Trace[I].Name + "/grad").str()].push_back(BackwardTime[I] / 1e6);
  for (auto &KV : Derived)
    Durations.try_emplace(KV.getKey(), std::move(KV.getValue()));
}

// Part of the profiler's own cost lies between an event's start and end
// stamps: what entering and leaving a region takes (R), and what recording
// each event inside it takes (P). dp's runtime measures both before the
// profiled steps; an event with n events nested in it, at any depth, ran
// for its duration less R + P * n. Kernel times need no such correction:
// the profiler runs on the host.
void ProfileReader::removeOverhead(const EventNesting &Nest,
                                   MutableArrayRef<double> Time) const {
  const size_t N = Trace.size();
  std::vector<unsigned> Nested(N, 0);
  // Children come after their parent in Order.
  for (unsigned I : llvm::reverse(Nest.Order))
    if (Nest.Parent[I] >= 0)
      Nested[Nest.Parent[I]] += Nested[I] + 1;
  for (unsigned I : Nest.Order)
    Time[I] = std::max(Time[I] - Overhead->RegionMicros -
                           Overhead->EventMicros * Nested[I],
                       std::min(Time[I], MinCorrectedMicros));
}

Error ProfileReader::attributeTrace() {
  EventNesting Nest = nestHostEvents();
  Expected<std::vector<double>> Time = computeEventTimes(Nest);
  if (!Time)
    return Time.takeError();
  if (Overhead && !HasKernels)
    removeOverhead(Nest, *Time);
  for (unsigned I = 0, N = Trace.size(); I != N; ++I)
    if (!HasKernels || Trace[I].isHost())
      Durations[Trace[I].Name].push_back((*Time)[I] / 1e6);
  attributeBackward(Nest, *Time);
  return Error::success();
}

/// Reads \p Buffer into \p Reader; sets \p Format.
static Error readProfile(MemoryBufferRef Buffer, ProfileReader &Reader,
                         ProfileFormatKind &Format) {
  StringRef File = Buffer.getBufferIdentifier();
  Expected<json::Value> Root = json::parse(Buffer.getBuffer());
  if (!Root)
    return makeSyntaxError(File, Root.takeError());
  Format = ProfileFormatKind::ChromeTrace;
  if (const json::Array *Events = Root->getAsArray()) {
    if (isONNXRuntimeProfile(*Events)) {
      Format = ProfileFormatKind::ONNXRuntime;
      if (Error E = Reader.readONNXRuntime(*Events))
        return E;
    } else if (Error E = Reader.readChromeTrace(*Events, "")) {
      return E;
    }
  } else if (const json::Object *Obj = Root->getAsObject();
             Obj && Obj->get("traceEvents")) {
    const json::Array *Events = Obj->get("traceEvents")->getAsArray();
    if (!Events)
      return Reader.error("traceEvents", "expected a list of events");
    if (Error E = Reader.readChromeTrace(*Events, "traceEvents"))
      return E;
  } else {
    return makeFileError(File, 0, 0,
                         "expected a list of events (ONNX Runtime) or an "
                         "object with \"traceEvents\" (Chrome trace)");
  }
  if (Reader.empty())
    return makeFileError(
        File, 0, 0,
        Format == ProfileFormatKind::ONNXRuntime
            ? "no op times in the profile (expected \"Node\" events named "
              "\"<node>_kernel_time\")"
            : "no op times in the trace (expected events with \"ph\": "
              "\"X\")");
  return Error::success();
}

static StringRef getFormatName(ProfileFormatKind F) {
  return F == ProfileFormatKind::ONNXRuntime ? "an ONNX Runtime profile"
                                             : "a Chrome trace";
}

Expected<OpProfile> OpProfile::parse(ArrayRef<MemoryBufferRef> Buffers,
                                     ProfileStatKind Stat) {
  assert(!Buffers.empty() && "a profile to parse");
  OpProfile P;
  Optional<ProfileReader> Pooled;
  for (MemoryBufferRef Buffer : Buffers) {
    StringRef File = Buffer.getBufferIdentifier();
    ProfileReader Reader(File);
    ProfileFormatKind Format;
    if (Error E = readProfile(Buffer, Reader, Format))
      return std::move(E);
    if (!Pooled) {
      P.Format = Format;
      P.TimeKind = Reader.getTimeKind();
      Pooled.emplace(std::move(Reader));
      continue;
    }
    // Pooled times must measure the same thing.
    if (Format != P.Format)
      return makeFileError(File, 0, 0,
                           "the profile is " + getFormatName(Format) +
                               ", the first (" +
                               Buffers.front().getBufferIdentifier() + ") " +
                               getFormatName(P.Format));
    if (Reader.getTimeKind() != P.TimeKind)
      return makeFileError(
          File, 0, 0,
          "the trace times " + getTimeKindName(Reader.getTimeKind()) +
              ", the first (" + Buffers.front().getBufferIdentifier() + ") " +
              getTimeKindName(P.TimeKind));
    Pooled->absorb(std::move(Reader));
  }
  P.Notes = Pooled->takeNotes();
  P.Seconds = Pooled->takeTimes(Stat);
  P.Dispatch = Pooled->takeDispatch(Stat);
  return std::move(P);
}

StringRef getTimeKindName(ProfileTimeKind K) {
  return K == ProfileTimeKind::Kernel ? "GPU kernels" : "host events";
}

std::vector<std::string> splitProfilePaths(StringRef Value) {
  SmallVector<StringRef, 4> Parts;
  Value.split(Parts, ':', -1, /*KeepEmpty=*/false);
  return std::vector<std::string>(Parts.begin(), Parts.end());
}

Expected<OpProfile> OpProfile::load(ArrayRef<std::string> Paths,
                                    ProfileStatKind Stat) {
  assert(!Paths.empty() && "a profile to load");
  std::vector<std::unique_ptr<MemoryBuffer>> Bufs;
  std::vector<MemoryBufferRef> Refs;
  for (const std::string &Path : Paths) {
    ErrorOr<std::unique_ptr<MemoryBuffer>> Buf = MemoryBuffer::getFile(
        Path, /*IsText=*/true, /*RequiresNullTerminator=*/false);
    if (std::error_code EC = Buf.getError())
      return makeFileError(Path, 0, 0,
                           "cannot read the profile: " + EC.message());
    Refs.push_back((*Buf)->getMemBufferRef());
    Bufs.push_back(std::move(*Buf));
  }
  return parse(Refs, Stat);
}

} // namespace dp
