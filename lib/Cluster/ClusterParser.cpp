//===- ClusterParser.cpp - Clusters from JSON and YAML --------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Reads a cluster description (docs/clusters.md gives the schema) from JSON,
/// with llvm::json, or YAML, with llvm::yaml's node API. Both are first
/// turned into one small document tree that knows each value's path
/// ("devices[2].type") and, for YAML, its line and column; the schema is
/// then checked once over that tree. llvm::json keeps no positions, so
/// errors in a JSON file give line and column for syntax errors only, and
/// the path for the rest.
///
//===----------------------------------------------------------------------===//

#include "dp/Cluster/Cluster.h"
#include "dp/Support/Diagnostics.h"
#include "dp/Support/EnumNames.h"

#include "llvm/ADT/Optional.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/YAMLParser.h"

#include <cmath>
#include <limits>

using namespace llvm;

namespace dp {

namespace {

/// A value of the file, JSON or YAML, with where it is.
struct DocNode {
  enum class NodeKind { Null, Bool, Number, String, Map, Seq };
  NodeKind Kind = NodeKind::Null;
  /// The text of a string; every YAML scalar is a string.
  std::string Text;
  double Number = 0;
  bool Bool = false;
  /// The key of a mapping entry; empty for sequence elements and the root.
  std::string Key;
  /// A mapping's entries (in file order; for JSON sorted by key, as
  /// llvm::json keeps no order) or a sequence's elements.
  std::vector<DocNode> Children;
  /// From the root, as in "devices[2].type"; empty for the root itself.
  std::string Path;
  /// 1-based line and column of the value and, in a mapping, of its key;
  /// 0 where unknown (JSON).
  unsigned Line = 0, Column = 0;
  unsigned KeyLine = 0, KeyColumn = 0;

  bool isMap() const { return Kind == NodeKind::Map; }
  bool isSeq() const { return Kind == NodeKind::Seq; }
  bool isString() const { return Kind == NodeKind::String; }

  const DocNode *lookup(StringRef K) const {
    assert(isMap() && "lookup in a non-mapping");
    for (const DocNode &C : Children)
      if (C.Key == K)
        return &C;
    return nullptr;
  }
};
} // namespace

static constexpr EnumEntry<DocNode::NodeKind> NodeKindDescriptions[] = {
    {"null", DocNode::NodeKind::Null},
    {"a boolean", DocNode::NodeKind::Bool},
    {"a number", DocNode::NodeKind::Number},
    {"a string", DocNode::NodeKind::String},
    {"a mapping", DocNode::NodeKind::Map},
    {"a sequence", DocNode::NodeKind::Seq},
};

static StringRef describeKind(const DocNode &N) {
  return getEnumName<DocNode::NodeKind>(NodeKindDescriptions, N.Kind);
}

static std::string childPath(StringRef Parent, StringRef Key) {
  return Parent.empty() ? Key.str() : (Parent + "." + Key).str();
}

static std::string elementPath(StringRef Parent, unsigned Index) {
  return (Parent + "[" + Twine(Index) + "]").str();
}

//===----------------------------------------------------------------------===//
// JSON
//===----------------------------------------------------------------------===//

static DocNode convertJSON(const json::Value &V, std::string Path) {
  DocNode N;
  N.Path = std::move(Path);
  switch (V.kind()) {
  case json::Value::Null:
    N.Kind = DocNode::NodeKind::Null;
    break;
  case json::Value::Boolean:
    N.Kind = DocNode::NodeKind::Bool;
    N.Bool = *V.getAsBoolean();
    break;
  case json::Value::Number:
    N.Kind = DocNode::NodeKind::Number;
    N.Number = *V.getAsNumber();
    break;
  case json::Value::String:
    N.Kind = DocNode::NodeKind::String;
    N.Text = V.getAsString()->str();
    break;
  case json::Value::Array: {
    N.Kind = DocNode::NodeKind::Seq;
    const json::Array &A = *V.getAsArray();
    for (unsigned I = 0, E = A.size(); I != E; ++I)
      N.Children.push_back(convertJSON(A[I], elementPath(N.Path, I)));
    break;
  }
  case json::Value::Object: {
    N.Kind = DocNode::NodeKind::Map;
    const json::Object &O = *V.getAsObject();
    std::vector<StringRef> Keys;
    for (const auto &KV : O)
      Keys.push_back(KV.first);
    llvm::sort(Keys);
    for (StringRef K : Keys) {
      N.Children.push_back(convertJSON(*O.get(K), childPath(N.Path, K)));
      N.Children.back().Key = K.str();
    }
    break;
  }
  }
  return N;
}

/// llvm::json::ParseError keeps its position private and writes it as
/// "[line:column, byte=offset]: message"; this takes it apart again.
static Error makeJSONSyntaxError(StringRef File, Error E) {
  std::string Text = toString(std::move(E));
  StringRef Rest = Text;
  unsigned Line = 0, Column = 0;
  if (Rest.consume_front("[") && !Rest.consumeInteger(10, Line) &&
      Rest.consume_front(":") && !Rest.consumeInteger(10, Column)) {
    size_t End = Rest.find("]: ");
    if (End != StringRef::npos)
      return makeFileError(File, Line, Column,
                           "invalid JSON: " + Rest.drop_front(End + 3));
  }
  return makeFileError(File, 0, 0, "invalid JSON: " + Text);
}

//===----------------------------------------------------------------------===//
// YAML
//===----------------------------------------------------------------------===//

namespace {
/// Turns llvm::yaml nodes into DocNodes, stopping at the first error.
class YAMLConverter {
public:
  YAMLConverter(StringRef File, SourceMgr &SM) : File(File), SM(SM) {}

  /// A cluster file nests a few levels; deeper input is refused before
  /// the recursion (here and in the YAML parser, which parses a
  /// collection as it is walked) can exhaust the stack.
  static constexpr unsigned MaxDepth = 64;

  Expected<DocNode> convert(yaml::Node *Node, std::string Path,
                            unsigned Depth = 0) {
    DocNode N;
    N.Path = std::move(Path);
    setPosition(Node, N.Line, N.Column);
    if (Depth > MaxDepth)
      return makeFileError(File, N.Line, N.Column,
                           "nested more than " + Twine(MaxDepth) +
                               " levels deep");
    // A flow collection's range starts after its '[' or '{'.
    if (isa<yaml::SequenceNode>(Node) || isa<yaml::MappingNode>(Node))
      setFlowPosition(Node, isa<yaml::SequenceNode>(Node) ? '[' : '{', N.Line,
                      N.Column);
    if (isa<yaml::NullNode>(Node))
      return N;
    if (auto *S = dyn_cast<yaml::ScalarNode>(Node)) {
      SmallString<64> Storage;
      N.Kind = DocNode::NodeKind::String;
      N.Text = S->getValue(Storage).str();
      return N;
    }
    if (auto *S = dyn_cast<yaml::BlockScalarNode>(Node)) {
      N.Kind = DocNode::NodeKind::String;
      N.Text = S->getValue().str();
      return N;
    }
    if (auto *Seq = dyn_cast<yaml::SequenceNode>(Node)) {
      N.Kind = DocNode::NodeKind::Seq;
      unsigned I = 0;
      for (yaml::Node &Element : *Seq) {
        Expected<DocNode> C =
            convert(&Element, elementPath(N.Path, I++), Depth + 1);
        if (!C)
          return C.takeError();
        N.Children.push_back(std::move(*C));
      }
      return N;
    }
    if (auto *Map = dyn_cast<yaml::MappingNode>(Node)) {
      N.Kind = DocNode::NodeKind::Map;
      for (yaml::KeyValueNode &KV : *Map) {
        auto *Key = dyn_cast_or_null<yaml::ScalarNode>(KV.getKey());
        if (!Key) {
          DocNode At;
          setPosition(KV.getKey() ? KV.getKey() : &KV, At.Line, At.Column);
          return makeFileError(File, At.Line, At.Column,
                               "expected a plain key");
        }
        SmallString<32> KeyStorage;
        std::string KeyText = Key->getValue(KeyStorage).str();
        yaml::Node *Value = KV.getValue();
        if (!Value)
          return makeFileError(File, N.Line, N.Column, "invalid YAML");
        Expected<DocNode> C =
            convert(Value, childPath(N.Path, KeyText), Depth + 1);
        if (!C)
          return C.takeError();
        C->Key = std::move(KeyText);
        setPosition(Key, C->KeyLine, C->KeyColumn);
        // An empty value has no position of its own: point at its key.
        if (C->Kind == DocNode::NodeKind::Null) {
          C->Line = C->KeyLine;
          C->Column = C->KeyColumn;
        }
        N.Children.push_back(std::move(*C));
      }
      return N;
    }
    if (isa<yaml::AliasNode>(Node))
      return makeFileError(File, N.Line, N.Column,
                           "YAML aliases are not supported here");
    return makeFileError(File, N.Line, N.Column, "unexpected YAML node");
  }

private:
  void setFlowPosition(yaml::Node *Node, char Open, unsigned &Line,
                       unsigned &Column) {
    SMLoc Loc = Node->getSourceRange().Start;
    if (!Loc.isValid())
      return;
    StringRef Buffer =
        SM.getMemoryBuffer(SM.FindBufferContainingLoc(Loc))->getBuffer();
    const char *P = Loc.getPointer();
    while (P > Buffer.begin() && StringRef(" \t\r\n").contains(P[-1]))
      --P;
    if (P > Buffer.begin() && P[-1] == Open)
      std::tie(Line, Column) =
          SM.getLineAndColumn(SMLoc::getFromPointer(P - 1));
  }

  void setPosition(yaml::Node *Node, unsigned &Line, unsigned &Column) {
    SMLoc Loc = Node->getSourceRange().Start;
    if (!Loc.isValid())
      return;
    std::tie(Line, Column) = SM.getLineAndColumn(Loc);
  }

  StringRef File;
  SourceMgr &SM;
};
} // namespace

static Expected<DocNode> parseYAML(MemoryBufferRef Buffer) {
  StringRef File = Buffer.getBufferIdentifier();
  SourceMgr SM;
  // The first diagnostic of the YAML parser; later ones tend to follow
  // from it.
  Optional<SMDiagnostic> FirstDiag;
  SM.setDiagHandler(
      [](const SMDiagnostic &D, void *Context) {
        auto &First = *static_cast<Optional<SMDiagnostic> *>(Context);
        if (!First)
          First = D;
      },
      &FirstDiag);
  auto SyntaxError = [&]() {
    // LLVM's YAML scanner, like YAML 1.1, ends a plain scalar at ':' inside
    // [...] and {...}, which trips over device names like gpu:0.
    StringRef Hint =
        FirstDiag->getMessage().contains("unexpected ':'")
            ? " (inside [...] or {...}, quote names with ':', as \"gpu:0\")"
            : "";
    return makeFileError(File, FirstDiag->getLineNo(),
                         FirstDiag->getColumnNo() + 1,
                         "invalid YAML: " + FirstDiag->getMessage() + Hint);
  };

  yaml::Stream Stream(Buffer, SM, /*ShowColors=*/false);
  yaml::document_iterator DocIt = Stream.begin();
  if (FirstDiag)
    return SyntaxError();
  if (DocIt == Stream.end())
    return makeFileError(File, 0, 0, "the file is empty");
  yaml::Node *Root = DocIt->getRoot();
  if (FirstDiag)
    return SyntaxError();
  if (!Root || isa<yaml::NullNode>(Root))
    return makeFileError(File, 0, 0, "the file is empty");
  YAMLConverter Converter(File, SM);
  Expected<DocNode> Doc = Converter.convert(Root, "");
  if (FirstDiag) {
    consumeError(Doc.takeError());
    return SyntaxError();
  }
  if (!Doc)
    return Doc.takeError();
  if (++DocIt != Stream.end()) {
    if (FirstDiag)
      return SyntaxError();
    SMLoc Loc =
        DocIt->getRoot() ? DocIt->getRoot()->getSourceRange().Start : SMLoc();
    unsigned Line = 0, Column = 0;
    if (Loc.isValid())
      std::tie(Line, Column) = SM.getLineAndColumn(Loc);
    return makeFileError(File, Line, Column,
                         "expected one YAML document, found more");
  }
  if (FirstDiag)
    return SyntaxError();
  return Doc;
}

//===----------------------------------------------------------------------===//
// Quantities with units
//===----------------------------------------------------------------------===//

namespace {
enum class QuantityKind { Bytes, Bandwidth, Flops, Time };
} // namespace

static StringRef describeQuantity(QuantityKind K) {
  switch (K) {
  case QuantityKind::Bytes:
    return "a size like '12 GiB' or a number of bytes";
  case QuantityKind::Bandwidth:
    return "a bandwidth like '15.75 GB/s' or '100 Gb/s', or a number of "
           "bytes/s";
  case QuantityKind::Flops:
    return "a rate like '9.3 TFLOP/s' or a number of FLOP/s";
  case QuantityKind::Time:
    return "a time like '5 us' or a number of seconds";
  }
  llvm_unreachable("unknown QuantityKind");
}

/// The multiplier of a decimal (k, M, G, T, P) or, where \p AllowBinary,
/// binary (Ki, Mi, Gi, Ti, Pi) prefix at the front of \p Unit, which is
/// consumed; 1 if there is none.
static double consumePrefix(StringRef &Unit, bool AllowBinary) {
  static const struct {
    const char *Prefix;
    double Factor;
  } Prefixes[] = {{"Ki", 0x1p10}, {"Mi", 0x1p20}, {"Gi", 0x1p30},
                  {"Ti", 0x1p40}, {"Pi", 0x1p50}, {"k", 1e3},
                  {"K", 1e3},     {"M", 1e6},     {"G", 1e9},
                  {"T", 1e12},    {"P", 1e15}};
  for (const auto &P : Prefixes) {
    bool Binary = P.Prefix[1] == 'i';
    if ((AllowBinary || !Binary) && Unit.size() > strlen(P.Prefix) &&
        Unit.consume_front(P.Prefix))
      return P.Factor;
  }
  return 1;
}

/// The factor of \p Unit for a quantity of kind \p K, or None.
static Optional<double> getUnitFactor(StringRef Unit, QuantityKind K) {
  if (Unit.empty())
    return 1.0;
  switch (K) {
  case QuantityKind::Bytes: {
    double F = consumePrefix(Unit, /*AllowBinary=*/true);
    if (Unit == "B")
      return F;
    return None;
  }
  case QuantityKind::Bandwidth: {
    StringRef Bits = Unit;
    double F = consumePrefix(Unit, /*AllowBinary=*/true);
    if (Unit == "B/s")
      return F;
    F = consumePrefix(Bits, /*AllowBinary=*/false);
    if (Bits == "b/s" || Bits == "bit/s")
      return F / 8;
    return None;
  }
  case QuantityKind::Flops: {
    double F = consumePrefix(Unit, /*AllowBinary=*/false);
    if (Unit == "FLOP/s" || Unit == "FLOPS")
      return F;
    return None;
  }
  case QuantityKind::Time:
    return StringSwitch<Optional<double>>(Unit)
        .Case("s", 1.0)
        .Case("ms", 1e-3)
        .Cases("us", "\xC2\xB5s", 1e-6)
        .Case("ns", 1e-9)
        .Default(None);
  }
  llvm_unreachable("unknown QuantityKind");
}

/// Parses "<number> [unit]": the number as C writes it (sign, digits,
/// fraction, exponent), then optional spaces and a unit.
static Optional<double> parseQuantityText(StringRef Text, QuantityKind K) {
  Text = Text.trim();
  size_t I = 0;
  auto Digits = [&] {
    size_t Start = I;
    while (I < Text.size() && isDigit(Text[I]))
      ++I;
    return I - Start;
  };
  if (I < Text.size() && (Text[I] == '+' || Text[I] == '-'))
    ++I;
  size_t Mantissa = Digits();
  if (I < Text.size() && Text[I] == '.') {
    ++I;
    Mantissa += Digits();
  }
  if (!Mantissa)
    return None;
  if (I < Text.size() && (Text[I] == 'e' || Text[I] == 'E')) {
    size_t Save = I++;
    if (I < Text.size() && (Text[I] == '+' || Text[I] == '-'))
      ++I;
    if (!Digits())
      I = Save;
  }
  double Value;
  if (Text.take_front(I).getAsDouble(Value))
    return None;
  Optional<double> Factor = getUnitFactor(Text.drop_front(I).ltrim(), K);
  if (!Factor)
    return None;
  return Value * *Factor;
}

//===----------------------------------------------------------------------===//
// The schema
//===----------------------------------------------------------------------===//

namespace {
/// Checks the document against the schema and builds the cluster,
/// collecting every independent error.
class ClusterReader {
public:
  explicit ClusterReader(StringRef File) : File(File) {}

  Expected<Cluster> read(const DocNode &Root);

private:
  void error(const DocNode &N, const Twine &Msg) {
    addError(N.Line, N.Column, N.Path, Msg);
  }
  /// An error about the key of mapping entry \p N, named with the path of
  /// the mapping.
  void keyError(const DocNode &N, const Twine &Msg) {
    StringRef Parent = StringRef(N.Path).drop_back(N.Key.size());
    Parent.consume_back(".");
    addError(N.KeyLine, N.KeyColumn, Parent, Msg);
  }
  void addError(unsigned Line, unsigned Column, StringRef Path,
                const Twine &Msg) {
    if (Path.empty())
      Errs.add(makeFileError(File, Line, Column, Msg));
    else
      Errs.add(makeFileError(File, Line, Column, Path + ": " + Msg));
  }

  bool expect(const DocNode &N, DocNode::NodeKind K, StringRef What) {
    if (N.Kind == K)
      return true;
    error(N, "expected " + What + ", not " + describeKind(N));
    return false;
  }

  /// Checks that mapping \p N has only \p Allowed keys, each once, and all
  /// of \p Required.
  bool checkKeys(const DocNode &N, ArrayRef<StringRef> Allowed,
                 ArrayRef<StringRef> Required) {
    bool OK = true;
    StringMap<bool> Seen;
    for (const DocNode &C : N.Children) {
      if (!is_contained(Allowed, C.Key)) {
        keyError(C, "unknown key '" + C.Key + "' (expected " +
                        join(Allowed, ", ") + ")");
        OK = false;
      } else if (!Seen.insert({C.Key, true}).second) {
        keyError(C, "key '" + C.Key + "' given twice");
        OK = false;
      }
    }
    for (StringRef R : Required)
      if (!Seen.count(R)) {
        error(N, "missing '" + R + "'");
        OK = false;
      }
    return OK;
  }

  Optional<std::string> readName(const DocNode &N) {
    if (!expect(N, DocNode::NodeKind::String, "a name"))
      return None;
    if (N.Text.empty()) {
      error(N, "the name is empty");
      return None;
    }
    return N.Text;
  }

  Optional<double> readQuantity(const DocNode &N, QuantityKind K) {
    if (N.Kind == DocNode::NodeKind::Number)
      return N.Number;
    if (N.Kind == DocNode::NodeKind::String)
      if (Optional<double> V = parseQuantityText(N.Text, K))
        return V;
    if (N.Kind == DocNode::NodeKind::String)
      error(N, "expected " + describeQuantity(K) + ", not '" + N.Text + "'");
    else
      error(N, "expected " + describeQuantity(K) + ", not " + describeKind(N));
    return None;
  }

  /// A quantity that must be positive and finite.
  /// A speed: a number in (0, 1] (YAML scalars arrive as text).
  Optional<double> readSpeed(const DocNode &V) {
    Optional<double> X;
    double Parsed;
    if (V.Kind == DocNode::NodeKind::Number)
      X = V.Number;
    else if (V.Kind == DocNode::NodeKind::String &&
             !StringRef(V.Text).trim().getAsDouble(Parsed))
      X = Parsed;
    if (!X) {
      error(V,
            "expected a speed (a number in (0, 1]), not " +
                (V.Kind == DocNode::NodeKind::String ? "'" + V.Text + "'"
                                                     : describeKind(V).str()));
      return None;
    }
    if (!(*X > 0) || *X > 1) {
      error(V, "a speed must be in (0, 1], not '" + describeValue(V) + "'");
      return None;
    }
    return X;
  }

  Optional<double> readPositive(const DocNode &N, QuantityKind K) {
    Optional<double> V = readQuantity(N, K);
    if (V && !(*V > 0 && *V < std::numeric_limits<double>::infinity())) {
      error(N, "must be positive, not '" + describeValue(N) + "'");
      return None;
    }
    return V;
  }

  /// A quantity that must be zero or more and finite.
  Optional<double> readNonNegative(const DocNode &N, QuantityKind K) {
    Optional<double> V = readQuantity(N, K);
    if (V && !(*V >= 0 && *V < std::numeric_limits<double>::infinity())) {
      error(N, "must not be negative, not '" + describeValue(N) + "'");
      return None;
    }
    return V;
  }

  /// A scalar as the file wrote it.
  static std::string describeValue(const DocNode &N) {
    if (N.Kind == DocNode::NodeKind::String)
      return N.Text;
    std::string S;
    raw_string_ostream(S) << format("%g", N.Number);
    return S;
  }

  /// Registers \p Name, written at \p At, of the entry \p Owner in
  /// \p Names; reports a repeat.
  void defineName(StringMap<std::string> &Names, const std::string &Name,
                  const DocNode &At, const DocNode &Owner) {
    auto [It, Inserted] = Names.insert({Name, Owner.Path});
    if (!Inserted)
      error(At, "duplicate name '" + Name + "' (also the name of " +
                    It->second + ")");
  }

  void readDeviceTypes(const DocNode &N);
  void readDeviceType(const DocNode &N, std::vector<DeviceType> &Types);
  void readPeakFlops(const DocNode &N, DeviceType &T);
  void readDevices(const DocNode &N);
  void readSwitches(const DocNode &N);
  void readLinks(const DocNode &N);
  void readShared(const DocNode &N);
  bool readLinkEnds(const DocNode &Between, Link &Out, std::string (&Ends)[2]);
  void checkReachability();

  StringRef File;
  ErrorList Errs;
  std::vector<DeviceType> Types;
  std::vector<Device> Devices;
  /// The file's entry of each device in Devices.
  std::vector<const DocNode *> DeviceNodes;
  /// Whether every entry of "devices" became a device.
  bool AllDevicesRead = true;
  std::vector<std::string> Switches;
  std::vector<Link> Links;
  std::vector<SharedGroup> Shared;
  /// Names of devices and switches, with the entry that defines each.
  StringMap<std::string> NodeNames;
};
} // namespace

static const StringRef RootKeys[] = {"name",     "device_types", "devices",
                                     "switches", "links",        "shared"};
static const StringRef RootRequiredKeys[] = {"name", "device_types", "devices"};
static const StringRef TypeKeys[] = {"name",       "kind",
                                     "peak_flops", "memory_bandwidth",
                                     "memory",     "launch_overhead"};
static const StringRef TypeRequiredKeys[] = {"name", "kind", "peak_flops",
                                             "memory_bandwidth", "memory"};
static const StringRef DeviceKeys[] = {"name", "type"};
static const StringRef LinkKeys[] = {"name",
                                     "between",
                                     "bandwidth",
                                     "latency",
                                     "speed_while_sending",
                                     "speed_while_receiving"};
static const StringRef LinkRequiredKeys[] = {"between", "bandwidth"};
static const StringRef SharedKeys[] = {"devices", "speed"};

void ClusterReader::readPeakFlops(const DocNode &N, DeviceType &T) {
  if (!expect(N, DocNode::NodeKind::Map,
              "a mapping from element types to FLOP/s, like "
              "{f32: 9.3 TFLOP/s}"))
    return;
  StringMap<bool> Seen;
  for (const DocNode &C : N.Children) {
    Optional<DTypeKind> DType = parseDTypeName(C.Key);
    if (!DType || getDTypeSize(*DType) == 0) {
      keyError(C, "unknown element type '" + C.Key +
                      "' (expected f32, f16, bf16, f64, i8, ...)");
      continue;
    }
    if (!Seen.insert({C.Key, true}).second) {
      keyError(C, "key '" + C.Key + "' given twice");
      continue;
    }
    if (Optional<double> V = readPositive(C, QuantityKind::Flops))
      T.PeakFlops[unsigned(*DType)] = *V;
  }
  if (!Seen.count("f32"))
    error(N, "missing 'f32' (the peak other element types default to)");
}

void ClusterReader::readDeviceType(const DocNode &N,
                                   std::vector<DeviceType> &Types) {
  DeviceType T;
  // Every field given is read even if others are wrong or missing, so that
  // all errors show at once and the type's name is known to the devices.
  if (!expect(N, DocNode::NodeKind::Map, "a device type (a mapping)")) {
    Types.push_back(std::move(T));
    return;
  }
  checkKeys(N, TypeKeys, TypeRequiredKeys);
  if (const DocNode *Name = N.lookup("name"))
    if (Optional<std::string> V = readName(*Name))
      T.Name = *V;
  if (const DocNode *Kind = N.lookup("kind"))
    if (expect(*Kind, DocNode::NodeKind::String, "gpu, cpu or accel")) {
      if (Kind->Text == "gpu")
        T.Kind = DeviceKind::GPU;
      else if (Kind->Text == "cpu")
        T.Kind = DeviceKind::CPU;
      else if (Kind->Text == "accel")
        T.Kind = DeviceKind::Accelerator;
      else
        error(*Kind, "unknown device kind '" + Kind->Text +
                         "' (expected gpu, cpu or accel)");
    }
  if (const DocNode *Peaks = N.lookup("peak_flops"))
    readPeakFlops(*Peaks, T);
  if (const DocNode *Bandwidth = N.lookup("memory_bandwidth"))
    if (Optional<double> V = readPositive(*Bandwidth, QuantityKind::Bandwidth))
      T.MemoryBandwidth = *V;
  if (const DocNode *Memory = N.lookup("memory"))
    if (Optional<double> V = readPositive(*Memory, QuantityKind::Bytes)) {
      if (std::round(*V) < 1 || *V >= 0x1p64)
        error(*Memory, "'" + describeValue(*Memory) +
                           "' is not a byte count dp can hold");
      else
        T.MemoryBytes = uint64_t(std::round(*V));
    }
  if (const DocNode *Launch = N.lookup("launch_overhead"))
    if (Optional<double> V = readNonNegative(*Launch, QuantityKind::Time))
      T.LaunchOverhead = *V;
  Types.push_back(std::move(T));
}

/// Devices do not forward traffic (Cluster::create routes only through
/// switches), so every pair needs a path whose inner nodes are switches.
/// Reported here rather than left to Cluster::create so that the error can
/// point at the device.
void ClusterReader::checkReachability() {
  unsigned D = Devices.size();
  unsigned NumNodes = D + Switches.size();
  for (unsigned Src = 0; Src != D; ++Src) {
    std::vector<bool> Seen = getReachableNodes(Src, D, NumNodes, Links);
    bool Failed = false;
    for (unsigned Dst = 0; Dst != D; ++Dst)
      if (!Seen[Dst]) {
        const DocNode &Name = *DeviceNodes[Dst]->lookup("name");
        error(*DeviceNodes[Dst],
              "device '" + Name.Text + "' cannot be reached from '" +
                  DeviceNodes[Src]->lookup("name")->Text +
                  "' (links must join them, through switches only: devices "
                  "do not forward)");
        Failed = true;
      }
    // One source is enough to show what is cut off.
    if (Failed)
      return;
  }
}

void ClusterReader::readDeviceTypes(const DocNode &N) {
  if (!expect(N, DocNode::NodeKind::Seq, "a sequence of device types"))
    return;
  if (N.Children.empty())
    error(N, "there are no device types");
  StringMap<std::string> TypeNames;
  for (const DocNode &T : N.Children) {
    readDeviceType(T, Types);
    if (!Types.back().Name.empty())
      defineName(TypeNames, Types.back().Name, *T.lookup("name"), T);
  }
}

void ClusterReader::readDevices(const DocNode &N) {
  if (!expect(N, DocNode::NodeKind::Seq, "a sequence of devices"))
    return;
  if (N.Children.empty())
    error(N, "there are no devices");
  unsigned NumRead = 0;
  for (const DocNode &D : N.Children) {
    if (!expect(D, DocNode::NodeKind::Map, "a device (a mapping)"))
      continue;
    checkKeys(D, DeviceKeys, DeviceKeys);
    const DocNode *NameNode = D.lookup("name");
    const DocNode *TypeNode = D.lookup("type");
    Optional<std::string> DevName, TypeName;
    if (NameNode && (DevName = readName(*NameNode)))
      defineName(NodeNames, *DevName, *NameNode, D);
    if (TypeNode)
      TypeName = readName(*TypeNode);
    if (!DevName || !TypeName)
      continue;
    auto It = find_if(Types,
                      [&](const DeviceType &T) { return T.Name == *TypeName; });
    if (It == Types.end()) {
      SmallVector<StringRef, 8> Known;
      for (const DeviceType &T : Types)
        if (!T.Name.empty())
          Known.push_back(T.Name);
      error(*TypeNode,
            "unknown device type '" + *TypeName + "'" +
                (Known.empty() ? std::string()
                               : " (types: " + join(Known, ", ") + ")"));
      continue;
    }
    Devices.push_back({*DevName, unsigned(It - Types.begin())});
    DeviceNodes.push_back(&D);
    ++NumRead;
  }
  AllDevicesRead = NumRead == N.Children.size();
}

void ClusterReader::readSwitches(const DocNode &N) {
  if (!expect(N, DocNode::NodeKind::Seq, "a sequence of switch names"))
    return;
  for (const DocNode &S : N.Children)
    if (Optional<std::string> SwitchName = readName(S)) {
      defineName(NodeNames, *SwitchName, S, S);
      Switches.push_back(*SwitchName);
    }
}

/// Reads the endpoints of a link into \p Out and their names into \p Ends.
bool ClusterReader::readLinkEnds(const DocNode &Between, Link &Out,
                                 std::string (&Ends)[2]) {
  if (!expect(Between, DocNode::NodeKind::Seq,
              "the two nodes the link joins, like [gpu:0, pcie0]"))
    return false;
  if (Between.Children.size() != 2) {
    error(Between, "expected the two nodes the link joins, not " +
                       Twine(Between.Children.size()));
    return false;
  }
  bool OK = true;
  for (unsigned I = 0; I != 2; ++I) {
    const DocNode &End = Between.Children[I];
    Optional<std::string> EndName = readName(End);
    if (!EndName) {
      OK = false;
      continue;
    }
    Ends[I] = *EndName;
    int Node = lookupNode(Devices, Switches, *EndName);
    if (Node < 0) {
      // A device that could not be read is reported already.
      if (AllDevicesRead || !NodeNames.count(*EndName))
        error(End, "unknown device or switch '" + *EndName + "'");
      OK = false;
      continue;
    }
    (I ? Out.B : Out.A) = Node;
  }
  if (OK && Out.A == Out.B) {
    error(Between, "a link joins two different nodes, not '" + Ends[0] +
                       "' with itself");
    return false;
  }
  return OK;
}

void ClusterReader::readLinks(const DocNode &N) {
  if (!expect(N, DocNode::NodeKind::Seq, "a sequence of links"))
    return;
  StringMap<std::string> LinkNames;
  for (const DocNode &L : N.Children) {
    if (!expect(L, DocNode::NodeKind::Map, "a link (a mapping)"))
      continue;
    bool OK = checkKeys(L, LinkKeys, LinkRequiredKeys);
    Link Out;
    std::string Ends[2];
    if (const DocNode *Between = L.lookup("between"))
      OK &= readLinkEnds(*Between, Out, Ends);
    if (const DocNode *LinkName = L.lookup("name")) {
      if (Optional<std::string> V = readName(*LinkName)) {
        Out.Name = *V;
        defineName(LinkNames, Out.Name, *LinkName, L);
      }
    } else if (!Ends[0].empty() && !Ends[1].empty()) {
      Out.Name = Ends[0] + "-" + Ends[1];
      defineName(LinkNames, Out.Name, L, L);
    }
    if (const DocNode *Bandwidth = L.lookup("bandwidth")) {
      if (Optional<double> V =
              readPositive(*Bandwidth, QuantityKind::Bandwidth))
        Out.Bandwidth = *V;
      else
        OK = false;
    }
    if (const DocNode *Latency = L.lookup("latency")) {
      if (Optional<double> V = readNonNegative(*Latency, QuantityKind::Time))
        Out.Latency = *V;
      else
        OK = false;
    }
    for (auto [Key, Field] :
         {std::make_pair("speed_while_sending", &Link::SpeedWhileSending),
          std::make_pair("speed_while_receiving",
                         &Link::SpeedWhileReceiving)}) {
      const DocNode *V = L.lookup(Key);
      if (!V)
        continue;
      if (Optional<double> X = readSpeed(*V))
        Out.*Field = *X;
      else
        OK = false;
    }
    if (OK)
      Links.push_back(std::move(Out));
  }
}

/// "shared": [{devices: [cpu:0, cpu:1], speed: [1, 0.5]}, ...]
void ClusterReader::readShared(const DocNode &N) {
  if (!expect(N, DocNode::NodeKind::Seq, "a sequence of shared groups"))
    return;
  std::vector<int> GroupOf(Devices.size(), -1);
  for (unsigned Index = 0; Index != N.Children.size(); ++Index) {
    const DocNode &G = N.Children[Index];
    if (!expect(G, DocNode::NodeKind::Map, "a shared group (a mapping)"))
      continue;
    bool OK = checkKeys(G, SharedKeys, SharedKeys);
    SharedGroup Out;
    const DocNode *DevNode = G.lookup("devices");
    if (DevNode && expect(*DevNode, DocNode::NodeKind::Seq,
                          "the devices that share, like [cpu:0, cpu:1]")) {
      if (DevNode->Children.size() < 2) {
        error(*DevNode, "a shared group needs at least two devices");
        OK = false;
      }
      for (const DocNode &D : DevNode->Children) {
        Optional<std::string> DevName = readName(D);
        if (!DevName) {
          OK = false;
          continue;
        }
        auto It = find_if(Devices, [&](const Device &Dev) {
          return Dev.Name == *DevName;
        });
        if (It == Devices.end()) {
          if (AllDevicesRead)
            error(D, "unknown device '" + *DevName + "'");
          OK = false;
          continue;
        }
        unsigned Dev = It - Devices.begin();
        if (GroupOf[Dev] >= 0) {
          error(D, "device '" + *DevName + "' is already in shared group " +
                       Twine(GroupOf[Dev]));
          OK = false;
          continue;
        }
        GroupOf[Dev] = Index;
        Out.Devices.push_back(Dev);
      }
    } else {
      OK = false;
    }
    const DocNode *SpeedNode = G.lookup("speed");
    if (SpeedNode &&
        expect(*SpeedNode, DocNode::NodeKind::Seq,
               "the speed of each busy device when 1, 2, ... of the "
               "group are busy, like [1, 0.5]")) {
      for (const DocNode &V : SpeedNode->Children) {
        bool First = &V == &SpeedNode->Children.front();
        Optional<double> X = readSpeed(V);
        if (X && First && *X != 1) {
          error(V, "the first speed must be 1 (one busy device runs at "
                   "its own speed), not '" +
                       describeValue(V) + "'");
          X = None;
        }
        if (!X) {
          OK = false;
          continue;
        }
        Out.Speed.push_back(*X);
      }
      if (OK && DevNode && Out.Speed.size() != DevNode->Children.size()) {
        error(*SpeedNode, "expected " + Twine(DevNode->Children.size()) +
                              " speeds, one for each number of busy devices "
                              "of the group, not " +
                              Twine(Out.Speed.size()));
        OK = false;
      }
    } else {
      OK = false;
    }
    if (OK)
      Shared.push_back(std::move(Out));
  }
}

Expected<Cluster> ClusterReader::read(const DocNode &Root) {
  if (!Root.isMap())
    return makeFileError(File, Root.Line, Root.Column,
                         "expected a cluster description (a mapping with "
                         "name, device_types, devices, switches, links, "
                         "shared), "
                         "not " +
                             describeKind(Root));
  checkKeys(Root, RootKeys, RootRequiredKeys);
  std::string Name;
  if (const DocNode *N = Root.lookup("name"))
    if (Optional<std::string> V = readName(*N))
      Name = *V;
  if (const DocNode *N = Root.lookup("device_types"))
    readDeviceTypes(*N);
  // Devices, then switches: one namespace, as links name either.
  if (const DocNode *N = Root.lookup("devices")) {
    // Too many to read: what the links say would only repeat that.
    if (N->Children.size() > MaxClusterDevices) {
      error(*N, Twine(N->Children.size()) + " devices; dp places on at most " +
                    Twine(MaxClusterDevices));
      return Errs.take();
    }
    readDevices(*N);
  }
  if (const DocNode *N = Root.lookup("switches"))
    readSwitches(*N);
  if (const DocNode *N = Root.lookup("links"))
    readLinks(*N);
  if (const DocNode *N = Root.lookup("shared"))
    readShared(*N);
  if (!Errs.empty())
    return Errs.take();
  checkReachability();
  if (!Errs.empty())
    return Errs.take();

  Expected<Cluster> C =
      Cluster::create(std::move(Name), std::move(Types), std::move(Devices),
                      std::move(Switches), std::move(Links),
                      std::move(Shared));
  if (C)
    return C;
  // Everything Cluster::create checks was checked above with positions; if
  // it still objects, name the file at least.
  Error Located = Error::success();
  handleAllErrors(
      C.takeError(),
      [&](const LocatedError &E) {
        Located = joinErrors(std::move(Located),
                             makeFileError(File, 0, 0, E.getMessage()));
      },
      [&](const ErrorInfoBase &E) {
        Located = joinErrors(std::move(Located),
                             makeFileError(File, 0, 0, E.message()));
      });
  return std::move(Located);
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

/// JSON if the text starts with '{', else YAML.
static Expected<DocNode> parseDocument(MemoryBufferRef Buffer) {
  StringRef Text = Buffer.getBuffer();
  if (!Text.ltrim().startswith("{"))
    return parseYAML(Buffer);
  Expected<json::Value> V = json::parse(Text);
  if (!V)
    return makeJSONSyntaxError(Buffer.getBufferIdentifier(), V.takeError());
  return convertJSON(*V, "");
}

Expected<Cluster> parseCluster(MemoryBufferRef Buffer) {
  Expected<DocNode> Doc = parseDocument(Buffer);
  if (!Doc)
    return Doc.takeError();
  return ClusterReader(Buffer.getBufferIdentifier()).read(*Doc);
}

Expected<Cluster> loadCluster(StringRef Spec) {
  if (is_contained(getClusterPresetNames(), Spec))
    return getClusterPreset(Spec);
  ErrorOr<std::unique_ptr<MemoryBuffer>> Buf =
      MemoryBuffer::getFile(Spec, /*IsText=*/true,
                            /*RequiresNullTerminator=*/false);
  if (std::error_code EC = Buf.getError())
    return makeFileError(Spec, 0, 0,
                         "not a cluster preset (" +
                             join(getClusterPresetNames(), ", ") +
                             ") and cannot be read: " + EC.message());
  return parseCluster((*Buf)->getMemBufferRef());
}

} // namespace dp
