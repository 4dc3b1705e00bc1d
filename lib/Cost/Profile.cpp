//===- Profile.cpp - Per-op times from user profiles ----------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/Cost/Profile.h"
#include "dp/Support/Diagnostics.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>

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

namespace {
/// Collects durations by name and reports errors at JSON paths.
class ProfileReader {
public:
  explicit ProfileReader(StringRef File) : File(File) {}

  Error error(const Twine &Path, const Twine &Msg) {
    return makeFileError(File, 0, 0, "at " + Path + ": " + Msg);
  }

  /// Reads "dur" (microseconds) of \p Event at \p Path for \p Name.
  Error addEvent(const json::Object &Event, const Twine &Path, StringRef Name) {
    const json::Value *Dur = Event.get("dur");
    if (!Dur)
      return error(Path, "the event has no \"dur\"");
    Optional<double> Micros = Dur->getAsNumber();
    if (!Micros || *Micros < 0)
      return error(Path + ".dur", "expected a non-negative number of "
                                  "microseconds");
    Durations[Name].push_back(*Micros / 1e6);
    return Error::success();
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
      if (Error Err = addEvent(*Event, Path, *Name))
        return Err;
    }
    return Error::success();
  }

  Error readChromeTrace(const json::Value &Events) {
    const json::Array *List = Events.getAsArray();
    if (!List)
      return error("traceEvents", "expected a list of events");
    for (size_t I = 0, E = List->size(); I != E; ++I) {
      std::string Path = ("traceEvents[" + Twine(I) + "]").str();
      const json::Object *Event = (*List)[I].getAsObject();
      if (!Event)
        return error(Path, "expected an event object");
      Optional<StringRef> Phase = Event->getString("ph");
      if (!Phase || *Phase != "X")
        continue;
      const json::Value *NameV = Event->get("name");
      Optional<StringRef> Name = NameV ? NameV->getAsString() : None;
      if (!Name)
        return error(Path + ".name", "expected a string");
      if (Error Err = addEvent(*Event, Path, *Name))
        return Err;
    }
    return Error::success();
  }

  /// The median duration of every name.
  StringMap<double> takeMedians() {
    StringMap<double> Medians;
    for (auto &KV : Durations) {
      SmallVector<double, 1> &D = KV.getValue();
      llvm::sort(D);
      size_t N = D.size();
      Medians[KV.getKey()] = N % 2 ? D[N / 2] : (D[N / 2 - 1] + D[N / 2]) / 2;
    }
    return Medians;
  }

  bool empty() const { return Durations.empty(); }

private:
  StringRef File;
  StringMap<SmallVector<double, 1>> Durations;
};
} // namespace

Expected<OpProfile> OpProfile::parse(MemoryBufferRef Buffer) {
  StringRef File = Buffer.getBufferIdentifier();
  Expected<json::Value> Root = json::parse(Buffer.getBuffer());
  if (!Root)
    return makeSyntaxError(File, Root.takeError());
  OpProfile P;
  ProfileReader Reader(File);
  if (const json::Array *Events = Root->getAsArray()) {
    P.Format = ProfileFormatKind::ONNXRuntime;
    if (Error E = Reader.readONNXRuntime(*Events))
      return std::move(E);
  } else if (const json::Object *Obj = Root->getAsObject();
             Obj && Obj->get("traceEvents")) {
    P.Format = ProfileFormatKind::ChromeTrace;
    if (Error E = Reader.readChromeTrace(*Obj->get("traceEvents")))
      return std::move(E);
  } else {
    return makeFileError(File, 0, 0,
                         "expected a list of events (ONNX Runtime) or an "
                         "object with \"traceEvents\" (Chrome trace)");
  }
  if (Reader.empty())
    return makeFileError(
        File, 0, 0,
        P.Format == ProfileFormatKind::ONNXRuntime
            ? "no op times in the profile (expected \"Node\" events named "
              "\"<node>_kernel_time\")"
            : "no op times in the trace (expected events with \"ph\": "
              "\"X\")");
  P.Seconds = Reader.takeMedians();
  return std::move(P);
}

Expected<OpProfile> OpProfile::load(StringRef Path) {
  ErrorOr<std::unique_ptr<MemoryBuffer>> Buf = MemoryBuffer::getFile(
      Path, /*IsText=*/true, /*RequiresNullTerminator=*/false);
  if (std::error_code EC = Buf.getError())
    return makeFileError(Path, 0, 0,
                         "cannot read the profile: " + EC.message());
  return parse((*Buf)->getMemBufferRef());
}

} // namespace dp
